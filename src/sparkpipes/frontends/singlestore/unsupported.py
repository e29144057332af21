"""SingleStore SQL that sparkpipes does not do (yet), by the words that begin it: a syntax
error at one of these says so and why, instead of a bare "unexpected", so a user can tell
a construct that is missing here from a typo of their own.

``STATEMENTS`` match the words a statement begins with; ``CLAUSES`` the words at the place
the parse stopped. Each maps to what the error says after "… is not supported".
"""

from __future__ import annotations

import re

#: statements, by their first words
STATEMENTS: dict[tuple[str, ...], str] = {
    ("LOAD", "DATA"): (
        " in this form: LOAD DATA INFILE 'file' loads a file of the server once; "
        "CREATE PIPELINE … AS LOAD DATA FS|S3|KAFKA … loads from a source (START "
        "PIPELINE … FOREGROUND once)"
    ),
    ("DROP", "DATABASE"): (
        ": a warehouse holds one database (drop its tables and pipelines one by one)"
    ),
    **{
        words: (
            ": it makes SingleStore's CDC-in tables, procedures and pipelines from a "
            "MONGODB or MYSQL link, and sparkpipes has no CDC-in source; CREATE INFERRED "
            "PIPELINE makes a table and its pipeline from files or a topic (INFER PIPELINE "
            "shows them)"
        )
        for words in (
            ("CREATE", "TABLES", "AS", "INFER", "PIPELINE"),
            ("CREATE", "TABLE", "AS", "INFER", "PIPELINE"),
        )
    },
    ("START", "FAILED", "PIPELINES"): " yet; START ALL PIPELINES starts the stopped ones",
    ("EXCEPTION",): " yet (a procedure body's error handler)",
    ("CALL",): " yet as a statement of its own (in a pipeline procedure's body, CALL p(batch "
    "[, value …]) runs procedure p on the batch)",
    ("BEGIN",): " yet (a block inside a procedure body; or a transaction: each statement "
    "commits by itself)",
    **{
        (word,): " yet (control flow in a procedure body)"
        for word in ("WHILE", "LOOP", "REPEAT", "FOR", "RAISE", "RETURN")
    },
}

#: clauses, by their words where the parse stopped
CLAUSES: dict[tuple[str, ...], str] = {
    ("NULL", "DEFINED", "BY"): " yet",
    ("TRAILING", "NULLCOLS"): " yet",
    ("MAX_ERRORS",): " yet",
    ("ERRORS", "HANDLE"): " yet",
    ("COMPRESSION",): " yet",
    ("CHARACTER", "SET"): " yet (files are read as UTF-8)",
    # FORMAT PARQUET's zone of its timestamps (it changes what a DATETIME column holds)
    ("TIMEZONE",): " yet (Parquet timestamps load as UTC)",
    # SingleStore's CDC-in pipelines (CREATE TABLES AS INFER PIPELINE writes them): which
    # change of a key a batch keeps is not documented, and their MONGODB / MYSQL links are
    # not sources here
    ("REPLACE", "KEY"): (
        ": it belongs to SingleStore's CDC-in pipelines (from a MONGODB or MYSQL link, "
        "which sparkpipes has no source for) and what it does to a batch is not documented; "
        "REPLACE INTO TABLE t replaces rows by t's PRIMARY KEY"
    ),
}

_WORD = re.compile(r"[A-Za-z_]+")


def _words(text: str, n: int) -> tuple[str, ...]:
    out: list[str] = []
    for m in re.finditer(r"[A-Za-z_]+|\S", text):
        if _WORD.fullmatch(m.group()) is None:
            break
        out.append(m.group().upper())
        if len(out) == n:
            break
    return tuple(out)


def explain(statement: str, offset: int) -> str | None:
    """The error for SingleStore SQL this dialect does not take, or None: ``statement``
    is the statement's text and ``offset`` where its parse stopped."""
    before = len(statement[:offset].split())  # words the parse took
    previous = _previous_word(statement, offset)
    for table, at in ((CLAUSES, offset), (CLAUSES, previous), (STATEMENTS, 0)):
        if at is None:
            continue
        words = _words(statement[at:], 5)
        for phrase, why in table.items():
            if at == previous and len(phrase) < 2:
                continue  # a clause that began a word earlier: two words at least
            # a statement's words explain a stop among them, not a typo further on
            if words[: len(phrase)] == phrase and (table is CLAUSES or before <= len(phrase)):
                return f"{' '.join(phrase)} is not supported{why}"
    return None


def _previous_word(statement: str, offset: int) -> int | None:
    """Where the word before ``offset`` begins, or None."""
    found = None
    for m in _WORD.finditer(statement[:offset]):
        found = m.start()
    return found
