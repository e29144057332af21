"""What a connector is doing and where it is in its topics, as Kafka Connect reports and
changes it: its state (``RUNNING``, ``PAUSED``, ``STOPPED``, ``FAILED``), pause, resume,
stop and restart (KIP-745), its offsets (KIP-875) and its active topics (KIP-558).

A connector's tasks are its pipelines, one per topic. ``PAUSED`` is its pipelines
stopped; ``STOPPED`` (Kafka Connect 3.5+) is that too, and the connector recorded as
stopped, so that it shows no task, as Kafka Connect's does, and its offsets may be
changed. Offsets are the pipelines' own, committed with the data: altering or resetting
them is an empty batch committed like any other (``Engine.set_offsets``,
``Engine.reset_offsets``), so the rows still land exactly once from wherever the offsets
are put.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sparkpipes.catalog.states import PipelineState
from sparkpipes.errors import ConfigError, NotFoundError

if TYPE_CHECKING:
    from sparkpipes.engine.engine import Engine

STATES = {
    PipelineState.RUNNING: "RUNNING",
    PipelineState.STOPPED: "PAUSED",
    PipelineState.ERROR: "FAILED",
}
#: Kafka Connect's answers to the offset changes it makes (its own wording)
ALTERED = "The offsets for this connector have been altered successfully"
RESET = "The offsets for this connector have been reset successfully"


class Lifecycle:
    """The state, offsets and topics part of :class:`~sparkpipes.frontends.connect.service
    .Connectors` (which gives ``engine`` and ``get``: a connector's stored definition,
    ``{"config", "topics", "pipelines", …}``, or NotFoundError)."""

    engine: Engine

    def get(self, name: str) -> dict[str, Any]:
        raise NotImplementedError

    def _put(self, name: str, d: Mapping[str, Any]) -> None:
        self.engine.catalog.connectors.put(name, dict(d), replace=True)

    def _mark(self, name: str, d: dict[str, Any], stopped: bool) -> None:
        if bool(d.get("stopped")) != stopped:
            d["stopped"] = stopped
            self._put(name, d)

    # -- state ------------------------------------------------------------------------
    def stopped(self, name: str) -> bool:
        """Whether the connector was stopped (``PUT …/stop``) and not resumed since."""
        return bool(self.get(name).get("stopped"))

    def task_pipelines(self, name: str) -> list[str]:
        """The pipelines that are its tasks: none while it is stopped, as Kafka Connect
        shows a stopped connector's tasks."""
        d = self.get(name)
        return [] if d.get("stopped") else list(d["pipelines"])

    def status(self, name: str) -> dict[str, Any]:
        """``GET …/status``: the connector's state is its tasks' (FAILED before RUNNING
        before PAUSED), or STOPPED with no task; a failed task's ``trace`` is its
        pipeline's error."""
        d = self.get(name)
        base: dict[str, Any] = {"name": name, "type": d.get("type", "sink")}
        if d.get("stopped"):
            return {
                **base,
                "connector": {"state": "STOPPED", "worker_id": "sparkpipes"},
                "tasks": [],
            }
        tasks = []
        for i, p in enumerate(d["pipelines"]):
            rec = self.engine.pipeline(p)
            task = {"id": i, "state": STATES.get(rec.state, "UNASSIGNED"), "worker_id": p}
            if rec.state == PipelineState.ERROR and rec.last_error:
                task["trace"] = rec.last_error
            tasks.append(task)
        states = {t["state"] for t in tasks}
        state = next((s for s in ("FAILED", "RUNNING", "PAUSED") if s in states), "UNASSIGNED")
        out: dict[str, Any] = {
            **base,
            "connector": {"state": state, "worker_id": "sparkpipes"},
            "tasks": tasks,
        }
        if state == "FAILED":
            out["connector"]["trace"] = next(t["trace"] for t in tasks if "trace" in t)
        return out

    def task_status(self, name: str, task: int) -> dict[str, Any]:
        """``GET …/tasks/{task}/status``: that task's entry of :meth:`status` (``id``,
        ``state``, ``worker_id``, ``trace`` when failed); NotFoundError with Connect's
        words for a task it does not have (none while it is stopped)."""
        found = [t for t in self.status(name)["tasks"] if t["id"] == task]
        if not found:
            raise NotFoundError(f"No status found for task {name}-{task}")
        return found[0]

    def restart_task(self, name: str, task: int, *, run: bool = False) -> None:
        """``POST …/tasks/{task}/restart``: that task's pipeline, failed or running, set
        running again from its committed offsets (nothing is loaded twice); a paused
        task stays paused, as Connect restarts a task into its connector's target state."""
        if self.task_status(name, task)["state"] != "PAUSED":
            self.engine.start(self.get(name)["pipelines"][task], run=run)

    def restarting(self, name: str, pipeline: str) -> None:
        """A task's pipeline is about to restart: a connector class may remake it first
        (the JDBC sink's ``auto.evolve`` adds the columns its next records need)."""

    def pause(self, name: str) -> None:
        """Stop its pipelines; a stopped connector becomes paused (its tasks shown)."""
        d = self.get(name)
        for p in d["pipelines"]:
            self.engine.stop(p)
        self._mark(name, d, False)

    def resume(self, name: str, *, run: bool = False) -> None:
        """Set its pipelines running again, whether it was paused or stopped."""
        d = self.get(name)
        self._mark(name, d, False)
        for p in d["pipelines"]:
            self.engine.start(p, run=run)

    def stop(self, name: str) -> None:
        """``PUT …/stop``: its pipelines stopped, and the connector STOPPED until resumed."""
        d = self.get(name)
        for p in d["pipelines"]:
            self.engine.stop(p)
        self._mark(name, d, True)

    def restart(
        self, name: str, *, include_tasks: bool, only_failed: bool, run: bool = False
    ) -> dict[str, Any]:
        """``POST …/restart``: the failed tasks set running again (with
        ``include_tasks`` and not ``only_failed``, the running ones too); paused and
        stopped ones stay as they are, as Kafka Connect keeps a connector's target state.
        The status as Kafka Connect answers it: what was restarted shown RESTARTING."""
        d = self.get(name)
        out = self.status(name)
        if d.get("stopped"):
            return out
        failed = out["connector"]["state"] == "FAILED"
        again = [
            t
            for t in out["tasks"]
            if t["state"] == "FAILED"
            or (include_tasks and not only_failed and t["state"] == "RUNNING")
        ]
        for t in again:
            self.restarting(name, d["pipelines"][t["id"]])
            self.engine.start(d["pipelines"][t["id"]], run=run)
            t["state"] = "RESTARTING"
            t.pop("trace", None)
        if failed or not only_failed:
            out["connector"]["state"] = "RESTARTING"
            out["connector"].pop("trace", None)
        return out

    # -- offsets (KIP-875) ------------------------------------------------------------
    def offsets(self, name: str) -> dict[str, Any]:
        """``GET …/offsets``: each partition's committed offset ("next to read") in Kafka
        Connect's shape: a sink's ``{"kafka_topic", "kafka_partition"}`` and
        ``{"kafka_offset"}``; a source's own partition and offset maps."""
        d = self.get(name)
        out = []
        for topic, p in zip(d["topics"], d["pipelines"], strict=False):
            kafka = self.engine.spec(p).source.kind == "kafka"
            committed = self.engine.offsets(p)
            for part in sorted(committed, key=_order):
                out.append(_shown(topic, part, committed[part], kafka))
        return {"offsets": out}

    def alter_offsets(self, name: str, body: Any) -> dict[str, str]:
        """``PATCH …/offsets`` on a stopped connector: each listed partition moved to its
        offset, or (offset null) back to where the connector starts. Every problem of the
        body is reported at once, before anything moves."""
        d = self._stopped_for("altered", name)
        moves, resets = self._parse(d, body)
        for p, offsets in moves.items():
            self.engine.set_offsets(p, offsets)
        for p, parts in resets.items():
            self.engine.reset_offsets(p, parts)
        return {"message": ALTERED}

    def reset_offsets(self, name: str) -> dict[str, str]:
        """``DELETE …/offsets`` on a stopped connector: every partition back where the
        connector starts (``consumer.override.auto.offset.reset``, earliest by default)."""
        d = self._stopped_for("reset", name)
        for p in d["pipelines"]:
            self.engine.reset_offsets(p)
        return {"message": RESET}

    def _stopped_for(self, done: str, name: str) -> dict[str, Any]:
        d = self.get(name)
        if not d.get("stopped"):
            raise ConfigError(
                f"Connectors must be in the STOPPED state before their offsets can be {done}. "
                f"This can be done for the specified connector by issuing a 'PUT' request to "
                f"the '/connectors/{name}/stop' endpoint"
            )
        return d

    def _parse(
        self, d: Mapping[str, Any], body: Any
    ) -> tuple[dict[str, dict[str, int]], dict[str, list[str]]]:
        """A PATCH body as {pipeline: {partition: offset}} to move and {pipeline:
        [partition]} to reset; a ConfigError naming every problem, each by its place."""
        items = body.get("offsets") if isinstance(body, dict) else None
        if not isinstance(items, list) or not items:
            raise ConfigError(
                "Partitions / offsets need to be provided for an alter offsets request: "
                '{"offsets": [{"partition": {…}, "offset": {…}}, …]}'
            )
        by_topic = dict(zip(d["topics"], d["pipelines"], strict=False))
        sources = [p for p in d["pipelines"] if self.engine.spec(p).source.kind != "kafka"]
        problems: list[str] = []
        moves: dict[str, dict[str, int]] = {}
        resets: dict[str, list[str]] = {}
        for i, item in enumerate(items):
            at = f"offsets[{i}]"
            if sources:
                problems.append(
                    f"{at}: altering the offsets of a source connector's pipelines is not "
                    "supported here; use ALTER PIPELINE … SET OFFSETS"
                )
                continue
            if not isinstance(item, dict) or not isinstance(item.get("partition"), dict):
                problems.append(f'{at}: each item is {{"partition": {{…}}, "offset": {{…}}}}')
                continue
            part, offset = item["partition"], item.get("offset")
            topic = part.get("kafka_topic")
            number = _whole(part.get("kafka_partition"))
            if not isinstance(topic, str) or not topic:
                problems.append(f"{at}.partition.kafka_topic must be a topic name")
            elif topic not in by_topic:
                problems.append(
                    f"{at}.partition.kafka_topic: connector reads no topic '{topic}' "
                    f"(it reads {', '.join(by_topic)})"
                )
            if number is None:
                problems.append(f"{at}.partition.kafka_partition must be a non-negative integer")
            target = None
            if offset is not None:
                target = _whole(offset.get("kafka_offset")) if isinstance(offset, dict) else None
                if target is None:
                    problems.append(
                        f'{at}.offset must be {{"kafka_offset": <non-negative integer>}} or null'
                    )
                    continue
            if problems or not isinstance(topic, str) or number is None:
                continue
            pipeline = by_topic[topic]
            if target is None:
                resets.setdefault(pipeline, []).append(str(number))
            else:
                moves.setdefault(pipeline, {})[str(number)] = target
        if problems:
            raise ConfigError("; ".join(problems))
        return moves, resets

    # -- topics (KIP-558) -------------------------------------------------------------
    def topics(self, name: str) -> dict[str, Any]:
        """``GET …/topics``: the topics the connector has read records of since they
        were last reset (``PUT …/topics/reset``)."""
        d = self.get(name)
        marks = d.get("topics_reset") or {}
        active = [
            t
            for t, p in zip(d["topics"], d["pipelines"], strict=False)
            if self._loaded(p) > marks.get(p, 0)
        ]
        return {name: {"topics": active}}

    def reset_topics(self, name: str) -> None:
        """``PUT …/topics/reset``: forget the active topics; a topic is active again once
        a record of it is loaded. Only what ``GET …/topics`` shows changes."""
        d = self.get(name)
        d["topics_reset"] = {p: self._loaded(p) for p in d["pipelines"]}
        self._put(name, d)

    def _loaded(self, pipeline: str) -> int:
        rows, _ = self.engine.catalog.batches.loaded(self.engine.pipeline(pipeline).id)
        return int(rows)


def _order(partition: str) -> tuple[int, str]:
    return (int(partition), "") if partition.isdigit() else (0, partition)


def _shown(topic: str, partition: str, offset: Any, kafka: bool) -> dict[str, Any]:
    """One partition's offset as Kafka Connect shows it."""
    if kafka:
        return {
            "partition": {"kafka_topic": topic, "kafka_partition": int(partition)},
            "offset": {"kafka_offset": offset},
        }
    try:
        key = json.loads(partition)
    except ValueError:
        key = {"partition": partition}
    return {
        "partition": key if isinstance(key, dict) else {"partition": key},
        "offset": offset if isinstance(offset, dict) else {"offset": offset},
    }


def _whole(value: Any) -> int | None:
    """A non-negative integer given as a number or a string of digits (as Kafka Connect
    reads them), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None
