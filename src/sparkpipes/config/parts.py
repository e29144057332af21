"""The components of a ``PipelineSpec``, in the order a record flows through them: where
records come from (``SourceSpec``), how they are decoded (``FormatSpec``, with
``CsvOptions`` and ``FieldMapping``), what ingest-time SQL does to them (``TransformSpec``),
where they go (``SinkSpec``) and in what batches (``BatchSpec``). Each checks what is the
same for every plugin; the plugin named by ``kind`` checks its own options."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sparkpipes.config import urls
from sparkpipes.config.core import (
    Secret,
    check_choice,
    check_int,
    check_name,
    reject_unknown,
)
from sparkpipes.config.transforms import ConnectRecords
from sparkpipes.errors import ConfigError

#: the version of :meth:`PipelineSpec.to_json`; the catalog migrates older definitions
SPEC_VERSION = 2

START_POLICIES = ("earliest", "latest")
#: a start policy ``at:<epoch ms>``: each partition's first record at or after that time
START_AT = "at:"
OUT_OF_RANGE_POLICIES = ("fail", "earliest")
#: ``skip_duplicates`` (SingleStore's ``SKIP DUPLICATE KEY ERRORS``): ``ignore`` on a table
#: with a primary key (a row whose key is there is skipped), ``append`` on one without;
#: ``update`` (``ON DUPLICATE KEY UPDATE``): a row whose key is there updates the stored row;
#: ``insert`` (SingleStore's plain ``INTO TABLE``): such a row fails the batch (``append``
#: on a table without a primary key); ``aggregate`` (Pinot's ingestion aggregation): rows
#: equal in every column the sink option ``aggregate`` does not aggregate become one row,
#: combined with the stored one (``sinks.delta.aggregates``)
WRITE_MODES = ("append", "replace", "ignore", "skip_duplicates", "update", "insert", "aggregate")
FORMAT_OPTIONS = (
    "schema.registry.url",
    "schema",
    "schema.registry.ssl.ca.location",
    "schema.registry.ssl.certificate.location",
    "schema.registry.ssl.key.location",
    # a registry's framing other than Confluent's (Pinot's own: formats.avro_pinot)
    "schema.registry.framing",
    "decoder.class",
    "decoder.topic",
    # a Protobuf descriptor set, base64 (Pinot's ProtoBufMessageDecoder: formats.protobuf)
    "protobuf.descriptor",
    # Pinot's JSON decoder and type conversion (formats.pinot_json)
    "pinot.json.columns",
    "pinot.continue.on.error",
    "pinot.own.scalar.columns",
    # Pinot's conversion for its other decoders (formats.pinot_convert)
    "pinot.values",
)
#: the props of a stream plugin's decoder (``FORMAT`` kind ``stream``)
FORMAT_PROP_PREFIX = "decoder.prop."
#: the decoder's secrets (``FormatSpec.credentials``)
FORMAT_SECRETS = ("schema.registry.basic.auth.user.info",)


def _set_lifted(spec: Any, name: str, lifted: Any, creds: dict[str, Secret]) -> None:
    """Set a frozen spec's URL-bearing field and its credentials, where passwords were
    lifted out of them (each lifted password is a credential it did not have)."""
    if creds != dict(spec.credentials):
        object.__setattr__(spec, name, lifted)
        object.__setattr__(spec, "credentials", creds)


#: the longest ``LINES TERMINATED BY`` or ``STARTING BY`` text, in bytes
MAX_LINE_MARK = 64


@dataclass(frozen=True)
class CsvOptions:
    r"""``FIELDS TERMINATED BY … [OPTIONALLY] ENCLOSED BY … ESCAPED BY …`` and header
    handling, read as SingleStore's (and MySQL's) ``LOAD DATA`` reads them:

    * ``delimiter``: the text between fields, one character or more;
    * ``quote``: a field that starts with it ends at the next one followed by a delimiter
      or the record's end, and holds everything between (delimiters too; the character
      doubled stands for itself); None: fields are not enclosed;
    * ``escape``: the character that makes the next one literal, and ``\0 \b \n \r
      \t \Z`` the control characters they stand for; a field that is just ``\N`` is
      NULL; None: nothing is escaped;
    * ``optionally``: ``OPTIONALLY ENCLOSED BY``, which reads the same (kept to be shown
      back);
    * ``null_text``: ``NULL DEFINED BY``, a field of just this text is NULL (enclosed
      too with ``null_enclosed``, ``OPTIONALLY ENCLOSED``);
    * ``trailing_nullcols``: ``TRAILING NULLCOLS``, a record with fewer fields than
      columns has NULL in the rest (else it is an error);
    * ``line_end``: ``LINES TERMINATED BY``, what ends a record: a newline (``\r\n``
      too), or text before it (``'|\n'``, TPC-H's files), which each record must end
      with (one that does not is an error, never joined to the next line);
    * ``carriage_return``: a carriage return before the newline belongs to the record
      (the last field's text), as in MySQL's and SingleStore's ``LOAD DATA``, where a file
      written on Windows needs ``LINES TERMINATED BY '\r\n'``; a number, date or other
      non-text value is read without it, as they convert it. Off, it is dropped;
    * ``line_start``: ``LINES STARTING BY``, each record begins after the first occurrence
      of this text in its line (what precedes it is skipped), and a line without it is no
      record, as in ``LOAD DATA``.

    A ``line_end`` that does not end with a newline (``';'``, ``'||'``) cuts the object's
    text at each occurrence, newlines being data, as ``LOAD DATA`` does; those terminators
    and ``line_start`` cut objects (files) into records, not a stream's messages.

    The defaults are the Python API's (``,``, ``"``, no escape); the SingleStore dialect
    gives its own (tab, not enclosed, ``\``) explicitly."""

    delimiter: str = ","
    quote: str | None = '"'
    escape: str | None = None
    header: bool = False
    optionally: bool = False
    null_text: str | None = None
    null_enclosed: bool = False
    trailing_nullcols: bool = False
    line_end: str = "\n"
    carriage_return: bool = False
    line_start: str = ""

    def __post_init__(self) -> None:
        if not self.delimiter:
            raise ConfigError("FIELDS TERMINATED BY must not be empty")
        if not self.line_end:
            raise ConfigError("LINES TERMINATED BY must not be empty")
        marks = (("LINES TERMINATED BY", self.line_end), ("STARTING BY", self.line_start))
        for what, text in marks:
            if len(text.encode()) > MAX_LINE_MARK:  # the framing scans for it per byte
                raise ConfigError(f"{what} may be at most {MAX_LINE_MARK} bytes")
        for what, ch in (("ENCLOSED BY", self.quote), ("ESCAPED BY", self.escape)):
            if ch is not None and len(ch) != 1:
                raise ConfigError(f"FIELDS {what} takes one character or '', got {ch!r}")
            if ch is not None and ch in self.delimiter:
                raise ConfigError(
                    f"FIELDS {what} {ch!r} must differ from FIELDS TERMINATED BY {self.delimiter!r}"
                )
        if self.quote is not None and self.quote == self.escape:
            raise ConfigError("FIELDS ENCLOSED BY and ESCAPED BY must differ")

    @property
    def line_suffix(self) -> str:
        """What each record ends with before its newline (and the carriage return, which
        is never part of a record); nothing for a terminator the framing cuts at."""
        if not self.line_end.endswith("\n"):
            return ""
        return self.line_end[:-1].removesuffix("\r")

    @property
    def terminator(self) -> str:
        """Where the framing cuts an object's text into records."""
        return "\n" if self.line_end.endswith("\n") else self.line_end


@dataclass(frozen=True)
class FieldMapping:
    """``column <- path``: where in the record a table column comes from.

    ``path`` is a tuple of keys into nested JSON objects (``a::b`` becomes ``("a", "b")``;
    ``()`` is the whole record). A ``column`` starting with ``@`` is a variable: loaded for
    ``SET`` expressions only. For CSV the mappings list the fields in order. Given any
    mapping, table columns it does not name are not loaded (NULL unless a ``SET`` fills
    them).

    ``on_missing``: what a record without the path gives (a key absent, or a parent that
    is not an object; a JSON ``null`` is there, and is NULL): ``null``; ``error``, a bad
    record (SingleStore's rule for a mapping without ``DEFAULT``); or ``default``, the
    constant ``default`` (``DEFAULT literal``).
    """

    column: str
    path: tuple[str, ...]
    on_missing: str = "null"
    default: str | int | float | bool | None = None

    def __post_init__(self) -> None:
        if self.on_missing not in ("null", "error", "default"):
            raise ConfigError(
                f"field mapping for column '{self.column}': on_missing is null, error or "
                f"default, not {self.on_missing!r}"
            )

    @property
    def is_variable(self) -> bool:
        return self.column.startswith("@")


@dataclass(frozen=True)
class SourceSpec:
    """Where records come from. ``kind`` names a source plugin (``kafka``, ``fs``);
    ``config`` and ``credentials`` are its options, checked by that plugin. ``start`` is
    where a new pipeline's partitions begin; ``on_out_of_range`` what a batch does when
    its resume offset no longer exists (``fail``, or resume at ``earliest`` and record
    the gap).

    A password inside the location or a CONFIG URL is taken out when the spec is made
    (``config.urls``): the field keeps the URL with ``<redacted>`` in its place and the
    password is a credential, ``url:location`` or ``url:<option>``."""

    kind: str
    location: str
    config: Mapping[str, Any] = field(default_factory=dict)
    credentials: Mapping[str, Secret] = field(default_factory=dict)
    #: ``earliest``, ``latest`` or ``at:<epoch ms>`` (Pinot's offset criteria by time)
    start: str = "earliest"
    on_out_of_range: str = "fail"
    #: clauses of the front end's definition that change nothing here (SingleStore's
    #: ``AGGREGATOR``, ``DISABLE OUT_OF_ORDER OPTIMIZATION`` …), kept to be shown back
    hints: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "hints", tuple(str(h) for h in self.hints))
        creds = dict(self.credentials)
        if isinstance(self.location, str):
            shown, password = urls.split(self.location, bare=self.hosts, what="the location")
            if password is not None:
                object.__setattr__(self, "location", shown)
                creds[urls.secret_key(urls.LOCATION)] = Secret(password)
        config = self.config
        if isinstance(config, Mapping):
            config = urls.lift(config, creds, what="CONFIG option")
        _set_lifted(self, "config", config, creds)

    @property
    def hosts(self) -> bool:
        """The location starts with a host list (``[user:pass@]host:port,…``)."""
        return str(self.kind).lower() == "kafka"

    def url_options(self) -> dict[str, Any]:
        """The location and the CONFIG options, by the names their passwords are kept
        under (``url:<name>``)."""
        return {urls.LOCATION: self.location, **self.config}

    def redacted_urls(self) -> list[str]:
        """The options (``location`` among them) that show a password as ``<redacted>``."""
        bare = frozenset([urls.LOCATION]) if self.hosts else frozenset()
        return urls.redacted_options(self.url_options(), bare=bare)

    def check(self, pipeline: str | None = None) -> None:
        if not self.kind:
            raise ConfigError("a pipeline needs a source", pipeline=pipeline)
        at = isinstance(self.start, str) and self.start.startswith(START_AT)
        if not (at and self.start[len(START_AT) :].isdigit()):
            check_choice(self.start, "offsets", START_POLICIES, pipeline=pipeline)
        check_choice(
            self.on_out_of_range, "on_offset_out_of_range", OUT_OF_RANGE_POLICIES, pipeline=pipeline
        )
        for k, v in self.credentials.items():
            if not isinstance(v, Secret):
                raise ConfigError(f"credential '{k}' must be a Secret", pipeline=pipeline)


@dataclass(frozen=True)
class RecordProgram:
    """A program every record passes through before it decodes (SingleStore's ``WITH
    TRANSFORM ('uri', 'executable', 'arguments')``): ``uri`` names one of the programs
    sparkpipes runs itself (``formats.programs``: ``memsql://json`` is jq, with its
    filter and flags in ``arguments``); it never names a program to download or run."""

    uri: str
    executable: str = ""
    arguments: str = ""


@dataclass(frozen=True)
class NestedSpec:
    """Records flattened into columns and arrays unnested into rows before the columns
    are taken (Pinot's ``complexTypeConfig``; ``formats.nested`` does it on Arrow).

    A nested field is named by its path joined with ``delimiter`` (``a.b.c``); each array
    in ``unnest`` (such names) makes one row per element, several arrays their cross
    product; an array not unnested that reaches a text column is its JSON text
    (``collections``: ``NON_PRIMITIVE`` arrays of records or arrays, ``ALL`` every one);
    ``renames`` replaces a prefix of the flattened names (the first that matches)."""

    unnest: tuple[str, ...] = ()
    delimiter: str = "."
    collections: str = "NON_PRIMITIVE"
    renames: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if self.collections not in ("NON_PRIMITIVE", "ALL"):
            raise ConfigError(
                f"nested records: collections is NON_PRIMITIVE or ALL, not {self.collections!r}"
            )
        if not self.delimiter:
            raise ConfigError("nested records: the delimiter cannot be empty")


@dataclass(frozen=True)
class FormatSpec:
    """How payloads decode to columns: a decoder plugin (``json``, ``csv``, ``raw``), the
    ``col <- path`` mapping, CSV options, ``IGNORE n LINES`` and whether records that do
    not decode are skipped (to the errors store) or fail the batch."""

    kind: str = "json"
    mapping: tuple[FieldMapping, ...] = ()
    csv: CsvOptions = CsvOptions()
    skip_lines: int = 0
    skip_parser_errors: bool = False
    #: rows that break the table's constraints (a NOT NULL column without a value, a
    #: value its computed column's type cannot hold) go to the errors store too (SKIP
    #: CONSTRAINT ERRORS); else they fail the batch
    skip_constraint_errors: bool = False
    #: each value a record gives reaches its column as text first, as SingleStore's LOAD
    #: DATA converts it (JSON: ``true``/``false`` → ``1``/``0``, numbers as written,
    #: objects and arrays as JSON text), then as text converts to the column's type
    text_values: bool = False
    #: what each record passes through before it decodes (``WITH TRANSFORM``)
    program: RecordProgram | None = None
    #: records flattened and arrays unnested before the columns are taken
    nested: NestedSpec | None = None
    #: Kafka records as a Kafka Connect sink task sees them (converter, transforms)
    #: before their fields map to the columns (``frontends.connect``)
    connect: ConnectRecords | None = None
    #: the decoder's own options: ``schema.registry.url`` or ``schema`` (Avro messages)
    options: Mapping[str, str] = field(default_factory=dict)
    #: its secrets (a schema registry's user and password, the password of a registry
    #: URL as ``url:schema.registry.url``), kept with the pipeline's under
    #: ``format.``-prefixed keys
    credentials: Mapping[str, Secret] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.options, Mapping):
            creds = dict(self.credentials)
            _set_lifted(
                self, "options", urls.lift(self.options, creds, what="format option"), creds
            )

    def check(self, pipeline: str | None = None) -> None:
        check_int(self.skip_lines, "skip_lines", 0, pipeline=pipeline)
        reject_unknown(
            [k for k in self.options if not k.startswith(FORMAT_PROP_PREFIX)],
            FORMAT_OPTIONS,
            what="format option",
            pipeline=pipeline,
        )
        reject_unknown(
            [k for k in self.credentials if urls.option_of(k) not in self.options],
            FORMAT_SECRETS,
            what="format secret",
            pipeline=pipeline,
        )
        for k, v in self.credentials.items():
            if not isinstance(v, Secret):
                raise ConfigError(f"format credential '{k}' must be a Secret", pipeline=pipeline)

    def decoder_options(self) -> dict[str, str]:
        """The options the decoder is built with: its options and, revealed, its secrets
        (a URL's password under ``url:<option>``, the URL itself kept redacted)."""
        return {**self.options, **{k: v.reveal() for k, v in self.credentials.items()}}

    def redacted_urls(self) -> list[str]:
        """The options that show a password as ``<redacted>``."""
        return urls.redacted_options(self.options)


