"""``sparkpipes connect …``: sink connectors managed as with Kafka Connect's REST API, from
a JSON or ``.properties`` file; answers are the JSON the REST API gives."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sparkpipes.engine.engine import Engine

ACTIONS = ("create", "update", "list", "status", "config", "pause", "resume", "delete")


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    c = sub.add_parser(
        "connect",
        parents=[common],
        help="sink connectors (Kafka Connect configs): create, list, status, pause, …",
        description="Manage sink connectors: topics into tables of the warehouse, PostgreSQL "
        "or a MySQL-protocol database, exactly once. create/update read a Kafka Connect "
        'config, JSON ({"name", "config"} or flat) or .properties (\'-\': standard input). '
        "A created connector is Running: `sparkpipes run` (or serve) loads it.",
    )
    c.add_argument("action", choices=ACTIONS, metavar="ACTION", help=", ".join(ACTIONS))
    c.add_argument("target", nargs="?", help="the config file (create) or connector name")
    c.add_argument("file", nargs="?", help="update: the new config file")


def read_text(path: str | None, what: str = "the connector config file") -> str:
    """A file the user named ('-': standard input); a clear exit when it cannot be read."""
    if not path:
        raise SystemExit(f"error: give {what} ('-' for standard input)")
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise SystemExit(f"error: cannot read {path}: {e.strerror}") from None


def run(engine: Engine, args: argparse.Namespace) -> int:
    conns = engine.connectors
    action, target = args.action, args.target
    if action == "list":
        out: Any = conns.names()
    elif action == "create":
        out = conns.create(read_text(target))
    else:
        if not target:
            raise SystemExit(f"error: connect {action} needs the connector's name")
        if action == "update":
            from sparkpipes.frontends.connect.model import load

            conns.get(target)
            out = conns.create(load(read_text(args.file), name=target), replace=True)
        elif action == "status":
            out = conns.status(target)
        elif action == "config":
            out = conns.config(target)
        elif action == "pause":
            conns.pause(target)
            out = conns.status(target)
        elif action == "resume":
            conns.resume(target)
            out = conns.status(target)
        else:
            conns.delete(target)
            out = {"deleted": target}
    print(json.dumps(out, indent=2, default=str))
    return 0
