"""``parse_one(s.to_sql()) == s`` for parsed statements and for generated ASTs."""

import json
import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkpipes.frontends.singlestore import (
    AlterPipeline,
    Assignment,
    ColumnDef,
    CreatePipeline,
    CreateTable,
    DataType,
    DropPipeline,
    Expr,
    FieldMapping,
    FieldsFormat,
    Insert,
    LinesFormat,
    Literal,
    LoadColumn,
    ProcedureParam,
    Query,
    SetVariable,
    StartPipeline,
    StructField,
    TableKey,
    Target,
    grammar,
    parse,
    parse_one,
    quote_ident,
    quote_string,
)
from sparkpipes.frontends.singlestore.script import normalize, split
from tests.unit.frontends.singlestore.sql_cases import ALL

SETTINGS = settings(max_examples=200, deadline=None)


@pytest.mark.parametrize("sql", ALL)
def test_parsed_statements_round_trip(sql):
    for stmt in parse(sql):
        canonical = stmt.to_sql()
        assert parse_one(canonical) == stmt
        assert parse_one(canonical).to_sql() == canonical
        assert hash(parse_one(canonical)) == hash(stmt)


def test_canonical_form_is_upper_case_and_normalized():
    stmt = parse_one(
        "create  pipeline p as load data kafka 'h:9092/t'\n batch_interval 10 into table t "
        "format json (a <- b) set c  =  d  +  1 where e  =  'x  y'"
    )
    assert stmt.to_sql() == (
        "CREATE PIPELINE p AS LOAD DATA KAFKA 'h:9092/t' BATCH_INTERVAL 10 INTO TABLE t "
        "FORMAT JSON (a <- b) SET c = d + 1 WHERE e = 'x  y'"
    )


def test_identifiers_are_quoted_only_when_needed():
    assert quote_ident("events") == "events"
    assert quote_ident("data") == "data"
    assert quote_ident("select") == "`select`"
    assert quote_ident("key") == "`key`"
    assert quote_ident("my table") == "`my table`"
    assert quote_ident("a`b") == "`a``b`"
    assert quote_ident("1a") == "`1a`"
    assert quote_ident("été") == "`été`"


def test_strings_are_quoted_canonically():
    assert quote_string("it's") == "'it\\'s'"
    assert quote_string('a\\b"\n') == "'a\\\\b\"\\n'"


def test_grammar_has_no_lalr_conflicts():
    messages: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(record.getMessage())

    from lark import Lark, logger

    handler, level = Collect(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        Lark(grammar.grammar_text(), parser="lalr", lexer="contextual", debug=True)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    assert [m for m in messages if "conflict" in m.lower() or "collision" in m.lower()] == []


def test_reserved_words_are_keywords():
    assert set(grammar.KEYWORDS) >= grammar.RESERVED
    assert grammar.identifier_keywords() >= grammar.RESERVED


# ---------------------------------------------------------------------------- generated ASTs

idents = st.one_of(
    st.text(min_size=1, max_size=10),
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_$]{0,8}", fullmatch=True),
    st.sampled_from(grammar.KEYWORDS),
    st.sampled_from(grammar.KEYWORDS).map(str.lower),
)
undotted = idents.filter(lambda s: "." not in s)
sources = idents.map(str.upper).filter(lambda s: s.upper() == s)
texts = st.text(max_size=20)
json_objects = st.dictionaries(
    st.text(max_size=5),
    st.one_of(st.integers(), st.text(max_size=5), st.booleans(), st.none()),
    max_size=3,
).map(json.dumps)
literals = st.one_of(
    texts.map(lambda s: Literal("string", s)),
    st.integers(-(2**63), 2**63).map(lambda n: Literal("number", n)),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda f: Literal("number", f)),
    st.booleans().map(lambda b: Literal("boolean", b)),
    st.just(Literal("null", None)),
)
set_values = st.one_of(literals, idents.map(lambda s: Literal("word", s)))
EXPRS = [
    "1",
    "a + b * 2",
    "NOW()",
    "CASE WHEN x > 1 THEN 'a;b' ELSE NULL END",
    "record::$f::g",
    "`weird col` - -1",
    'f(a, "x") IS NOT NULL',
    "@v",
    "a NOT BETWEEN 1 AND 2 OR b NOT LIKE 'x%' AND c IN (SELECT d FROM e)",
]
exprs = st.sampled_from(EXPRS).map(Expr)
positive = st.integers(1, 10**12)
non_negative = st.integers(0, 10**12)


