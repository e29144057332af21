"""The Python front end and storage: flat options ↔ spec, JSON ↔ spec, version-1 definitions."""

import json

import pytest

from sparkpipes.config import CsvOptions, FieldMapping, PipelineSpec, Secret
from sparkpipes.config.kwargs import to_kwargs, upgrade_v1
from sparkpipes.config.spec import from_kwargs
from sparkpipes.errors import ConfigError
from tests.unit.config.v1 import V1_KAFKA

KAFKA = dict(name="p", source="kafka", location="127.0.0.1:9092/t", table="t")

OPTIONS = {
    "minimal": KAFKA,
    "every_option": dict(
        KAFKA,
        config={"client.id": "me", "fetch.min.bytes": 1, "nested": {"a": [1, None]}},
        credentials={"sasl.username": "u", "sasl.password": "pw"},
        batch_interval_ms=75,
        max_partitions_per_batch=3,
        max_offsets_per_batch_partition=10,
        max_retries=0,
        fetch_timeout_ms=5,
        chunk_records=7,
        skip_parser_errors=True,
        offsets="latest",
        on_offset_out_of_range="earliest",
        provenance=True,
        on_duplicate_key="replace",
    ),
    "json_mapping_set_where": dict(
        KAFKA,
        mapping=[("a", "x::y"), ("@v", ("z",)), ("whole", "%")],
        assignments=[("b", "upper(@v)")],
        where="a > 1",
        on_duplicate_key="ignore",
    ),
    "csv": dict(
        name="fp",
        source="fs",
        location="/data/*.csv",
        table="f",
        format="csv",
        csv={"delimiter": "|", "quote": "'", "escape": "\\", "header": True},
        skip_lines=1,
        mapping=[("id", ("id",)), ("@skip", ("skip",)), ("name", ("name",))],
    ),
    "raw": dict(KAFKA, format="raw", config='{"group.id": "g"}', credentials='{"k": "v"}'),
}


V1 = V1_KAFKA


@pytest.fixture(params=list(OPTIONS), ids=list(OPTIONS))
def spec(request):
    return PipelineSpec.build(**OPTIONS[request.param])


def test_flat_options_round_trip(spec):
    assert from_kwargs(to_kwargs(spec)) == spec
    assert PipelineSpec.build(**spec.to_kwargs()) == spec


def test_stored_json_round_trips_with_credentials_apart(spec):
    stored = json.loads(json.dumps(spec.to_json(with_credentials=True)))
    assert stored["version"] == 2
    assert PipelineSpec.from_json(stored, stored["source"]["credentials"]) == spec
    redacted = json.loads(json.dumps(spec.to_json()))
    assert set(redacted["source"]["credentials"].values()) <= {"<redacted>"}
    assert PipelineSpec.from_json(redacted, stored["source"]["credentials"]) == spec


def test_options_land_in_their_component():
    s = PipelineSpec.build(**OPTIONS["every_option"])
    assert (s.source.kind, s.source.start, s.source.on_out_of_range) == (
        "kafka",
        "latest",
        "earliest",
    )
    assert s.source.credentials == {"sasl.username": Secret("u"), "sasl.password": Secret("pw")}
    assert (s.sink.table, s.sink.kind, s.sink.write, s.sink.provenance) == (
        "t",
        "delta",
        "replace",
        True,
    )
    assert (s.batch.interval_ms, s.batch.max_partitions, s.batch.max_offsets_per_partition) == (
        75,
        3,
        10,
    )
    assert (s.batch.max_retries, s.batch.fetch_timeout_ms, s.batch.chunk_records) == (0, 5, 7)
    assert s.format.skip_parser_errors is True
    c = PipelineSpec.build(**OPTIONS["csv"])
    assert c.format.csv == CsvOptions("|", "'", "\\", True)
    assert c.format.mapping[1] == FieldMapping("@skip", ("skip",))
    assert c.format.mapping[1].is_variable


def test_a_version_1_definition_reads_as_the_spec_its_options_build():
    built = PipelineSpec.build(
        name="p",
        source="kafka",
        location="127.0.0.1:9092/t",
        table="t",
        credentials={"sasl.password": "pw"},
        mapping=[("a", ("x",))],
        batch_interval_ms=75,
    )
    assert PipelineSpec.from_json(V1, {"sasl.password": "pw"}) == built
    assert "credentials" not in upgrade_v1(V1)  # the stored '<redacted>' never becomes a value
    assert PipelineSpec.from_json(V1).credentials == {}


def test_defaults_fill_only_what_the_caller_left_out():
    defaults = {"batch_interval_ms": 9, "max_retries": 1, "chunk_records": 3}
    s = from_kwargs(dict(KAFKA, batch_interval_ms=None, max_retries=6), defaults)
    assert (s.batch.interval_ms, s.batch.max_retries, s.batch.chunk_records) == (9, 6, 3)
    assert s.batch.max_partitions is None


@pytest.mark.parametrize(
    "kw, text",
    [
        ({"sourc": "kafka"}, "unknown pipeline option 'sourc'; did you mean 'source'?"),
        (
            {"on_duplicate_key": "upsert"},
            "on_duplicate_key must be replace, ignore, skip_duplicates or update",
        ),
        (
            {"on_duplicate_key": "append"},
            "on_duplicate_key must be replace, ignore, skip_duplicates or update",
        ),
        ({"csv": {"delim": ";"}}, "unknown csv option 'delim'"),
        ({"chunk_records": 0}, "chunk_records must be an integer >= 1"),
        ({"max_partitions_per_batch": True}, "max_partitions_per_batch must be a positive"),
        ({"skip_lines": -1}, "skip_lines must be an integer >= 0"),
        ({"table": "a b"}, "table name must be letters"),
    ],
)
def test_invalid_options_are_config_errors_naming_them(kw, text):
    with pytest.raises(ConfigError) as e:
        from_kwargs(dict(KAFKA, **kw))
    assert text in str(e.value)


def test_a_pipeline_needs_a_table():
    with pytest.raises(ConfigError, match=r"a pipeline needs a table \(table=…\)"):
        from_kwargs({"name": "p", "source": "kafka", "location": "h:1/t"})


@pytest.mark.parametrize(
    "change, text",
    [
        ({"extra": 1}, "unknown definition key 'extra'"),
        ({"source": {"kind": "kafka", "locaton": "x"}}, "unknown source option 'locaton'"),
        ({"batch": {"interval": 5}}, "unknown batch option 'interval'"),
    ],
)
def test_unknown_keys_of_a_stored_definition_are_named(change, text):
    d = {**PipelineSpec.build(**KAFKA).to_json(), **change}
    with pytest.raises(ConfigError) as e:
        PipelineSpec.from_json(d)
    assert text in str(e.value)
