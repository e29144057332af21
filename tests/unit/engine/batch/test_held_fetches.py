"""A steady stream's small fetches are decoded together (``task._Held``): the rows, their
order and every skipped record's offset are what decoding each fetch alone gives."""

from __future__ import annotations

import json

import pyarrow as pa

from sparkpipes.engine.batch import task
from sparkpipes.formats.json import JsonDecoder
from sparkpipes.sources import Fetched

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def _fetch(first: int, n: int, bad: int | None = None, **extra) -> Fetched:
    values = [
        b"{not json" if first + i == bad else json.dumps({"id": first + i, "name": "x"}).encode()
        for i in range(n)
    ]
    return Fetched(
        values=pa.array(values, pa.binary()),
        positions=pa.array(range(first, first + n), pa.int64()),
        **extra,
    )


def test_joined_fetches_decode_to_the_same_rows_and_the_same_bad_offsets():
    parts = [_fetch(0, 5), _fetch(5, 3, bad=6), _fetch(8, 0, dropped=2), _fetch(8, 4)]
    joined = Fetched.joined(parts)
    assert joined.positions.to_pylist() == list(range(12))
    assert joined.dropped == 2
    decoded = JsonDecoder(SCHEMA).decode_fetched(joined, "0")
    assert [joined.positions[e.index].as_py() for e in decoded.errors] == [6]
    assert decoded.table.column("id").to_pylist() == [i for i in range(12) if i != 6]


def test_keys_and_headers_travel_with_their_records():
    a = _fetch(0, 2, keys=pa.array([b"a", b"b"]), timestamps=pa.array([1, 2], pa.int64()))
    b = _fetch(2, 1, keys=pa.array([b"c"]), timestamps=pa.array([3], pa.int64()))
    joined = Fetched.joined([a, b])
    assert joined.keys.to_pylist() == [b"a", b"b", b"c"]
    assert joined.timestamps.to_pylist() == [1, 2, 3]
    assert not a.joins(_fetch(3, 1))  # no keys: decoded apart


def test_held_fetches_are_decoded_once_enough_are_held_and_at_the_end(monkeypatch):
    monkeypatch.setattr(task, "DECODE_RECORDS", 10)
    calls: list[list[int]] = []

    def take(f: Fetched) -> int:
        calls.append(f.positions.to_pylist())
        return len(f)

    held = task._Held(take)
    assert held.add(_fetch(0, 4)) == 0
    assert held.add(_fetch(4, 4)) == 0
    assert held.add(_fetch(8, 4)) == 12  # 12 >= 10: all three decoded in one call
    assert held.add(_fetch(12, 1)) == 0
    assert held.take() == 1
    assert held.take() == 0
    assert calls == [list(range(12)), [12]]


def test_a_table_fetch_is_never_held_back():
    table = pa.table({"id": [1], "name": ["x"]})
    held = task._Held(len)
    held.add(_fetch(0, 2))
    tabled = Fetched(values=pa.array([], pa.binary()), positions=pa.array([9]), table=table)
    assert held.add(tabled) == 3  # what was held, then the table's row, each decoded apart
