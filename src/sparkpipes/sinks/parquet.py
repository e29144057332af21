"""Parquet data files written from executors, and the add-action describing each.

A file written here is invisible until a commit references it (a Delta commit, or a
database sink's load): :class:`ParquetWriter` only writes and, for an attempt that will
never commit, removes. Shared by every sink that stages or writes Parquet.
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sparkpipes.errors import SchemaMismatchError, SinkError, StorageFullError
from sparkpipes.sinks.base import SinkWriter, Staged

#: the add-action's columns as a Spark DDL schema (what a write task returns)
ADD_FILE_SCHEMA = (
    "path string, size bigint, modification_time bigint, num_records bigint, stats string"
)


@dataclass(frozen=True)
class AddFile(Staged):
    path: str  # relative to the writer's root
    size: int
    modification_time: int
    num_records: int
    stats: str

    def to_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def local_path(uri: str) -> str:
    return uri[len("file://") :] if uri.startswith("file://") else uri


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_NO_ROOM = (errno.ENOSPC, errno.EDQUOT)


def write_error(what: str, where: str, e: BaseException) -> SinkError:
    """``e`` as the error of the write ``what`` (``"cannot …"``, ``"… failed"``): no space
    or quota left is a :class:`StorageFullError` naming ``where``; anything else a
    :class:`SinkError` with the cause on one line (delta-rs chains causes on coloured
    lines)."""
    text = ": ".join(
        line for raw in str(e).splitlines() if (line := _ANSI.sub("", raw).strip(" \u21b3"))
    )
    for code in _NO_ROOM:
        if getattr(e, "errno", None) == code or os.strerror(code) in text:
            return StorageFullError(f"{what}: {os.strerror(code)} ({where})")
    return SinkError(f"{what}: {text or type(e).__name__}")


#: string statistics are cut to this many characters (Delta readers' default)
STATS_STRING_CHARS = 32


def _stats(table: pa.Table) -> str:
    """The add-action statistics Delta readers skip files by: numbers, dates and strings
    (a string minimum cut to its first ``STATS_STRING_CHARS`` characters, still a lower
    bound; a longer maximum is left out, as a cut one would not be an upper bound)."""
    mins, maxs, nulls = {}, {}, {}
    for name, col in zip(table.column_names, table.columns):
        nulls[name] = col.null_count
        t = col.type
        if pa.types.is_floating(t):  # JSON has no NaN or infinity: such a bound is left out
            finite = col.filter(pc.is_finite(col))
            mm = pc.min_max(finite)
            lo, hi = mm["min"].as_py(), mm["max"].as_py()
            nan = pc.any(pc.is_nan(col)).as_py()
            if lo is not None and not nan and not pc.any(pc.equal(col, -math.inf)).as_py():
                mins[name] = lo
            if hi is not None and not nan and not pc.any(pc.equal(col, math.inf)).as_py():
                maxs[name] = hi
        elif pa.types.is_integer(t) or pa.types.is_date(t):
            mm = pc.min_max(col)
            lo, hi = mm["min"].as_py(), mm["max"].as_py()
            if lo is not None:
                mins[name] = lo if not pa.types.is_date(t) else lo.isoformat()
                maxs[name] = hi if not pa.types.is_date(t) else hi.isoformat()
        elif pa.types.is_string(t) or pa.types.is_large_string(t):
            mm = pc.min_max(col)
            lo, hi = mm["min"].as_py(), mm["max"].as_py()
            if lo is not None:
                mins[name] = lo[:STATS_STRING_CHARS]
                if len(hi) <= STATS_STRING_CHARS:
                    maxs[name] = hi
    stats = {"numRecords": table.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls}
    return json.dumps(stats, default=str)


class ParquetWriter(SinkWriter):
    """Writes Parquet files below ``root`` through a ``pyarrow.fs`` filesystem: the one
    injected, or the one ``root`` names (a local path, or ``s3://…`` and other object
    stores), resolved on the executor at the first write. Pickled to executors: no I/O in
    __init__."""

    def __init__(
        self, root: str, schema: pa.Schema, table_name: str, filesystem: Any = None
    ) -> None:
        self.root = root
        self.schema = schema
        self.table_name = table_name
        self._fs = filesystem

    def _filesystem(self) -> tuple[Any, str]:
        from pyarrow import fs

        if self._fs is not None:
            return self._fs, local_path(self.root)
        if "://" in self.root and not self.root.startswith("file://"):
            return fs.FileSystem.from_uri(self.root)
        return fs.LocalFileSystem(), local_path(self.root)

    def write(self, table: pa.Table, name: str) -> AddFile:
        """Write ``table`` as one new Parquet file; return its add-action (not committed)."""
        if table.schema != self.schema:
            try:
                table = table.cast(self.schema)
            except (pa.ArrowInvalid, ValueError) as e:
                raise SchemaMismatchError(
                    f"decoded data does not fit table '{self.table_name}': {e}"
                ) from None
        rel = f"{name}-{uuid.uuid4().hex}.snappy.parquet"
        path = f"{self.root.rstrip('/')}/{rel}"
        try:
            filesystem, root = self._filesystem()
            path = f"{root.rstrip('/')}/{rel}"
            filesystem.create_dir(root, recursive=True)
            pq.write_table(table, path, compression="snappy", filesystem=filesystem)
            info = filesystem.get_file_info(path)
        except OSError as e:  # a partly written local file is removed by write_table
            what = f"cannot write a data file of table '{self.table_name}'"
            raise write_error(what, path, e) from None
        mtime = int(info.mtime_ns // 1_000_000) if info.mtime_ns else int(time.time() * 1000)
        return AddFile(rel, info.size, mtime, table.num_rows, _stats(table))

    def remove(self, files: Sequence[AddFile] = (), *, prefix: str | None = None) -> None:
        """Delete files this writer wrote that will never be committed: ``files`` and, with
        ``prefix``, every file whose name starts with it (what the tasks of a failed job
        wrote without reporting back). Missing ones are skipped."""
        from pyarrow import fs

        filesystem, root = self._filesystem()
        root = root.rstrip("/")
        paths = [f"{root}/{f.path}" for f in files]
        if prefix is not None:
            listed = filesystem.get_file_info(fs.FileSelector(root, allow_not_found=True))
            paths += [i.path for i in listed if i.base_name.startswith(prefix)]
        for info in filesystem.get_file_info(list(dict.fromkeys(paths))):
            if info.type != fs.FileType.NotFound:
                try:
                    filesystem.delete_file(info.path)
                except FileNotFoundError:
                    pass  # removed meanwhile (another cleanup of the same attempt)
