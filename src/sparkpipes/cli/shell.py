"""``sparkpipes sql``: scripts (-e, -f, stdin) and the interactive shell."""

from __future__ import annotations

import os
import sys
import time

from sparkpipes.errors import SparkpipesError
from sparkpipes.frontends.singlestore.lexer import mask_credentials
from sparkpipes.util import display

PROMPT, MORE = "sparkpipes> ", "        -> "


def progress_line(result) -> None:
    """One line per batch of a foreground pipeline, or per step of an ALTER TABLE that
    rewrites the rows, overwritten in place (terminals only)."""
    from sparkpipes.engine import RewriteProgress

    if isinstance(result, RewriteProgress):
        print(f"\r  {result}   ", end="", file=sys.stderr, flush=True)
    elif result.state != "NoData":
        print(
            f"\r  batch {result.batch_id}: {result.rows:,} rows in {result.seconds:.2f}s   ",
            end="",
            file=sys.stderr,
            flush=True,
        )


def run_script(session, text: str, *, echo: bool = False) -> int:
    """Run statements in order; stop at the first error. Returns the exit code."""
    t = time.time()
    try:
        for stmt, res in session.each(text):
            if echo:
                print(f"{PROMPT}{mask_credentials(stmt.to_sql())};")
            print(display.result(res, time.time() - t), flush=True)
            t = time.time()
    except SparkpipesError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


def interactive(session) -> int:
    """Read statements until EOF (Ctrl-D); a statement runs when it ends with ';', in
    ``session`` (an ``SqlSession``, or a server's ``cli.remote.Remote``). History is kept
    in ~/.sparkpipes_history. Errors are shown and the shell goes on."""
    from sparkpipes.frontends.singlestore.script import is_complete

    try:
        import readline
    except ImportError:  # pragma: no cover - not on this platform
        readline = None
    history = os.path.expanduser("~/.sparkpipes_history")
    if readline is not None:
        try:
            readline.read_history_file(history)
        except OSError:
            pass
    print("sparkpipes SQL shell. End statements with ';'. Ctrl-D quits.")
    buf = ""
    try:
        while True:
            try:
                line = input(MORE if buf else PROMPT)
            except KeyboardInterrupt:
                print()
                buf = ""
                continue
            except EOFError:
                print()
                break
            buf = f"{buf}\n{line}" if buf else line
            if not buf.strip():
                buf = ""
                continue
            if buf.strip().lower() in ("quit", "exit", "\\q"):
                break
            if is_complete(buf):
                if readline is not None:
                    _remember(readline, buf)
                _script(session, buf)
                buf = ""
    finally:
        if readline is not None:
            try:
                fd = os.open(history, os.O_WRONLY | os.O_CREAT, 0o600)
                os.close(fd)
                os.chmod(history, 0o600)
                readline.write_history_file(history)
            except OSError:
                pass
    return 0


def _script(session, text: str) -> int:
    """``run_script``, or the statements sent to a server (a ``cli.remote.Remote``)."""
    script = getattr(session, "script", None)
    if script is None:
        return run_script(session, text)
    try:
        return script(text)
    except SparkpipesError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


def _remember(readline, statement: str) -> None:
    """Replace the lines readline kept of ``statement`` with one entry, credentials
    masked: the history file never holds a secret."""
    n = statement.count("\n") + 1
    for _ in range(min(n, readline.get_current_history_length())):
        readline.remove_history_item(readline.get_current_history_length() - 1)
    readline.add_history(mask_credentials(statement).replace("\n", " "))
