"""Passwords inside URLs against the real servers on 127.0.0.1: a schema registry that asks
for basic auth (the stand-in, with confluent-kafka's real client), a PostgreSQL login in a
JDBC URL (user info or JDBC's parameters), a Redis user in ``stream.redis.url``; a Kafka
location and an S3 endpoint holding a password refused before any client is made. The
password is never in SHOW CREATE PIPELINE, information_schema, the catalog's definitions,
an error, a log line (the registry client's HTTP log and librdkafka's included) or the
process's output; SHOW CREATE PIPELINE's text run again keeps it, for the same URL only; a
catalog that stored one in clear is sealed when opened."""

from __future__ import annotations

import copy
import json
import logging
import re
import uuid

import pyarrow as pa
import pytest
import redis
import sqlalchemy as sa

from sparkpipes import Engine
from sparkpipes.catalog.views import VIEWS
from sparkpipes.errors import ConfigError, SparkpipesError
from sparkpipes.formats import build_decoder
from sparkpipes.frontends.singlestore.executor import SqlSession
from sparkpipes.testing.registry import Registry, encode
from tests.e2e.test_pinot_rest import AVRO as PINOT_AVRO
from tests.e2e.test_pinot_rest import SCHEMA as PINOT_AVRO_SCHEMA
from tests.e2e.test_pinot_rest import table as pinot_avro_table
from tests.integration.attacker import Listener
from tests.integration.databases import ScratchDb
from tests.integration.test_stream_plugins import SCHEMA as PINOT_SCHEMA
from tests.integration.test_stream_plugins import redis_stream
from tests.integration.test_stream_plugins import table as pinot_table

PW = "Url-Pw-4c1e"
ORDER = {
    "type": "record",
    "name": "order",
    "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"}],
}
GATE = 'SET GLOBAL experimental_features_config = "kafka_connect_enabled=true"'


def everything_shown(engine: Engine, sess: SqlSession, names: list[str]) -> list[str]:
    """What any surface shows of the pipelines: SHOW CREATE, every information_schema view,
    the stored definitions, the specs."""
    seen = [str(sess.execute(f"SHOW CREATE PIPELINE {n}")[0].rows) for n in names]
    seen += [str(sess.execute(f"SELECT * FROM information_schema.{v}")[0].rows) for v in VIEWS]
    seen += [json.dumps(engine.pipeline(n).definition) for n in names]
    seen += [repr(engine.spec(n)) for n in names] + [str(engine.pipelines())]
    return seen


