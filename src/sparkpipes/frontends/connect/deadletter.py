"""Kafka Connect's dead-letter topic (``errors.deadletterqueue.topic.name`` with
``errors.tolerance=all``): each record a sink connector could not load is written to
that Kafka topic as it was read — its key, value, headers and timestamp — and, with
``errors.deadletterqueue.context.headers.enable=true``, Connect's ``__connect.errors.*``
headers (the names of Apache Kafka's ``DeadLetterQueueReporter``). The records stay in
``information_schema.PIPELINES_ERRORS`` as well.

**Exactly once per committed batch**, where Connect gives at least once. A batch's
failed records are final only once the batch is committed (a retried batch replaces
them), so they are published *after* the commit, from the errors the batch stored, by
the engine's periodic connector work (within ``CONNECTOR_REFRESH_S`` of the commit,
while ``sparkpipes run`` or ``serve`` runs pipelines). Each record's original is read
back from the source topic at its partition and offset. Each pipeline publishes through
a Kafka transaction of its own ``transactional.id`` (``sparkpipes-dlq-<pipeline id>``):
the records of every committed batch not yet published, and, in the same transaction,
the consumer-group offset of group ``sparkpipes-dlq-<pipeline id>`` on the dead-letter
topic's partition 0 set to the next batch to publish. That offset is read again after
``init_transactions`` has fenced any earlier publisher (another engine, or this one
before a crash), so a batch is published by one committed transaction or by none:
``read_committed`` consumers see each failed record once. (A ``read_uncommitted``
consumer may also see records of a publisher that was fenced before it committed.)

**A time budget per connector per round** (:data:`BUDGET_S`): publishing runs in the
engine's connector thread, which every connector shares, so a stalled broker must not
hold it for ``TIMEOUT_S`` per record and per task. Each Kafka wait of a round gives up
when the connector's budget is spent (but waits at least ``MIN_WAIT_S``, so a healthy
broker's answer is taken); batches are published in order, and a batch or task not
begun within the budget waits for the next round (a round always begins one batch, so
each round makes progress; a batch begun is finished, as its records are one
transaction). A wait that gives up aborts its task's transaction: its batches were not
published and are published next round. Nothing is lost: progress is the committed
offset of whole batches.

An original the source topic no longer holds (retention) cannot be sent: it is left out
with a warning, and stays in PIPELINES_ERRORS. A missing dead-letter topic is created
with one partition, as Connect does, with ``errors.deadletterqueue.topic.replication
.factor`` (3 by default) but at most the brokers there are.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from sparkpipes.errors import SourceUnavailableError, SparkpipesError
from sparkpipes.frontends.connect.model import SinkConnectorConfig, load

if TYPE_CHECKING:
    from sparkpipes.catalog import Catalog
    from sparkpipes.engine.engine import Engine

log = logging.getLogger("sparkpipes.connectors")

TIMEOUT_S = 30.0
#: how long one connector's publishing may go on in a round, and the least a Kafka wait
#: is given once it is spent (see the module docstring)
BUDGET_S = 5.0
MIN_WAIT_S = 1.0
#: the prefix of Connect's context headers (``DeadLetterQueueReporter.HEADER_PREFIX``)
HEADER_PREFIX = "__connect.errors."
DATA_EXCEPTION = "org.apache.kafka.connect.errors.DataException"
CONNECT_EXCEPTION = "org.apache.kafka.connect.errors.ConnectException"


#: a transform's Java class as an error message names it
_TRANSFORM_CLASS = re.compile(r"\b(?:[a-z_][\w]*\.)+transforms\.[\w$.]+")


@dataclass(frozen=True)
class Stage:
    """Where Connect would have failed a record: its ``Stage`` name and the exception
    class it reports; ``executing``: the class Connect names as executing then — the
    value converter, a transform, or (None) the connector's task."""

    name: str
    exception: str
    executing: str | None = None


#: an error's code, else its kind (``SparkpipesError.code`` / ``.kind``) → the stage
#: Connect reports for it: a transform that failed (SP302), a record that did not
#: convert (parse); anything else was refused as the rows were put into the table
STAGES: dict[str, Stage] = {
    "SP302": Stage("TRANSFORMATION", DATA_EXCEPTION, executing="transform"),
    "parse": Stage("VALUE_CONVERTER", DATA_EXCEPTION, executing="converter"),
}
PUT = Stage("TASK_PUT", CONNECT_EXCEPTION)


class Budget:
    """One connector's time in one round: how long each Kafka wait may take, whether
    more work may begin."""

    def __init__(self, seconds: float) -> None:
        self.deadline = time.monotonic() + seconds
        #: a task of the round has begun its batches: once the time is spent, no other
        #: one begins (a Kafka that does not answer ends the connector's round anyway)
        self.worked = False

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def wait(self) -> float:
        """The timeout of the next Kafka wait."""
        return min(TIMEOUT_S, max(self.left(), MIN_WAIT_S))

    def allows(self) -> bool:
        """Whether another task's batches may begin: the round's first always does."""
        return not self.worked or self.left() > 0


