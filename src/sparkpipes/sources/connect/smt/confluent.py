"""Confluent's ``io.confluent.connect.transforms.Filter$Value`` / ``$Key`` (the
``confluentinc/connect-transforms`` plugin), as its documentation ("Filter (Confluent)")
defines it: records whose key or value matches ``filter.condition``, a JsonPath
predicate, are kept (``filter.type=include``) or dropped (``exclude``); a record
lacking what the path needs takes ``missing.or.null.behavior``: ``fail`` (the default:
the record fails, and ``errors.tolerance`` decides), ``include`` or ``exclude``.

The path is Jayway JsonPath's (``jsonpath``: the subset the docs and real configs use,
anything else refused by name when the config is checked). It matches when it selects
something: ``$[?(@.product =~ /.*Stout/)]`` tests the value itself,
``$.key[?(@.nestedKey == "value1" || @.nestedKey == "value2")]`` its ``key`` object.
"Missing" is Jayway's ``PathNotFoundException`` (a property missing before the filter,
or something that is not an object where the path needs one), a null the filter meets
where it needs an object, and a null key or value (a tombstone); inside the filter a
missing field is *undefined* and matches nothing, as the docs say. A condition without
a filter (``$.a.b``) is refused: which records a plain path selects is not documented.
The record is read as Connect's converters give it: structs as objects, arrays, text,
numbers (floats as Java writes them), booleans; a value of another type the condition
compares (a timestamp, a decimal, bytes) fails its record, naming it.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkpipes.sources.connect.smt import jsonpath
from sparkpipes.sources.connect.smt.base import Options, Outcome, Records, Refused, Transform

BEHAVIOURS = ("fail", "include", "exclude")


class Filter(Transform):
    """See the module docstring."""

    options: ClassVar[frozenset[str]] = frozenset(
        {"filter.condition", "filter.type", "missing.or.null.behavior"}
    )

    def __init__(self, opts: Options, part: str = "value") -> None:
        super().__init__(opts, part)
        self.condition = opts.text("filter.condition", required=True) or ""
        self.include = opts.choice("filter.type", ("include", "exclude")) == "include"
        self.missing = opts.choice("missing.or.null.behavior", BEHAVIOURS, "fail")
        self.path: jsonpath.Path | None = None
        if self.condition:
            try:
                self.path = jsonpath.compile_path(self.condition)
            except jsonpath.Unsupported as e:
                opts.problem("filter.condition", f"'{self.condition}': {e}")
            except ValueError as e:
                opts.problem("filter.condition", f"'{self.condition}' is not a JsonPath: {e}")
        if self.path is not None and not self.path.has_filter:
            opts.problem(
                "filter.condition",
                f"'{self.condition}' has no filter [?(…)]: which records a plain path "
                "selects is not documented by Confluent; write the condition as a filter",
            )

    def apply(self, records: Records) -> Outcome:
        path = self.path
        assert path is not None
        keep: list[bool] = []
        failed: dict[str, list[int]] = {}
        for i, doc in enumerate(documents(self.operand(records))):
            why = None
            try:
                if doc is None:
                    raise jsonpath.Missing(f"the record's {self.part} is null")
                hit = jsonpath.matches(path, doc)
            except jsonpath.Missing as e:
                if self.missing == "fail":
                    why = (
                        f"{e} (filter.condition '{self.condition}', missing.or.null.behavior fail)"
                    )
                hit = self.missing == "include"
                keep.append(why is None and hit)
            except jsonpath.NotComparable as e:
                why = f"{e} (filter.condition '{self.condition}')"
                keep.append(False)
            else:
                keep.append(hit == self.include)
            if why is not None:
                failed.setdefault(why, []).append(i)
        refused = tuple(
            Refused(records.index.take(pa.array(rows, pa.int64())), why)
            for why, rows in failed.items()
        )
        return Outcome(records.filter(pa.array(keep, pa.bool_())), refused)


def documents(column: pa.Array) -> list[Any]:
    """Each row of ``column`` as the JSON-like value JsonPath reads: dicts, lists, text,
    booleans, numbers as Decimals (a float as Java's ``Double``/``Float.toString`` writes
    it), None; a value of another type as :class:`jsonpath.Opaque`."""
    t = column.type
    if pa.types.is_struct(t):
        names = [f.name for f in t]
        children = [documents(pc.struct_field(column, [i])) for i in range(len(names))]
        valid = column.is_valid().to_pylist()
        return [
            dict(zip(names, (c[row] for c in children), strict=True)) if ok else None
            for row, ok in enumerate(valid)
        ]
    if pa.types.is_map(t) and pa.types.is_string(t.key_type):  # a Connect map: an object
        # keys and items are the whole child arrays, offsets the slice's (absolute)
        names, items = column.keys.to_pylist(), documents(column.items)
        offsets, valid = column.offsets.to_pylist(), column.is_valid().to_pylist()
        return [
            dict(zip(names[a:b], items[a:b], strict=True)) if ok else None
            for a, b, ok in zip(offsets, offsets[1:], valid, strict=False)
        ]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        items = documents(column.flatten())
        offsets = column.offsets.to_pylist()
        base = offsets[0]
        valid = column.is_valid().to_pylist()
        return [
            items[offsets[r] - base : offsets[r + 1] - base] if ok else None
            for r, ok in enumerate(valid)
        ]
    values = column.to_pylist()
    if pa.types.is_boolean(t) or pa.types.is_string(t) or pa.types.is_large_string(t):
        return values
    if pa.types.is_null(t):
        return values
    if pa.types.is_integer(t):
        return [None if v is None else Decimal(v) for v in values]
    if pa.types.is_floating(t):
        single = pa.types.is_float32(t) or pa.types.is_float16(t)
        return [None if v is None else _java_float(v, single) for v in values]
    kind = str(t)
    return [None if v is None else jsonpath.Opaque(kind) for v in values]


def _java_float(value: float, single: bool) -> Any:
    """A float as a Decimal of the text Java's ``toString`` writes (shortest digits;
    plain from 10^-3 to 10^7, else ``d.dddE±n``); a value that is not finite as
    :class:`jsonpath.Opaque` (``BigDecimal`` would not take ``NaN``)."""
    if value != value or value in (float("inf"), float("-inf")):
        return jsonpath.Opaque("non-finite float")
    if value == 0:
        return Decimal("-0.0") if str(value).startswith("-") else Decimal("0.0")
    shortest = Decimal(str(np.float32(value)) if single else repr(value))
    sign, digits, _ = shortest.normalize().as_tuple()
    text = "".join(map(str, digits))
    exponent = shortest.adjusted()
    prefix = "-" if sign else ""
    if 1e-3 <= abs(value) < 1e7:
        plain = format(shortest.normalize(), "f").lstrip("-")
        return Decimal(prefix + (plain if "." in plain else plain + ".0"))
    return Decimal(f"{prefix}{text[0]}.{text[1:] or '0'}E{exponent}")
