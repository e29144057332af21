"""Invalid input raises ParseError / SemanticError located at the offending token."""

import pytest

from sparkpipes.errors import SparkpipesError
from sparkpipes.frontends.singlestore import ParseError, SemanticError, parse, parse_one


def error_of(sql: str) -> ParseError:
    with pytest.raises(ParseError) as info:
        parse(sql)
    return info.value


def test_error_classes_and_codes():
    assert issubclass(ParseError, SparkpipesError)
    assert issubclass(SemanticError, ParseError)
    assert ParseError.code == "SP700"
    assert SemanticError.code == "SP701"


def test_message_shows_position_token_and_caret():
    err = error_of("CREATE PIPELINE p AS LOAD DATA INTO TABLE t")
    assert type(err) is ParseError
    assert (err.line, err.column, err.token) == (1, 32, "INTO")
    assert err.statement_text == "CREATE PIPELINE p AS LOAD DATA INTO TABLE t"
    head, source, caret = str(err).split("\n")
    assert head.startswith("[SP700] syntax error at line 1, column 32: unexpected 'INTO' (expected")
    assert source == "CREATE PIPELINE p AS LOAD DATA INTO TABLE t"
    assert caret == " " * 31 + "^"


def test_typo_in_keyword():
    err = error_of("CREATE PIPLINE p AS LOAD DATA KAFKA 'x' INTO TABLE t")
    assert (err.line, err.column, err.token) == (1, 8, "PIPLINE")
    assert "unexpected 'PIPLINE'" in err.message
    assert "PIPELINE" in err.message
    assert str(err).endswith("CREATE PIPLINE p AS LOAD DATA KAFKA 'x' INTO TABLE t\n       ^")


def test_typo_in_later_keyword():
    err = error_of("CREATE PIPELINE p AS LOAD DATA KAFKA 'x' BATCH_INTERVALL 5 INTO TABLE t")
    assert (err.line, err.column, err.token) == (1, 42, "BATCH_INTERVALL")


def test_missing_into():
    err = error_of("CREATE PIPELINE p AS LOAD DATA KAFKA 'x' TABLE t")
    assert (err.line, err.column, err.token) == (1, 42, "TABLE")
    assert "INTO" in err.message
    err = error_of("CREATE PIPELINE p AS LOAD DATA KAFKA 'x'")
    assert (err.line, err.column, err.token) == (1, 41, None)
    assert err.message.startswith("unexpected end of statement (expected ")
    assert "INTO" in err.message


def test_unterminated_string():
    err = error_of("SELECT 1;\nSET x = 'abc\n  more")
    assert (err.line, err.column, err.token) == (2, 9, "'")
    assert err.message == "unterminated string literal"
    assert str(err).split("\n")[1:] == ["SET x = 'abc", "        ^"]


@pytest.mark.parametrize(
    ("sql", "message", "column"),
    [
        ('SELECT "abc', "unterminated string literal", 8),
        ("SELECT `abc", "unterminated quoted identifier", 8),
        ("SELECT 1 /* abc", "unterminated comment", 10),
        ("SET x = 'it''s", "unterminated string literal", 13),
        ("SET x = 'a\\'", "unterminated string literal", 9),
    ],
)
def test_unterminated_tokens(sql, message, column):
    err = error_of(sql)
    assert (err.message, err.line, err.column) == (message, 1, column)


def test_bad_json_config_points_at_the_literal():
    err = error_of("CREATE PIPELINE p AS LOAD DATA KAFKA 'x'\n  CONFIG '{bad'\n  INTO TABLE t")
    assert type(err) is SemanticError
    assert (err.line, err.column, err.token) == (2, 10, "'{bad'")
    assert "CONFIG is not valid JSON" in err.message
    assert str(err).startswith("[SP701] invalid statement at line 2, column 10: CONFIG")
    assert str(err).split("\n")[1:] == ["  CONFIG '{bad'", "         ^"]


@pytest.mark.parametrize("value", ["[1, 2]", "1", '"s"', "null"])
def test_config_and_credentials_must_be_json_objects(value):
    sql = f"CREATE PIPELINE p AS LOAD DATA KAFKA 'x' CREDENTIALS '{value}' INTO TABLE t"
    err = error_of(sql)
    assert type(err) is SemanticError
    assert err.message == "CREDENTIALS must be a JSON object"
    assert err.column == sql.index("'" + value) + 1


def test_error_on_line_three_of_a_script():
    sql = "START PIPELINE p;\nSTOP PIPELINE p;\n\tCREATE TABLE t (a INT, b VARCHR(3))"
    err = error_of(sql)
    assert type(err) is SemanticError
    assert (err.line, err.column, err.token) == (3, 27, "VARCHR")
    assert err.message == "unknown type 'VARCHR'"
    assert err.statement_text == "CREATE TABLE t (a INT, b VARCHR(3))"
    assert str(err).split("\n")[1:] == [
        "\tCREATE TABLE t (a INT, b VARCHR(3))",
        "\t" + " " * 25 + "^",
    ]


