"""The table and pipeline ``INFER PIPELINE`` shows and ``CREATE INFERRED PIPELINE`` makes,
inferred from what the source holds (``engine.sampling``), as SingleStore documents it
(https://docs.singlestore.com/cloud/load-data/about-singlestore-pipelines/pipeline-concepts/schema-and-pipeline-inference/):

* **CSV** (the default format). Without FIELDS the file is read as CSV commonly is: its
  delimiter the one of ``,`` tab ``|`` ``;`` that splits every sampled line into the same
  number (more than one) of fields, else ``,``; enclosed by ``"``, escaped by ``\\``; the
  pipeline made writes them out. Header detection is SingleStore's: by default the first
  line (after ``IGNORE n LINES``) is the header if all its fields are text and a later
  line has a field that is not (a number, a date); ``HEADER_DETECTION ON`` takes it if
  all its fields are text; ``OFF`` never. Without a header the columns are ``col0``,
  ``col1``…; with one, the pipeline ignores one line more. A column is ``bigint(20)``
  when every value is an integer, ``double`` when every value is a number, ``date`` /
  ``datetime(6)`` for dates and times, else text; every CSV column is NULL (an empty
  field is NULL, ``\\N`` too).
* **JSON**: a column per top-level key, in the order first seen; ``bigint(20)``,
  ``double``, ``tinyint(1)`` for booleans, text for strings (and for keys of mixed
  kinds), ``JSON`` for objects and arrays; a key some sampled record lacks is mapped
  ``DEFAULT NULL`` (without it such a record would be an error).
* **AVRO**: a column per field of the writer schema: ``int(11)``, ``bigint(20)``,
  ``float``, ``double``, ``tinyint(1)``, text, ``longblob`` (bytes, fixed), ``ENUM(…)``,
  ``JSON`` (records, arrays, maps, unions of several types); logical types keep their
  underlying type, as SingleStore loads them (``formats.avro_values``); a union with
  ``null`` is its other branch, NULL, mapped through the branch (``%::f::string``); the
  rest are NOT NULL.
* **PARQUET**: a column per column of the file, of its type (``datetime(6)`` for
  timestamps, ``decimal(p,s)``), NULL as the file says; nested columns are refused.

Text columns are ``text CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`` and JSON columns
``JSON COLLATE utf8mb4_bin``, as SingleStore's remark and its inferred Kafka Connect
table write them.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from sparkpipes.config import CsvOptions
from sparkpipes.engine.sampling import Sample
from sparkpipes.errors import ConfigError
from sparkpipes.formats.csv import split_fields
from sparkpipes.frontends.singlestore import ast as A
from sparkpipes.frontends.singlestore.lowering import csv_options

TEXT = "text CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
JSON = "JSON COLLATE utf8mb4_bin"
BIGINT, DOUBLE, BOOL = "bigint(20)", "double", "tinyint(1)"
DATE, DATETIME = "date", "datetime(6)"
#: what a CSV file without FIELDS is read with; the delimiters tried, in order
CSV_FIELDS = A.FieldsFormat(",", '"', False, "\\")
DELIMITERS = (",", "\t", "|", ";")

_INT = re.compile(r"[+-]?\d{1,18}")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(\.\d{1,6})?")

_AVRO = {
    "boolean": BOOL,
    "int": "int(11)",
    "long": BIGINT,
    "float": "float",
    "double": DOUBLE,
    "string": TEXT,
    "bytes": "longblob",
    "fixed": "longblob",
}


@dataclass(frozen=True)
class Column:
    """A column inferred: its name, its SingleStore type, whether it may be NULL, and
    where a record holds it (a mapping's path; empty for CSV, whose fields go by
    position); ``missing``: some sampled record lacks it (mapped ``DEFAULT NULL``)."""

    name: str
    type: str
    nullable: bool = True
    path: tuple[str, ...] = ()
    missing: bool = False

    def to_sql(self) -> str:
        null = "NULL" if self.nullable else "NOT NULL"
        return f"{A.quote_ident(self.name)} {self.type} {null}"


@dataclass(frozen=True)
class Inferred:
    """The columns inferred, and how the load reads the records they come from."""

    columns: tuple[Column, ...]
    fields: A.FieldsFormat | None = None
    header: bool = False
    trailing_nullcols: bool = False


def infer(s: A.CreatePipeline, sample: Sample) -> Inferred:
    """The columns of the table ``s`` (an inferred load, no INTO) would load, from what its
    source holds."""
    if sample.avro_schema is not None:
        return Inferred(tuple(_avro(sample.avro_schema)))
    if sample.parquet_schema is not None:
        return Inferred(tuple(_parquet(sample.parquet_schema)))
    if (s.format or "CSV") == "JSON":
        return Inferred(tuple(_json(sample.records)))
    if (s.format or "CSV") != "CSV":
        raise ConfigError(f"INFER reads FORMAT CSV, JSON, AVRO or PARQUET, not {s.format}")
    return _csv(s, sample.records)


def table_sql(name: str, inferred: Inferred) -> str:
    """``CREATE TABLE`` of the columns inferred, one a line."""
    body = ",\n".join(c.to_sql() for c in inferred.columns)
    return f"CREATE TABLE {A.quote_ident(name)} (\n{body}\n)"


def pipeline_of(s: A.CreatePipeline, name: str, table: str, inferred: Inferred) -> A.CreatePipeline:
    """``s`` (an inferred load) as the pipeline that loads the table inferred: INTO it,
    each column mapped (or, for CSV, listed by position) as the sample showed it."""
    made = dataclasses.replace(
        s,
        name=name,
        inferred=False,
        target=A.Target("TABLE", table),
        header_detection=None,
    )
    if s.format in ("JSON", "AVRO", "PARQUET"):
        literal = A.Literal("null", None)
        mappings = tuple(
            A.FieldMapping(
                c.name,
                c.path,
                rooted=s.format == "AVRO",
                default=literal if c.missing else None,
            )
            for c in inferred.columns
        )
        return dataclasses.replace(made, mappings=mappings)
    return dataclasses.replace(
        made,
        format="CSV",
        fields=inferred.fields,
        ignore_lines=(s.ignore_lines or 0) + inferred.header or None,
        trailing_nullcols=s.trailing_nullcols or inferred.trailing_nullcols,
        columns=tuple(A.LoadColumn(c.name) for c in inferred.columns),
    )


# -- CSV --------------------------------------------------------------------------------
def _csv(s: A.CreatePipeline, records: Sequence[bytes]) -> Inferred:
    lines = [r.decode("utf-8", errors="replace") for r in records]
    fields = s.fields or _sniffed(lines)
    opts = CsvOptions(**csv_options(fields), null_text=s.null_defined_by)
    rows: list[list[str | None]] = []
    for i, line in enumerate(lines):
        try:
            rows.append(split_fields(line.removesuffix("\r"), opts))
        except ValueError as e:
            raise ConfigError(f"cannot infer a table: record {i + 1} is not CSV ({e})") from None
    header = _header(rows, s.header_detection)
    data = rows[1:] if header else rows
    width = max(len(r) for r in rows)
    names = _unique(
        [(rows[0][i] or "").strip() if header and i < len(rows[0]) else "" for i in range(width)]
    )
    columns = tuple(
        Column(name, _csv_type([r[i] for r in data if i < len(r)])) for i, name in enumerate(names)
    )
    short = any(len(r) < width for r in data)
    return Inferred(columns, fields, header, short)


def _sniffed(lines: Sequence[str]) -> A.FieldsFormat:
    """CSV's usual FIELDS, with the delimiter that cuts every line alike (``,`` if none)."""
    for delim in DELIMITERS:
        opts = CsvOptions(**csv_options(dataclasses.replace(CSV_FIELDS, terminated_by=delim)))
        try:
            widths = {len(split_fields(line.removesuffix("\r"), opts)) for line in lines}
        except ValueError:
            continue
        if len(widths) == 1 and widths.pop() > 1:
            return dataclasses.replace(CSV_FIELDS, terminated_by=delim)
    return CSV_FIELDS


