"""Decoders turn a column of raw record payloads into an Arrow table with the target schema.

Contract
    ``decode(values)`` returns a table with exactly the target columns, in order and of the
    target types, holding one row for every record that decoded, plus a
    ``RecordError`` for every record that did not (by its index in ``values``). No record
    is both or neither. Whether an error fails the batch or goes to the errors store is
    the caller's decision.

Fast path and slow path
    A decoder first hands the whole chunk to an Arrow reader (``pyarrow.json``,
    ``pyarrow.csv``) with an explicit schema; only if that rejects the chunk does it decode
    that chunk record by record in Python, with lenient coercion (a number into a string
    column, epoch milliseconds into a timestamp) and an exact reason per bad record.
"""

from __future__ import annotations

import abc
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from sparkpipes.config import CsvOptions, FieldMapping
from sparkpipes.formats.coerce import coerce_column
from sparkpipes.sources.base import Fetched, Framing
from sparkpipes.sources.framing import LineFraming


@dataclass(frozen=True)
class RecordError:
    index: int
    reason: str


@dataclass(frozen=True)
class Decoded:
    table: pa.Table
    kept: pa.Array  # int32 indices into the input of the rows in ``table``
    errors: tuple[RecordError, ...]


class Decoder(abc.ABC):
    """Decodes payloads into ``schema``. Pickled to executors: no I/O in __init__."""

    #: records arrive in columns (Parquet, Avro objects), never as payloads of a stream
    columnar: ClassVar[bool] = False

    def __init__(
        self,
        schema: pa.Schema,
        mapping: Sequence[FieldMapping] = (),
        csv: CsvOptions | None = None,
        *,
        text_values: bool = False,
    ) -> None:
        self.schema = schema
        #: each value reaches its column as text first (SingleStore's reading; see
        #: ``FormatSpec.text_values``): decoders whose values are not text already honour it
        self.text_values = text_values
        by_column = {m.column: m.path for m in mapping}
        self.paths: dict[str, tuple[str, ...]] = {
            f.name: by_column.get(f.name, (f.name,)) for f in schema
        }
        self.csv = csv or CsvOptions()
        #: the columns whose mapping does not make a missing path NULL
        self.on_missing: dict[str, FieldMapping] = {
            m.column: m for m in mapping if m.on_missing != "null"
        }

    def pick(self, rec: Any, *, nested_as_json: bool = False) -> dict[str, Any]:
        """Each column's value from a decoded record by its path (None where a key is
        missing); with ``nested_as_json``, an object or array bound for a text column
        as JSON text."""
        out = {}
        for name, path in self.paths.items():
            v: Any = rec
            for key in path:
                if not isinstance(v, dict) or key not in v:
                    v = self._missing(name, path)
                    break
                v = v[key]
            nested = nested_as_json and isinstance(v, (dict, list))
            if nested and pa.types.is_string(self.schema.field(name).type):
                v = json.dumps(v, default=str)
            out[name] = v
        return out

    def _missing(self, column: str, path: tuple[str, ...]) -> Any:
        """The value of a path the record does not have: NULL, the mapping's DEFAULT, or
        a bad record."""
        m = self.on_missing.get(column)
        if m is None:
            return None
        if m.on_missing == "default":
            return m.default
        raise ValueError(
            f"the record has no {'::'.join(path)} (for {column}; a mapping with DEFAULT "
            "gives a value for records without it)"
        )

    def framing(self, skip_lines: int = 0) -> Framing:
        """How objects of this format are cut into records (object-store sources)."""
        return LineFraming(skip_lines)

    @property
    def framing_only(self) -> str | None:
        """An option of this decoder that only its :meth:`framing` honours (named), so
        that a stream's records, which are not framed, cannot take it."""
        return None

    def decode_fetched(self, fetched: Fetched, partition: str) -> Decoded:
        """The records of one fetch of ``partition``: their payloads (or columns). A
        decoder that reads more of a record than its payload (its key, headers and time:
        ``formats.connect``) overrides this; the others decode the payloads alone."""
        if fetched.table is not None:
            return self.decode_table(fetched.table)
        return self.decode(fetched.values)

    def decode_table(self, table: pa.Table) -> Decoded:
        """Records that arrive in columns; formats of payloads do not take them."""
        raise NotImplementedError(f"{type(self).__name__} decodes payloads, not tables")

    def decode(self, values: pa.Array) -> Decoded:
        n = len(values)
        if n == 0:
            return Decoded(self.schema.empty_table(), all_kept(0), ())
        if values.null_count == 0 and self._fast_ok(values):
            try:
                return Decoded(self._fast(values), all_kept(n), ())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, Mismatch):
                pass
        return self._slow(values, self._parse_one)

    def _fast_ok(self, values: pa.Array) -> bool:
        return True

    @abc.abstractmethod
    def _fast(self, values: pa.Array) -> pa.Table:
        """The whole chunk through an Arrow reader; raise (ArrowInvalid, Mismatch) to fall
        back to the slow path."""

    @abc.abstractmethod
    def _parse_one(self, raw: bytes) -> dict[str, Any]:
        """One record: column → Python value; raise ValueError with the reason."""

    def _slow(self, values: pa.Array, parse: Callable[[bytes], dict[str, Any]]) -> Decoded:
        """Record by record: ``parse`` gives column → Python value, or raises ValueError."""
        rows: dict[str, list[Any]] = {f.name: [] for f in self.schema}
        kept: list[int] = []
        errors: list[RecordError] = []
        for i, raw in enumerate(values.to_pylist()):
            if raw is None:
                errors.append(RecordError(i, "record has no value (null payload)"))
                continue
            try:
                rec = parse(raw)
                converted = {f.name: coerce_column(rec.get(f.name), f) for f in self.schema}
            except ValueError as e:
                errors.append(RecordError(i, str(e)))
                continue
            except RecursionError:
                errors.append(RecordError(i, "the record is nested too deeply to decode"))
                continue
            for name, v in converted.items():
                rows[name].append(v)
            kept.append(i)
        try:
            table = pa.table(
                {f.name: pa.array(rows[f.name], f.type) for f in self.schema}, schema=self.schema
            )
        except (UnicodeError, pa.ArrowException, ValueError, TypeError, OverflowError):
            return self._without_unstorable(rows, kept, errors)
        return Decoded(table, pa.array(kept, pa.int32()), tuple(errors))

    def _without_unstorable(
        self, rows: dict[str, list[Any]], kept: list[int], errors: list[RecordError]
    ) -> Decoded:
        """The rows of :meth:`_slow` less those with a value Arrow cannot store (a lone
        surrogate ``"\\ud800"`` in a string): each a bad record of its own."""
        bad: dict[int, str] = {}
        for f in self.schema:
            for j, v in enumerate(rows[f.name]):
                if j in bad:
                    continue
                try:
                    pa.array([v], f.type)
                except (UnicodeError, pa.ArrowException, ValueError, TypeError, OverflowError) as e:
                    reason = str(e).split("\n")[0][:200]
                    bad[j] = f"column '{f.name}': cannot store the value: {reason}"
        good = [j for j in range(len(kept)) if j not in bad]
        table = pa.table(
            {f.name: pa.array([rows[f.name][j] for j in good], f.type) for f in self.schema},
            schema=self.schema,
        )
        more = [RecordError(kept[j], reason) for j, reason in bad.items()]
        errors = sorted([*errors, *more], key=lambda e: e.index)
        return Decoded(table, pa.array([kept[j] for j in good], pa.int32()), tuple(errors))


