"""Every statement form of the dialect parses to the expected AST."""

import pytest

from sparkpipes.frontends.singlestore import (
    AlterPipeline,
    AlterPipelineDropFile,
    AlterTableAddColumn,
    AlterTableDropColumn,
    AlterTableModifyColumn,
    Assignment,
    ColumnDef,
    CreateDatabase,
    CreateIndex,
    CreatePipeline,
    CreateProcedure,
    CreateTable,
    DataType,
    DescribeTable,
    DetachPipeline,
    DropPipeline,
    DropTable,
    Expr,
    FieldMapping,
    FieldsFormat,
    Insert,
    LinesFormat,
    Literal,
    LoadColumn,
    ParseError,
    ProcedureParam,
    Query,
    SetVariable,
    ShowCreatePipeline,
    ShowPipelines,
    ShowTables,
    ShowVariables,
    StartAllPipelines,
    StartPipeline,
    StopAllPipelines,
    StopPipeline,
    StructField,
    TableKey,
    Target,
    TestPipeline,
    UseDatabase,
    parse,
    parse_one,
)
from tests.unit.frontends.singlestore.sql_cases import SEED, SEED_PROCEDURE

VARCHAR255 = DataType("VARCHAR", (255,))


# ---------------------------------------------------------------------------- seed examples


def test_seed_inferred_kafkaconnect_pipeline():
    stmt = parse_one(SEED[0])
    assert stmt == CreatePipeline(
        name="kinesis_pipeline",
        source="KAFKACONNECT",
        location="kafka-connector",
        inferred=True,
        config='{"connector.class": "x", "tasks.max": 4}',
        credentials="{}",
        format="AVRO",
    )
    assert stmt.target is None
    assert stmt.config_json == {"connector.class": "x", "tasks.max": 4}
    assert stmt.credentials_json == {}


def test_seed_pipeline_into_procedure():
    stmt = parse_one(SEED[1])
    assert stmt == CreatePipeline(
        name="kinesis_pipeline_to_proc",
        source="KAFKACONNECT",
        location="kafka-connector",
        target=Target("PROCEDURE", "parse_kinesis_stream"),
        config='{"a":1}',
        credentials="{}",
        batch_interval=2500,
        format="AVRO",
        mappings=(
            FieldMapping("topic", ("topic",)),
            FieldMapping("id", ("id",)),
            FieldMapping("record", ("record",)),
        ),
    )


def test_seed_table_with_computed_column():
    stmt = parse_one(SEED[2])
    assert stmt == CreateTable(
        name="parsed_kinesis_stream",
        columns=(
            ColumnDef("partitionKey", DataType("BIGINT")),
            ColumnDef("sequence_number", VARCHAR255),
            ColumnDef("shardId", VARCHAR255),
            ColumnDef("data_base64", VARCHAR255),
            ColumnDef("parsed_data", VARCHAR255, computed=Expr("FROM_BASE64(data_base64)")),
        ),
    )


def test_seed_set_global_and_show_variables():
    assert parse_one(SEED[3]) == SetVariable(
        "experimental_features_config",
        Literal("string", "kafka_connect_enabled=true"),
        scope="GLOBAL",
    )
    assert parse_one(SEED[4]) == ShowVariables(like="experimental_features_config")


def test_seed_kafka_json_pipeline():
    assert parse_one(SEED[5]) == CreatePipeline(
        name="p",
        source="KAFKA",
        location="127.0.0.1:9092/events",
        target=Target("TABLE", "events"),
        batch_interval=1000,
        skip_errors="PARSER",
        format="JSON",
        mappings=(
            FieldMapping("ts", ("ts",)),
            FieldMapping("id", ("payload", "id")),
            FieldMapping("c", ("count",)),
        ),
        assignments=(Assignment("ingested", Expr("NOW()")),),
        where=Expr("c > 0"),
    )