def group_of(pipeline_id: str) -> str:
    """The transactional id and consumer group of a pipeline's dead-letter publisher."""
    return f"sparkpipes-dlq-{pipeline_id}"


def context_headers(
    cfg: SinkConnectorConfig, task: int, topic: str, error: Mapping[str, Any]
) -> list[tuple[str, bytes]]:
    """Connect's ``__connect.errors.*`` headers of one failed record. The trace is the
    first line of a Java trace (the exception and its message): no Java ran here."""
    stage = STAGES.get(str(error.get("code")), STAGES.get(str(error.get("kind")), PUT))
    message = str(error.get("reason") or "")
    task_class = cfg.connector_class.removesuffix("Connector") + "Task"
    named = _TRANSFORM_CLASS.search(message)
    executing = {
        "converter": cfg.value_converter,
        "transform": named.group(0) if named else task_class,
    }.get(stage.executing or "", task_class)
    values = {
        "topic": topic,
        "partition": str(error["partition"]),
        "offset": str(error["offset"]),
        "connector.name": cfg.name,
        "task.id": str(task),
        "stage": stage.name,
        "class.name": executing,
        "exception.class.name": stage.exception,
        "exception.message": message,
        "exception.stacktrace": f"{stage.exception}: {message}",
    }
    return [(HEADER_PREFIX + k, v.encode()) for k, v in values.items()]


class Publisher:
    """One pipeline's failed records, published to the dead-letter topic (see the
    module's docstring for the transaction that makes it exactly once)."""

    def __init__(
        self, cfg: SinkConnectorConfig, task: int, topic: str, pipeline_id: str, catalog: Catalog
    ) -> None:
        self.cfg, self.task, self.topic = cfg, task, topic
        self.pipeline_id, self.catalog = pipeline_id, catalog
        self.dlq = cfg.dead_letter_topic or ""
        self.group = group_of(pipeline_id)

    def run(self, budget: Budget | None = None) -> int:
        """Publish the committed batches not yet published, oldest first, as many as
        ``budget`` allows (the first always); how many records were sent."""
        budget = budget or Budget(TIMEOUT_S)
        last = self.catalog.batches.last_succeeded(self.pipeline_id)
        if last is None:
            return 0
        upto = last[0]
        consumer = Consumer(
            {
                "bootstrap.servers": self.cfg.bootstrap_servers,
                "group.id": self.group,
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "auto.offset.reset": "earliest",
                "log_level": 3,
            }
        )
        try:
            if not self._pending(self._next(consumer, budget), upto):
                return 0  # progress stays: later errors are found from it all the same
            budget.worked = True
            self._topic(budget)
            producer = Producer(
                {
                    "bootstrap.servers": self.cfg.bootstrap_servers,
                    "transactional.id": self.group,
                    "log_level": 3,
                }
            )
            producer.init_transactions(budget.wait())  # fences any earlier publisher
            start = self._next(consumer, budget)  # what a fenced one committed counts
            if start > upto:
                return 0
            batches: dict[int, list[dict[str, Any]]] = {}
            for e in self._pending(start, upto):
                batches.setdefault(int(e["batch_id"]), []).append(e)
            producer.begin_transaction()
            try:
                sent, done = 0, start - 1
                for batch_id in sorted(batches):
                    if done >= start and budget.left() <= 0:
                        break  # the next round publishes the rest
                    sent += sum(
                        self._send(producer, consumer, e, budget) for e in batches[batch_id]
                    )
                    done = batch_id
                if not batches or done == max(batches):
                    done = upto  # and the batches without errors up to the last committed
                producer.send_offsets_to_transaction(
                    [TopicPartition(self.dlq, 0, done + 1)],
                    consumer.consumer_group_metadata(),
                    budget.wait(),
                )
                producer.commit_transaction(budget.wait())
            except BaseException:
                _abort(producer)
                raise
            return sent
        finally:
            consumer.close()

    def _pending(self, start: int, upto: int) -> list[dict[str, Any]]:
        """The stored errors of batches ``start`` … ``upto``, oldest first."""
        if start > upto:
            return []
        return [
            e
            for e in self.catalog.batches.errors(self.pipeline_id)
            if start <= int(e["batch_id"]) <= upto
        ]

    def _next(self, consumer: Consumer, budget: Budget) -> int:
        """The next batch to publish: the group's committed offset (0: none yet)."""
        (tp,) = consumer.committed([TopicPartition(self.dlq, 0)], timeout=budget.wait())
        if tp.error is not None:
            raise KafkaException(tp.error)
        return max(tp.offset, 0)

    def _topic(self, budget: Budget) -> None:
        """The dead-letter topic, created (one partition) when missing."""
        admin = AdminClient({"bootstrap.servers": self.cfg.bootstrap_servers, "log_level": 3})
        listed = admin.list_topics(timeout=budget.wait())
        if self.dlq in listed.topics:
            return
        wanted = self.cfg.dead_letter_replication
        factor = wanted if wanted < 0 else max(1, min(wanted, len(listed.brokers)))
        done = admin.create_topics([NewTopic(self.dlq, 1, factor)])[self.dlq]
        try:
            done.result(budget.wait())
        except KafkaException as e:
            if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
        log.info("connector %s: created the dead-letter topic %s", self.cfg.name, self.dlq)

    def _send(
        self, producer: Producer, consumer: Consumer, error: Mapping[str, Any], budget: Budget
    ) -> int:
        """Produce one failed record as it was read (1), or 0 if it is gone."""
        try:
            partition, offset = int(error["partition"]), int(error["offset"])
        except (TypeError, ValueError):
            return 0  # not a Kafka record's place
        original = _original(consumer, self.topic, partition, offset, budget.wait())
        if original is None:
            log.warning(
                "connector %s: record %s/%d@%d is no longer in its topic: not sent to the "
                "dead-letter topic %s (it is in PIPELINES_ERRORS)",
                self.cfg.name,
                self.topic,
                partition,
                offset,
                self.dlq,
            )
            return 0
        headers = list(original.headers() or [])
        if self.cfg.dead_letter_headers:
            headers += context_headers(self.cfg, self.task, self.topic, error)
        kind, stamp = original.timestamp()
        extra = {"timestamp": stamp} if kind != 0 else {}  # 0: TIMESTAMP_NOT_AVAILABLE
        deadline = time.monotonic() + budget.wait()
        while True:
            try:
                producer.produce(
                    self.dlq, key=original.key(), value=original.value(), headers=headers, **extra
                )
                return 1
            except BufferError:  # the queue is full: Kafka is slow to take it
                if time.monotonic() > deadline:
                    raise SourceUnavailableError(
                        f"the dead-letter topic {self.dlq} takes no more records in time"
                    ) from None
                producer.poll(0.1)


