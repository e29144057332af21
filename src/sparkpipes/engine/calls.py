"""``CALL p(q [, expr …])`` in a procedure's body, as SingleStore binds a call's arguments.

A procedure takes one ``QUERY(…)`` parameter and, when another procedure CALLs it, scalar
parameters besides it. The CALL gives one argument per parameter, by position: at the
QUERY parameter's place the batch or a ``DECLARE``d query of the caller (its rows, by
position, named and cast as the parameter declares them: ``ProcedureBody.batch_of``), at
each other place an expression of the caller (its variables, a scalar subquery over its batch)
whose value, cast to the parameter's declared type, the callee reads by the parameter's
name (:func:`arguments`). A count or an order that does not fit the callee is refused when
the caller is made (and checked again when a pipeline runs it, the callee as it is then).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sparkpipes.config.procedure import ProcedureSpec, ProcedureStatement
from sparkpipes.errors import ConfigError


def _unquote(name: str) -> str:
    return name[1:-1].replace("``", "`") if name.startswith("`") else name


def call_query(s: ProcedureStatement) -> str:
    """The rows ``CALL p(q)`` gives ``p`` as its batch: the query ``q`` names."""
    return "SELECT * FROM `" + s.query.replace("`", "``") + "`"


def _batch_at(s: ProcedureStatement) -> int:
    args = s.args or (s.query,)
    return next(i for i, a in enumerate(args) if _unquote(a).lower() == s.query.lower())


def scalar_expressions(s: ProcedureStatement) -> list[str]:
    """The arguments of ``CALL`` ``s`` that are values (every one but its batch's)."""
    at = _batch_at(s)
    return [a for i, a in enumerate(s.args) if i != at]


def parameters(
    callee: ProcedureSpec, s: ProcedureStatement, where: str
) -> list[tuple[str, str, str]]:
    """The callee's scalar parameters with the Spark type each declares and the
    expression ``s`` gives it; ConfigError where the arguments do not fit the parameters
    (their number, or where the batch stands)."""
    args = s.args or (s.query,)
    kinds = {v.name: v.type for v in callee.variables}
    taken = [*callee.scalars]
    taken.insert(callee.position, "<QUERY>")
    if len(args) != len(taken):
        raise ConfigError(
            f"{where}: CALL {callee.name} gives {len(args)} argument(s); procedure "
            f"'{callee.name}' takes {len(taken)} ({', '.join(taken)})"
        )
    at = _batch_at(s)
    if at != callee.position:
        raise ConfigError(
            f"{where}: CALL {callee.name}: its batch '{s.query}' is argument {at + 1}, and "
            f"procedure '{callee.name}' takes its QUERY parameter as argument "
            f"{callee.position + 1}"
        )
    values = scalar_expressions(s)
    return [(p, kinds[p], e) for p, e in zip(callee.scalars, values, strict=True)]


def arguments(
    caller: Any,
    callee: ProcedureSpec,
    spark: Any,
    s: ProcedureStatement,
    view: str,
    values: dict[str, Any],
    views: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The callee's scalar parameters as ``s`` sets them: each expression's value in the
    caller (a ``ProcedureBody``, bound to the batch ``view``, its variables ``values``),
    cast to the declared type."""
    where = f"procedure '{caller.spec.name}', line {s.line}"
    return {
        p: caller.value(spark, expr, kind, view, values, s.line, views)
        for p, kind, expr in parameters(callee, s, where)
    }