def test_seed_csv_file_pipeline():
    assert parse_one(SEED[6]) == CreatePipeline(
        name="f",
        source="FS",
        location="/data/*.csv",
        target=Target("TABLE", "t"),
        fields=FieldsFormat(terminated_by=",", enclosed_by='"'),
        ignore_lines=1,
        columns=(LoadColumn("a"), LoadColumn("b"), LoadColumn("c")),
    )


def test_seed_stored_procedure_keeps_body_text():
    stmt = parse_one(SEED_PROCEDURE)
    assert isinstance(stmt, CreateProcedure)
    assert stmt.name == "parse_kinesis_stream"
    assert stmt.or_replace
    assert stmt.params == (
        ProcedureParam(
            "batch",
            DataType(
                "QUERY",
                fields=(
                    StructField("topic", DataType("TEXT")),
                    StructField("id", DataType("TEXT")),
                    StructField("record", DataType("JSON")),
                ),
            ),
        ),
    )
    assert stmt.body == (
        "BEGIN INSERT INTO parsed_kinesis_stream (partitionKey, sequence_number, shardId, "
        "data_base64) SELECT record::$partitionKey, record::$sequenceNumber, record::$shardId, "
        "record::$data FROM batch; END"
    )


def test_seed_alter_table_add_computed_column():
    assert parse_one(SEED[8]) == AlterTableAddColumn(
        "t",
        ColumnDef(
            "status",
            DataType("STRING"),
            computed=Expr("JSON_EXTRACT_STRING(record, 'status')"),
        ),
    )


def test_seed_script_parses_as_one_script():
    stmts = parse(";\n".join(SEED))
    assert [type(s).__name__ for s in stmts] == [
        "CreatePipeline",
        "CreatePipeline",
        "CreateTable",
        "SetVariable",
        "ShowVariables",
        "CreatePipeline",
        "CreatePipeline",
        "CreateProcedure",
        "AlterTableAddColumn",
    ]


# ---------------------------------------------------------------------------- CREATE PIPELINE


def test_pipeline_every_option_in_any_order():
    stmt = parse_one(
        "create or replace pipeline if not exists p as load data s3 'b/k' "
        "skip all errors max_retries_per_batch_partition 2 credentials '{\"k\": 1}' "
        "max_offsets_per_batch_partition 100 max_partitions_per_batch 4 "
        'config \'{"region": "eu"}\' batch_interval 0 replace into table t'
    )
    assert stmt == CreatePipeline(
        name="p",
        source="S3",
        location="b/k",
        target=Target("TABLE", "t"),
        or_replace=True,
        if_not_exists=True,
        config='{"region": "eu"}',
        credentials='{"k": 1}',
        batch_interval=0,
        max_partitions_per_batch=4,
        max_offsets_per_batch_partition=100,
        max_retries_per_batch_partition=2,
        skip_errors="ALL",
        on_conflict="REPLACE",
    )
    assert stmt.config_json == {"region": "eu"}


@pytest.mark.parametrize(
    "source", ["KAFKA", "FS", "S3", "AZURE", "GCS", "HDFS", "KAFKACONNECT", "KINESIS", "other"]
)
def test_pipeline_accepts_any_source_upper_cased(source):
    stmt = parse_one(f"CREATE PIPELINE p AS LOAD DATA {source} 'x' INTO TABLE t")
    assert stmt.source == source.upper()


@pytest.mark.parametrize(
    ("clause", "expected"),
    [
        ("SKIP PARSER ERRORS", "PARSER"),
        ("SKIP ALL ERRORS", "ALL"),
        ("SKIP CONSTRAINT ERRORS", "CONSTRAINT"),
        ("SKIP DUPLICATE KEY ERRORS", "DUPLICATE KEY"),
    ],
)
def test_pipeline_skip_errors(clause, expected):
    stmt = parse_one(f"CREATE PIPELINE p AS LOAD DATA KAFKA 'x' {clause} IGNORE INTO TABLE t")
    assert stmt.skip_errors == expected
    assert stmt.on_conflict == "IGNORE"