def _original(consumer: Consumer, topic: str, partition: int, offset: int, timeout: float) -> Any:
    """The record at ``offset`` of ``topic``/``partition``; None when the topic no
    longer holds it (the next one it holds is past it); SourceUnavailableError when
    Kafka does not answer within ``timeout`` (tried again next round)."""
    consumer.assign([TopicPartition(topic, partition, offset)])
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        msg = consumer.poll(min(1.0, max(deadline - time.monotonic(), 0.01)))
        if msg is None:
            continue
        if msg.error() is not None:
            if msg.error().code() == KafkaError._PARTITION_EOF:
                return None
            raise KafkaException(msg.error())
        if msg.offset() >= offset:
            return msg if msg.offset() == offset else None
    raise SourceUnavailableError(
        f"reading record {topic}/{partition}@{offset} back for the dead-letter topic timed out"
    )


def _abort(producer: Producer) -> None:
    try:
        producer.abort_transaction(MIN_WAIT_S)
    except KafkaException:
        pass  # fenced or gone: the transaction is aborted by the next publisher's init


class DeadLetters:
    """The dead-letter part of :class:`~sparkpipes.frontends.connect.service.Connectors`
    (which gives ``engine``, ``names`` and ``get``)."""

    engine: Engine

    def names(self) -> list[str]:
        raise NotImplementedError

    def get(self, name: str) -> dict[str, Any]:
        raise NotImplementedError

    def publish_dead_letters(self) -> int:
        """Publish the failed records of committed batches of every sink connector with a
        dead-letter topic, each connector within its :data:`BUDGET_S` (what is left waits
        for the next round; the round after begins with the task after the last one that
        began); how many were sent. A connector whose Kafka does not answer is logged and
        tried again next time; the others go on."""
        sent = 0
        for name in self.names():
            d = self.get(name)
            dlq = d["config"].get("errors.deadletterqueue.topic.name")
            if d.get("type", "sink") != "sink" or not dlq:
                continue
            budget = Budget(BUDGET_S)
            tasks = list(enumerate(zip(d["topics"], d["pipelines"], strict=False)))
            # per connector, the task its next round begins with
            turns: dict[str, int] = vars(self).setdefault("_dead_letter_turns", {})
            turn = turns.get(name, 0) % max(len(tasks), 1)
            try:
                cfg = load(d["config"], name=name)
                for task, (topic, p) in tasks[turn:] + tasks[:turn]:
                    if not budget.allows():
                        log.info("connector %s: dead letters of task %d wait a round", name, task)
                        break
                    pid = self.engine.pipeline(p).id
                    began = budget.worked
                    sent += Publisher(cfg, task, topic, pid, self.engine.catalog).run(budget)
                    if budget.worked and not began:
                        turns[name] = task + 1
            except (SparkpipesError, KafkaException) as e:
                log.warning("connector %s: dead-letter topic %s: %s (tried again)", name, dlq, e)
        return sent
