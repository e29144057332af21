import pytest

from sparkpipes.config import Secret
from sparkpipes.errors import ConfigError, OffsetOutOfRangeError
from sparkpipes.sources import build_source


@pytest.mark.parametrize(
    "config, text",
    [
        ({"sasl.jaas.config": "x"}, "'sasl.jaas.config' is not allowed: Java JAAS"),
        ({"plugin.library.paths": "x"}, "would run code"),
        ({"sasl.kerberos.kinit.cmd": "rm -rf /"}, "runs a shell command"),
        ({"group.id": "g"}, "does not use consumer groups"),
        ({"sasl.password": "p"}, "is a secret: give it in CREDENTIALS"),
        ({"linger.ms": 5}, "unknown or unsupported Kafka option 'linger.ms'"),
        ({"isolation.level": "dirty"}, "isolation.level must be read_committed"),
    ],
)
def test_kafka_options_are_an_allow_list(config, text):
    with pytest.raises(ConfigError) as e:
        build_source("kafka", "h:9092/t", config, {})
    assert text in str(e.value)


def test_kafka_accepts_allowed_options_and_credentials():
    src = build_source(
        "kafka",
        "a:1,b:2/events",
        {
            "security.protocol": "SASL_SSL",
            "ssl.ca.location": "/ca",
            "isolation.level": "read_committed",
        },
        {"sasl.password": Secret("pw")},
    )
    assert (src.servers, src.topic) == ("a:1,b:2", "events")
    assert src.client_config()["sasl.password"] == "pw"
    assert "pw" not in str(src.describe())


def test_bad_locations_and_unknown_sources():
    with pytest.raises(ConfigError, match="host:port/topic"):
        build_source("kafka", "no-topic", {}, {})
    with pytest.raises(ConfigError, match="unknown source 'ftp'"):
        build_source("ftp", "x", {}, {})
    with pytest.raises(ConfigError, match="'s3' is not supported yet"):
        build_source("s3", "bucket/x", {}, {})


def test_file_source_offsets_are_json_objects_and_partial_lines_wait(tmp_path):
    f = tmp_path / "a.json"
    f.write_bytes(b'{"id": 1}\n{"id": 2}\n{"id": 3')
    src = build_source("fs", str(tmp_path / "*.json"), {}, {})
    meta = src.metadata()
    assert meta.partitions() == [str(f)]
    assert meta.latest(str(f)) == {"byte": 20, "line": 2}
    c = src.consumer(str(f))
    assert c.open(meta.earliest(str(f))) is None
    got = c.fetch(10, 0.1)
    assert got.values.to_pylist() == [b'{"id": 1}', b'{"id": 2}']
    assert got.positions.to_pylist() == [0, 1]
    assert c.position() == {"byte": 20, "line": 2}
    assert len(c.fetch(10, 0.1)) == 0
    c.close()
    with open(f, "ab") as fh:
        fh.write(b"}\n")
    c = src.consumer(str(f))
    c.open({"byte": 20, "line": 2})
    assert c.fetch(10, 0.1).positions.to_pylist() == [2]
    c.close()
    c = src.consumer(str(f))
    with pytest.raises(OffsetOutOfRangeError, match="past the end"):
        c.open({"byte": 10_000, "line": 99})
    gap = src.consumer(str(f), out_of_range="earliest").open({"byte": 10_000, "line": 99})
    assert gap.resumed_at == {"byte": 0, "line": 0}


def test_file_watermark_is_found_from_the_end_and_reached_compares_bytes(tmp_path):
    f = tmp_path / "w.json"
    f.write_bytes(b"a\n" * 50_000 + b"partial")
    src = build_source("fs", str(f), {}, {})
    meta = src.metadata()
    assert meta.watermark(str(f)) == {"byte": 100_000}
    assert src.reached({"byte": 100_000, "line": 50_000}, meta.watermark(str(f)))
    assert not src.reached({"byte": 99_998, "line": 49_999}, meta.watermark(str(f)))


class _Msg:
    """Stands in for confluent_kafka.Message: no broker here reports the end of a
    partition early, so that case is replayed with stubs."""

    def __init__(self, offset, value=None, eof=False):
        self._offset, self._value, self._eof = offset, value, eof

    def offset(self):
        return self._offset

    def value(self):
        return self._value

    def error(self):
        if not self._eof:
            return None

        class _Err:
            def code(self):
                return -191  # _PARTITION_EOF

        return _Err()


class _Client:
    def __init__(self, *batches):
        self.batches = list(batches)

    def consume(self, n, timeout):  # one batch per waiting call
        return self.batches.pop(0) if self.batches and timeout else []


def test_kafka_end_of_partition_is_trusted_except_at_the_opening_offset():
    from sparkpipes.sources.kafka import KafkaPartitionConsumer, KafkaSource

    def consumer(start, *batches):
        c = KafkaPartitionConsumer(KafkaSource("h:1/t", {}, {}), 0, "fail", "p")
        c._consumer, c._start, c._next = _Client(*batches), start, start
        return c

    c = consumer(5, [_Msg(5, b"a"), _Msg(6, b"b"), _Msg(7, eof=True)])
    got = c.fetch(10, 0.1)
    assert (len(got), got.at_end, c.position()) == (2, True, 7)

    c = consumer(5, [_Msg(5, eof=True)], [_Msg(5, b"a")])
    got = c.fetch(10, 0.1)
    assert (len(got), got.at_end) == (0, False)  # may be a premature report: read on
    assert len(c.fetch(10, 0.1)) == 1 and c.position() == 6

    c = consumer(5, [_Msg(5, b"a"), _Msg(6, eof=True), _Msg(6, b"b")])
    got = c.fetch(10, 0.1)
    assert (len(got), got.at_end, c.position()) == (2, False, 7)  # records after the event