@pytest.mark.parametrize("fmt", ["JSON", "CSV", "RAW", "AVRO", "PARQUET", "json"])
def test_pipeline_formats(fmt):
    stmt = parse_one(f"CREATE PIPELINE p AS LOAD DATA KAFKA 'x' INTO TABLE t FORMAT {fmt}")
    assert stmt.format == fmt.upper()


def test_pipeline_format_before_into():
    stmt = parse_one("CREATE PIPELINE p AS LOAD DATA KAFKA 'x' FORMAT JSON INTO TABLE t (a <- a)")
    assert stmt.format == "JSON"
    assert stmt.mappings == (FieldMapping("a", ("a",)),)


def test_pipeline_json_paths_variables_and_defaults():
    stmt = parse_one(
        "CREATE PIPELINE p AS LOAD DATA KAFKA 'x' INTO TABLE t FORMAT JSON "
        "(whole <- %, @v <- %::a::b DEFAULT 5, n <- a::`b c`::d DEFAULT 'none', "
        "`my col` <- `key`)"
    )
    assert stmt.mappings == (
        FieldMapping("whole", (), rooted=True),
        FieldMapping("v", ("a", "b"), variable=True, rooted=True, default=Literal("number", 5)),
        FieldMapping("n", ("a", "b c", "d"), default=Literal("string", "none")),
        FieldMapping("my col", ("key",)),
    )
    assert stmt.mappings[0].whole_record
    assert not stmt.mappings[1].whole_record


def test_pipeline_csv_options():
    stmt = parse_one(
        "CREATE PIPELINE p AS LOAD DATA FS '/x' INTO TABLE t FORMAT CSV "
        "COLUMNS TERMINATED BY '\\t' OPTIONALLY ENCLOSED BY '\"' ESCAPED BY '\\\\' "
        "LINES TERMINATED BY '\\n' STARTING BY '>' IGNORE 2 LINES (a, @b) "
        "SET c = @b + 1, d = UPPER(a)"
    )
    assert stmt == CreatePipeline(
        name="p",
        source="FS",
        location="/x",
        target=Target("TABLE", "t"),
        format="CSV",
        fields=FieldsFormat(
            terminated_by="\t", enclosed_by='"', optionally_enclosed=True, escaped_by="\\"
        ),
        lines=LinesFormat(terminated_by="\n", starting_by=">"),
        ignore_lines=2,
        columns=(LoadColumn("a"), LoadColumn("b", variable=True)),
        assignments=(Assignment("c", Expr("@b + 1")), Assignment("d", Expr("UPPER(a)"))),
    )


def test_pipeline_set_and_where_keep_expression_text():
    stmt = parse_one(
        "CREATE PIPELINE p AS LOAD DATA KAFKA 'x' INTO TABLE t FORMAT JSON (r <- %)\n"
        "SET a = CASE WHEN record::$kind = 'x' THEN record::%n * 2 ELSE NULL END,\n"
        "    b = CAST(record::ts AS   TIMESTAMP(6)),  -- a comment\n"
        '    c = COALESCE(f("a;b", (1 + 2)), 0)\n'
        "WHERE record::$kind IN ('x', 'y') AND NOT (n BETWEEN 1 AND 10) OR s LIKE 'a%'"
    )
    assert stmt.assignments == (
        Assignment("a", Expr("CASE WHEN record::$kind = 'x' THEN record::%n * 2 ELSE NULL END")),
        Assignment("b", Expr("CAST(record::ts AS TIMESTAMP(6))")),
        Assignment("c", Expr('COALESCE(f("a;b", (1 + 2)), 0)')),
    )
    assert stmt.where == Expr(
        "record::$kind IN ('x', 'y') AND NOT (n BETWEEN 1 AND 10) OR s LIKE 'a%'"
    )


