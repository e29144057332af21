"""SQL fuzzing: mutated valid statements, and the oracle every input must satisfy.

Random text rarely gets past the first token; mutations of valid statements (a token
dropped, doubled, swapped, replaced or given another kind, a cut, broken quoting or JSON,
comments and line breaks moved in, odd characters, huge numbers and names) reach deep
into the grammar and the lowering. The oracle (:func:`check`): the text parses, every
statement prints back to itself, a ``CREATE PIPELINE`` lowers to a spec that survives the
catalog's JSON and ``SHOW CREATE PIPELINE`` round trips, column types map to Spark types,
and every number a statement hands the engine fits a BIGINT; or it raises a declared
sparkpipes error located on a line and column of the input (lowering errors located as the
executor does). Anything else (a traceback, a hang) is a bug. Used by the CI test (through
Hypothesis: :func:`mutated`, :func:`soups`) and by ``bench/fuzz_sql.py`` (≥ 100,000 inputs).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import random
import re
import signal
from collections.abc import Iterator, Sequence
from typing import Any

from sparkpipes.errors import SparkpipesError
from sparkpipes.frontends.singlestore import grammar

#: words and punctuation a mutation drops in
SOUP: tuple[str, ...] = (
    *grammar.KEYWORDS,
    *(k.lower() for k in grammar.KEYWORDS[::3]),
    *"BEGIN END KAFKA INT VARCHAR ARRAY STRUCT JSON p t record".split(),  # noqa: SIM905
    "`quoted name`",
    "`",
    "'",
    '"',
    "'str'",
    '"str"',
    "'{}'",
    "'{\"a\": 1}'",
    "'it''s'",
    "'\\n'",
    *"0 1 -1 2.5 1e9 0x1F ( ) , ; . = < > <- -> :: ::$ % $ @ @@ * + - / ? [ ] {".split(),  # noqa: SIM905
    "-- comment\n",
    "# comment\n",
    "/* c */",
    "/*",
    "\n",
    "\t",
    "9" * 40,
    "x" * 300,
    "\u00e9t\u00e9",
    "\u200b",
    "\x00",
    "\ud7ff",
    "\U0001f600",
)

#: characters a mutation slips into a token: controls, line breaks Python's splitlines
#: knows but SQL does not, lone surrogates, characters whose case mapping changes length
#: or that match ASCII letters (U+0130, U+0131, U+017F, U+212A, U+00DF, U+FB01),
#: digits that \d matches but int() or the grammar may not
ODD: tuple[str, ...] = (
    *"\x00 \t \r \r\n \x0b \x0c \x1a \x1c \x85 \\ ' \" ` ; $ @".split(" "),  # noqa: SIM905
    *"\u00a0 \u2028 \u200b \u200d \u0301 \ufeff \U0001f600 \ud800 \udfff".split(" "),  # noqa: SIM905
    *"\u0130 \u0131 \u017f \u212a \u00df \ufb01 \u00b2 \u0661 \uff11".split(" "),  # noqa: SIM905
)

#: numbers at the edges: 32/64-bit limits, Python's int-to-text limit, float overflow
BIG_NUMBERS: tuple[str, ...] = (
    "2147483648",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551616",
    "9" * 40,
    "9" * 1233,
    "9" * 1234,
    "9" * 4301,
    "0x" + "f" * 16,
    "0x" + "f" * 1025,
    "1e308",
    "1e309",
    "0." + "0" * 400 + "1",
    "-0",
    "0x",
    ".",
    "1.2.3",
    "1e",
)

#: damaged insides for a string literal (CONFIG / CREDENTIALS / OFFSETS JSON above all)
JSON_DAMAGE: tuple[str, ...] = (
    "[1, 2]",
    "1",
    "null",
    '"x"',
    '{"a": [}',
    '{"a": NaN}',
    '{"a": Infinity}',
    '{"a": -Infinity}',
    '{"a": 1e999}',
    '{"a": ' + "9" * 5000 + "}",
    '{"a": ' + "9" * 400 + "}",
    "[" * 100_000,
    '{"a":' * 3000 + "1" + "}" * 3000,
    '{"\\ud800": 1}',
    '{"a": "\\ud800"}',
    '{"a": "\\u0000"}',
    '{"a":\x00 1}',
    '{"": ""}',
    '{"a": 1, "a": 2}',
    '{"a": {"b": [1, {"c": null}]}}',
    '{"batch_interval_ms": 1}',
    '{"sasl.password": "x"}',
    '{"a": "' + "x" * 10_000 + '"}',
)

_TOKEN = re.compile(
    r"""'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.|"")*"|`(?:[^`]|``)*`|"""
    r"""[A-Za-z_][\w$]*|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|<-|->>|->|::|<=>|<>|!=|<=|>=|\s+|.""",
    re.S,
)