def optional(strategy):
    return st.none() | strategy


def unique_by_lower(items, key):
    seen, out = set(), []
    for item in items:
        if key(item).lower() not in seen:
            seen.add(key(item).lower())
            out.append(item)
    return tuple(out)


@st.composite
def pipelines(draw):
    inferred = draw(st.booleans())
    target = draw(st.builds(Target, st.sampled_from(["TABLE", "PROCEDURE"]), idents))
    if inferred:
        target = draw(st.none() | st.just(target))
    csv = draw(st.booleans())
    fields: dict = {}
    if target is not None and csv:
        fields["format"] = draw(st.sampled_from([None, "CSV"]))
        fields["fields"] = draw(
            optional(
                st.builds(
                    FieldsFormat,
                    optional(texts),
                    optional(texts),
                    st.booleans(),
                    optional(texts),
                ).filter(
                    lambda f: (
                        (f.enclosed_by is not None or not f.optionally_enclosed)
                        and (f.terminated_by, f.enclosed_by, f.escaped_by) != (None, None, None)
                    )
                )
            )
        )
        fields["lines"] = draw(
            optional(
                st.builds(LinesFormat, optional(texts), optional(texts)).filter(
                    lambda f: f.terminated_by is not None or f.starting_by is not None
                )
            )
        )
        fields["ignore_lines"] = draw(optional(non_negative))
        fields["columns"] = tuple(draw(st.lists(st.builds(LoadColumn, idents, st.booleans()))))
    elif target is not None:
        fields["format"] = draw(st.sampled_from(["JSON", "AVRO", "PARQUET"]))
        rooted = st.booleans()
        fields["mappings"] = tuple(
            draw(
                st.lists(
                    st.builds(
                        FieldMapping,
                        idents,
                        st.lists(idents, max_size=3).map(tuple),
                        st.booleans(),
                        rooted,
                        optional(literals),
                    ).filter(lambda m: m.rooted or m.path),
                    max_size=3,
                )
            )
        )
    else:
        fields["format"] = draw(st.sampled_from([None, "JSON", "AVRO"]))
    if target is not None:
        assignments = draw(st.lists(st.builds(Assignment, idents, exprs), max_size=3))
        fields["assignments"] = unique_by_lower(assignments, lambda a: a.column)
        fields["where"] = draw(optional(exprs))
    return CreatePipeline(
        name=draw(idents),
        source=draw(sources),
        location=draw(texts),
        target=target,
        inferred=inferred,
        or_replace=draw(st.booleans()),
        if_not_exists=draw(st.booleans()),
        config=draw(optional(json_objects)),
        credentials=draw(optional(json_objects)),
        batch_interval=draw(optional(non_negative)),
        max_partitions_per_batch=draw(optional(positive)),
        max_offsets_per_batch_partition=draw(optional(positive)),
        max_retries_per_batch_partition=draw(optional(non_negative)),
        skip_errors=draw(
            optional(st.sampled_from(["PARSER", "ALL", "CONSTRAINT", "DUPLICATE KEY"]))
        ),
        on_conflict=draw(optional(st.sampled_from(["REPLACE", "IGNORE"]))),
        **fields,
    )


simple_types = st.one_of(
    st.sampled_from(["INT", "BIGINT", "DECIMAL", "DOUBLE"]).flatmap(
        lambda n: st.builds(
            DataType,
            st.just(n),
            st.lists(st.integers(0, 99), max_size=1).map(tuple),
            unsigned=st.booleans(),
        )
    ),
    st.sampled_from(["TEXT", "JSON", "DATE", "STRING", "BOOLEAN", "LONGTEXT"]).map(DataType),
    st.integers(0, 65535).map(lambda n: DataType("VARCHAR", (n,))),
    st.integers(0, 6).map(lambda n: DataType("DATETIME", (n,))),
)
data_types = st.recursive(
    simple_types,
    lambda inner: st.one_of(
        inner.map(lambda t: DataType("ARRAY", args=(t,))),
        st.tuples(inner, inner).map(lambda kv: DataType("MAP", args=kv)),
        st.lists(st.builds(StructField, idents, inner), min_size=1, max_size=3).map(
            lambda fs: DataType("STRUCT", fields=tuple(fs))
        ),
    ),
    max_leaves=5,
)


