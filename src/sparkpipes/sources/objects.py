"""Object-store sources: ``LOAD DATA FS|S3|AZURE|HDFS``, one partition per object.

Stores are reached through fsspec filesystems (local, ``s3fs``, ``adlfs``, pyarrow's
``HadoopFileSystem``), built on first use in each process: constructors do no I/O, and
an executor builds its own client from the (pickled) options.

Offsets
    ``{"byte": b}``: the object is loaded up to byte ``b``. For line formats (JSON, CSV)
    of an uncompressed object that is the byte after the last line loaded, so an object
    that grows (a local file still being written) is read on from there; for whole-object
    formats (Parquet, Avro) and compressed objects ``b`` is the object's size once it is
    loaded. ``{"byte": size, "skipped": reason}`` marks an object that could not be read
    to its end and was skipped under SKIP PARSER ERRORS. A range of a split object
    starts at ``{"byte": x, "split": true}``: the first record that *begins* at or after
    ``x``; such offsets are never committed (:meth:`ObjectSource.merge`).

Loading
    A batch loads the objects it plans to their end (no ``max_offsets_per_partition``
    cap: seed 004's "one object per batch partition"). Large objects of splittable
    formats are cut into byte ranges and small ones packed together by the planner
    (``engine.planning``) so that a batch's tasks get similar work; ``"packing": false``
    in CONFIG keeps seed 004's one object per task. An object whose size is unchanged
    and whose offset reached it is never read again; DROP FILE forgets it. A record is
    held in memory up to ``"max_record_bytes"`` (default 64 MiB, ``Framing.max_record``):
    a longer line is a parse error at its byte (SKIP PARSER ERRORS skips it, and the lines
    after it load); a longer raw Avro value fails its object.

Completeness
    Objects in S3, Azure and HDFS are complete once listed. A local file may still be
    being written: its last line is loaded only once it ends with a newline or the file
    has not changed for ``SETTLE_S`` seconds.
"""

from __future__ import annotations

import copy
import fnmatch
import math
import posixpath
import time
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

import pyarrow as pa

from sparkpipes.config import Secret, reject_unknown, urls
from sparkpipes.config.core import check_flag, check_int
from sparkpipes.errors import (
    ConfigError,
    CorruptObjectError,
    OffsetOutOfRangeError,
    SourceAuthError,
    SourceError,
    SourceUnavailableError,
    SparkpipesError,
)
from sparkpipes.sources.base import (
    MAX_RECORD,
    Fetched,
    Frame,
    Framing,
    Gap,
    MetadataProvider,
    PartitionConsumer,
    Source,
)
from sparkpipes.sources.framing import LineFraming
from sparkpipes.sources.objectio import Guarded, ReadFailed, Salvaging, decompressed

START: dict[str, Any] = {"byte": 0}
SETTLE_S = 5.0
MIN_SPLIT = 8 << 20
GLOB_CHARS = set("*?[")
_CODECS = {".gz": "gzip", ".gzip": "gzip", ".bz2": "bz2", ".zst": "zstd", ".zstd": "zstd"}
_EMPTY = pa.array([], pa.binary())
#: exception class names (boto, Azure SDK) that mean the store refused the credentials
_REFUSED = frozenset({"NoCredentialsError", "PartialCredentialsError", "ClientAuthenticationError"})


def codec_of(path: str) -> str | None:
    """The compression an object's name says it has (``.gz``, ``.bz2``, ``.zst``)."""
    return _CODECS.get(posixpath.splitext(path)[1].lower())


def glob_base(pattern: str) -> str:
    """The longest directory of ``pattern`` without glob characters."""
    parts = pattern.split("/")
    for i, part in enumerate(parts):
        if GLOB_CHARS & set(part):
            return "/".join(parts[:i]) or "/"
    return posixpath.dirname(pattern) or "/"


