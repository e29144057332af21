"""Pinot's admin commands: ``sparkpipes AddTable -schemaFile s.json -tableConfigFile t.json
[-exec]`` as ``pinot-admin.sh AddTable`` spells it, and ``sparkpipes pinot …`` for the rest
(schemas, tables, show, delete). Answers are the JSON Pinot's controller gives.

Without ``-controllerHost``/``-controllerPort`` the command works on the warehouse
(``--warehouse``); with them it sends the files to a running ``sparkpipes serve`` there,
as pinot-admin sends them to a controller.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import urllib.error
import urllib.request
from typing import TYPE_CHECKING, Any

from sparkpipes.cli.connect import read_text
from sparkpipes.frontends.pinot.keys import reason

if TYPE_CHECKING:
    from sparkpipes.engine.engine import Engine

ACTIONS = (
    "tables",
    "schemas",
    "table",
    "schema",
    "add-schema",
    "add-table",
    "delete-table",
    "delete-schema",
)


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    a = sub.add_parser(
        "AddTable",
        parents=[common],
        help="Pinot's AddTable: a schema and a REALTIME table config into a table and its pipeline",
        description="Read a Pinot schema and REALTIME table config (seed 002's "
        "schema-stream.json and table-config-stream.json) and print what would be created; "
        "with -exec, create the table and its pipeline <table>_REALTIME, set Running "
        "(`sparkpipes run` or `serve` loads it).",
        prefix_chars="-",
    )
    a.add_argument("-schemaFile", required=True, metavar="FILE", help="the schema JSON")
    a.add_argument("-tableConfigFile", required=True, metavar="FILE", help="the table config JSON")
    a.add_argument("-exec", action="store_true", dest="execute", help="create, not only check")
    a.add_argument("-controllerHost", metavar="HOST", help="a sparkpipes serve to send them to")
    a.add_argument("-controllerPort", metavar="PORT", help="its port (9000)")
    a.add_argument("-controllerProtocol", default="http", metavar="PROTO", help="http or https")
    a.add_argument(
        "-authToken",
        metavar="VALUE",
        help='the Authorization header to send, as pinot-admin takes it: "Basic …", or '
        '"Bearer $(sparkpipes token)" for a serve of this machine without users',
    )
    p = sub.add_parser(
        "pinot",
        parents=[common],
        help="Pinot schemas and realtime tables: list, show, add, delete",
        description="tables | schemas | table NAME | schema NAME | add-schema FILE | "
        "add-table FILE [--schema FILE] | delete-table NAME | delete-schema NAME. "
        "Deleting a table drops its pipeline and its rows, as Pinot does.",
    )
    p.add_argument("action", choices=ACTIONS, metavar="ACTION", help=", ".join(ACTIONS))
    p.add_argument("target", nargs="?", help="a file (add-*) or a name")
    p.add_argument("--schema", metavar="FILE", help="add-table: the schema file too")


def add_table(engine_of: Any, args: argparse.Namespace) -> int:
    schema, table = read_text(args.schemaFile), read_text(args.tableConfigFile)
    if args.controllerHost or args.controllerPort:
        return _remote(args, schema, table)
    with engine_of(args) as eng:
        if not args.execute:
            out = eng.pinot.plan(table, schema)
            out["status"] = "checked, nothing created (add -exec to create)"
        else:
            out = eng.pinot.add(table, schema)
    _warn(out.get("unrecognizedProperties"))
    _warn(out.get("schemaUnrecognizedProperties"), "schema")
    for note in out.get("notes") or ():  # e.g. schema columns the stream does not fill
        print(f"warning: {note}", file=sys.stderr)
    print(json.dumps(out, indent=2, default=str))
    return 0


def _warn(paths: Any, doc: str = "table config") -> None:
    """One warning line (on stderr, so stdout stays the controller's JSON) naming the keys
    accepted and kept but not applied here, as Pinot's ``unrecognizedProperties``; each
    path's reason on its own line below."""
    if not paths:
        return
    paths = list(paths)
    print(
        f"warning: {doc}: unrecognizedProperties (accepted and kept, not applied here): "
        + ", ".join(paths),
        file=sys.stderr,
    )
    for p in paths:
        print(f"  {p}: {reason(_section(p, doc))}", file=sys.stderr)


def _section(path: str, doc: str) -> str:
    """A reported path as the registry (:mod:`sparkpipes.frontends.pinot.keys`) names it:
    ``…streamConfigMaps[i].k`` (any stream's) → ``streamConfigs.k``, a schema's
    ``dimensionFieldSpecs[2].k`` → ``fieldSpec.k``, its ``k`` → ``schema.k``."""
    if doc == "schema":
        return "fieldSpec." + path.rsplit(".", 1)[-1] if "[" in path else "schema." + path
    stream = _STREAM_KEY.search(path)
    return "streamConfigs." + stream.group(1) if stream else path


#: a key of a stream config, in ``tableIndexConfig`` or any of ``streamConfigMaps``
_STREAM_KEY = re.compile(r"(?:streamConfigs|streamConfigMaps\[\d+\])\.(.+)$")


def _remote(args: argparse.Namespace, schema: str, table: str) -> int:
    """POST the files to a ``sparkpipes serve`` (Pinot's controller endpoints)."""
    base = (
        f"{args.controllerProtocol}://{args.controllerHost or '127.0.0.1'}:"
        f"{args.controllerPort or 9000}"
    )
    auth = args.authToken
    if not args.execute:
        body = json.dumps({"schema": schema, "table": table})
        out = _post(f"{base}/tables/validate", body, auth)
    else:
        _post(f"{base}/schemas", schema, auth)
        out = _post(f"{base}/tables", table, auth)
    print(json.dumps(out, indent=2))
    return 0


def _post(url: str, body: str, auth: str | None = None) -> Any:
    headers = {"Content-Type": "application/json", **({"Authorization": auth} if auth else {})}
    req = urllib.request.Request(url, data=body.encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        try:
            detail = json.loads(e.read()).get("error")
        except ValueError:
            detail = None
        raise SystemExit(f"error: {detail or e}") from None
    except urllib.error.URLError as e:
        raise SystemExit(f"error: cannot reach the controller at {url}: {e.reason}") from None


def run(engine: Engine, args: argparse.Namespace) -> int:
    pinot, action, target = engine.pinot, args.action, args.target
    if action == "tables":
        out: Any = {"tables": pinot.names()}
    elif action == "schemas":
        out = pinot.schema_names()
    elif not target:
        raise SystemExit(f"error: pinot {action} needs a {'file' if 'add' in action else 'name'}")
    elif action == "table":
        # the config as Pinot's controller shows it, then each stream's pipeline and offsets
        out = {"REALTIME": pinot.config(target), "streams": pinot.status(target)["streams"]}
        unrecognized = pinot.unrecognized(target)
        if unrecognized:
            out["unrecognizedProperties"] = list(unrecognized)
            _warn(list(unrecognized))
    elif action == "schema":
        out = dict(pinot.schema(target).raw)
    elif action == "add-schema":
        s = pinot.add_schema(read_text(target))
        out = {"status": f"{s.name} successfully added"}
    elif action == "add-table":
        out = pinot.add(read_text(target), read_text(args.schema) if args.schema else None)
        _warn(out.get("unrecognizedProperties"))
        _warn(out.get("schemaUnrecognizedProperties"), "schema")
    elif action == "delete-table":
        out = {"status": f"Tables: [{pinot.delete(target)}] deleted"}
    else:
        pinot.delete_schema(target)
        out = {"status": f"Schema {target} deleted"}
    print(json.dumps(out, indent=2, default=str))
    return 0