def test_inferred_pipeline_may_have_into():
    stmt = parse_one("CREATE INFERRED PIPELINE p AS LOAD DATA KAFKA 'x' INTO TABLE t FORMAT JSON")
    assert stmt.inferred
    assert stmt.target == Target("TABLE", "t")


# ---------------------------------------------------------------------------- other pipeline


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("START PIPELINE p", StartPipeline("p")),
        ("START PIPELINE p FOREGROUND", StartPipeline("p", foreground=True)),
        (
            "start pipeline if not running p foreground limit 3 batches",
            StartPipeline("p", if_not_running=True, foreground=True, limit_batches=3),
        ),
        ("START ALL PIPELINES", StartAllPipelines()),
        ("STOP PIPELINE p", StopPipeline("p")),
        ("STOP PIPELINE IF RUNNING p", StopPipeline("p", if_running=True)),
        ("STOP PIPELINE p DETACH", StopPipeline("p", detach=True)),
        ("DETACH PIPELINE IF EXISTS p", DetachPipeline("p", if_exists=True)),
        ("SHOW CREATE PIPELINE p EXTENDED", ShowCreatePipeline("p", extended=True)),
        ("CREATE DATABASE IF NOT EXISTS d", CreateDatabase("d", if_not_exists=True)),
        ("USE `d`", UseDatabase("d")),
        ("STOP ALL PIPELINES", StopAllPipelines()),
        ("DROP PIPELINE p", DropPipeline("p")),
        ("DROP PIPELINE IF EXISTS `my pipe`", DropPipeline("my pipe", if_exists=True)),
        ("TEST PIPELINE p", TestPipeline("p")),
        ("TEST PIPELINE p LIMIT 5", TestPipeline("p", limit=5)),
        ("SHOW PIPELINES", ShowPipelines()),
        ("SHOW CREATE PIPELINE p", ShowCreatePipeline("p")),
        ("ALTER PIPELINE p SET OFFSETS EARLIEST", AlterPipeline("p", offsets="EARLIEST")),
        ("ALTER PIPELINE p SET OFFSETS latest", AlterPipeline("p", offsets="LATEST")),
        (
            "ALTER PIPELINE p SET OFFSETS '{\"0\": 10}'",
            AlterPipeline("p", offsets_json='{"0": 10}'),
        ),
        ("ALTER PIPELINE p SET BATCH_INTERVAL 100", AlterPipeline("p", batch_interval=100)),
        ("alter pipeline p drop file '/d/a.json'", AlterPipelineDropFile("p", "/d/a.json")),
        (
            "ALTER PIPELINE IF EXISTS p SET MAX_PARTITIONS_PER_BATCH 2, "
            "SET MAX_OFFSETS_PER_BATCH_PARTITION 3, MAX_RETRIES_PER_BATCH_PARTITION 4",
            AlterPipeline(
                "p",
                if_exists=True,
                max_partitions_per_batch=2,
                max_offsets_per_batch_partition=3,
                max_retries_per_batch_partition=4,
            ),
        ),
    ],
)
def test_pipeline_control_statements(sql, expected):
    assert parse_one(sql) == expected


# ---------------------------------------------------------------------------- variables


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SET GLOBAL x = 1", SetVariable("x", Literal("number", 1), "GLOBAL")),
        ("SET x = 'a'", SetVariable("x", Literal("string", "a"))),
        ("SET SESSION x = -2.5", SetVariable("x", Literal("number", -2.5), "SESSION")),
        ("SET @@GLOBAL.x = ON", SetVariable("x", Literal("word", "ON"), "GLOBAL")),
        ("SET @@x = off", SetVariable("x", Literal("word", "off"))),
        ("SET GLOBAL x = true", SetVariable("x", Literal("boolean", True), "GLOBAL")),
        ("SET x := NULL", SetVariable("x", Literal("null", None))),
        ("SET spark.sql.x = 4", SetVariable("spark.sql.x", Literal("number", 4))),
        ("SHOW VARIABLES", ShowVariables()),
        ("SHOW GLOBAL VARIABLES LIKE 'a%'", ShowVariables("GLOBAL", "a%")),
        ("SHOW SESSION VARIABLES", ShowVariables("SESSION")),
    ],
)
def test_variables(sql, expected):
    assert parse_one(sql) == expected