class ObjectSource(Source):
    """Objects under a prefix or matching a glob in one store."""

    name: ClassVar[str] = "objects"
    position_type = pa.int64()
    line_oriented = True
    lists_files = True
    #: objects are complete once listed (a local file may still grow)
    immutable: ClassVar[bool] = True
    config_keys: ClassVar[frozenset[str]] = frozenset(
        {"suffixes", "packing", "min_split_bytes", "max_record_bytes"}
    )
    credential_keys: ClassVar[frozenset[str]] = frozenset()
    what: ClassVar[str] = "object"

    def __init__(
        self,
        location: str,
        config: Mapping[str, Any],
        credentials: Mapping[str, Secret],
        *,
        filesystem: Any = None,
    ) -> None:
        label = self.name.upper()
        urls.refuse(credentials, {urls.LOCATION: location, **config}, self.login_hint())
        reject_unknown(config, self.config_keys, what=f"{label} option")
        reject_unknown(credentials, self.credential_keys, what=f"{label} credential")
        if not isinstance(location, str) or not location.strip():
            raise ConfigError(f"{label} location is empty; {self.location_hint()}")
        self.location = location.strip()
        self.config = dict(config)
        self.credentials = dict(credentials)
        self.pattern = self._pattern(self.location)
        suffixes = config.get("suffixes", [])
        if not isinstance(suffixes, list) or not all(isinstance(s, str) for s in suffixes):
            raise ConfigError(f'{label} option "suffixes" must be a list of strings')
        self.suffixes = tuple(s.lower() if s.startswith(".") else "." + s.lower() for s in suffixes)
        self.packing = check_flag(config, "packing", True, label)
        #: the smallest range a split object is cut into (and the least a task is given)
        self.min_split = config.get("min_split_bytes", MIN_SPLIT)
        check_int(self.min_split, f"{label} option min_split_bytes", 1)
        self.gunzip = not check_flag(config, "disable_gunzip", False, label)
        #: the longest record (a line, an Avro value) a framing holds; a longer line is a
        #: record error, a longer Avro value fails its object (``Framing.max_record``)
        self.max_record = config.get("max_record_bytes", MAX_RECORD)
        check_int(self.max_record, f"{label} option max_record_bytes", 1)
        self.framing: Framing = LineFraming().limited(self.max_record)
        self._fs = filesystem
        self._injected = filesystem is not None

    def codec(self, path: str) -> str | None:
        """How an object is decompressed: as its name says (``codec_of``), but for
        ``.gz`` objects with ``disable_gunzip`` (S3's CONFIG), which load as they are."""
        codec = codec_of(path)
        return None if codec == "gzip" and not self.gunzip else codec

    # -- what each store defines ----------------------------------------------------------
    @classmethod
    def location_hint(cls) -> str:
        return "give a path or glob"

    @classmethod
    def login_hint(cls) -> str:
        """Why a password inside the location or a CONFIG URL is refused, and where the
        store's login goes instead."""
        return f"{cls.name.upper()} takes no user or password in a URL"

    def _pattern(self, location: str) -> str:
        """The location as a path pattern of the filesystem (no scheme)."""
        return location

    def _connect(self) -> Any:
        """A new fsspec filesystem for this store (I/O may happen later, on use)."""
        raise NotImplementedError

    # -- framing ----------------------------------------------------------------------
    def framed(self, framing: Framing) -> ObjectSource:
        """A copy of this source reading objects with a format's framing."""
        other = copy.copy(self)
        other.framing = framing.limited(self.max_record)
        return other

    # -- filesystem -------------------------------------------------------------------
    @property
    def filesystem(self) -> Any:
        if self._fs is None:
            self._fs = self._connect()
        return self._fs

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        if not self._injected:
            state["_fs"] = None  # each executor builds its own client
        return state

    def redact(self, text: str) -> str:
        for secret in self.credentials.values():
            value = secret.reveal()
            if value and len(value) >= 4:
                text = text.replace(value, "<redacted>")
        return text

    def error(self, e: BaseException, doing: str, *, listing: bool = False, **ctx: Any):
        """A store failure as the error a user can act on: refused or missing credentials
        (terminal when listing), nothing there, or unreachable (transient: retried)."""
        if isinstance(e, ReadFailed):
            e = e.cause
        if isinstance(e, SparkpipesError):
            return e
        text = self.redact(str(e) or type(e).__name__).splitlines()[0]
        msg = f"cannot {doing} ({self.label()}): {text}"
        kind = type(e).__name__
        status = getattr(e, "status_code", None) or getattr(
            getattr(e, "response", None), "status_code", None
        )
        refused = isinstance(e, PermissionError) or kind in _REFUSED or status in (401, 403)
        if refused and listing:
            return SourceAuthError(msg, **ctx)
        if isinstance(e, FileNotFoundError) and listing:
            return SourceError(msg, **ctx)
        return SourceUnavailableError(msg, **ctx)

    # -- listing ----------------------------------------------------------------------
    def list_objects(self) -> dict[str, dict[str, Any]]:
        """Every object the location names: path -> {"size", "mtime"}. Names starting with
        ``.`` or ``_`` (``_SUCCESS``, ``.crc``, temporary files) are not objects."""
        fs = self.filesystem
        pattern = self.pattern
        try:
            if GLOB_CHARS & set(pattern):
                base = glob_base(pattern)
                deep = "**" in pattern or pattern.count("/") > base.rstrip("/").count("/") + 1
                found = fs.find(base, maxdepth=None if deep else 1, detail=True)
                found = {
                    p: i
                    for p, i in found.items()
                    if fnmatch.fnmatchcase(p, pattern.lstrip("/"))
                    or fnmatch.fnmatchcase(p, pattern)
                }
            elif fs.isdir(pattern):
                found = fs.find(pattern, detail=True)
            else:
                parent = posixpath.dirname(pattern.rstrip("/")) or pattern
                found = {
                    p: i
                    for p, i in fs.find(parent, detail=True).items()
                    if p.startswith(pattern.lstrip("/")) or p.startswith(pattern)
                }
        except Exception as e:  # whatever the store's SDK raises, as a user's error
            raise self.error(e, "list objects", listing=True) from None
        out = {}
        for path, info in found.items():
            if info.get("type", "file") != "file":
                continue
            name = posixpath.basename(path)
            if name.startswith((".", "_")):
                continue
            if self.suffixes and not path.lower().endswith(self.suffixes):
                continue
            out[path] = {"size": int(info.get("size") or 0), "mtime": _mtime(info)}
        return out

    # -- Source -----------------------------------------------------------------------
    def metadata(self, timeout_s: float | None = None) -> ObjectMetadata:
        return ObjectMetadata(self)

    def check(self) -> str:
        n = len(self.list_objects())
        if n == 0:
            root = self._root()
            try:
                there = self.filesystem.exists(root)
            except Exception as e:
                raise self.error(e, f"look for '{root}'", listing=True) from None
            if not there:
                raise SourceError(f"{self.label()}: '{root}' does not exist")
        return f"{self.label()} answered with {n} object{'' if n == 1 else 's'}"

    def _root(self) -> str:
        """What must exist for the location to make sense: its bucket or container, or
        (file systems) its directory."""
        return self.pattern.split("/", 1)[0]

    def consumer(
        self, partition: str, *, out_of_range: str = "fail", pipeline: str | None = None
    ) -> ObjectConsumer:
        return ObjectConsumer(self, partition, out_of_range, pipeline)

    def start_offset(self, meta: MetadataProvider, partition: str, policy: str) -> dict:
        return meta.earliest(partition) if policy == "earliest" else meta.latest(partition)

    def describe(self) -> Mapping[str, Any]:
        return {"source": self.name, "location": self.location}

    def label(self) -> str:
        return f"{self.name} '{self.location}'"

    def locate(self, partition: str, position: Any) -> str:
        return f"{self.what} '{partition}' {self.framing.position_name} {position}"

    def partition_key(self, partition: str) -> Mapping[str, Any]:
        return {"file": partition}

    def reached(self, offset: Any, latest: Any) -> bool:
        return "skipped" in offset or offset["byte"] >= latest["byte"]

    def pending(self, offset: Any, watermark: Any) -> int | None:
        return 0 if self.reached(offset, watermark) else watermark["byte"] - offset["byte"]

    def split(
        self, partition: str, start: Any, watermark: Any, size: int | None, target: int
    ) -> list[tuple[Any, Any]]:
        if (
            not self.packing
            or not self.framing.splittable
            or self.codec(partition) is not None
            or "skipped" in start
        ):
            return [(start, None)]
        first, end = start["byte"], watermark["byte"]
        n = min(math.ceil((end - first) / max(target, self.min_split)), 1024)
        if n <= 1:
            return [(start, None)]
        step = math.ceil((end - first) / n)
        cuts = [first + i * step for i in range(n)]
        ranges: list[tuple[Any, Any]] = []
        for i, at in enumerate(cuts):
            lo = dict(start) if i == 0 else {"byte": at, "split": True}
            hi = None if i == n - 1 else {"byte": cuts[i + 1]}
            ranges.append((lo, hi))
        return ranges

    def merge(self, partition: str, ends: list[Any]) -> Any:
        for end in ends:
            if "skipped" in end:
                return end
        return {"byte": max(e["byte"] for e in ends)}


