"""Ingest-time SQL: a pipeline's ``SET`` and ``WHERE`` and a table's computed columns
(and the columns front ends have computed first by named Arrow functions, ``functions``).

They are Spark SQL expressions (in the SingleStore dialect, translated by
``sparkpipes.engine.sql.dialect``), so they run in Spark, not in the decoding tasks: when a
pipeline has any, its sink stages what the tasks decoded and runs them in one Spark job
(a :class:`Refiner` is what the engine hands the sink). The batch still makes its one
commit with the offsets; staged files are never part of the table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from sparkpipes.config.parts import FunctionCall
from sparkpipes.config.tables import Choices, ColumnDefault, MaxLength, NullFill, ValueRules
from sparkpipes.engine.batch.contract import ErrorRecord
from sparkpipes.engine.batch.generated import Generated
from sparkpipes.engine.schema import to_spark
from sparkpipes.engine.sql.dialect import translate
from sparkpipes.engine.sql.sandbox import check_expression
from sparkpipes.errors import ConfigError, DecodeError
from sparkpipes.formats.geography import normalize
from sparkpipes.formats.geometry.functions import FUNCTIONS as ARROW_FUNCTIONS
from sparkpipes.formats.rules import substitute
from sparkpipes.formats.sanitize import fill_nulls, fill_scalar, fit_length


@dataclass(frozen=True)
class Transform:
    """Expressions from the load schema to the table schema."""

    assignments: tuple[tuple[str, str], ...] = ()
    where: str | None = None
    computed: tuple[tuple[str, str], ...] = ()
    #: what a column no row value reaches holds (a column DEFAULT); not SQL of a user's
    defaults: tuple[tuple[str, ColumnDefault], ...] = ()
    #: ENUM / SET members, GEOGRAPHY shapes and VECTOR sizes the table's values follow
    rules: ValueRules = field(default_factory=ValueRules)
    #: columns computed first by named Arrow functions (:func:`computed_by`)
    functions: tuple[FunctionCall, ...] = ()
    #: ``(condition, reason)``: rows to reject (``TransformSpec.rejects``), judged on the
    #: row the ``SET`` expressions read
    rejects: tuple[tuple[str, str], ...] = ()

    def __bool__(self) -> bool:  # defaults and members alone need no Spark: tasks do them
        return bool(
            self.assignments or self.where or self.computed or self.functions or self.rejects
        )

    def expressions(self) -> list[str]:
        """Every expression, as the user wrote it (the sandbox admits each before use)."""
        out = [a for f in self.functions for a in f.args]
        out += [e for _, e in self.assignments] + [e for _, e in self.computed]
        out += [c for c, _ in self.rejects]
        return out + ([self.where] if self.where else [])


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


#: the column :func:`apply` adds with ``check``: why a row cannot be stored, or NULL
REJECT_COLUMN = "__sp_reject"


def default_sql(default: ColumnDefault) -> str:
    """A column DEFAULT as a Spark SQL literal (``current_timestamp()`` for ``now``)."""
    v = default.value
    if default.now:
        return "current_timestamp()"
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, int | float):
        return repr(v)
    return _text(str(v))


def _text(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


_INTEGRAL = {"tinyint", "smallint", "int", "bigint"}


def enum_index_sql(column: str, choices: Choices) -> str:
    """An integer given an ENUM column as MySQL takes it: the member at that (1-based)
    index, ``''`` for any other number."""
    members = ", ".join(_text(m) for m in choices.members)
    return (
        f"CASE WHEN {column} IS NULL THEN NULL WHEN {column} BETWEEN 1 AND "
        f"{len(choices.members)} THEN element_at(array({members}), CAST({column} AS INT)) "
        "ELSE '' END"
    )


def choice_sql(column: str, choices: Choices) -> str:
    """Spark SQL of what an ENUM / SET ``column`` stores (``Choices.pick``)."""
    members = ", ".join(_text(m) for m in choices.members)
    if not choices.many:
        cases = " ".join(
            f"WHEN lower(rtrim({column})) = {_text(m.lower())} THEN {_text(m)}"
            for m in choices.members
        )
        return f"CASE WHEN {column} IS NULL THEN NULL {cases} ELSE '' END"
    named = f"transform(split({column}, ','), x -> lower(rtrim(x)))"
    return (
        f"CASE WHEN {column} IS NULL THEN NULL ELSE concat_ws(',', filter(array({members}), "
        f"m -> array_contains({named}, lower(m)))) END"
    )


def _shapes(kind: str, column: str):
    """A Spark function of a column's WKT text to (what it stores, why it cannot), by
    ``formats.geography.normalize`` (shapely, on Arrow batches)."""
    from pyspark.sql import functions as F

    @F.pandas_udf("struct<value: string, reason: string>")
    def shapes(values):
        import pandas as pd

        stored, reasons = normalize(pa.array(values, pa.string(), from_pandas=True), kind, column)
        return pd.DataFrame({"value": stored.to_pandas(), "reason": reasons.to_pandas()})

    return shapes


def _sanitized(field: pa.Field, fill: NullFill | None, rule: MaxLength | None, spark_type: str):
    """A Spark function of a column to (what it stores, why it cannot): its NULLs as
    ``fill``, its values fitted to ``rule`` (``formats.sanitize``, on Arrow batches), as
    the tasks do with a table's rules."""
    from pyspark.sql import functions as F

    def sanitized(values: pa.Array) -> pa.Array:
        reasons = None
        if fill is not None:
            values = fill_nulls(values, fill_scalar(fill, field.type))
        if rule is not None:
            values, reasons = fit_length(values, rule, field.name, substitute(rule, field))
        if reasons is None:
            reasons = pa.nulls(len(values), pa.string())
        return pa.StructArray.from_arrays([values, reasons], ["value", "reason"])

    return F.arrow_udf(sanitized, f"struct<value: {spark_type}, reason: string>")


