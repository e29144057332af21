"""``sparkpipes connect …``: sink connectors managed as with Kafka Connect's REST API, from
a JSON or ``.properties`` file; answers are the JSON the REST API gives.

``connect validate FILE`` needs no warehouse: it runs the check ``PUT /connector-plugins/
{class}/config/validate`` runs (``frontends.connect.validate``, the same code path, no
I/O) and prints each problem under the key it names, the exit status 1 when there is
one. Values are never printed, so no secret is."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sparkpipes.frontends.connect import validate as validation
from sparkpipes.frontends.connect.model import load
from sparkpipes.frontends.connect.shape import flat

if TYPE_CHECKING:
    from sparkpipes.engine.engine import Engine

ACTIONS = ("create", "update", "list", "status", "config", "pause", "resume", "delete", "validate")


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    c = sub.add_parser(
        "connect",
        parents=[common],
        help="sink connectors (Kafka Connect configs): create, list, status, pause, …",
        description="Manage sink connectors: topics into tables of the warehouse, PostgreSQL "
        "or a MySQL-protocol database, exactly once. create/update read a Kafka Connect "
        'config, JSON ({"name", "config"} or flat) or .properties (\'-\': standard input). '
        "A created connector is Running: `sparkpipes run` (or serve) loads it. "
        "validate FILE checks a sink or source connector config as Kafka Connect's "
        "validate endpoint does, printing every problem with its key (exit status 1 if any).",
    )
    c.add_argument("action", choices=ACTIONS, metavar="ACTION", help=", ".join(ACTIONS))
    c.add_argument("target", nargs="?", help="the config file (create, validate) or a name")
    c.add_argument("file", nargs="?", help="update: the new config file")
    c.add_argument(
        "--json",
        action="store_true",
        help="validate: print the validate endpoint's JSON answer instead of one line a problem",
    )


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


def validate_file(args: argparse.Namespace) -> int:
    """Print the problems of a config file as the validate endpoint reports them, one
    ``key: message`` line each (then the keys accepted as not applicable, and why);
    0 when there is none, 1 otherwise. The answer is computed by the endpoint's own
    function, so the two never disagree."""
    cfg = {k: v for k, v in flat(read_text(args.target)).items() if v is not None}
    plugin = str(cfg.get("connector.class") or "")
    answer = validation.validate(plugin, cfg)
    if args.json:
        print(json.dumps(answer, indent=2, default=str))
        return 1 if answer["error_count"] else 0
    for entry in answer["configs"]:
        key = entry["value"]["name"]
        for message in entry["value"]["errors"]:
            print(f"{key}: {message}")
    for key, why in answer["not_applicable"].items():
        print(f"{key}: accepted, not applicable: {why}")
    count = answer["error_count"]
    print(
        f"{count} problem{'' if count == 1 else 's'} in {args.target}"
        if count
        else f"{args.target}: valid {plugin or 'connector'} config"
    )
    return 1 if count else 0


#: actions that need no engine (no warehouse is opened for them)
OFFLINE: dict[str, Callable[[argparse.Namespace], int]] = {"validate": validate_file}


def main(engine_of: Callable[[argparse.Namespace], Any], args: argparse.Namespace) -> int:
    """Run ``args.action``: offline ones as they are, the others on an engine that
    ``engine_of(args)`` opens (and closes after)."""
    offline = OFFLINE.get(args.action)
    if offline is not None:
        return offline(args)
    with engine_of(args) as engine:
        return run(engine, args)


def _paused(conns: Any, name: str) -> Any:
    conns.pause(name)
    return conns.status(name)


def _resumed(conns: Any, name: str) -> Any:
    conns.resume(name)
    return conns.status(name)


def _deleted(conns: Any, name: str) -> Any:
    conns.delete(name)
    return {"deleted": name}


#: actions on one connector, by its name: what each prints
NAMED: dict[str, Callable[[Any, str], Any]] = {
    "status": lambda conns, name: conns.status(name),
    "config": lambda conns, name: conns.config(name),
    "pause": _paused,
    "resume": _resumed,
    "delete": _deleted,
}


def run(engine: Engine, args: argparse.Namespace) -> int:
    conns = engine.connectors
    action, target = args.action, args.target
    if action == "list":
        out: Any = conns.names()
    elif action == "create":
        out = conns.create(read_text(target))
    elif not target:
        raise SystemExit(f"error: connect {action} needs the connector's name")
    elif action == "update":
        conns.get(target)
        out = conns.create(load(read_text(args.file), name=target), replace=True)
    else:
        out = NAMED[action](conns, target)
    print(json.dumps(out, indent=2, default=str))
    return 0
