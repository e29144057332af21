"""Parse tree to AST for tables and indexes: ``CREATE TABLE`` (columns, attributes, keys,
checked for duplicates and unknown key columns), ``ALTER | DROP | OPTIMIZE TABLE``,
``VACUUM``, ``DESCRIBE``, ``CREATE | DROP INDEX`` and the table ``SHOW`` forms."""

from __future__ import annotations

from typing import Any

from lark import Token, Tree

from sparkpipes.frontends.singlestore import script
from sparkpipes.frontends.singlestore.ast_base import Expr, Literal, quote_ident
from sparkpipes.frontends.singlestore.ast_tables import (
    AlterTableAddColumn,
    AlterTableDropColumn,
    AlterTableModifyColumn,
    ColumnDef,
    CreateIndex,
    CreateTable,
    DescribeTable,
    DropIndex,
    DropTable,
    OptimizeTable,
    ShowCreateTable,
    ShowTables,
    ShowTableStatus,
    TableKey,
    Vacuum,
)
from sparkpipes.frontends.singlestore.build_base import (
    TYPE_TREES,
    Builder,
    _at,
    _end,
    _kw,
    _start,
    _sub,
    _subs,
    _tok,
)


class TableBuilder(Builder):
    """The table statements of the builder (see ``build_base.Builder``)."""

    def _create_table(self, tree: Tree) -> CreateTable:
        storage = _sub(tree, "table_storage")
        columns = [self.column(c) for c in _subs(tree, "column_def", "computed_column")]
        keys = [(k, self.table_key(k)) for k in _subs(tree, *_KEY_RULES)]
        known: dict[str, Any] = {}
        singles: dict[str, Any] = {}
        for node, column in zip(_subs(tree, "column_def", "computed_column"), columns):
            self.once(known, column.name.lower(), node, f"column '{column.name}'")
            if column.primary_key:
                self.once(singles, "PRIMARY", node, "PRIMARY KEY")
        for node, key in keys:
            if key.kind in ("PRIMARY", "SHARD", "SORT"):
                self.once(singles, key.kind, node, f"{key.kind} KEY")
            # SingleStore: keyless sharding; a columnstore without a sort key (`__UNORDERED`)
            if not key.columns and key.kind not in ("SHARD", "SORT") and key.using != _COLUMNSTORE:
                self.fail("a key needs at least one column", node)
            for col in key.columns:
                if col.lower() not in known:
                    self.fail(f"key column '{col}' is not a column of the table", node)
        return CreateTable(
            self.name(_sub(tree, "name")),
            tuple(columns),
            tuple(k for _, k in keys),
            if_not_exists=_sub(tree, "if_not_exists") is not None,
            storage=None if storage is None else _kw(storage),
            reference=_tok(tree, "REFERENCE") is not None,
            options=self.table_options(tree),
        )

    def column(self, tree: Tree) -> ColumnDef:
        name = self.name(_sub(tree, "name"))
        dtype_tree = _sub(tree, *TYPE_TREES)
        assert dtype_tree is not None
        dtype = self.data_type(dtype_tree)
        if tree.data == "computed_column":
            holder: Tree | Token | None = _sub(tree, "expr_text")
            assert isinstance(holder, Tree)
            inner = holder.children[0]
            if isinstance(inner, Tree) and inner.data == "paren" and len(inner.children) == 1:
                holder = inner.children[0]
            text = script.normalize(self.stmt[_start(holder) : _end(holder)])
            return ColumnDef(name, dtype, computed=Expr(text))
        seen: dict[str, Any] = {}
        values: dict[str, Any] = {}
        for attr in _subs(tree, *_COLUMN_ATTRS):
            key = _COLUMN_ATTRS[str(attr.data)]
            self.once(seen, key, attr, _ATTR_NAMES[key])
            values[key] = self.column_attr(attr)
        return ColumnDef(name, dtype, **values)

    def column_attr(self, attr: Tree) -> Any:
        kind = attr.data
        if kind in ("attr_not_null", "attr_null"):
            return kind == "attr_null"
        if kind == "attr_default":
            return self.literal(_at(attr, 1))
        if kind == "attr_default_word":
            return Literal("word", self.name(_sub(attr, "name")))
        if kind == "attr_default_call":
            digits = _tok(attr, "NUMBER")
            if digits is not None and not digits.value.isdigit():
                self.fail("expected an integer", digits)
            arg = "" if digits is None else str(self.number(digits))
            return Literal("call", f"{quote_ident(self.name(_sub(attr, 'name')))}({arg})")
        if kind in ("attr_collate", "attr_charset"):  # utf8_bin, or "utf8_bin" as MySQL takes it
            node = _sub(attr, "name")
            return self.name(node) if node is not None else self.string(_tok(attr, "STRING"))
        if kind == "attr_comment":
            return self.string(_tok(attr, "STRING"))
        if kind == "attr_series":
            word = _sub(attr, "name")
            if self.name(word).upper() != "TIMESTAMP":
                assert word is not None
                self.fail("expected SERIES TIMESTAMP", word)
        if kind == "attr_on_update":
            word = _sub(attr, "name")
            assert word is not None
            if self.name(word).upper() not in _NOW_WORDS:
                self.fail("ON UPDATE takes CURRENT_TIMESTAMP or NOW()", word)
        return True

    def table_key(self, tree: Tree) -> TableKey:
        kind = {
            "primary_key": "PRIMARY",
            "shard_key": "SHARD",
            "sort_key": "SORT",
            "plain_key": "KEY",
            "unique_key": "UNIQUE",
            "fulltext_key": "FULLTEXT",
        }[str(tree.data)]
        names = _subs(tree, "name")
        if kind == "FULLTEXT" and _tok(tree, "USING") is not None:  # USING VERSION n
            if self.name(names[0]).upper() != "VERSION":
                self.fail("expected FULLTEXT USING VERSION n", names[0])
            names = names[1:]
        key_name = names[0] if names else None
        using = _sub(tree, "index_using")
        columns, descending = self.key_columns(_sub(tree, "key_columns"))
        return TableKey(
            kind,
            columns,
            descending=descending,
            name=None if key_name is None else self.name(key_name),
            using=None
            if using is None
            else " ".join(_kw(using, i) for i in range(1, len(using.children))),
        )

    def key_columns(self, tree: Tree | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """A key's columns, and those of them written ``DESC``."""
        parts = [] if tree is None else _subs(tree, "key_column")
        columns = tuple(self.name(_sub(p, "name")) for p in parts)
        return columns, tuple(c for p, c in zip(parts, columns) if _tok(p, "DESC") is not None)

    def table_options(self, tree: Tree) -> tuple[tuple[str, str], ...]:
        """Options after the column list, as (NAME, value as written); only ones that
        change nothing here, but ``AUTO_INCREMENT = n`` (the first value generated)."""
        out: dict[str, str] = {}
        for opt in _subs(tree, *_TABLE_OPTIONS):
            if opt.data == "topt_other":
                name = self.name(_sub(opt, "name")).upper()
                if name not in NO_OP_TABLE_OPTIONS:
                    self.fail(f"table option {name} is not supported", opt)
            else:
                name = _TABLE_OPTIONS[str(opt.data)]
            value = opt.children[-1]
            text = self.stmt[_start(value) : _end(value)]
            self.once(out, name, opt, f"table option {name}")
            out[name] = text
        return tuple(out.items())

    def _drop_table(self, tree: Tree) -> DropTable:
        return DropTable(self.name(_sub(tree, "name")), _sub(tree, "if_exists") is not None)

    def _describe_table(self, tree: Tree) -> DescribeTable:
        names = [self.name(c) for c in tree.children if isinstance(c, Tree) and c.data == "name"]
        if len(names) == 2:
            return DescribeTable(names[1], database=names[0])
        return DescribeTable(names[0])

    def _alter_table(self, tree: Tree) -> AlterTableAddColumn:
        column = _sub(tree, "column_def", "computed_column")
        assert column is not None
        return AlterTableAddColumn(self.name(_sub(tree, "name")), self.column(column))

    def _alter_table_drop(self, tree: Tree) -> AlterTableDropColumn:
        table, column = (self.name(n) for n in _subs(tree, "name"))
        return AlterTableDropColumn(table, column)

    def _alter_table_modify(self, tree: Tree) -> AlterTableModifyColumn:
        column = _sub(tree, "column_def", "computed_column")
        assert column is not None
        if column.data == "computed_column":
            self.fail(
                "MODIFY COLUMN cannot change a computed column's expression (not supported); "
                "drop the column and add it again",
                column,
            )
        return AlterTableModifyColumn(self.name(_sub(tree, "name")), self.column(column))

    def _create_index(self, tree: Tree) -> CreateIndex:
        index, table = (self.name(n) for n in _subs(tree, "name"))
        key_columns = _sub(tree, "key_columns")
        assert key_columns is not None
        columns, _ = self.key_columns(key_columns)
        if not columns:
            self.fail("an index needs at least one column", key_columns)
        return CreateIndex(index, table, columns)

    def _optimize_table(self, tree: Tree) -> OptimizeTable:
        return OptimizeTable(self.name(_sub(tree, "name")), _tok(tree, "FULL") is not None)

    def _vacuum_table(self, tree: Tree) -> Vacuum:
        hours = _sub(tree, "int_value")
        return Vacuum(
            self.name(_sub(tree, "name")),
            None if hours is None else self.integer(hours, 0, "RETAIN … HOURS"),
            _tok(tree, "DRY") is not None,
        )

    def _show_table_status(self, tree: Tree) -> ShowTableStatus:
        like = _tok(tree, "STRING")
        return ShowTableStatus(None if like is None else self.string(like))

    def _drop_index(self, tree: Tree) -> DropIndex:
        index, table = (self.name(n) for n in _subs(tree, "name"))
        return DropIndex(index, table)

    def _show_tables(self, tree: Tree) -> ShowTables:
        like = _tok(tree, "STRING")
        return ShowTables(None if like is None else self.string(like))

    def _show_create_table(self, tree: Tree) -> ShowCreateTable:
        return ShowCreateTable(self.name(_sub(tree, "name")))


_COLUMNSTORE = "CLUSTERED COLUMNSTORE"
_KEY_RULES = ("primary_key", "shard_key", "sort_key", "plain_key", "unique_key", "fulltext_key")
#: table options after the column list, by parse-tree rule
_TABLE_OPTIONS = {
    "topt_charset": "CHARACTER SET",
    "topt_collate": "COLLATE",
    "topt_comment": "COMMENT",
    "topt_auto_increment": "AUTO_INCREMENT",
    "topt_other": "",
}
#: ``NAME = value`` table options that change nothing here (SingleStore's statistics and
#: SQL mode, MySQL's storage engine and row format)
NO_OP_TABLE_OPTIONS = frozenset(
    {
        "AUTOSTATS_ENABLED",
        "AUTOSTATS_CARDINALITY_MODE",
        "AUTOSTATS_HISTOGRAM_MODE",
        "AUTOSTATS_SAMPLING",
        "SQL_MODE",
        "ENGINE",
        "ROW_FORMAT",
        "CHARSET",
    }
)
#: what ``ON UPDATE`` may name: the time the row is updated
_NOW_WORDS = {"CURRENT_TIMESTAMP", "NOW", "LOCALTIMESTAMP", "LOCALTIME"}
_COLUMN_ATTRS = {
    "attr_not_null": "nullable",
    "attr_null": "nullable",
    "attr_default": "default",
    "attr_default_word": "default",
    "attr_default_call": "default",
    "attr_primary_key": "primary_key",
    "attr_collate": "collate",
    "attr_charset": "charset",
    "attr_auto_increment": "auto_increment",
    "attr_comment": "comment",
    "attr_on_update": "on_update",
    "attr_series": "series_timestamp",
}
_ATTR_NAMES = {
    "nullable": "NULL / NOT NULL",
    "default": "DEFAULT",
    "primary_key": "PRIMARY KEY",
    "collate": "COLLATE",
    "charset": "CHARACTER SET",
    "auto_increment": "AUTO_INCREMENT",
    "comment": "COMMENT",
    "on_update": "ON UPDATE",
    "series_timestamp": "SERIES TIMESTAMP",
}