def test_a_registry_login_in_the_url_reads_avro_and_shows_nowhere(
    broker, topic, engine, caplog, capfd
):
    caplog.set_level(logging.DEBUG)  # httpx logs each request's URL at INFO
    with Registry(user_info=f"ana:{PW}") as reg:
        sid = reg.register(ORDER)
        broker.produce(topic, [encode(sid, ORDER, {"id": i, "name": f"n{i}"}) for i in range(20)])
        url = f"http://ana:{PW}@127.0.0.1:{reg.port}"
        sess = SqlSession(engine)
        sess.execute("CREATE TABLE orders (id BIGINT, name TEXT)")
        sess.execute(
            f"CREATE PIPELINE av AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}' "
            f"INTO TABLE orders FORMAT AVRO SCHEMA REGISTRY '{url}' (id <- id, name <- name)"
        )
        sess.execute("START PIPELINE av FOREGROUND")
        assert sess.execute("SELECT count(*) FROM orders")[0].rows == [(20,)]

        shown = sess.execute("SHOW CREATE PIPELINE av")[0].rows[0][1]
        redacted = f"http://ana:<redacted>@127.0.0.1:{reg.port}"
        assert f"SCHEMA REGISTRY '{redacted}'" in shown
        # the text run again (as OR REPLACE) keeps the sealed password: it still logs in
        sess.execute(shown.replace("CREATE PIPELINE", "CREATE OR REPLACE PIPELINE"))
        assert engine.catalog.pipelines.credentials("av")["format.url:schema.registry.url"] == PW
        broker.produce(topic, [encode(sid, ORDER, {"id": 20 + i, "name": "b"}) for i in range(5)])
        sess.execute("START PIPELINE av FOREGROUND")
        assert sess.execute("SELECT count(*) FROM orders")[0].rows == [(25,)]
        # … but run as a new pipeline, there is no password to keep: refused, named
        with pytest.raises(SparkpipesError) as e:
            sess.execute(shown.replace("PIPELINE av", "PIPELINE av2"))
        assert "the password in format option 'schema.registry.url' is '<redacted>'" in str(e.value)

        # the registry client in this process: its HTTP log lines show the URL, not the login
        spec = engine.spec("av")
        schema = engine.table_arrow("orders").schema
        one = pa.array([encode(sid, ORDER, {"id": 1, "name": "x"})], pa.binary())
        dec = build_decoder(
            "avro", schema, spec.format.mapping, None, spec.format.decoder_options()
        )
        assert dec.decode(one).table.column("id").to_pylist() == [1]
        requests = [r.getMessage() for r in caplog.records if r.name.startswith("httpx")]
        assert any(f"127.0.0.1:{reg.port}/schemas/ids/{sid}" in m for m in requests), requests
        # a wrong password: refused by the registry, named without either password
        options = {**spec.format.decoder_options(), "url:schema.registry.url": "Wrong-Pw-1"}
        wrong = build_decoder("avro", schema, spec.format.mapping, None, options)
        with pytest.raises(SparkpipesError) as e:
            wrong.decode(one)
        assert f"schema registry at {redacted}" in str(e.value) and "Unauthorized" in str(e.value)
        assert "Wrong-Pw-1" not in str(e.value)
        assert reg.refused >= 1

        seen = [*everything_shown(engine, sess, ["av"]), str(e.value)]
    seen += [r.getMessage() for r in caplog.records]
    seen += list(capfd.readouterr())
    text = "\n".join(seen)
    assert PW not in text
    assert "<redacted>" in text


def test_a_kafka_location_or_s3_endpoint_holding_a_password_is_refused_and_kept_nowhere(
    broker, topic, s3_server, engine, caplog, capfd
):
    caplog.set_level(logging.DEBUG)
    sess = SqlSession(engine)
    sess.execute("CREATE TABLE t (a BIGINT)")
    seen: list[str] = []
    for stmt, says in (
        (
            f"CREATE PIPELINE k AS LOAD DATA KAFKA 'svc:{PW}@{broker.bootstrap}/{topic}' "
            "INTO TABLE t",
            f"the location 'svc:<redacted>@{broker.bootstrap}/{topic}' holds a password: "
            "Kafka clients take no user or password in the broker list",
        ),
        (
            f"CREATE PIPELINE k AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}' "
            f'CONFIG \'{{"bootstrap.servers": "svc:{PW}@{broker.bootstrap}"}}\' '
            "SKIP SOURCE CHECK INTO TABLE t",
            "option 'bootstrap.servers' 'svc:<redacted>@",
        ),
        (
            "CREATE PIPELINE s AS LOAD DATA S3 'bucket/x' "
            f'CONFIG \'{{"endpoint_url": "http://ak:{PW}@127.0.0.1:{s3_server.port}"}}\' '
            'CREDENTIALS \'{"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}\' '
            "INTO TABLE t",
            f"option 'endpoint_url' 'http://ak:<redacted>@127.0.0.1:{s3_server.port}' holds a "
            "password: S3 takes no user or password in a URL",
        ),
    ):
        with pytest.raises(SparkpipesError) as e:
            sess.execute(stmt)
        assert says in str(e.value), str(e.value)
        seen += [str(e.value), repr(e.value.to_dict())]
    assert engine.pipelines() == []
    seen += [r.getMessage() for r in caplog.records] + list(capfd.readouterr())
    assert PW not in "\n".join(seen)


