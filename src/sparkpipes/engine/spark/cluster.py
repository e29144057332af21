"""A Spark standalone cluster on this machine, from the pyspark wheel's own launcher
(``pyspark/bin/spark-class``): one master and N workers on 127.0.0.1, for trying the
cluster path (``--master spark://127.0.0.1:7077``) without a Spark installation.

``start`` returns once every worker has registered with the master; the processes, their
logs and a ``cluster.json`` (master URL, pids) live in ``directory``. ``stop`` ends them.
Workers run their executors' Python with the driver's interpreter (``spark.pyspark.python``
from the engine), and the engine ships the sparkpipes package itself to every executor
(``ship_package``), so nothing is installed on a worker by hand; the interpreter must
have sparkpipes' dependencies (pyarrow, deltalake, confluent-kafka …), as it does on this
machine. Object-store credentials reach executors through the workers' environment
(``AWS_*``, inherited from the process that starts the cluster), never through Spark's
configuration.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import tempfile
import time
import zipfile
from pathlib import Path

from sparkpipes.errors import ConfigError, EngineError

MASTER = "org.apache.spark.deploy.master.Master"
WORKER = "org.apache.spark.deploy.worker.Worker"


def spark_class() -> str:
    import pyspark

    return os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-class")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spawn(args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen:
    with open(log, "ab") as out:
        return subprocess.Popen(
            [spark_class(), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # not killed with the shell that started it
        )


def _wait_for(log: Path, text: str, proc: subprocess.Popen, timeout_s: float) -> None:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if log.exists() and text in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    tail = log.read_text(errors="replace")[-1500:] if log.exists() else "(no log)"
    raise EngineError(f"the Spark {log.stem} did not start (log {log}):\n{tail}")


def start(
    directory: str | os.PathLike[str],
    *,
    workers: int = 2,
    cores: int = 1,
    memory: str = "1g",
    port: int = 7077,
    timeout_s: float = 120.0,
) -> str:
    """Start a master and ``workers`` workers; the master URL."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    if (d / "cluster.json").exists() and status(d)["alive"]:
        raise ConfigError(f"a cluster from {d} is running; stop it first (sparkpipes cluster stop)")
    env = {**os.environ, "SPARK_NO_DAEMONIZE": "1", "SPARK_LOG_DIR": str(d)}
    url = f"spark://127.0.0.1:{port}"
    master_log = d / "master.log"
    master = _spawn(
        [MASTER, "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(_free_port())],
        master_log,
        env,
    )
    procs = {"master": master.pid}
    try:
        _wait_for(master_log, "I have been elected leader", master, timeout_s)
        started = []
        for i in range(workers):
            work = d / f"worker-{i}"
            work.mkdir(exist_ok=True)
            log = d / f"worker-{i}.log"
            args = [WORKER, "--host", "127.0.0.1", "--cores", str(cores), "--memory", memory]
            args += ["--work-dir", str(work), "--webui-port", str(_free_port()), url]
            p = _spawn(args, log, env)
            procs[f"worker-{i}"] = p.pid
            started.append((log, p))
        for log, p in started:
            _wait_for(log, "Successfully registered with master", p, timeout_s)
    except EngineError:
        _kill(procs)
        raise
    (d / "cluster.json").write_text(json.dumps({"master": url, "pids": procs}))
    return url


def status(directory: str | os.PathLike[str]) -> dict:
    """The cluster started from ``directory``: master URL and which processes are alive."""
    path = Path(directory) / "cluster.json"
    if not path.exists():
        return {"master": None, "pids": {}, "alive": []}
    info = json.loads(path.read_text())
    alive = [name for name, pid in info["pids"].items() if _alive(pid)]
    return {**info, "alive": alive}


def stop(directory: str | os.PathLike[str]) -> list[str]:
    """Stop what ``start`` started from ``directory``; the processes stopped."""
    info = status(directory)
    _kill(info["pids"])
    (Path(directory) / "cluster.json").unlink(missing_ok=True)
    return info["alive"]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:  # a zombie (exited, not reaped) is not alive
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return True


def _kill(pids: dict[str, int]) -> None:
    for pid in pids.values():
        try:
            os.killpg(pid, signal.SIGTERM)
        except OSError:
            pass
    deadline = time.time() + 15
    while time.time() < deadline and any(_alive(p) for p in pids.values()):
        time.sleep(0.2)
    for pid in pids.values():
        if _alive(pid):
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass


def ship_package(spark: object) -> str:
    """Zip the sparkpipes package (its Python files, and the Kafka reader's C helper) and
    add it to every executor's ``sys.path`` ahead of anything installed there; the zip's
    path."""
    import sparkpipes
    from sparkpipes.sources import kafka_native

    root = Path(sparkpipes.__file__).parent
    files = {
        str(p.relative_to(root)): p for p in root.rglob("*.py") if "__pycache__" not in p.parts
    }
    helper = kafka_native.helper_file()
    if helper is not None:  # a zip cannot hold an importable extension: loaded by path
        files[kafka_native.SHIPPED_HELPER] = Path(helper)
    digest = hashlib.sha256()
    for name, p in sorted(files.items()):
        digest.update(name.encode())
        digest.update(p.read_bytes())
    out = Path(tempfile.gettempdir()) / f"sparkpipes-{digest.hexdigest()[:16]}.zip"
    if not out.exists():
        tmp = out.with_suffix(f".{os.getpid()}.tmp")
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
            for name, p in sorted(files.items()):
                z.write(p, Path("sparkpipes") / name)
        os.replace(tmp, out)
    spark.sparkContext.addPyFile(str(out))  # type: ignore[attr-defined]
    return str(out)