@dataclass(frozen=True)
class FunctionCall:
    """A column computed before ``SET`` and ``WHERE``: the vectorized function ``function``
    (a name in the engine's registry of Arrow functions, never code) of the Spark SQL
    ``args``. It is how a front end computes what Spark SQL cannot (Pinot's geometry
    bytes); ``SET`` / ``WHERE`` read the result as the column ``column``."""

    column: str
    function: str
    args: tuple[str, ...] = ()


@dataclass(frozen=True)
class TransformSpec:
    """Ingest-time SQL of the pipeline: ``SET col = expr`` and ``WHERE cond``, over the
    record's variables and the ``functions`` computed first, in order."""

    assignments: tuple[tuple[str, str], ...] = ()
    where: str | None = None
    functions: tuple[FunctionCall, ...] = ()
    #: ``(condition, reason)``: a record for which the SQL condition (over the same
    #: variables the ``SET`` expressions read) is true is not loaded; it is rejected with
    #: the reason, to ``PIPELINES_ERRORS`` with its partition and offset when the format
    #: skips constraint errors (else it fails the batch). Front ends set it where the system
    #: they stand for drops such a record (Pinot: a transform function that throws)
    rejects: tuple[tuple[str, str], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.assignments or self.where or self.functions or self.rejects)


@dataclass(frozen=True)
class SinkSpec:
    """Where rows go: a sink plugin (``delta``) and its table. ``write`` is the write
    strategy: ``append``, or an upsert by primary key that ``replace``s the row with the
    same key or ``ignore``s the new one, or ``skip_duplicates`` (``ignore`` where the table
    has a primary key, else ``append``), or ``update``s it by the ``update`` assignments
    (``ON DUPLICATE KEY UPDATE col = expr``: SingleStore SQL over the stored row's columns,
    ``VALUES(col)`` naming the new row's). ``provenance`` fills ``__source_partition`` and
    ``__source_offset``. ``config`` and ``credentials`` are the options of a sink outside
    the warehouse (a database's address and user; its password), checked by that plugin;
    the catalog keeps the credentials with the source's, under ``sink.``-prefixed keys
    (a password inside a URL option among them, as for the source)."""

    table: str
    kind: str = "delta"
    write: str = "append"
    provenance: bool = False
    config: Mapping[str, Any] = field(default_factory=dict)
    credentials: Mapping[str, Secret] = field(default_factory=dict)
    update: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.config, Mapping):
            creds = dict(self.credentials)
            _set_lifted(self, "config", urls.lift(self.config, creds, what="sink option"), creds)

    def redacted_urls(self) -> list[str]:
        """The options that show a password as ``<redacted>``."""
        return urls.redacted_options(self.config)

    def check(self, pipeline: str | None = None) -> None:
        if self.kind != "database":  # a database's own names may hold any character
            check_name(self.table, "table name")
        elif not isinstance(self.table, str) or not self.table or len(self.table) > 64:
            raise ConfigError(f"table name must be 1 to 64 characters, got {self.table!r}")
        check_choice(self.write, "write mode", WRITE_MODES, pipeline=pipeline)
        if (self.write == "update") != bool(self.update):
            raise ConfigError(
                "ON DUPLICATE KEY UPDATE (write mode 'update') needs its assignments, and "
                "assignments (update) need that write mode",
                pipeline=pipeline,
            )
        if (self.write == "aggregate") != bool(self.config.get("aggregate")):
            raise ConfigError(
                "write mode 'aggregate' needs the sink option 'aggregate' (column → SUM, MIN "
                "or MAX), and that option needs that write mode",
                pipeline=pipeline,
            )
        for k, v in self.credentials.items():
            if not isinstance(v, Secret):
                raise ConfigError(f"sink credential '{k}' must be a Secret", pipeline=pipeline)


