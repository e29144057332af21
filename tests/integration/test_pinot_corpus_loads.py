"""The Pinot corpus (``tests/corpus/pinot``) loads rows: every accepted (table config,
schema) pair whose stream is Kafka with a JSON decoder, pointed at the test broker and a
fresh topic, is added as a user adds it (schema + config), and records made from its
schema — a value of the field's type, a time in the field's format — become its rows,
with no record in the errors view. A user relies on a Pinot table config written for
Pinot loading here as it is. A pair that cannot run here is in ``NOT_RUN`` with why.

Each stored value is then compared, column by column, with what Pinot stores for the same
records, worked out by hand from Pinot's source (``pinot_expected``: its type conversion,
default null values and the corpus's transform functions). The records are made a little
richer where Pinot's reading differs from a plain copy (:func:`richer`): numbers given as
JSON text, a real into a whole-number column, a field left out, one value given as a
list of one, a single value into a multi-value field. The fields the transforms read are
worked back from the transforms (:func:`inputs`); with an upsert ``deleteRecordColumn`` a
deleted key's row is left out, as Pinot's queries leave it out. Every pair run must
load Pinot's values: none is expected to fail."""

from __future__ import annotations

import copy
import datetime as dt
import itertools
import json
import pathlib
import re
import time
import uuid

import pytest
import yaml

from sparkpipes import Engine
from tests.integration import pinot_expected as pinot
from tests.unit.frontends.pinot.test_corpus import GAPS

CORPUS = pathlib.Path(__file__).parents[1] / "corpus" / "pinot"
ITEMS = {item["id"]: item for item in yaml.safe_load((CORPUS / "index.yaml").read_text())}
N = 5


ACCEPTED = sorted(set(ITEMS) - set(GAPS))

#: accepted pairs not run here, and why
NOT_RUN: dict[str, str] = {
    "apache-pinot-history/examples-stream-githubEvents-pullRequestMergedEvents-kinesis-realtime-table-config": (
        "Kinesis stream (test_kinesis.py runs Kinesis tables against a mock)"
    ),
    "apache-pinot/stream-pullRequestMergedEvents-pullRequestMergedEvents-kinesis-realtime-table-config": (
        "Kinesis stream (test_kinesis.py runs Kinesis tables against a mock)"
    ),
    "pinot-recipes/ingest-avro-config-table": (
        "Confluent Avro decoder: needs a schema registry with the writer schema "
        "(test_avro_messages.py)"
    ),
    "other/mneedham-mastodon-stream-pinot-table": (
        "Confluent Avro decoder: needs a schema registry with the writer schema "
        "(test_avro_messages.py)"
    ),
    "pinpoint/exceptiontrace-exceptiontrace-common-pinot-exceptionTrace-realtime-table": (
        "CLP log decoder: test_pinot_clp.py loads this pair and checks its encoded columns"
    ),
}

#: pair → (how many records go to the errors view, why); none so far
EXPECTED_ERRORS: dict[str, tuple[int, str]] = {}


# -- the fields the transforms and aggregations read that the schema does not hold -----
def _meetup_json(i: int, t: int) -> dict:
    return {
        "event": {"event_id": f"e{i}", "event_name": "talk", "time": t},
        "group": {"group_id": i, "group_name": "g", "group_city": "Oslo"},
        "member": {"member_id": i, "member_name": "ann"},
        "venue": {"venue_id": i, "venue_name": "hall"},
    }


_GEO = {
    "pointString": "POINT (10.75 59.91)",
    "polygonString": "POLYGON ((0 0, 1 0, 1 1, 0 1, 0 0))",
    "multiPolygonString": "MULTIPOLYGON (((0 0, 1 0, 1 1, 0 0)), ((2 2, 3 2, 3 3, 2 2)))",
    "lineStringString": "LINESTRING (0 0, 1 1, 2 1)",
    "geometryCollectionString": "GEOMETRYCOLLECTION (POINT (1 2), LINESTRING (0 0, 1 1))",
}


