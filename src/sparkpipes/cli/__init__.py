"""The ``sparkpipes`` command. User errors print one clear line, never a traceback.

    sparkpipes sql [-e SQL | -f FILE]   statements; interactive shell without -e/-f
    sparkpipes run                      run every Running pipeline until SIGTERM / Ctrl-C
    sparkpipes status                   pipelines, state, rows/s, lag, share of the cluster,
                                        last error
    sparkpipes quickstart               the guided demo
    sparkpipes serve                    HTTP: Kafka Connect's and Pinot's controller APIs
    sparkpipes token                    the local token of the server of this warehouse
    sparkpipes connect …                sink connectors (Kafka Connect configs)
    sparkpipes user add|passwd|drop|list  users who sign in to serve (HTTP, console, MySQL)
    sparkpipes cluster start|stop|status  a Spark standalone cluster on 127.0.0.1

``--master`` ($SPARKPIPES_SPARK_MASTER) runs the same pipelines on a Spark cluster.
    sparkpipes AddTable -schemaFile S -tableConfigFile T [-exec]
                                        a Pinot realtime table (pinot-admin's spelling)
    sparkpipes pinot …                  Pinot schemas and tables: list, show, add, delete

``--warehouse`` ($SPARKPIPES_WAREHOUSE) and ``--catalog-url`` ($SPARKPIPES_CATALOG_URL)
choose the warehouse everywhere.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading

from sparkpipes.errors import SparkpipesError


def _common(top: bool) -> argparse.ArgumentParser:
    """--warehouse / --catalog-url, accepted before or after the command."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--warehouse",
        default=os.environ.get("SPARKPIPES_WAREHOUSE", "./warehouse") if top else argparse.SUPPRESS,
        help="warehouse directory: Delta tables and the default SQLite catalog "
        "(env SPARKPIPES_WAREHOUSE; default ./warehouse)",
    )
    common.add_argument(
        "--master",
        default=os.environ.get("SPARKPIPES_SPARK_MASTER") if top else argparse.SUPPRESS,
        help="Spark master, e.g. spark://127.0.0.1:7077 (env SPARKPIPES_SPARK_MASTER; "
        "default local[*])",
    )
    common.add_argument(
        "--catalog-url",
        default=os.environ.get("SPARKPIPES_CATALOG_URL") if top else argparse.SUPPRESS,
        help="SQLAlchemy URL of the catalog, e.g. postgresql+psycopg2://user@host/db "
        "(env SPARKPIPES_CATALOG_URL; default SQLite in the warehouse)",
    )
    return common


