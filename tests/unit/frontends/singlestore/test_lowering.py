"""The SQL front end: ``CREATE PIPELINE`` ↔ spec, and ``SHOW CREATE PIPELINE`` as the way back.

For every spec SQL can express, ``to_spec(parse_one(create_pipeline_sql(spec))) == spec``
but for the credentials' values, which SHOW CREATE PIPELINE redacts.
"""

import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkpipes.config import REDACTED, CsvOptions, PipelineSpec, Secret
from sparkpipes.config.spec import from_kwargs
from sparkpipes.errors import ConfigError
from sparkpipes.frontends.singlestore import CreatePipeline, parse_one
from sparkpipes.frontends.singlestore.lowering import (
    create_pipeline_sql,
    to_create_pipeline,
    to_spec,
)

#: what the engine hands in: its variables under the flat option names
DEFAULTS = {
    "batch_interval_ms": 1250,
    "max_offsets_per_batch_partition": 5000,
    "max_retries": 2,
    "fetch_timeout_ms": 150,
    "chunk_records": 40_000,
}

K = "CREATE PIPELINE p AS LOAD DATA KAFKA '127.0.0.1:9092/t'"
FS = "CREATE PIPELINE fp AS LOAD DATA FS '/data/*.csv'"

STATEMENTS = {
    "kafka_minimal": f"{K} INTO TABLE t",
    "kafka_every_clause": (
        "CREATE OR REPLACE PIPELINE IF NOT EXISTS p AS LOAD DATA KAFKA '127.0.0.1:9092/t' "
        'CONFIG \'{"client.id": "me", "nested": {"a": [1, null]}}\' '
        'CREDENTIALS \'{"sasl.username": "u", "sasl.password": "hunter2"}\' '
        "BATCH_INTERVAL 50 MAX_PARTITIONS_PER_BATCH 3 MAX_OFFSETS_PER_BATCH_PARTITION 700 "
        "MAX_RETRIES_PER_BATCH_PARTITION 0 SKIP PARSER ERRORS REPLACE INTO TABLE t FORMAT JSON"
    ),
    "ignore_json_mapping_set_where": (
        f"{K} IGNORE INTO TABLE t FORMAT JSON (a <- x::y, @v <- z, p <- %) "
        "SET b = upper(@v), c = a + 1 WHERE a > 1 AND b IS NOT NULL"
    ),
    "json_rooted_and_quoted": (
        f"{K} SKIP ALL ERRORS INTO TABLE `order` FORMAT JSON "
        "(a <- %::x, `weird col` <- `k y`::z, `select` <- `from`)"
    ),
    "csv_fields_columns": (
        f"{FS} INTO TABLE f FIELDS TERMINATED BY '|' ENCLOSED BY '''' ESCAPED BY '\\\\' "
        "IGNORE 1 LINES (id, @skip, name) SET label = concat(name, '!') WHERE id > 0"
    ),
    "csv_format_only": f"{FS} INTO TABLE f FORMAT CSV (a, b)",
    "csv_optionally": (
        f"{FS} INTO TABLE f FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' (a, b)"
    ),
    "csv_not_enclosed": f"{FS} INTO TABLE f FIELDS TERMINATED BY ',' ENCLOSED BY '' (a)",
    "csv_nulls": (
        f"{FS} INTO TABLE f FIELDS TERMINATED BY ',' TRAILING NULLCOLS "
        "NULL DEFINED BY '' OPTIONALLY ENCLOSED (a, b)"
    ),
    "csv_tab_newline": (
        f"{FS} INTO TABLE f FORMAT CSV FIELDS TERMINATED BY '\\t' LINES TERMINATED BY '\\n' "
        "IGNORE 2 LINES"
    ),
    "raw": f"{K} INTO TABLE t FORMAT RAW",
    "skip_duplicate_keys": f"{K} SKIP DUPLICATE KEY ERRORS INTO TABLE t FORMAT JSON",
    "skip_constraint": f"{K} SKIP CONSTRAINT ERRORS INTO TABLE t FORMAT JSON",
    "csv_lines_crlf": f"{FS} INTO TABLE f FIELDS TERMINATED BY ',' LINES TERMINATED BY '\\r\\n'",
    "csv_lines_tpch": f"{FS} INTO TABLE f FIELDS TERMINATED BY '|' LINES TERMINATED BY '|\\n'",
    "no_op_options": (
        "CREATE AGGREGATOR PIPELINE p AS LOAD DATA KAFKA 'h:9092/t' BATCH_INTERVAL 5 "
        "DISABLE OUT_OF_ORDER OPTIMIZATION ENABLE OFFSETS METADATA GC INTO TABLE t FORMAT JSON"
    ),
    "avro_mapping": f"{K} INTO TABLE t FORMAT AVRO (a <- b::c)",
    "json_defaults": (
        f"{K} INTO TABLE t FORMAT JSON (a <- x DEFAULT 1, b <- y DEFAULT 'n/a', "
        "c <- z DEFAULT NULL, d <- w DEFAULT TRUE, e <- v)"
    ),
    "on_duplicate_key_update": (
        f"{K} SKIP ALL ERRORS INTO TABLE t FORMAT JSON (a <- a, n <- n) "
        "ON DUPLICATE KEY UPDATE n = n + VALUES(n), b = VALUES(t.b)"
    ),
    "with_transform": (
        f"{K} WITH TRANSFORM ('memsql://json', '', '-r \"[.a, .b] | @tsv\"') INTO TABLE t "
        "FIELDS TERMINATED BY '\\t' (a, b)"
    ),
    "location_with_quote": "CREATE PIPELINE p AS LOAD DATA FS '/it''s/\\\\x' INTO TABLE t",
}


