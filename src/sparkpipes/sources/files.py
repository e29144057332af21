"""File source: newline-delimited files matched by a glob, one partition per file.

Its offsets are JSON objects, ``{"byte": b, "line": n}`` — the byte position and line
number of the next line to read — to show that the SPI is not Kafka-shaped: the engine
stores and returns them without understanding them. Only complete lines (ending in a
newline) are read, so a file that is still being written is picked up where it stopped
on the next batch; files that appear later are new partitions, read from their start.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from sparkpipes.config import Secret, reject_unknown
from sparkpipes.errors import ConfigError, OffsetOutOfRangeError, SourceError
from sparkpipes.sources.base import Fetched, Gap, MetadataProvider, PartitionConsumer, Source

START = {"byte": 0, "line": 0}


class FileSource(Source):
    name = "fs"
    position_type = pa.int64()
    line_oriented = True
    lists_files = True

    def __init__(
        self, location: str, config: Mapping[str, Any], credentials: Mapping[str, Secret]
    ) -> None:
        reject_unknown(config, set(), what="FS option")
        reject_unknown(credentials, set(), what="FS credential")
        if not location:
            raise ConfigError("FS location must be a path or glob such as '/data/*.json'")
        self.pattern = os.path.abspath(os.path.expanduser(location))

    def metadata(self, timeout_s: float = 10.0) -> FileMetadata:
        return FileMetadata(self)

    def consumer(
        self, partition: str, *, out_of_range: str = "fail", pipeline: str | None = None
    ) -> FilePartitionConsumer:
        return FilePartitionConsumer(partition, out_of_range, pipeline)

    def start_offset(self, meta: MetadataProvider, partition: str, policy: str) -> dict:
        return meta.earliest(partition) if policy == "earliest" else meta.latest(partition)

    def describe(self) -> Mapping[str, Any]:
        return {"source": "fs", "pattern": self.pattern}

    def label(self) -> str:
        return f"fs '{self.pattern}'"

    def reached(self, offset: Any, latest: Any) -> bool:
        return offset["byte"] >= latest["byte"]

    def partition_key(self, partition: str) -> Mapping[str, Any]:
        return {"file": partition}


class FileMetadata(MetadataProvider):
    def __init__(self, source: FileSource) -> None:
        self.source = source

    def partitions(self) -> list[str]:
        return sorted(p for p in glob.glob(self.source.pattern) if os.path.isfile(p))

    def earliest(self, partition: str) -> dict:
        return dict(START)

    def latest(self, partition: str) -> dict:
        with open(partition, "rb") as f:
            data = f.read()
        end = data.rfind(b"\n") + 1
        return {"byte": end, "line": data.count(b"\n", 0, end)}

    def watermark(self, partition: str) -> dict:
        """The byte after the last complete line, found from the end of the file."""
        with open(partition, "rb") as f:
            pos = f.seek(0, os.SEEK_END)
            while pos > 0:
                step = min(pos, 1 << 16)
                f.seek(pos - step)
                chunk = f.read(step)
                i = chunk.rfind(b"\n")
                if i >= 0:
                    return {"byte": pos - step + i + 1}
                pos -= step
        return {"byte": 0}

    def size(self, partition: str) -> int | None:
        return os.path.getsize(partition) if os.path.exists(partition) else None

    def lag(self, partition: str, committed: Any, end: Any = None) -> int | None:
        end = self.latest(partition) if end is None or "line" not in end else end
        return max(0, end["line"] - committed["line"])


class FilePartitionConsumer(PartitionConsumer):
    position_type = pa.int64()

    def __init__(self, path: str, out_of_range: str, pipeline: str | None) -> None:
        self.path = path
        self.out_of_range = out_of_range
        self.pipeline = pipeline
        self._f = None
        self._pos = dict(START)

    def open(self, start: dict) -> Gap | None:
        try:
            self._f = open(self.path, "rb")  # noqa: SIM115 - closed in close()
        except OSError as e:
            raise SourceError(
                f"cannot open {self.path}: {e.strerror}",
                pipeline=self.pipeline,
                partition=self.path,
            ) from None
        size = os.fstat(self._f.fileno()).st_size
        gap = None
        if start["byte"] > size:
            msg = f"offset {start} is past the end of {self.path} ({size} bytes): it was truncated"
            if self.out_of_range != "earliest":
                raise OffsetOutOfRangeError(msg, pipeline=self.pipeline, partition=self.path)
            gap = Gap(self.path, start, dict(START), msg + "; resumed at its start")
            start = dict(START)
        self._f.seek(start["byte"])
        self._pos = {"byte": start["byte"], "line": start["line"]}
        return gap

    def fetch(self, max_records: int, timeout_s: float) -> Fetched:
        values, lines = [], []
        while len(values) < max_records:
            line = self._f.readline()
            if not line.endswith(b"\n"):
                self._f.seek(self._pos["byte"])  # partial line: leave it for later
                break
            self._pos = {"byte": self._pos["byte"] + len(line), "line": self._pos["line"] + 1}
            values.append(line.rstrip(b"\r\n"))
            lines.append(self._pos["line"] - 1)
        return Fetched(
            values=pa.array(values, pa.binary()),
            positions=pa.array(lines, pa.int64()),
            at_end=len(values) < max_records,  # every complete line there is was read
        )

    def position(self) -> dict:
        return dict(self._pos)

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None
