"""The legacy schema ``timeFieldSpec`` read as Pinot reads it: the dateTime field
``Schema.convertToDateTimeFieldSpec`` makes of it, and the outgoing value Pinot's
``TimeConverter`` computes from the incoming one; and a bare ``"format": "EPOCH"``
(``DateTimeFormatSpec``'s defaults: 1 MILLISECONDS)."""

from __future__ import annotations

import pytest

from sparkpipes.errors import ConfigError
from sparkpipes.frontends.pinot.expr import translate
from sparkpipes.frontends.pinot.schema import DateTimeFormat, load_schema


def _schema(time_spec):
    return {
        "schemaName": "s",
        "dimensionFieldSpecs": [{"name": "id", "dataType": "INT"}],
        "timeFieldSpec": time_spec,
    }


def _spec(name, dtype, unit, **more):
    return {"name": name, "dataType": dtype, "timeType": unit, **more}


def test_incoming_only_is_the_time_column_as_given():  # airlineStats' DaysSinceEpoch
    s = load_schema(_schema({"incomingGranularitySpec": _spec("DaysSinceEpoch", "INT", "DAYS")}))
    f = s.field("DaysSinceEpoch")
    assert (f.role, f.data_type, f.ddl_type) == ("dateTime", "INT", "INT")
    assert f.format == DateTimeFormat("EPOCH", "DAYS", 1)
    assert f.granularity == "1:DAYS"
    assert f.transform is None
    assert s.names == ["id", "DaysSinceEpoch"]


def test_outgoing_is_the_column_filled_from_the_incoming_field():
    s = load_schema(
        _schema(
            {
                "incomingGranularitySpec": _spec("incoming", "LONG", "DAYS"),
                "outgoingGranularitySpec": _spec("outgoing", "LONG", "HOURS", timeUnitSize=5),
            }
        )
    )
    f = s.field("outgoing")
    assert f.format == DateTimeFormat("EPOCH", "HOURS", 5)
    assert f.granularity == "5:HOURS"
    # Pinot's TimeConverter: 18000 days → 1_555_200_000_000 ms → 432000 hours → /5 = 86400
    assert f.transform == 'toEpochHoursBucket(fromEpochDays("incoming"), 5)'
    assert translate(f.transform, where="t").fields == ("incoming",)


@pytest.mark.parametrize(
    "incoming, outgoing, expr",
    [
        (("SECONDS", 1), ("MILLISECONDS", 1), 'fromEpochSeconds("in")'),
        (("MILLISECONDS", 1), ("DAYS", 1), 'toEpochDays("in")'),
        (("MINUTES", 15), ("SECONDS", 1), 'toEpochSeconds(fromEpochMinutesBucket("in", 15))'),
    ],
)
def test_conversions_follow_pinots_units(incoming, outgoing, expr):
    doc = {
        "incomingGranularitySpec": _spec("in", "LONG", incoming[0], timeUnitSize=incoming[1]),
        "outgoingGranularitySpec": _spec("out", "LONG", outgoing[0], timeUnitSize=outgoing[1]),
    }
    assert load_schema(_schema(doc)).field("out").transform == expr


def test_a_date_pattern_and_a_transform_function():
    doc = {
        "incomingGranularitySpec": _spec(
            "day", "STRING", "DAYS", timeFormat="SIMPLE_DATE_FORMAT:yyyyMMdd"
        ),
        "transformFunction": "toDateTime(ts, 'yyyyMMdd')",
        "defaultNullValue": "19700101",
    }
    f = load_schema(_schema(doc)).field("day")
    assert f.format == DateTimeFormat("SIMPLE_DATE_FORMAT", "DAYS", 1, "yyyyMMdd")
    assert (f.transform, f.default_null) == ("toDateTime(ts, 'yyyyMMdd')", "19700101")


@pytest.mark.parametrize(
    "doc, says",
    [
        (
            {
                "incomingGranularitySpec": _spec("t", "LONG", "DAYS"),
                "outgoingGranularitySpec": _spec("t", "LONG", "HOURS"),
            },
            "differ but both name 't'",
        ),
        (
            {
                "incomingGranularitySpec": _spec(
                    "a", "STRING", "DAYS", timeFormat="SIMPLE_DATE_FORMAT:yyyyMMdd"
                ),
                "outgoingGranularitySpec": _spec("b", "LONG", "DAYS"),
            },
            "converting a SIMPLE_DATE_FORMAT time from incoming to outgoing is not supported",
        ),
        (
            {
                "incomingGranularitySpec": _spec("a", "LONG", "MICROSECONDS"),
                "outgoingGranularitySpec": _spec("b", "LONG", "DAYS"),
            },
            "converting a time counted in 1 MICROSECONDS is not supported",
        ),
        ({"incomingGranularitySpec": _spec("a", "LONG", "EONS")}, "timeType 'EONS' is not"),
        ({"incomingGranularitySpec": {"name": "a"}}, "needs name, dataType and timeType"),
    ],
)
def test_what_pinot_refuses_or_cannot_convert_is_named(doc, says):
    with pytest.raises(ConfigError) as e:
        load_schema(_schema(doc))
    assert "timeFieldSpec" in str(e.value) and says in str(e.value)


def test_unknown_keys_of_a_time_spec_are_reported():
    doc = {"incomingGranularitySpec": _spec("t", "LONG", "DAYS", note="x"), "description": "d"}
    assert set(load_schema(_schema(doc)).unrecognized) == {
        "timeFieldSpec.incomingGranularitySpec.note",
        "timeFieldSpec.description",
    }


def test_a_bare_epoch_format_is_epoch_millis():  # DateTimeFormatSpec: size 1, MILLISECONDS
    assert DateTimeFormat.parse("EPOCH", "f") == DateTimeFormat("EPOCH", "MILLISECONDS", 1)
