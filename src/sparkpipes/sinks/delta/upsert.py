"""Upserts by primary key into a Delta table: how a batch's rows are reduced to one per key
(a Spark job) and how that row meets the stored one (the clauses of a delta-rs MERGE).

Modes, as the front ends name them:

* ``replace`` (``REPLACE INTO TABLE``, Pinot FULL upsert): the batch's last row of a key
  replaces the stored one. With ``comparison`` columns (Pinot's ``comparisonColumns``; by
  default its time column) the row with the greatest comparison value wins instead, in
  the batch and against the stored row — a late record never overwrites a newer one; ties
  go to the later record.
* ``replace`` with ``partial`` strategies (Pinot PARTIAL upsert): column by column, per
  strategy (OVERWRITE, IGNORE, INCREMENT, MAX, MIN, APPEND, UNION), folding the batch's
  rows in arrival order and then the stored row; a NULL never replaces a value.
* ``ignore`` (``IGNORE INTO TABLE``, Pinot dedup): the first row of a key is kept, later
  ones are dropped.
* ``insert`` (SingleStore's plain ``INTO TABLE`` on a table with a primary key): the rows
  are inserted as they are; a key the table holds, or one twice in the batch, fails the
  batch (:class:`~sparkpipes.errors.DuplicateKeyError`) before anything is written.
* ``update`` (SingleStore's ``ON DUPLICATE KEY UPDATE col = expr``): as MySQL applies
  rows one by one, a key's rows fold in arrival order onto the stored row — or, for a key
  the table lacks, onto its first row, inserted as it is — each setting the assigned
  columns to their expressions over the row so far (``s``) and the new one (``r``); the
  other columns keep their values. The stored rows of the batch's keys are read from the
  table version the MERGE applies to (:meth:`Upsert.fold`).

* ``changes`` (a procedure body's ``DELETE`` and ``UPDATE``, ``engine.changes``): the
  staged rows are the changes themselves, each with its kind (:data:`CHANGE_OP`: insert,
  update, delete) and the match columns of the stored row it changes (``keys``, staged as
  :func:`old_column`); nothing is reduced. The MERGE is made on the table version the
  changes were computed from: if another writer committed since, it fails
  (``StaleChanges``) and the changes are computed again, never applied over that write.

* ``aggregate`` (Pinot's ingestion aggregation, :mod:`.aggregates`): the key is every
  column that is not aggregated; a batch's rows of a key collapse into one, each
  aggregated column its function (SUM, MIN, MAX) over them, and that row is combined with
  the stored row of the key (SUM adds, MIN and MAX compare). A NULL key value matches NULL.

``delete`` names a boolean column (Pinot's ``deleteRecordColumn``): a winning row with it
true deletes the key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from sparkpipes.errors import ConfigError
from sparkpipes.sinks.delta import aggregates

#: the kind of a staged change of mode ``changes``
CHANGE_OP = "__sp_op"
STRATEGIES = ("OVERWRITE", "IGNORE", "INCREMENT", "MAX", "MIN", "APPEND", "UNION")
CONFIG_KEYS = ("comparison", "partial", "delete", "aggregate")


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def old_column(i: int) -> str:
    """The staged column of a change holding the stored row's ``i``-th match column."""
    return f"__sp_old_{i}"


def change_schema(schema: pa.Schema, match: Sequence[str]) -> pa.Schema:
    """What mode ``changes`` stages: the table's columns, the kind, the match columns."""
    olds = [pa.field(old_column(i), schema.field(c).type) for i, c in enumerate(match)]
    return pa.schema([*schema, pa.field(CHANGE_OP, pa.string()), *olds])