def test_syntax_error_after_statement_starting_mid_line():
    err = error_of("SHOW PIPELINES; START PIPELINE p FOREGROUND LIMIT x BATCHES")
    assert (err.line, err.column, err.token) == (1, 51, "x")
    assert str(err).split("\n")[2] == " " * 50 + "^"


def test_syntax_error_in_expression():
    err = error_of("CREATE PIPELINE p AS LOAD DATA KAFKA 'x' INTO TABLE t\nWHERE (a > ) AND b")
    assert (err.line, err.column, err.token) == (2, 12, ")")


def test_reserved_word_as_name_needs_backquotes():
    err = error_of("CREATE TABLE select (a INT)")
    assert (err.column, err.token) == (14, "select")
    assert "backquoted" in err.message
    assert parse_one("CREATE TABLE `select` (a INT)").name == "select"


def test_unexpected_character():
    err = error_of("START PIPELINE p {")
    assert (err.column, err.token) == (18, "{")


@pytest.mark.parametrize(
    ("sql", "message", "token"),
    [
        (
            "CREATE PIPELINE p AS LOAD DATA KAFKA 'x' BATCH_INTERVAL 1 BATCH_INTERVAL 2 "
            "INTO TABLE t",
            "BATCH_INTERVAL is given more than once",
            "BATCH_INTERVAL 2",
        ),
        (
            "CREATE PIPELINE p AS LOAD DATA KAFKA 'x' CONFIG '{}' CONFIG '{}' INTO TABLE t",
            "CONFIG is given more than once",
            "CONFIG '{}'",
        ),
        (
            "CREATE PIPELINE p AS LOAD DATA KAFKA 'x' SKIP ALL ERRORS SKIP PARSER ERRORS "
            "INTO TABLE t",
            "SKIP … ERRORS is given more than once",
            "SKIP PARSER ERRORS",
        ),
        (
            "CREATE PIPELINE p AS LOAD DATA KAFKA 'x' REPLACE IGNORE INTO TABLE t",
            "REPLACE / IGNORE is given more than once",
            "IGNORE",
        ),
        (
            "CREATE PIPELINE p AS LOAD DATA KAFKA 'x' FORMAT JSON INTO TABLE t FORMAT JSON",
            "FORMAT is given more than once",
            "FORMAT JSON",
        ),
        (
            "CREATE PIPELINE p AS LOAD DATA KAFKA 'x' BATCH_INTERVAL -5 INTO TABLE t",
            "BATCH_INTERVAL must be at least 0, got -5",
            "-5",
        ),
        (
            "CREATE PIPELINE p AS LOAD DATA KAFKA 'x' BATCH_INTERVAL 2.5 INTO TABLE t",
            "BATCH_INTERVAL must be an integer",
            "2.5",
        ),
        (
            "CREATE PIPELINE p AS LOAD DATA KAFKA 'x' MAX_PARTITIONS_PER_BATCH 0 INTO TABLE t",
            "MAX_PARTITIONS_PER_BATCH must be at least 1, got 0",
            "0",
        ),
        (
            "CREATE PIPELINE p AS LOAD DATA KAFKA 'x' INTO TABLE t FORMAT XML",
            "unknown format 'XML' (expected AVRO, CSV, JSON, PARQUET, RAW)",
            "XML",
        ),
        (
            "CREATE PIPELINE p AS LOAD DATA KAFKA 'x' INTO TABLE t FORMAT JSON (a <- a, b)",
            "a column list cannot mix mappings (<-) and plain columns",
            "b",
        ),
        (
            "CREATE PIPELINE p AS LOAD DATA KAFKA 'x' INTO TABLE t (a <- a)",
            "field mappings (<-) need FORMAT JSON, AVRO or PARQUET",
            "(a <- a)",
        ),
        (
            "CREATE PIPELINE p AS LOAD DATA KAFKA 'x' INTO TABLE t FORMAT JSON "
            "FIELDS TERMINATED BY ','",
            "FIELDS applies to CSV only",
            "FIELDS TERMINATED BY ','",
        ),
        (
            "CREATE PIPELINE p AS LOAD DATA FS 'x' INTO TABLE t "
            "FIELDS TERMINATED BY ',' TERMINATED BY ';'",
            "TERMINATED BY is given more than once",
            "TERMINATED BY ';'",
        ),
        (
            "CREATE PIPELINE p AS LOAD DATA FS 'x' INTO TABLE t (a) (b)",
            "the column list is given more than once",
            "(b)",
        ),
        (
            "CREATE PIPELINE p AS LOAD DATA FS 'x' INTO TABLE t SET a = 1, a = 2",
            "SET of column 'a' is given more than once",
            "a = 2",
        ),
        (
            "START PIPELINE p FOREGROUND LIMIT 0 BATCHES",
            "LIMIT … BATCHES must be at least 1, got 0",
            "0",
        ),
        ("ALTER PIPELINE p SET OFFSETS '1'", "OFFSETS must be a JSON object or array", "'1'"),
        (
            "ALTER PIPELINE p SET OFFSETS '[1]'",
            "OFFSETS as an array takes objects with KEY and VALUE, as information_schema."
            'PIPELINES_SOURCE_OFFSETS shows them: [{"KEY": {…}, "VALUE": {…}}]',
            "'[1]'",
        ),
        (
            "ALTER PIPELINE p SET OFFSETS LATEST, OFFSETS EARLIEST",
            "OFFSETS is given more than once",
            "OFFSETS EARLIEST",
        ),
        ("CREATE TABLE t (a INT, A TEXT)", "column 'A' is given more than once", "A TEXT"),
        (
            "CREATE TABLE t (a INT NULL NOT NULL)",
            "NULL / NOT NULL is given more than once",
            "NOT NULL",
        ),
        (
            "CREATE TABLE t (a INT, KEY (b))",
            "key column 'b' is not a column of the table",
            "KEY (b)",
        ),
        ("CREATE TABLE t (a INT, KEY ())", "a key needs at least one column", "KEY ()"),
        (
            "CREATE TABLE t (a INT PRIMARY KEY, PRIMARY KEY (a))",
            "PRIMARY KEY is given more than once",
            "PRIMARY KEY (a)",
        ),
        ("CREATE TABLE t (a ARRAY)", "ARRAY needs its element types in <…>", "ARRAY"),
        ("CREATE TABLE t (a INT<STRING>)", "INT does not take <…> arguments", "INT"),
        ("CREATE TABLE t (a MAP<INT>)", "MAP takes 2 type argument(s)", "MAP"),
        ("CREATE TABLE t (a STRUCT<INT>)", "STRUCT members need a name (name: type)", "INT"),
        ("CREATE TABLE t (a ARRAY<x: INT>)", "ARRAY takes types, not named fields", "x: INT"),
        ("CREATE TABLE t (a VARCHAR(1, 2))", "VARCHAR takes at most 1 parameter(s)", "(1, 2)"),
        ("CREATE TABLE t (a TEXT UNSIGNED)", "TEXT cannot be UNSIGNED", "UNSIGNED"),
        ("CREATE TABLE `` (a INT)", "empty identifier", "``"),
        ("CREATE INDEX i ON t ()", "an index needs at least one column", "()"),
        ("SET x = 1e999", "number is out of range", "1e999"),
        (
            "CREATE PROCEDURE p(a INT, A INT) AS BEGIN END",
            "parameter 'A' is given more than once",
            "A INT",
        ),
    ],
)
def test_semantic_errors(sql, message, token):
    err = error_of(sql)
    assert type(err) is SemanticError
    assert err.message == message
    assert err.token == token
    assert err.column == sql.rindex(token) + 1


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("CREATE PROCEDURE p() AS x", "a procedure body starts with BEGIN or DECLARE"),
        ("CREATE PROCEDURE p() AS BEGIN x", "a procedure body ends with END"),
    ],
)
def test_procedure_body_shape(sql, message):
    err = error_of(sql)
    assert type(err) is ParseError
    assert err.message == message


