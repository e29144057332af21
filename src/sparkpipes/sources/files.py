"""File source: newline-delimited files matched by a glob, one partition per file.

Files are reached through a ``pyarrow.fs`` filesystem: injected by the caller, or
resolved from the location when first needed (a plain path is the local filesystem;
``s3://…``, ``gs://…``, ``hdfs://…``, ``abfs://…`` name an object store), so object
stores need no engine change. Its offsets are JSON objects, ``{"byte": b, "line": n}`` —
the byte position and line number of the next line to read — to show that the SPI is not
Kafka-shaped: the engine stores and returns them without understanding them. Only
complete lines (ending in a newline) are read, so a file that is still being written is
picked up where it stopped on the next batch; files that appear later are new
partitions, read from their start.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from sparkpipes.config import Secret, reject_unknown
from sparkpipes.errors import ConfigError, OffsetOutOfRangeError, SourceError
from sparkpipes.sources.base import Fetched, Gap, MetadataProvider, PartitionConsumer, Source

START = {"byte": 0, "line": 0}
BLOCK = 1 << 20
_GLOB = set("*?[")


def _split(location: str) -> tuple[str | None, str]:
    """(URI prefix such as ``s3://bucket`` or None for local, path pattern)."""
    if "://" in location:
        scheme, _, rest = location.partition("://")
        return f"{scheme}://", rest
    return None, os.path.abspath(os.path.expanduser(location))


def _base(pattern: str) -> str:
    """The longest directory of ``pattern`` without glob characters."""
    parts = pattern.split("/")
    for i, part in enumerate(parts):
        if _GLOB & set(part):
            return "/".join(parts[:i]) or "/"
    return os.path.dirname(pattern) or "/"


class FileSource(Source):
    name = "fs"
    position_type = pa.int64()
    line_oriented = True
    lists_files = True

    def __init__(
        self,
        location: str,
        config: Mapping[str, Any],
        credentials: Mapping[str, Secret],
        *,
        filesystem: Any = None,
    ) -> None:
        reject_unknown(config, set(), what="FS option")
        reject_unknown(credentials, set(), what="FS credential")
        if not location:
            raise ConfigError("FS location must be a path or glob such as '/data/*.json'")
        self.prefix, self.pattern = _split(location)
        self._fs = filesystem

    @property
    def filesystem(self):
        """The injected filesystem, or the one the location names (resolved on first use:
        resolving an object store may ask it for its region)."""
        if self._fs is None:
            from pyarrow import fs

            if self.prefix is None:
                self._fs = fs.LocalFileSystem()
            else:
                try:
                    self._fs, _ = fs.FileSystem.from_uri(self.prefix + _base(self.pattern))
                except (pa.ArrowInvalid, OSError) as e:
                    raise SourceError(f"cannot reach {self.prefix}{self.pattern}: {e}") from None
        return self._fs

    def metadata(self, timeout_s: float | None = None) -> FileMetadata:
        return FileMetadata(self)

    def consumer(
        self, partition: str, *, out_of_range: str = "fail", pipeline: str | None = None
    ) -> FilePartitionConsumer:
        return FilePartitionConsumer(self, partition, out_of_range, pipeline)

    def start_offset(self, meta: MetadataProvider, partition: str, policy: str) -> dict:
        return meta.earliest(partition) if policy == "earliest" else meta.latest(partition)

    def describe(self) -> Mapping[str, Any]:
        return {"source": "fs", "pattern": (self.prefix or "") + self.pattern}

    def label(self) -> str:
        return f"fs '{(self.prefix or '') + self.pattern}'"

    def reached(self, offset: Any, latest: Any) -> bool:
        return offset["byte"] >= latest["byte"]

    def partition_key(self, partition: str) -> Mapping[str, Any]:
        return {"file": partition}

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        if self.prefix is not None:
            state["_fs"] = None  # executors resolve their own client
        return state


class FileMetadata(MetadataProvider):
    def __init__(self, source: FileSource) -> None:
        self.source = source

    def partitions(self) -> list[str]:
        from pyarrow import fs

        src = self.source
        base = _base(src.pattern)
        recursive = "**" in src.pattern or src.pattern.count("/") > base.count("/") + 1
        try:
            infos = src.filesystem.get_file_info(
                fs.FileSelector(base, recursive=recursive, allow_not_found=True)
            )
        except OSError as e:
            raise SourceError(f"cannot list {base}: {e}") from None
        return sorted(
            i.path
            for i in infos
            if i.type == fs.FileType.File
            and fnmatch.fnmatchcase(i.path.lstrip("/"), src.pattern.lstrip("/"))
        )

    def earliest(self, partition: str) -> dict:
        return dict(START)

    def latest(self, partition: str) -> dict:
        byte = line = 0
        with self.source.filesystem.open_input_file(partition) as f:
            while chunk := f.read(BLOCK):
                last = chunk.rfind(b"\n")
                if last >= 0:
                    line += chunk.count(b"\n")
                    byte = f.tell() - len(chunk) + last + 1
        return {"byte": byte, "line": line}

    def watermark(self, partition: str) -> dict:
        """The byte after the last complete line, found from the end of the file."""
        with self.source.filesystem.open_input_file(partition) as f:
            pos = f.size()
            while pos > 0:
                step = min(pos, 1 << 16)
                f.seek(pos - step)
                i = f.read(step).rfind(b"\n")
                if i >= 0:
                    return {"byte": pos - step + i + 1}
                pos -= step
        return {"byte": 0}

    def size(self, partition: str) -> int | None:
        info = self.source.filesystem.get_file_info(partition)
        return info.size if info.size is not None and info.size >= 0 else None

    def lag(self, partition: str, committed: Any, end: Any = None) -> int | None:
        end = self.latest(partition) if end is None or "line" not in end else end
        return max(0, end["line"] - committed["line"])


class FilePartitionConsumer(PartitionConsumer):
    """Reads complete lines of one file in blocks. Pickled to executors: no I/O in
    __init__."""

    position_type = pa.int64()

    def __init__(
        self, source: FileSource, path: str, out_of_range: str, pipeline: str | None
    ) -> None:
        self.source = source
        self.path = path
        self.out_of_range = out_of_range
        self.pipeline = pipeline
        self._f = None
        self._ready: list[bytes] = []
        self._tail = b""
        self._pos = dict(START)

    def open(self, start: dict) -> Gap | None:
        try:
            self._f = self.source.filesystem.open_input_file(self.path)
        except OSError as e:
            raise SourceError(
                f"cannot open {self.path}: {e}", pipeline=self.pipeline, partition=self.path
            ) from None
        size = self._f.size()
        gap = None
        if start["byte"] > size:
            msg = f"offset {start} is past the end of {self.path} ({size} bytes): it was truncated"
            if self.out_of_range != "earliest":
                raise OffsetOutOfRangeError(msg, pipeline=self.pipeline, partition=self.path)
            gap = Gap(self.path, start, dict(START), msg + "; resumed at its start")
            start = dict(START)
        self._f.seek(start["byte"])
        self._ready, self._tail = [], b""
        self._pos = {"byte": start["byte"], "line": start["line"]}
        return gap

    def fetch(self, max_records: int, timeout_s: float) -> Fetched:
        while len(self._ready) < max_records:
            block = self._f.read(BLOCK)
            if not block:
                break  # a partial last line stays for a later batch
            data = self._tail + block
            cut = data.rfind(b"\n")
            if cut < 0:
                self._tail = data
                continue
            self._ready.extend(data[:cut].split(b"\n"))
            self._tail = data[cut + 1 :]
        lines = self._ready[:max_records]
        del self._ready[:max_records]
        first = self._pos["line"]
        self._pos = {
            "byte": self._pos["byte"] + sum(map(len, lines)) + len(lines),
            "line": first + len(lines),
        }
        return Fetched(
            values=pa.array([ln.rstrip(b"\r") for ln in lines], pa.binary()),
            positions=pa.array(range(first, first + len(lines)), pa.int64()),
            at_end=len(lines) < max_records,  # every complete line there is was read
        )

    def position(self) -> dict:
        return dict(self._pos)

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None
