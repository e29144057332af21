"""Transforms that read what other transforms make, as Pinot's ``ExpressionTransformer``
runs them.

Pinot puts every ``transformConfigs`` entry and every schema field's own
``transformFunction`` in one map, sorts it topologically by the fields each reads (a
depth-first search that refuses a cycle: "Expression cycle found for column '…' in
Ingestion Transform Function definitions.") and evaluates them in that order on the one
record, skipping a transform whose column the record already holds a non-null value for.
So a transform reading ``b``, where ``b`` is another transform's destination, reads
``b``'s computed value (or the record's own ``b``), not the record's raw field; and so
does the ``filterFunction``, which runs after the transforms. The newest Pinot also lets a
destination that is no schema column be an intermediate another transform reads
(``msg = jsonPathString(payload, '$.msg')``, then ``jsonPathString(msg, '$.level')``).

Here every expression is one Spark SQL expression over the record's variables (a ``SET``
cannot read another ``SET``'s result), so a field another transform makes is replaced by
that transform's SQL (:func:`resolve`, substituted by the expression parser with the
record's own value first), its geospatial calls computed before the reader's. The rows are
the ones Pinot's order gives, and a cycle is refused by name before anything runs
(:class:`ChainError`).

Each reading writes the SQL it reads in again, so the table's transforms, its filter and
what its aggregations read share one :class:`~sparkpipes.frontends.pinot.expr.Budget`
of SQL (``MAX_SQL`` characters): ten transforms each reading the one before twice, read by
400 columns, would otherwise be some 50 MB of SQL for Spark's parser and the catalog from
some 20 KB of config. The engine's ``SET`` expressions cannot read each other
(``engine.batch.transform`` evaluates them in one projection), so writing a chain out is
the only way short of an engine change; the budget bounds it. The model (checking) and the
lowering (building) spend one budget in the same order (:func:`resolve`, then
:func:`source` for each aggregation, then the filter), so a table accepted when checked is
built the same way."""

from __future__ import annotations

from collections.abc import Mapping

from sparkpipes.errors import ConfigError
from sparkpipes.frontends.pinot.expr import Budget, PinotExpr, translate


def where(column: str) -> str:
    """How errors name the transform of ``column``."""
    return f"transform of column '{column}'"


def arguments(transforms: Mapping[str, str]) -> dict[str, tuple[str, ...]]:
    """The fields each transform reads itself (Pinot's ``FunctionEvaluator.getArguments``);
    one that does not translate is left out (its own error is reported elsewhere)."""
    out: dict[str, tuple[str, ...]] = {}
    for column, text in transforms.items():
        try:
            out[column] = translate(text, where=where(column)).fields
        except ConfigError:
            continue
    return out


def cycle_message(columns: tuple[str, ...]) -> str:
    """Why a cycle is refused, in Pinot's words too."""
    return (
        f"{where(columns[0])}: the transforms of {' → '.join(columns)} read each other in a "
        'cycle, so none can be computed first; Pinot refuses it too ("Expression cycle '
        f"found for column '{columns[0]}' in Ingestion Transform Function definitions.\")"
    )


class ChainError(ConfigError):
    """Transforms that cannot be written out over the record's fields: a cycle, or a
    chain too large; ``column`` is the transform where it was found."""

    def __init__(self, message: str, column: str = "") -> None:
        super().__init__(message)
        self.column = column


def resolve(transforms: Mapping[str, str], budget: Budget | None = None) -> dict[str, PinotExpr]:
    """Each transform (destination → Pinot expression) translated over the record's fields
    only: a field another transform makes is that transform's value, the record's own
    value first. ``budget`` is the table's (a new one without it), spent by every
    transform's SQL, intermediates' too (they are written into their readers). Raises
    :class:`ChainError` for a cycle (in ``transforms`` order, the first transform found
    reading itself through others), for SQL past the budget (the transform where it ran
    out: ``expr.TooLarge``) or a transform that does not translate with what it reads
    written in, and :class:`ConfigError` for one that does not translate by itself."""
    budget = budget if budget is not None else Budget()
    done: dict[str, PinotExpr] = {}

    def visit(column: str, path: tuple[str, ...]) -> None:
        if column in done:
            return
        if column in path:
            loop = (*path[path.index(column) :], column)
            raise ChainError(cycle_message(loop), loop[0])
        text = transforms[column]
        for arg in translate(text, where=where(column)).fields:
            if arg in transforms:
                visit(arg, (*path, column))
        try:
            done[column] = translate(text, where=where(column), derived=done, budget=budget)
        except ConfigError as e:  # too large (TooLarge), or what it reads does not fit
            raise ChainError(e.message, column) from None

    for column in transforms:
        visit(column, ())
    return done


def source(field: str, made: Mapping[str, PinotExpr], budget: Budget) -> PinotExpr:
    """The SQL of the field an aggregation reads: the record's, or what a transform makes
    of it (the record's own value first, as for any transform's destination), spending
    ``budget``. Raises ``expr.TooLarge`` (a ConfigError) past it."""
    quoted = '"' + field.replace('"', '""') + '"'
    where = f"source field '{field}' of an aggregation"
    return translate(quoted, where=where, derived=made, budget=budget)
