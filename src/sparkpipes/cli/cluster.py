"""``sparkpipes cluster start|stop|status``: a Spark standalone cluster on 127.0.0.1 from
the pyspark wheel's launcher (``engine.cluster``), for ``--master spark://127.0.0.1:7077``."""

from __future__ import annotations

import argparse
import os
from typing import Any

DEFAULT_DIR = os.path.join(os.path.expanduser("~"), ".sparkpipes", "cluster")


def add_parser(sub: Any) -> None:
    c = sub.add_parser(
        "cluster",
        help="a local Spark standalone cluster: start, stop, status",
        description="Start a Spark standalone master and workers on 127.0.0.1 from the "
        "pyspark wheel (no Spark installation needed), then run any sparkpipes command with "
        "--master spark://127.0.0.1:7077 (or $SPARKPIPES_SPARK_MASTER). The engine ships "
        "the sparkpipes package to the executors itself.",
    )
    c.add_argument("action", choices=("start", "stop", "status"), metavar="ACTION")
    c.add_argument("--workers", type=int, default=2, help="workers (2)")
    c.add_argument("--cores", type=int, default=1, help="cores per worker (1)")
    c.add_argument("--memory", default="1g", help="memory per worker (1g)")
    c.add_argument("--port", type=int, default=7077, help="the master's port (7077)")
    c.add_argument("--dir", default=DEFAULT_DIR, help=f"state and logs ({DEFAULT_DIR})")


def run(args: argparse.Namespace) -> int:
    from sparkpipes.engine.spark import cluster

    if args.action == "start":
        url = cluster.start(
            args.dir, workers=args.workers, cores=args.cores, memory=args.memory, port=args.port
        )
        print(f"{url} ({args.workers} workers x {args.cores} core; logs in {args.dir})")
    elif args.action == "stop":
        stopped = cluster.stop(args.dir)
        print(f"stopped: {', '.join(stopped) or 'nothing was running'}")
    else:
        info = cluster.status(args.dir)
        if not info["master"]:
            print("no cluster started from " + args.dir)
            return 1
        print(f"{info['master']}: alive {', '.join(info['alive']) or 'none'}")
    return 0