@st.composite
def tables(draw):
    columns = []
    for name in draw(st.lists(idents, min_size=1, max_size=4)):
        if draw(st.booleans()):
            columns.append(ColumnDef(name, draw(data_types), computed=draw(exprs)))
            continue
        columns.append(
            ColumnDef(
                name,
                draw(data_types),
                nullable=draw(optional(st.booleans())),
                default=draw(optional(literals)),
                auto_increment=draw(st.booleans()),
                charset=draw(optional(idents)),
                collate=draw(optional(idents)),
                comment=draw(optional(texts)),
            )
        )
    columns = unique_by_lower(columns, lambda c: c.name)
    names = [c.name for c in columns]
    keys = []
    for kind in draw(st.lists(st.sampled_from(["PRIMARY", "SHARD", "SORT", "KEY", "UNIQUE"]))):
        if kind in {k.kind for k in keys} and kind in ("PRIMARY", "SHARD", "SORT"):
            continue
        cols = tuple(draw(st.lists(st.sampled_from(names), min_size=1, max_size=2)))
        name = None if kind == "PRIMARY" else draw(optional(idents))
        using = None
        if kind not in ("SHARD", "SORT"):
            using = draw(optional(st.sampled_from(["HASH", "BTREE", "CLUSTERED COLUMNSTORE"])))
        keys.append(TableKey(kind, cols, name=name, using=using))
    return CreateTable(
        draw(idents),
        columns,
        tuple(keys),
        if_not_exists=draw(st.booleans()),
        storage=draw(optional(st.sampled_from(["ROWSTORE", "COLUMNSTORE"]))),
        reference=draw(st.booleans()),
    )


statements = st.one_of(
    pipelines(),
    tables(),
    st.builds(
        SetVariable,
        st.lists(undotted, min_size=1, max_size=3).map(".".join),
        set_values,
        optional(st.sampled_from(["GLOBAL", "SESSION"])),
    ),
    st.builds(StartPipeline, idents, st.booleans(), st.booleans(), optional(positive)).filter(
        lambda s: s.foreground or s.limit_batches is None
    ),
    st.builds(DropPipeline, idents, st.booleans()),
    st.builds(
        AlterPipeline,
        idents,
        st.booleans(),
        optional(st.sampled_from(["EARLIEST", "LATEST"])),
        st.none(),
        optional(non_negative),
    ).filter(lambda s: s.offsets is not None or s.batch_interval is not None),
    st.builds(
        Insert,
        idents,
        st.lists(idents, max_size=3).map(tuple),
        st.lists(st.lists(exprs, max_size=3).map(tuple), min_size=1, max_size=3).map(tuple),
    ),
    st.builds(
        Insert, idents, st.just(()), st.just(()), st.just(Query("SELECT a FROM b WHERE c = ';'"))
    ),
)


@SETTINGS
@given(statements)
def test_generated_statements_round_trip(stmt):
    canonical = stmt.to_sql()
    assert parse_one(canonical) == stmt, canonical


@SETTINGS
@given(st.lists(statements, min_size=1, max_size=3))
def test_scripts_of_generated_statements_round_trip(stmts):
    assert parse(";\n".join(s.to_sql() for s in stmts)) == stmts


@SETTINGS
@given(st.lists(idents, min_size=1, max_size=3), data_types)
def test_procedure_params_round_trip(names, dtype):
    params = unique_by_lower([ProcedureParam(n, dtype) for n in names], lambda p: p.name)
    stmt = parse_one(f"CREATE PROCEDURE p({', '.join(p.to_sql() for p in params)}) AS BEGIN END")
    assert stmt.params == params


@SETTINGS
@given(st.text())
def test_normalize_is_idempotent(text):
    once = normalize(text)
    assert normalize(once) == once


def test_a_delimiter_line_changes_what_ends_a_statement():
    """SingleStore's docs write procedures between ``DELIMITER //`` and ``DELIMITER ;``, as
    the mysql client takes them: ``;`` is then part of the statement."""
    text = (
        "CREATE TABLE t (a INT);\nDELIMITER //\n"
        "CREATE OR REPLACE PROCEDURE p(batch QUERY(a INT)) AS\nBEGIN\n"
        "  INSERT INTO t SELECT a FROM batch;\nEND //\nDELIMITER ;\nSELECT '//'; SELECT 2"
    )
    assert [text[s.start : s.end] for s in split(text)] == [
        "CREATE TABLE t (a INT)",
        "CREATE OR REPLACE PROCEDURE p(batch QUERY(a INT)) AS\nBEGIN\n"
        "  INSERT INTO t SELECT a FROM batch;\nEND",
        "SELECT '//'",
        "SELECT 2",
    ]
