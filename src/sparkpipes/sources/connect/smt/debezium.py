"""Debezium's ``io.debezium.transforms.ExtractNewRecordState`` (event flattening), for the
change events a sink connector reads: the value becomes the row state ``after`` the
change, on struct columns.

What is promised, as Debezium's documentation and ``ExtractNewRecordState`` give it:

- a value that is not a change event (no ``op`` and no ``after``/``before`` fields: a
  heartbeat, a schema change) passes unchanged;
- a tombstone (null value) is dropped with ``drop.tombstones=true`` (the default) and
  passes otherwise;
- a delete (``op`` = ``d``) is dropped with ``delete.handling.mode=drop`` (the default),
  becomes a tombstone with ``none``, and with ``rewrite`` becomes the ``before`` state
  with the text field ``__deleted`` = ``"true"`` (every other event then carries
  ``__deleted`` = ``"false"``); ``delete.tombstone.handling.mode`` (Debezium 2.5+:
  ``drop``, ``tombstone``, ``rewrite``, ``rewrite-with-tombstone``,
  ``delete-to-tombstone``) sets both at once and wins over them;
- ``add.fields`` appends fields of the envelope (``op``, ``ts_ms``, …) or of its
  ``source`` block (``table``, ``db``, ``lsn``, or ``source.ts_ms``) named
  ``add.fields.prefix`` (``__``) + the name with ``.`` as ``_``; ``add.headers`` does
  the same into headers (``add.headers.prefix``). A field the event does not have is
  null, as Debezium adds it optional.

A dropped record is gone, not an error (Connect drops what a transform returns null
for).
"""

from __future__ import annotations

from typing import ClassVar

import pyarrow as pa
import pyarrow.compute as pc

from sparkpipes.sources.connect.smt.base import (
    Options,
    Outcome,
    Records,
    Transform,
    fields_of,
    struct_of,
)

#: ``delete.tombstone.handling.mode`` → (delete.handling.mode, drop.tombstones)
_TOMBSTONE_MODES = {
    "drop": ("drop", True),
    "tombstone": ("none", False),
    "rewrite": ("rewrite", True),
    "rewrite-with-tombstone": ("rewrite", False),
    "delete-to-tombstone": ("none", True),
}
_DELETED = "__deleted"