def redacted(spec: PipelineSpec) -> PipelineSpec:
    """What SHOW CREATE PIPELINE keeps of ``spec``: credential keys, not values; and,
    run as SQL, it reads as SingleStore does what a spec built elsewhere says without SQL
    having a clause for it: values convert as SingleStore converts them, and an
    appending pipeline inserts (a duplicate key fails its batch)."""
    creds = {k: Secret(REDACTED) for k in spec.credentials}
    write = "insert" if spec.sink.write == "append" else spec.sink.write
    return spec.replace(
        source=dataclasses.replace(spec.source, credentials=creds),
        format=dataclasses.replace(spec.format, text_values=True),
        sink=dataclasses.replace(spec.sink, write=write),
    )


def lower(sql: str, defaults=DEFAULTS) -> PipelineSpec:
    stmt = parse_one(sql)
    assert isinstance(stmt, CreatePipeline)
    return to_spec(stmt, defaults)


@pytest.mark.parametrize("sql", STATEMENTS.values(), ids=STATEMENTS.keys())
def test_show_create_lowers_back_to_the_spec(sql):
    spec = lower(sql)
    shown = create_pipeline_sql(spec)
    assert lower(shown) == redacted(spec)
    assert parse_one(shown) == to_create_pipeline(spec)
    assert create_pipeline_sql(lower(shown)) == shown