# ---------------------------------------------------------------------------- tables


def test_create_table_with_every_column_attribute_and_key():
    stmt = parse_one(
        "CREATE ROWSTORE REFERENCE TABLE IF NOT EXISTS t ("
        " id BIGINT NOT NULL PRIMARY KEY AUTO_INCREMENT,"
        " name VARCHAR(20) CHARACTER SET utf8 COLLATE utf8_bin DEFAULT 'x' COMMENT 'c',"
        " m MAP<STRING, ARRAY<INT>>, s STRUCT<a: INT, b STRING>,"
        " ts DATETIME(6) DEFAULT CURRENT_TIMESTAMP(6), u INT UNSIGNED NULL,"
        " d DECIMAL(10, 2) DEFAULT -1.5, flag BOOL DEFAULT TRUE, z TEXT DEFAULT NULL,"
        " SHARD KEY (id), SORT KEY s1 (name), KEY (name) USING HASH,"
        " UNIQUE KEY uk (id, name) USING CLUSTERED COLUMNSTORE, INDEX (u))"
    )
    assert stmt == CreateTable(
        name="t",
        storage="ROWSTORE",
        reference=True,
        if_not_exists=True,
        columns=(
            ColumnDef(
                "id", DataType("BIGINT"), nullable=False, primary_key=True, auto_increment=True
            ),
            ColumnDef(
                "name",
                DataType("VARCHAR", (20,)),
                charset="utf8",
                collate="utf8_bin",
                default=Literal("string", "x"),
                comment="c",
            ),
            ColumnDef(
                "m",
                DataType(
                    "MAP", args=(DataType("STRING"), DataType("ARRAY", args=(DataType("INT"),)))
                ),
            ),
            ColumnDef(
                "s",
                DataType(
                    "STRUCT",
                    fields=(
                        StructField("a", DataType("INT")),
                        StructField("b", DataType("STRING")),
                    ),
                ),
            ),
            ColumnDef(
                "ts", DataType("DATETIME", (6,)), default=Literal("call", "CURRENT_TIMESTAMP(6)")
            ),
            ColumnDef("u", DataType("INT", unsigned=True), nullable=True),
            ColumnDef("d", DataType("DECIMAL", (10, 2)), default=Literal("number", -1.5)),
            ColumnDef("flag", DataType("BOOL"), default=Literal("boolean", True)),
            ColumnDef("z", DataType("TEXT"), default=Literal("null", None)),
        ),
        keys=(
            TableKey("SHARD", ("id",)),
            TableKey("SORT", ("name",), name="s1"),
            TableKey("KEY", ("name",), using="HASH"),
            TableKey("UNIQUE", ("id", "name"), name="uk", using="CLUSTERED COLUMNSTORE"),
            TableKey("KEY", ("u",)),
        ),
    )
    assert stmt.columns[2].type.text == "MAP<STRING, ARRAY<INT>>"
    assert stmt.columns[6].type.text == "DECIMAL(10,2)"


@pytest.mark.parametrize(
    "type_sql",
    [
        "INT",
        "INTEGER",
        "BIGINT",
        "SMALLINT",
        "TINYINT",
        "BOOLEAN",
        "BOOL",
        "FLOAT",
        "DOUBLE",
        "DECIMAL(10,2)",
        "VARCHAR(10)",
        "CHAR(3)",
        "TEXT",
        "LONGTEXT",
        "STRING",
        "BINARY",
        "BLOB",
        "JSON",
        "DATE",
        "DATETIME",
        "DATETIME(6)",
        "TIMESTAMP(6)",
        "ARRAY<STRING>",
        "MAP<STRING, BIGINT>",
        "STRUCT<a: INT, b: ARRAY<STRUCT<c: DOUBLE>>>",
    ],
)
def test_column_types(type_sql):
    stmt = parse_one(f"CREATE TABLE t (c {type_sql.lower()})")
    assert stmt.columns[0].type.text == type_sql