def _parser() -> argparse.ArgumentParser:
    common = _common(top=False)
    p = argparse.ArgumentParser(
        prog="sparkpipes",
        description="Exactly-once streaming ingestion into Delta tables on Apache Spark.",
        parents=[_common(top=True)],
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    s = sub.add_parser(
        "sql",
        parents=[common],
        help="run SQL statements, or an interactive shell",
        description="Run SQL in the SingleStore pipeline dialect against the warehouse. "
        "Without -e or -f: an interactive shell (statements end with ';') when standard "
        "input is a terminal, else the script read from standard input. Exit code 1 on the "
        "first error. When `sparkpipes serve` runs on the same warehouse and catalog, the "
        "statements run there (no Spark start here), with the same output.",
    )
    s.add_argument("-e", "--execute", metavar="SQL", help="statements to run")
    s.add_argument("-f", "--file", metavar="FILE", help="a file of statements to run")
    s.add_argument("--echo", action="store_true", help="print each statement before its result")
    s.add_argument(
        "--no-server",
        action="store_true",
        default=os.environ.get("SPARKPIPES_NO_SERVER", "") not in ("", "0"),
        help="run the statements in this process even when `sparkpipes serve` serves the "
        "warehouse (env SPARKPIPES_NO_SERVER=1); by default they run on that server",
    )
    sub.add_parser(
        "run",
        parents=[common],
        help="run every Running pipeline until stopped",
        description="The long-running engine: runs the batches of every pipeline in state "
        "Running (START PIPELINE sets it) until SIGTERM or Ctrl-C; the batch in flight "
        "finishes first, so nothing is lost or loaded twice.",
    )
    sub.add_parser(
        "status",
        parents=[common],
        help="pipelines at a glance",
        description="Each pipeline's state, table, rows/s of recent batches, lag and last error.",
    )
    sv = sub.add_parser(
        "serve",
        parents=[common],
        help="the HTTP server: Kafka Connect's and Pinot's controller REST APIs, and run "
        "every Running pipeline",
        description="Serve Kafka Connect's REST API for sink connectors (GET/POST /connectors, "
        "…/config, …/status, …/pause, …/resume, DELETE, /connector-plugins) and Pinot's "
        "controller endpoints (POST/GET /schemas, POST/GET/DELETE /tables) on 127.0.0.1, "
        "and run the batches of every Running pipeline as `sparkpipes run` does.",
    )
    sv.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    sv.add_argument("--port", type=int, default=8083, help="port (8083, Kafka Connect's)")
    sv.add_argument(
        "--mysql-port",
        type=int,
        metavar="PORT",
        help="also speak the MySQL protocol on this port (e.g. 3307): any MySQL client runs "
        "sparkpipes statements",
    )
    sv.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME[:PORT]",
        help="also answer requests whose Host header is NAME (e.g. the name of a proxy in "
        "front); repeatable. By default only the names the server listens on are answered",
    )
    sv.add_argument(
        "--tls-cert",
        metavar="FILE",
        help="serve HTTPS, and TLS on the MySQL endpoint, with this PEM certificate (its "
        "chain may follow it); with --tls-key",
    )
    sv.add_argument("--tls-key", metavar="FILE", help="the certificate's PEM private key")
    sv.add_argument(
        "--header-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="time an HTTP client has to send a request's line and headers, and the longest "
        "pause within its body (10)",
    )
    sv.add_argument(
        "--keep-alive-timeout",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="an idle HTTP connection is closed after this long between requests (5)",
    )
    sv.add_argument(
        "--mysql-connect-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="time a MySQL client has to sign in after connecting (MySQL's connect_timeout, 10)",
    )
    sv.add_argument(
        "--mysql-wait-timeout",
        type=int,
        default=28_800,
        metavar="SECONDS",
        help="an idle signed-in MySQL connection is closed after this long (MySQL's "
        "wait_timeout, 28800; a client may SET wait_timeout for its session)",
    )
    sub.add_parser(
        "token",
        parents=[common],
        help="print the local token of the server serving this warehouse",
        description="Print the local token of the `sparkpipes serve` running on this "
        "warehouse and catalog, read from the discovery file only this account can read: "
        'curl -H "Authorization: Bearer $(sparkpipes token)" http://127.0.0.1:8083/api/status. '
        "Over MySQL, it is the password while the catalog has no user.",
    )
    from sparkpipes.cli import cluster, connect, pinot, users

    cluster.add_parser(sub)
    connect.add_parser(sub, common)
    users.add_parser(sub, common)
    pinot.add_parsers(sub, common)
    q = sub.add_parser(
        "quickstart",
        parents=[common],
        help="the guided demo: broker, data generator, pipeline, query",
        description="Start the embedded Kafka broker, generate events shaped like Pinot's "
        "datagen to topic 'events', create the table and pipeline with SQL, show live "
        "progress (rows ingested, lag) and run a sample query. The warehouse is left "
        "behind for `sparkpipes sql`.",
    )
    q.add_argument("--events", type=int, default=100_000, help="events to generate (100000)")
    q.add_argument("--rate", type=int, default=50_000, help="events per second (50000)")
    return p


def _engine(args):
    from sparkpipes import Engine

    return Engine(args.warehouse, catalog_url=args.catalog_url, spark_master=args.master)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    os.umask(0o077)  # the warehouse, its tables and the catalog: owner-only
    logging.basicConfig(
        level=os.environ.get("SPARKPIPES_LOG_LEVEL", "WARNING"),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        if args.command == "quickstart":
            from sparkpipes.cli.quickstart import run

            return run(args)
        if args.command == "sql":
            return _sql(args)
        if args.command == "run":
            return _run(args)
        if args.command == "status":
            return _status(args)
        if args.command == "serve":
            return _serve(args)
        if args.command == "token":
            return _token(args)
        if args.command == "connect":
            from sparkpipes.cli import connect

            return connect.main(_engine, args)
        if args.command == "cluster":
            from sparkpipes.cli import cluster

            return cluster.run(args)
        if args.command == "user":
            from sparkpipes.cli import users

            with _engine(args) as engine:
                return users.run(engine, args)
        if args.command == "AddTable":
            from sparkpipes.cli import pinot

            return pinot.add_table(_engine, args)
        if args.command == "pinot":
            from sparkpipes.cli import pinot

            with _engine(args) as engine:
                return pinot.run(engine, args)
    except SparkpipesError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 2


def _sql(args) -> int:
    if args.file:
        try:
            with open(args.file, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            print(f"error: cannot read {args.file}: {e.strerror}", file=sys.stderr)
            return 1
    elif args.execute is not None:
        text = args.execute
    elif not sys.stdin.isatty():
        text = sys.stdin.read()
    else:
        text = None
    if not args.no_server:
        done = _on_server(args, text)
        if done is not None:
            return done
    from sparkpipes.cli import shell
    from sparkpipes.frontends.singlestore.executor import SqlSession

    with _engine(args) as eng:
        progress = shell.progress_line if sys.stderr.isatty() else None
        if text is None:
            return shell.interactive(SqlSession(eng, background=True, progress=progress))
        return shell.run_script(SqlSession(eng, progress=progress), text, echo=args.echo)


def _on_server(args, text: str | None) -> int | None:
    """Run on the server advertised for the warehouse (``cli.remote``); None when there is
    none or it did not take the statements: then they run here."""
    from sparkpipes.cli import remote

    server = remote.find(args.warehouse, args.catalog_url)
    if server is None:
        return None
    if text is None:
        from sparkpipes.cli import shell

        return shell.interactive(server)
    try:
        return server.script(text, echo=args.echo)
    except remote.Unreachable as e:
        logging.getLogger("sparkpipes.cli").info("running here: %s", e.message)
        return None


def _run(args) -> int:
    from sparkpipes.catalog.states import PipelineState

    halt = threading.Event()

    def on_signal(signum, frame):
        print(f"\n{signal.Signals(signum).name}: finishing the batch in flight …", file=sys.stderr)
        halt.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    logging.getLogger("sparkpipes").setLevel(logging.INFO)
    with _engine(args) as eng:
        running = [p.name for p in eng.pipelines() if p.state == PipelineState.RUNNING]
        print(
            f"sparkpipes run: warehouse {eng.warehouse}; running: "
            f"{', '.join(running) or 'none yet (START PIPELINE p in `sparkpipes sql`)'}",
            file=sys.stderr,
            flush=True,
        )
        eng.warm_up()  # start Spark and its workers before the first batch is due
        print(f"sparkpipes run: engine {eng.engine_id} ready", file=sys.stderr, flush=True)
        eng.run_forever(halt)
    print("stopped", file=sys.stderr)
    return 0


def _serve(args) -> int:
    from sparkpipes.cli import remote
    from sparkpipes.engine.sql import jobs
    from sparkpipes.server import create_app
    from sparkpipes.server.mysql_wire import MysqlLimits
    from sparkpipes.server.security import Hosts, is_loopback
    from sparkpipes.server.throttle import Throttle
    from sparkpipes.server.transport import HttpLimits, load_tls

    loopback = is_loopback(args.host)
    try:
        hosts = Hosts.of(args.host, args.allow_host)
        http_limits = HttpLimits(args.header_timeout, args.keep_alive_timeout)
        mysql_limits = MysqlLimits(args.mysql_connect_timeout, args.mysql_wait_timeout)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if (args.tls_cert is None) != (args.tls_key is None):
        print("error: --tls-cert and --tls-key go together", file=sys.stderr)
        return 2
    tls = load_tls(args.tls_cert, args.tls_key) if args.tls_cert else None
    halt = threading.Event()
    logging.getLogger("sparkpipes").setLevel(logging.INFO)
    with _engine(args) as eng:
        owner_only = eng.catalog.users.count() == 0
        if not loopback and owner_only:
            print(
                f"error: sparkpipes serve listens beyond loopback ({args.host}) only when the "
                "catalog has a user to ask for: add one with `sparkpipes user add NAME` "
                "(or CREATE USER), or serve on 127.0.0.1",
                file=sys.stderr,
            )
            return 1
        if not loopback and tls is None:
            print(
                f"warning: sparkpipes serve listens beyond loopback ({args.host}) without TLS: "
                "passwords (HTTP Basic, the sign-in page, POST /api/login) and results cross "
                "the network in clear. Give --tls-cert and --tls-key, or put a TLS proxy in front",
                file=sys.stderr,
                flush=True,
            )
        runner = threading.Thread(target=eng.run_forever, args=(halt,), daemon=True)
        runner.start()
        throttle = Throttle()  # failed sign-ins, over HTTP and MySQL alike
        try:
            with remote.advertise(args.warehouse, args.catalog_url) as advert:
                where = f"{'https' if tls else 'http'}://{args.host}:{args.port}"
                if args.mysql_port:
                    _serve_mysql(eng, args, loopback, advert.token, throttle, mysql_limits, tls)
                    where += f" and mysql://{args.host}:{args.mysql_port}"
                    where += " (TLS)" if tls else ""
                print(
                    f"sparkpipes serve: {where} (warehouse {eng.warehouse})",
                    file=sys.stderr,
                    flush=True,
                )
                app = create_app(
                    eng, loopback=loopback, local_token=advert.token, hosts=hosts, throttle=throttle
                )
                greet = _greet(app) if owner_only else None
                _listen(app, args.host, args.port, advert, greet, http_limits, tls)
        finally:
            jobs.stop_all()
            halt.set()
            runner.join()
    print("stopped", file=sys.stderr)
    return 0


def _serve_mysql(eng, args, loopback: bool, token: str, throttle, limits, tls) -> None:
    """The MySQL endpoint on its own thread and event loop, until the process ends."""
    import asyncio

    from sparkpipes.server.mysql import serve_mysql

    async def mysql() -> None:
        try:
            await serve_mysql(
                eng,
                args.host,
                args.mysql_port,
                loopback=loopback,
                local_token=token,
                throttle=throttle,
                limits=limits,
                tls=tls.context() if tls else None,
            )
        except OSError as e:
            print(
                f"error: the MySQL endpoint cannot listen on {args.host}:{args.mysql_port}: "
                f"{e.strerror}",
                file=sys.stderr,
                flush=True,
            )
            return
        await asyncio.get_running_loop().create_future()

    threading.Thread(target=asyncio.run, args=(mysql(),), daemon=True).start()


def _greet(app):
    """What ``serve`` says once it listens while the catalog has no user: the one-time
    link that signs its owner in from a browser, and how API clients sign in."""

    def greet(url: str) -> None:
        code = app.state.signin.owner_link()
        print(
            "sparkpipes serve: no users yet, so only this account may use it. Sign in from a "
            f"browser (this link works once, for 10 minutes): {url}/login?code={code} ; "
            'API clients: -H "Authorization: Bearer $(sparkpipes token)"',
            file=sys.stderr,
            flush=True,
        )

    return greet


def _token(args) -> int:
    from sparkpipes.cli import remote

    token = remote.local_token(args.warehouse, args.catalog_url)
    if token is None:
        print(
            f"error: no sparkpipes serve is running for the warehouse {args.warehouse} "
            "(start one with `sparkpipes serve`, with the same --warehouse and --catalog-url)",
            file=sys.stderr,
        )
        return 1
    print(token)
    return 0


def _listen(app, host: str, port: int, advert, greet, limits, tls) -> None:
    """Serve ``app`` until SIGTERM / Ctrl-C (``server.transport``: its timeouts, HTTPS with
    ``tls``); once it listens, tell ``sparkpipes sql`` where (and ``greet(url)``)."""
    import uvicorn

    from sparkpipes.cli import remote
    from sparkpipes.server.transport import uvicorn_config

    server = uvicorn.Server(uvicorn_config(app, host, port, limits, tls))
    stopped = threading.Event()

    def publish() -> None:
        while not server.started:
            if stopped.wait(0.05):
                return
        bound = server.servers[0].sockets[0].getsockname()[1] if server.servers else port
        url = remote.local_url(host, bound, https=tls is not None)
        advert.publish(url, tls.leaf_pem if tls else None)
        if greet is not None:
            greet(url)

    threading.Thread(target=publish, name="sparkpipes-advertise", daemon=True).start()
    # uvicorn raises a SIGTERM it shut down for again once it is done: this handler takes
    # it, so the discovery file is removed and the batch in flight finishes
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: None)
    try:
        server.run()
    finally:
        stopped.set()
        signal.signal(signal.SIGTERM, previous)
    if not server.started:
        raise SystemExit(3)  # as uvicorn.run: it could not start (it said why)


def _status(args) -> int:
    from sparkpipes.util import display

    with _engine(args) as eng:
        print(display.table(*status_rows(eng)))
    return 0


def status_rows(eng) -> tuple[list[str], list[tuple]]:
    """One row per pipeline: what `sparkpipes status` shows."""
    from sparkpipes.engine.status import pipeline_status

    rows = [
        (
            p["name"],
            p["state"],
            p["table"],
            p["rows_loaded"],
            f"{p['rows_per_s']:,.0f}",
            "unknown" if p["lag"] is None else p["lag"],
            p["cluster"],
            p["engine"] or "",
            (p["last_error"] or "")[:80],
        )
        for p in pipeline_status(eng)
    ]
    cols = ["Pipeline", "State", "Table", "Rows loaded", "Rows/s", "Lag", "Cluster", "Engine"]
    cols.append("Last error")
    return cols, rows


if __name__ == "__main__":
    sys.exit(main())
