"""A canary secret given as CREDENTIALS (and by mistake in CONFIG), or as the password
inside a URL (a schema registry's, a Kafka location, an S3 endpoint), appears nowhere: not
in any file under the warehouse (the catalog's raw bytes included), the shell history,
the output of any command, the HTTP API or the server's log. Files are owner-only."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import requests

from sparkpipes.testing.registry import Registry, encode
from tests.e2e.serving import serve, wait
from tests.e2e.test_shell import Tty

CANARY = "canary-7Qx9-zz-secret"
URL_CANARY = "canary-Url-3k8-pw"
ORDER = {
    "type": "record",
    "name": "order",
    "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"}],
}


def test_a_canary_secret_is_nowhere_at_rest_or_in_output(tmp_path, broker, topic):
    wh, home = tmp_path / "wh", tmp_path / "home"
    home.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),
        "SPARKPIPES_SPARK_MASTER": "local[1]",
        "SPARKPIPES_LOG_LEVEL": "DEBUG",
        "TERM": "dumb",
    }
    env.pop("SPARKPIPES_SECRET_KEY", None)  # the warehouse's own key file

    def cli(*args: str) -> str:
        p = subprocess.run(
            [sys.executable, "-m", "sparkpipes", "--warehouse", str(wh), *args],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
        )
        return p.stdout + p.stderr

    create = (
        f"CREATE PIPELINE p AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}' "
        f'CREDENTIALS \'{{"sasl.username": "u", "sasl.password": "{CANARY}"}}\' '
        "INTO TABLE t"
    )
    seen = [
        cli("sql", "--echo", "-e", f"CREATE TABLE t (a BIGINT); {create}; SHOW CREATE PIPELINE p;"),
        cli("sql", "-e", "SELECT * FROM information_schema.PIPELINES; SHOW PIPELINES"),
        cli(  # an error echoes the statement it is about
            "sql",
            "--echo",
            "-e",
            create.replace("CREATE PIPELINE p", "CREATE PIPELINE bad").replace(
                "INTO", "CONFIG '{\"nope\": 1}' INTO"
            ),
        ),
        cli("status"),
    ]
    sh = Tty([sys.executable, "-m", "sparkpipes", "--warehouse", str(wh), "sql"], env)
    try:
        sh.expect("sparkpipes> ")
        sh.send(create.replace("PIPELINE p AS", "PIPELINE q AS\n") + ";")  # two lines
        sh.expect("Query OK")
        sh.expect("sparkpipes> ")  # Ctrl-D quits at an empty prompt
        os.write(sh.master, b"\x04")
        assert sh.proc.wait(60) == 0
    finally:
        if sh.proc.poll() is None:
            sh.proc.kill()
    # what the terminal shows after the statement the user typed (and saw) as they typed it
    seen.append(sh.out.decode(errors="replace").split("Query OK", 1)[1])
    assert "Query OK" in seen[0] and "<redacted>" in seen[0]
    assert "unknown or unsupported Kafka option 'nope'" in seen[2]

    files = [p for p in wh.rglob("*") if p.is_file()] + [home / ".sparkpipes_history"]
    assert (wh / "catalog.db") in files and (wh / "secret.key") in files
    for f in files:
        assert CANARY.encode() not in f.read_bytes(), f"the canary is in {f}"
    for text in seen:
        assert CANARY not in text
    history = (home / ".sparkpipes_history").read_text()
    assert "CREATE PIPELINE q" in history and "<redacted>" not in history and "****" in history
    for f in (wh / "catalog.db", wh / "secret.key", home / ".sparkpipes_history"):
        assert stat.S_IMODE(f.stat().st_mode) == 0o600, f
    assert stat.S_IMODE(wh.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(p.stat().st_mode) & 0o077 == 0 for p in Path(wh).rglob("*"))

    # the engine can still read the secret to connect with
    from sparkpipes.catalog import Catalog

    cat = Catalog(f"sqlite:///{wh / 'catalog.db'}")
    try:
        assert cat.pipelines.credentials("p")["sasl.password"] == CANARY
    finally:
        cat.close()


def test_a_password_inside_a_url_is_nowhere_but_sealed(tmp_path, broker, topic, s3_server):
    wh, home = tmp_path / "wh", tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "SPARKPIPES_LOG_LEVEL": "DEBUG", "TERM": "dumb"}
    seen: list[str] = []
    with Registry(user_info=f"ana:{URL_CANARY}") as reg:
        sid = reg.register(ORDER)
        broker.produce(topic, [encode(sid, ORDER, {"id": i, "name": f"n{i}"}) for i in range(30)])
        registry = f"http://ana:{URL_CANARY}@127.0.0.1:{reg.port}"
        with serve(wh, "/api/status") as server:
            url, http = server.url, server.http  # the owner's session (local token)

            def sql(text: str) -> requests.Response:
                return http.post(f"{url}/api/query", json={"sql": text})

            assert sql("CREATE TABLE orders (id BIGINT, name TEXT)").status_code == 200
            create = (
                f"CREATE PIPELINE av AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}' "
                f"INTO TABLE orders FORMAT AVRO SCHEMA REGISTRY '{registry}' "
                "(id <- id, name <- name)"
            )
            r = http.post(f"{url}/api/pipelines", json={"sql": create})
            assert r.status_code == 201, r.text
            # a password the client cannot take: refused, saying where the login goes
            for bad, says in (
                (
                    f"CREATE PIPELINE k AS LOAD DATA KAFKA 'svc:{URL_CANARY}@{broker.bootstrap}/"
                    f"{topic}' INTO TABLE orders",
                    "give them as CREDENTIALS",
                ),
                (
                    "CREATE PIPELINE s AS LOAD DATA S3 'b/x' CONFIG "
                    f'\'{{"endpoint_url": "http://ak:{URL_CANARY}@127.0.0.1:{s3_server.port}"}}\' '
                    "INTO TABLE orders",
                    "aws_secret_access_key",
                ),
            ):
                r = http.post(f"{url}/api/pipelines", json={"sql": bad})
                assert r.status_code == 400 and says in r.text and "<redacted>" in r.text, r.text
                seen.append(r.text)
            assert http.post(f"{url}/api/pipelines/av/start").json()["state"] == "Running"
            wait(lambda: http.get(f"{url}/api/tables/orders").json()["rows"] == 30, 180, "rows")
            assert reg.refused == 0  # every schema fetch logged in with the sealed password
            for path in ("/api/pipelines", "/api/pipelines/av", "/api/pipelines/av/errors"):
                seen.append(http.get(f"{url}{path}").text)
            shown = sql("SHOW CREATE PIPELINE av")
            assert f"http://ana:<redacted>@127.0.0.1:{reg.port}" in shown.text
            seen += [shown.text, sql("SELECT * FROM information_schema.PIPELINES").text]
            # the CLI (whose errors echo the statement) masks the password it was given
            cli = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "sparkpipes",
                    "--warehouse",
                    str(wh),
                    "sql",
                    "--echo",
                    "-e",
                    create.replace("PIPELINE av", "PIPELINE av2").replace(
                        "INTO", "BATCH_INTERVAL -1 INTO"
                    ),
                ],
                capture_output=True,
                text=True,
                timeout=300,
                env=env,
            )
            seen.append(cli.stdout + cli.stderr)
            assert "BATCH_INTERVAL must be at least 0" in seen[-1], seen[-1]
            assert "http://ana:*****" in seen[-1], seen[-1]  # the statement echoed, masked
            http.post(f"{url}/api/pipelines/av/stop")
        seen.append(server.output)  # the server's own log
    assert "Traceback" not in server.output
    for text in seen:
        assert URL_CANARY not in text, text
    for f in (p for p in wh.rglob("*") if p.is_file()):
        assert URL_CANARY.encode() not in f.read_bytes(), f"the canary is in {f}"
    from sparkpipes.catalog import Catalog

    cat = Catalog(f"sqlite:///{wh / 'catalog.db'}")
    try:  # sealed with the pipeline's credentials, for the client to log in with
        assert cat.pipelines.credentials("av") == {"format.url:schema.registry.url": URL_CANARY}
    finally:
        cat.close()