def test_computed_column_with_and_without_parentheses_is_the_same():
    a = parse_one("CREATE TABLE t (r JSON, s AS (r::$status) PERSISTED TEXT)")
    b = parse_one("CREATE TABLE t (r JSON, s AS r::$status PERSISTED TEXT)")
    assert a == b
    assert a.columns[1] == ColumnDef("s", DataType("TEXT"), computed=Expr("r::$status"))


def test_computed_column_keeps_a_leading_unary_operator():
    stmt = parse_one("CREATE TABLE t (a INT, b AS (-a) PERSISTED INT, c AS + a PERSISTED INT)")
    assert [c.computed for c in stmt.columns] == [None, Expr("-a"), Expr("+ a")]


def test_primary_key_table_element():
    stmt = parse_one("CREATE COLUMNSTORE TABLE t (a INT, b INT, PRIMARY KEY (a, b), SHARD KEY ())")
    assert stmt.storage == "COLUMNSTORE"
    assert stmt.keys == (TableKey("PRIMARY", ("a", "b")), TableKey("SHARD", ()))


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("DROP TABLE t", DropTable("t")),
        ("DROP TABLE IF EXISTS t", DropTable("t", if_exists=True)),
        ("SHOW TABLES", ShowTables()),
        ("SHOW TABLES LIKE 'e%'", ShowTables("e%")),
        ("DESCRIBE t", DescribeTable("t")),
        ("DESC `my table`", DescribeTable("my table")),
        ("CREATE INDEX i ON t (a, b)", CreateIndex("i", "t", ("a", "b"))),
        (
            "ALTER TABLE t ADD c VARCHAR(3) NOT NULL",
            AlterTableAddColumn("t", ColumnDef("c", DataType("VARCHAR", (3,)), nullable=False)),
        ),
        ("ALTER TABLE t DROP COLUMN c", AlterTableDropColumn("t", "c")),
        ("alter table t drop `c d`", AlterTableDropColumn("t", "c d")),
        (
            "ALTER TABLE t MODIFY c BIGINT NOT NULL",
            AlterTableModifyColumn("t", ColumnDef("c", DataType("BIGINT"), nullable=False)),
        ),
        (
            "alter table `my t` modify column `c d` decimal(10, 2) null",
            AlterTableModifyColumn(
                "my t", ColumnDef("c d", DataType("DECIMAL", (10, 2)), nullable=True)
            ),
        ),
        # a column named like a keyword of the statement
        ("ALTER TABLE t DROP `column`", AlterTableDropColumn("t", "column")),
    ],
)
def test_table_statements(sql, expected):
    assert parse_one(sql) == expected
    assert parse_one(expected.to_sql()) == expected


@pytest.mark.parametrize(
    ("sql", "message", "column"),
    [
        (
            "ALTER TABLE t MODIFY COLUMN c AS (a * 2) PERSISTED BIGINT",
            "MODIFY COLUMN cannot change a computed column's expression (not supported); "
            "drop the column and add it again",
            29,
        ),
        ("ALTER TABLE t DROP COLUMN", "unexpected end of statement", 26),
        ("ALTER TABLE t DROP COLUMN a, b", "unexpected ','", 28),
        ("ALTER TABLE t MODIFY COLUMN c", "unexpected end of statement", 30),
    ],
)
def test_alter_table_errors_are_located(sql, message, column):
    with pytest.raises(ParseError) as err:
        parse_one(sql)
    assert err.value.message.startswith(message)
    assert (err.value.line, err.value.column) == (1, column)


# ---------------------------------------------------------------------------- DML, queries


