"""The librdkafka clients of the Kafka source: their settings, their log, and waiting on
them with the source's connect timeout.

Every client reads assigned partitions, never joins a group and never commits to Kafka
(offsets are the pipeline's, kept with the data). Client-wide errors (a refused login, TLS,
all brokers down) are watched (:class:`Watch`) so a call fails at once with what is wrong
instead of waiting out its timeout; credentials are masked in every message.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from sparkpipes.errors import ConfigError, SourceAuthError, SourceError, SourceUnavailableError
from sparkpipes.sources import kafka_native

if TYPE_CHECKING:
    from sparkpipes.sources.kafka import KafkaSource

# librdkafka error codes handled by name (see rdkafka.h)
ERR_PARTITION_EOF = -191
ERR_AUTO_OFFSET_RESET = -140
ERR_OFFSET_OUT_OF_RANGE = 1
TRANSPORT_ERRORS = {-195, -185, -187, -192}  # _TRANSPORT, _TIMED_OUT, _ALL_BROKERS_DOWN, _RESOLVE
_ERR_ALL_BROKERS_DOWN = -187
_ERR_AUTHENTICATION = -169
_ERR_SSL = -181
#: client-wide errors no retry inside a batch cures (``Watch``)
FATAL_ERRORS = frozenset({_ERR_ALL_BROKERS_DOWN, _ERR_AUTHENTICATION, _ERR_SSL})

_STEP_S = 0.5

# Throughput defaults of a partition consumer; the user's CONFIG overrides them.
PARTITION_CONSUMER_DEFAULTS = {
    "fetch.wait.max.ms": "50",
    "queued.min.messages": "200000",
    "max.partition.fetch.bytes": "16777216",
    "fetch.max.bytes": "52428800",
    "fetch.queue.backoff.ms": "10",
}


_log = logging.getLogger("sparkpipes.kafka")
T = TypeVar("T")


class ClientLog:
    """librdkafka's log lines, routed into Python logging (``sparkpipes.kafka``) instead
    of its own stderr printer. A client retrying a dead broker logs the same line
    many times a second; each distinct line (its numbers ignored) is let through once
    per ``every_s`` in a process, with how many were held back."""

    _lock = threading.Lock()
    _last: dict[str, list[float]] = {}  # line shape -> [time let through, held back]

    def __init__(self, every_s: float = 30.0) -> None:
        self.every_s = every_s

    @classmethod
    def forget(cls) -> None:
        """Let every line through again (a new test, a new run in the same process)."""
        with cls._lock:
            cls._last.clear()

    def log(self, level: int, fmt: str, *args: Any) -> None:
        text = _clean(str(fmt % args if args else fmt).rpartition("]: ")[2])
        key = re.sub(r"\d+", "#", text)
        now = time.monotonic()
        with self._lock:
            seen = self._last.get(key)
            if seen is not None and now - seen[0] < self.every_s:
                seen[1] += 1
                return
            held = int(seen[1]) if seen else 0
            self._last[key] = [now, 0]
        more = f" ({held} similar lines held back)" if held else ""
        _log.log(level, "Kafka client: %s%s", text, more)


def _clean(text: str) -> str:
    """A librdkafka message without its broker-handle prefix and state-machine suffix."""
    text = re.sub(r"^\S*/(?:bootstrap|\d+): ", "", text)
    return re.sub(
        r" \(after \d+ms in state \w+(?:, \d+ identical error\(s\) suppressed)?\)$", "", text
    )


class Watch:
    """The client-wide errors librdkafka reports through ``error_cb`` (served by
    ``poll``/``consume``), kept so a caller can fail at once on a refused login or a
    broker nobody answers at, instead of waiting out its own timeout."""

    def __init__(self, source: KafkaSource) -> None:
        self.source = source
        self.auth: str | None = None
        self.tls: str | None = None
        self.down = False
        self.detail: str | None = None

    def __call__(self, err: Any) -> None:
        code, text = err.code(), _clean(err.str())
        if code == _ERR_AUTHENTICATION:
            self.auth = text
        elif code == _ERR_SSL:
            self.tls = text
        elif code == _ERR_ALL_BROKERS_DOWN:
            self.down = True
        elif code in TRANSPORT_ERRORS or err.retriable():
            self.detail = text

    def check(self, **where: Any) -> None:
        """Raise what the client has seen that no retry inside this batch will cure."""
        src = self.source
        if self.auth is not None:
            raise SourceAuthError(
                f"Kafka at {src.servers} refused authentication of user "
                f"'{src.user() or '(none)'}' with SASL {src.mechanism()}: {src.redact(self.auth)}",
                **where,
            )
        if self.tls is not None:
            raise SourceError(
                f"TLS with Kafka at {src.servers} failed: {src.redact(self.tls)}", **where
            )
        if self.down:
            raise SourceUnavailableError(
                f"cannot reach Kafka at {src.servers}: "
                f"{src.redact(self.detail or 'all brokers are down')}",
                **where,
            )


def wait_for(
    source: KafkaSource,
    client: Any,
    watch: Watch,
    call: Callable[[float], T],
    timeout_s: float,
    **where: Any,
) -> T:
    """``call(step_timeout)`` until it answers, the client reports a refusal or dead
    brokers (raised at once), or ``timeout_s`` passes (raised as unreachable). Only for
    a client with nothing assigned: ``poll`` would otherwise consume records."""
    from confluent_kafka import KafkaException

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return call(max(0.05, min(_STEP_S, deadline - time.monotonic())))
        except (KafkaException, kafka_native.NativeError) as e:
            last = _clean(e.args[0].str())
        client.poll(0)
        watch.check(**where)
        if time.monotonic() >= deadline:
            raise SourceUnavailableError(
                f"cannot reach Kafka at {source.servers} within {timeout_s:g} s "
                f"(socket.connection.setup.timeout.ms): {source.redact(watch.detail or last)}",
                **where,
            )


def consumer_config(
    source: KafkaSource, defaults: Mapping[str, str] | None = None, *, eof: bool = False
) -> dict[str, str]:
    """librdkafka's settings of a consumer that reads assigned partitions, never joins a
    group and never commits to Kafka."""
    conf = dict(defaults or {})
    conf.update(source.client_config())
    conf.update(
        {
            "group.id": "sparkpipes",
            "enable.auto.commit": "false",
            "enable.auto.offset.store": "false",
            "enable.partition.eof": "true" if eof else "false",
            "auto.offset.reset": "error",
            "socket.nagle.disable": "true",
        }
    )
    return conf


def rejected(source: KafkaSource, e: Exception) -> ConfigError:
    # librdkafka rejects a value (not the key: that was checked)
    return ConfigError(f"Kafka client rejected the configuration: {source.redact(str(e))}")


def new_consumer(
    source: KafkaSource, defaults: Mapping[str, str] | None = None, *, eof: bool = False
) -> tuple[Any, Watch]:
    from confluent_kafka import Consumer

    watch = Watch(source)
    conf: dict[str, Any] = consumer_config(source, defaults, eof=eof)
    conf.update({"error_cb": watch, "logger": ClientLog()})
    try:
        return Consumer(conf), watch
    except Exception as e:
        raise rejected(source, e) from None
