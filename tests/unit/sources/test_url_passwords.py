"""What each source does with a password inside a URL it is given, sealed (as a spec hands
it over: the URL ``<redacted>``, the password a ``url:<option>`` credential) or in clear
(a caller of ``build_source``): clients that take a login there get it back (JDBC, Redis,
other stream plugins); clients that do not (librdkafka, botocore, Azure, HDFS) are refused
at once with what to write instead. No message ever holds the password."""

from __future__ import annotations

import json
import pickle

import pytest

from sparkpipes.config import Secret, SourceSpec
from sparkpipes.config.urls import redact
from sparkpipes.errors import ConfigError
from sparkpipes.frontends.connect.validate import validate
from sparkpipes.sources import build_source
from sparkpipes.sources.plugin import StreamConsumerFactory
from sparkpipes.util.registry import PLUGIN_MODULES_ENV

PW = "Url-Pw-7731"
JDBC = "io.confluent.connect.jdbc.JdbcSourceConnector"
KINESIS = "com.singlestore.kafka.connect.kinesis.KinesisSourceConnector"


def sealed(kind: str, location: str, config: dict | None = None) -> SourceSpec:
    """The source options as a spec hands them to the plugin."""
    return SourceSpec(kind=kind, location=location, config=config or {})


def built(spec: SourceSpec):
    return build_source(spec.kind, spec.location, spec.config, spec.credentials)


def refused(spec: SourceSpec) -> str:
    for make in (
        lambda: built(spec),  # sealed, as from a spec
        lambda: build_source(spec.kind, *_clear(spec)),  # in clear, from a caller
    ):
        with pytest.raises(ConfigError) as e:
            make()
        assert PW not in str(e.value)
    return str(e.value)


def _clear(spec: SourceSpec) -> tuple:
    from sparkpipes.config import urls

    options = urls.revealed(spec.url_options(), spec.credentials)
    location = options.pop(urls.LOCATION)
    if spec.hosts and "url:location" in spec.credentials:
        location = urls.restore(location, spec.credentials["url:location"], bare=True)
    return location, options, {}


def test_kafka_refuses_a_user_and_password_in_the_broker_list_naming_credentials():
    for spec in (
        sealed("kafka", f"svc:{PW}@127.0.0.1:9092/t"),
        sealed("kafka", "127.0.0.1:9092/t", {"bootstrap.servers": f"svc:{PW}@127.0.0.1:9092"}),
    ):
        message = refused(spec)
        assert "holds a password: Kafka clients take no user or password in the broker list" in (
            message
        )
        assert '"sasl.username"' in message and "security.protocol" in message
        assert "svc:<redacted>@127.0.0.1:9092" in message


@pytest.mark.parametrize(
    ("kind", "location", "config", "says"),
    [
        ("s3", "bucket/p", {"endpoint_url": f"http://ak:{PW}@127.0.0.1:9000"}, "aws_access_key_id"),
        ("azure", "c/p", {"endpoint_url": f"http://ac:{PW}@127.0.0.1:10000/ac"}, "account_key"),
        ("hdfs", f"hdfs://ana:{PW}@nn:8020/out", {}, "CONFIG user names the user"),
        ("fs", f"file://ana:{PW}@host/data", {}, "FS takes no user or password"),
    ],
)
def test_object_stores_refuse_a_password_in_a_url_naming_their_credentials(
    kind, location, config, says
):
    message = refused(sealed(kind, location, config))
    assert "holds a password" in message and says in message and "<redacted>" in message


def test_kinesis_refuses_a_password_in_its_endpoint():
    spec = sealed(
        "kafkaconnect",
        "k",
        {
            "connector.class": KINESIS,
            "kinesis.stream": "s",
            "kinesis.endpoint": f"http://ak:{PW}@127.0.0.1:4566",
        },
    )
    message = refused(spec)
    assert "option 'kinesis.endpoint' 'http://ak:<redacted>@127.0.0.1:4566' holds a password" in (
        message
    )
    assert "aws.access.key.id" in message


