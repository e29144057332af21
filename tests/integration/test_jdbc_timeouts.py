"""A database that stalls never hangs a JDBC source task: against a socket that accepts
connections and never answers, a proxy that stops passing the server's answers, and a
lock another session holds on the real PostgreSQL and MariaDB on 127.0.0.1, the source
fails within its time-outs with a transient error that says what it waited for (and is
retried with the batch), after Confluent's ``connection.attempts`` spaced by
``connection.backoff.ms``."""

from __future__ import annotations

import contextlib
import select
import socket
import threading
import time
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from sparkpipes.config import Secret
from sparkpipes.errors import SourceUnavailableError
from sparkpipes.sources import build_source
from tests.integration.databases import ScratchDb

JDBC = "io.confluent.connect.jdbc.JdbcSourceConnector"


class Silent:
    """127.0.0.1:``port`` accepts connections and never says a word."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.accepted: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(TimeoutError):
                self.accepted.append(self.sock.accept()[0])

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        for s in [*self.accepted, self.sock]:
            s.close()


class FreezingProxy:
    """127.0.0.1:``port`` passes bytes to and from ``target`` until :meth:`freeze`, then
    keeps what the server says: a server that stopped answering mid-query."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.frozen = threading.Event()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    def freeze(self) -> None:
        self.frozen.set()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client = self.sock.accept()[0]
            except TimeoutError:
                continue
            server = socket.create_connection(("127.0.0.1", self.target))
            t = threading.Thread(target=self._pump, args=(client, server), daemon=True)
            t.start()
            self._threads.append(t)

    def _pump(self, client: socket.socket, server: socket.socket) -> None:
        with client, server:
            while not self._stop.is_set():
                readable, _, _ = select.select([client, server], [], [], 0.1)
                for src in readable:
                    if src is server and self.frozen.is_set():
                        continue
                    data = src.recv(65536)
                    if not data:
                        return
                    (server if src is client else client).sendall(data)
                if self.frozen.is_set():
                    time.sleep(0.05)

    def close(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=5)
        self.sock.close()


@contextlib.contextmanager
def _silent() -> Iterator[Silent]:
    s = Silent()
    try:
        yield s
    finally:
        s.close()


def _connector(url: str, password: str | None = None, **extra):
    cfg = {
        "connector.class": JDBC,
        "connection.url": url,
        "mode": "incrementing",
        "incrementing.column.name": "id",
        **extra,
    }
    creds = {"connection.password": Secret(password)} if password else {}
    return build_source("kafkaconnect", "jdbc", cfg, creds).connector


@pytest.mark.parametrize(
    ("scheme", "limit", "seconds"),
    [
        ("postgresql", "connectTimeout=2", 2.0),
        ("mysql", "connectTimeout=1500", 1.5),
        ("mariadb", "connectTimeout=1500", 1.5),
    ],
)
def test_a_server_that_never_answers_fails_each_attempt_within_the_connect_timeout(
    scheme, limit, seconds
):
    """pgjdbc's ``connectTimeout`` is seconds, the MySQL drivers' milliseconds; each of
    ``connection.attempts`` waits that long (the handshake included), ``backoff.ms``
    apart, then the error is transient and names the attempts and the limits."""
    with _silent() as server:
        connector = _connector(
            f"jdbc:{scheme}://127.0.0.1:{server.port}/db?user=u&{limit}",
            **{"connection.attempts": "2", "connection.backoff.ms": "300"},
        )
        started = time.monotonic()
        with pytest.raises(SourceUnavailableError) as e:
            connector.partitions()
        took = time.monotonic() - started
        assert len(server.accepted) == 2
    assert 2 * seconds + 0.3 - 0.2 <= took < 2 * seconds + 10
    text = str(e.value)
    assert e.value.transient and "cannot reach" in text and "while listing its tables" in text
    assert "(2 attempts: connection.attempts)" in text
    assert f"{seconds:g} s to connect" in text and "connectTimeout and socketTimeout" in text


def test_a_mariadb_that_stops_answering_mid_query_fails_within_the_socket_timeout():
    """Connector/J's ``socketTimeout`` (ms) bounds each wait for the server once connected
    (PyMySQL's read time-out): a server gone quiet after the table was opened fails the
    poll, transient, instead of hanging the task."""
    db = ScratchDb("mariadb")
    proxy = FreezingProxy(db.port)
    try:
        db.run("CREATE TABLE orders (id BIGINT NOT NULL PRIMARY KEY, name VARCHAR(20))")
        db.run("INSERT INTO orders VALUES (1, 'a'), (2, 'b')")
        url = f"jdbc:mariadb://127.0.0.1:{proxy.port}/{db.database}?socketTimeout=1500"
        connector = _connector(url, db.password, **{"connection.user": db.user})
        reader = connector.reader()
        reader.open({"table": f"{db.database}.orders"}, {})
        proxy.freeze()
        started = time.monotonic()
        with pytest.raises(SourceUnavailableError) as e:
            reader.poll(100, 1.0)
        took = time.monotonic() - started
        reader.close()
    finally:
        proxy.close()
        db.drop()
    assert 1.3 <= took < 10
    assert "timed out" in str(e.value) and "socketTimeout" in str(e.value)
    assert e.value.partition == f'{{"table":"{db.database}.orders"}}'


def test_a_postgresql_read_blocked_by_a_lock_gives_up():
    """libpq has no read time-out: the source sets the server's ``lock_timeout`` (300 s,
    or pgjdbc's ``socketTimeout``) and, with ``socketTimeout``, ``statement_timeout``, so a
    read waiting behind another session's lock fails (transient) instead of hanging."""
    db = ScratchDb("postgresql")
    holder = sa.create_engine(db.engine.url.render_as_string(hide_password=False))
    try:
        table = db.name("orders")
        db.run(f"CREATE TABLE {table} (id BIGINT NOT NULL PRIMARY KEY)")
        db.run(f"INSERT INTO {table} VALUES (1)")
        plain = _connector(db.url, db.password, **{"connection.user": db.user})
        pdb = plain.settings.db
        with pdb.connect(pdb.engine(), "testing") as conn:
            shown = [
                conn.execute(sa.text(f"SHOW {k}")).scalar()
                for k in ("lock_timeout", "statement_timeout")
            ]
        assert shown == ["5min", "0"]
        connector = _connector(
            db.url + "?socketTimeout=2",
            db.password,
            **{"connection.user": db.user, "schema.pattern": db.schema},
        )
        reader = connector.reader()
        reader.open({"table": f"{db.schema}.orders"}, {})
        with holder.connect() as lock:
            lock.execute(sa.text(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE"))
            started = time.monotonic()
            with pytest.raises(SourceUnavailableError) as e:
                reader.poll(100, 1.0)
            took = time.monotonic() - started
            lock.rollback()
        reader.close()
    finally:
        holder.dispose()
        db.drop()
    assert 1.5 <= took < 10
    assert "gave up waiting while reading table" in str(e.value)