def _lit(text: str) -> str:
    """``text`` as a Spark SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


@dataclass(frozen=True)
class Upsert:
    """Rows replace (``replace``) or yield to (``ignore``) the row with the same key."""

    keys: tuple[str, ...]
    mode: str = "replace"
    comparison: tuple[str, ...] = ()
    partial: Mapping[str, str] = field(default_factory=dict)
    delete: str | None = None
    update: tuple[tuple[str, str], ...] = ()
    #: ``aggregate``: column → function (:data:`~.aggregates.AGGREGATES`)
    aggregate: Mapping[str, str] = field(default_factory=dict)
    #: ``aggregate``: column → its Arrow type's name
    aggregate_types: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        keys: Sequence[str],
        mode: str,
        config: Mapping[str, Any],
        columns: Sequence[str],
        update: Sequence[tuple[str, str]] = (),
        *,
        types: Mapping[str, str] | None = None,
    ):
        """From a pipeline's write mode, its sink config (``SinkSpec.config``) and, for
        ``update``, each assigned column's Spark SQL over ``s`` and ``r``."""
        unknown = [k for k in config if k not in CONFIG_KEYS]
        if unknown:
            raise ConfigError(
                f"unknown Delta sink option '{unknown[0]}' (accepted: {', '.join(CONFIG_KEYS)})"
            )
        if mode == "aggregate" or "aggregate" in config:
            return cls._aggregating(mode, config, columns, types or {})
        if config and mode != "replace":
            raise ConfigError("comparison, partial and delete apply to replacing upserts only")
        comparison = tuple(config.get("comparison") or ())
        partial = dict(config.get("partial") or {})
        delete = config.get("delete")
        for c in [*comparison, *partial, *([delete] if delete else [])]:
            if c not in columns:
                raise ConfigError(f"upsert option names column '{c}', which the table lacks")
        bad = {c: s for c, s in partial.items() if s not in STRATEGIES}
        if bad:
            c, s = next(iter(bad.items()))
            raise ConfigError(
                f"partial upsert strategy '{s}' of column '{c}' is not one of "
                f"{', '.join(STRATEGIES)}"
            )
        for c, _ in update:
            if c not in columns or c in keys:
                what = "a key column" if c in keys else "no column of the table"
                raise ConfigError(f"ON DUPLICATE KEY UPDATE assigns '{c}', {what}")
        return cls(tuple(keys), mode, comparison, partial, delete, tuple(update))

    @classmethod
    def _aggregating(
        cls,
        mode: str,
        config: Mapping[str, Any],
        columns: Sequence[str],
        types: Mapping[str, str],
    ):
        """Mode ``aggregate``: ``config["aggregate"]`` maps each aggregated column to its
        function; the other columns are the key; ``types`` (column → Arrow type name) lets
        an integer SUM saturate."""
        functions = dict(config.get("aggregate") or {})
        if mode != "aggregate" or set(config) != {"aggregate"} or not functions:
            raise ConfigError(
                "an aggregating load (write mode 'aggregate') takes the one sink option "
                "'aggregate': column → SUM, MIN or MAX"
            )
        for c, fn in functions.items():
            if c not in columns:
                raise ConfigError(f"aggregate names column '{c}', which the table lacks")
            if fn not in aggregates.AGGREGATES:
                raise ConfigError(
                    f"aggregate function '{fn}' of column '{c}' is not one of "
                    f"{', '.join(aggregates.AGGREGATES)}"
                )
        keys = tuple(c for c in columns if c not in functions)
        if not keys:
            raise ConfigError("an aggregating load needs a column that is not aggregated")
        kinds = {c: types.get(c, "") for c in functions}
        return cls(keys, mode, aggregate=functions, aggregate_types=kinds)

    # -- the batch: one row per key ---------------------------------------------------
    def reduce(self, df, seq: str, columns: Sequence[str]):
        """``df`` (with ``seq`` ordering rows by arrival) reduced to one row per key."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        if self.mode == "aggregate":
            return aggregates.reduce(df, self.keys, self.aggregate, columns)
        if self.partial:
            return self._fold(df, seq, columns)
        if self.mode == "ignore":
            order = [F.col(seq).asc()]
        else:
            order = [F.col(_q(c)).desc_nulls_last() for c in self.comparison]
            order.append(F.col(seq).desc())
        win = Window.partitionBy(*[F.col(_q(k)) for k in self.keys]).orderBy(*order)
        return (
            df.withColumn("__sp_rank", F.row_number().over(win))
            .where(F.col("__sp_rank") == 1)
            .select(*[F.col(_q(c)) for c in columns])
        )

    def _fold(self, df, seq: str, columns: Sequence[str]):
        s = _q(seq)
        aggs = []
        for c in columns:
            if c in self.keys:
                continue
            col, how = _q(c), self.partial.get(c, "OVERWRITE")
            nonnull = f"CASE WHEN {col} IS NOT NULL THEN {s} END"
            expr = {
                "OVERWRITE": f"max_by({col}, {nonnull})",
                "IGNORE": f"min_by({col}, {nonnull})",
                "INCREMENT": f"sum({col})",
                "MAX": f"max({col})",
                "MIN": f"min({col})",
            }.get(how)
            if expr is None:  # APPEND, UNION: the arrays in arrival order, concatenated
                parts = (
                    f"transform(array_sort(collect_list(CASE WHEN {col} IS NOT NULL THEN "
                    f"named_struct('s', {s}, 'v', {col}) END)), x -> x.v)"
                )
                expr = f"CASE WHEN count({col}) > 0 THEN flatten({parts}) END"
                if how == "UNION":
                    expr = f"array_distinct({expr})"
            aggs.append(f"CAST({expr} AS {_spark_type(df, c)}) AS {col}")
        grouped = (
            df.groupBy(*[_q(k) for k in self.keys]).agg(*[_expr(a) for a in aggs])
            if aggs
            else df.select(*[_q(k) for k in self.keys]).distinct()
        )
        return grouped.select(*[_q(c) for c in columns])

    def fold(self, df, stored, seq: str, columns: Sequence[str], types: Mapping[str, str]):
        """``update``: ``df``'s rows (``seq`` ordering them by arrival) folded per key onto
        ``stored`` (the table's rows of those keys) or onto the key's first row; one row
        per key, of ``columns`` (Spark SQL ``types``)."""
        from pyspark.sql import functions as F

        keys = [_q(k) for k in self.keys]
        fields = [
            F.col(seq).cast("long").alias("__seq"),
            *[F.col(_q(c)).cast(types[c]).alias(c) for c in columns],
        ]
        rows = df.groupBy(*keys).agg(
            F.sort_array(F.collect_list(F.struct(*fields))).alias("__rows")
        )
        zero = [
            F.lit(0).cast("long").alias("__seq"),
            *[F.col(_q(c)).cast(types[c]).alias(c) for c in columns],
        ]
        old = stored.select(*keys, F.struct(*zero).alias("__old"))
        assigned = dict(self.update)
        step = ", ".join(
            [
                "'__seq', r.__seq",
                *(
                    f"{_lit(c)}, CAST(({assigned[c]}\n) AS {types[c]})"  # \n: ends a -- comment
                    if c in assigned
                    else f"{_lit(c)}, s.{_q(c)}"
                    for c in columns
                ),
            ]
        )
        start = "CASE WHEN __old IS NULL THEN __rows[0] ELSE __old END"
        rest = "CASE WHEN __old IS NULL THEN slice(__rows, 2, size(__rows) - 1) ELSE __rows END"
        folded = F.expr(f"aggregate({rest}, {start}, (s, r) -> named_struct({step}))")
        joined = rows.join(old, on=list(self.keys), how="left")
        return joined.select(folded.alias("__row")).select(
            *[F.col(f"__row.{_q(c)}").alias(c) for c in columns]
        )

    # -- the MERGE -----------------------------------------------------------------------
    def predicate(self) -> str:
        if self.mode == "changes":
            same = " AND ".join(
                f"(t.{_q(k)} IS NOT DISTINCT FROM s.{_q(old_column(i))})"
                for i, k in enumerate(self.keys)
            )
            return f"s.{_q(CHANGE_OP)} <> 'insert' AND {same}"
        if self.mode == "aggregate":
            return aggregates.predicate(self.keys)
        return " AND ".join(f"t.{_q(k)} = s.{_q(k)}" for k in self.keys)

    def clauses(self, merger, columns: Sequence[str]):
        """``merger`` (a delta-rs ``TableMerger``, target ``t``, source ``s``) with the
        clauses of this upsert."""
        newer = None
        if self.comparison and not self.partial:
            newer = " AND ".join(
                f"(s.{_q(c)} IS NULL OR t.{_q(c)} IS NULL OR s.{_q(c)} >= t.{_q(c)})"
                for c in self.comparison
            )
        if self.delete:
            gone = f"s.{_q(self.delete)} = true"
            merger = merger.when_matched_delete(
                predicate=f"({newer}) AND {gone}" if newer else gone
            )
        if self.mode == "insert":
            return merger.when_not_matched_insert_all()  # none matches: checked before
        if self.mode == "changes":
            new = {_q(c): f"s.{_q(c)}" for c in columns}
            op = f"s.{_q(CHANGE_OP)}"
            return (
                merger.when_matched_delete(predicate=f"{op} = 'delete'")
                .when_matched_update(updates=new, predicate=f"{op} = 'update'")
                .when_not_matched_insert(updates=new, predicate=f"{op} = 'insert'")
            )
        if self.mode == "aggregate":
            merger = merger.when_matched_update(
                updates={
                    _q(c): aggregates.merged(c, fn, self.aggregate_types.get(c, ""))
                    for c, fn in self.aggregate.items()
                }
            )
        elif self.mode == "update":
            merger = merger.when_matched_update_all()
        elif self.mode == "replace":
            if self.partial:
                merger = merger.when_matched_update(
                    updates={
                        _q(c): _merged(c, self.partial.get(c, "OVERWRITE"))
                        for c in columns
                        if c not in self.keys
                    }
                )
            else:
                merger = merger.when_matched_update_all(predicate=newer)
        keep = f"s.{_q(self.delete)} IS NOT TRUE" if self.delete else None
        return merger.when_not_matched_insert_all(predicate=keep)


def _merged(column: str, how: str) -> str:
    """The SQL (delta-rs) of a column after a PARTIAL upsert of the new row ``s`` onto the
    stored ``t``."""
    s, t = f"s.{_q(column)}", f"t.{_q(column)}"
    both = {
        "OVERWRITE": s,
        "IGNORE": t,
        "INCREMENT": f"{t} + {s}",
        "MAX": f"CASE WHEN {s} > {t} THEN {s} ELSE {t} END",
        "MIN": f"CASE WHEN {s} < {t} THEN {s} ELSE {t} END",
        "APPEND": f"array_concat({t}, {s})",
        "UNION": f"array_distinct(array_concat({t}, {s}))",
    }[how]
    return f"CASE WHEN {s} IS NULL THEN {t} WHEN {t} IS NULL THEN {s} ELSE {both} END"


def _spark_type(df, column: str) -> str:
    return df.schema[column].dataType.simpleString()


def _expr(text: str):
    from pyspark.sql import functions as F

    return F.expr(text)
