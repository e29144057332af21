"""A user and password in the schema registry's URL are the registry's basic auth, as
confluent-kafka's client takes them, handed to it apart from the URL (so the URL its HTTP
log lines and errors show holds none); a login it cannot take is refused at CREATE PIPELINE
(the decoder is built then), naming what to change and never the password. The requests
themselves, against a registry that asks for the login, are in
tests/integration/test_url_secrets.py."""

from __future__ import annotations

import pickle

import pyarrow as pa
import pytest

from sparkpipes.config import FormatSpec
from sparkpipes.errors import ConfigError
from sparkpipes.formats import build_decoder
from sparkpipes.formats.avro import registry_conf

PW = "Reg-Pw:9@x"
SCHEMA = pa.schema([pa.field("id", pa.int64())])


def decoder(url: str, **options: str):
    spec = FormatSpec(kind="avro", options={"schema.registry.url": url, **options})
    return spec, build_decoder("avro", SCHEMA, (), None, spec.decoder_options())


def test_the_url_login_becomes_basic_auth_and_the_url_loses_it():
    spec, dec = decoder(f"http://ana:{PW}@127.0.0.1:8081/base")
    assert dec.url == "http://ana:<redacted>@127.0.0.1:8081/base"
    conf = registry_conf(spec.options["schema.registry.url"], spec.decoder_options())
    assert conf == {"url": "http://127.0.0.1:8081/base", "basic.auth.user.info": f"ana:{PW}"}
    back = pickle.loads(pickle.dumps(dec))  # to the executors, which need the login
    assert back.url == dec.url and back.options == dec.options
    assert PW not in repr(spec) and PW not in str(spec.options)


def test_a_url_in_clear_and_percent_encoding_are_taken_as_the_client_would():
    conf = registry_conf("https://a%40b:p%2Fw@registry.example")
    assert conf == {"url": "https://registry.example", "basic.auth.user.info": "a@b:p/w"}
    assert registry_conf("http://registry:8081") == {"url": "http://registry:8081"}


@pytest.mark.parametrize(
    ("url", "options", "message"),
    [
        (
            f"http://ana:{PW}@r:8081",
            {"schema.registry.basic.auth.user.info": "ana:other"},
            "given twice, in its URL and in basic.auth.user.info",
        ),
        (f"http://r:8081/?password={PW}", {}, "not as a parameter"),
        ("http://ana:<redacted>@r:8081", {}, "shows its password as <redacted> and none is stored"),
    ],
)
def test_a_login_the_client_cannot_take_is_refused_when_the_decoder_is_built(url, options, message):
    with pytest.raises(ConfigError, match=message) as e:
        decoder(url, **options)
    assert PW not in str(e.value)