class OptionsDecoder(Decoder):
    """A decoder its format's options configure as well (``FormatSpec.decoder_options``:
    Pinot's ``decoder.prop.*``, a schema registry's URL and login, a descriptor set).
    Every such decoder is built alike, by :func:`formats.build_decoder`; a subclass
    states what it makes of :attr:`options` in :meth:`configure` (no I/O: decoders are
    pickled to executors) and raises ConfigError naming an option that is wrong."""

    def __init__(
        self,
        schema: pa.Schema,
        mapping: Sequence[FieldMapping] = (),
        csv: CsvOptions | None = None,
        *,
        options: Mapping[str, str],
        text_values: bool = False,
    ) -> None:
        super().__init__(schema, mapping, csv, text_values=text_values)
        self.mapping = tuple(mapping)
        self.options = dict(options)
        self.configure()

    @abc.abstractmethod
    def configure(self) -> None:
        """Read :attr:`options` into what decoding needs."""


class Mismatch(Exception):
    """The fast path produced a different number of rows than records (e.g. two JSON
    objects on one line): decode record by record instead."""


def all_kept(n: int) -> pa.Array:
    return pa.array(np.arange(n, dtype=np.int32))


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Cast a fast-path table to the target schema; raises on any lossy cast."""
    return table.select(schema.names).cast(schema, safe=True)
