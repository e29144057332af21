"""The checked SELECT of the JVM-free query path (``quick``): ``_Plan`` walks sqlglot's tree
of one query clause by clause, accepts only what DataFusion answers exactly as Spark does
(see ``quick``'s docstring for the whitelist) and writes it out in DataFusion's SQL;
anything else raises ``_Fallback``. Imports pyarrow and sqlglot on use only.
"""

from __future__ import annotations

from typing import Any

from sparkpipes.frontends.singlestore.quick_values import (
    _BIGINT,
    _E,
    _EXACT_DOUBLE,
    _INT64,
    _ORDERED,
    _T,
    _arrow_type,
    _comparable,
    _Fallback,
    _Item,
    _literal,
    _only,
    _q,
)


class _Plan:
    """One SELECT, checked and written out in DataFusion's SQL."""

    def __init__(self, schema: Any, qualifier: str, delta: Any) -> None:
        self.fields = [(f.name, _arrow_type(f.type)) for f in schema]
        self.qualifier = qualifier
        self.delta = delta
        self.items: list[_Item] = []
        self.commas = 0
        self.parens = 0
        self._magnitudes: dict[str, int | None] | None = None

    # -- clauses --------------------------------------------------------------------------
    def build(self, tree: Any, max_rows: int | None) -> str:
        from sqlglot import exp

        distinct = tree.args.get("distinct")
        if distinct is not None:
            _only(distinct)
        selected = tree.expressions
        if not selected:
            raise _Fallback
        self.commas += len(selected) - 1
        for node in selected:
            self._select(node)
        aggregated = any(i.e.agg for i in self.items)
        if distinct is not None and any(
            i.e.avg_of is not None or (i.e.t.kind == "float" and not i.e.t.exact)
            for i in self.items
        ):
            raise _Fallback
        parts = ["SELECT DISTINCT" if distinct is not None else "SELECT", self._outputs()]
        parts.append('FROM "q"')
        where = tree.args.get("where")
        if where is not None:
            parts.append("WHERE " + self._pred(where.this, agg=False))
        group = tree.args.get("group")
        if group is not None:
            _only(group, "expressions")
            if not group.expressions:
                raise _Fallback
            self.commas += len(group.expressions) - 1
            parts.append("GROUP BY " + ", ".join(self._group(g) for g in group.expressions))
            aggregated = True
        having = tree.args.get("having")
        if having is not None:
            if not aggregated:
                raise _Fallback
            parts.append("HAVING " + self._pred(having.this, agg=True))
        order = tree.args.get("order")
        if order is not None:
            _only(order, "expressions")
            self.commas += len(order.expressions) - 1
            keys = [self._order(o, aggregated, distinct is not None) for o in order.expressions]
            parts.append("ORDER BY " + ", ".join(keys))
        limit = tree.args.get("limit")
        n = None
        if limit is not None:
            _only(limit, "expression")
            lit = limit.expression
            if not isinstance(lit, exp.Literal) or lit.is_string or not lit.this.isdigit():
                raise _Fallback
            n = int(lit.this)
        if max_rows is not None:
            n = max_rows + 1 if n is None else min(n, max_rows + 1)
        if n is not None:
            parts.append(f"LIMIT {n}")
        return " ".join(parts)

    def _outputs(self) -> str:
        out = []
        for k, item in enumerate(self.items):
            e = item.e
            if e.avg_of is not None:
                out.append(f'sum({e.avg_of}) AS "c{k}", count({e.avg_of}) AS "n{k}"')
            else:
                out.append(f'{e.sql} AS "c{k}"')
        return ", ".join(out)

    def _select(self, node: Any) -> None:
        from sqlglot import exp

        if isinstance(node, exp.Star) or (
            isinstance(node, exp.Column) and isinstance(node.this, exp.Star)
        ):
            star = node if isinstance(node, exp.Star) else node.this
            _only(star)
            if isinstance(node, exp.Column):
                _only(node, "this", "table")
                if node.args.get("table") is not None and node.table.lower() != self.qualifier:
                    raise _Fallback
            for name, t in self.fields:
                if t is None:
                    raise _Fallback
                self.items.append(_Item(_E(_q(name), t, name), name, False))
            return
        if isinstance(node, exp.Alias):
            _only(node, "this", "alias")
            e = self._value(node.this, agg=True)
            self.items.append(_Item(e, node.alias, True))
            return
        e = self._value(node, agg=True)
        self.items.append(_Item(e, e.name, False))

    def _group(self, node: Any) -> str:
        from sqlglot import exp

        if isinstance(node, exp.Literal) and not node.is_string:
            e = self._ordinal(node)
            if e.agg or not e.sql.startswith('"'):
                raise _Fallback  # a position must name a column
        elif isinstance(node, exp.Column):
            e = self._column(node)
        else:
            raise _Fallback
        if e.t.kind not in _ORDERED:
            raise _Fallback
        return e.sql

    def _order(self, node: Any, aggregated: bool, distinct: bool) -> str:
        from sqlglot import exp

        if not isinstance(node, exp.Ordered):
            raise _Fallback
        _only(node, "this", "desc", "nulls_first")
        what = node.this
        if isinstance(what, exp.Literal) and not what.is_string:
            e = self._ordinal(what)
        elif isinstance(what, exp.Column) and what.args.get("table") is None:
            # Spark resolves ORDER BY names against the select list first
            ident = what.this
            if not isinstance(ident, exp.Identifier):
                raise _Fallback
            _only(what, "this")
            named = [i for i in self.items if i.name.lower() == ident.this.lower()]
            if len({i.e.sql for i in named}) > 1 or any(
                not i.alias and not i.e.sql.startswith('"') for i in named
            ):
                raise _Fallback
            e = named[0].e if named else self._column(what)
        elif isinstance(what, (exp.Column, exp.Count, exp.Sum, exp.Min, exp.Max, exp.Avg)):
            e = self._value(what, agg=aggregated)
        else:
            raise _Fallback  # a constant: Spark keeps any order, so may DataFusion, but why
        if e.avg_of is not None or (e.t.kind not in (*_ORDERED, "null") and not e.t.exact):
            raise _Fallback
        sql = next((f'"c{k}"' for k, i in enumerate(self.items) if i.e.sql == e.sql), None)
        if sql is None:
            if distinct:
                raise _Fallback
            sql = e.sql
        desc = bool(node.args.get("desc"))
        first = node.args.get("nulls_first")
        first = (not desc) if first is None else bool(first)
        return f"{sql} {'DESC' if desc else 'ASC'} NULLS {'FIRST' if first else 'LAST'}"

    def _ordinal(self, node: Any) -> _E:
        if not node.this.isdigit() or not 1 <= int(node.this) <= len(self.items):
            raise _Fallback
        return self.items[int(node.this) - 1].e

    # -- expressions ----------------------------------------------------------------------
    def _column(self, node: Any) -> _E:
        from sqlglot import exp

        if not isinstance(node, exp.Column) or not isinstance(node.this, exp.Identifier):
            raise _Fallback
        _only(node, "this", "table")
        if node.args.get("table") is not None and node.table.lower() != self.qualifier:
            raise _Fallback
        typed = node.this.this
        found = [(n, t) for n, t in self.fields if n.lower() == typed.lower()]
        if len(found) != 1 or found[0][1] is None:
            raise _Fallback
        name, t = found[0]
        return _E(_q(name), t, typed)

    def _value(self, node: Any, *, agg: bool, having: bool = False) -> _E:
        from sqlglot import exp

        if isinstance(node, exp.Column):
            return self._having_column(node) if having else self._column(node)
        if agg and isinstance(node, (exp.Count, exp.Sum, exp.Min, exp.Max, exp.Avg)):
            return self._aggregate(node)
        return _literal(node)

    def _having_column(self, node: Any) -> _E:
        """A name in HAVING: a select-list alias, else a column; both, unless the same, is
        Spark's to decide."""
        from sqlglot import exp

        if node.args.get("table") is not None or not isinstance(node.this, exp.Identifier):
            return self._column(node)
        typed = node.this.this.lower()
        aliased = {i.e.sql: i.e for i in self.items if i.alias and i.name.lower() == typed}
        if not aliased:
            return self._column(node)
        if len(aliased) > 1:
            raise _Fallback
        (e,) = aliased.values()
        if any(n.lower() == typed for n, _ in self.fields) and self._column(node).sql != e.sql:
            raise _Fallback
        return e

    def _aggregate(self, node: Any) -> _E:
        from sqlglot import exp

        self.parens += 1
        fn = type(node).__name__.lower()
        arg = node.this
        if isinstance(node, exp.Count):
            _only(node, "this", "big_int")
            if isinstance(arg, exp.Star):
                _only(arg)
                return _E("count(*)", _BIGINT, "count(1)", agg=True)
            if isinstance(arg, exp.Literal):
                lit = _literal(arg)
                if lit.t.kind != "int":
                    raise _Fallback
                return _E("count(*)", _BIGINT, f"count({lit.name})", agg=True)
            if isinstance(arg, exp.Distinct):
                _only(arg, "expressions")
                if len(arg.expressions) != 1:
                    raise _Fallback
                col = self._column(arg.expressions[0])
                if col.t.kind == "float":
                    raise _Fallback
                name = f"count(DISTINCT {col.name})"
                return _E(f"count(DISTINCT {col.sql})", _BIGINT, name, agg=True)
            col = self._column(arg)
            return _E(f"count({col.sql})", _BIGINT, f"count({col.name})", agg=True)
        _only(node, "this")
        col = self._column(arg)
        name, t = f"{fn}({col.name})", col.t
        if fn in ("min", "max"):
            if t.kind not in _ORDERED:
                raise _Fallback
            return _E(f"{fn}({col.sql})", t, name, agg=True)
        if t.kind == "dec" and t.p <= 28:  # wider sums may overflow: Spark's errors
            if fn == "sum":
                return _E(f"sum({col.sql})", _T("dec", t.p + 10, t.s), name, agg=True)
            return _E(f"avg({col.sql})", _T("dec", t.p + 4, t.s + 4), name, True, avg_of=col.sql)
        if t.kind != "int":
            raise _Fallback
        magnitude = self._magnitude(col.sql)
        if fn == "sum" and magnitude is not None and magnitude <= _INT64:
            return _E(f"sum(CAST({col.sql} AS BIGINT))", _BIGINT, name, agg=True)
        if fn == "avg" and magnitude is not None and magnitude <= _EXACT_DOUBLE:
            return _E(f"avg(CAST({col.sql} AS DOUBLE))", _T("float", exact=True), name, True)
        raise _Fallback

    def _magnitude(self, column: str) -> int | None:
        """A bound on the sum of the absolute values of ``column`` (largest absolute value
        times rows, from the Delta statistics); ``None`` without statistics. Within bounds no
        partial sum of Spark's, in whatever order, overflows a BIGINT or rounds a double."""
        import pyarrow as pa

        if self._magnitudes is None:
            self._magnitudes = {}
            stats = self.delta.get_add_actions(flatten=True)  # pa.table() would import pandas
            actions = pa.RecordBatchReader.from_stream(stats).read_all().to_pylist()
            for name, t in self.fields:
                if t is not None and t.kind == "int":
                    self._magnitudes[_q(name)] = _bound(actions, name)
        return self._magnitudes.get(column)

    def _pred(self, node: Any, *, agg: bool) -> str:
        from sqlglot import exp

        compare = {
            exp.EQ: "=",
            exp.NEQ: "<>",
            exp.GT: ">",
            exp.GTE: ">=",
            exp.LT: "<",
            exp.LTE: "<=",
            exp.NullSafeEQ: "IS NOT DISTINCT FROM",
        }
        if isinstance(node, exp.Paren):
            self.parens += 1
            return f"({self._pred(node.this, agg=agg)})"
        if isinstance(node, (exp.And, exp.Or)):
            op = "AND" if isinstance(node, exp.And) else "OR"
            _only(node, "this", "expression")
            left, right = self._pred(node.this, agg=agg), self._pred(node.expression, agg=agg)
            return f"({left} {op} {right})"
        if isinstance(node, exp.Not):
            return f"(NOT {self._pred(node.this, agg=agg)})"
        if type(node) in compare:
            _only(node, "this", "expression")
            null_ok = isinstance(node, exp.NullSafeEQ)
            left = self._operand(node.this, agg, null_ok=null_ok)
            right = self._operand(node.expression, agg, null_ok=null_ok)
            left, right = _comparable(left, right)
            return f"({left.sql} {compare[type(node)]} {right.sql})"
        if isinstance(node, exp.Is):
            _only(node, "this", "expression", "negate")
            if not isinstance(node.expression, exp.Null):
                raise _Fallback
            what = self._value(node.this, agg=agg, having=agg)
            if what.avg_of is not None:
                raise _Fallback
            return f"({what.sql} IS {'NOT ' if node.args.get('negate') else ''}NULL)"
        if isinstance(node, exp.In):
            _only(node, "this", "expressions")
            if not node.expressions:
                raise _Fallback
            self.parens += 1
            self.commas += len(node.expressions) - 1
            left = self._operand(node.this, agg)
            items = []
            for x in node.expressions:
                a, b = _comparable(left, self._operand(x, agg))
                left = a
                items.append(b.sql)
            return f"({left.sql} IN ({', '.join(items)}))"
        if isinstance(node, exp.Between):
            _only(node, "this", "low", "high")
            what = self._operand(node.this, agg)
            lo = _comparable(what, self._operand(node.args["low"], agg))
            hi = _comparable(what, self._operand(node.args["high"], agg))
            return f"({lo[0].sql} >= {lo[1].sql} AND {hi[0].sql} <= {hi[1].sql})"
        if isinstance(node, exp.Like):
            _only(node, "this", "expression", "negate")
            what = self._operand(node.this, agg)
            pattern = _literal(node.expression)
            if what.t.kind != "str" or pattern.text is None:
                raise _Fallback
            neg = "NOT " if node.args.get("negate") else ""
            return f"({what.sql} {neg}LIKE {pattern.sql})"
        if isinstance(node, exp.Column):
            e = self._value(node, agg=agg, having=agg)
            if e.t.kind != "bool":
                raise _Fallback
            return e.sql
        if isinstance(node, exp.Boolean):
            return _literal(node).sql
        raise _Fallback

    def _operand(self, node: Any, agg: bool, *, null_ok: bool = False) -> _E:
        """A value compared in WHERE or HAVING. A NULL literal only with ``<=>``: DataFusion
        simplifies NULL to FALSE in a filter, also under NOT (``NOT (a IN (1, NULL))``)."""
        e = self._value(node, agg=agg, having=agg)
        if e.avg_of is not None or (e.t.kind == "float" and not e.t.exact):
            raise _Fallback
        if e.t.kind == "null" and not null_ok:
            raise _Fallback
        return e


def _bound(actions: list[dict[str, Any]], name: str) -> int | None:
    largest, rows = 0, 0
    for a in actions:
        n, nulls = a.get("num_records"), a.get(f"null_count.{name}")
        if n is None:
            return None
        rows += n
        if nulls == n:
            continue
        lo, hi = a.get(f"min.{name}"), a.get(f"max.{name}")
        if lo is None or hi is None:
            return None
        largest = max(largest, abs(int(lo)), abs(int(hi)))
    return largest * rows
