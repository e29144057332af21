"""Connection links (``CREATE LINK``, ``LOAD DATA LINK``) as SingleStore's users write
them, through a real broker: a pipeline loads from a link without knowing its
credentials, which no listing, SHOW CREATE or error shows; the link privileges
(``CREATE LINK``, ``SHOW LINK``, ``DROP LINK``) are SingleStore's."""

from __future__ import annotations

import json

import pytest

from sparkpipes.errors import AccessDeniedError, ConfigError, NotFoundError, SparkpipesError
from sparkpipes.frontends.singlestore.executor import SqlSession

CANARY = "link-Secret-0c1d"


def rows(session, text):
    return [tuple(r) for r in session.execute(text)[-1].rows]


def test_a_pipeline_loads_from_a_link_it_cannot_read(engine, broker, topic):
    broker.produce(topic, [json.dumps({"id": i}) for i in range(5)], partitions=1)
    owner = SqlSession(engine)
    config = json.dumps({"client.id": "linked", "bootstrap.servers": broker.bootstrap})
    secret = json.dumps({"sasl.password": CANARY})
    owner.execute(
        "CREATE USER ana IDENTIFIED BY 'ana-pw'; CREATE USER bo IDENTIFIED BY 'bo-pw';"
        "CREATE TABLE ev (id INT);"
        f"CREATE LINK kl AS KAFKA CONFIG '{config}' CREDENTIALS '{secret}' "
        "DESCRIPTION 'the events broker'"
    )
    bo = SqlSession(engine, user="bo")
    make = f"CREATE PIPELINE p AS LOAD DATA LINK kl '{topic}' INTO TABLE ev FORMAT JSON (id <- id)"
    owner.execute("GRANT CREATE PIPELINE, START PIPELINE, SHOW PIPELINE ON *.* TO bo")
    owner.execute("GRANT INSERT, SELECT ON ev TO bo")
    with pytest.raises(AccessDeniedError, match="SHOW LINK"):
        bo.execute(make)  # using a link needs SHOW LINK
    owner.execute("GRANT SHOW LINK ON sparkpipes.* TO bo")
    with pytest.raises(NotFoundError, match="link 'nope' does not exist"):
        bo.execute(make.replace("LINK kl", "LINK nope"))
    with pytest.raises(ConfigError, match="CONFIG and CREDENTIALS are the link's"):
        bo.execute(make.replace("INTO TABLE", "CONFIG '{}' INTO TABLE"))
    # the link decides where its credentials go: a path naming other brokers is refused
    with pytest.raises(ConfigError, match="connects to"):
        bo.execute(make.replace(f"'{topic}'", f"'127.0.0.1:1/{topic}'"))
    bo.execute(make)
    bo.execute("START PIPELINE p FOREGROUND")
    assert rows(bo, "SELECT count(*) FROM ev") == [(5,)]
    shown = rows(bo, "SHOW CREATE PIPELINE p")[0][1]
    assert f"AS LOAD DATA LINK kl '{broker.bootstrap}/{topic}'" in shown
    assert "CREDENTIALS" not in shown and CANARY not in shown
    assert rows(bo, "SHOW LINKS") == [("kl", "KAFKA", "the events broker")]
    link = rows(bo, "SHOW CREATE LINK kl")[0][1]
    assert "CREDENTIALS <CREDENTIALS REDACTED>" in link and CANARY not in link
    assert '"client.id": "linked"' in link
    everything = str(rows(owner, "SELECT * FROM information_schema.PIPELINES"))
    assert CANARY not in everything
    # the pipeline was made from the link: it keeps loading after the link is dropped
    with pytest.raises(AccessDeniedError, match="DROP LINK"):
        bo.execute("DROP LINK kl")
    owner.execute("DROP LINK kl; DROP LINK IF EXISTS kl")
    assert engine.spec("p").source.credentials["sasl.password"].reveal() == CANARY


def test_link_statements_need_their_privileges_and_kinds(engine):
    owner = SqlSession(engine)
    owner.execute("CREATE USER ana IDENTIFIED BY 'a'; CREATE USER bo IDENTIFIED BY 'b'")
    bo = SqlSession(engine, user="bo")
    for text, needs in (
        ('CREATE LINK l AS S3 CONFIG \'{"region": "x"}\'', "CREATE LINK"),
        ("SHOW LINKS", "SHOW LINK"),
        ("SHOW CREATE LINK l", "SHOW LINK"),
        ("DROP LINK IF EXISTS l", "DROP LINK"),
    ):
        with pytest.raises(AccessDeniedError, match=needs):
            bo.execute(text)
    owner.execute("GRANT CREATE LINK ON *.* TO bo")
    bo.execute('CREATE LINK l AS S3 CONFIG \'{"region": "x"}\'')
    with pytest.raises(SparkpipesError, match="already exists"):
        bo.execute("CREATE LINK l AS S3")
    with pytest.raises(ConfigError, match="a link AS MONGODB is not supported"):
        bo.execute("CREATE LINK m AS MONGODB CONFIG '{}'")
    with pytest.raises(ConfigError, match="granted ON \\*\\.\\* or ON sparkpipes\\.\\*"):
        owner.execute("GRANT SHOW LINK ON sparkpipes.t TO bo")
    # a link keeps secrets in CREDENTIALS only, and its credentials go where it says
    for config, credentials, match in (
        ({"sasl.password": "pw"}, {}, "is a secret: give it in CREDENTIALS"),
        ({"bootstrap.servers": "127.0.0.1:9"}, {"nope": "x"}, "unknown Kafka credential"),
        ({}, {"sasl.password": "pw"}, "give its brokers in CONFIG"),
    ):
        with pytest.raises(ConfigError, match=match):
            owner.execute(
                f"CREATE LINK x AS KAFKA CONFIG '{json.dumps(config)}' "
                f"CREDENTIALS '{json.dumps(credentials)}'"
            )
    url = json.dumps({"endpoint_url": "http://u:pw@127.0.0.1:9"})
    with pytest.raises(ConfigError, match="holds a password"):
        owner.execute(f"CREATE LINK x AS S3 CONFIG '{url}'")


def test_a_link_is_judged_as_the_pipeline_it_makes(engine):
    """The checks of CREATE PIPELINE read the link's kind, CONFIG and CREDENTIALS: an S3
    link without keys signs in as the server (FILE READ), as the same S3 pipeline
    written out would."""
    owner = SqlSession(engine)
    owner.execute(
        "CREATE USER ana IDENTIFIED BY 'a'; CREATE USER bo IDENTIFIED BY 'b';"
        "CREATE TABLE t (a INT);"
        'CREATE LINK s3l AS S3 CONFIG \'{"region": "us-east-1"}\';'
        "GRANT CREATE PIPELINE, SHOW LINK ON *.* TO bo; GRANT INSERT ON t TO bo"
    )
    bo = SqlSession(engine, user="bo")
    with pytest.raises(AccessDeniedError, match="FILE READ"):
        bo.execute("CREATE PIPELINE p AS LOAD DATA LINK s3l 'b/k' SKIP SOURCE CHECK INTO TABLE t")
