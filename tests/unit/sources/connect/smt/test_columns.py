"""A source connector's fetched records through its chain in ``ConnectConsumer``: kept
records, dropped ones (no error), refused ones failing the fetch or, with
``errors.tolerance=all``, handed to the task as ``Fetched.rejected``."""

from __future__ import annotations

import pyarrow as pa
import pytest

from sparkpipes.errors import TransformError
from sparkpipes.sources.connect.base import PartitionReader, Polled, RecordColumns, SourceRecord
from sparkpipes.sources.connect.smt.columns import transform
from sparkpipes.sources.connect.source import ConnectConsumer
from tests.unit.sources.connect.smt.helpers import chain

P = "org.apache.kafka.connect.transforms."


class Rows(PartitionReader):
    def __init__(self, values):
        self.values = values

    def open(self, partition, offset):
        pass

    def poll(self, max_records, timeout_s):
        recs = [SourceRecord({"t": 1}, {"i": i}, v, "topic") for i, v in enumerate(self.values)]
        return Polled(recs, {"i": len(recs) - 1}, at_end=True)


KEY = chain({"transforms": "k", "transforms.k.type": P + "ValueToKey", "transforms.k.fields": "id"})


def test_fetch_applies_the_chain_and_keeps_offsets_aligned():
    drop = chain(
        {
            "transforms": "f,k",
            "transforms.f.type": P + "Filter",
            "transforms.f.predicate": "t",
            "predicates": "t",
            "predicates.t.type": P + "predicates.RecordIsTombstone",
            "transforms.k.type": P + "ExtractField$Value",
            "transforms.k.field": "id",
        }
    )
    consumer = ConnectConsumer(Rows([{"id": 1}, None, {"id": 3}]), '{"t":1}', drop)
    consumer.open({})
    fetched = consumer.fetch(10, 0.1)
    assert fetched.table.column("record").to_pylist() == ["1", "3"]
    assert fetched.positions.to_pylist() == ['{"i":0}', '{"i":2}']
    assert fetched.rejected == () and fetched.dropped == 1


def test_a_refused_record_fails_the_fetch_naming_transform_and_offset():
    # ValueToKey.java: requireStruct of a null value -> DataException
    consumer = ConnectConsumer(Rows([{"id": 1}, None]), '{"t":1}', KEY)
    consumer.open({})
    with pytest.raises(TransformError) as caught:
        consumer.fetch(10, 0.1)
    assert "transform 'k'" in caught.value.message and '{"i":1}' in caught.value.message


def test_errors_tolerance_all_hands_refused_records_to_the_task():
    consumer = ConnectConsumer(
        Rows([{"id": 1}, {"id": 2}]),
        '{"t":1}',
        chain(
            {
                "transforms": "k",
                "transforms.k.type": P + "ValueToKey",
                "transforms.k.fields": "nope",
            }
        ),
        tolerate=True,
    )
    consumer.open({})
    fetched = consumer.fetch(10, 0.1)
    assert len(fetched) == 0
    assert [(p, "Field does not exist: nope" in r) for p, r, _ in fetched.rejected] == [
        ('{"i":0}', True),
        ('{"i":1}', True),
    ]


def test_mixed_types_in_one_chunk_are_refused_not_guessed():
    cols = RecordColumns.of(
        [SourceRecord({}, {"i": i}, {"a": v}, "t") for i, v in enumerate([1, "x"])]
    )
    done = transform(KEY, cols, timestamps=True)
    assert len(done.columns.offsets) == 0 and len(done.refused) == 2


def test_a_part_no_transform_reads_is_written_out_as_the_connector_gave_it():
    """A router, a header or a Filter on the topic reads no value: the JSON text passes
    untouched (a number past 2**63, fields that vary by record, a document of mixed
    types), where reading it into Arrow would guess types."""
    route = chain(
        {
            "transforms": "r",
            "transforms.r.type": P + "RegexRouter",
            "transforms.r.regex": "topic",
            "transforms.r.replacement": "renamed",
        }
    )
    texts = [
        '{"id":1,"big":12345678901234567890,"f":1.0}',
        '{"id":2,"doc":{"k":"one"}}',
        '{"id":3,"doc":{"k":1}}',
    ]
    cols = RecordColumns(
        topic=pa.array(["topic"] * 3),
        id=pa.array(['{"i":0}', '{"i":1}', '{"i":2}']),
        record=pa.array(texts),
        offsets=pa.array(['{"i":0}', '{"i":1}', '{"i":2}']),
    )
    out = transform(route, cols, timestamps=False)
    assert out.columns.record.to_pylist() == texts and out.refused == ()
    assert set(out.columns.topic.to_pylist()) == {"renamed"}
