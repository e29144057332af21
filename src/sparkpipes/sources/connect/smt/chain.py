"""A connector's transform chain, built from its :class:`~sparkpipes.config.transforms.
TransformChain` through the registry of Java class names, and run on chunks of records.

Building checks every option of every transform and predicate and returns all the
problems, each under its config key; a class the registry does not hold is a problem
naming it. Running applies the transforms in order; a transform with a predicate works
on the records the predicate selects (or, with ``negate``, does not) and passes the
others through, the order of records kept (when that leaves records of different shapes
in one chunk, each is written as it is; a later transform reads them as one shape, with
the fields some lack null). Records a transform refuses leave the chain there, each
with the transform's alias and class in its reason.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from sparkpipes.config.transforms import TransformChain
from sparkpipes.sources.connect.smt import jsontext
from sparkpipes.sources.connect.smt.base import (
    Options,
    Outcome,
    Predicate,
    Records,
    Refused,
    Transform,
)

#: a registry entry: options (checked as read, the connector's role among them) → the
#: transform
Factory = Callable[[Options], Transform]


@dataclass(frozen=True)
class _Step:
    alias: str
    cls: str
    transform: Transform
    predicate: Predicate | None
    negate: bool


class Chain:
    """The built transforms of one connector, applied in order."""

    def __init__(self, steps: list[_Step]) -> None:
        self.steps = steps

    def apply(self, records: Records) -> Outcome:
        refused: list[Refused] = []
        for step in self.steps:
            if not len(records):
                break
            wanted = step.transform.parts() | (step.predicate.reads if step.predicate else set())
            records = _readable(records, wanted)
            if step.predicate is None:
                out = step.transform.apply(records)
            else:
                hit = pc.fill_null(step.predicate.test(records), False)
                if step.negate:
                    hit = pc.invert(hit)
                done = step.transform.apply(records.filter(hit))
                out = Outcome(merge(done.records, records.filter(pc.invert(hit))), done.refused)
            refused += [
                Refused(r.index, f"transform '{step.alias}' ({step.cls}): {r.reason}")
                for r in out.refused
            ]
            records = out.records
        return Outcome(records, tuple(refused))

    def route(self, topic: str) -> str:
        """The topic a record of ``topic`` leaves the chain with, by its routers alone
        (each under its predicate). Meaningful where routing depends on the topic only
        (a sink connector's chain is checked for that when it is built)."""
        one = Records(
            key=pa.nulls(1),
            value=pa.nulls(1),
            topic=pa.array([topic], pa.string()),
            index=pa.array([0], pa.int32()),
        )
        for step in self.steps:
            if not step.transform.routes:
                continue
            if step.predicate is not None:
                hit = bool(pc.fill_null(step.predicate.test(one), False)[0].as_py())
                if hit == step.negate:
                    continue
            one = step.transform.apply(one).records
        return str(one.topic[0].as_py())


def _readable(records: Records, parts: frozenset[str] | set[str]) -> Records:
    """The key or value (``parts``) as typed columns where they are still JSON text (as
    a connector gave them, or as a merge left them)."""
    changes = {
        part: jsontext.parse(col)
        for part in ("key", "value")
        if part in parts and isinstance((col := getattr(records, part)).type, jsontext.JsonText)
    }
    return records.replace(**changes) if changes else records


def merge(a: Records, b: Records) -> Records:
    """Two sets of records as one, in chunk order; where a column's types differ (one
    part transformed, the other not) both go through JSON text to one type."""
    if not len(a):
        return b
    if not len(b):
        return a
    key = _one_type(a.key, b.key)
    value = _one_type(a.value, b.value)
    names = list(dict.fromkeys([n for n, _ in a.headers] + [n for n, _ in b.headers]))
    headers = []
    for name in names:
        x, y = a.header(name), b.header(name)
        x = x if x is not None else pa.nulls(len(a), y.type if y is not None else pa.null())
        y = y if y is not None else pa.nulls(len(b), x.type)
        headers.append((name, _one_type(x, y)))
    present = tuple((n, pa.concat_arrays([a.has(n), b.has(n)])) for n in names)
    both = Records(
        key=key,
        value=value,
        topic=pa.concat_arrays([a.topic, b.topic]),
        index=pa.concat_arrays([a.index, b.index]),
        partition=_concat(a.partition, b.partition, len(a), len(b)),
        offset=_concat(a.offset, b.offset, len(a), len(b)),
        timestamp=_concat(a.timestamp, b.timestamp, len(a), len(b)),
        headers=tuple(headers),
        present=present,
    )
    return both.take(pc.sort_indices(both.index))


def _concat(x: pa.Array | None, y: pa.Array | None, nx: int, ny: int) -> pa.Array | None:
    if x is None and y is None:
        return None
    kind = (x if x is not None else y).type  # type: ignore[union-attr]
    return pa.concat_arrays(
        [x if x is not None else pa.nulls(nx, kind), y if y is not None else pa.nulls(ny, kind)]
    )


def _one_type(x: pa.Array, y: pa.Array) -> pa.Array:
    if x.type == y.type:
        return pa.concat_arrays([x, y])
    if pa.types.is_null(x.type):
        return pa.concat_arrays([x.cast(y.type), y])
    if pa.types.is_null(y.type):
        return pa.concat_arrays([x, y.cast(x.type)])
    # different shapes (one part transformed): each record's JSON as it is, read again
    # (fields some records lack then null) only if a later transform needs the values
    return jsontext.verbatim(pa.concat_arrays([jsontext.dump(x), jsontext.dump(y)]))


def build(
    chain: TransformChain,
    transforms: Mapping[str, Factory],
    predicates: Mapping[str, Callable[[Options], Predicate]],
    refused: Mapping[str, str],
    role: str,
) -> tuple[Chain, list[tuple[str, str]]]:
    """The chain and every problem of it, each ``(config key, message)``."""
    problems: list[tuple[str, str]] = []
    built: dict[str, Predicate] = {}
    for p in chain.predicates:
        factory = predicates.get(p.type)
        if factory is None:
            problems.append((p.key(), _unknown("predicate", p.key(), p.type, predicates, refused)))
            continue
        opts = Options(
            f"predicates.{p.alias}", p.options, getattr(factory, "options", frozenset()), role
        )
        built[p.alias] = factory(opts)
        problems += opts.problems
    steps = []
    for s in chain.steps:
        factory = transforms.get(s.type)
        if factory is None:
            problems.append((s.key(), _unknown("transform", s.key(), s.type, transforms, refused)))
            continue
        opts = Options(
            f"transforms.{s.alias}", s.options, getattr(factory, "options", frozenset()), role
        )
        step = factory(opts)
        problems += opts.problems
        predicate = built.get(s.predicate) if s.predicate else None
        steps.append(_Step(s.alias, s.type, step, predicate, s.negate))
    return Chain(steps), problems


def _unknown(
    what: str, key: str, cls: str, known: Mapping[str, object], refused: Mapping[str, str]
) -> str:
    if cls in refused:
        return f"{key}: {what} {cls} is not supported: {refused[cls]}"
    short = sorted({n.rsplit(".", 1)[-1].split("$")[0] for n in known})
    return (
        f"{key}: {what} class {cls} is not supported (the "
        f"{'transforms' if what == 'transform' else 'predicates'} supported are: "
        f"{', '.join(short)})"
    )
