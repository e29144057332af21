"""Passwords inside URLs are secrets: taken out when a spec is made, by every front end
(SQL, the Python API, Pinot table configs, Kafka Connect sink configs); stored and shown
with ``<redacted>`` in their place; kept sealed among the credentials; and SHOW CREATE
PIPELINE's text run again keeps the stored password instead of storing the word."""

from __future__ import annotations

import copy
import json

import pytest

from sparkpipes.config import REDACTED, PipelineSpec, Secret, urls
from sparkpipes.config.spec import lift_stored_urls
from sparkpipes.errors import ConfigError
from sparkpipes.frontends.connect.model import load as load_connector
from sparkpipes.frontends.pinot.lowering import lower as lower_pinot
from sparkpipes.frontends.pinot.model import load_schema, load_table
from sparkpipes.frontends.singlestore import parse_one
from sparkpipes.frontends.singlestore.lowering import create_pipeline_sql, to_spec
from tests.unit.frontends.pinot.test_model import SASL_STREAM, SCHEMA, TABLE, with_stream

PW = "Pa55-w0rd@x"  # an '@' inside: the last '@' of the authority ends the user info


def lower(sql: str) -> PipelineSpec:
    return to_spec(parse_one(sql), {})


def clear(spec: PipelineSpec) -> dict[str, str]:
    return {k: v.reveal() for k, v in spec.credentials.items()}


@pytest.mark.parametrize(
    ("text", "bare", "shown", "password"),
    [
        (
            f"http://ana:{PW}@registry:8081/x?y=1",
            False,
            "http://ana:<redacted>@registry:8081/x?y=1",
            PW,
        ),
        ("redis://:pw@127.0.0.1:6379/0", False, "redis://:<redacted>@127.0.0.1:6379/0", "pw"),
        (
            "jdbc:mysql://h/db?user=u&password=p%40x",
            False,
            "jdbc:mysql://h/db?user=u&password=<redacted>",
            "p%40x",
        ),
        (
            "jdbc:postgresql://u:pw@h/db?password=pw",
            False,
            "jdbc:postgresql://u:<redacted>@h/db?password=<redacted>",
            "pw",
        ),
        ("svc:pw@h1:9092,h2:9092/topic", True, "svc:<redacted>@h1:9092,h2:9092/topic", "pw"),
        ("svc:pw@h1:9092/topic", False, "svc:pw@h1:9092/topic", None),  # not a host list
        ("http://ana@registry:8081", False, "http://ana@registry:8081", None),  # a user only
        ("http://ana:@registry:8081", False, "http://ana:@registry:8081", None),  # empty
        ("/data/a:b@c/*.json", True, "/data/a:b@c/*.json", None),  # a path, not hosts
        ("http://ana:<redacted>@registry", False, "http://ana:<redacted>@registry", None),
    ],
)
def test_what_counts_as_a_password_in_a_url(text, bare, shown, password):
    assert urls.split(text, bare=bare) == (shown, password)
    assert urls.restore(shown, password, bare=bare) == text or password is None


def test_two_different_passwords_are_refused_without_showing_either():
    with pytest.raises(ConfigError, match="the URL holds two different passwords") as e:
        urls.split("jdbc:postgresql://u:Pw-1st@h/db?password=Pw-2nd")
    assert "Pw-1st" not in str(e.value) and "Pw-2nd" not in str(e.value)


def test_login_takes_the_user_info_apart_decoded():
    shown, password = urls.split("http://a%40b:p%3Aw@registry:8081/api")
    assert urls.login(shown, Secret(password)) == ("http://registry:8081/api", "a@b", "p:w")
    assert urls.login("http://registry:8081", None) == ("http://registry:8081", None, None)