class ExtractNewRecordState(Transform):
    """See the module docstring. Options of Debezium that change nothing loaded here
    (``route.by.field`` needs records routed to tables per record and is refused by
    name; ``drop.fields.*`` work on keys and headers, which a sink does not load) are
    refused when they would change rows, accepted otherwise."""

    options: ClassVar[frozenset[str]] = frozenset(
        {
            "drop.tombstones",
            "delete.handling.mode",
            "delete.tombstone.handling.mode",
            "add.fields",
            "add.fields.prefix",
            "add.headers",
            "add.headers.prefix",
            "route.by.field",
            "replace.null.with.default",
        }
    )

    def __init__(self, opts: Options, part: str = "value") -> None:
        super().__init__(opts, part)
        self.drop_tombstones = opts.boolean("drop.tombstones", True)
        self.mode = opts.choice("delete.handling.mode", ("drop", "rewrite", "none"), "drop")
        if "delete.tombstone.handling.mode" in opts.given:
            both = opts.choice(
                "delete.tombstone.handling.mode", tuple(_TOMBSTONE_MODES), "tombstone"
            )
            self.mode, self.drop_tombstones = _TOMBSTONE_MODES[both]
        self.fields = opts.list("add.fields")
        self.field_prefix = opts.text("add.fields.prefix", "__") or ""
        self.headers = opts.list("add.headers")
        self.header_prefix = opts.text("add.headers.prefix", "__") or ""
        opts.boolean("replace.null.with.default", True)
        if opts.text("route.by.field"):
            opts.problem(
                "route.by.field",
                "is not supported: it routes each record to the table a field names, and a "
                "sink connector's tables are decided per topic here",
            )
        for spec in (*self.fields, *self.headers):
            if ":" in spec:
                opts.problem(
                    "add.fields" if spec in self.fields else "add.headers",
                    f"renames '{spec}' (field:name), not supported yet",
                )

    def apply(self, records: Records) -> Outcome:
        value = records.value
        if pa.types.is_null(value.type):  # only tombstones
            return Outcome(records if not self.drop_tombstones else _none(records))
        names = fields_of(value)
        if "op" not in names or not ({"after", "before"} & set(names)):
            return Outcome(records)  # not a change event: unchanged
        if self.drop_tombstones:
            records = records.filter(value.is_valid())
            value = records.value
        op = _child(value, "op", pa.string())
        deleted = pc.fill_null(pc.equal(op, "d"), False)
        if self.mode == "drop":
            keep = pc.invert(deleted)
            records, value, op, deleted = (
                records.filter(keep),
                value.filter(keep),
                op.filter(keep),
                deleted.filter(keep),
            )
        after = _child(value, "after", None)
        before = _child(value, "before", None)
        state = after
        if self.mode == "rewrite" and pc.any(deleted).as_py():
            state = _choose(deleted, before, after)
        if pa.types.is_null(state.type):
            state = pa.nulls(len(records), pa.struct([]))
        names_out = fields_of(state)
        cols = [pc.struct_field(state, [i]) for i in range(len(names_out))]
        for spec in self.fields:
            names_out.append(self.field_prefix + spec.replace(".", "_"))
            cols.append(_meta(value, spec))
        if self.mode == "rewrite":
            names_out.append(_DELETED)
            cols.append(pc.if_else(deleted, "true", "false"))
        # a tombstone stays null; a delete under ``none`` becomes one
        valid = pc.and_(value.is_valid(), state.is_valid())
        if self.mode == "none":
            valid = pc.and_(valid, pc.invert(deleted))
        out = struct_of(names_out, cols, valid, len(records))
        headers = dict(records.headers)
        for spec in self.headers:
            headers[self.header_prefix + spec.replace(".", "_")] = _meta(value, spec)
        return Outcome(records.replace(value=out, headers=tuple(headers.items())))


def _none(records: Records) -> Records:
    return records.filter(pa.array([False] * len(records), pa.bool_()))


def _child(column: pa.Array, name: str, kind: pa.DataType | None) -> pa.Array:
    """Field ``name`` of a struct column (nulls of ``kind`` where it has none)."""
    names = fields_of(column)
    if name not in names:
        return pa.nulls(len(column), kind or pa.null())
    out = pc.struct_field(column, [names.index(name)])
    return out.cast(kind) if kind is not None and out.type != kind else out


def _choose(mask: pa.Array, yes: pa.Array, no: pa.Array) -> pa.Array:
    """``yes`` where ``mask``, else ``no``: two struct columns of the same table's rows
    (before and after) as one, their fields the union in order."""
    if pa.types.is_null(yes.type):
        if pa.types.is_null(no.type):
            return no
        return pc.if_else(mask, pa.scalar(None, no.type), no)
    if pa.types.is_null(no.type):
        return pc.if_else(mask, yes, pa.scalar(None, yes.type))
    names = list(dict.fromkeys(fields_of(no) + fields_of(yes)))
    cols = []
    for name in names:
        a = _child(yes, name, None)
        b = _child(no, name, None)
        kind = b.type if not pa.types.is_null(b.type) else a.type
        cols.append(pc.if_else(mask, a.cast(kind), b.cast(kind)))
    valid = pc.if_else(mask, yes.is_valid(), no.is_valid())
    return struct_of(names, cols, valid, len(mask))


def _meta(envelope: pa.Array, spec: str) -> pa.Array:
    """``add.fields`` item ``spec``: a field of the envelope, else of its ``source``
    block (``source.x`` names one there explicitly)."""
    path = spec.split(".")
    if path[0] != "source" and path[0] in fields_of(envelope):
        return _child(envelope, path[0], None)
    source = _child(envelope, "source", None)
    name = path[-1] if path[0] == "source" else spec
    if pa.types.is_struct(source.type) and name in fields_of(source):
        return _child(source, name, None)
    return pa.nulls(len(envelope), pa.string())
