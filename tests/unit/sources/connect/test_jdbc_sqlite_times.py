"""SQLite keeps timestamps as text and compares them through ``strftime`` at the
millisecond, rounding; a row's offset must be that same value, or a row whose time rounds
up (``…00.1239`` to ``.124``) matches ``ts > offset`` again and is read in every batch."""

from __future__ import annotations

import json
import sqlite3

import pytest

from sparkpipes.sources.connect.jdbc_dialects import parse_url
from sparkpipes.sources.connect.jdbc_read import IncrementalReader, Settings

ROWS = [
    (1, "2024-01-01 10:00:00.1231", "a"),
    (2, "2024-01-01 10:00:00.1239", "b"),
    (3, "2024-01-01 10:00:00.124", "c"),
    (4, "2024-01-01T10:00:00.124Z", "d"),
    (5, "2024-01-01 10:00:01", "e"),
]


@pytest.mark.parametrize(
    ("mode", "incrementing"), [("timestamp", None), ("timestamp+incrementing", "id")]
)
@pytest.mark.parametrize("batch", [1, 2, 10])
def test_each_row_is_read_once_whatever_its_sub_millisecond_digits(
    tmp_path, mode, incrementing, batch
):
    path = tmp_path / "t.db"
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, ts TEXT NOT NULL, v TEXT)")
        con.executemany("INSERT INTO t VALUES (?, ?, ?)", ROWS)
    db = parse_url(f"jdbc:sqlite:{path}", None, None, None)
    settings = Settings(db, mode, incrementing, ("ts",), 0, "p_", batch, True)
    offset: dict = {}
    seen: list[int] = []
    for _ in range(12):
        reader = IncrementalReader(settings)
        reader.open({"table": "main.t"}, offset)
        polled = reader.poll(batch, 1.0)
        reader.close()
        if polled.columns is not None:
            records = [json.loads(x) for x in polled.columns.record.to_pylist()]
            assert all("__sp_ts" not in r for r in records)
            seen += [r["id"] for r in records]
        offset = polled.offset
        if polled.at_end and polled.columns is None:
            break
    assert sorted(seen) == [1, 2, 3, 4, 5] and len(seen) == 5
