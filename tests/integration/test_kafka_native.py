"""The native Kafka reader (librdkafka's messages copied straight into Arrow) against the
embedded broker: the records, offsets, end events and errors a user's pipeline relies on
are exactly those of confluent-kafka's Consumer."""

from __future__ import annotations

import pytest

from sparkpipes.errors import ConfigError, OffsetOutOfRangeError
from sparkpipes.sources import build_source, kafka_native
from sparkpipes.sources.kafka_consumer import _ConfluentReader


def test_the_native_reader_is_built_by_the_install():
    # the README's install compiles sources/_fetchcopy.c; without it every drain would
    # quietly fall back to the slower reader
    assert kafka_native.available()


def _drain(source, partition, start, *, native, chunk=1000):
    consumer = source.consumer(partition)
    if not native:
        consumer._new_reader = lambda: _confluent(consumer)
    consumer.open(start)
    assert isinstance(consumer._reader, kafka_native.NativeReader) == native
    values, positions, ends = [], [], 0
    try:
        while True:
            fetched = consumer.fetch(chunk, 2.0)
            values += fetched.values.to_pylist()
            positions += fetched.positions.to_pylist()
            ends += fetched.at_end
            if fetched.at_end or not len(fetched):
                return values, positions, consumer.position(), ends
    finally:
        consumer.close()


def _confluent(consumer):
    from sparkpipes.sources.kafka_client import PARTITION_CONSUMER_DEFAULTS, new_consumer

    client, consumer._watch = new_consumer(consumer.source, PARTITION_CONSUMER_DEFAULTS, eof=True)
    return _ConfluentReader(client, consumer.source.topic, consumer.partition, False)


def test_native_and_confluent_readers_return_the_same_records(broker, topic):
    records = [b'{"a": 1}', None, b"", b"\xff\x00\xfe binary", "é ünïcode".encode()] * 700
    records += [b"x" * 100_000]  # one large record among small ones
    broker.produce(topic, records, partition=1)
    source = build_source("kafka", f"{broker.bootstrap}/{topic}", {}, {})
    native = _drain(source, "1", 0, native=True)
    plain = _drain(source, "1", 0, native=False)
    assert native == plain
    values, positions, position, ends = native
    assert values == records  # tombstones are nulls, empty payloads stay empty
    assert positions == list(range(len(records)))
    assert (position, ends) == (len(records), 1)

    # from the middle, and from the end (an end reported at the opening offset is no end)
    assert _drain(source, "1", 3001, native=True)[1] == list(range(3001, len(records)))
    assert _drain(source, "1", len(records), native=True)[:3] == ([], [], len(records))


def test_a_fetch_larger_than_one_arrow_array_is_split_without_losing_a_record(broker, topic):
    from sparkpipes.sources.kafka_client import PARTITION_CONSUMER_DEFAULTS, consumer_config

    records = [f"record {i:05d} ".encode() * 10 for i in range(3_000)]  # 130 bytes each
    broker.produce(topic, records, partition=2)
    source = build_source("kafka", f"{broker.bootstrap}/{topic}", {}, {})
    conf = consumer_config(source, PARTITION_CONSUMER_DEFAULTS, eof=True)
    # the limit is 2 GiB per Arrow array; a small one shows the split on 390 kB
    reader = kafka_native.NativeReader(conf, print, print, topic, 2, max_bytes=2_500)
    reader.assign(0)
    sizes, values = [], []
    try:
        while len(values) < len(records):
            fetched = reader.fetch(1_000, 2.0)
            assert len(fetched), "records were lost"
            sizes.append(len(fetched))
            values += fetched.values.to_pylist()
            assert fetched.positions.to_pylist() == list(
                range(len(values) - len(fetched), len(values))
            )
    finally:
        reader.close()
    assert values == records
    assert max(sizes) == 2_500 // 130  # each fetch held what fits, the rest came next


def test_native_reader_reports_out_of_range_and_rejected_settings(broker, topic):
    broker.produce(topic, [b"a", b"b"], partition=0)
    source = build_source("kafka", f"{broker.bootstrap}/{topic}", {}, {})
    with pytest.raises(OffsetOutOfRangeError, match=r"offset 50 .* out of range.*0\.\.\d"):
        source.consumer("0").open(50)

    bad = build_source("kafka", f"{broker.bootstrap}/{topic}", {"fetch.wait.max.ms": "soon"}, {})
    with pytest.raises(ConfigError, match=r"rejected the configuration.*fetch\.wait\.max\.ms"):
        bad.consumer("0").open(0)


def test_executors_of_a_cluster_load_the_helper_from_the_shipped_package(tmp_path):
    """A cluster's executors import sparkpipes from the zip the engine ships
    (``ship_package``); the C helper travels in it and is loaded from there."""
    import subprocess
    import sys

    from sparkpipes.engine.spark.cluster import ship_package

    class _Context:
        def addPyFile(self, path):
            self.path = path

    class _Spark:
        sparkContext = _Context()

    spark = _Spark()
    ship_package(spark)
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); "
        "from sparkpipes.sources import kafka_native as k; "
        "assert k.__file__.startswith(sys.argv[1]), k.__file__; "
        "assert k.helper_file() is None; print(k.available())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, spark.sparkContext.path],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True"
