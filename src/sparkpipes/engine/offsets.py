"""Where pipelines are in their sources: committed offsets, moving them, lag, dry runs.

Committed offsets are read from the destination (``Sink.committed``), never from the
catalog. Moving them (``ALTER PIPELINE … SET OFFSETS``) is an empty batch committed like
any other, under the pipeline's lock, so a batch in flight cannot overwrite the move.
Offsets stay opaque here: earliest, latest and lag come from the source's metadata
provider, which alone knows how to compare its offsets.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from sparkpipes.catalog import BatchState, PipelineRecord
from sparkpipes.catalog.views import PartitionOffsets
from sparkpipes.engine.runtime import Runtime
from sparkpipes.errors import ConfigError, DecodeError, NotFoundError, SparkpipesError
from sparkpipes.sinks import BatchCommit
from sparkpipes.sources.base import start_at

SNAPSHOT_TIMEOUT_S = 3.0


class Offsets:
    def __init__(self, rt: Runtime) -> None:
        self.rt = rt

    def committed(self, name: str) -> dict[str, Any]:
        """The committed end offset of every partition, read from the destination."""
        committed = self.rt.runner(name).committed()
        return dict(committed.offsets) if committed else {}

    def move(self, name: str, offsets: str | Mapping[str, Any]) -> dict[str, Any]:
        """Move a pipeline's offsets: ``"earliest"``, ``"latest"`` or {partition: offset}."""
        with self.rt.lock(name):
            runner = self.rt.runner(name)
            committed = runner.committed()
            current = dict(committed.offsets) if committed else {}
            parts = runner.meta.partitions()
            if isinstance(offsets, str):
                if offsets.lower() not in ("earliest", "latest"):
                    raise ConfigError(
                        f"offsets must be EARLIEST, LATEST or a JSON object, got '{offsets}'",
                        pipeline=name,
                    )
                new = {
                    p: runner.source.start_offset(runner.meta, p, offsets.lower()) for p in parts
                }
            else:
                offsets = {runner.source.partition_of(str(p)): v for p, v in offsets.items()}
                unknown = [str(p) for p in offsets if str(p) not in parts]
                if unknown:
                    raise ConfigError(
                        f"partition(s) {', '.join(unknown)} do not exist in the source "
                        f"(partitions: {', '.join(parts)})",
                        pipeline=name,
                    )
                new = {**current, **{str(p): v for p, v in offsets.items()}}
            self._commit(runner, name, committed, new)
            return new

    def reset(self, name: str, partitions: list[str] | None = None) -> dict[str, Any]:
        """Put partitions (all of them when None) back where the pipeline starts (its
        ``start`` policy: earliest, latest, or a time), as if it had never read them:
        Kafka Connect's offset reset. An empty batch under the pipeline's lock, like
        :meth:`move`; the offsets after it."""
        with self.rt.lock(name):
            runner = self.rt.runner(name)
            committed = runner.committed()
            current = dict(committed.offsets) if committed else {}
            parts = runner.meta.partitions()
            wanted = parts if partitions is None else [str(p) for p in partitions]
            unknown = [p for p in wanted if p not in parts]
            if unknown:
                raise ConfigError(
                    f"partition(s) {', '.join(unknown)} do not exist in the source "
                    f"(partitions: {', '.join(parts)})",
                    pipeline=name,
                )
            policy = runner.spec.source.start
            new = {
                **current,
                **{p: start_at(runner.source, runner.meta, p, policy) for p in wanted},
            }
            self._commit(runner, name, committed, new)
            return new

    def forget(self, name: str, file: str) -> None:
        """``ALTER PIPELINE … DROP FILE``: forget an object, so that the next batch loads
        it again from its start (an empty batch that commits the offsets without it)."""
        with self.rt.lock(name):
            runner = self.rt.runner(name)
            if not runner.source.lists_files:
                raise ConfigError(
                    f"DROP FILE applies to pipelines of files (FS, S3, AZURE, HDFS); pipeline "
                    f"'{name}' reads {runner.spec.source.kind}",
                    pipeline=name,
                )
            committed = runner.committed()
            current = dict(committed.offsets) if committed else {}
            if file not in current:
                if file in runner.meta.partitions():
                    return  # not loaded yet: nothing to forget
                raise NotFoundError(
                    f"pipeline '{name}' has no file '{file}' "
                    "(information_schema.PIPELINES_FILES lists its files)",
                    pipeline=name,
                )
            del current[file]
            self._commit(runner, name, committed, current)

    def _commit(self, runner: Any, name: str, committed: Any, new: dict[str, Any]) -> None:
        """Offsets moved by hand: an empty batch, committed and recorded like any other."""
        batch_id = committed.batch_id + 1 if committed else 1
        runner.sink.commit([], BatchCommit(runner.app_id, name, batch_id, new))
        self.rt.catalog.batches.record(
            pipeline_id=runner.pipeline_id,
            pipeline_name=name,
            batch_id=batch_id,
            attempt=1,
            state=BatchState.OFFSETS_SET,
            started_at=dt.datetime.now(dt.UTC).replace(tzinfo=None),
            offsets=new,
        )
        runner.forget_idle()
        self.rt.catalog.pipelines.update(name)  # an engine serving it elsewhere sees the move

    def dry_run(self, name: str, limit: int = 10) -> pa.Table:
        """Decode up to ``limit`` records from the committed offsets; load nothing."""
        runner = self.rt.runner(name)
        spec = runner.spec
        decoder = runner.pipeline.decoder
        committed = runner.committed()
        offsets = dict(committed.offsets) if committed else {}
        meta = runner.source.metadata()
        tables = []
        left = limit
        try:
            for p in meta.partitions():
                if left <= 0:
                    break
                start = offsets.get(p)
                if start is None:
                    start = start_at(runner.source, meta, p, spec.source.start)
                consumer = runner.source.consumer(p, out_of_range="fail", pipeline=name)
                try:
                    consumer.open(start)
                    fetched = consumer.fetch(left, max(spec.batch.fetch_timeout_ms / 1000, 1.0))
                finally:
                    consumer.close()
                decoded = (
                    decoder.decode_table(fetched.table)
                    if fetched.table is not None
                    else decoder.decode(fetched.values)
                )
                if decoded.errors and not spec.format.skip_parser_errors:
                    e = decoded.errors[0]
                    raise DecodeError(
                        f"cannot decode the record at partition {p} offset "
                        f"{fetched.positions[e.index].as_py()}: {e.reason}",
                        pipeline=name,
                        partition=p,
                    )
                tables.append(decoded.table)
                left -= len(fetched)
        finally:
            meta.close()
        if not tables:
            return decoder.schema.empty_table()
        return pa.concat_tables(tables)

    def snapshot(self, rec: PipelineRecord) -> list[PartitionOffsets]:
        """Per source partition: committed offset (from the destination) and, if the
        source answers within a few seconds, earliest / latest offsets and lag (for a
        partition not read yet, from where the pipeline will start). A lag the source
        cannot tell is None, never 0. Takes no pipeline lock: the views and ``status``
        never wait for a batch."""
        runner = self.rt.runner(rec.name)
        committed = runner.committed()
        offs = dict(committed.offsets) if committed else {}
        meta = runner.source.metadata(timeout_s=SNAPSHOT_TIMEOUT_S)
        try:
            try:
                parts = meta.partitions()
            except SparkpipesError:
                parts = []
            out = []
            tasks = runner.source.assignment(sorted(parts)) or {}
            for p in sorted(set(parts) | set(offs)):
                earliest = latest = lag = size = None
                if p in parts:
                    try:
                        earliest = meta.earliest(p)
                        latest = meta.end(p)
                        start = offs.get(p)
                        if start is None:  # not read yet: it starts where the policy says
                            start = start_at(runner.source, meta, p, runner.spec.source.start)
                        lag = meta.lag(p, start, latest)
                        size = meta.size(p)
                    except SparkpipesError:
                        pass
                out.append(
                    PartitionOffsets(
                        p,
                        runner.source.partition_key(p),
                        offs.get(p),
                        earliest,
                        latest,
                        lag,
                        size,
                        tasks.get(p),
                    )
                )
            return out
        finally:
            meta.close()
