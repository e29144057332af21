"""Seed 000's tuning advice reaches connector tasks: ``pipelines_extractor_batch_size``
bounds the records one poll asks for and ``pipelines_extractor_max_batch_interval_ms``
how long it waits. The connector here is a third-party one found by its Python path; it
writes down what each poll was asked (no server is involved: it counts)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sparkpipes.frontends.singlestore.executor import SqlSession
from sparkpipes.sources.connect import PartitionReader, Polled, SourceConnector, SourceRecord
from sparkpipes.util.registry import PLUGIN_MODULES_ENV


class Recorder(SourceConnector):
    """``recorder.records`` numbers in one partition; each poll's arguments appended to
    the file ``recorder.log``."""

    config_keys = frozenset({"recorder.records", "recorder.log"})

    def partitions(self) -> list[dict[str, Any]]:
        return [{"p": 0}]

    def reader(self) -> PartitionReader:
        return RecorderReader(
            self.config.integer("recorder.records", 100), self.config.require("recorder.log")
        )


class RecorderReader(PartitionReader):
    def __init__(self, records: int, log: str) -> None:
        self.records, self.log = records, log

    def open(self, partition: Mapping[str, Any], offset: Mapping[str, Any]) -> None:
        self.next = offset.get("i", -1) + 1

    def poll(self, max_records: int, timeout_s: float) -> Polled:
        with open(self.log, "a") as f:
            f.write(json.dumps([max_records, timeout_s]) + "\n")
        upto = min(self.records, self.next + max_records)
        recs = [SourceRecord({"p": 0}, {"i": i}, {"n": i}, "t") for i in range(self.next, upto)]
        self.next = upto
        return Polled(recs, {"i": upto - 1} if upto else {}, upto >= self.records)


def test_extractor_batch_size_and_interval_reach_the_connector_poll(engine, tmp_path, monkeypatch):
    monkeypatch.setenv(PLUGIN_MODULES_ENV, __name__)  # Recorder, by its Python path
    log = tmp_path / "polls.jsonl"
    sess = SqlSession(engine)
    sess.execute('SET GLOBAL experimental_features_config = "kafka_connect_enabled=true"')
    sess.execute("SET GLOBAL pipelines_extractor_batch_size = 7")
    sess.execute("SET GLOBAL pipelines_extractor_max_batch_interval_ms = 300")
    cfg = {
        "connector.class": f"{__name__}:Recorder",
        "recorder.records": 50,
        "recorder.log": str(log),
    }
    sess.execute(
        f"CREATE INFERRED PIPELINE rp AS LOAD DATA KAFKACONNECT 'r' CONFIG '{json.dumps(cfg)}' "
        "FORMAT AVRO"
    )
    sess.execute("START PIPELINE rp FOREGROUND")
    rows = sess.execute("SELECT record::%n FROM rp")[0].rows
    assert sorted(int(r[0]) for r in rows) == list(range(50))
    polls = [json.loads(line) for line in log.read_text().splitlines()]
    sizes, waits = {p[0] for p in polls}, {p[1] for p in polls}
    assert max(sizes) == 7 and len(polls) >= 50 // 7
    assert 0.3 in waits and max(waits) <= 0.3 * 4  # a task's first poll waits longer
