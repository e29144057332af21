"""Records for the SMT tests, from Python rows (the tests' convenience, not the path)."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from sparkpipes.config.transforms import parse_chain
from sparkpipes.sources.connect.smt import Chain, Records, chain_of, jsontext


def records(
    values: list[Any],
    *,
    keys: list[Any] | None = None,
    topics: list[str] | None = None,
    timestamps: list[int | None] | None = None,
) -> Records:
    n = len(values)
    return Records(
        key=jsontext.parse(pa.array([json.dumps(k) for k in (keys or [None] * n)])),
        value=jsontext.parse(pa.array([json.dumps(v) for v in values])),
        topic=pa.array(topics or ["t"] * n, pa.string()),
        index=pa.array(range(n), pa.int32()),
        timestamp=pa.array(timestamps, pa.int64()) if timestamps is not None else None,
    )


def chain(cfg: dict[str, str], role: str = "source") -> Chain:
    parsed, problems = parse_chain(cfg)
    built, more = chain_of(parsed, role)
    assert not problems and not more, problems + more
    return built


def problems(cfg: dict[str, str], role: str = "source") -> list[tuple[str, str]]:
    parsed, found = parse_chain(cfg)
    _, more = chain_of(parsed, role)
    return found + more


def one(cls: str, role: str = "source", **options: str) -> Chain:
    """A chain of one transform ``cls`` (short name) with ``options``."""
    name = cls if "." in cls else f"org.apache.kafka.connect.transforms.{cls}"
    return chain(
        {
            "transforms": "x",
            "transforms.x.type": name,
            **{f"transforms.x.{k.replace('_', '.')}": v for k, v in options.items()},
        },
        role,
    )


def values(out: Any) -> list[Any]:
    return [json.loads(t) for t in jsontext.dump(out.records.value).to_pylist()]


def keys(out: Any) -> list[Any]:
    return [json.loads(t) for t in jsontext.dump(out.records.key).to_pylist()]