def computed_by(call: FunctionCall):
    """The Spark function of ``call``'s Arrow function (``formats.geometry.functions``),
    run on Arrow batches; an unknown name is a ConfigError."""
    from pyspark.sql import functions as F

    fn = ARROW_FUNCTIONS.get(call.function)
    if fn is None:
        raise ConfigError(
            f"column '{call.column}' is computed by '{call.function}', which is not one of "
            f"the engine's functions ({', '.join(ARROW_FUNCTIONS)})"
        )
    run = fn.run

    def computed(*columns: pa.Array) -> pa.Array:
        return run(*columns)

    return F.arrow_udf(computed, fn.returns)


def _checked(df, name: str, got, tmp: str, reasons: list[str] | None):
    """Column ``name`` set to ``got``'s value (a struct of value and reason): with
    ``reasons`` the reason is kept as column ``tmp`` (added to ``reasons``) for the row's
    rejection; without, a reason fails the job (:func:`_unless_refused`)."""
    from pyspark.sql import functions as F

    if reasons is None:
        return df.withColumn(name, _unless_refused(got))
    reasons.append(tmp)
    return df.withColumn(tmp, got).withColumns(
        {name: F.col(f"{tmp}.value"), tmp: F.col(f"{tmp}.reason")}
    )


def _unless_refused(got):
    """The stored value of a ``_shapes`` result, or a failed job naming why."""
    from pyspark.sql import functions as F

    return F.when(got.reason.isNull(), got.value).otherwise(F.raise_error(got.reason))


def checked_cast(src: str, target: str, column: str) -> tuple[str, str]:
    """``src`` as ``target`` (NULL where it cannot be) and the reason it cannot, or NULL."""
    lit = column.replace("\\", "\\\\").replace("'", "\\'")
    value = f"try_cast(({src}) AS {target})"
    reason = (
        f"CASE WHEN ({src}) IS NOT NULL AND {value} IS NULL THEN concat('column ''{lit}'' "
        f"cannot hold ', coalesce(try_cast(({src}) AS STRING), 'the value'), ' as "
        f"{target.upper()}') END"
    )
    return value, reason


