"""Transforms of jcustenborder's ``kafka-connect-transform-common``
(``com.github.jcustenborder.kafka.connect.transform.common``), which Confluent Hub ships
and users put beside Kafka's own.

``ChangeTopicCase`` (``ChangeTopicCase.java``, ``ChangeTopicCaseConfig.java``): the topic
converted from case format ``from`` to ``to`` by Guava's ``CaseFormat.to`` — both
required, each one of ``LOWER_CAMEL``, ``LOWER_HYPHEN``, ``LOWER_UNDERSCORE``,
``UPPER_CAMEL``, ``UPPER_UNDERSCORE`` as written (``Enum.valueOf``: case matters). Guava's
conversion is reproduced step by step (``CaseFormat.convert`` and its shortcuts): words
split at the source format's boundary (``-``, ``_``, or an upper-case ASCII letter), each
re-cased for the target (ASCII only, as Guava's ``Ascii``) and joined by its separator.
A topic not in the ``from`` format is converted as Guava converts it ("best effort"), not
refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from sparkpipes.sources.connect.smt.base import Options, Outcome, Records, Transform
from sparkpipes.sources.connect.smt.routing import per_topic

_ASCII_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_LOWER = str.maketrans(_ASCII_UPPER, _ASCII_UPPER.lower())
_UPPER = str.maketrans(_ASCII_UPPER.lower(), _ASCII_UPPER)


def _lower(s: str) -> str:
    return s.translate(_LOWER)


def _upper(s: str) -> str:
    return s.translate(_UPPER)


def _capitalized(word: str) -> str:
    """Guava's ``firstCharOnlyToUpper``."""
    return _upper(word[:1]) + _lower(word[1:]) if word else word


#: format → (is a word boundary, separator, how a word is written)
FORMATS: dict[str, tuple[Callable[[str], bool], str, Callable[[str], str]]] = {
    "LOWER_HYPHEN": (lambda c: c == "-", "-", _lower),
    "LOWER_UNDERSCORE": (lambda c: c == "_", "_", _lower),
    "LOWER_CAMEL": (lambda c: "A" <= c <= "Z", "", _capitalized),
    "UPPER_CAMEL": (lambda c: "A" <= c <= "Z", "", _capitalized),
    "UPPER_UNDERSCORE": (lambda c: c == "_", "_", _upper),
}
#: Guava's shortcuts between the separated formats (the same result as the general way
#: for well-formed names, but not for every input: kept as Guava has them)
_SHORTCUTS: dict[tuple[str, str], Callable[[str], str]] = {
    ("LOWER_HYPHEN", "LOWER_UNDERSCORE"): lambda s: s.replace("-", "_"),
    ("LOWER_HYPHEN", "UPPER_UNDERSCORE"): lambda s: _upper(s.replace("-", "_")),
    ("LOWER_UNDERSCORE", "LOWER_HYPHEN"): lambda s: s.replace("_", "-"),
    ("LOWER_UNDERSCORE", "UPPER_UNDERSCORE"): _upper,
    ("UPPER_UNDERSCORE", "LOWER_HYPHEN"): lambda s: _lower(s.replace("_", "-")),
    ("UPPER_UNDERSCORE", "LOWER_UNDERSCORE"): _lower,
}


def convert(source: str, target: str, s: str) -> str:
    """``CaseFormat.valueOf(source).to(CaseFormat.valueOf(target), s)``."""
    if source == target:
        return s
    shortcut = _SHORTCUTS.get((source, target))
    if shortcut is not None:
        return shortcut(s)
    boundary, own_separator, _ = FORMATS[source]
    _, separator, word = FORMATS[target]

    def first(w: str) -> str:  # normalizeFirstWord
        return _lower(w) if target == "LOWER_CAMEL" else word(w)

    out: list[str] = []
    i, j = 0, -1
    while True:
        j = next((k for k in range(j + 1, len(s)) if boundary(s[k])), -1)
        if j == -1:
            break
        if i == 0:
            out = [first(s[i:j])]
        else:
            out.append(word(s[i:j]))
        out.append(separator)
        i = j + len(own_separator)
    if i == 0:
        return first(s)
    out.append(word(s[i:]))
    return "".join(out)


class ChangeTopicCase(Transform):
    """See the module docstring: a router (the topic alone decides the new topic)."""

    options: ClassVar[frozenset[str]] = frozenset({"from", "to"})
    reads: ClassVar[frozenset[str]] = frozenset()
    routes: ClassVar[bool] = True

    def __init__(self, opts: Options, part: str = "value") -> None:
        super().__init__(opts, part)
        self.source = self._format(opts, "from")
        self.target = self._format(opts, "to")

    @staticmethod
    def _format(opts: Options, name: str) -> str:
        value = opts.text(name, required=True)
        if value is None:
            return "LOWER_CAMEL"
        if value not in FORMATS:
            opts.problem(
                name,
                f"'{value}' is not a valid value for CaseFormat. Valid values are "
                f"{', '.join(FORMATS)}.",
            )
            return "LOWER_CAMEL"
        return value

    def apply(self, records: Records) -> Outcome:
        def route(topic: str | None) -> str | None:
            return None if topic is None else convert(self.source, self.target, topic)

        return Outcome(records.replace(topic=per_topic(records.topic, route)))
