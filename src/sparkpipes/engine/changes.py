"""What a procedure body's ``DELETE`` and ``UPDATE`` statements do to a table, statement by
statement, as one set of changes committed with the batch.

A table the body changes is followed as a Spark DataFrame of its rows as the statements so
far leave them (its *state*): the snapshot the batch started from, each row with its
stored values (``__sp_old``; NULL for a row the body inserted) and whether an UPDATE set
it (``__sp_changed``). ``INSERT`` adds to the state, ``DELETE`` filters it (a stored row it
removes is kept aside), ``UPDATE`` sets the columns of the rows its condition holds for,
``REPLACE``, ``INSERT IGNORE`` and ``ON DUPLICATE KEY UPDATE`` meet the rows of their keys.
A later statement that reads the table reads the state, as in SingleStore, where each
statement sees the ones before it. :meth:`ChangedTable.changes` then gives one row per
change (insert, update or delete, with the stored row's match columns: its primary key,
or every column of a table without one), which the procedure sink commits in one MERGE
with the batch's app transaction (``sinks.delta.upsert``, mode ``changes``): exactly once,
whatever crashes.

Conditions and SET expressions are the user's SQL in the SingleStore dialect, run over the
state as a view of the table's name, the batch bound as for the body's other statements.
A condition that is NULL does not hold, as in MySQL. SET expressions all read the row as
it was before the statement (a ``CREATE`` refuses one that reads a column an earlier
assignment of the same SET changes, where MySQL would read the new value).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from sparkpipes.catalog import TableRecord
from sparkpipes.config.procedure import ProcedureStatement
from sparkpipes.engine.batch.transform import REJECT_COLUMN, Transform, apply
from sparkpipes.engine.sql.dialect import TokenType, _tokens, translate
from sparkpipes.errors import ConfigError, DuplicateKeyError, lost_executor_data
from sparkpipes.sinks.delta.upsert import CHANGE_OP, Upsert, old_column

OLD = "__sp_old"
CHANGED = "__sp_changed"
HIT = "__sp_hit"
ARRIVAL = "__sp_arrival"
ROW = "__sp_row"
PICKED = "__sp_picked"

#: runs a body query (SingleStore dialect) over the batch with the given table views:
#: (query, statement, views) → DataFrame
Run = Callable[[str, ProcedureStatement, Mapping[str, Any]], Any]


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def set_column(i: int) -> str:
    return f"__sp_set{i}"


def order_column(i: int) -> str:
    return f"__sp_ord{i}"


def order_columns(statement: ProcedureStatement) -> list[str]:
    return [order_column(i) for i in range(len(statement.order))]


def hit_query(statement: ProcedureStatement, source: str | None = None) -> str:
    """A DELETE's or UPDATE's query (the dialect) over its table's rows (the view named
    ``source``, by default the table's name): every column, whether the condition holds
    (:data:`HIT`), each SET value (:func:`set_column`) and each ORDER BY value
    (:func:`order_column`)."""
    sets = "".join(f", (\n{e}\n) AS {set_column(i)}" for i, (_, e) in enumerate(statement.assign))
    sets += "".join(f", (\n{e}\n) AS {order_column(i)}" for i, (e, _) in enumerate(statement.order))
    alias = _q(statement.alias or statement.table)
    return (
        f"SELECT *, coalesce((\n{statement.query}\n), FALSE) AS {HIT}{sets} "
        f"FROM {_q(source or statement.table)} AS {alias}"
    )


def single_expressions(spark: Any, statement: ProcedureStatement, query: str) -> None:
    """ConfigError unless the condition and each SET value of ``statement`` is one whole
    expression as Spark reads it, standing where :func:`hit_query` put it in ``query``
    (translated): a text the two lexers read differently (``r'\\' …``) cannot close its
    parentheses and write SQL of its own around them."""
    whole = translate(query)
    orders = (e for e, _ in statement.order)
    for text in (statement.query, *(e for _, e in statement.assign), *orders):
        piece = translate(text)
        parser = spark._jsparkSession.sessionState().sqlParser()
        try:  # the whole query is admitted by the sandbox; this is the parse alone
            parser.parseExpression(piece)
        except Exception:  # Spark's ParseException, through py4j
            raise ConfigError(f"cannot read '{text[:80]}' as one expression") from None
        if f"(\n{piece}\n)" not in whole:
            raise ConfigError(f"cannot read '{text[:80]}' as one expression")


def statement_query(statement: ProcedureStatement) -> str:
    """The query a body statement that writes a table runs (the dialect)."""
    return hit_query(statement) if statement.change else statement.query


def match_columns(rec: TableRecord) -> tuple[str, ...]:
    """How the commit finds a changed stored row: its primary key, else all its columns."""
    return rec.primary_key or tuple(rec.schema.names)


class ChangedTable:
    """One table's rows through the body's statements (see the module docstring)."""

    def __init__(
        self,
        rec: TableRecord,
        snapshot: Any,
        fails: Callable[[str], Exception],
        source: str | None = None,
    ):
        from pyspark.sql import functions as F

        self.rec = rec
        #: the name a DELETE's or UPDATE's query reads the rows by (:func:`hit_query`)
        self.source = source
        self.columns = list(rec.schema.names)
        self.match = match_columns(rec)
        self.keyed = self.match != tuple(self.columns)
        self.fails = fails
        old = F.struct(*[F.col(_q(c)) for c in self.columns])
        self.state = snapshot.select(
            *[F.col(_q(c)) for c in self.columns], old.alias(OLD), F.lit(False).alias(CHANGED)
        )
        self.deleted: list[Any] = []
        self.inserted = False

    def _become(self, state: Any) -> None:
        """The state after a statement, computed once when first needed and kept for the
        batch (Spark's local checkpoint): later statements, the changes and their checks
        read it without running the statements again, and Spark plans each statement on
        its own (a plan that joins and unions one table's lineage many times trips its
        optimizer)."""
        self.state = state.localCheckpoint(eager=False)

    def view(self) -> Any:
        """The table as a later statement of the body reads it."""
        return self.state.select(*[_q(c) for c in self.columns])

    def insert(self, rows: Any) -> None:
        """``rows`` (the table's columns, checked and filled) added to the table."""
        from pyspark.sql import functions as F

        none = F.lit(None).cast(self.state.schema[OLD].dataType)
        added = rows.select(*[_q(c) for c in self.columns], none.alias(OLD), F.lit(False))
        self._become(self.state.unionByName(added.toDF(*self.columns, OLD, CHANGED)))
        self.inserted = True

    def upsert(self, rows: Any, how: Upsert) -> None:
        """``rows`` added as REPLACE, INSERT IGNORE or ON DUPLICATE KEY UPDATE add them
        (``how``: ``sinks.delta.upsert``'s modes over the table as the body left it); into
        a table without a primary key, they are inserted."""
        from pyspark.sql import functions as F

        if not self.keyed:
            self.insert(rows)
            return
        keys = list(self.match)
        cols = [_q(c) for c in self.columns]
        ordered = rows.select(*cols).withColumn(ARRIVAL, F.monotonically_increasing_id())
        stored = self.state.join(rows.select(*cols).select(*keys).distinct(), keys, "left_semi")
        if how.mode == "ignore":
            first = how.reduce(ordered, ARRIVAL, self.columns)
            self.insert(first.join(stored.select(*keys), keys, "left_anti"))
            return
        if how.mode == "update":
            types = {f.name: f.dataType.simpleString() for f in self.state.schema.fields}
            new = how.fold(ordered, stored.select(*cols), ARRIVAL, self.columns, types)
        else:
            new = how.reduce(ordered, ARRIVAL, self.columns)
        olds = stored.select(*keys, OLD)
        merged = new.join(olds, keys, "left").select(*cols, OLD, F.lit(True).alias(CHANGED))
        rest = self.state.join(new.select(*keys), keys, "left_anti")
        self._become(rest.unionByName(merged))
        self.inserted = True

    def _hits(self, statement: ProcedureStatement, run: Run, views: Mapping[str, Any]):
        """The statement's query over the state, evaluated once (a condition such as
        ``rand() < 0.1`` or ``now()`` picks the same rows for every use of the result)."""
        query = hit_query(statement, self.source)
        single_expressions(self.state.sparkSession, statement, query)
        hits = run(query, statement, {**views, statement.table: self.state})
        if statement.limit is None:
            return hits.drop(*order_columns(statement)).localCheckpoint(eager=False)
        return self._first(hits, statement)

    def _first(self, hits: Any, statement: ProcedureStatement) -> Any:
        """``ORDER BY … LIMIT n``: the condition holds for the first ``n`` rows it holds
        for, in that order (MySQL: NULLs first ascending, last descending; ties, and rows
        without ORDER BY, in the table's order), the others are left as they are."""
        from pyspark.sql import functions as F

        hits = hits.withColumn(ROW, F.monotonically_increasing_id()).localCheckpoint(eager=True)
        keys = [
            F.col(order_column(i)).desc() if desc else F.col(order_column(i)).asc()
            for i, (_, desc) in enumerate(statement.order)
        ]
        first = hits.where(F.col(HIT)).orderBy(*keys, F.col(ROW)).limit(statement.limit or 0)
        picked = first.select(ROW, F.lit(True).alias(PICKED))
        chosen = hits.join(picked, ROW, "left").withColumn(HIT, F.col(PICKED).isNotNull())
        return chosen.drop(ROW, PICKED, *order_columns(statement)).localCheckpoint(eager=False)

    def _collect(self, df: Any, statement: ProcedureStatement) -> list[Any]:
        """``df.collect()``; Spark's error (a division by zero, a cast, in this statement or
        an earlier one of the table) as the statement's error, but a local checkpoint of
        the table's rows lost with an executor as the transient error it is."""
        from py4j.protocol import Py4JJavaError
        from pyspark.errors import PySparkException

        try:
            return df.collect()
        except (PySparkException, Py4JJavaError) as e:
            lost = lost_executor_data(e)
            if lost is not None:
                raise lost from None
            if not isinstance(e, PySparkException):
                raise
            at = f"line {statement.line}: " if statement.line else ""
            first = (str(e).strip().splitlines() or [type(e).__name__])[0][:400]
            raise self.fails(f"{at}{first} ({statement.text[:80]})") from None

    def delete(self, statement: ProcedureStatement, run: Run, views: Mapping[str, Any]) -> None:
        from pyspark.sql import functions as F

        hits = self._hits(statement, run, views)
        self.deleted.append(hits.where(F.col(HIT) & F.col(OLD).isNotNull()).select(OLD))
        self._become(hits.where(~F.col(HIT)).drop(HIT))

    def update(self, statement: ProcedureStatement, run: Run, views: Mapping[str, Any]) -> None:
        from pyspark.sql import functions as F

        rec = self.rec
        sets = {c: set_column(i) for i, (c, _) in enumerate(statement.assign)}
        hits = self._hits(statement, run, views)
        hit = F.col(HIT)
        moved = None
        for c, s in sets.items():
            differs = ~F.col(s).eqNullSafe(F.col(_q(c)))
            if _floating(rec.schema.field(c).type):  # MySQL compares the stored bytes
                differs = differs | _other_zero(F.col(s), F.col(_q(c)))
            moved = differs if moved is None else moved | differs
        values = []
        for c in self.columns:
            if c in rec.computed:
                continue  # computed again from the row (apply)
            if c in sets:
                value = F.when(hit, F.col(sets[c])).otherwise(F.col(_q(c)))
            elif c in rec.on_update and moved is not None:  # MySQL: when a value changes
                value = F.when(hit & moved, F.current_timestamp()).otherwise(F.col(_q(c)))
            else:
                value = F.col(_q(c))
            values.append(value.alias(c))
        changes = hit & moved if moved is not None else hit  # MySQL counts changed rows
        rows = hits.select(*values, OLD, (F.col(CHANGED) | changes).alias(CHANGED), HIT)
        fill = Transform(computed=tuple(rec.computed.items()), rules=rec.rules)
        checked = apply(rows, fill, rec.schema, (OLD, CHANGED, HIT), check=True)
        bad = F.col(REJECT_COLUMN).isNotNull()
        for c in rec.not_null:
            bad = bad | F.col(_q(c)).isNull()
        checked = checked.localCheckpoint(eager=False)  # checked and stored: the same rows
        found = self._collect(checked.where(hit & bad).limit(1), statement)
        if found:
            reason = found[0][REJECT_COLUMN] or (
                f"column '{next(c for c in rec.not_null if found[0][c] is None)}' is NOT NULL"
            )
            at = f"line {statement.line}: " if statement.line else ""
            raise self.fails(f"{at}a row UPDATE sets does not fit table '{rec.name}': {reason}")
        self.state = checked.drop(REJECT_COLUMN, HIT)

    def changes(self) -> Any:
        """One row per change: the table's columns (the new row; a deleted row's stored
        one), its kind (:data:`CHANGE_OP`) and the stored row's match columns
        (``old_column(i)``). A key that an inserted row shares with a row of the table
        as the body leaves it fails the batch, as SingleStore's INSERT does. In a table
        without a primary key, equal rows change alike (the MERGE matches them all by
        their values), so one change stands for each set of them (:func:`_once`)."""
        if self.keyed and self.inserted:
            self._no_duplicates()
        inserts, others = self._changed_rows()
        if not self.keyed:
            others = _once(others)
        return inserts.unionByName(others)

    def affected(self) -> int:
        """MySQL's rows affected by the statements: each row inserted, each stored row
        deleted, each row an UPDATE changed (not one it set to the values it had) —
        counted before :meth:`changes` makes one change of equal rows, so that deleting
        two equal rows of a table without a primary key counts two."""
        from pyspark.sql import functions as F

        inserts, others = self._changed_rows()
        both = inserts.unionByName(others).agg(F.count(F.lit(1)).alias("n"))
        return int(self._collect(both, ProcedureStatement(self.rec.name, "", line=0))[0]["n"])

    def _changed_rows(self) -> tuple[Any, Any]:
        """The inserted rows and the other changes (updates, deletes), as :meth:`changes`
        gives them, before equal changes become one."""
        from pyspark.sql import functions as F

        old = F.col(OLD)
        olds = [old.getField(c).alias(old_column(i)) for i, c in enumerate(self.match)]
        cols = [F.col(_q(c)) for c in self.columns]
        fresh = old.isNull()
        live = self.state.where(fresh | F.col(CHANGED))
        inserts = live.where(fresh).select(*cols, F.lit("insert").alias(CHANGE_OP), *olds)
        others = live.where(~fresh).select(*cols, F.lit("update").alias(CHANGE_OP), *olds)
        for gone in self.deleted:
            stored = [old.getField(c).alias(c) for c in self.columns]
            others = others.unionByName(
                gone.select(*stored, F.lit("delete").alias(CHANGE_OP), *olds)
            )
        return inserts, others

    def _no_duplicates(self) -> None:
        from pyspark.sql import functions as F

        fresh = F.max(F.col(OLD).isNull().cast("int")).alias("fresh")
        counted = (
            self.state.groupBy(*[_q(k) for k in self.match])
            .agg(F.count(F.lit(1)).alias("n"), fresh)
            .where("n > 1 AND fresh = 1")
            .limit(1)
        )
        twice = self._collect(counted, ProcedureStatement(self.rec.name, "", line=0))
        if twice:
            key = "-".join(str(twice[0][k]) for k in self.match)
            raise DuplicateKeyError(
                f"Duplicate entry '{key}' for key 'PRIMARY' of table '{self.rec.name}': "
                "INSERT IGNORE, REPLACE or ON DUPLICATE KEY UPDATE say what a duplicate does"
            )


def _once(rows: Any) -> Any:
    """One row of each set of rows equal as SQL compares them (the set a MERGE by value
    matches alike), its values as they are: ``distinct()`` would group them the same way
    but give the grouped values back normalized (a ``-0.0`` set by an UPDATE stored as
    ``0.0``); a window keeps one row of the group untouched."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    group = Window.partitionBy(*[F.col(_q(c)) for c in rows.columns]).orderBy(F.lit(0))
    picked = rows.withColumn(PICKED, F.row_number().over(group))
    return picked.where(F.col(PICKED) == 1).drop(PICKED)


def _floating(t: pa.DataType) -> bool:
    return pa.types.is_floating(t)


def _other_zero(new: Any, stored: Any) -> Any:
    """Whether ``new`` and ``stored`` are zeros of different signs: equal to SQL, but
    different values to MySQL, which counts (and stores) ``-0.0`` over ``0.0`` as a
    change."""

    def sign(c: Any) -> Any:
        return c.cast("double").cast("string").startswith("-")

    return (new == 0) & (stored == 0) & (sign(new) != sign(stored))


def changed_tables(statements: Sequence[ProcedureStatement]) -> tuple[str, ...]:
    """The tables a body's DELETE or UPDATE statements change, in order."""
    return tuple(dict.fromkeys(s.table for s in statements if s.change))


def check_change(statement: ProcedureStatement, rec: TableRecord, where: str) -> None:
    """ConfigError for what a DELETE or UPDATE cannot do to ``rec`` here."""
    keys = match_columns(rec)
    if keys == tuple(rec.schema.names):
        maps = [f.name for f in rec.schema if pa.types.is_map(f.type)]
        if maps:
            raise ConfigError(
                f"{where}: {statement.change.upper()} of table '{rec.name}', which has no "
                f"PRIMARY KEY and a MAP column ('{maps[0]}'), is not supported: its rows are "
                "found by their values, and a MAP has no equality"
            )
    earlier: set[str] = set()
    for column, expr in statement.assign:
        what = f"{where}: UPDATE … SET {column}"
        if column not in rec.schema.names:
            raise ConfigError(f"{what}: table '{rec.name}' has no column '{column}'")
        if column in rec.computed:
            raise ConfigError(f"{what}: a computed column takes no value")
        if column in keys and keys != tuple(rec.schema.names):
            raise ConfigError(f"{what}: a row's PRIMARY KEY does not change here")
        read = {
            t.text.lower()
            for t in _tokens(translate(expr))
            if t.token_type in (TokenType.VAR, TokenType.IDENTIFIER)
        }
        if read & earlier:
            raise ConfigError(
                f"{what}: the expression reads '{sorted(read & earlier)[0]}', which an "
                "earlier assignment of this SET changes; MySQL would read the new value, "
                "here every assignment reads the row as it was (split the SET in two)"
            )
        earlier.add(column.lower())


def one_way(name: str, every: Sequence[ProcedureStatement]) -> None:
    """ConfigError unless each table the body (with the procedures it CALLs) writes is
    written one way: by statements of one kind, an ON DUPLICATE KEY UPDATE by one
    statement only; a table it DELETEs from or UPDATEs takes every kind."""
    for table in dict.fromkeys(o.table for o in every):
        writes = [o for o in every if o.table == table]
        if any(o.change for o in writes):
            continue
        where = f"procedure '{name}', line {writes[-1].line}"
        if any(o.update for o in writes) and len(writes) > 1:
            raise ConfigError(
                f"{where}: table '{table}' is written by an ON DUPLICATE KEY UPDATE "
                "statement and another one; one procedure writes such a table once"
            )
        modes = {_mode(o) for o in writes}
        if len(modes) > 1:
            raise ConfigError(
                f"{where}: table '{table}' is written by {' and '.join(sorted(modes))} "
                "statements of the body (or of procedures it CALLs); one procedure writes a "
                "table one way (or DELETEs from it or UPDATEs it too: then every kind goes)"
            )


def _mode(s: ProcedureStatement) -> str:
    if s.change:
        return s.change.upper()
    if s.update:
        return "ON DUPLICATE KEY UPDATE"
    return "REPLACE" if s.replace else "INSERT IGNORE" if s.ignore else "INSERT"
