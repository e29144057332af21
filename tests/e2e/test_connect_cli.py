"""``sparkpipes connect`` as a Kafka Connect user types it: a seed-001-style
``.properties`` file into MariaDB (the MySQL-protocol stand-in for SingleStore) with
exactly once on, then status, pause, resume, config and delete; a mistake in the file
is named with the nearest key and no traceback."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys

from sparkpipes import Engine
from tests.integration.databases import ScratchDb


def cli(*args, wh, stdin=None):
    return subprocess.run(
        [sys.executable, "-m", "sparkpipes", "--warehouse", str(wh), "connect", *args],
        capture_output=True,
        text=True,
        timeout=300,
        input=stdin,
        env={**os.environ, "SPARKPIPES_SPARK_MASTER": "local[2]"},
    )


def test_a_properties_file_into_mariadb_managed_from_the_cli(broker, topic, tmp_path):
    db = ScratchDb("mariadb")
    try:
        schema = {
            "type": "struct",
            "fields": [
                {"field": "id", "type": "int32", "optional": False},
                {
                    "field": "created_at",
                    "type": "int64",
                    "optional": False,
                    "name": "org.apache.kafka.connect.data.Timestamp",
                },
                {"field": "data", "type": "string", "optional": True},
            ],
        }
        broker.produce(
            topic,
            [
                json.dumps(
                    {
                        "schema": schema,
                        "payload": {"id": i, "created_at": 1_780_000_000_000 + i, "data": f"d{i}"},
                    }
                )
                for i in range(120)
            ],
            partitions=4,
        )
        props = tmp_path / "sink.properties"
        props.write_text(
            "# seed 001, with a local MariaDB\n"
            "name=singlestore-sink\n"
            "connector.class=com.singlestore.kafka.SingleStoreSinkConnector\n"
            "tasks.max=1\n"
            f"topics={topic}\n"
            f"bootstrap.servers={broker.bootstrap}\n"
            f"connection.ddlEndpoint={db.hostport}\n"
            f"connection.database={db.database}\n"
            f"connection.user={db.user}\n"
            f"connection.password={db.password}\n"
            "tableKey.PRIMARY=id\n"
            "tableKey.COLUMNSTORE=data,created_at\n"
            "singlestore.metadata.allow=true\n"
            f"singlestore.tableName.{topic}=orders\n"
        )
        wh = tmp_path / "wh"
        made = cli("create", str(props), wh=wh)
        assert made.returncode == 0, made.stderr
        assert json.loads(made.stdout)["name"] == "singlestore-sink"
        assert "connection.password" not in made.stdout  # (the password is the user's name)
        assert "COLUMNSTORE" in made.stderr and "recorded, not created" in made.stderr

        with Engine(wh) as eng:  # what `sparkpipes run` does with a Running pipeline
            eng.run_batches("singlestore_sink", 10, until_idle=True)
        assert db.rows("SELECT COUNT(*), COUNT(DISTINCT id) FROM orders") == [(120, 120)]
        assert db.rows("SELECT SUM(count) FROM kafka_connect_transaction_metadata") == [(120,)]
        stamp = db.rows("SELECT created_at FROM orders WHERE id = 5")[0][0]
        assert stamp == dt.datetime(2026, 5, 28, 20, 26, 40, 5000)  # epoch ms 1780000000005

        status = json.loads(cli("status", "singlestore-sink", wh=wh).stdout)
        assert status["connector"]["state"] == "RUNNING"
        assert (
            json.loads(cli("pause", "singlestore-sink", wh=wh).stdout)["tasks"][0]["state"]
            == "PAUSED"
        )
        assert (
            json.loads(cli("resume", "singlestore-sink", wh=wh).stdout)["connector"]["state"]
            == "RUNNING"
        )
        shown = cli("config", "singlestore-sink", wh=wh).stdout
        assert "connection.password" not in shown
        assert json.loads(cli("list", wh=wh).stdout) == ["singlestore-sink"]

        bad = cli("create", "-", wh=wh, stdin=props.read_text().replace("tasks.max", "task.max"))
        assert bad.returncode == 1
        assert "'task.max'" in bad.stderr and "did you mean 'tasks.max'" in bad.stderr
        assert "Traceback" not in bad.stderr
        missing = cli("status", "nope", wh=wh)
        assert missing.returncode == 1 and "connector 'nope' does not exist" in missing.stderr

        assert cli("delete", "singlestore-sink", wh=wh).returncode == 0
        assert json.loads(cli("list", wh=wh).stdout) == []
        assert db.rows("SELECT COUNT(*) FROM orders") == [(120,)]  # the table stays
    finally:
        db.drop()
