"""Results as the MySQL client prints them: aligned, boxed, with a row count."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from typing import Any


def cell(v: Any) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, bytes):
        return v.decode("utf-8", errors="replace")
    if isinstance(v, dt.datetime):
        return v.isoformat(sep=" ")
    if isinstance(v, float):
        return f"{v:.15g}"  # every digit a double holds, no exponent for epoch seconds
    if isinstance(v, list | dict):
        return json.dumps(v, default=str)
    return str(v)


def table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    texts = [[cell(v).replace("\n", "\\n") for v in r] for r in rows]
    widths = [len(c) for c in columns]
    for r in texts:
        for i, v in enumerate(r):
            widths[i] = max(widths[i], len(v))
    line = "+" + "+".join("-" * (w + 2) for w in widths) + "+"

    def fmt(vals: Sequence[str]) -> str:
        return "| " + " | ".join(v.ljust(w) for v, w in zip(vals, widths)) + " |"

    out = [line, fmt(list(columns)), line]
    out += [fmt(r) for r in texts]
    out.append(line)
    return "\n".join(out)


def result(res, seconds: float) -> str:
    if res.has_rows:
        n = len(res.rows)
        if n == 0:
            return f"Empty set ({seconds:.2f} sec)"
        rows = f"{n} row{'s' if n != 1 else ''}"
        return f"{table(res.columns, res.rows)}\n{rows} in set ({seconds:.2f} sec)"
    return f"{res.message or 'OK'} ({seconds:.2f} sec)"