def test_sql_lifts_the_kafka_location_config_urls_and_the_registry_url():
    spec = lower(
        f"CREATE PIPELINE p AS LOAD DATA KAFKA 'svc:{PW}@127.0.0.1:9092/t' "
        f'CONFIG \'{{"client.id": "me", "endpoint_url": "http://ak:{PW}@minio:9000"}}\' '
        'CREDENTIALS \'{"sasl.password": "sasl-pw"}\' INTO TABLE t '
        f"FORMAT AVRO SCHEMA REGISTRY 'http://ana:{PW}@registry:8081'"
    )
    assert spec.source.location == "svc:<redacted>@127.0.0.1:9092/t"
    assert spec.source.config == {
        "client.id": "me",
        "endpoint_url": "http://ak:<redacted>@minio:9000",
    }
    assert spec.format.options == {"schema.registry.url": "http://ana:<redacted>@registry:8081"}
    assert clear(spec) == {
        "sasl.password": "sasl-pw",
        "url:location": PW,
        "url:endpoint_url": PW,
        "format.url:schema.registry.url": PW,
    }
    shown = create_pipeline_sql(spec)
    stored = json.dumps(spec.to_json())
    for text in (shown, stored, repr(spec), str(spec.credentials)):
        assert PW not in text and "sasl-pw" not in text
    assert "KAFKA 'svc:<redacted>@127.0.0.1:9092/t'" in shown
    assert "SCHEMA REGISTRY 'http://ana:<redacted>@registry:8081'" in shown
    # a URL's password is shown in its URL, not as a credential of its own
    assert 'CREDENTIALS \'{"sasl.password": "<redacted>"}\'' in shown
    # the stored definition and the sealed credentials give the spec back
    assert PipelineSpec.from_json(json.loads(stored), clear(spec)) == spec


def test_the_python_api_lifts_the_same_way():
    spec = PipelineSpec.build(
        name="p",
        source="s3",
        location="bucket/prefix",
        table="t",
        config={"endpoint_url": f"http://ak:{PW}@127.0.0.1:9000"},
    )
    assert spec.to_kwargs()["config"] == {"endpoint_url": "http://ak:<redacted>@127.0.0.1:9000"}
    assert clear(spec) == {"url:endpoint_url": PW}
    assert PipelineSpec.build(**spec.to_kwargs()) == spec


def test_show_create_run_again_keeps_the_stored_passwords():
    stored = lower(
        f"CREATE PIPELINE p AS LOAD DATA KAFKA '127.0.0.1:9092/t' "
        'CREDENTIALS \'{"sasl.username": "u", "sasl.password": "sasl-pw"}\' INTO TABLE t '
        f"FORMAT AVRO SCHEMA REGISTRY 'http://ana:{PW}@registry:8081'"
    )
    again = lower(create_pipeline_sql(stored))
    assert sorted(again.redacted_secrets()) == [
        ("format", "url:schema.registry.url"),
        ("source", "sasl.password"),
        ("source", "sasl.username"),
    ]
    kept = again.keep_secrets(stored)
    assert kept == stored and clear(kept) == clear(stored)
    assert kept.redacted_secrets() == []
    # a new registry host with the password still shown redacted: the password would go
    # to the new host, so it is not kept (test_keep_secrets has the rule in full)
    moved = lower(create_pipeline_sql(stored).replace("@registry:8081", "@registry2:8081"))
    with pytest.raises(ConfigError) as e:
        moved.keep_secrets(stored)
    assert "format option 'schema.registry.url' differs" in str(e.value)
    assert PW not in str(e.value) and "sasl-pw" not in str(e.value)


def test_a_redacted_secret_with_nothing_stored_is_refused_naming_it():
    again = lower(
        "CREATE PIPELINE p AS LOAD DATA KAFKA 'svc:<redacted>@h:9092/t' "
        'CONFIG \'{"endpoint_url": "http://ak:<redacted>@m"}\' '
        'CREDENTIALS \'{"sasl.password": "<redacted>"}\' INTO TABLE t'
    )
    with pytest.raises(ConfigError) as e:
        again.keep_secrets(None)
    message = str(e.value)
    assert "credential 'sasl.password', the password in the location, the password in " in message
    assert "CONFIG option 'endpoint_url' are '<redacted>'" in message
    assert "only CREATE OR REPLACE of an existing pipeline keeps its stored value" in message
    other = lower("CREATE PIPELINE p AS LOAD DATA KAFKA 'h:9092/t' INTO TABLE t")
    with pytest.raises(ConfigError, match="pipeline 'p' has no stored value to keep"):
        again.keep_secrets(other)