def tokens(sql: str) -> list[str]:
    """``sql`` cut into tokens (strings and identifiers whole); joining gives it back."""
    return _TOKEN.findall(sql)


def _corrupt_string(rng: random.Random, tok: str) -> str:
    """A string literal (often CONFIG/CREDENTIALS JSON) with its inside damaged."""
    inner = tok[1:-1]
    damage = rng.choice(["cut", "brace", "quote", "nest", "type", "empty"])
    if damage == "cut":
        inner = inner[: rng.randint(0, len(inner))]
    elif damage == "brace":
        inner = inner.replace("}", "", 1) if "}" in inner else inner + "}"
    elif damage == "quote":
        inner = inner.replace('"', "", 1)
    elif damage == "nest":
        inner = '{"a": ' * rng.randint(1, 200) + "1" + "}" * rng.randint(0, 200)
    elif damage == "type":
        inner = rng.choice(JSON_DAMAGE).replace(tok[0], tok[0] * 2)
    else:
        inner = ""
    return tok[0] + inner + tok[-1]


def _retyped(rng: random.Random, tok: str) -> str:
    """``tok`` as a token of another kind: string, quoted name, number, literal, keyword."""
    bare = tok.strip("'\"`")
    return rng.choice(
        [
            f"'{bare}'",
            f"`{bare}`",
            f'"{bare}"',
            "1",
            "-1",
            "1.5e3",
            "NULL",
            "TRUE",
            rng.choice(grammar.KEYWORDS),
            rng.choice(grammar.KEYWORDS).lower(),
        ]
    )


def mutate_once(rng: random.Random, toks: list[str]) -> list[str]:
    """One random mutation of a token list (a new list)."""
    toks = list(toks)
    if not toks:
        return [rng.choice(SOUP)]
    i = rng.randrange(len(toks))
    op = rng.choice(
        [
            "drop",
            "dup",
            "swap",
            "replace",
            "insert",
            "cut",
            "string",
            "requote",
            "paren",
            "number",
            "case",
            "char",
            "retype",
            "comment",
            "newline",
            "longname",
        ]
    )
    if op == "drop":
        del toks[i]
    elif op == "dup":
        toks.insert(i, toks[i])
    elif op == "swap":
        j = rng.randrange(len(toks))
        toks[i], toks[j] = toks[j], toks[i]
    elif op == "replace":
        toks[i] = rng.choice(SOUP)
    elif op == "insert":
        toks.insert(i, rng.choice([" ", ""]) + rng.choice(SOUP) + rng.choice([" ", ""]))
    elif op == "cut":
        toks = toks[:i]
    elif op == "string":
        quoted = [k for k, t in enumerate(toks) if len(t) >= 2 and t[0] in "'\"`"]
        if quoted:
            k = rng.choice(quoted)
            toks[k] = _corrupt_string(rng, toks[k])
    elif op == "requote":
        quote = rng.choice(["'", '"', "`", ""])
        t = toks[i]
        toks[i] = quote + (t[1:-1] if len(t) >= 2 and t[0] in "'\"`" else t) + quote
    elif op == "paren":
        toks.insert(i, rng.choice(["(", ")", "((", "))", "(" * 50, ")" * 50]))
    elif op == "number":
        numbers = [k for k, t in enumerate(toks) if t[:1].isdigit()]
        k = rng.choice(numbers) if numbers and rng.random() < 0.7 else i
        toks[k] = rng.choice([*BIG_NUMBERS, "9" * rng.randint(19, 400), "1e999"])
    elif op == "case":
        toks[i] = toks[i].swapcase()
    elif op == "char":
        pos = rng.randint(0, len(toks[i]))
        toks[i] = toks[i][:pos] + rng.choice(ODD) + toks[i][pos:]
    elif op == "retype":
        toks[i] = _retyped(rng, toks[i])
    elif op == "comment":
        toks.insert(i, rng.choice(["/**/", "-- x\n", "#\n", "/*+ hint */", "/* ; */", "-- ;\n"]))
    elif op == "newline":
        brk = rng.choice(["\r\n", "\r", "\n\n", "\u2028", "\x85"])
        toks = [brk if t.isspace() and rng.random() < 0.5 else t for t in toks]
    else:
        names = [k for k, t in enumerate(toks) if t[:1].isalpha() or t[:1] == "`"]
        if names:
            k = rng.choice(names)
            toks[k] = (toks[k][:8] * 2500)[: rng.choice([64, 65, 256, 1000, 20_000])]
    return toks