def test_insert_values():
    stmt = parse_one("INSERT INTO t (a, b) VALUES (1, 'x'), (f(2,  3), NULL)")
    assert stmt == Insert(
        "t",
        ("a", "b"),
        rows=((Expr("1"), Expr("'x'")), (Expr("f(2, 3)"), Expr("NULL"))),
    )


def test_insert_select_keeps_query_text():
    stmt = parse_one("INSERT INTO t (a)\n  SELECT a -- first\n  FROM u WHERE b = ';'")
    assert stmt == Insert("t", ("a",), query=Query("SELECT a FROM u WHERE b = ';'"))


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM t WHERE a = 1",
        "select a, b from t join u using (k) group by a order by b limit 3",
        "WITH x AS (SELECT 1) SELECT * FROM x",
        "EXPLAIN SELECT 1",
        "(SELECT 1) UNION ALL (SELECT 2)",
        "SHOW DATABASES",
        "SHOW CREATE VIEW v",
        "SHOW TABLES FROM db",
        "SHOW GLOBAL STATUS",
        "SHOW VARIABLES WHERE x = 1",
    ],
)
def test_passthrough_queries(sql):
    assert parse_one(sql) == Query(sql)


def test_query_text_is_whitespace_normalized():
    stmt = parse_one("SELECT  a,\n\tb /* note */ FROM t -- done\n WHERE s = 'x  y'")
    assert stmt == Query("SELECT a, b FROM t WHERE s = 'x  y'")
    assert parse_one("SELECT /*+ BROADCAST(t) */ a FROM t") == Query(
        "SELECT /*+ BROADCAST(t) */ a FROM t"
    )


def test_procedure_with_declare_and_nested_blocks():
    stmt = parse_one(
        "CREATE PROCEDURE p(n INT, s VARCHAR(10)) RETURNS INT AS\n"
        "DECLARE x INT = 0;\n"
        "BEGIN\n"
        "  IF n > 0 THEN x = 1; END IF;\n"
        "  CASE x WHEN 1 THEN y(); END CASE;\n"
        "  WHILE x < 3 DO x = CASE WHEN n THEN x + 1 ELSE 3 END; END WHILE;\n"
        "  RETURN x;\n"
        "END"
    )
    assert stmt == CreateProcedure(
        name="p",
        params=(
            ProcedureParam("n", DataType("INT")),
            ProcedureParam("s", DataType("VARCHAR", (10,))),
        ),
        returns=DataType("INT"),
        body="DECLARE x INT = 0; BEGIN IF n > 0 THEN x = 1; END IF; CASE x WHEN 1 THEN y(); "
        "END CASE; WHILE x < 3 DO x = CASE WHEN n THEN x + 1 ELSE 3 END; END WHILE; "
        "RETURN x; END",
    )


# ---------------------------------------------------------------------------- lexical rules


def test_keywords_are_case_insensitive():
    assert parse_one("start PIPELINE p foreground") == parse_one("START pipeline p FOREGROUND")


def test_keyword_words_are_identifiers_where_no_keyword_fits():
    stmt = parse_one(
        "CREATE PIPELINE data AS LOAD DATA KAFKA 'x' INTO TABLE format FORMAT JSON "
        "(config <- key::offsets, status <- data)"
    )
    assert stmt.name == "data"
    assert stmt.target == Target("TABLE", "format")
    assert stmt.mappings == (
        FieldMapping("config", ("key", "offsets")),
        FieldMapping("status", ("data",)),
    )


def test_backquoted_identifiers():
    stmt = parse_one("CREATE TABLE `my table` (`a``b` INT, `select` TEXT)")
    assert stmt.name == "my table"
    assert [c.name for c in stmt.columns] == ["a`b", "select"]