def _utc(t: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(t / 1000, dt.UTC)


RAW = {
    "apache-pinot-history/examples-stream-meetupRsvp-json-meetupRsvp-realtime-table-config": _meetup_json,
    "apache-pinot-history/examples-stream-meetupRsvp-upsert-json-meetupRsvp-realtime-table-config": _meetup_json,
    "apache-pinot/stream-meetupRsvpJson-meetupRsvpJson-realtime-table-config": _meetup_json,
    "apache-pinot/stream-upsertJsonMeetupRsvp-upsertJsonMeetupRsvp-realtime-table-config": _meetup_json,
    "apache-pinot/stream-dailySales-dailySales-realtime-table-config": lambda i, t: {
        "timestamp": t,
        "price": 10.5 + i,
    },
    "pinot-recipes/datetime-string-to-timestamp-config-table": lambda i, t: {
        "timestamp1": t,
        "timestamp2": _utc(t).strftime("%Y-%m-%d %H:%M:%S"),
        "timestamp3": _utc(t).strftime("%m/%d/%YT%H:%M:%S"),
    },
    "pinot-recipes/debezium-cdc-config-rental-table-config": lambda i, t: {
        "payload": {"rental_id": i, "op": "c", "ts_ms": t}
    },
    "pinot-recipes/geospatial-config-table": lambda i, t: _GEO,
    "pinot-recipes/geospatial-config-table-geoindex": lambda i, t: _GEO,
    "pinot-recipes/geospatial-default-config-table": lambda i, t: _GEO,
    "pinot-recipes/geospatial-indexing-config-table": lambda i, t: _GEO,
    "pinot-recipes/pause-resume-config-table": lambda i, t: {
        "tsString": _utc(t).strftime("%Y-%m-%dT%H:%M:%S.") + "12Z"
    },
    "pinot-recipes/pause-resume-config-table-fixed": lambda i, t: {
        "tsString": _utc(t).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    },
    "pinpoint/collector-pinot-heatmap-stat-application-realtime-table": lambda i, t: {
        "eventTime": t
    },
    "pinpoint/inspector-module-inspector-collector-pinot-inspector-stat-application-realtime-table": lambda i, t: {
        "eventTime": t,
        "fieldValue": 1.5 + i,
    },
}


# -- records from a schema ---------------------------------------------------------------
UNIT_MS = {
    "MILLISECONDS": 1,
    "SECONDS": 1000,
    "MINUTES": 60_000,
    "HOURS": 3_600_000,
    "DAYS": 86_400_000,
}
#: units finer than a millisecond: how many make one
SUB_MS = {"MICROSECONDS": 1_000, "NANOSECONDS": 1_000_000}
#: Java date pattern letters → strftime
JAVA_DATE = {
    "yyyy": "%Y",
    "YYYY": "%Y",
    "MM": "%m",
    "dd": "%d",
    "HH": "%H",
    "mm": "%M",
    "ss": "%S",
    "Z": "%z",
}


def _java_date(pattern: str, t: int) -> str:
    """``t`` (epoch millis) formatted by a Java ``SimpleDateFormat`` pattern."""
    out = []
    for m in re.finditer(r"'((?:[^']|'')*)'|([A-Za-z])\2*|(.)", pattern):
        quoted, token = m.group(1), m.group(0)
        if quoted is not None:
            out.append(quoted.replace("''", "'") or "'")
        elif token[0] == "S":
            out.append(f"{t % 1000:03d}"[: len(token)].ljust(len(token), "0"))
        elif m.group(2):
            out.append(_utc(t).strftime(JAVA_DATE[token]))
        else:
            out.append(token)
    return "".join(out)


def _time(fmt: str, t: int):
    """``t`` (epoch millis) in a Pinot dateTime format, old (``1:DAYS:EPOCH``) or new
    (``EPOCH|DAYS|1``)."""
    if "|" in fmt:
        kind, *rest = fmt.split("|")
        if kind == "SIMPLE_DATE_FORMAT":
            return _java_date(rest[0], t)
        unit, size = [*rest, "MILLISECONDS", "1"][:2]
    elif fmt in ("EPOCH", "TIMESTAMP"):
        kind, unit, size = fmt, "MILLISECONDS", "1"
    else:
        size, unit, kind, *pattern = fmt.split(":", 3)
        if kind == "SIMPLE_DATE_FORMAT":
            return _java_date(pattern[0], t)
    if kind == "TIMESTAMP":
        return t
    if unit in SUB_MS:
        return t * SUB_MS[unit] // int(size)
    return t // (UNIT_MS[unit] * int(size))


def _value(spec: dict, i: int, t: int):
    name, kind = spec["name"], spec.get("dataType", "STRING")
    if "format" in spec:
        return _time(spec["format"], t)
    one = {
        "INT": 100 + i,
        "LONG": 1000 + i,
        "FLOAT": i + 0.5,
        "DOUBLE": i + 0.25,
        "BIG_DECIMAL": i + 0.5,
        "BOOLEAN": i % 2 == 0,
        "STRING": f"{name}-{i}",
        "BYTES": f"{i:02x}ab",
        "JSON": {"n": i, "s": "x"},
        "TIMESTAMP": t,
    }[kind]
    if spec.get("singleValueField", True):
        return one
    return [one, _value({**spec, "singleValueField": True}, i + N, t)]


def _nest(record: dict, unnest: list[str], delimiter: str) -> dict:
    """Dotted names as the nested objects a complexTypeConfig flattens; a field to unnest
    as a list of one object."""
    out: dict = {}
    for key, value in record.items():
        parts = key.split(delimiter)
        node = out
        for n, part in enumerate(parts[:-1]):
            path = delimiter.join(parts[: n + 1])
            node = node.setdefault(part, [{}])[0] if path in unnest else node.setdefault(part, {})
        node[parts[-1]] = value
    return out


#: where the stored value is known to differ from Pinot's, and why (issue 34: left)
KNOWN = {}


def richer(rec: dict, specs: list[dict], i: int, keep: set[str]) -> dict:
    """Record ``i`` as real producers also write it, where Pinot's conversion is not a
    plain copy: 1 — whole and real numbers as JSON text (``"101"``); 2 — a real into a
    whole-number field (``1002.75``: Pinot stores 1002); 3 — the first optional
    dimension and metric left out (their default null value); 4 — a text given as a list
    of one (``["x"]``) and a multi-value field as a single value. Fields in ``keep``
    (keys, time, fields transforms or aggregations read) stay as made. Under a
    ``complexTypeConfig`` the same values are nested afterwards: Pinot converts a
    flattened field as any column's value (``pinot_expected``)."""
    rec = dict(rec)
    free = [f for f in specs if f["name"] in rec and f["name"] not in keep and "format" not in f]
    single = [f for f in free if f.get("singleValueField", True)]
    if i == 1:
        for f in single:
            if f.get("dataType") in ("INT", "LONG", "FLOAT", "DOUBLE"):
                rec[f["name"]] = str(rec[f["name"]])
    elif i == 2:
        for f in single:
            if f.get("dataType") in ("INT", "LONG"):
                rec[f["name"]] += 0.75
    elif i == 3:
        for role in ("dimension", "metric"):
            left = [f for f in single if f["_role"] == role]
            if left:
                del rec[left[0]["name"]]
    elif i == 4:
        for f in free:
            if f.get("dataType") == "STRING" and f.get("singleValueField", True):
                rec[f["name"]] = [rec[f["name"]]]
            elif not f.get("singleValueField", True):
                rec[f["name"]] = rec[f["name"]][0]
    return rec


def _specs(schema: dict) -> list[dict]:
    roles = {"dimensionFieldSpecs": "dimension", "metricFieldSpecs": "metric"}
    roles["dateTimeFieldSpecs"] = "dateTime"
    return [{**f, "_role": r} for key, r in roles.items() for f in schema.get(key) or []]


def _kept(table: dict, schema: dict) -> set[str]:
    """The fields :func:`richer` leaves as made: keys, the time column, what transforms,
    aggregations and the filter read, and all of a table that rolls rows up."""
    ingestion = table.get("ingestionConfig") or {}
    keep = set(schema.get("primaryKeyColumns") or [])
    keep.add((table.get("segmentsConfig") or {}).get("timeColumnName"))
    texts = [c["transformFunction"] for c in ingestion.get("transformConfigs") or []]
    texts += [c["aggregationFunction"] for c in ingestion.get("aggregationConfigs") or []]
    texts += [f.get("transformFunction") or "" for f in _specs(schema)]
    texts.append((ingestion.get("filterConfig") or {}).get("filterFunction") or "")
    for f in _specs(schema):
        if any(re.search(rf"\b{re.escape(f['name'])}\b", t) for t in texts):
            keep.add(f["name"])
    if ingestion.get("aggregationConfigs") or table["tableIndexConfig"].get("aggregateMetrics"):
        keep |= {f["name"] for f in _specs(schema)}
    return keep


#: the hour the records' times count back from: one for the whole run, so the records sent
#: and the ones their expected rows are worked out from agree across an hour's turn
NOW = int(time.time()) // 3600 * 3_600_000


def flat_records(item_id: str, schema: dict, table: dict) -> list[dict]:
    """N records from the schema, before any nesting (what Pinot's columns are of)."""
    return records(item_id, schema, table, nest=False)


def records(item_id: str, schema: dict, table: dict, *, nest: bool = True) -> list[dict]:
    """N records from the schema, the fields transforms compute left out."""
    ingestion = table.get("ingestionConfig") or {}
    computed = {c["columnName"] for c in ingestion.get("transformConfigs") or []}
    computed |= {c["columnName"] for c in ingestion.get("aggregationConfigs") or []}
    specs = _specs(schema)
    keep = _kept(table, schema)
    old_time = (schema.get("timeFieldSpec") or {}).get("incomingGranularitySpec")
    out = []
    for i in range(N):
        t = NOW - i * 3_600_000 - i * 1_234
        rec = {f["name"]: _value(f, i, t) for f in specs if f["name"] not in computed}
        rec = richer(rec, specs, i, keep)
        if old_time:
            size = int(old_time.get("timeUnitSize", 1))
            rec[old_time["name"]] = t // (UNIT_MS[old_time["timeType"]] * size)
        rec |= inputs(table, schema, i, t)
        rec |= RAW.get(item_id, lambda i, t: {})(i, t)
        complex_type = ingestion.get("complexTypeConfig")
        if complex_type is not None and nest:
            rec = _nest(
                rec, complex_type.get("fieldsToUnnest") or [], complex_type.get("delimiter", ".")
            )
        out.append(rec)
    return out


def _transforms(table: dict, schema: dict) -> dict[str, str]:
    """column → transform expression: the ingestion config's, then the schema's own."""
    ingestion = table.get("ingestionConfig") or {}
    out = {c["columnName"]: c["transformFunction"] for c in ingestion.get("transformConfigs") or []}
    for f in _specs(schema):
        if f.get("transformFunction") and f["name"] not in out:
            out[f["name"]] = f["transformFunction"]
    return out


def _put(into: dict | list, name, value) -> None:
    """``value`` as the record's ``name``; objects (and arrays of as many) asked for by
    several transforms merged, else the first one asked for kept."""
    have = into[name] if isinstance(into, list) else into.get(name)
    if isinstance(have, dict) and isinstance(value, dict):
        for key, v in value.items():
            _put(have, key, v)
    elif isinstance(have, list) and isinstance(value, list) and len(have) == len(value):
        for n, v in enumerate(value):
            _put(have, n, v)
    elif have is None:
        into[name] = copy.deepcopy(value)


def inputs(table: dict, schema: dict, i: int, t: int) -> dict:
    """The record fields the transforms read, worked back from each transform's column:
    its value (:func:`_value`) at the leaf a ``jsonPath*(col, '$.a.b')`` reads (the field
    ``col`` the object ``{"a": {"b": value}}``), an object where ``jsonFormat`` formats
    one, the time ``t`` as the text a ``fromDateTime`` pattern reads (printed by the same
    Joda pattern), as millis where ``toDateTime``/``toEpoch*`` read them, in whole days
    for ``fromEpochDays``, divided where ``col * n`` multiplies; a column another
    transform computes passes the need on to that transform. A schema field with a
    format keeps its own value (already a time in it)."""
    transforms = _transforms(table, schema)
    specs = {f["name"]: f for f in _specs(schema)}
    out: dict = {}

    def need(node: tuple, want, seen: tuple = ()) -> None:
        kind, name = node[0], node[1]
        if kind == "col":
            if name in transforms and name not in seen:
                need(pinot.parse(transforms[name]), want, (*seen, name))
            elif "format" not in specs.get(name, {}):
                _put(out, name, want)
            return
        if kind != "call":
            return
        args = node[2]
        if name.startswith("jsonpath") and args[1:2] and args[1][0] == "lit":
            path = args[1][1]
            summed = re.fullmatch(r"\$\.sum\(\$\.?\[\*\]\.(\w+)\)", path)
            if summed and isinstance(want, int):  # two objects whose field adds up to it
                need(args[0], [{summed.group(1): want - 1}, {summed.group(1): 1}], seen)
            elif path == "$.length()":  # an array (of two objects, as a sum above asks)
                need(args[0], [{}, {}], seen)
            elif re.fullmatch(r"\$(\.\w+)+", path):
                for key in reversed(path.split(".")[1:]):
                    want = {key: want}
                need(args[0], want, seen)
        elif name == "jsonformat":
            need(args[0], want if isinstance(want, dict | list) else {"n": i, "s": f"x{i}"}, seen)
        elif name == "fromdatetime" and args[1][0] == "lit":
            need(args[0], pinot.joda_print(t, args[1][1]), seen)
        elif name in ("todatetime", "datetimeconvert") or name.startswith("toepoch"):
            need(args[0], t, seen)
        elif name.startswith("fromepoch"):
            need(args[0], t // pinot.FUNCTIONS[name][0](1), seen)
        elif name in ("mult", "times") and args[1][0] == "lit":
            need(args[0], want // args[1][1] if isinstance(want, int) else want, seen)

    for column, expr in transforms.items():
        if pinot.checked(expr):
            spec = specs.get(column, {"name": column})
            need(pinot.parse(expr), _value(spec, i, t), (column,))
    return out


# -- the config pointed at the test broker ------------------------------------------------
def _streams(table: dict) -> list[dict]:
    maps = ((table.get("ingestionConfig") or {}).get("streamIngestionConfig") or {}).get(
        "streamConfigMaps"
    )
    return maps or [table["tableIndexConfig"]["streamConfigs"]]


def _is_kafka_json(table: dict) -> bool:
    return all(
        s.get("streamType") == "kafka"
        and s.get("stream.kafka.decoder.class.name", "JSONMessageDecoder").endswith(
            "JSONMessageDecoder"
        )
        for s in _streams(table)
    )


#: a stream config's keys that would reach another broker, or a security setup the test
#: broker (plaintext) has not
SECURITY = re.compile(r"^(security\.protocol|sasl\.|ssl\.)")


def pointed(table: dict, bootstrap: str, topic: str) -> dict:
    """The config reading ``topic`` on the test broker from its start."""
    table = copy.deepcopy(table)
    [stream] = _streams(table)
    for key in list(stream):
        if SECURITY.match(key):
            del stream[key]
    stream["stream.kafka.broker.list"] = bootstrap
    if "stream.kafka.hlc.bootstrap.server" in stream:
        stream["stream.kafka.hlc.bootstrap.server"] = bootstrap
    stream["stream.kafka.topic.name"] = topic
    stream["stream.kafka.consumer.prop.auto.offset.reset"] = "smallest"
    return table


def _partition(table: dict) -> int:
    """The first partition the stream reads (``stream.kafka.partition.ids``), else 0."""
    [stream] = _streams(table)
    ids = stream.get("stream.kafka.partition.ids", "").replace("-", ",").split(",")
    return min((int(i) for i in ids if i.strip()), default=0)


def _read(item_id: str, key: str) -> dict:
    return json.loads((CORPUS / ITEMS[item_id][key]).read_text(encoding="utf-8"))


RUN = [i for i in ACCEPTED if _is_kafka_json(_read(i, "table"))]
_topics = itertools.count()


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    """One engine for every pair: each is deleted (table and schema) after its run."""
    with Engine(str(tmp_path_factory.mktemp("pinot_corpus_loads"))) as eng:
        yield eng


def test_not_run_is_exactly_the_pairs_that_are_not_kafka_json():
    assert sorted(NOT_RUN) == sorted(set(ACCEPTED) - set(RUN))
    assert set(EXPECTED_ERRORS) <= set(RUN)
    assert len(RUN) + len(NOT_RUN) + len(GAPS) == len(ITEMS)


@pytest.mark.parametrize("item_id", RUN)
def test_each_kafka_json_pair_loads_its_records(engine, broker, item_id):
    table, schema = _read(item_id, "table"), _read(item_id, "schema")
    topic = f"corpus{next(_topics)}_{uuid.uuid4().hex[:6]}"
    partition = _partition(table)
    broker.create_topic(topic, partition + 1)
    sent = records(item_id, schema, table)
    assert broker.produce(topic, [json.dumps(r) for r in sent], partition=partition) == N

    out = engine.pinot.add(pointed(table, broker.bootstrap, topic), schema)
    try:
        [pipeline] = out["pipelines"]
        results = engine.run_batches(pipeline, 10, until_idle=True)
        assert results[-1].state == "NoData", results
        errors = engine.errors(pipeline)
        rows = engine.table_arrow(out["table"]).to_pylist()
        n_rows = len(rows)
        state = engine.catalog.pipelines.get(pipeline)
    finally:
        engine.pinot.delete(out["table"])
        engine.pinot.delete_schema(out["schema"])
        broker.delete_topic(topic)

    expected_errors = EXPECTED_ERRORS.get(item_id, (0, ""))[0]
    assert len(errors) == expected_errors, errors
    assert state.last_error is None, state.last_error
    ingestion = table.get("ingestionConfig") or {}
    if ingestion.get("aggregationConfigs") or table["tableIndexConfig"].get("aggregateMetrics"):
        assert 1 <= n_rows <= N  # rolled up by dimensions and time
    elif ingestion.get("filterConfig"):
        assert n_rows <= N - expected_errors
    else:
        n_deleted = sum(map(deleted(table), expected_rows(item_id, schema, table)))
        assert n_rows == N - expected_errors - n_deleted
    if not expected_errors and not rolled_up(table):
        check_values(item_id, schema, table, rows)


def rolled_up(table: dict) -> bool:
    ingestion = table.get("ingestionConfig") or {}
    return bool(
        ingestion.get("aggregationConfigs")
        or table["tableIndexConfig"].get("aggregateMetrics")
        or ingestion.get("filterConfig")
    )


def deleted(table: dict):
    """Whether Pinot's queries leave a row out as a deleted key: with an upsert
    ``deleteRecordColumn``, ``MutableSegmentImpl.index`` takes ``BooleanUtils.toBoolean`` of
    the row's value and a true one removes the key from the queryable docs (each record
    here has its own key)."""
    column = (table.get("upsertConfig") or {}).get("deleteRecordColumn")
    return lambda row: bool(column and row.get(column))


def _nullable(spec: dict, schema: dict, table: dict) -> bool:
    """``MutableSegmentImpl.isNullable``: with column-based null handling each field but
    the ``notNull`` ones, else every field when the table enables null handling."""
    if schema.get("enableColumnBasedNullHandling"):
        return not spec.get("notNull", False)
    return bool(table["tableIndexConfig"].get("nullHandlingEnabled"))


def expected_rows(item_id: str, schema: dict, table: dict) -> list[dict]:
    """Pinot's row of each record (``pinot_expected``); a column whose value is not
    worked out here is left out."""
    transforms = _transforms(table, schema)
    specs = _specs(schema)
    out = []
    for rec in flat_records(item_id, schema, table):
        row = {}
        for f in specs:
            name = f["name"]
            if name.startswith("__"):
                continue  # record metadata: test_pinot_streams.py
            value = rec.get(name)
            if value is None and name in transforms:  # ExpressionTransformer
                expr = transforms[name]
                if not pinot.checked(expr):
                    continue
                value = pinot.evaluate(expr, rec, transforms)
                if pinot.json_text(expr):
                    row[name] = json.loads(value)
                    continue
            got = pinot.stored(value, f)
            row[name] = (
                got
                if got is not None
                else pinot.default(f, f["_role"], _nullable(f, schema, table))
            )
        out.append(row)
    return out


def check_values(item_id: str, schema: dict, table: dict, rows: list[dict]) -> None:
    """Each stored value is Pinot's (rows matched by their expected values)."""
    expected = [r for r in expected_rows(item_id, schema, table) if not deleted(table)(r)]
    specs = {f["name"]: f for f in _specs(schema)}
    json_text = {c for c, expr in _transforms(table, schema).items() if pinot.json_text(expr)}
    got = [
        {c: pinot.normalized(r[c], {**specs[c], "json": c in json_text}) for c in expected[0]}
        for r in rows
    ]
    key = lambda row: json.dumps(row, sort_keys=True, default=str)  # noqa: E731
    got, expected = sorted(got, key=key), sorted(expected, key=key)
    for want, have in zip(expected, got, strict=True):
        diff = {c: (want[c], have[c]) for c in want if want[c] != have[c]}
        assert not diff, f"column: (Pinot's, stored) {diff}"