def mutate(rng: random.Random, corpus: Sequence[str], *, max_mutations: int = 4) -> str:
    """A mutated statement (sometimes two joined by ``;``) from ``corpus``."""
    toks = tokens(rng.choice(corpus))
    if rng.random() < 0.1:
        toks += [";", " ", *tokens(rng.choice(corpus))]
    for _ in range(rng.randint(1, max_mutations)):
        toks = mutate_once(rng, toks)
    return "".join(toks)


def soup(rng: random.Random, max_tokens: int = 30) -> str:
    sep = rng.choice([" ", "", "\n"])
    return sep.join(rng.choice(SOUP) for _ in range(rng.randint(0, max_tokens)))


#: valid statements for forms the test suite's cases leave out (SKIP SOURCE CHECK, COLUMNS
#: TERMINATED BY, double-quoted CONFIG, ILIKE … ESCAPE, ->>, SHOW … STATUS, dotted names)
EXTRA: tuple[str, ...] = (
    "CREATE PIPELINE p AS LOAD DATA KAFKA 'h:9092/t' SKIP SOURCE CHECK SKIP CONSTRAINT ERRORS "
    "INTO TABLE t FORMAT JSON (a <- %::b, @v <- c::d) SET a = @v "
    "WHERE a IS NOT DISTINCT FROM b",
    "CREATE OR REPLACE INFERRED PIPELINE q AS LOAD DATA FS '/in/*.json' "
    """CONFIG '{"recursive": true}' FORMAT JSON""",
    "CREATE PIPELINE c AS LOAD DATA FS '/in' BATCH_INTERVAL -0 INTO TABLE t COLUMNS TERMINATED "
    "BY ';' ENCLOSED BY '''' LINES TERMINATED BY '\\n' IGNORE 0 LINES FORMAT CSV (a, @b, c) "
    "SET d = @b",
    'CREATE PIPELINE r AS LOAD DATA S3 "b/k" CREDENTIALS "{\\"s\\": \\"x\\"}" '
    "INTO TABLE `tq` FORMAT RAW",
    "ALTER PIPELINE p SET MAX_RETRIES_PER_BATCH_PARTITION 0, OFFSETS LATEST",
    "ALTER TABLE t ADD c DECIMAL(38, 10) UNSIGNED DEFAULT NOW(6) COLLATE utf8mb4_bin",
    "ALTER TABLE t ADD COLUMN d AS a + 1 PERSISTED BIGINT",
    "CREATE TABLE t (a INT DEFAULT CURRENT_TIMESTAMP, b TEXT CHARSET latin1, "
    "c ARRAY<STRUCT<x INT, y: MAP<STRING, DOUBLE>>>, UNIQUE INDEX (a) USING BTREE, KEY k (b, c))",
    "CREATE PROCEDURE q(a INT, b QUERY(x TEXT, y JSON)) AS BEGIN INSERT INTO t SELECT * FROM b; "
    "END",
    "INSERT INTO t VALUES (a ILIKE 'x' ESCAPE '!', b RLIKE '^a', c REGEXP 'b', d == e, "
    "f->>'$.g', h -> 'i', CASE j WHEN 1 THEN 2 END, TIMESTAMP '2020-01-01 00:00:00', record::%f)",
    "SET @@SESSION.a.b = TRUE",
    "SET GLOBAL x = NULL",
    "SHOW GLOBAL STATUS LIKE 'x'",
    "SHOW CREATE TABLE `t`",
    "DESCRIBE db.t",
    "START PIPELINE p",
    "CREATE DATABASE IF NOT EXISTS `d b`",
    "USE d",
    "DETACH PIPELINE IF EXISTS d.p",
    "STOP PIPELINE IF RUNNING d.p DETACH",
    "SHOW CREATE PIPELINE p EXTENDED",
    "CREATE LINK d.l AS S3 CONFIG '{\"region\": \"x\"}' CREDENTIALS '{}' DESCRIPTION 'd'",
    "DROP LINK IF EXISTS l",
    "LOAD DATA INFILE '/in/a.csv' SKIP CONSTRAINT ERRORS REPLACE INTO TABLE d.t "
    "FIELDS TERMINATED BY ',' IGNORE 1 LINES (a, @, @b) SET c = @b",
    "LOAD DATA LOCAL INFILE 'x' INTO TABLE t FORMAT JSON (a <- b)",
    "LOAD DATA S3 'b/k' CONFIG '{\"region\": \"r\"}' CREDENTIALS '{}' SKIP ALL ERRORS "
    "INTO TABLE t FORMAT JSON (a <- b)",
    "SHOW LINKS ON d",
    "SHOW CREATE LINK `l`",
    "CREATE PIPELINE p AS LOAD DATA LINK d.l 'b/k' INTO TABLE t FORMAT JSON (a <- b DEFAULT 1)",
    "TEST PIPELINE `p q`",
    "WITH a AS (SELECT 1), b AS (SELECT 2) SELECT * FROM a, b",
    "SELECT 'a;b', `c;d` FROM t -- ;\n WHERE x = 1 /* ; */",
    "EXPLAIN INSERT INTO t SELECT 1",
)