@pytest.mark.parametrize(
    ("literal", "value"),
    [
        ("'plain'", "plain"),
        ('"double"', "double"),
        ("'it''s'", "it's"),
        ('"say ""hi"""', 'say "hi"'),
        ("'a\\'b'", "a'b"),
        ("'tab\\tnew\\nline\\\\'", "tab\tnew\nline\\"),
        ("'\\0\\b\\r\\Z'", "\0\b\r\x1a"),
        ("'like \\% and \\_'", "like \\% and \\_"),
        ("'\\q'", "q"),
    ],
)
def test_string_literals(literal, value):
    assert parse_one(f"SET x = {literal}").value == Literal("string", value)


def test_comments_are_ignored():
    stmts = parse(
        "-- leading\n"
        "# hash comment\n"
        "START /* inline ; */ PIPELINE p; -- trailing ;\n"
        "/* block\n ; */ STOP PIPELINE p # done"
    )
    assert stmts == [StartPipeline("p"), StopPipeline("p")]


def test_splitting_respects_strings_backquotes_and_comments():
    stmts = parse(
        "SELECT ';' AS a; SELECT \";\" FROM `x;y`; -- c;\nSELECT 1 /* ; */ ;;  ; SHOW PIPELINES"
    )
    assert stmts == [
        Query("SELECT ';' AS a"),
        Query('SELECT ";" FROM `x;y`'),
        Query("SELECT 1"),
        ShowPipelines(),
    ]


def test_empty_script():
    assert parse("") == []
    assert parse("  ;; -- nothing\n /* here */ ;") == []


def test_procedure_semicolons_do_not_split_the_script():
    stmts = parse(SEED_PROCEDURE + "\nSTART PIPELINE p;")
    assert [type(s) for s in stmts] == [CreateProcedure, StartPipeline]


def test_show_create_table_is_its_own_statement():
    from sparkpipes.frontends.singlestore import ShowCreateTable

    assert parse_one("SHOW CREATE TABLE `t`") == ShowCreateTable("t")
    assert parse_one("show create table t").to_sql() == "SHOW CREATE TABLE t"


def test_signs_of_numbers_stay_in_expressions():
    """A leading sign is part of the value: INSERT VALUES, SET and WHERE keep it (it was
    once dropped from the expression's text, so -1.5 was loaded as 1.5)."""
    ins = parse_one("INSERT INTO t VALUES (-0.0000001, -1.5, +2, - -4, ~5, 1 - 3)")
    assert [e.text for e in ins.rows[0]] == ["-0.0000001", "-1.5", "+2", "- -4", "~5", "1 - 3"]
    p = parse_one(
        "CREATE PIPELINE p AS LOAD DATA KAFKA 'h/t' INTO TABLE t FORMAT JSON (a <- a) "
        "SET b = -1 WHERE a > -2 AND -a < 3"
    )
    assert "b = -1" in p.to_sql() and "WHERE a > -2 AND -a < 3" in p.to_sql()


def test_qualified_names_keep_their_database_for_the_run_to_check():
    """``db.name`` parses to the bare name with ``db`` in ``databases`` (checked when the
    statement runs); a mapping's ``t.c`` / ``db.t.c`` must name the table loaded."""
    stmt = parse_one(
        "CREATE PIPELINE d.p AS LOAD DATA KAFKA 'h/t' INTO TABLE `d`.t FORMAT JSON "
        "(t.a <- a, e.t.b <- b)"
    )
    assert (stmt.name, stmt.target, stmt.databases) == ("p", Target("TABLE", "t"), ("d", "e"))
    assert [m.column for m in stmt.mappings] == ["a", "b"]
    assert parse_one(stmt.to_sql()) == stmt  # the qualifiers do not take part in equality
    for text in ("DROP TABLE d.t", "INSERT INTO d.t VALUES (1)", "START PIPELINE d.p"):
        assert parse_one(text).databases == ("d",)
    with pytest.raises(ParseError, match=r"'u\.a' is not a column of the table"):
        parse_one("CREATE PIPELINE p AS LOAD DATA KAFKA 'h/t' INTO TABLE t (u.a)")