def test_the_lowering_matches_the_python_options():
    assert lower(STATEMENTS["kafka_every_clause"]) == from_kwargs(
        {
            "name": "p",
            "source": "kafka",
            "location": "127.0.0.1:9092/t",
            "table": "t",
            "config": {"client.id": "me", "nested": {"a": [1, None]}},
            "credentials": {"sasl.username": "u", "sasl.password": "hunter2"},
            "batch_interval_ms": 50,
            "max_partitions_per_batch": 3,
            "max_offsets_per_batch_partition": 700,
            "max_retries": 0,
            "skip_parser_errors": True,
            "on_duplicate_key": "replace",
            "format": "json",
            "text_values": True,  # SingleStore's conversion of JSON values
        },
        DEFAULTS,
    )
    s = lower(STATEMENTS["ignore_json_mapping_set_where"])
    assert [(m.column, m.path) for m in s.mapping] == [
        ("a", ("x", "y")),
        ("@v", ("z",)),
        ("p", ()),
    ]
    assert s.transform.assignments == (("b", "upper(@v)"), ("c", "a + 1"))
    assert (s.transform.where, s.sink.write) == ("a > 1 AND b IS NOT NULL", "ignore")
    c = lower(STATEMENTS["csv_fields_columns"])
    assert (c.source.kind, c.format.kind, c.format.skip_lines) == ("fs", "csv", 1)
    assert c.format.csv == CsvOptions(delimiter="|", quote="'", escape="\\", carriage_return=True)
    assert lower(STATEMENTS["csv_optionally"]).format.csv == CsvOptions(
        delimiter=",", quote='"', escape="\\", optionally=True, carriage_return=True
    )
    assert [(m.column, m.path) for m in c.mapping] == [
        ("id", ("id",)),
        ("@skip", ("skip",)),
        ("name", ("name",)),
    ]
    assert lower(STATEMENTS["json_rooted_and_quoted"]).format.skip_parser_errors is True


def test_skip_duplicate_key_errors_is_a_write_mode():
    spec = lower(STATEMENTS["skip_duplicate_keys"])
    assert (spec.sink.write, spec.format.skip_parser_errors) == ("skip_duplicates", False)
    assert "SKIP DUPLICATE KEY ERRORS INTO TABLE t" in create_pipeline_sql(spec)
    every = lower(STATEMENTS["json_rooted_and_quoted"])  # SKIP ALL ERRORS: both
    assert (every.sink.write, every.format.skip_parser_errors) == ("skip_duplicates", True)
    assert "SKIP ALL ERRORS" in create_pipeline_sql(every)


def test_options_without_effect_here_are_kept_and_shown_back():
    spec = lower(STATEMENTS["no_op_options"])
    assert spec.source.hints == (
        "AGGREGATOR",
        "DISABLE OUT_OF_ORDER OPTIMIZATION",
        "ENABLE OFFSETS METADATA GC",
    )
    shown = create_pipeline_sql(spec)
    assert shown.startswith("CREATE AGGREGATOR PIPELINE p AS")
    assert "DISABLE OUT_OF_ORDER OPTIMIZATION ENABLE OFFSETS METADATA GC" in shown
    assert PipelineSpec.from_json(spec.to_json()) == spec


def test_csv_takes_singlestores_defaults():
    """LOAD DATA's defaults (fields terminated by a tab, not enclosed, escaped by a
    backslash), whether FORMAT CSV is written or no FORMAT at all; an empty ENCLOSED BY or
    ESCAPED BY is none; a carriage return before the newline is the record's, unless
    LINES TERMINATED BY ends with it."""
    tab = CsvOptions(delimiter="\t", quote=None, escape="\\", carriage_return=True)
    assert lower(STATEMENTS["csv_format_only"]).format.csv == tab
    minimal = lower(STATEMENTS["kafka_minimal"]).format
    assert (minimal.kind, minimal.csv) == ("csv", tab)
    comma = lower(f"{FS} INTO TABLE f FIELDS TERMINATED BY ','").format.csv
    assert comma == CsvOptions(delimiter=",", quote=None, escape="\\", carriage_return=True)
    bare = lower(f"{FS} INTO TABLE f FIELDS ENCLOSED BY '' ESCAPED BY ''").format.csv
    assert bare == CsvOptions(delimiter="\t", quote=None, escape=None, carriage_return=True)
    crlf = lower(STATEMENTS["csv_lines_crlf"]).format.csv
    assert (crlf.line_end, crlf.carriage_return) == ("\r\n", False)
    lines = lower(f"{FS} INTO TABLE f LINES STARTING BY '>' TERMINATED BY ';'").format.csv
    assert (lines.line_start, lines.line_end, lines.terminator) == (">", ";", ";")


