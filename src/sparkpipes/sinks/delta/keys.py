"""The stored rows of a batch's keys, for the write modes that depend on them: ``update``
(``ON DUPLICATE KEY UPDATE`` folds a key's rows onto its stored row) and ``insert`` (a key
the table holds fails the batch). Read from the table version the commit applies to, so a
concurrent commit is a conflict and the check runs again on the new version."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from sparkpipes.errors import DuplicateKeyError
from sparkpipes.util.arrow import to_spark_schema

#: the most keys a lookup names to prune the table's files by their statistics
PRUNING_KEYS = 10_000


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def stored_rows(dt, df, keys: Sequence[str], schema: pa.Schema):
    """The rows of table version ``dt`` (delta-rs) whose key one of ``df``'s (Spark) rows
    has, as a Spark frame of ``schema``; only the files whose statistics may hold one of
    the keys are read."""
    cols = [_q(k) for k in keys]
    wanted = df.select(*cols).distinct().toArrow()
    pruning = None
    if wanted.num_rows <= PRUNING_KEYS:
        pruning = [(k, "in", wanted.column(k).to_pylist()) for k in keys]
    dataset = dt.to_pyarrow_dataset(file_pruning_predicate=pruning)
    where = None
    for k in keys:
        t = dataset.schema.field(k).type
        # the cast: files may hold string_view where the table says string
        cond = pc.field(k).cast(t).isin(wanted.column(k).cast(t))
        where = cond if where is None else where & cond
    rows = dataset.to_table(filter=where, columns=schema.names).cast(schema)
    if rows.num_rows == 0:  # no chunks: PySpark cannot convert timestamp columns of none
        return df.sparkSession.createDataFrame([], schema=to_spark_schema(schema))
    stored = df.sparkSession.createDataFrame(rows, schema=to_spark_schema(schema))
    return stored.join(df.select(*cols).distinct(), list(keys), "semi")


def no_duplicates(dt, df, keys: Sequence[str], schema: pa.Schema, table: str) -> None:
    """Raise DuplicateKeyError naming a key twice in ``df`` or already in ``dt``; a key
    with a NULL in it repeats freely (a UNIQUE key's, as in MySQL; a PRIMARY KEY's
    columns are NOT NULL)."""
    cols = [_q(k) for k in keys]
    df = df.dropna(subset=list(keys))
    twice = df.groupBy(*cols).count().where("count > 1").limit(1).collect()
    there = [] if twice else stored_rows(dt, df, keys, schema).select(*cols).limit(1).collect()
    for rows, where in ((twice, "twice in the batch"), (there, "in the table already")):
        if rows:
            key = "-".join(str(rows[0][k]) for k in keys)
            raise DuplicateKeyError(
                f"Duplicate entry '{key}' for key 'PRIMARY' of table '{table}' ({where}): "
                "REPLACE, IGNORE, SKIP DUPLICATE KEY ERRORS or ON DUPLICATE KEY UPDATE say "
                "what a duplicate does"
            )
