"""The MERGE of an upsert into a Delta table (``DeltaSink``'s commit): the staged rows,
refined, made the rows the mode merges (:mod:`.upsert`) and streamed into one delta-rs
MERGE, never collected into driver memory.

``SKIP DUPLICATE KEY ERRORS`` (mode ``ignore`` with ``report``): the rows the MERGE
leaves out — a key's rows after its first, in arrival order, and its first when the
table version the MERGE applies to holds the key — are reported with their source
partition and offset (:func:`duplicates`, as ``sinks.duplicates`` lists them), at most
:data:`MAX_REPORTED` of a batch one by one and the rest counted in one more row.
``IGNORE`` skips them without a word, as SingleStore's ``IGNORE`` does.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa

from sparkpipes.errors import SinkError
from sparkpipes.sinks.delta.commits import CommitConflict, is_conflict
from sparkpipes.sinks.delta.keys import no_duplicates, stored_rows
from sparkpipes.sinks.delta.upsert import Upsert
from sparkpipes.sinks.duplicates import (
    MAX_REPORTED,
    THERE,
    TWICE,
    capped,
    key_text,
    skipped_row,
)
from sparkpipes.sinks.frames import stream_frame
from sparkpipes.sinks.parquet import local_path, write_error
from sparkpipes.util.arrow import to_spark_schema


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def merged_rows(
    dt: Any,
    df: Any,
    upsert: Upsert,
    schema: pa.Schema,
    staged: pa.Schema | None,
    name: str,
    seq: str,
    report: Sequence[str] = (),
) -> tuple[Any, pa.Schema, list[dict[str, Any]]]:
    """The rows (and their schema) the MERGE of ``upsert`` takes from ``df`` (the refined
    staged rows, ``seq`` their arrival order) on table version ``dt``, and the duplicates
    it leaves out, reported when ``report`` names the rows' (partition, offset) columns."""
    if upsert.mode == "changes":  # the staged rows are the changes (engine.changes)
        return df.drop(seq), staged or schema, []
    if upsert.mode == "insert":
        no_duplicates(dt, df, upsert.keys, schema, name)
        return df.select(*[_q(c) for c in schema.names]), schema, []
    if upsert.mode == "update":
        types = {f.name: f.dataType.simpleString() for f in to_spark_schema(schema).fields}
        stored = stored_rows(dt, df, upsert.keys, schema)
        return upsert.fold(df, stored, seq, schema.names, types), schema, []
    skipped = []
    if report and upsert.mode == "ignore":
        skipped = duplicates(dt, df, upsert.keys, schema, seq, report, name)
    return upsert.reduce(df, seq, schema.names), schema, skipped


def duplicates(
    dt: Any,
    df: Any,
    keys: Sequence[str],
    schema: pa.Schema,
    seq: str,
    report: Sequence[str],
    table: str,
) -> list[dict[str, Any]]:
    """The rows mode ``ignore`` leaves out of ``df``, as rows of the errors store."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    part, offset = report
    win = Window.partitionBy(*[F.col(_q(k)) for k in keys]).orderBy(F.col(seq).asc())
    ranked = df.withColumn("__sp_rank", F.row_number().over(win))
    firsts = ranked.where("__sp_rank = 1")
    held = stored_rows(dt, firsts, keys, schema).select(*[_q(k) for k in keys]).distinct()
    shown = [F.col(_q(part)), F.col(_q(offset)), *[F.col(_q(k)) for k in keys]]
    later = ranked.where("__sp_rank > 1").select(*shown, F.lit(TWICE).alias("w"))
    there = firsts.join(held, list(keys), "left_semi").select(*shown, F.lit(THERE).alias("w"))
    found = later.unionByName(there)
    rows = found.orderBy(_q(part), _q(offset)).limit(MAX_REPORTED + 1).collect()
    out = [skipped_row(r[0], r[1], key_text([r[k] for k in keys]), r["w"], table) for r in rows]
    return capped(out, found.count() if len(out) > MAX_REPORTED else len(out), table)


def merge(
    dt: Any,
    rows: Any,
    schema: pa.Schema,
    upsert: Upsert,
    props: Any,
    columns: Sequence[str],
    name: str,
    uri: str,
) -> None:
    """``rows`` (of ``schema``) streamed into one delta-rs MERGE of ``upsert`` on ``dt``,
    a table of ``columns``."""
    failed: list[SinkError] = []

    def batches() -> Iterator[pa.RecordBatch]:
        try:
            yield from stream_frame(rows, schema, name)
        except SinkError as e:
            failed.append(e)  # delta-rs sees a failed stream; this is the reason
            raise

    source = pa.RecordBatchReader.from_batches(schema, batches())
    try:
        merger = dt.merge(
            source,
            upsert.predicate(),
            source_alias="s",
            target_alias="t",
            commit_properties=props,
        )
        upsert.clauses(merger, columns).execute()
    except Exception as e:  # delta-rs raises its own and Rust panics; keep the message
        if failed:
            raise failed[0] from None
        what = f"upsert into Delta table '{name}' failed"
        err = write_error(what, local_path(uri), e)
        raise (CommitConflict(err.message) if is_conflict(e) else err) from None