def test_absent_clauses_take_the_engines_defaults_and_given_ones_win():
    s = lower(STATEMENTS["kafka_minimal"])
    assert s.batch.interval_ms == 1250
    assert s.batch.max_offsets_per_partition == 5000
    assert s.batch.max_retries == 2
    assert s.batch.fetch_timeout_ms == 150
    assert s.batch.chunk_records == 40_000
    assert s.batch.max_partitions is None
    assert lower(STATEMENTS["kafka_minimal"], {}).batch == type(s.batch)()
    given = lower(STATEMENTS["kafka_every_clause"]).batch
    assert (given.interval_ms, given.max_offsets_per_partition, given.max_retries) == (50, 700, 0)
    assert (given.max_partitions, given.fetch_timeout_ms) == (3, 150)


def test_show_create_writes_resolved_options_and_redacts_credentials():
    shown = create_pipeline_sql(lower(STATEMENTS["kafka_every_clause"]))
    assert "hunter2" not in shown
    assert 'CREDENTIALS \'{"sasl.password": "<redacted>", "sasl.username": "<redacted>"}\'' in shown
    assert 'CONFIG \'{"client.id": "me", "nested": {"a": [1, null]}}\'' in shown
    assert "REPLACE INTO TABLE t" in shown and "SKIP PARSER ERRORS" in shown
    minimal = create_pipeline_sql(lower(STATEMENTS["kafka_minimal"]))
    assert minimal == (
        "CREATE PIPELINE p AS LOAD DATA KAFKA '127.0.0.1:9092/t' BATCH_INTERVAL 1250 "
        "MAX_OFFSETS_PER_BATCH_PARTITION 5000 MAX_RETRIES_PER_BATCH_PARTITION 2 "
        "INTO TABLE t FORMAT CSV FIELDS TERMINATED BY '\\t' ENCLOSED BY '' ESCAPED BY '\\\\'"
    )


def test_a_python_built_spec_shows_as_sql_that_lowers_back():
    spec = PipelineSpec.build(
        name="p",
        source="kafka",
        location="h:1/t",
        table="t",
        credentials={"sasl.password": "pw"},
        mapping=[("a", "x::y"), ("@v", "z"), ("whole", "%")],
        assignments=[("b", "upper(@v)")],
        where="a > 1",
        on_duplicate_key="replace",
        **DEFAULTS,
    )
    assert lower(create_pipeline_sql(spec)) == redacted(spec)


@pytest.mark.parametrize(
    "sql, text",
    [
        (
            f"{K} REPLACE INTO TABLE t FORMAT JSON ON DUPLICATE KEY UPDATE a = VALUES(a)",
            "ON DUPLICATE KEY UPDATE cannot go with REPLACE",
        ),
        (
            f"{K} INTO PROCEDURE p FORMAT JSON ON DUPLICATE KEY UPDATE a = 1",
            "ON DUPLICATE KEY UPDATE cannot go with INTO PROCEDURE",
        ),
        (
            "CREATE PIPELINE `bad-name` AS LOAD DATA KAFKA 'h:1/t' INTO TABLE t",
            "pipeline name must be letters, digits and underscores, got 'bad-name'",
        ),
        (f"{K} INTO TABLE `a b`", "table name must be letters, digits and underscores"),
        (f"{FS} INTO TABLE f FIELDS ENCLOSED BY '\"\"'", "ENCLOSED BY takes one character"),
    ],
)
def test_what_sparkpipes_does_not_do_is_a_config_error_naming_it(sql, text):
    with pytest.raises(ConfigError) as e:
        lower(sql)
    assert text in str(e.value)


def test_an_unknown_default_is_refused_not_ignored():
    with pytest.raises(ConfigError) as e:
        lower(STATEMENTS["kafka_minimal"], {"pipelines_batch_interval": 5})
    assert "unknown pipeline default 'pipelines_batch_interval'" in str(e.value)


def test_an_invalid_default_is_refused_naming_the_option():
    with pytest.raises(ConfigError, match="fetch_timeout_ms must be an integer >= 1, got 0"):
        lower(STATEMENTS["kafka_minimal"], {**DEFAULTS, "fetch_timeout_ms": 0})


# ---------------------------------------------------------------------------- generated specs

