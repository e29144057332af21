"""FORMAT AVRO / PARQUET subvalue paths as SingleStore writes them, lowered and shown
back. Sources:
https://docs.singlestore.com/cloud/load-data/load-data-from-files/load-data-from-avro-files/extracting-and-converting-avro-values
(``%``, a leading ``%::`` left out, backticks around a component with punctuation such as
a namespaced branch's fullname ``n.a``) and
https://docs.singlestore.com/cloud/load-data/load-data-from-files/load-data-from-parquet-files/create-a-parquet-pipeline
(``ident [::ident …]``)."""

from __future__ import annotations

import pytest

from sparkpipes.errors import ConfigError
from sparkpipes.frontends.singlestore import parse_one
from sparkpipes.frontends.singlestore.lowering import create_pipeline_sql, to_spec

DEFAULTS = {"batch_interval_ms": 1250, "max_offsets_per_batch_partition": 5000, "max_retries": 2}
FS = "CREATE PIPELINE p AS LOAD DATA FS '/data/*.avro' INTO TABLE t"


def test_avro_paths_with_backticked_fullnames_and_the_whole_record():
    """EXTRACT: ``%::`n.a`::f1`` and ``n.a::f1`` name the same path; ``%`` is the whole
    record; SingleStore's rule (no DEFAULT: a path the schema lacks is an error) is kept,
    and SHOW CREATE PIPELINE writes the fullname back in backticks."""
    spec = to_spec(
        parse_one(f"{FS} FORMAT AVRO (a <- %::`n.a`::f1, b <- `n.a`::f1, c <- %, d <- %::int)"),
        DEFAULTS,
    )
    paths = {m.column: (m.path, m.on_missing) for m in spec.format.mapping}
    assert paths == {
        "a": (("n.a", "f1"), "error"),
        "b": (("n.a", "f1"), "error"),
        "c": ((), "null"),
        "d": (("int",), "error"),
    }
    shown = create_pipeline_sql(spec)
    assert "`n.a`::f1" in shown and "c <- %" in shown
    assert to_spec(parse_one(shown), DEFAULTS) == spec
    assert spec.format.text_values  # values convert as SingleStore's (formats.avro_values)


def test_parquet_whole_record_is_refused_by_name():
    """``col <- %`` of a Parquet file: SingleStore's docs do not say what it loads, so it
    is refused, naming it."""
    with pytest.raises(
        ConfigError, match=r"FORMAT PARQUET: c <- % \(the whole record\) is not supported"
    ):
        to_spec(parse_one(f"{FS} FORMAT PARQUET (c <- %)"), DEFAULTS)
    spec = to_spec(parse_one(f"{FS} FORMAT PARQUET (id <- user::id)"), DEFAULTS)
    assert spec.format.mapping[0].path == ("user", "id")


def test_parquet_timezone_is_refused_by_name():
    """Create a Parquet Pipeline: ``FORMAT PARQUET (…) TIMEZONE 'zone'`` changes what a
    timestamp loads as; it is refused, naming it, not a bare syntax error."""
    with pytest.raises(Exception, match=r"TIMEZONE is not supported yet"):
        parse_one(f"{FS} FORMAT PARQUET (a <- a) TIMEZONE 'UTC'")