def test_parse_one_needs_exactly_one_statement():
    err = error_of_one("SELECT 1; SELECT 2")
    assert (err.line, err.column) == (1, 11)
    assert err.message == "expected exactly one statement, found 2"
    err = error_of_one("-- nothing")
    assert err.message == "expected exactly one statement, found 0"
    assert parse_one("SELECT 1;") == parse("SELECT 1")[0]


def error_of_one(sql: str) -> ParseError:
    with pytest.raises(ParseError) as info:
        parse_one(sql)
    return info.value


def test_error_serializes_with_position():
    d = error_of("SHOW TABLES LIKE").to_dict()
    assert d["code"] == "SP700"
    assert (d["line"], d["column"]) == (1, 17)
    assert d["type"] == "ParseError"


def test_long_lines_are_shown_around_the_error():
    err = error_of("SET x = '" + "a" * 300 + "' oops")
    assert (err.column, err.token) == (312, "oops")
    source, caret = str(err).split("\n")[1:]
    assert len(source) <= 160
    assert source[len(caret) - 1 :].startswith("oops")


def test_non_text_input_is_a_parse_error():
    with pytest.raises(ParseError):
        parse(None)  # type: ignore[arg-type]


def test_found_by_fuzzing_a_dot_inside_a_quoted_variable_name_part():
    # bench/fuzz_sql.py: it parsed, then printed back as a different (invalid) statement
    err = error_of("SET spark.`.`.shuffle.partitions = 4")
    assert type(err) is SemanticError
    assert "cannot contain '.'" in err.message and err.column == 5