#: prefixes of the sink's and the decoder's keys among a pipeline's stored credentials
SINK_SECRET = "sink."
FORMAT_SECRET = "format."
_OWNED = {"sink": SINK_SECRET, "format": FORMAT_SECRET}
#: the components that hold secrets, and how an error names their URL options
_SECRET_PARTS = {"source": "CONFIG option", "format": "format option", "sink": "sink option"}
#: the fields of a component that may change while a secret given back as ``<redacted>``
#: is kept (:meth:`PipelineSpec.keep_secrets`): none of them decides where the component's
#: secrets are sent. Every other field — the kind, the location, every CONFIG, format and
#: sink option, and a field added later — must be as stored. The other components
#: (the batch options, the SET / WHERE, the other components' settings) may change too.
_MAY_CHANGE = {
    "source": frozenset({"start", "on_out_of_range", "hints"}),
    "format": frozenset(
        {
            "mapping",
            "csv",
            "skip_lines",
            "skip_parser_errors",
            "skip_constraint_errors",
            "text_values",
            "program",
            "nested",
            "connect",
        }
    ),
    "sink": frozenset({"table", "write", "provenance", "update"}),
}
#: options that only decide how values are read, never where anything is sent (Pinot's
#: conversion: SHOW CREATE PIPELINE, SingleStore's words, has no place for them)
_MAY_CHANGE_OPTIONS = {
    "format": frozenset(
        {
            "pinot.json.columns",
            "pinot.continue.on.error",
            "pinot.own.scalar.columns",
            "pinot.values",
        }
    ),
}
#: how an error names a component's fields that are not options
_FIELD_NAMES = {
    "source": {"kind": "the source kind (LOAD DATA …)", "location": "the location"},
    "format": {"kind": "the format (FORMAT …)"},
    "sink": {"kind": "the sink kind"},
}