def test_a_pinot_table_config_seals_the_registry_url_and_shows_it_redacted():
    stream = {
        **SASL_STREAM,
        "stream.kafka.schema.registry.url": f"http://ana:{PW}@registry:8081",
        "stream.kafka.decoder.prop.schema.registry.rest.url": f"http://ana:{PW}@registry:8081",
    }
    del stream["stream.kafka.decoder.prop.schema.registry.basic.auth.user.info"]
    cfg = load_table(with_stream(stream))
    shown = json.dumps(cfg.shown())
    assert PW not in shown and "http://ana:<redacted>@registry:8081" in shown
    spec = lower_pinot(load_schema(SCHEMA), load_table(with_stream(stream, TABLE)))
    assert spec.format.options["schema.registry.url"] == "http://ana:<redacted>@registry:8081"
    assert clear(spec)["format.url:schema.registry.url"] == PW
    assert PW not in json.dumps(spec.to_json())


def test_a_pinot_plugin_url_is_sealed_and_a_broker_list_password_refused():
    stream = {
        "streamType": "redis",
        "stream.redis.consumer.type": "lowlevel",
        "stream.redis.topic.name": "events",
        "stream.redis.url": f"redis://:{PW}@127.0.0.1:6379/0",
        "stream.redis.decoder.class.name": "org.apache.pinot.plugin.inputformat.json.JSONMessageDecoder",
    }
    spec = lower_pinot(load_schema(SCHEMA), load_table(with_stream(stream, TABLE)))
    assert spec.source.config["stream.redis.url"] == "redis://:<redacted>@127.0.0.1:6379/0"
    assert clear(spec)["url:stream.redis.url"] == PW
    kafka = copy.deepcopy(SASL_STREAM)
    kafka["stream.kafka.broker.list"] = f"svc:{PW}@kafka:9092"
    with pytest.raises(ConfigError) as e:
        load_table(with_stream(kafka))
    assert "stream.kafka.broker.list 'svc:<redacted>@kafka:9092' holds a password" in str(e.value)
    assert "sasl.jaas.config" in str(e.value) and PW not in str(e.value)


def test_a_sink_connector_takes_the_url_password_as_the_login_and_shows_it_redacted():
    base = {
        "name": "n",
        "connector.class": "com.singlestore.kafka.SingleStoreSinkConnector",
        "topics": "t",
        "connection.url": f"jdbc:postgresql://loader:{PW}@127.0.0.1:5432/db",
        "value.converter": "io.confluent.connect.avro.AvroConverter",
        "value.converter.schema.registry.url": f"http://ana:{PW}@registry:8081",
    }
    cfg = load_connector(base)
    assert (cfg.user, cfg.password.reveal(), cfg.host) == ("loader", PW, "127.0.0.1")
    assert cfg.schema_registry == "http://ana:<redacted>@registry:8081"
    assert {k: v.reveal() for k, v in cfg.registry_secrets.items()} == {
        "url:schema.registry.url": PW
    }
    assert PW not in json.dumps(dict(cfg.raw)) and PW not in repr(cfg)
    assert cfg.raw["connection.url"] == "jdbc:postgresql://loader:<redacted>@127.0.0.1:5432/db"
    # the config shown back, sent again: the password is <redacted>, kept from the pipeline
    again = load_connector(dict(cfg.raw))
    assert again.password == Secret(REDACTED)
    query = load_connector(
        {**base, "connection.url": "jdbc:postgresql://h/db?user=u&password=a+b%21"}
    )
    assert (query.user, query.password.reveal()) == ("u", "a b!")


