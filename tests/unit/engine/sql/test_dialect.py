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
