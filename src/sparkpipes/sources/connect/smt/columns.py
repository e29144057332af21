"""A source connector's records (``RecordColumns``: JSON text of keys and values) through
a transform chain and back, in the task that fetched them.

The record's key is the ``id`` column's JSON (a connector that gives no key, as the JDBC
source, shows its partition and offset there, and that is what a key transform before
``ValueToKey`` sees), its value the ``record`` column's, its topic the ``topic`` column.
A source record has no Kafka partition or offset (Connect's ``SourceRecord`` neither); its
timestamp is the connector's, where the connector sets one (``record_timestamps``).
Records a transform drops (``Filter``) are gone; records it refuses come back in
:attr:`Transformed.refused` with their offset, for ``errors.tolerance`` to decide.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from sparkpipes.sources.connect.base import RecordColumns
from sparkpipes.sources.connect.smt import jsontext
from sparkpipes.sources.connect.smt.base import Records
from sparkpipes.sources.connect.smt.chain import Chain


@dataclass(frozen=True)
class Rejected:
    """A record a transform refused: its offset (the connector's JSON), why, the value."""

    position: str
    reason: str
    raw: bytes | None


@dataclass(frozen=True)
class Transformed:
    columns: RecordColumns
    refused: tuple[Rejected, ...] = ()


def transform(chain: Chain, cols: RecordColumns, *, timestamps: bool) -> Transformed:
    """``cols`` through ``chain``: the records kept, in order, and the ones refused."""
    n = len(cols.offsets)
    if n == 0:
        return Transformed(cols)
    records = Records(  # JSON text until a step reads it as values (``Transform.reads``)
        key=jsontext.verbatim(cols.id),
        value=jsontext.verbatim(cols.record),
        topic=cols.topic,
        index=pa.array(np.arange(n, dtype=np.int32)),
        timestamp=cols.timestamps if timestamps else None,
    )
    try:
        out = chain.apply(records)
    except jsontext.MixedTypes as e:
        everything = tuple(
            Rejected(str(cols.offsets[i].as_py()), str(e), _raw(cols, i)) for i in range(n)
        )
        return Transformed(_empty(cols), everything)
    kept = out.records.index
    refused = tuple(
        Rejected(
            str(cols.offsets[i].as_py()),
            r.reason,
            _raw(cols, i),
        )
        for r in out.refused
        for i in r.index.to_pylist()
    )
    result = RecordColumns(
        topic=out.records.topic.cast(pa.string()),
        id=jsontext.dump(out.records.key),
        record=jsontext.dump(out.records.value),
        offsets=cols.offsets.take(kept),
        timestamps=cols.timestamps.take(kept) if cols.timestamps is not None else None,
    )
    return Transformed(result, refused)


def _raw(cols: RecordColumns, i: int) -> bytes | None:
    text = cols.record[i].as_py()
    return None if text is None else text.encode()


def _empty(cols: RecordColumns) -> RecordColumns:
    none = pa.array([], pa.int32())
    return RecordColumns(
        topic=cols.topic.take(none),
        id=cols.id.take(none),
        record=cols.record.take(none),
        offsets=cols.offsets.take(none),
        timestamps=cols.timestamps.take(none) if cols.timestamps is not None else None,
    )
