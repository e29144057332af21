"""SingleStore SQL text → Spark SQL text: what changes, and that nothing else does."""

from __future__ import annotations

import pytest

from sparkpipes.engine.sql.dialect import translate, view_name


@pytest.mark.parametrize(
    ("text", "spark"),
    [
        ("SELECT record::$a FROM t", "SELECT get_json_object(record, '$.a') FROM t"),
        (
            "SELECT r::a::$b, r::%c",
            "SELECT get_json_object(r, '$.a.b'), CAST(get_json_object(r, '$.c') AS DOUBLE)",
        ),
        (
            "SELECT JSON_EXTRACT_BIGINT(FROM_BASE64(record::$data), 'n') FROM kp",
            "SELECT CAST(get_json_object(CAST(unbase64(get_json_object(record, '$.data')) AS "
            "STRING), '$.n') AS BIGINT) FROM kp",
        ),
        (
            "SELECT FROM_BASE64(record::$data)::$customer_id FROM kp",
            "SELECT get_json_object(CAST(unbase64(get_json_object(record, '$.data')) AS STRING),"
            " '$.customer_id') FROM kp",
        ),
        (
            "SELECT JSON_EXTRACT_JSON(r, 'x')::%y",
            "SELECT CAST(get_json_object(get_json_object(r, '$.x'), '$.y') AS DOUBLE)",
        ),
        (
            "SELECT TO_BASE64(a), 'x::$y' FROM t -- r::$z",
            "SELECT base64(a), 'x::$y' FROM t -- r::$z",
        ),
        ("SELECT @v + 1", "SELECT `@v` + 1"),
        (  # MySQL's date arithmetic: Spark's DATE_ADD adds days, its INTERVAL takes literals
            "SELECT DATE_ADD(FROM_UNIXTIME(0), INTERVAL (@ms / 1000) SECOND)",
            "SELECT ((FROM_UNIXTIME(0)) + (((`@ms` / 1000)) * INTERVAL 1 SECOND))",
        ),
        ("SELECT DATE_SUB(now(), INTERVAL 14 DAY)", "SELECT ((now()) - INTERVAL 14 DAY)"),
        ("SELECT t + INTERVAL n MINUTE", "SELECT t + ((n) * INTERVAL 1 MINUTE)"),
        (  # a calendar amount: whole units, and a DATE stays a DATE
            "SELECT ADDDATE(d, INTERVAL 1 QUARTER)",
            "SELECT ((d) + make_interval(0, CAST(round(1) AS INT) * 3, 0, 0, 0, 0, 0))",
        ),
        (
            "SELECT SUBDATE(d, INTERVAL @q DAY)",
            "SELECT ((d) - make_interval(0, 0, 0, CAST(round(`@q`) AS INT), 0, 0, 0))",
        ),
        ("SELECT d - INTERVAL 5 DAY, ADDDATE(d, 5)", "SELECT d - INTERVAL 5 DAY, ADDDATE(d, 5)"),
    ],
)
def test_singlestore_forms_become_spark_forms(text, spark):
    assert translate(text) == spark


def test_information_schema_views_are_named_and_reported():
    seen: list[str] = []
    out = translate(
        "SELECT * FROM information_schema.PIPELINES_SOURCE_OFFSETS", on_view=seen.append
    )
    assert out == f"SELECT * FROM `{view_name('PIPELINES_SOURCE_OFFSETS')}`"
    assert seen == ["PIPELINES_SOURCE_OFFSETS"]


def test_every_view_is_named_by_the_caller_a_json_key_s_subquery_too():
    """A statement registers its own views (``SqlSession._spark_sql``); a reference the
    translation wrote without asking would read a view registered for someone else."""
    seen: list[str] = []

    def name(view: str) -> str:
        seen.append(view)
        return f"v_{view.lower()}_1"

    out = translate(
        "SELECT JSON_EXTRACT_STRING(j, (SELECT max(PIPELINE_NAME) FROM "
        "information_schema.PIPELINES)), FROM_BASE64((SELECT max(x) FROM "
        "information_schema.PIPELINES_FILES)) FROM information_schema.PIPELINES_ERRORS",
        on_view=name,
    )
    assert seen == ["PIPELINES", "PIPELINES_FILES", "PIPELINES_ERRORS"]
    assert "information_schema" not in out and "__information_schema" not in out
    assert "`v_pipelines_1`" in out and "`v_pipelines_errors_1`" in out
    # without a caller's name, the stem: a view no statement registers
    assert translate("SELECT * FROM information_schema.PIPELINES") == (
        f"SELECT * FROM `{view_name('PIPELINES')}`"
    )
