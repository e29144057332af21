"""The SingleStore corpus run, not only parsed: each source's ``CREATE TABLE``, ``CREATE
PROCEDURE``, ``CREATE PIPELINE`` and ``ALTER PIPELINE`` statements, in that order, on
one engine per source (``tests/corpus/singlestore``), with sources rewritten to loopback:
a Kafka location to the test broker (its topic made first; the remote's TLS and SASL
settings dropped), an S3 one to moto (its bucket made first, with moto's endpoint and
keys). Every statement runs, or fails with an error that names what is missing here — a
construct "not supported", a table, procedure, link or database the corpus does not hold,
a file of the remote machine — never a bare syntax error or a traceback. A floor of
statements that run keeps the count honest as the corpus grows."""

from __future__ import annotations

import collections
import dataclasses
import json
import re

from sparkpipes import Engine
from sparkpipes.errors import SparkpipesError
from sparkpipes.frontends.singlestore import parse
from sparkpipes.frontends.singlestore.executor import SqlSession
from tests.unit.frontends.singlestore.test_corpus import GAPS, ITEMS

RUN = ("create_table", "create_procedure", "create_pipeline", "alter_pipeline")

#: what an error may name: something missing here, never a fault of the statement's reading
EXPLAINED = re.compile(
    r"not supported|does not exist|Unknown database|ssl\.|certificate|"
    r"DECLARE|INFERRED PIPELINE infers"
)
#: at least this many of each kind run (the counts of 2026-11-26: raise them as more runs)
FLOOR = {"create_table": 55, "create_procedure": 3, "create_pipeline": 33}


def _groups() -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = collections.defaultdict(list)
    for item in ITEMS.values():
        if item["kind"] in RUN and item["id"] not in GAPS:
            repo = item["source"].split("@")[0].split(":")[1] if ":" in item["source"] else "x"
            out[repo].append(item)
    # as a user runs a source's scripts: its tables, then procedures, then pipelines
    return {repo: sorted(items, key=lambda i: RUN.index(i["kind"])) for repo, items in out.items()}


def _loopback(sql: str, broker, s3_server) -> str:
    """A CREATE PIPELINE's source moved to the loopback servers, the rest as written."""
    (stmt,) = parse(sql)
    if stmt.source == "KAFKA":
        topic = stmt.location.rsplit("/", 1)[-1] or "t"
        if topic not in broker.admin().list_topics(timeout=10).topics:
            broker.create_topic(topic, 1)
        stmt = dataclasses.replace(
            stmt, location=f"{broker.bootstrap}/{topic}", config=None, credentials=None
        )
    elif stmt.source == "S3":
        bucket = stmt.location.removeprefix("s3://").split("/", 1)[0].lower()
        s3_server.create_bucket(bucket)
        config = {**json.loads(stmt.config or "{}"), "endpoint_url": s3_server.endpoint_url}
        config["region"] = "us-east-1"
        keys = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
        stmt = dataclasses.replace(stmt, config=json.dumps(config), credentials=json.dumps(keys))
    return stmt.to_sql()


def test_each_statement_runs_or_names_what_is_missing(tmp_path, broker, s3_server):
    ran: collections.Counter = collections.Counter()
    unexplained = []
    for i, (repo, items) in enumerate(sorted(_groups().items())):
        engine = Engine(tmp_path / f"w{i}")
        try:
            sql = SqlSession(engine)
            for item in items:
                text = item["sql"].strip()
                if item["kind"] == "create_pipeline" and "LOAD DATA LINK" not in text.upper():
                    text = _loopback(text, broker, s3_server)
                try:
                    sql.execute(text)
                    ran[item["kind"]] += 1
                except SparkpipesError as e:
                    if not EXPLAINED.search(str(e)):
                        unexplained.append(f"{item['id']} ({repo}): {str(e)[:300]}")
        finally:
            engine.close()
    assert unexplained == []
    assert {k: ran[k] for k in FLOOR} == {k: max(ran[k], n) for k, n in FLOOR.items()}, ran
