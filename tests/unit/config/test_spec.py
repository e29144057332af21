import pytest

from sparkpipes.config import PipelineSpec, Secret
from sparkpipes.errors import ConfigError, DecodeError, SparkpipesError


def spec(**kw):
    base = dict(name="p", source="kafka", location="h:1/t", table="t")
    base.update(kw)
    return PipelineSpec.build(**base)


def test_unknown_option_is_named_with_a_suggestion():
    with pytest.raises(ConfigError) as e:
        spec(batch_intervl_ms=5)
    assert "unknown pipeline option 'batch_intervl_ms'" in str(e.value)
    assert "did you mean 'batch_interval_ms'" in str(e.value)


@pytest.mark.parametrize(
    "kw, text",
    [
        ({"offsets": "middle"}, "offsets must be one of earliest, latest"),
        ({"max_retries": -1}, "max_retries must be an integer >= 0"),
        ({"batch_interval_ms": 2**63}, "batch_interval_ms must be at most 9223372036854775807"),
        ({"skip_lines": 10**400}, "skip_lines must be at most 9223372036854775807"),
        ({"max_partitions_per_batch": 0}, "max_partitions_per_batch must be a positive"),
        ({"on_offset_out_of_range": "skip"}, "on_offset_out_of_range must be one of"),
        ({"name": "bad-name"}, "pipeline name must be letters"),
        ({"config": "{not json"}, "CONFIG is not valid JSON"),
        ({"config": '{"a": NaN}'}, "CONFIG is not valid JSON: NaN is not a JSON value"),
        ({"config": '{"a": 1e999}'}, "CONFIG is not valid JSON: number 1e999 is out of range"),
        ({"config": '{"a": ' + "9" * 5000 + "}"}, "CONFIG is not valid JSON: Exceeds the limit"),
        ({"credentials": "[" * 100_000}, "CREDENTIALS is nested too deeply"),
        ({"credentials": "[1]"}, "CREDENTIALS must be a JSON object"),
    ],
)
def test_invalid_values_are_rejected_with_the_reason(kw, text):
    with pytest.raises(ConfigError) as e:
        spec(**kw)
    assert text in str(e.value)


def test_credentials_are_secrets_and_never_rendered():
    s = spec(credentials='{"sasl.password": "hunter2"}')
    assert isinstance(s.credentials["sasl.password"], Secret)
    assert "hunter2" not in repr(s)
    assert "hunter2" not in str(s.to_json())
    assert s.to_json()["source"]["credentials"] == {"sasl.password": "<redacted>"}
    assert s.to_json(with_credentials=True)["source"]["credentials"] == {"sasl.password": "hunter2"}
    again = PipelineSpec.from_json(s.to_json(), {"sasl.password": "hunter2"})
    assert again == s


def test_mapping_paths_accept_singlestore_double_colon():
    s = spec(mapping=[("a", "x::y"), ("b", ("z",))])
    assert [(m.column, m.path) for m in s.mapping] == [("a", ("x", "y")), ("b", ("z",))]
    with pytest.raises(ConfigError, match="empty path"):
        spec(mapping=[("a", "")])
    assert spec(mapping=[("a", "%")]).mapping[0].path == ()  # the whole record


def test_errors_carry_context_across_processes():
    e = DecodeError("bad record", partition="3", offset=17)
    e.with_context(pipeline="p", batch=4, partition="9")
    back = SparkpipesError.from_dict(e.to_dict())
    assert type(back) is DecodeError
    assert (back.pipeline, back.partition, back.batch, back.offset) == ("p", "3", 4, 17)
    assert str(back) == "[SP300] bad record (pipeline 'p', batch 4, partition 3)"
    assert not back.transient
