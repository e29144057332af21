"""The one SQL LIKE matcher of every ``SHOW … LIKE``: MySQL semantics, and never more than
quadratic in the text however many ``%`` a user writes (a held-out review hung the server
with ``SHOW VARIABLES LIKE '%%%%%%!'`` against the old recursive matcher)."""

from __future__ import annotations

import random
import time

import pytest

from sparkpipes.engine.variables import like as engine_like
from sparkpipes.util.like import like


def recursive_like(pattern: str, text: str) -> bool:
    """The matcher ``like`` replaced (exponential in the number of ``%``): the reference
    of its semantics on small inputs."""
    p, t = pattern.lower(), text.lower()

    def match(i: int, j: int) -> bool:
        while i < len(p):
            c = p[i]
            if c == "%":
                return any(match(i + 1, k) for k in range(j, len(t) + 1))
            if j >= len(t):
                return False
            if c == "\\" and i + 1 < len(p):
                i += 1
                if p[i] != t[j]:
                    return False
            elif c != "_" and c != t[j]:
                return False
            i += 1
            j += 1
        return j == len(t)

    return match(0, 0)


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        ("", "", True),
        ("", "a", False),
        ("%", "", True),
        ("%", "anything at all", True),
        ("%%%", "", True),
        ("_", "", False),
        ("_", "a", True),
        ("_", "ab", False),
        ("a_c", "abc", True),
        ("a_c", "ac", False),
        ("max_allowed%", "max_allowed_packet", True),
        ("max_allowed", "max_allowed_packet", False),  # the whole text must match
        ("%packet", "max_allowed_packet", True),
        ("%allowed%", "max_allowed_packet", True),
        ("%a%b%c", "xaxbxc", True),
        ("%a%b%c", "xaxbxcx", False),
        ("a%a", "a", False),
        ("a%a", "aa", True),
        ("MAX_%", "max_allowed_packet", True),  # case-insensitive both ways
        ("max_%", "MAX_ALLOWED_PACKET", True),
        ("T%", "t1", True),
        (r"a\_c", "a_c", True),  # \_ is a literal _
        (r"a\_c", "abc", False),
        (r"100\%", "100%", True),  # \% is a literal %
        (r"100\%", "1000", False),
        ("a\\\\b", "a\\b", True),  # \\ is a literal backslash
        (r"\a", "a", True),  # any escaped character is itself
        ("a\\", "a\\", True),  # a backslash ending the pattern is literal
        ("a\\", "a", False),
        (r"\%%", "%abc", True),
        (r"%\%", "abc%", True),
        (r"%\%", "abc", False),
        ("default_tmp_st(.*.*.*)*!", "default_tmp_storage_engine", False),  # no regex
        ("(.*)", "(.*)", True),
        ("(.*)", "abc", False),
        ("a.c", "abc", False),
        ("%!", "max_allowed_packet", False),
    ],
)
def test_semantics(pattern: str, text: str, expected: bool) -> None:
    assert like(pattern, text) is expected
    assert recursive_like(pattern, text) is expected
    assert engine_like(pattern, text) is expected  # every SHOW … LIKE caller uses this one


def test_same_answers_as_the_matcher_it_replaced() -> None:
    rng = random.Random(20240611)
    alphabet_p, alphabet_t = "aAb%_\\", "aAb%_\\"
    for _ in range(20000):
        pattern = "".join(rng.choice(alphabet_p) for _ in range(rng.randint(0, 7)))
        text = "".join(rng.choice(alphabet_t) for _ in range(rng.randint(0, 7)))
        assert like(pattern, text) is recursive_like(pattern, text), (pattern, text)


def test_options_for_sqls_like() -> None:
    assert not like("A%", "abc", fold_case=False)
    assert like("a%", "abc", fold_case=False)
    assert like("a\\%", "a\\bc", escape=None)  # no escape character: \ is literal
    assert not like("a\\%", "a%", escape=None)


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        ("%" * 50 + "!", "x" * 10_000),
        ("%a" * 50 + "!", "a" * 10_000),
        ("%" + "_" * 60 + "!", "y" * 10_000),
        ("%" + "a" * 200 + "b", "a" * 2_000),
        ("default_tmp_st(.*.*.*)*!" * 200, "default_tmp_storage_engine" * 100),
    ],
)
def test_pathological_patterns_answer_promptly(pattern: str, text: str) -> None:
    """A proof of complexity, not a benchmark: the old matcher (or a regex) takes years."""
    started = time.monotonic()
    assert not like(pattern, text)
    assert time.monotonic() - started < 2
