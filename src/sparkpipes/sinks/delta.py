"""Delta Lake destination (delta-rs): executors write Parquet, the driver commits once.

The sink is split along the commit protocol (see ``sparkpipes.engine.batch``):

* executor side — :meth:`DeltaSink.write_file` writes one Parquet file under a unique name
  in the table directory and returns its add-action. Nothing is visible to readers yet;
  a file whose batch never commits is never referenced (``VACUUM`` removes it).
* driver side — :meth:`DeltaSink.commit` makes **one** Delta commit holding every
  add-action of the batch, the app transaction ``(app_id, batch_id)`` and the batch's end
  offsets in the commit info. Data and offsets become visible together or not at all.
  :meth:`DeltaSink.committed` reads back the last committed batch and its offsets: the
  table, not the catalog, is the source of truth for where a pipeline resumes.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sparkpipes.errors import SchemaMismatchError, SinkError

META_PIPELINE = "sparkpipes.pipeline"
META_BATCH = "sparkpipes.batch"
META_OFFSETS = "sparkpipes.offsets"


@dataclass(frozen=True)
class AddFile:
    path: str  # relative to the table root
    size: int
    modification_time: int
    num_records: int
    stats: str

    def to_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


@dataclass(frozen=True)
class Committed:
    batch_id: int
    offsets: dict[str, Any]


def _local_path(uri: str) -> str:
    return uri[len("file://") :] if uri.startswith("file://") else uri


def _stats(table: pa.Table) -> str:
    mins, maxs, nulls = {}, {}, {}
    for name, col in zip(table.column_names, table.columns):
        nulls[name] = col.null_count
        t = col.type
        if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_date(t):
            mm = pc.min_max(col)
            lo, hi = mm["min"].as_py(), mm["max"].as_py()
            if lo is not None:
                mins[name] = lo if not pa.types.is_date(t) else lo.isoformat()
                maxs[name] = hi if not pa.types.is_date(t) else hi.isoformat()
    stats = {"numRecords": table.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls}
    return json.dumps(stats, default=str)


def _dedupe(table: pa.Table, keys: list[str], *, keep_last: bool) -> pa.Table:
    if table.num_rows == 0:
        return table
    indexed = table.append_column("__row", pa.array(range(table.num_rows), pa.int64()))
    agg = "max" if keep_last else "min"
    picked = indexed.group_by(keys, use_threads=False).aggregate([("__row", agg)])
    rows = pc.sort_indices(picked.column(f"__row_{agg}"))
    return table.take(picked.column(f"__row_{agg}").take(rows))


class DeltaSink:
    """One Delta table. Pickled to executors: the constructor does no I/O."""

    def __init__(self, uri: str, schema: pa.Schema, name: str | None = None) -> None:
        self.uri = uri
        self.schema = schema
        self.name = name or os.path.basename(uri.rstrip("/"))

    # -- table lifecycle (driver) -------------------------------------------------------
    def create(self) -> None:
        from deltalake import DeltaTable

        os.makedirs(_local_path(self.uri), exist_ok=True)
        DeltaTable.create(self.uri, schema=self.schema, name=self.name, mode="error")

    def exists(self) -> bool:
        from deltalake import DeltaTable

        return DeltaTable.is_deltatable(self.uri)

    def _table(self):
        from deltalake import DeltaTable
        from deltalake.exceptions import TableNotFoundError

        try:
            return DeltaTable(self.uri)
        except TableNotFoundError:
            raise SinkError(f"Delta table '{self.name}' is missing at {self.uri}") from None

    def file_uris(self) -> list[str]:
        return self._table().file_uris()

    def version(self) -> int:
        return self._table().version()

    # -- executor side ------------------------------------------------------------------
    def write_file(self, table: pa.Table, prefix: str) -> AddFile:
        """Write ``table`` as one new Parquet file; return its add-action (not yet committed)."""
        if table.schema != self.schema:
            try:
                table = table.cast(self.schema)
            except (pa.ArrowInvalid, ValueError) as e:
                raise SchemaMismatchError(
                    f"decoded data does not fit table '{self.name}': {e}"
                ) from None
        rel = f"{prefix}-{uuid.uuid4().hex}.snappy.parquet"
        path = os.path.join(_local_path(self.uri), rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        pq.write_table(table, path, compression="snappy")
        st = os.stat(path)
        return AddFile(rel, st.st_size, int(st.st_mtime * 1000), table.num_rows, _stats(table))

    # -- driver side --------------------------------------------------------------------
    def commit(
        self,
        files: list[AddFile],
        *,
        app_id: str,
        batch_id: int,
        offsets: dict[str, Any],
        extra: dict[str, str] | None = None,
    ) -> bool:
        """Commit a batch atomically. Returns False if it was already committed (replay)."""
        from deltalake import CommitProperties, Transaction
        from deltalake.transaction import AddAction

        dt = self._table()
        done = dt.transaction_version(app_id)
        if done is not None and done >= batch_id:
            return False
        actions = [AddAction(f.path, f.size, {}, f.modification_time, True, f.stats) for f in files]
        meta = {
            META_PIPELINE: app_id,
            META_BATCH: str(batch_id),
            META_OFFSETS: json.dumps(offsets, sort_keys=True),
            **(extra or {}),
        }
        props = CommitProperties(
            app_transactions=[Transaction(app_id, batch_id, int(time.time() * 1000))],
            custom_metadata=meta,
        )
        try:
            dt.create_write_transaction(actions, "append", self.schema, commit_properties=props)
        except Exception as e:
            raise SinkError(f"commit to Delta table '{self.name}' failed: {e}") from None
        return True

    def merge(
        self,
        staged_dir: str,
        files: list[AddFile],
        *,
        keys: list[str],
        mode: str,
        app_id: str,
        batch_id: int,
        offsets: dict[str, Any],
        extra: dict[str, str] | None = None,
    ) -> bool:
        """Upsert a batch by primary key in one commit with its app transaction.

        ``mode`` is ``replace`` (a row replaces the row with its key) or ``ignore`` (a row
        whose key exists is skipped). Within the batch the last (replace) or first
        (ignore) row of a key wins, in partition and offset order. Returns False if the
        batch was already committed.
        """
        from deltalake import CommitProperties, Transaction

        dt = self._table()
        done = dt.transaction_version(app_id)
        if done is not None and done >= batch_id:
            return False
        tables = [pq.read_table(os.path.join(_local_path(staged_dir), f.path)) for f in files]
        source = pa.concat_tables(tables).cast(self.schema) if tables else self.schema.empty_table()
        source = _dedupe(source, keys, keep_last=mode == "replace")
        props = CommitProperties(
            app_transactions=[Transaction(app_id, batch_id, int(time.time() * 1000))],
            custom_metadata={
                META_PIPELINE: app_id,
                META_BATCH: str(batch_id),
                META_OFFSETS: json.dumps(offsets, sort_keys=True),
                **(extra or {}),
            },
        )
        predicate = " AND ".join(f"t.`{k}` = s.`{k}`" for k in keys)
        try:
            merger = dt.merge(
                source, predicate, source_alias="s", target_alias="t", commit_properties=props
            )
            if mode == "replace":
                merger = merger.when_matched_update_all()
            merger.when_not_matched_insert_all().execute()
        except Exception as e:
            raise SinkError(f"upsert into Delta table '{self.name}' failed: {e}") from None
        return True

    def commit_files(self, files: list[AddFile], *, operation: str = "WRITE") -> None:
        """Append files in one commit, without an app transaction (INSERT)."""
        from deltalake import CommitProperties
        from deltalake.transaction import AddAction

        actions = [AddAction(f.path, f.size, {}, f.modification_time, True, f.stats) for f in files]
        try:
            self._table().create_write_transaction(
                actions,
                "append",
                self.schema,
                commit_properties=CommitProperties(custom_metadata={"sparkpipes.op": operation}),
            )
        except Exception as e:
            raise SinkError(f"commit to Delta table '{self.name}' failed: {e}") from None

    def committed(self, app_id: str, hint: Committed | None = None) -> Committed | None:
        """The last batch ``app_id`` committed to this table, with its end offsets.

        ``hint`` (the catalog's record) is trusted only if it names the same batch the
        table's app transaction does; otherwise the commit log is searched newest first.
        """
        dt = self._table()
        version = dt.transaction_version(app_id)
        if version is None:
            return None
        if hint is not None and hint.batch_id == version:
            return hint
        for info in dt.history():
            if info.get(META_PIPELINE) == app_id and info.get(META_BATCH) == str(version):
                return Committed(version, json.loads(info[META_OFFSETS]))
        raise SinkError(
            f"Delta table '{self.name}' records batch {version} of {app_id} but its commit "
            "info is gone (log cleaned up?)"
        )
