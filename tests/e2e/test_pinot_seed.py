"""Seed 002 step by step with sparkpipes in place of Pinot: the seed's
``schema-stream.json`` and ``table-config-stream.json`` (tests/e2e/pinot/, verbatim but for
the broker address), a datagen like the seed's into topic ``events``, ``sparkpipes
AddTable … -exec``, then a query over ``events`` returns the rows."""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import subprocess
import sys
import uuid
from pathlib import Path

from sparkpipes import Engine

SEED = Path(__file__).parent / "pinot"


def cli(*args, wh, stdin=None):
    return subprocess.run(
        [sys.executable, "-m", "sparkpipes", "--warehouse", str(wh), *args],
        capture_output=True,
        text=True,
        timeout=300,
        input=stdin,
        env={**os.environ, "SPARKPIPES_SPARK_MASTER": "local[2]"},
    )


def datagen(n: int, start: dt.datetime) -> tuple[list[str], dict[str, tuple[int, dt.datetime]]]:
    """Records as seed 002's datagen.py prints them: ``ts`` as the script formats it
    (ISO text) for half of them and as epoch milliseconds (the seed's sample output) for
    the other half."""
    out, want = [], {}
    for i in range(n):
        ts = start + dt.timedelta(milliseconds=37 * i)
        ident, count = str(uuid.uuid4()), random.randint(0, 1000)
        stamp = ts.strftime("%Y-%m-%dT%H:%M:%S.%fZ") if i % 2 else int(ts.timestamp() * 1000)
        out.append(json.dumps({"ts": stamp, "uuid": ident, "count": count}))
        want[ident] = (count, ts.replace(microsecond=ts.microsecond // 1000 * 1000))
    return out, want


def test_seed_002_files_through_addtable_then_a_query(broker, tmp_path):
    try:
        broker.create_topic("events", 2)
    except Exception:  # a rerun on the same broker: the topic is there
        pass
    schema = tmp_path / "schema-stream.json"
    schema.write_text((SEED / "schema-stream.json").read_text())
    table = tmp_path / "table-config-stream.json"
    text = (SEED / "table-config-stream.json").read_text()
    assert '"stream.kafka.broker.list": "kafka:9092"' in text
    table.write_text(text.replace("kafka:9092", broker.bootstrap))
    records, want = datagen(600, dt.datetime(2026, 11, 23, 9, 30, tzinfo=dt.UTC))
    broker.produce("events", records, partitions=2)
    wh = tmp_path / "wh"
    args = ["AddTable", "-schemaFile", str(schema), "-tableConfigFile", str(table)]

    checked = cli(*args, wh=wh)
    assert checked.returncode == 0, checked.stderr
    plan = json.loads(checked.stdout)
    assert plan["columns"] == "`uuid` STRING, `count` INT, `ts` TIMESTAMP"
    assert plan["pipeline"] == "events_REALTIME" and plan["start"] == "earliest"
    assert json.loads(cli("pinot", "tables", wh=wh).stdout) == {"tables": []}

    made = cli(*args, "-exec", wh=wh)
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["status"] == "Table events_REALTIME successfully added"
    again = cli(*args, "-exec", wh=wh)
    assert again.returncode == 1 and "table 'events' already exists" in again.stderr
    assert "Traceback" not in again.stderr

    with Engine(wh) as eng:  # what `sparkpipes run` does with the Running pipeline
        assert eng.pipeline("events_REALTIME").state == "Running"
        eng.run_batches("events_REALTIME", 10, until_idle=True)

    first10 = cli("sql", "-e", "SELECT * FROM events LIMIT 10", wh=wh)
    assert first10.returncode == 0, first10.stderr
    assert first10.stdout.count("\n") >= 10
    with Engine(wh) as eng:
        rows = eng.table_arrow("events").to_pylist()
    assert len(rows) == 600
    got = {r["uuid"]: (r["count"], r["ts"]) for r in rows}
    assert got == want

    shown = json.loads(cli("pinot", "table", "events", wh=wh).stdout)
    assert (
        shown["REALTIME"]["tableIndexConfig"]["streamConfigs"]["stream.kafka.topic.name"]
        == "events"
    )
    assert json.loads(cli("pinot", "schemas", wh=wh).stdout) == ["events"]
    deleted = cli("pinot", "delete-table", "events", wh=wh)
    assert json.loads(deleted.stdout) == {"status": "Tables: [events_REALTIME] deleted"}
    with Engine(wh) as eng:
        assert "events" not in eng.tables() and not eng.pipelines()