def _rejects(given: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """Each reject's Spark SQL condition (true, not NULL: ``coalesce(.., false)``) and its
    reason as a SQL literal."""
    return [(f"coalesce(({translate(c)}), false)", _text(r)) for c, r in given]


def apply(
    df,
    transform: Transform,
    table_schema: pa.Schema,
    carry: Sequence[str] = (),
    *,
    check: bool = False,
):
    """The DataFrame of table rows: SET, then WHERE, then computed columns, then cast.
    The ``carry`` columns of ``df`` are carried through unchanged, after the table's.

    Without ``check`` a value the column's type cannot hold fails the Spark job (an
    INSERT statement fails whole). With ``check`` it is stored as NULL and the row gets
    a reason in :data:`REJECT_COLUMN` (after the carried ones), so one bad record can be
    rejected with its partition and offset instead of failing every batch; an
    expression that fails by itself (not by its cast) still fails the job.

    ``transform.rejects`` are judged on the rows the ``SET`` expressions read, before
    them and before ``WHERE`` (a rejected row is rejected even where ``WHERE`` would
    leave it out, as a record whose transform throws never reaches Pinot's filter); with
    ``check`` the first true condition's reason is the row's (before any cast's), without
    it a rejected row fails the job naming the reason, as a value that does not fit
    does."""
    from pyspark.errors import PySparkException
    from pyspark.sql import functions as F

    spark_types = {f.name: f.dataType.simpleString() for f in to_spark(table_schema).fields}
    reasons: list[str] = []

    def cast(src: str, name: str, same_type: bool, text: bool = False) -> str:
        target = spark_types[name]
        if text and target.startswith("array<"):  # JSON text of an array ('[1,2,3]')
            value = f"from_json(({src}), '{target}')"
            if check:
                lit = name.replace("\\", "\\\\").replace("'", "\\'")
                reasons.append(
                    f"CASE WHEN ({src}) IS NOT NULL AND {value} IS NULL THEN 'column ''{lit}'' "
                    f"cannot hold the text as {target.upper()}' END"
                )
            return f"{value} AS {_q(name)}"
        if not check or same_type:
            return f"CAST(({src}) AS {target}) AS {_q(name)}"
        value, reason = checked_cast(src, target, name)
        reasons.append(reason)
        return f"{value} AS {_q(name)}"

    spark = df.sparkSession
    for text in transform.expressions():
        check_expression(spark, translate(text))
    try:
        for call in transform.functions:
            args = [F.expr(translate(a)) for a in call.args]
            df = df.withColumn(call.column, computed_by(call)(*args))
        rejects = _rejects(transform.rejects)
        if rejects and not check:  # a filter (Spark prunes an unread column's error)
            refused = " ".join(f"WHEN {c} THEN raise_error({r})" for c, r in rejects)
            df = df.where(f"CASE {refused} ELSE true END")
        judged = [f"CASE WHEN {c} THEN {r} END AS __sp_j{i}" for i, (c, r) in enumerate(rejects)]
        judged = judged if check else []
        if transform.assignments or judged:
            assigned = {c for c, _ in transform.assignments}
            keep = [_q(c) for c in df.columns if c not in assigned]
            sets = [f"{translate(e)} AS {_q(c)}" for c, e in transform.assignments]
            df = df.selectExpr(*keep, *sets, *judged)
        reasons += [f"__sp_j{i}" for i in range(len(judged))]  # first: Pinot's order
        if transform.where:
            where = translate(transform.where)
            if judged:
                where = f"coalesce({', '.join(reasons)}) IS NOT NULL OR ({where})"
            df = df.where(where)
        have = {f.name: f.dataType.simpleString() for f in df.schema.fields}
        enums = {c: ch for c, ch in transform.rules.choices if not ch.many}
        base = []
        for f in table_schema:
            if f.name in dict(transform.computed):
                continue
            if f.name in have:
                same = have[f.name] == spark_types[f.name]
                src = _q(f.name)
                if f.name in enums and have[f.name] in _INTEGRAL:  # an ENUM's index (MySQL)
                    src, same = enum_index_sql(src, enums[f.name]), True
                base.append(cast(src, f.name, same, have[f.name] == "string"))
            else:
                default = dict(transform.defaults).get(f.name)
                value = "NULL" if default is None else default_sql(default)
                base.append(f"CAST({value} AS {spark_types[f.name]}) AS {_q(f.name)}")
        df = df.selectExpr(*base, *[_q(c) for c in carry], *reasons)
        reason_cols = [f"__sp_r{i}" for i in range(len(reasons))]
        df = df.toDF(
            *[f.name for f in table_schema if f.name not in dict(transform.computed)],
            *carry,
            *reason_cols,
        )
        for name, expr in transform.computed:
            before = len(reasons)
            col = cast(translate(expr), name, False)
            extra = [f"{r} AS __sp_r{i}" for i, r in enumerate(reasons[before:], start=before)]
            reason_cols += [f"__sp_r{i}" for i in range(before, len(reasons))]
            df = df.selectExpr("*", col, *extra)
        if transform.rules.choices:
            chosen = dict(transform.rules.choices)
            df = df.selectExpr(
                *[
                    f"{choice_sql(_q(c), chosen[c])} AS {_q(c)}" if c in chosen else _q(c)
                    for c in df.columns
                ]
            )
        for name, n in transform.rules.vectors:
            value = F.col(_q(name))
            wrong = (F.size(value) != n) | F.exists(value, lambda x: x.isNull())
            problem = F.when(
                value.isNotNull() & wrong,
                F.lit(f"column '{name}' is VECTOR({n}); the value has another number of elements"),
            )
            if check:
                reason_cols.append(f"__sp_v{len(reason_cols)}")
                df = df.withColumn(reason_cols[-1], problem)
            else:
                refused = F.when(problem.isNull(), value).otherwise(F.raise_error(problem))
                df = df.withColumn(name, refused)
        for j, (name, kind) in enumerate(transform.rules.geography):
            got = _shapes(kind, name)(F.col(_q(name)))
            df = _checked(df, name, got, f"__sp_g{j}", reason_cols if check else None)
        fills, lengths = dict(transform.rules.fills), dict(transform.rules.lengths)
        for j, name in enumerate(dict.fromkeys([*fills, *lengths])):
            fit = _sanitized(
                table_schema.field(name), fills.get(name), lengths.get(name), spark_types[name]
            )
            got = fit(F.col(_q(name)))
            df = _checked(df, name, got, f"__sp_s{j}", reason_cols if check else None)
        out = [*[f.name for f in table_schema], *carry]
        if not check:
            return df.selectExpr(*[_q(c) for c in out])  # a dotted name is a name
        if not reason_cols:
            return df.selectExpr(*[_q(c) for c in out], f"CAST(NULL AS STRING) AS {REJECT_COLUMN}")
        return df.selectExpr(
            *[_q(c) for c in out], f"coalesce({', '.join(reason_cols)}) AS {REJECT_COLUMN}"
        )
    except PySparkException as e:
        first = str(e).strip().splitlines()[0]
        raise ConfigError(f"invalid SET / WHERE / computed-column expression: {first}") from None


@dataclass(frozen=True)
class Refiner:
    """The ingest-time SQL of one pipeline into one table, as the sink SPI's ``refine``:
    staged rows in, table rows (plus the extra columns asked for) out.

    Staged rows carry their source partition and offset (``locate``). A row whose value
    a column's type cannot hold (a computed ``PERSISTED INT`` over ``'abc'``) is a bad
    record, not a poisoned table: it fails the batch naming its partition and offset,
    or, with ``skip``, is left out and kept in :attr:`rejected` for the errors store
    (the runner takes them with :meth:`drain`). Finding them costs one more Spark job
    over the staged rows, paid only by pipelines with ingest-time SQL."""

    transform: Transform
    table_schema: pa.Schema
    skip: bool = False
    locate: tuple[str, str] | None = None  # (partition column, offset column) of staged rows
    #: NOT NULL columns that SET or a computed expression fills (the tasks check the rest)
    not_null: tuple[str, ...] = ()
    #: how errors name a record's place: the source's own words (``Source.locate``)
    where: Callable[[str, Any], str] | None = field(default=None, compare=False)
    #: the table's ``AUTO_INCREMENT`` column, numbered after the checks
    generated: Generated | None = None
    rejected: list[ErrorRecord] = field(default_factory=list, compare=False)

    def _where(self, partition: str, offset: Any) -> str:
        if self.where is None:
            return f"partition {partition} offset {offset}"
        return self.where(partition, offset)

    def __call__(self, df, keep: Sequence[str] = ()):
        if self.locate is None:
            out = apply(df, self.transform, self.table_schema, keep)
            return out if self.generated is None else self.generated.fill(out, ())
        table = set(self.table_schema.names)
        where = [c for c in self.locate if c not in table and c not in keep]
        out = apply(df, self.transform, self.table_schema, (*keep, *where), check=True)
        if self.not_null:
            from pyspark.sql import functions as F

            empty = [
                F.when(F.col(_q(c)).isNull(), F.lit(f"column '{c}' is NOT NULL but gets no value"))
                for c in self.not_null
            ]
            out = out.withColumn(REJECT_COLUMN, F.coalesce(F.col(REJECT_COLUMN), *empty))
        part, offset = self.locate
        bad = out.where(f"{REJECT_COLUMN} IS NOT NULL").select(part, offset, REJECT_COLUMN)
        rows = bad.orderBy(part, offset).collect()
        if rows:
            errors = [
                DecodeError(
                    f"cannot load the record at {self._where(r[0], r[1])}: {r[2]}",
                    partition=r[0],
                    offset=r[1],
                )
                for r in rows
            ]
            if not self.skip:
                raise errors[0]
            self.rejected.extend(ErrorRecord.of(e, reason=r[2]) for e, r in zip(errors, rows))
        out = out.where(f"{REJECT_COLUMN} IS NULL")
        if self.generated is not None:
            out = self.generated.fill(out, self.locate)
        return out.selectExpr(*[_q(c) for c in (*self.table_schema.names, *keep)])

    def drain(self) -> list[ErrorRecord]:
        """The rows rejected since the last call."""
        out = list(self.rejected)
        self.rejected.clear()
        return out
