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
        ({"ssl.key.pem": "-----BEGIN PRIVATE KEY-----"}, "'ssl.key.pem' is a secret"),
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
        {"sasl.password": Secret("pw"), "ssl.key.pem": Secret("-----BEGIN PRIVATE KEY-----k")},
    )
    assert (src.servers, src.topic) == ("a:1,b:2", "events")
    assert src.client_config()["sasl.password"] == "pw"
    assert src.client_config()["ssl.key.pem"] == "-----BEGIN PRIVATE KEY-----k"
    assert "pw" not in str(src.describe()) and "PRIVATE" not in str(src.describe())


def test_bad_locations_and_unknown_sources():
    with pytest.raises(ConfigError, match="host:port/topic"):
        build_source("kafka", "no-topic", {}, {})
    with pytest.raises(ConfigError, match="unknown source 'ftp'"):
        build_source("ftp", "x", {}, {})
    with pytest.raises(ConfigError, match="'gcs' is not supported yet"):
        build_source("gcs", "bucket/x", {}, {})


def _drain(c):
    values, positions = [], []
    while True:
        got = c.fetch(10, 0.1)
        values += got.values.to_pylist()
        positions += got.positions.to_pylist()
        if got.at_end:
            return values, positions


def test_file_offsets_are_bytes_and_a_fresh_partial_line_waits(tmp_path):
    f = tmp_path / "a.json"
    f.write_bytes(b'{"id": 1}\n{"id": 2}\n{"id": 3')
    src = build_source("fs", str(tmp_path / "*.json"), {}, {})
    meta = src.metadata()
    assert meta.partitions() == [str(f)]
    assert meta.latest(str(f)) == {"byte": 28}  # the size: what there is to read
    c = src.consumer(str(f))
    assert c.open(meta.earliest(str(f))) is None
    assert _drain(c) == ([b'{"id": 1}', b'{"id": 2}'], [0, 10])
    assert c.position() == {"byte": 20}  # the last line is still being written
    c.close()
    with open(f, "ab") as fh:
        fh.write(b"}\n")
    c = src.consumer(str(f))
    c.open({"byte": 20})
    assert _drain(c) == ([b'{"id": 3}'], [20])
    c.close()
    c = src.consumer(str(f))
    with pytest.raises(OffsetOutOfRangeError, match="past the end"):
        c.open({"byte": 10_000})
    gap = src.consumer(str(f), out_of_range="earliest").open({"byte": 10_000})
    assert gap.resumed_at == {"byte": 0}


def test_a_settled_file_has_its_last_line_loaded_without_a_newline(tmp_path):
    import os

    f = tmp_path / "a.csv"
    f.write_bytes(b"1,a\n2,b")
    os.utime(f, (1, 1))  # untouched for longer than SETTLE_S
    src = build_source("fs", str(f), {}, {})
    c = src.consumer(str(f))
    c.open({"byte": 0})
    assert _drain(c) == ([b"1,a", b"2,b"], [0, 4])
    assert c.position() == {"byte": 7} and src.reached(c.position(), {"byte": 7})


def test_split_ranges_read_each_line_once_and_merge_to_the_end(tmp_path):

    f = tmp_path / "w.json"
    lines = [b'{"n": %d}' % i for i in range(5000)]
    f.write_bytes(b"\n".join(lines) + b"\n")
    size = f.stat().st_size
    src = build_source("fs", str(f), {}, {})
    ranges = src.split(str(f), {"byte": 0}, {"byte": size}, size, size // 7)
    assert len(ranges) == 1  # below the 8 MiB floor a split is not worth a task
    src = build_source("fs", str(f), {"min_split_bytes": 1}, {})
    ranges = src.split(str(f), {"byte": 0}, {"byte": size}, size, size // 7)
    assert len(ranges) == 8  # ceil(size / (size // 7))
    got, ends = [], []
    for lo, hi in ranges:
        c = src.consumer(str(f))
        c.open(lo, hi)
        got += _drain(c)[0]
        ends.append(c.position())
        c.close()
    assert got == lines
    assert src.merge(str(f), ends) == {"byte": size}


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

            def str(self):
                return "Broker: No more messages"

        return _Err()


class _Client:
    def __init__(self, *batches):
        self.batches = list(batches)

    def consume(self, n, timeout):  # one batch per waiting call
        return self.batches.pop(0) if self.batches and timeout else []


def test_kafka_end_of_partition_is_trusted_except_at_the_opening_offset():
    from sparkpipes.sources.kafka import KafkaSource
    from sparkpipes.sources.kafka_consumer import KafkaPartitionConsumer, _ConfluentReader

    def consumer(start, *batches):
        c = KafkaPartitionConsumer(KafkaSource("h:1/t", {}, {}), 0, "fail", "p")
        c._reader = _ConfluentReader(_Client(*batches), "t", 0, False)
        c._start, c._next = start, start
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