@pytest.mark.parametrize(
    ("sql", "what"),
    [
        ("CREATE PIPELINE p AS LOAD DATA KAFKA 'k/t' BATCH_INTERVAL {n} INTO TABLE t", "BATCH"),
        ("CREATE PIPELINE p AS LOAD DATA FS '/x' INTO TABLE t IGNORE {n} LINES", "IGNORE"),
        ("ALTER PIPELINE p SET MAX_OFFSETS_PER_BATCH_PARTITION {n}", "MAX_OFFSETS"),
        ("TEST PIPELINE p LIMIT {n}", "LIMIT"),
        ("START PIPELINE p FOREGROUND LIMIT {n} BATCHES", "LIMIT"),
    ],
)
def test_found_by_fuzzing_numbers_beyond_a_bigint(sql, what):
    # bench/fuzz_sql.py: they parsed and reached the engine, where 10**400 ms cannot
    # become seconds (OverflowError in the scheduler) and a huge LIMIT or IGNORE … LINES
    # breaks the Kafka client and pyarrow
    parse(sql.format(n=2**63 - 1))
    err = error_of(sql.format(n=2**63))
    assert type(err) is SemanticError
    assert err.message.startswith(what) and err.message.endswith("at most 9223372036854775807")
    assert err.column == sql.index("{n}") + 1


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e999", "-1e400"])
@pytest.mark.parametrize("clause", ["CONFIG", "CREDENTIALS"])
def test_found_by_fuzzing_json_that_is_not_json(clause, value):
    # bench/fuzz_sql.py: Python's json took them, and the spec then held NaN or inf,
    # which the catalog could only store as non-standard JSON
    sql = f"""CREATE PIPELINE p AS LOAD DATA KAFKA 'k/t' {clause} '{{"a": {value}}}' INTO TABLE t"""
    err = error_of(sql)
    assert type(err) is SemanticError
    assert err.message.startswith(f"{clause} is not valid JSON: ")
    assert err.column == sql.index("'{") + 1
    err = error_of(f"ALTER PIPELINE p SET OFFSETS '{{\"0\": {value}}}'")
    assert err.message.startswith("OFFSETS is not valid JSON: ")


def test_found_by_fuzzing_a_huge_precision_in_a_default_call():
    # bench/fuzz_sql.py: int() refused the 4,301 digits with a ValueError (Python's limit
    # on int-to-text conversion), which escaped the parser
    sql = "CREATE TABLE t (ts DATETIME(6) DEFAULT CURRENT_TIMESTAMP(" + "9" * 4301 + "))"
    err = error_of(sql)
    assert type(err) is SemanticError
    assert err.message == "number is too large"
    assert err.column == sql.index("(9") + 2


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("CREATE USER 'ana'@'localhost' IDENTIFIED BY 'pw-1x'", "users are not restricted by host"),
        ("CREATE USER ana IDENTIFIED BY ''", "a user's password must not be empty"),
        ("CREATE USER ana IDENTIFIED 'pw-1x'", "unexpected '<redacted>' (expected BY)"),
        ("CREATE USER ana IDENTIFIED BY 'pw-1x' ADD", "unexpected 'ADD'"),
        ("ALTER USER ana IDENTIFIED BY 'pw-1x' ,", "unexpected ','"),
    ],
)
def test_user_statements_are_checked_and_never_echo_the_password(sql, message):
    err = error_of(sql)
    assert err.message.startswith(message), err.message
    shown = str(err) + repr(err.to_dict()) + (err.statement_text or "")
    assert "pw-1x" not in shown
    assert "*****" in err.source_line or "pw-1x" not in sql


def test_expected_words_are_what_may_come_here_not_after_any_integer():
    """After ``BATCH_INTERVAL 10`` the list offers the next clauses, not the words that
    follow an integer elsewhere (``LIMIT n BATCHES``, ``RETAIN n HOURS``)."""
    err = error_of("CREATE PIPELINE p AS LOAD DATA KAFKA 'h/t' BATCH_INTERVAL 10 x INTO TABLE t")
    assert "BATCH_INTERVAL" in err.message and "INTO" in err.message
    assert "BATCHES" not in err.message and "HOURS" not in err.message
    assert "(expected HOURS)" in error_of("VACUUM t RETAIN 5 x").message
