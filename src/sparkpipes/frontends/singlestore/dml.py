"""The statements that change a table's rows, as ``SqlSession`` runs them: ``INSERT``
(``IGNORE``), ``DELETE`` and ``UPDATE``. Who may run them is checked before
(``privileges``); what they read is checked as every query is (``SqlSession._spark_sql``).

``DELETE`` and ``UPDATE`` are computed on Spark over the table's current snapshot, as a
procedure body's are (``engine.changes``), and committed as one MERGE: a condition that
is NULL does not hold; ``ORDER BY … LIMIT n`` changes the first n rows it holds for; an
UPDATE's rows are cast and checked as an INSERT's; the answer is MySQL's ``Query OK, n
rows affected``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any

from sparkpipes.config.procedure import ProcedureStatement
from sparkpipes.engine import Engine
from sparkpipes.engine.changes import check_change
from sparkpipes.errors import ConfigError
from sparkpipes.frontends.singlestore import ast as A
from sparkpipes.frontends.singlestore.lower_procedures import change_statement
from sparkpipes.frontends.singlestore.results import Result, ok


class DmlStatements:
    """Handlers mixed into ``SqlSession`` (which sets ``engine``, ``statement`` and
    ``_spark_sql``)."""

    engine: Engine
    statement: Any
    _spark_sql: Callable[..., Any]

    def _Insert(self, s: A.Insert) -> Result:
        if s.replace:
            raise ConfigError(
                "REPLACE INTO is supported in the body of a pipeline procedure; a statement "
                "of its own takes INSERT INTO"
            )
        if s.on_duplicate:
            raise ConfigError(
                "INSERT … ON DUPLICATE KEY UPDATE is supported in pipelines and in the body "
                "of a pipeline procedure; a statement of its own is not supported yet"
            )
        rec = self.engine.catalog.tables.get(s.table)
        cols = list(s.columns) or [f.name for f in rec.schema if f.name not in rec.computed]
        unknown = [c for c in cols if c not in rec.schema.names]
        if unknown:
            raise ConfigError(f"table '{s.table}' has no column(s) {', '.join(unknown)}")
        if s.query is not None:
            df = self._spark_sql(s.query.text)
        else:
            for row in s.rows:
                if len(row) != len(cols):
                    raise ConfigError(
                        f"INSERT gives {len(row)} values for {len(cols)} columns "
                        f"({', '.join(cols)})"
                    )
            values = ", ".join("(" + ", ".join(e.text for e in row) + ")" for row in s.rows)
            names = ", ".join(f"`c{i}`" for i in range(len(cols)))
            df = self._spark_sql(f"SELECT * FROM VALUES {values} AS __v({names})")
        if len(df.columns) != len(cols):
            raise ConfigError(
                f"INSERT gives {len(df.columns)} columns for {len(cols)} ({', '.join(cols)})"
            )
        df = df.toDF(*cols)
        with self.statement.running():
            return ok(self.engine.insert(s.table, df, ignore=s.ignore))

    def _Delete(self, s: A.Delete | A.Update) -> Result:
        """``DELETE`` and ``UPDATE`` of one table (``DELETE t FROM t JOIN u`` too)."""
        rec = self.engine.catalog.tables.get(s.table)
        statement = change_statement(s, 0, s.to_sql())
        check_change(statement, rec, type(s).__name__.upper())
        source = f"__sp_rows_{uuid.uuid4().hex}"

        def run(query: str, _: ProcedureStatement, frames: Mapping[str, Any]) -> Any:
            return self._spark_sql(query, {source: frames[s.table]})

        with self.statement.running():
            return ok(self.engine.change(s.table, statement, run, source))

    _Update = _Delete
