"""What a source holds now, read for ``INFER PIPELINE`` and ``CREATE INFERRED PIPELINE``
(nothing is loaded, no offsets move).

A front end infers a table from a :class:`Sample`: the first records of the source as its
format cuts them (lines of CSV or JSON, with ``IGNORE n LINES`` and ``LINES …`` applied;
messages of a topic), read from its partitions in order from their earliest offsets; or,
for objects of FORMAT AVRO and PARQUET, the schema written in the first object (Avro's
writer schema, Parquet's), which says the types without reading a record; for Avro
messages, the schema the statement gives (``SCHEMA '…'``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from sparkpipes.config import PipelineSpec
from sparkpipes.engine.batch.assembly import build_source_of, framed
from sparkpipes.errors import ConfigError, SparkpipesError
from sparkpipes.formats import build_decoder
from sparkpipes.sources.base import Source

#: records a sample holds at most
SAMPLE_RECORDS = 1000
#: the longest a sample waits for a partition's records
SAMPLE_WAIT_S = 5.0


@dataclass(frozen=True)
class Sample:
    """The first ``records`` (raw payloads, in order), or the ``avro_schema`` (parsed) or
    ``parquet_schema`` that says the records' types; ``origin`` names what was read."""

    origin: str
    records: tuple[bytes, ...] = ()
    avro_schema: Any = None
    parquet_schema: pa.Schema | None = None


def sample(spec: PipelineSpec, limit: int = SAMPLE_RECORDS) -> Sample:
    """Read what inferring ``spec``'s table needs; ConfigError when the source holds
    nothing to infer from, or a format it cannot be inferred from here."""
    fmt = spec.format.kind
    source = build_source_of(spec)
    if fmt == "avro" and not source.lists_files:
        schema = spec.format.options.get("schema")
        if not schema:
            raise ConfigError(
                "INFER of Avro messages reads their schema from the statement: give FORMAT "
                "AVRO SCHEMA '<Avro schema>' (a schema registry's is not looked up)",
                pipeline=spec.name,
            )
        return Sample(source.label(), avro_schema=json.loads(schema))
    meta = source.metadata()
    try:
        parts = sorted(meta.partitions())
        if not parts:
            raise ConfigError(
                f"nothing to infer from: {source.label()} does not exist or holds no records",
                pipeline=spec.name,
            )
        if source.lists_files and fmt in ("avro", "parquet"):
            return _schema_of(source, parts[0], fmt)
        decoder = build_decoder(fmt, pa.schema([("record", pa.string())]), (), spec.format.csv)
        cut = framed(spec, source, decoder)
        records: list[bytes] = []
        for p in parts:
            records += _first(cut, meta, p, limit - len(records))
            if len(records) >= limit:
                break
    finally:
        meta.close()
    if not records:
        raise ConfigError(
            f"nothing to infer from: {source.label()} does not exist or holds no records"
        )
    return Sample(f"{source.label()}", records=tuple(records))


def _first(source: Source, meta: Any, partition: str, limit: int) -> list[bytes]:
    """Up to ``limit`` records of ``partition``, from its earliest offset."""
    consumer = source.consumer(partition, out_of_range="earliest")
    out: list[bytes] = []
    try:
        consumer.open(source.start_offset(meta, partition, "earliest"))
        while len(out) < limit:
            fetched = consumer.fetch(limit - len(out), SAMPLE_WAIT_S)
            out += [v for v in fetched.values.to_pylist() if v is not None]
            if fetched.at_end or len(fetched) == 0:
                break
    finally:
        consumer.close()
    return [v.encode() if isinstance(v, str) else bytes(v) for v in out]


def _schema_of(source: Any, path: str, fmt: str) -> Sample:
    """The schema written in object ``path``: Avro's writer schema, Parquet's."""
    try:
        with source.filesystem.open(path, "rb") as f:
            if fmt == "avro":
                import fastavro

                return Sample(path, avro_schema=fastavro.reader(f).writer_schema)
            import pyarrow.parquet as pq

            return Sample(path, parquet_schema=pq.ParquetFile(f).schema_arrow)
    except SparkpipesError:
        raise
    except Exception as e:  # not the format it says, or unreadable
        raise ConfigError(
            f"cannot read the {fmt.upper()} schema of '{path}': {str(e).splitlines()[0]}"
        ) from None