def _kind(value: str | None) -> str | None:
    """What a CSV field holds: None (NULL or empty), or the narrowest type that reads it."""
    if value is None or value.strip() == "":
        return None
    v = value.strip()
    if _INT.fullmatch(v):
        return BIGINT
    if _NUMBER.fullmatch(v):
        return DOUBLE
    if _DATE.fullmatch(v):
        return DATE
    if _DATETIME.fullmatch(v):
        return DATETIME
    return TEXT


def _header(rows: list[list[str | None]], detection: bool | None) -> bool:
    """SingleStore's header detection on the first line (see the module docstring)."""
    if detection is False or not rows:
        return False
    first_text = all(_kind(v) == TEXT for v in rows[0])
    if detection is True:
        return first_text
    later = any(_kind(v) not in (TEXT, None) for r in rows[1:] for v in r)
    return first_text and later


def _csv_type(values: Sequence[str | None]) -> str:
    kinds = {_kind(v) for v in values} - {None}
    if not kinds or TEXT in kinds:
        return TEXT
    if kinds <= {BIGINT}:
        return BIGINT
    if kinds <= {BIGINT, DOUBLE}:
        return DOUBLE
    if kinds <= {DATE}:
        return DATE
    return DATETIME if kinds <= {DATE, DATETIME} else TEXT


