"""Any input either parses or raises ParseError; never any other exception."""

from hypothesis import given, settings
from hypothesis import strategies as st
from sql_cases import ALL

from sparkpipes.sql import ParseError, grammar, parse, parse_one

SETTINGS = settings(max_examples=200, deadline=None)

SOUP = [
    *grammar.KEYWORDS,
    *(k.lower() for k in grammar.KEYWORDS[::3]),
    "BEGIN",
    "END",
    "KAFKA",
    "INT",
    "VARCHAR",
    "ARRAY",
    "STRUCT",
    "JSON",
    "p",
    "t",
    "record",
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
    "0",
    "1",
    "-1",
    "2.5",
    "1e9",
    "0x1F",
    "(",
    ")",
    ",",
    ";",
    ".",
    "=",
    "<",
    ">",
    "<-",
    "->",
    "::",
    "::$",
    "%",
    "$",
    "@",
    "@@",
    "*",
    "+",
    "-",
    "/",
    "?",
    "[",
    "]",
    "{",
    "-- comment\n",
    "# comment\n",
    "/* c */",
    "/*",
    "\n",
    "\t",
]


def parses_or_raises_parse_error(text: str) -> None:
    try:
        stmts = parse(text)
    except ParseError as err:
        assert str(err).startswith(f"[{err.code}] ")
        assert err.line >= 1
        assert err.column >= 1
        return
    for stmt in stmts:
        assert parse_one(stmt.to_sql()) == stmt


@SETTINGS
@given(st.text())
def test_random_text(text):
    parses_or_raises_parse_error(text)


@SETTINGS
@given(st.lists(st.sampled_from(SOUP), max_size=30), st.sampled_from([" ", "", "\n"]))
def test_token_soup(tokens, sep):
    parses_or_raises_parse_error(sep.join(tokens))


@SETTINGS
@given(st.sampled_from(ALL), st.data())
def test_truncated_valid_statements(sql, data):
    cut = data.draw(st.integers(0, len(sql)))
    parses_or_raises_parse_error(sql[:cut])


@SETTINGS
@given(st.sampled_from(ALL), st.data())
def test_mutated_valid_statements(sql, data):
    words = sql.split(" ")
    i = data.draw(st.integers(0, len(words) - 1))
    action = data.draw(st.sampled_from(["drop", "insert", "replace", "swap"]))
    if action == "drop":
        del words[i]
    elif action == "insert":
        words.insert(i, data.draw(st.sampled_from(SOUP)))
    elif action == "replace":
        words[i] = data.draw(st.sampled_from(SOUP))
    else:
        j = data.draw(st.integers(0, len(words) - 1))
        words[i], words[j] = words[j], words[i]
    parses_or_raises_parse_error(" ".join(words))


def test_deep_nesting_is_handled():
    parses_or_raises_parse_error("SELECT " + "(" * 5000)
    parses_or_raises_parse_error("INSERT INTO t VALUES (" + "(" * 2000 + "1" + ")" * 2001)
    parses_or_raises_parse_error("CREATE TABLE t (a " + "ARRAY<" * 500 + "INT" + ">" * 500 + ")")
    parses_or_raises_parse_error("SET x = " + "9" * 5000)
    parses_or_raises_parse_error("SET x = 0x" + "f" * 5000)
    parses_or_raises_parse_error("SET x = " + "9" * 5000 + ".5")
