"""Regular expressions users give (a router's ``regex``, a ``topics.regex``, a shard
pattern), run with RE2, whose time is linear in the text.

Python's ``re`` backtracks: ``(a+)+b`` against a 50-character topic takes years, and it
holds the GIL meanwhile, so one such pattern in a connector's config would stop the
whole server (every request, the scheduler, the MySQL endpoint). RE2 has no
backreferences or lookarounds; a pattern that uses them is refused with RE2's reason
when the config is read. Java's and RE2's syntaxes agree on everything else Connect
configs use.
"""

from __future__ import annotations

from typing import Any

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # the reason goes in our error, not to stderr


def compile_user(pattern: str) -> Any:
    """``pattern`` compiled for RE2 (``fullmatch``, ``search``, ``sub`` as ``re``'s).

    Raises ValueError with the reason for a pattern RE2 cannot run."""
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as e:
        reason = e.args[0].decode() if e.args and isinstance(e.args[0], bytes) else str(e)
        raise ValueError(
            f"{reason} (patterns run on RE2: no backreferences or lookarounds)"
        ) from None