@dataclass(frozen=True)
class BatchSpec:
    """How batches are cut. The defaults are those of the engine variables
    (``pipelines_batch_interval`` …), which a front end's engine applies when a clause
    is absent."""

    interval_ms: int = 2500
    max_partitions: int | None = None
    max_offsets_per_partition: int = 1_000_000
    max_retries: int = 4
    fetch_timeout_ms: int = 200
    chunk_records: int = 20_000

    def check(self, pipeline: str | None = None) -> None:
        for key, low in (
            ("interval_ms", 0),
            ("max_offsets_per_partition", 1),
            ("max_retries", 0),
            ("fetch_timeout_ms", 1),
            ("chunk_records", 1),
        ):
            check_int(getattr(self, key), BATCH_OPTION_NAMES.get(key, key), low, pipeline=pipeline)
        mpb = self.max_partitions
        if mpb is not None and (not isinstance(mpb, int) or isinstance(mpb, bool) or mpb < 1):
            raise ConfigError(
                f"max_partitions_per_batch must be a positive integer, got {mpb!r}",
                pipeline=pipeline,
            )


#: the Python API's (and the stored v1 definitions') names of BatchSpec fields
BATCH_OPTION_NAMES = {
    "interval_ms": "batch_interval_ms",
    "max_partitions": "max_partitions_per_batch",
    "max_offsets_per_partition": "max_offsets_per_batch_partition",
    "max_retries": "max_retries",
    "fetch_timeout_ms": "fetch_timeout_ms",
    "chunk_records": "chunk_records",
}

_COMPONENTS = {
    "source": SourceSpec,
    "format": FormatSpec,
    "transform": TransformSpec,
    "sink": SinkSpec,
    "batch": BatchSpec,
}
