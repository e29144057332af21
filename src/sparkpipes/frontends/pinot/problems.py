"""Every problem of a Pinot schema or table config at once, each at its JSON path, and the
keys accepted without effect (``unrecognizedProperties``).

A user with a config of twelve mistakes should not need twelve runs to find them: checks
record what they find in a :class:`Problems` and carry on with a stand-in value, and the
caller raises one :class:`PinotConfigError` at the end, its first line a summary.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sparkpipes.errors import ConfigError
from sparkpipes.frontends.pinot import keys

T = TypeVar("T")


class PinotConfigError(ConfigError):
    """All problems of a schema and table config; ``problems`` holds (document, path,
    message) for each."""

    def __init__(self, message: str, problems: list[tuple[str, str, str]]) -> None:
        super().__init__(message)
        self.problems = problems


@dataclass
class Problems:
    """What checking one document found: its problems, and its accepted keys that change
    nothing here (path → value as given)."""

    doc: str  # "schema", "table config"
    errors: list[tuple[str, str]] = field(default_factory=list)
    unrecognized: dict[str, Any] = field(default_factory=dict)

    def add(self, path: str, message: str) -> None:
        if (path, message) not in self.errors:
            self.errors.append((path, message))

    @contextmanager
    def at(self, path: str) -> Iterator[None]:
        """Record a ConfigError raised inside as a problem at ``path`` and go on."""
        try:
            yield
        except PinotConfigError as e:
            for _doc, p, m in e.problems:
                self.add(p, m)
        except ConfigError as e:
            self.add(path, e.message)

    def sort(
        self,
        obj: Mapping[str, Any],
        used: tuple[str, ...] | list[str],
        section: str,
        where: str,
        *,
        skip: tuple[str, ...] = (),
    ) -> None:
        """Sort the keys of ``obj`` (at ``where``; ``section`` names it in
        :mod:`~sparkpipes.frontends.pinot.keys`): a key in ``used`` is read by the caller,
        one of :data:`keys.REFUSED` is a problem, any other is accepted and reported.
        Keys starting with one of ``skip`` are the caller's to sort."""
        for key, value in obj.items():
            if key in used or (skip and key.startswith(skip)):
                continue
            name = f"{section}.{key}" if section else key
            path = f"{where}.{key}" if where else key
            why = keys.refusal(name, value)
            if why is not None:
                self.add(path, why)
            else:
                self.unrecognized[path] = value


def line(doc: str, path: str, message: str) -> str:
    """One problem as shown: the document, the JSON path (unless the message starts with
    it), the message."""
    if not path or message.startswith(path):
        return f"{doc}: {message}"
    return f"{doc}: {path}: {message}"


def raise_all(*found: Problems, what: str) -> None:
    """One PinotConfigError for every problem of ``found`` (none: return)."""
    problems = [(p.doc, path, msg) for p in found for path, msg in p.errors]
    if not problems:
        return
    lines = [line(*p) for p in problems]
    if len(lines) == 1:
        raise PinotConfigError(lines[0], problems)
    n = len(lines)
    raise PinotConfigError(
        f"{n} problems in {what}:\n" + "\n".join(f"  - {ln}" for ln in lines), problems
    )


def pointer(path: str) -> str:
    """A dotted path as the JSON pointer Pinot's controller names an unrecognized property
    by (``tableIndexConfig.jsonIndexConfigs`` → ``/tableIndexConfig/jsonIndexConfigs``);
    a streamConfigs key keeps its dots, being one key."""
    for head in ("tableIndexConfig.streamConfigs.", "streamConfigMaps["):
        i = path.find(head)
        j = path.find(".", i + len(head)) if head.endswith("[") else i + len(head) - 1
        if i >= 0 and j > 0:
            return _plain(path[:j]) + "/" + path[j + 1 :]
    return _plain(path)


def _plain(path: str) -> str:
    return "/" + path.replace("[", ".").replace("]", "").replace(".", "/")


def collecting(
    load: Callable[[Mapping[str, Any], str, Problems], T],
    d: Mapping[str, Any],
    where: str,
    found: Problems | None,
) -> T:
    """``load(d, where, found)``, which adds its problems to ``found`` and goes on with
    stand-ins (so a file's problems are all found at once); without ``found``, the first
    problem raises instead."""
    own = found is None
    found = found if found is not None else Problems("table config")
    before = len(found.errors)
    out = load(d, where, found)
    if own and len(found.errors) > before:
        raise ConfigError(found.errors[before][1])
    return out
