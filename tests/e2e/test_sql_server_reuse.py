"""`sparkpipes sql` as a user types it, next to a running `sparkpipes serve`: the statements
run on the server (found by its discovery file, signed in with its local token) and print
exactly what a local run prints; a stale discovery file is ignored and removed; with users,
the local token still works and a wrong token is refused; the token never shows. And
catalog statements run locally start no JVM at all."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
import requests

from sparkpipes.cli.remote import discovery_path
from tests.e2e.serving import free_port, serve, wait

PASSWORD = "Ana-pw-4410"
NO_SERVER = {"SPARKPIPES_NO_SERVER": "1"}

SCRIPT = """CREATE TABLE t (a INT, b TEXT, c DECIMAL(10,2), d DATE, e DATETIME, f BLOB,
  g DOUBLE, h BOOL, i ARRAY<INT>, PRIMARY KEY (a));
INSERT INTO t VALUES (1, 'x\ny', 1.50, '2024-01-02', '2024-01-02 03:04:05.123456', 'bin', 0.1,
  true, array(1, 2)), (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
SELECT * FROM t ORDER BY a;
SELECT count(*) AS n, sum(c) AS total FROM t;
SHOW TABLES;
DESCRIBE t;
SHOW CREATE TABLE t;
SELECT a,
  nope FROM t;
"""


def sql(wh, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sparkpipes", "--warehouse", str(wh), "sql", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "SPARKPIPES_SPARK_MASTER": "local[2]", **(env or {})},
    )


def untimed(text: str) -> str:
    return re.sub(r"\(\d+\.\d\d sec\)", "(t sec)", text)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One server for the module; discovery files in a private runtime directory."""
    tmp = tmp_path_factory.mktemp("reuse")
    runtime = tmp / "run"
    runtime.mkdir(mode=0o700)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_RUNTIME_DIR", str(runtime))
        mp.delenv("SPARKPIPES_NO_SERVER", raising=False)
        wh = tmp / "wh"
        with serve(wh, "/api/status") as s:
            path = discovery_path(str(wh), None)
            s.wh, s.path = wh, path
            with open(path) as f:
                s.token = json.load(f)["token"]
            yield s
        assert not os.path.exists(path), "a server that stops removes its discovery file"
        assert "stopped" in s.output and "Traceback" not in s.output
        assert s.token not in s.output


def served(s) -> int:
    """How many statements the server ran for ``POST /api/sql`` (asked with its token)."""
    bearer = {"Authorization": f"Bearer {s.token}"}
    return requests.get(f"{s.url}/api/status", headers=bearer, timeout=10).json()["sql_statements"]


def test_output_through_the_server_is_the_local_output(server):
    assert oct(os.stat(server.path).st_mode & 0o777) == "0o600"
    before = served(server)
    remote = sql(server.wh, "--echo", "-e", SCRIPT)
    assert remote.returncode == 1, remote.stderr
    assert served(server) == before + 7  # the server ran all but the failing one
    assert "| 1 | x\\ny | 1.50 | 2024-01-02 | 2024-01-02 03:04:05.123456 | bin  | 0.1" in (
        remote.stdout
    )
    assert "| 2 | NULL | NULL | NULL       | NULL" in remote.stdout
    assert (
        remote.stderr.startswith("error: [SP702] ")
        and "at line 11, column 1:\nSELECT a,\n^" in remote.stderr
    )
    parse = sql(server.wh, "-e", "SHOW TABLES;\nCREATE TABLE oops (a INT")
    assert parse.returncode == 1 and "at line 2" in parse.stderr, parse.stderr

    assert sql(server.wh, "-e", "DROP TABLE t").returncode == 0
    assert served(server) == before + 9  # SHOW TABLES before the parse error, DROP TABLE
    local = sql(server.wh, "--no-server", "--echo", "-e", SCRIPT)
    assert untimed(local.stdout) == untimed(remote.stdout)
    assert local.stderr == remote.stderr and local.returncode == remote.returncode
    local_parse = sql(server.wh, "-e", "SHOW TABLES;\nCREATE TABLE oops (a INT", env=NO_SERVER)
    assert (untimed(local_parse.stdout), local_parse.stderr) == (
        untimed(parse.stdout),
        parse.stderr,
    )
    assert served(server) == before + 9
    for out in (remote, local, parse):
        assert server.token not in out.stdout + out.stderr


def test_a_stale_discovery_file_is_ignored_and_removed(tmp_path, server):
    wh = tmp_path / "wh"
    path = discovery_path(str(wh), None)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    free = free_port()
    for pid in (gone.pid, os.getpid()):  # a dead process; a live one where nothing listens
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump({"pid": pid, "url": f"http://127.0.0.1:{free}", "token": "stale"}, f)
        out = sql(wh, "-e", "CREATE TABLE s (a INT); SHOW TABLES; DROP TABLE s")
        assert out.returncode == 0, out.stderr
        assert "| s                    |" in out.stdout and "Query OK" in out.stdout
        assert not os.path.exists(path)


def test_with_users_the_local_token_signs_in_and_a_wrong_one_is_refused(server):
    made = sql(server.wh, "-e", f"CREATE USER 'ana'@'%' IDENTIFIED BY '{PASSWORD}'")
    assert made.returncode == 0, made.stderr
    wait(lambda: requests.get(f"{server.url}/api/status").status_code == 401, 10, "sign-in")
    assert requests.get(f"{server.url}/api/status", auth=("ana", PASSWORD)).status_code == 200
    before = served(server)
    out = sql(server.wh, "-e", "SHOW USERS; SHOW PIPELINES")
    assert out.returncode == 0 and "| ana  |" in out.stdout, out.stderr
    assert served(server) == before + 2
    wrong = requests.post(
        f"{server.url}/api/sql",
        json={"sql": "SHOW USERS"},
        headers={"Authorization": "Bearer not-the-token"},
        timeout=10,
    )
    assert wrong.status_code == 401 and "not-the-token" not in wrong.text
    right = requests.post(
        f"{server.url}/api/sql",
        json={"sql": "SHOW USERS"},
        headers={"Authorization": f"Bearer {server.token}"},
        timeout=10,
    )
    assert right.status_code == 200 and json.loads(right.text.splitlines()[0])["rows"][0][0] == (
        "ana"
    )

    # a discovery file whose token the server refuses: the CLI runs the statements itself
    with open(server.path) as f:
        good = f.read()
    try:
        with open(server.path, "w") as f:
            f.write(good.replace(server.token, "forged-token"))
        forged = sql(server.wh, "-e", "SHOW USERS")
        assert forged.returncode == 0 and "| ana  |" in forged.stdout, forged.stderr
        assert served(server) == before + 3  # only the right token's request
    finally:
        with open(server.path, "w") as f:
            f.write(good)
    # ana, the first user, is the admin: the last admin cannot be dropped
    last = sql(server.wh, "-e", "DROP USER ana")
    assert last.returncode == 1 and "last admin" in last.stderr, last.stderr
    assert sql(server.wh, "-e", "SHOW GRANTS FOR ana").returncode == 0
    assert served(server) == before + 4


CATALOG_ONLY = """SET GLOBAL pipelines_batch_interval = 2000;
SHOW VARIABLES LIKE 'pipelines_batch_interval';
CREATE TABLE ev (id BIGINT NOT NULL, name VARCHAR(20), amount DECIMAL(12,3), at DATETIME,
  tags ARRAY<TEXT>, PRIMARY KEY (id), SHARD KEY (id));
SHOW TABLES;
DESCRIBE ev;
SHOW CREATE TABLE ev;
CREATE PIPELINE p AS LOAD DATA KAFKA '127.0.0.1:9/ev' SKIP SOURCE CHECK
  INTO TABLE ev FORMAT JSON (id <- id, name <- name);
SHOW PIPELINES;
SHOW CREATE PIPELINE p;
START PIPELINE p;
STOP PIPELINE p;
CREATE USER 'bo' IDENTIFIED BY 'Bo-pw-1';
CREATE USER 'cy' IDENTIFIED BY 'Cy-pw-1';
GRANT SELECT ON ev TO cy;
SHOW USERS;
SHOW GRANTS FOR cy;
DROP USER cy;
DROP PIPELINE p;
DROP TABLE ev;
SHOW TABLES;
"""


def test_catalog_statements_start_no_jvm(tmp_path):
    """With no Java to start, a statement that tried to start Spark would fail."""
    no_java = {**NO_SERVER, "JAVA_HOME": str(tmp_path / "no-java")}
    out = sql(tmp_path / "wh", "-e", CATALOG_ONLY, env=no_java)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.count("Query OK") == 11
    assert "| pipelines_batch_interval | 2000  |" in out.stdout
    assert "| Pipelines_in_sparkpipes | State   |\n" in out.stdout
    assert "| amount | DECIMAL(12,3) | YES  |" in out.stdout
    assert untimed(out.stdout).endswith("Empty set (t sec)\n")
    computed = sql(
        tmp_path / "wh", "-e", "CREATE TABLE c (a INT, b AS (a + 1) PERSISTED INT)", env=no_java
    )
    assert computed.returncode != 0 and "java" in computed.stderr.lower()
    assert "cannot start Spark" in computed.stderr and "Traceback" not in computed.stderr


def test_the_interactive_shell_runs_on_the_server(server, tmp_path):
    from tests.e2e.test_shell import Tty

    before = served(server)
    env = {**os.environ, "HOME": str(tmp_path), "TERM": "dumb"}
    sh = Tty([sys.executable, "-m", "sparkpipes", "--warehouse", str(server.wh), "sql"], env)
    try:
        sh.expect("sparkpipes> ")
        sh.send("SHOW")
        sh.expect("-> ")
        sh.send("  TABLES;")
        sh.expect("| Tables_in_sparkpipes |")
        sh.send("SELEC 1;")
        sh.expect("error: [SP700] syntax error at line 1, column 1")
        sh.send("SHOW PIPELINES;")
        sh.expect("Empty set")
        sh.expect("sparkpipes> ")  # Ctrl-D at a prompt (sent earlier, it may be read as input)
        os.write(sh.master, b"\x04")
        assert sh.proc.wait(timeout=30) == 0
    finally:
        if sh.proc.poll() is None:
            sh.proc.kill()
    assert served(server) == before + 2


STREAMED = """SELECT id, id % 7 AS m, concat('r', id) AS s FROM range(0, 25000, 1, 5);
SELECT id, 10 / (id - 22000) AS x FROM range(0, 25000, 1, 5);
"""


def ndjson(server, path: str, sql: str) -> tuple[int, list[dict]]:
    bearer = {"Authorization": f"Bearer {server.token}"}
    r = requests.post(
        f"{server.url}{path}", json={"sql": sql}, headers=bearer, stream=True, timeout=300
    )
    return r.status_code, [json.loads(line) for line in r.iter_lines() if line]


def test_a_big_result_streams_in_chunks_and_prints_as_a_local_run(server):
    status, lines = ndjson(server, "/api/sql", STREAMED)
    assert status == 200
    first, *rest = lines
    assert first["more"] is True and first["columns"] == ["id", "m", "s"], first
    chunks = []
    while "end" not in rest[0]:
        chunks.append(rest.pop(0)["rows"])
    assert rest.pop(0) == {"end": {"rows": 25000}}
    assert len(chunks) >= 25 and all(len(c) <= 1000 for c in chunks)  # as Spark gives them
    assert chunks[0][0] == ["0", "0", "r0"] and chunks[-1][-1] == ["24999", "2", "r24999"]
    second, *rest = rest
    assert second["more"] is True and second["columns"] == ["id", "x"]
    error = rest.pop()["error"]  # the failure midway through the rows ends the stream
    assert rest and all(list(line) == ["rows"] for line in rest), rest[:1]
    assert error["code"] == "SP702" and "[DIVIDE_BY_ZERO]" in error["message"]
    assert "at line 2, column 1" in error["text"]

    remote = sql(server.wh, "--echo", "-e", STREAMED)
    local = sql(server.wh, "--no-server", "--echo", "-e", STREAMED)
    assert remote.returncode == local.returncode == 1
    assert "25000 rows in set" in remote.stdout
    assert untimed(remote.stdout) == untimed(local.stdout)
    assert remote.stderr.startswith("error: [SP702] [DIVIDE_BY_ZERO]"), remote.stderr
    assert local.stderr.endswith(remote.stderr)  # a local run has Spark's own log above it


def test_a_query_stream_that_fails_midway_ends_with_the_error(server):
    failing = {
        "[DIVIDE_BY_ZERO]": "SELECT id, 10 / (id - 22000) AS x FROM range(0, 25000, 1, 5)",
        "[USER_RAISED_EXCEPTION] stop at 22000": "SELECT id, CASE WHEN id = 22000 THEN "
        "raise_error('stop at 22000') END AS x FROM range(0, 25000, 1, 5)",
    }
    for message, query in failing.items():
        status, lines = ndjson(server, "/api/query/stream", query)
        assert status == 200 and lines[0] == {"columns": ["id", "x"]}
        rows, last = lines[1:-1], lines[-1]
        assert rows and all(isinstance(r, list) for r in rows)  # rows came first
        assert set(last) == {"error"} and last["error"]["code"] == "SP702"
        assert message in last["error"]["message"] and "Py4J" not in last["error"]["message"]