def corpus(base: Sequence[str]) -> tuple[str, ...]:
    """``base``, :data:`EXTRA`, and the canonical text (``to_sql()``) of each of them
    (other quoting and spacing than the hand-written forms)."""
    from sparkpipes.frontends.singlestore import parse

    texts = [*base, *EXTRA]
    canonical = [s.to_sql() for t in texts for s in parse(t)]
    return tuple(dict.fromkeys([*texts, *canonical]))


def mutated(base: Sequence[str], *, max_mutations: int = 6) -> Any:
    """Hypothesis strategy: :func:`mutate` of :func:`corpus` ``(base)``, driven by a
    Hypothesis-controlled ``Random`` (so failures replay and shrink)."""
    from hypothesis import strategies as st

    texts = corpus(base)
    return st.builds(
        lambda rng, n: mutate(rng, texts, max_mutations=n),
        st.randoms(use_true_random=False),
        st.integers(1, max_mutations),
    )


def soups() -> Any:
    """Hypothesis strategy: :func:`soup`."""
    from hypothesis import strategies as st

    return st.builds(soup, st.randoms(use_true_random=False))


class Hang(Exception):
    """An input took longer than the oracle allows."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`Hang` in the main thread after ``seconds`` (SIGALRM)."""

    def fire(signum: int, frame: object) -> None:
        raise Hang(f"no answer within {seconds:g} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


_DEFAULTS: dict | None = None


def _defaults() -> dict:
    global _DEFAULTS
    if _DEFAULTS is None:
        from sparkpipes.engine import variables

        _DEFAULTS = variables.pipeline_defaults(variables.resolve({}))
    return _DEFAULTS


#: what SingleStore's BIGINT holds; a number a statement hands the engine must fit
BIGINT = range(-(2**63), 2**63)


def check(text: str, *, seconds: float = 5.0) -> str:
    """Apply the oracle to ``text``; return the outcome's name (``ok`` or the declared
    error's class). Raises AssertionError (with the input) on anything else."""
    try:
        with time_limit(seconds):
            return _oracle(text)
    except (AssertionError, Hang) as e:
        raise AssertionError(f"{type(e).__name__} for input {text!r}: {e}") from None
    except Exception as e:
        raise AssertionError(f"{type(e).__name__} for input {text!r}: {e}") from e


def _oracle(text: str) -> str:
    """Statement by statement, as the SQL executor runs a script: the first error ends it."""
    from sparkpipes.frontends.singlestore import parse_one
    from sparkpipes.frontends.singlestore.parser import iter_parse, locate

    try:
        stmts = list(iter_parse(text))  # what parse() and the executor run
    except SparkpipesError as err:  # ParseError, or another error it located
        _assert_located(err, text)
        return type(err).__name__
    for stmt, span in stmts:
        for field in dataclasses.fields(stmt):
            value = getattr(stmt, field.name)
            if isinstance(value, int) and not isinstance(value, bool):
                assert value in BIGINT, f"{field.name} = {value} does not fit a BIGINT"
        assert parse_one(stmt.to_sql()) == stmt, ("printed back as", stmt.to_sql())
        try:
            _lower(stmt)
        except SparkpipesError as err:
            err = locate(err, text, span)  # as the executor does
            _assert_located(err, text)
            return type(err).__name__
    return "ok"


def _lower(stmt: object) -> None:
    """What the engine derives from ``stmt`` without Spark or a catalog: a pipeline's spec
    (stored as strict JSON in the catalog, printed by SHOW CREATE PIPELINE), the offsets
    of ALTER PIPELINE … SET OFFSETS, column types."""
    from sparkpipes.config.spec import PipelineSpec
    from sparkpipes.frontends.singlestore import ast as A
    from sparkpipes.frontends.singlestore import parse_one
    from sparkpipes.frontends.singlestore.lowering import create_pipeline_sql, to_spec
    from sparkpipes.frontends.singlestore.types import spark_type

    if isinstance(stmt, A.CreatePipeline):
        spec = to_spec(stmt, _defaults())
        stored = json.loads(json.dumps(spec.to_json(), allow_nan=False))
        clear = json.loads(json.dumps({k: v.reveal() for k, v in spec.credentials.items()}))
        assert PipelineSpec.from_json(stored, clear) == spec, "catalog round trip"
        shown = create_pipeline_sql(spec)
        assert not clear or "<redacted>" in shown, ("SHOW CREATE PIPELINE shows secrets", shown)
        again = to_spec(parse_one(shown), _defaults())
        assert _unsealed(again.to_json()) == _unsealed(spec.to_json()), (
            "SHOW CREATE PIPELINE gives",
            shown,
        )
    elif isinstance(stmt, A.AlterPipeline) and stmt.offsets_json is not None:
        json.dumps(json.loads(stmt.offsets_json), allow_nan=False)  # what SET OFFSETS gets
    elif isinstance(stmt, A.CreateTable):
        for c in stmt.columns:
            spark_type(c.type)
    elif isinstance(stmt, A.AlterTableAddColumn | A.AlterTableModifyColumn):
        spark_type(stmt.column.type)


def _unsealed(value: object) -> object:
    """A stored spec without its sealed secrets: SHOW CREATE PIPELINE prints them as
    ``<redacted>``, so its text gives back everything else and never the secrets."""
    if isinstance(value, dict):
        return {k: _unsealed(v) for k, v in value.items() if k != "credentials"}
    if isinstance(value, list):
        return [_unsealed(v) for v in value]
    return value


def _assert_located(err: SparkpipesError, text: str) -> None:
    line, column = getattr(err, "line", None), getattr(err, "column", None)
    assert line is not None and column is not None, f"not located: {err}"
    lines = text.split("\n")
    assert 1 <= line <= len(lines), f"line {line} of {len(lines)}"
    assert 1 <= column <= len(lines[line - 1]) + 1, f"column {column} of line {line}"
    assert str(err).startswith(f"[{err.code}] "), str(err)
