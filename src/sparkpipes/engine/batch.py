"""One batch of one pipeline, run by the commit protocol (Delta destination).

1. **Plan.** The start offsets of batch *B* are the end offsets committed by batch *B-1*,
   read from the destination table's commit log (the catalog's copy is used only when it
   names the same batch as the table's app transaction). Partitions with no committed
   offset start at ``earliest``/``latest`` on the pipeline's first batch and at
   ``earliest`` when they appear later. At most ``max_partitions_per_batch`` partitions
   are chosen, rotating by batch id; a partition known to be drained is skipped until its
   source reports a change.
2. **Extract, decode, write.** One Spark task per chosen partition (``engine.task``):
   consume from its start offset to the batch limit or the partition's end (the
   source's end report or an empty fetch, never short of the planned watermark), decode
   to Arrow, write Parquet files under unique names into the table directory, return
   add-actions, counts, errors and the end offset reached. Records that did not decode
   are stored in the errors store (keyed by pipeline and batch, so a retried batch
   replaces, never duplicates, them) before the commit, or fail the batch.
3. **Commit.** One Delta commit: every add-action + app transaction
   ``(pipeline id, B)`` + the end offsets of *all* partitions in the commit info. If the
   table's transaction version for the pipeline is already ≥ *B*, the batch was committed
   before a crash and is skipped. Files of failed attempts are never referenced.
4. **Record.** The batch (rows, bytes, time, per-partition offsets) goes to the catalog.
   A crash before this step loses only the history row; the next plan reads the offsets
   from the table and the catalog is reconciled from it.

A crash between any two steps therefore either redoes the batch from the same start
offsets (nothing visible happened) or finds it committed and moves on: every record is
in the table exactly once.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from sparkpipes.catalog import Catalog
from sparkpipes.config import PipelineSpec
from sparkpipes.engine import transform as tf
from sparkpipes.engine.faults import crash_point
from sparkpipes.engine.task import TIMINGS, TaskSpec, run_task
from sparkpipes.engine.transform import Transform
from sparkpipes.errors import EngineError, SparkpipesError
from sparkpipes.formats import Decoder
from sparkpipes.sinks import AddFile, Committed, DeltaSink
from sparkpipes.sources import MetadataProvider, Source

log = logging.getLogger("sparkpipes.batch")

IDLE_RECHECK_S = 2.0


@dataclass
class BatchResult:
    pipeline: str
    batch_id: int
    state: str  # Succeeded | NoData | Replayed
    rows: int = 0
    bytes: int = 0
    errors: int = 0
    seconds: float = 0.0
    partitions: list[dict[str, Any]] = field(default_factory=list)
    offsets: dict[str, Any] = field(default_factory=dict)


@dataclass
class Plan:
    batch_id: int
    committed: dict[str, Any]
    starts: dict[str, Any]  # the partitions this batch reads
    offsets: dict[str, Any]  # every known partition's offset before the batch
    watermarks: dict[str, Any] = field(default_factory=dict)  # of the partitions it reads


@dataclass
class Written:
    """What step 2 produced: the files and offsets one commit will publish."""

    plan: Plan
    files: list[AddFile]
    errors: list[dict[str, Any]]
    ends: dict[str, Any]
    parts: list[dict[str, Any]]
    rows: int
    nbytes: int
    t0: float


class BatchRunner:
    """Runs batches of one pipeline. Keeps only a drained-partition hint in memory."""

    def __init__(
        self,
        spec: PipelineSpec,
        pipeline_id: str,
        source: Source,
        decoder: Decoder,
        sink: DeltaSink,
        catalog: Catalog,
        spark,
        *,
        output_schema=None,
        transform: Transform | None = None,
        staging: DeltaSink | None = None,
        upsert: tuple[str, list[str]] | None = None,
        merging: DeltaSink | None = None,
        staging_root: str | None = None,
    ) -> None:
        self.output_schema = output_schema
        self.transform = transform or Transform()
        self.staging = staging
        self.upsert = upsert  # (mode, primary key) for REPLACE / IGNORE INTO TABLE
        self.merging = merging  # where an upsert's rows wait for the merge
        self.staging_root = staging_root
        self.spec = spec
        self.pipeline_id = pipeline_id
        self.app_id = f"sparkpipes:{pipeline_id}"
        self.source = source
        self.decoder = decoder
        self.sink = sink
        self.catalog = catalog
        self.spark = spark
        self._meta: MetadataProvider | None = None
        self._idle: dict[str, Any] = {}

    @property
    def meta(self) -> MetadataProvider:
        if self._meta is None:
            self._meta = self.source.metadata()
        return self._meta

    def close(self) -> None:
        if self._meta is not None:
            self._meta.close()
            self._meta = None

    # -- step 1 -----------------------------------------------------------------------
    def committed(self) -> Committed | None:
        hint = self.catalog.last_succeeded(self.pipeline_id)
        return self.sink.committed(self.app_id, Committed(*hint) if hint else None)

    def plan(self) -> Plan:
        committed = self.committed()
        batch_id = committed.batch_id + 1 if committed else 1
        known = dict(committed.offsets) if committed else {}
        partitions = self.meta.partitions()
        offsets = dict(known)
        for p in partitions:
            if p not in offsets:
                policy = self.spec.offsets if committed is None else "earliest"
                offsets[p] = self.source.start_offset(self.meta, p, policy)
        marks = {p: self.meta.watermark(p) for p in partitions}
        candidates = [p for p in partitions if not self._still_idle(p, marks[p])]
        limit = self.spec.max_partitions_per_batch
        if limit is not None and len(candidates) > limit:
            shift = (batch_id * limit) % len(candidates)
            candidates = (candidates[shift:] + candidates[:shift])[:limit]
        starts = {p: offsets[p] for p in candidates}
        return Plan(batch_id, known, starts, offsets, {p: marks[p] for p in candidates})

    def forget_idle(self) -> None:
        self._idle.clear()

    def _still_idle(self, partition: str, watermark: Any) -> bool:
        """Skip a drained partition while its latest offset stays put, for a while only:
        a watermark can repeat (a recreated topic, a broker that under-reports it)."""
        if partition not in self._idle:
            return False
        token, since = self._idle[partition]
        if time.time() - since > IDLE_RECHECK_S:
            return False
        return token == watermark

    # -- steps 2-4 --------------------------------------------------------------------
    def run(self, attempt: int = 1) -> BatchResult:
        """Steps 1 to 4 of the protocol, with a crash point after each."""
        started_at = dt.datetime.now(dt.UTC).replace(tzinfo=None)
        plan = self.plan()
        crash_point("after_plan")
        written = self.extract(plan, attempt, started_at)
        crash_point("after_write")
        return self.commit(written, attempt, started_at)

    # -- step 2 -----------------------------------------------------------------------
    def extract(
        self, plan: Plan, attempt: int = 1, started_at: dt.datetime | None = None
    ) -> Written:
        """Run the tasks (and the transform job, if any); nothing is visible yet."""
        started_at = started_at or dt.datetime.now(dt.UTC).replace(tzinfo=None)
        t0 = time.time()
        watermarks = plan.watermarks
        results = self._execute(plan, watermarks)
        failed = [r for r in results if "failed" in r]
        if failed:
            err = SparkpipesError.from_dict(failed[0]["failed"])
            err.with_context(batch=plan.batch_id, pipeline=self.spec.name)
            self._record_failure(plan, attempt, started_at, err, failed[0])
            raise err

        ends = dict(plan.offsets)
        files: list[AddFile] = []
        errors: list[dict[str, Any]] = []
        for r in results:
            ends[r["partition"]] = r["end"]
            files.extend(AddFile(**f) for f in r["files"])
            errors.extend(r["errors"])
            if r["drained"]:
                self._idle[r["partition"]] = (watermarks[r["partition"]], time.time())
            else:
                self._idle.pop(r["partition"], None)
        rows = sum(r["rows"] for r in results)
        if self.transform and files:
            files = tf.run_staged(
                self.spark,
                files,
                self.staging.uri,
                self.staging.schema,
                self.transform,
                self.merging or self.sink,
                f"part-b{plan.batch_id:08d}-t",
            )
            rows = sum(f.num_records for f in files)
        parts = [
            {
                "partition": r["partition"],
                "start": r["start"],
                "end": r["end"],
                "rows": r["rows"],
                "read": r["read"],
                **{k: r[k] for k in TIMINGS if k in r},
            }
            for r in results
        ]
        nbytes = sum(r["bytes"] for r in results)
        return Written(plan, files, errors, ends, parts, rows, nbytes, t0)

    # -- steps 3 and 4 ----------------------------------------------------------------
    def commit(
        self, w: Written, attempt: int = 1, started_at: dt.datetime | None = None
    ) -> BatchResult:
        """One Delta commit (or none for an idle batch), then the catalog record."""
        started_at = started_at or dt.datetime.now(dt.UTC).replace(tzinfo=None)
        plan = w.plan
        result = BatchResult(
            self.spec.name,
            plan.batch_id,
            "Succeeded",
            w.rows,
            w.nbytes,
            len(w.errors),
            partitions=w.parts,
            offsets=w.ends,
        )
        if not w.files and w.ends == plan.committed:
            result.state = "NoData"
            result.seconds = time.time() - w.t0
            return result

        if w.errors:
            self.catalog.replace_errors(self.pipeline_id, self.spec.name, plan.batch_id, w.errors)
        extra = {"sparkpipes.pipeline_name": self.spec.name}
        if self.upsert and w.files:
            mode, keys = self.upsert
            fresh = self.sink.merge(
                self.merging.uri,
                w.files,
                keys=keys,
                mode=mode,
                app_id=self.app_id,
                batch_id=plan.batch_id,
                offsets=w.ends,
                extra=extra,
            )
        else:
            fresh = self.sink.commit(
                w.files, app_id=self.app_id, batch_id=plan.batch_id, offsets=w.ends, extra=extra
            )
        self._drop_staging()
        if not fresh:
            # another writer committed batch B first: its files and offsets stand, this
            # attempt's do not, and the catalog row is the winner's to write
            won = self.sink.committed(self.app_id)
            result.state = "Replayed"
            result.rows = result.bytes = result.errors = 0
            result.offsets = dict(won.offsets) if won else {}
            result.seconds = time.time() - w.t0
            return result
        crash_point("after_commit")
        result.seconds = time.time() - w.t0
        self.catalog.record_batch(
            pipeline_id=self.pipeline_id,
            pipeline_name=self.spec.name,
            batch_id=plan.batch_id,
            attempt=attempt,
            state="Succeeded",
            started_at=started_at,
            rows=w.rows,
            nbytes=w.nbytes,
            errors=len(w.errors),
            partitions=w.parts,
            offsets=w.ends,
        )
        crash_point("after_record")
        return result

    def _drop_staging(self) -> None:
        if self.staging_root is not None and (self.staging or self.merging):
            tf.remove_staging(self.staging_root)

    def _execute(self, plan: Plan, watermarks: dict[str, Any]) -> list[dict[str, Any]]:
        if not plan.starts:
            return []
        self._drop_staging()  # leftovers of an attempt that did not commit
        specs = [
            TaskSpec(
                pipeline=self.spec.name,
                pipeline_id=self.pipeline_id,
                batch_id=plan.batch_id,
                partition=p,
                start=start,
                source=self.source,
                source_label=_label(self.source),
                decoder=self.decoder,
                sink=self.staging if self.transform else (self.merging or self.sink),
                output_schema=self.output_schema,
                watermark=watermarks.get(p),
                skip_lines=self.spec.skip_lines,
                max_records=self.spec.max_offsets_per_batch_partition,
                fetch_timeout_s=self.spec.fetch_timeout_ms / 1000,
                skip_parser_errors=self.spec.skip_parser_errors,
                out_of_range=self.spec.on_offset_out_of_range,
                provenance=self.spec.provenance,
            )
            for p, start in plan.starts.items()
        ]
        sc = self.spark.sparkContext
        sc.setJobGroup(f"{self.spec.name}-{plan.batch_id}", f"pipeline {self.spec.name}", True)
        try:
            return sc.parallelize(specs, len(specs)).map(run_task).collect()
        except Exception as e:
            msg = str(e).strip().splitlines()
            raise EngineError(
                f"Spark job failed: {msg[0] if msg else type(e).__name__}",
                pipeline=self.spec.name,
                batch=plan.batch_id,
            ) from None

    def _record_failure(
        self,
        plan: Plan,
        attempt: int,
        started_at: dt.datetime,
        err: SparkpipesError,
        raw: dict[str, Any],
    ) -> None:
        if raw.get("trace"):
            log.debug("task trace for %s:\n%s", err, raw["trace"])
        record = {
            "partition": err.partition or "",
            "offset": _offset_of(err, plan),
            "code": err.code,
            "kind": type(err).__name__,
            "reason": err.message,
            "excerpt": None,
        }
        self.catalog.replace_errors(self.pipeline_id, self.spec.name, plan.batch_id, [record])
        self.catalog.record_batch(
            pipeline_id=self.pipeline_id,
            pipeline_name=self.spec.name,
            batch_id=plan.batch_id,
            attempt=attempt,
            state="Failed",
            started_at=started_at,
            partitions=[{"partition": p, "start": s} for p, s in plan.starts.items()],
            error=str(err),
        )


def _label(source: Source) -> str:
    d = source.describe()
    if "topic" in d:
        return f"topic '{d['topic']}'"
    return f"{d.get('source', 'source')} '{d.get('pattern', '')}'"


def _offset_of(err: SparkpipesError, plan: Plan) -> Any:
    return err.offset if err.offset is not None else plan.starts.get(err.partition or "")