def _unique(names: Sequence[str]) -> list[str]:
    """Header names made column names: an empty one ``col<i>``, a repeated one suffixed."""
    out: list[str] = []
    for i, name in enumerate(names):
        base = name or f"col{i}"
        candidate, n = base, 1
        while candidate.lower() in {o.lower() for o in out}:
            candidate, n = f"{base}_{n}", n + 1
        out.append(candidate)
    return out


# -- JSON -------------------------------------------------------------------------------
def _json(records: Sequence[bytes]) -> list[Column]:
    objects: list[dict[str, Any]] = []
    for i, raw in enumerate(records):
        try:
            value = json.loads(raw)
        except ValueError as e:
            raise ConfigError(f"cannot infer a table: record {i + 1} is not JSON ({e})") from None
        if not isinstance(value, dict):
            raise ConfigError(f"cannot infer a table: record {i + 1} is not a JSON object")
        objects.append(value)
    keys: dict[str, None] = {}
    for o in objects:
        keys.update(dict.fromkeys(o))
    return [
        Column(
            k,
            _json_type([o[k] for o in objects if o.get(k) is not None]),
            path=(k,),
            missing=any(k not in o for o in objects),
        )
        for k in keys
    ]


def _json_type(values: Sequence[Any]) -> str:
    kinds = {
        BOOL
        if isinstance(v, bool)
        else BIGINT
        if isinstance(v, int)
        else DOUBLE
        if isinstance(v, float)
        else JSON
        if isinstance(v, (dict, list))
        else TEXT
        for v in values
    }
    if len(kinds) == 1:
        return kinds.pop()
    return DOUBLE if kinds == {BIGINT, DOUBLE} else TEXT


# -- Avro -------------------------------------------------------------------------------
def _avro(schema: Any) -> list[Column]:
    if not isinstance(schema, dict) or schema.get("type") != "record":
        raise ConfigError("cannot infer a table: the Avro schema is not a record")
    return [_avro_field(f["name"], f["type"]) for f in schema.get("fields", [])]


def _avro_field(name: str, t: Any) -> Column:
    if isinstance(t, list):
        branches = [b for b in t if b != "null"]
        if len(branches) == 1:
            inner = _avro_field(name, branches[0])
            return dataclasses.replace(
                inner, nullable="null" in t, path=(name, _branch_name(branches[0]))
            )
        return Column(name, JSON, "null" in t, (name,))
    kind = t.get("type") if isinstance(t, dict) else t
    if kind == "enum":
        symbols = ", ".join(A.quote_string(str(x)) for x in t.get("symbols", []))
        enum = f"ENUM({symbols}) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
        return Column(name, enum, False, (name,))
    if isinstance(kind, (dict, list)):  # a type written inside a type
        return _avro_field(name, kind)
    return Column(name, _AVRO.get(str(kind), JSON), kind == "null", (name,))


def _branch_name(t: Any) -> str:
    """How a union's branch is named in a path: a primitive's type name, ``array``,
    ``map``, or a named type's full name."""
    if isinstance(t, str):
        return t
    kind = t.get("type")
    if kind in ("record", "enum", "fixed") and "name" in t:
        ns, name = t.get("namespace"), str(t["name"])
        return name if "." in name or not ns else f"{ns}.{name}"
    return str(kind)


# -- Parquet ----------------------------------------------------------------------------
def _parquet(schema: pa.Schema) -> list[Column]:
    return [Column(f.name, _arrow_type(f), f.nullable, (f.name,)) for f in schema]


def _arrow_type(f: pa.Field) -> str:
    t = f.type
    simple = [
        (pa.types.is_boolean, BOOL),
        (pa.types.is_int8, "tinyint(4)"),
        (pa.types.is_int16, "smallint(6)"),
        (pa.types.is_int32, "int(11)"),
        (pa.types.is_int64, BIGINT),
        (pa.types.is_uint8, "smallint(6)"),
        (pa.types.is_uint16, "int(11)"),
        (pa.types.is_uint32, BIGINT),
        (pa.types.is_float32, "float"),
        (pa.types.is_float64, DOUBLE),
        (pa.types.is_date, DATE),
        (pa.types.is_timestamp, DATETIME),
    ]
    for test, name in simple:
        if test(t):
            return name
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return TEXT
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return "longblob"
    if pa.types.is_decimal(t) and t.precision <= 38:
        return f"decimal({t.precision},{t.scale})"
    raise ConfigError(
        f"cannot infer a table: Parquet column '{f.name}' of type {t} is not supported (a "
        "nested or unsigned 64-bit column); create the table and the pipeline with its "
        "fields mapped (col <- a::b)"
    )
