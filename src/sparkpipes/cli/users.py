"""``sparkpipes user …``: the users who may sign in to ``sparkpipes serve`` (HTTP API,
web console, MySQL endpoint). The same as ``CREATE USER`` / ``ALTER USER`` / ``DROP
USER`` / ``SHOW USERS`` in SQL, without the password ever being on a command line: it is
asked for at the terminal (twice), or read as one line from standard input."""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import TYPE_CHECKING, Any

from sparkpipes.errors import NotFoundError

if TYPE_CHECKING:
    from sparkpipes.engine.engine import Engine

ACTIONS = ("add", "passwd", "drop", "list")


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    u = sub.add_parser(
        "user",
        parents=[common],
        help="users of `sparkpipes serve`: add, passwd, drop, list",
        description="Manage the users who sign in to `sparkpipes serve` (HTTP API, web "
        "console, MySQL endpoint). Passwords are stored hashed in the catalog. add/passwd "
        "ask for the password at the terminal, or read one line from standard input "
        "(--password-stdin). With at least one user, serve asks everyone to sign in and "
        "may listen beyond 127.0.0.1.",
    )
    u.add_argument("action", choices=ACTIONS, metavar="ACTION", help=", ".join(ACTIONS))
    u.add_argument("name", nargs="?", help="the user (add, passwd, drop)")
    u.add_argument(
        "--password-stdin", action="store_true", help="read the password from standard input"
    )


def _password(args: argparse.Namespace) -> str:
    if args.password_stdin or not sys.stdin.isatty():
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = getpass.getpass(f"password for {args.name}: ")
        if getpass.getpass("again: ") != password:
            raise SystemExit("error: the passwords differ")
    if not password:
        raise SystemExit("error: the password must not be empty")
    return password


def run(engine: Engine, args: argparse.Namespace) -> int:
    users = engine.catalog.users
    if args.action == "list":
        for u in users.all():
            print(f"{u.name}\t{u.created_at:%Y-%m-%d %H:%M:%S}")
        return 0
    if not args.name:
        raise SystemExit(f"error: user {args.action} needs the user's name")
    if args.action == "add":
        users.create(args.name, _password(args))
        print(f"user '{args.name}' added")
    elif args.action == "passwd":
        if users.get(args.name) is None:  # before asking for a password
            raise NotFoundError(f"user '{args.name}' does not exist")
        users.set_password(args.name, _password(args))
        print(f"password of '{args.name}' changed")
    else:
        users.drop(args.name)
        print(f"user '{args.name}' dropped")
    return 0
