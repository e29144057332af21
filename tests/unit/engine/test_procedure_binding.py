"""A procedure body's batch parameter, bound as Spark reads the text: the body is not
rewritten on another tokenizer's idea of it (sqlglot's MySQL strings are not Spark's), it
is wrapped in a CTE of the parameter's name over the batch's view."""

from __future__ import annotations

from sparkpipes.engine.procedures import BATCH_VIEW, batch_view, bind, body_sql


def test_the_parameter_is_a_cte_over_the_batch_and_the_body_is_untouched():
    body = "SELECT x.a FROM (SELECT r'\\' AS z) JOIN secret x --'"
    bound = bind(body, "secret", "__sp_batch_1")
    assert bound == (
        "WITH `secret` AS (SELECT * FROM `__sp_batch_1`)\nSELECT * FROM (\n" + body + "\n)"
    )
    assert bind("SELECT 1", "we`ird", "v").startswith("WITH `we``ird` AS")


def test_each_batch_view_is_a_name_no_one_can_know():
    a, b = batch_view(), batch_view()
    assert a.startswith(BATCH_VIEW) and b.startswith(BATCH_VIEW) and a != b


def test_the_dialect_is_translated_inside_the_body_only():
    out = body_sql("SELECT r::$k FROM batch", "batch", "__sp_batch_2")
    assert out.endswith("SELECT get_json_object(r, '$.k') FROM batch\n)")
    assert out.startswith("WITH `batch` AS (SELECT * FROM `__sp_batch_2`)")
