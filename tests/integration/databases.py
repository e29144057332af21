"""Scratch space on the real PostgreSQL and MariaDB servers on 127.0.0.1: a schema
(PostgreSQL) or a database (MariaDB) per test, dropped after it. The addresses can be
moved with ``SPARKPIPES_TEST_JDBC_PG`` / ``SPARKPIPES_TEST_JDBC_MARIADB``."""

from __future__ import annotations

import os
import uuid

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
                f"{driver}://{creds}/{base}", isolation_level="AUTOCOMMIT"
            )
            self.run(f"CREATE SCHEMA {self.schema}")
        else:
            self.database, self.url = self.schema, url.rsplit("/", 1)[0] + f"/{self.schema}"
            admin = sa.create_engine(f"{driver}://{creds}/", isolation_level="AUTOCOMMIT")
            with admin.connect() as c:
                c.execute(sa.text(f"CREATE DATABASE {self.schema}"))
            admin.dispose()
            self.engine = sa.create_engine(
                f"{driver}://{creds}/{self.schema}", isolation_level="AUTOCOMMIT"
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