@pytest.mark.parametrize("form", ["user info", "parameters"])
def test_a_jdbc_login_in_the_connection_url_reads_the_table(form, engine, caplog, capfd):
    caplog.set_level(logging.DEBUG)
    db = ScratchDb("postgresql")
    user = f"sp_url_{uuid.uuid4().hex[:6]}"
    try:
        t = db.name("orders")
        db.run(f"CREATE TABLE {t} (id BIGINT NOT NULL PRIMARY KEY, name VARCHAR(20))")
        db.run(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b'), (3, 'c')")
        db.run(f"CREATE ROLE {user} LOGIN PASSWORD '{PW}'")
        db.run(f"GRANT USAGE ON SCHEMA {db.schema} TO {user}")
        db.run(f"GRANT SELECT ON ALL TABLES IN SCHEMA {db.schema} TO {user}")
        if form == "user info":  # as psycopg2 and PyMySQL URLs carry a login
            url = db.url.replace("://", f"://{user}:{PW}@", 1)
        else:  # JDBC's own parameters
            url = f"{db.url}?user={user}&password={PW}"
        cfg = {
            "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
            "connection.url": url,
            "mode": "incrementing",
            "incrementing.column.name": "id",
            "schema.pattern": db.schema,
        }
        sess = SqlSession(engine)
        sess.execute(GATE)
        sess.execute(
            f"CREATE INFERRED PIPELINE jp AS LOAD DATA KAFKACONNECT 'jdbc' "
            f"CONFIG '{json.dumps(cfg)}' FORMAT AVRO"
        )
        sess.execute("START PIPELINE jp FOREGROUND")
        rows = sess.execute("SELECT record::%id FROM jp")[0].rows
        assert sorted(int(r[0]) for r in rows) == [1, 2, 3]
        assert engine.catalog.pipelines.credentials("jp") == {"url:connection.url": PW}
        seen = everything_shown(engine, sess, ["jp"])
    finally:
        db.run(f"DROP OWNED BY {user}")
        db.run(f"DROP ROLE IF EXISTS {user}")
        db.drop()
    seen += [r.getMessage() for r in caplog.records] + list(capfd.readouterr())
    assert PW not in "\n".join(seen)
    assert "<redacted>" in "\n".join(seen)


def test_a_sink_connector_logs_in_with_the_passwords_in_its_urls(broker, engine, caplog, capfd):
    caplog.set_level(logging.DEBUG)
    db = ScratchDb("postgresql")
    user = f"sp_url_{uuid.uuid4().hex[:6]}"
    first, later = f"{user}_a", f"{user}_b"  # topics (and tables) of one topics.regex

    def loaded(table: str) -> list[tuple]:
        for p in engine.connectors.get("pg-sink")["pipelines"]:
            engine.run_batches(p, 5, until_idle=True)
        return sorted(db.rows(f"SELECT id, name FROM {db.name(table)}"))

    try:
        db.run(f"CREATE ROLE {user} LOGIN PASSWORD '{PW}'")
        db.run(f"GRANT USAGE, CREATE ON SCHEMA {db.schema} TO {user}")
        with Registry(user_info=f"ana:{PW}") as reg:
            sid = reg.register(ORDER)

            def produce(topic: str, ids: range) -> None:
                broker.produce(topic, [encode(sid, ORDER, {"id": i, "name": "n"}) for i in ids])

            broker.create_topic(first, 1)
            produce(first, range(8))
            cfg = {
                "connector.class": "com.singlestore.kafka.SingleStoreSinkConnector",
                "topics.regex": f"{user}_.*",
                "bootstrap.servers": broker.bootstrap,
                "connection.url": f"jdbc:postgresql://{user}:{PW}@{db.hostport}/{db.database}"
                f"?currentSchema={db.schema}",
                "value.converter": "io.confluent.connect.avro.AvroConverter",
                "value.converter.schema.registry.url": f"http://ana:{PW}@127.0.0.1:{reg.port}",
            }
            # the table is made from the registry's schema of the first record
            engine.connectors.create({"name": "pg-sink", "config": cfg})
            assert loaded(first) == [(i, "n") for i in range(8)]
            shown = engine.connectors.config("pg-sink")
            assert shown["connection.url"].startswith(f"jdbc:postgresql://{user}:<redacted>@")
            assert shown["value.converter.schema.registry.url"].startswith("http://ana:<redacted>@")
            # the config as shown, sent back (PUT …/config): both passwords are kept
            engine.connectors.create({"name": "pg-sink", "config": shown}, replace=True)
            produce(first, range(8, 10))
            assert loaded(first) == [(i, "n") for i in range(10)]
            # a topic that comes to match later: its pipeline logs in with the sealed ones
            broker.create_topic(later, 1)
            produce(later, range(3))
            assert engine.connectors.refresh()
            assert loaded(later) == [(i, "n") for i in range(3)]
            assert reg.refused == 0
        seen = [
            json.dumps(engine.connectors.info("pg-sink")),
            json.dumps(engine.connectors.status("pg-sink")),
            *everything_shown(
                engine, SqlSession(engine), engine.connectors.get("pg-sink")["pipelines"]
            ),
        ]
        engine.connectors.delete("pg-sink")
    finally:
        db.run(f"DROP OWNED BY {user}")
        db.run(f"DROP ROLE IF EXISTS {user}")
        db.drop()
    seen += [r.getMessage() for r in caplog.records] + list(capfd.readouterr())
    assert PW not in "\n".join(seen)


def test_a_redis_login_in_stream_redis_url_reads_the_stream(engine, caplog, capfd):
    r = redis.Redis(host="127.0.0.1", port=6379)
    user, topic = f"sp_url_{uuid.uuid4().hex[:6]}", f"sp-{uuid.uuid4().hex[:8]}"
    r.acl_setuser(user, enabled=True, passwords=[f"+{PW}"], keys=["*"], commands=["+@all"])
    try:
        for i in range(5):
            r.xadd(topic, {"value": json.dumps({"id": i, "name": f"n{i}", "ts": i})})
        stream = redis_stream(
            topic, **{"stream.redis.url": f"redis://{user}:{PW}@127.0.0.1:6379/0"}
        )
        engine.pinot.add(pinot_table(stream), PINOT_SCHEMA)
        engine.run_batches("t_REALTIME", 3, until_idle=True)
        assert sorted(engine.table_arrow("t").column("id").to_pylist()) == [0, 1, 2, 3, 4]
        sess = SqlSession(engine)
        shown = everything_shown(engine, sess, ["t_REALTIME"])
        shown.append(json.dumps(engine.pinot.config("t")))
        assert any(f"redis://{user}:<redacted>@127.0.0.1:6379/0" in s for s in shown)
    finally:
        r.acl_deluser(user)
        for key in r.scan_iter(f"{topic}*"):
            r.delete(key)
    shown += [m.getMessage() for m in caplog.records] + list(capfd.readouterr())
    assert PW not in "\n".join(shown)


def test_a_catalog_that_kept_a_url_password_in_clear_is_sealed_when_opened(tmp_path):
    wh = tmp_path / "wh"
    with Engine(wh) as eng:
        sess = SqlSession(eng)
        sess.execute("CREATE TABLE t (id BIGINT, name TEXT)")
        sess.execute(
            "CREATE PIPELINE old AS LOAD DATA KAFKA '127.0.0.1:1/t' "
            'CREDENTIALS \'{"sasl.password": "sasl-pw"}\' SKIP SOURCE CHECK INTO TABLE t '
            "FORMAT AVRO SCHEMA REGISTRY 'http://registry:8081'"
        )
    # what an older sparkpipes (catalog schema version 3) stored: the passwords in clear
    db = sa.create_engine(f"sqlite:///{wh / 'catalog.db'}")
    with db.begin() as c:
        definition = json.loads(
            c.execute(sa.text("SELECT definition FROM sp_pipelines WHERE name = 'old'")).scalar()
        )
        definition["source"]["location"] = f"svc:{PW}@127.0.0.1:1/t"
        definition["format"]["options"]["schema.registry.url"] = f"http://ana:{PW}@registry:8081"
        c.execute(
            sa.text("UPDATE sp_pipelines SET definition = :d WHERE name = 'old'"),
            {"d": json.dumps(definition)},
        )
        connector = {"config": {"value.converter.schema.registry.url": f"http://a:{PW}@r:8081"}}
        c.execute(
            sa.text(
                "INSERT INTO sp_connectors (name, definition, created_at) "
                "VALUES ('c', :d, CURRENT_TIMESTAMP)"
            ),
            {"d": json.dumps(connector)},
        )
        c.execute(sa.text("UPDATE sp_meta SET value = '3' WHERE key = 'schema'"))
    with Engine(wh) as eng:
        creds = eng.catalog.pipelines.credentials("old")
        assert creds == {
            "sasl.password": "sasl-pw",
            "url:location": PW,
            "format.url:schema.registry.url": PW,
        }
        shown = SqlSession(eng).execute("SHOW CREATE PIPELINE old")[0].rows[0][1]
        assert "KAFKA 'svc:<redacted>@127.0.0.1:1/t'" in shown
        assert "SCHEMA REGISTRY 'http://ana:<redacted>@registry:8081'" in shown
        assert eng.catalog.connectors.get("c")["config"] == {
            "value.converter.schema.registry.url": "http://a:<redacted>@r:8081"
        }
    with db.connect() as c:
        stored = c.execute(sa.text("SELECT definition, credentials FROM sp_pipelines")).one()
        version = c.execute(sa.text("SELECT value FROM sp_meta WHERE key = 'schema'")).scalar()
        connectors = c.execute(sa.text("SELECT definition FROM sp_connectors")).scalar()
    db.dispose()
    assert PW not in stored.definition and stored.credentials.startswith("fernet:")
    assert PW not in connectors and int(version) >= 4


def test_a_url_password_given_back_goes_only_to_the_same_registry(broker, topic, engine):
    """SHOW CREATE PIPELINE's text run again keeps a registry's password while the
    registry's URL is as stored (the batch interval and the table may change; it still
    logs in); with the registry's host, port or path changed it is refused, and neither the
    statement nor a batch after it reaches the listener standing in for the new host."""
    with Registry(user_info=f"ana:{PW}") as reg, Listener() as evil:
        sid = reg.register(ORDER)
        broker.produce(topic, [encode(sid, ORDER, {"id": i, "name": "n"}) for i in range(4)])
        sess = SqlSession(engine)
        sess.execute(
            "CREATE TABLE orders (id BIGINT, name TEXT); CREATE TABLE o2 (id BIGINT, name TEXT)"
        )
        sess.execute(
            f"CREATE PIPELINE av AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}' INTO TABLE "
            f"orders FORMAT AVRO SCHEMA REGISTRY 'http://ana:{PW}@127.0.0.1:{reg.port}' "
            "(id <- id, name <- name)"
        )
        again = (
            sess.execute("SHOW CREATE PIPELINE av")[0]
            .rows[0][1]
            .replace("CREATE PIPELINE", "CREATE OR REPLACE PIPELINE")
        )
        seen = []
        for moved in (
            again.replace(f"127.0.0.1:{reg.port}", evil.hostport),
            again.replace(f"127.0.0.1:{reg.port}'", f"127.0.0.1:{reg.port}/other'"),
            again.replace("http://ana:", "http://bob:"),
        ):
            with pytest.raises(ConfigError) as e:
                sess.execute(moved)
            assert (
                "the password in format option 'schema.registry.url' is '<redacted>' but "
                "format option 'schema.registry.url' differs"
            ) in str(e.value)
            seen.append(str(e.value))
        sess.execute(  # the same registry: kept, whatever else changed
            again.replace("BATCH_INTERVAL 2500", "BATCH_INTERVAL 10").replace(
                "INTO TABLE orders", "INTO TABLE o2"
            )
        )
        assert engine.catalog.pipelines.credentials("av") == {"format.url:schema.registry.url": PW}
        sess.execute("START PIPELINE av FOREGROUND")
        assert sess.execute("SELECT count(*) FROM o2")[0].rows == [(4,)]
        assert reg.refused == 0 and evil.connections == 0
    assert all(PW not in s for s in seen)


def test_a_pinot_tables_registry_password_is_not_sent_to_a_new_registry(broker, topic, engine):
    """A Pinot table whose decoder logs in to the registry with a password in its URL: its
    pipeline redefined by SQL keeps the password for the same registry only; a table config
    shown back (``GET /tables/{name}``, the password ``<redacted>``) added again under
    another name with the registry moved is refused, nothing made and nothing sent."""
    with Registry(user_info=f"pinot:{PW}") as reg, Listener() as evil:
        sid = reg.register(PINOT_AVRO)
        rows = [
            encode(
                sid, PINOT_AVRO, {"studentID": i, "firstName": "f", "score": 1.0, "timestamp": i}
            )
            for i in range(3)
        ]
        broker.produce(topic, rows)
        cfg = pinot_avro_table(broker, topic, f"http://pinot:{PW}@127.0.0.1:{reg.port}")
        streams = cfg["tableIndexConfig"]["streamConfigs"]
        del streams["stream.kafka.decoder.prop.schema.registry.basic.auth.user.info"]
        engine.pinot.add(cfg, PINOT_AVRO_SCHEMA)
        engine.run_batches("transcript_REALTIME", 3, until_idle=True)
        assert engine.table_arrow("transcript").num_rows == 3

        shown = copy.deepcopy(engine.pinot.config("transcript"))
        registry = f"http://pinot:<redacted>@127.0.0.1:{reg.port}"
        shown_streams = shown["tableIndexConfig"]["streamConfigs"]
        assert shown_streams["stream.kafka.schema.registry.url"] == registry
        for key in (
            "stream.kafka.schema.registry.url",
            "stream.kafka.decoder.prop.schema.registry.rest.url",
        ):
            shown_streams[key] = f"http://pinot:<redacted>@{evil.hostport}"
        shown["tableName"] = "transcript2"
        with pytest.raises(ConfigError) as e:
            engine.pinot.add(shown)
        assert "the password in format option 'schema.registry.url' is '<redacted>'" in str(e.value)
        assert "transcript2" not in engine.pinot.names() + engine.tables()

        sess = SqlSession(engine)
        text = sess.execute("SHOW CREATE PIPELINE transcript_REALTIME")[0].rows[0][1]
        again = text.replace("CREATE PIPELINE", "CREATE OR REPLACE PIPELINE")
        # made by SQL, the pipeline reads Avro as SingleStore does: a union is read by its
        # branch (``score::float``), where ``score`` alone is the union's JSON text
        again = re.sub(r"`?score`? <- (?:%::)?`?score`?(?=[,)\s])", "score <- score::float", again)
        assert "score <- score::float" in again
        assert f"SCHEMA REGISTRY '{registry}'" in again
        with pytest.raises(ConfigError, match=r"format option 'schema\.registry\.url' differs"):
            sess.execute(again.replace(f"127.0.0.1:{reg.port}", evil.hostport))
        sess.execute(again.replace("BATCH_INTERVAL 2500", "BATCH_INTERVAL 10"))
        creds = engine.catalog.pipelines.credentials("transcript_REALTIME")
        assert creds == {"format.url:schema.registry.url": PW}
        broker.produce(topic, rows)
        engine.run_batches("transcript_REALTIME", 3, until_idle=True)
        assert engine.table_arrow("transcript").num_rows == 6
        assert reg.refused == 0 and evil.connections == 0
    assert PW not in str(e.value)