idents = st.one_of(
    st.text(min_size=1, max_size=8),
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_$]{0,8}", fullmatch=True),
    st.sampled_from(["select", "key", "table", "order", "%", "@x"]),
)
names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)
EXPRS = ["1", "a + b * 2", "NOW()", "CASE WHEN x > 1 THEN 'a;b' ELSE NULL END", "@v", "`w c` - -1"]
json_values = st.one_of(st.integers(), st.text(max_size=5), st.booleans(), st.none())


def unique_by_lower(pairs):
    seen, out = set(), []
    for column, value in pairs:
        if column.lower() not in seen:
            seen.add(column.lower())
            out.append((column, value))
    return out


@st.composite
def expressible_specs(draw):
    """Specs every part of which SQL has a clause for (fetch timeout and chunk size are
    the engine's defaults)."""
    kind = draw(st.sampled_from(["json", "avro", "parquet", "csv", "raw"]))
    mapping: list = []
    options: dict = {}
    columns = st.tuples(idents.filter(lambda n: not n.startswith("@")), st.booleans())
    if kind == "csv":
        for name, variable in draw(st.lists(columns, max_size=4)):
            mapping.append(("@" + name if variable else name, (name,)))
        delimiter = draw(st.text(min_size=1, max_size=2))
        char = st.text(min_size=1, max_size=1).filter(lambda c: c not in delimiter)
        quote = draw(st.none() | char)
        options["csv"] = {
            "delimiter": delimiter,
            "quote": quote,
            "escape": draw(st.none() | char.filter(lambda c: c != quote)),
            "optionally": draw(st.booleans()),
            "carriage_return": True,  # LINES TERMINATED BY '\n' keeps it
        }
        options["skip_lines"] = draw(st.integers(0, 10**6))
    elif kind != "raw":
        for name, variable in draw(st.lists(columns, max_size=4)):
            # a Parquet record as a whole (%) is refused: SingleStore does not say what it loads
            path = tuple(draw(st.lists(idents, min_size=int(kind == "parquet"), max_size=3)))
            mapping.append(("@" + name if variable else name, path))
    assignments = unique_by_lower(draw(st.lists(st.tuples(idents, st.sampled_from(EXPRS)))))
    return from_kwargs(
        {
            "name": draw(names),
            "source": draw(st.sampled_from(["kafka", "fs", "s3", "kafkaconnect"])),
            "location": draw(st.text(max_size=20)),
            "table": draw(names),
            "config": draw(st.dictionaries(st.text(max_size=5), json_values, max_size=3)),
            "credentials": draw(st.dictionaries(st.text(max_size=5), st.text(), max_size=3)),
            "format": kind,
            "mapping": mapping,
            "assignments": assignments,
            "where": draw(st.none() | st.sampled_from(EXPRS)),
            "skip_parser_errors": draw(st.booleans()),
            "batch_interval_ms": draw(st.integers(0, 10**9)),
            "max_partitions_per_batch": draw(st.none() | st.integers(1, 10**6)),
            "max_offsets_per_batch_partition": draw(st.integers(1, 10**12)),
            "max_retries": draw(st.integers(0, 100)),
            "text_values": True,
            "on_duplicate_key": draw(st.sampled_from(["insert", "replace", "ignore"])),
            **options,
        },
        DEFAULTS,
    )


@settings(max_examples=200, deadline=None)
@given(expressible_specs())
def test_generated_specs_round_trip_through_show_create(spec):
    shown = create_pipeline_sql(spec)
    assert lower(shown) == redacted(spec)
    assert json.loads(json.dumps(spec.to_json())) == redacted(spec).to_json()


def test_into_procedure_lowers_to_a_procedure_sink_and_back():
    spec = lower(f"{K} INTO PROCEDURE proc FORMAT JSON")
    assert (spec.sink.kind, spec.sink.table) == ("procedure", "proc")
    assert "INTO PROCEDURE proc" in create_pipeline_sql(spec)
    assert lower(create_pipeline_sql(spec)) == redacted(spec)