def _mtime(info: Mapping[str, Any]) -> float | None:
    for key in ("mtime", "LastModified", "last_modified", "modificationTime"):
        v = info.get(key)
        if v is None:
            continue
        if hasattr(v, "timestamp"):
            return float(v.timestamp())
        try:
            return float(v)
        except (TypeError, ValueError):
            return None
    return None


class ObjectMetadata(MetadataProvider):
    """The store's listing, taken once per ``partitions()`` call (once per batch): sizes
    and watermarks come from it, so planning costs one listing, not a request per
    object."""

    def __init__(self, source: ObjectSource) -> None:
        self.source = source
        self._listing: dict[str, dict[str, Any]] | None = None

    def _info(self, partition: str) -> dict[str, Any]:
        if self._listing is None or partition not in self._listing:
            self._listing = self.source.list_objects()
        info = self._listing.get(partition)
        if info is None:
            raise SourceError(
                f"{self.source.what} '{partition}' is not in {self.source.label()} any more",
                partition=partition,
            )
        return info

    def partitions(self) -> list[str]:
        self._listing = self.source.list_objects()
        return sorted(self._listing)

    def earliest(self, partition: str) -> dict:
        return dict(START)

    def latest(self, partition: str) -> dict:
        return {"byte": self._info(partition)["size"]}

    def size(self, partition: str) -> int | None:
        return self._info(partition)["size"]

    def lag(self, partition: str, committed: Any, end: Any = None) -> int | None:
        """Bytes not loaded yet (objects are not counted in records before they are read)."""
        end = self.latest(partition) if end is None else end
        return self.source.pending(committed, end)


