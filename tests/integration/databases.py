"""Scratch space on the real PostgreSQL and MariaDB servers on 127.0.0.1: a schema
(PostgreSQL) or a database (MariaDB) per test, dropped after it. The addresses can be
moved with ``SPARKPIPES_TEST_JDBC_PG`` / ``SPARKPIPES_TEST_JDBC_MARIADB``."""

from __future__ import annotations

import contextlib
import glob
import os
import subprocess
import time
import uuid
from collections.abc import Iterator

import sqlalchemy as sa

SERVERS = {
    "postgresql": (
        os.environ.get("SPARKPIPES_TEST_JDBC_PG", "jdbc:postgresql://127.0.0.1:5432/postgres"),
        "postgres",
        "postgres",
    ),
    "mariadb": (
        os.environ.get("SPARKPIPES_TEST_JDBC_MARIADB", "jdbc:mariadb://127.0.0.1:3306/sptest"),
        "sparkpipes",
        "sparkpipes",
    ),
}


class ScratchDb:
    """``url`` is a JDBC URL of the scratch space; ``run`` executes SQL in it."""

    def __init__(self, kind: str) -> None:
        url, self.user, self.password = SERVERS[kind]
        self.kind = kind
        rest = url.removeprefix("jdbc:").split("://", 1)[1]
        self.hostport, base = rest.split("/", 1)
        self.host, _, port = self.hostport.partition(":")
        self.port = int(port or (5432 if kind == "postgresql" else 3306))
        self.schema = f"sp_{uuid.uuid4().hex[:8]}"
        driver = "postgresql+psycopg2" if kind == "postgresql" else "mysql+pymysql"
        creds = f"{self.user}:{self.password}@{self.hostport}"
        if kind == "postgresql":
            self.database, self.url = base, url
            self.engine = sa.create_engine(
                f"{driver}://{creds}/{base}", isolation_level="AUTOCOMMIT", pool_pre_ping=True
            )
            self.run(f"CREATE SCHEMA {self.schema}")
        else:
            self.database, self.url = self.schema, url.rsplit("/", 1)[0] + f"/{self.schema}"
            admin = sa.create_engine(f"{driver}://{creds}/", isolation_level="AUTOCOMMIT")
            with admin.connect() as c:
                c.execute(sa.text(f"CREATE DATABASE {self.schema}"))
            admin.dispose()
            self.engine = sa.create_engine(
                f"{driver}://{creds}/{self.schema}",
                isolation_level="AUTOCOMMIT",
                pool_pre_ping=True,
            )

    def name(self, table: str) -> str:
        """A table's name as SQL in this scratch space reaches it."""
        return f"{self.schema}.{table}" if self.kind == "postgresql" else table

    def run(self, sql: str, rows: list[dict] | dict | None = None) -> None:
        with self.engine.connect() as c:
            c.execute(sa.text(sql), rows or {})

    def rows(self, sql: str) -> list[tuple]:
        with self.engine.connect() as c:
            return [tuple(r) for r in c.execute(sa.text(sql))]

    def drop(self) -> None:
        if self.kind == "postgresql":
            self.run(f"DROP SCHEMA {self.schema} CASCADE")
        else:
            self.run(f"DROP DATABASE {self.schema}")
        self.engine.dispose()


def _pid_of(pid_file: str) -> int | None:
    try:
        with open(pid_file) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def _alive(pid: int | None) -> bool:
    """Whether the process ``pid`` still runs (None: any ``mariadbd`` still runs)."""
    if pid is None:
        return subprocess.run(["pgrep", "-x", "mariadbd"], capture_output=True).returncode == 0
    return os.path.exists(f"/proc/{pid}")


def restart_server(kind: str) -> None:
    """Restart the local server (as root, the way this machine kind runs it) and wait
    until it answers again."""
    if kind == "postgresql":
        version = sorted(glob.glob("/etc/postgresql/*"))[-1].rsplit("/", 1)[-1]
        restart = ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "restart"]
        subprocess.run([*restart, "-m", "fast"], check=True, capture_output=True, timeout=120)
        ready = ["pg_isready", "-q", "-h", "127.0.0.1", "-p", "5432"]
    else:
        # Debian's init script checks with a maintenance user this machine may not have:
        # shut down as the test user, then start mysqld_safe as the init script would.
        admin = ["mariadb-admin", "-h", "127.0.0.1", "-u", "sparkpipes", "-psparkpipes"]
        # the machine's own server, by its pid file: the TLS tests run a second mariadbd
        pid = _pid_of("/run/mysqld/mysqld.pid")
        subprocess.run([*admin, "shutdown"], check=True, capture_output=True, timeout=120)
        deadline = time.time() + 60
        while _alive(pid):
            assert time.time() < deadline, "MariaDB did not stop"
            time.sleep(0.2)
        subprocess.Popen(
            ["/usr/bin/mysqld_safe"],
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        ready = [*admin, "ping"]
    deadline = time.time() + 60
    while subprocess.run(ready, capture_output=True).returncode != 0:
        assert time.time() < deadline, f"{kind} did not come back after a restart"
        time.sleep(0.5)


PG_URL = os.environ.get(
    "SPARKPIPES_TEST_PG_URL", "postgresql+psycopg2://postgres:postgres@127.0.0.1:5432/postgres"
)


@contextlib.contextmanager
def pg_database() -> Iterator[str]:
    """A new database on the PostgreSQL server (a catalog's, say): its SQLAlchemy URL."""
    name = f"sp_test_{uuid.uuid4().hex[:8]}"
    admin = sa.create_engine(PG_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(sa.text(f"CREATE DATABASE {name}"))
    try:
        yield sa.engine.make_url(PG_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as c:
            c.execute(sa.text(f"DROP DATABASE {name} WITH (FORCE)"))
        admin.dispose()