@pytest.mark.parametrize(
    ("url", "user", "password"),
    [
        (f"jdbc:postgresql://loader:{PW}@db.example:5433/shop", "loader", PW),
        ("jdbc:mysql://db.example/shop?user=loader&password=p%40ss+1", "loader", "p@ss 1"),
        ("jdbc:mariadb://l%40x:p%3Aw@db.example/shop", "l@x", "p:w"),
    ],
)
def test_jdbc_takes_the_password_in_its_url_as_the_login(url, user, password):
    spec = sealed(
        "kafkaconnect",
        "jdbc",
        {
            "connector.class": JDBC,
            "connection.url": url,
            "mode": "incrementing",
            "incrementing.column.name": "id",
        },
    )
    assert "<redacted>" in spec.config["connection.url"]
    for src in (built(spec), build_source(spec.kind, *_clear(spec))):
        db = pickle.loads(pickle.dumps(src)).connector.settings.db  # as tasks get it
        assert (db.user, db.password.reveal()) == (user, password)
        assert password not in str(src.describe()) and PW not in repr(db)
    with pytest.raises(ConfigError, match="give different passwords") as e:
        build_source(
            spec.kind, spec.location, spec.config, {**spec.credentials, "connection.password": "x"}
        )
    assert password not in str(e.value)


class _Seen(StreamConsumerFactory):
    """A stream plugin that keeps the config it was given (no I/O)."""

    given: list = []

    def __init__(self, config) -> None:
        super().__init__(config)
        _Seen.given.append(config)

    def create_metadata_provider(self, client_id):  # pragma: no cover - not called
        raise NotImplementedError

    def create_partition_consumer(self, client_id, partition):  # pragma: no cover
        raise NotImplementedError


def test_a_stream_plugin_gets_its_url_back_as_written(monkeypatch):
    monkeypatch.setenv(PLUGIN_MODULES_ENV, __name__)  # _Seen, by its Python path
    spec = sealed(
        "stream",
        "x/t",
        {
            "streamType": "x",
            "stream.x.topic.name": "t",
            "stream.x.consumer.factory.class.name": f"{__name__}:_Seen",
            "stream.x.endpoint.url": f"https://ana:{PW}@feed.example/v1",
        },
    )
    assert spec.config["stream.x.endpoint.url"] == "https://ana:<redacted>@feed.example/v1"
    built(spec)
    assert _Seen.given[-1].get("endpoint.url") == f"https://ana:{PW}@feed.example/v1"


def test_redis_takes_the_url_password_and_names_a_bad_url_redacted():
    spec = sealed(
        "stream",
        "redis/t",
        {"streamType": "redis", "stream.redis.topic.name": "t", "stream.redis.url": ""},
    )
    with_pw = SourceSpec(
        kind="stream",
        location="redis/t",
        config={**spec.config, "stream.redis.url": f"redis://:{PW}@127.0.0.1:6379/0"},
    )
    assert built(with_pw).factory.url == f"redis://:{PW}@127.0.0.1:6379/0"
    bad = SourceSpec(
        kind="stream",
        location="redis/t",
        config={**spec.config, "stream.redis.url": f"http://:{PW}@127.0.0.1:6379/0"},
    )
    with pytest.raises(ConfigError) as e:
        built(bad)
    assert "must be a redis:// URL, got 'http://:<redacted>@127.0.0.1:6379/0'" in str(e.value)
    two = {**with_pw.config, "stream.redis.password": "other"}
    with pytest.raises(ConfigError, match="give different passwords") as e:
        built(SourceSpec(kind="stream", location="redis/t", config=two, credentials={}))
    assert PW not in str(e.value)
    assert Secret(PW) == with_pw.credentials["url:stream.redis.url"]


@pytest.mark.parametrize(
    "url",
    [
        f"jdbc:sqlserver://127.0.0.1:1433;databaseName=shop;user=sa;password={PW};encrypt=false",
        f"jdbc:sqlserver://127.0.0.1:1433;user=sa;PWD={PW}",
        f"jdbc:oracle:thin:scott/{PW}@//127.0.0.1:1521/svc",
    ],
)
def test_a_password_in_a_driver_url_is_refused_and_never_shown(url):
    """SQL Server's ``;password=`` and Oracle's ``user/password@`` are not URL syntax: the
    password cannot be sealed from there, so the config is refused, naming the key, and
    Connect's validate answer shows the URL with the password redacted."""
    assert PW not in redact(url) and "<redacted>" in redact(url)
    answer = validate(
        JDBC,
        {"connection.url": url, "mode": "incrementing", "incrementing.column.name": "id"},
    )
    assert PW not in json.dumps(answer)


def test_a_server_url_with_sql_server_properties_is_refused_without_the_password():
    url = f"jdbc:mysql://127.0.0.1:1/db;password={PW}"
    config = {"connector.class": JDBC, "connection.url": url, "mode": "bulk"}
    with pytest.raises(ConfigError, match="properties are SQL Server's") as e:
        build_source("kafkaconnect", "j", config, {})
    assert PW not in str(e.value)
    assert PW not in json.dumps(validate(JDBC, config))