class ObjectConsumer(PartitionConsumer):
    """Reads one object (or one range of it) through the source's framing, a frame at a
    time. Pickled to executors: no I/O in __init__."""

    position_type = pa.int64()

    def __init__(
        self, source: ObjectSource, path: str, out_of_range: str, pipeline: str | None
    ) -> None:
        self.source = source
        self.path = path
        self.out_of_range = out_of_range
        self.pipeline = pipeline
        self._f: Any = None
        self._frames: Iterator[Frame] = iter(())
        self._pos: dict[str, Any] = dict(START)
        self._done: dict[str, Any] | None = None
        self._resumable = False

    def _ctx(self, offset: Any = None) -> dict[str, Any]:
        return {"pipeline": self.pipeline, "partition": self.path, "offset": offset}

    def open(self, start: Any, stop: Any = None) -> Gap | None:
        src = self.source
        start = dict(start or START)
        if "skipped" in start:
            self._pos = self._done = start
            return None
        try:
            info = src.filesystem.info(self.path)
        except Exception as e:
            raise src.error(e, f"read {src.what} '{self.path}'", **self._ctx()) from None
        size = int(info.get("size") or 0)
        at = start["byte"]
        gap = None
        if at > size:
            msg = (
                f"offset {start} is past the end of {src.what} '{self.path}' ({size} bytes): "
                "it was truncated or replaced"
            )
            if self.out_of_range != "earliest":
                raise OffsetOutOfRangeError(msg, **self._ctx(start))
            gap = Gap(self.path, start, dict(START), msg + "; loaded again from its start")
            start, at = dict(START), 0
        codec = src.codec(self.path)
        framing = src.framing
        self._resumable = framing.resumable and codec is None
        whole = not self._resumable
        self._pos = {"byte": at}
        if whole and at > 0 and not start.get("split"):
            # loaded whole before; an object replaced since is not loaded twice
            self._pos = self._done = {"byte": size}
            return gap
        end = size if stop is None else min(stop["byte"], size)
        self._done = {"byte": end} if whole else None
        try:
            raw = Guarded(src.filesystem.open(self.path, "rb"))
        except Exception as e:
            raise src.error(e, f"read {src.what} '{self.path}'", **self._ctx()) from None
        self._f = raw
        final = src.immutable or _settled(info)
        if codec is not None:
            stream: Any = Salvaging(decompressed(raw, codec))
            self._frames = framing.frames(stream, 0, None, final=True, align=False)
        else:
            stop_at = None if stop is None else stop["byte"]
            self._frames = framing.frames(
                raw, at, stop_at, final=final, align=bool(start.get("split"))
            )
        return gap

    def fetch(self, max_records: int, timeout_s: float) -> Fetched:
        try:
            frame = next(self._frames)
        except StopIteration:
            if self._done is not None:
                self._pos = dict(self._done)
            return Fetched(_EMPTY, pa.array([], pa.int64()), at_end=True)
        except ReadFailed as e:
            raise self.source.error(
                e, f"read {self.source.what} '{self.path}'", **self._ctx(self._pos)
            ) from None
        except SparkpipesError:
            raise
        except Exception as e:  # whatever a decompressor or reader raises on bad bytes
            raise self._corrupt(e) from None
        if self._resumable:
            self._pos = {"byte": frame.end}
        values = frame.values if frame.values is not None else _EMPTY
        return Fetched(values, frame.positions, table=frame.table, unreadable=frame.unreadable)

    def _corrupt(self, e: BaseException) -> CorruptObjectError:
        src = self.source
        reason = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
        size = self._done["byte"] if self._done is not None else None
        if size is None:
            try:
                size = int(src.filesystem.info(self.path).get("size") or 0)
            except Exception:
                size = self._pos["byte"]
        return CorruptObjectError(
            f"{src.what} '{self.path}' cannot be read to its end: {src.redact(reason)}",
            resume={"byte": size, "skipped": reason[:200]},
            **self._ctx(self._pos),
        )

    def position(self) -> dict:
        return dict(self._pos)

    def close(self) -> None:
        self._frames = iter(())
        if self._f is not None:
            try:
                self._f.close()
            except Exception:
                pass
            self._f = None


def _settled(info: Mapping[str, Any]) -> bool:
    mtime = _mtime(info)
    return mtime is None or time.time() - mtime > SETTLE_S
