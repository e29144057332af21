"""Where a Delta table's log is, and what it says without loading the table.

The sink and maintenance read a few facts straight from ``_delta_log`` (a commit file is
there, the version of the last checkpoint) where loading the table with delta-rs would
replay its log; local paths and ``file://`` as well as object stores (``pyarrow.fs``). And
a loaded table's checkpoint interval.
"""

from __future__ import annotations

import json
from typing import Any

from sparkpipes.sinks.delta.checkpoints import DEFAULT_INTERVAL


def log_dir(uri: str) -> tuple[Any, str]:
    """The file system of a table's location and the path of its ``_delta_log``."""
    from pyarrow import fs

    if "://" in uri and not uri.startswith("file://"):
        filesystem, root = fs.FileSystem.from_uri(uri)
    else:
        filesystem, root = fs.LocalFileSystem(), uri.removeprefix("file://")
    return filesystem, f"{root.rstrip('/')}/_delta_log"


def exists(filesystem: Any, path: str) -> bool:
    from pyarrow import fs

    return filesystem.get_file_info(path).type != fs.FileType.NotFound


def last_checkpoint(location: str) -> int | None:
    """The version of the table's last Delta checkpoint (``_last_checkpoint``), or None."""
    try:
        filesystem, logs = log_dir(location)
        with filesystem.open_input_stream(f"{logs}/_last_checkpoint") as f:
            return int(json.loads(f.read())["version"])
    except (OSError, ValueError, KeyError):
        return None


def checkpoint_interval(dt: Any) -> int:
    """The table's ``delta.checkpointInterval``."""
    try:
        return int(dt.metadata().configuration.get("delta.checkpointInterval", DEFAULT_INTERVAL))
    except (TypeError, ValueError):
        return DEFAULT_INTERVAL