def test_a_stored_definition_of_an_older_sparkpipes_is_sealed():
    spec = lower(
        "CREATE PIPELINE p AS LOAD DATA KAFKA '127.0.0.1:9092/t' INTO TABLE t "
        "FORMAT AVRO SCHEMA REGISTRY 'http://registry:8081'"
    )
    old = spec.to_json()
    old["source"]["location"] = f"svc:{PW}@127.0.0.1:9092/t"
    old["format"]["options"]["schema.registry.url"] = f"http://ana:{PW}@registry:8081"
    new, passwords = lift_stored_urls(old)
    assert PW not in json.dumps(new)
    assert passwords == {"url:location": PW, "format.url:schema.registry.url": PW}
    back = PipelineSpec.from_json(new, passwords)
    assert back.source.location == "svc:<redacted>@127.0.0.1:9092/t"
    assert clear(back) == passwords
    assert lift_stored_urls(new) == (new, {})  # sealed once: nothing left to seal


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (
            "https://acct.blob.core.windows.net/c?sv=2022-11-02&sig=Zm9vYmFy%3D",
            "https://acct.blob.core.windows.net/c?sv=2022-11-02&sig=<redacted>",
        ),
        (
            "https://b.s3.amazonaws.com/k?X-Amz-Signature=ab12&X-Amz-Security-Token=tok9",
            "https://b.s3.amazonaws.com/k?X-Amz-Signature=<redacted>&X-Amz-Security-Token=<redacted>",
        ),
        (
            "http://u:pw@registry:8081/x?token=t0k&api_key=k3y",
            "http://u:<redacted>@registry:8081/x?token=<redacted>&api_key=<redacted>",
        ),
        (  # any spelling: hyphens, other words for a key, percent-encoded names (review R6)
            "http://h/reg?api-key=AK3&auth=AUTH4&code=CODE5&access_key=ACK6&private_token=PT7"
            "&%73ig=SIG8&v=1&keyspace=ks",
            "http://h/reg?api-key=<redacted>&auth=<redacted>&code=<redacted>&access_key="
            "<redacted>&private_token=<redacted>&%73ig=<redacted>&v=1&keyspace=ks",
        ),
    ],
)
def test_tokens_in_a_url_s_query_are_sealed_beside_its_password(text, shown):
    """A signature or a token in the query is a secret as a password is: stored and shown
    ``<redacted>``, put back in its own place for the client, never the login's."""
    got, secret = urls.split(text)
    assert got == shown and secret is not None
    assert urls.restore(got, Secret(secret)) == text
    assert urls.password_of(secret) == ("pw" if "u:pw@" in text else None)
    for word in ("Zm9vYmFy", "ab12", "tok9", "t0k", "k3y", "AK3", "AUTH4", "CODE5", "PT7", "SIG8"):
        assert word not in got
    spec = lower(
        "CREATE PIPELINE p AS LOAD DATA KAFKA '127.0.0.1:9092/t' INTO TABLE t FORMAT AVRO "
        f"SCHEMA REGISTRY '{text}'"
    )
    assert spec.format.options == {"schema.registry.url": shown}
    stored = json.dumps(spec.to_json())
    for out in (create_pipeline_sql(spec), stored, repr(spec)):
        assert not any(w in out for w in ("Zm9vYmFy", "ab12", "tok9", "t0k", "k3y"))
    assert PipelineSpec.from_json(json.loads(stored), clear(spec)) == spec
    again = lower(create_pipeline_sql(spec)).keep_secrets(spec)  # SHOW CREATE run again
    assert urls.restore(shown, again.format.credentials["url:schema.registry.url"]) == text


def test_a_secret_in_clear_beside_a_redacted_one_is_refused():
    with pytest.raises(ConfigError, match="beside one in clear") as e:
        urls.split("http://u:<redacted>@h/x?token=Tk-77")
    assert "Tk-77" not in str(e.value)


def test_each_url_of_a_list_has_its_login_taken_out():
    """A schema registry's ``url`` may list several; a login in any of them is sealed, and
    the client gets every URL without user info and the login apart (review R7)."""
    text = "http://127.0.0.1:18398, http://u:REGPW2@127.0.0.1:18397/x?pw=W9&passphrase=P1"
    shown, secret = urls.split(text)
    assert shown == (
        "http://127.0.0.1:18398, http://u:<redacted>@127.0.0.1:18397/x?pw=<redacted>"
        "&passphrase=<redacted>"
    )
    assert urls.restore(shown, secret) == text
    bare, user, password = urls.login(shown, secret)
    assert user == "u" and password == "REGPW2" and "REGPW2" not in bare and "u@" not in bare
    assert bare.startswith("http://127.0.0.1:18398, http://127.0.0.1:18397/x?pw=W9")
