"""Per-user directories: a cache that makes a cold CLI start fast, and where running
servers say how to reach them. Both are owner-only (0700) and used only when owned by
this user, so another account cannot plant a file this process trusts."""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import sys
from typing import Any


def _private_dir(path: str) -> str | None:
    """``path`` created 0700, or None when it cannot be made or is not this user's alone."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.stat(path)
    except OSError:
        return None
    if st.st_uid != os.getuid() or st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        try:
            if st.st_uid == os.getuid():
                os.chmod(path, 0o700)
                return path
        except OSError:
            pass
        return None
    return path


def cache_dir() -> str | None:
    """``$XDG_CACHE_HOME/sparkpipes`` (else ``~/.cache/sparkpipes``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return _private_dir(os.path.join(base, "sparkpipes"))


def servers_dir() -> str | None:
    """Where ``sparkpipes serve`` leaves its discovery files: ``$XDG_RUNTIME_DIR`` (a
    per-user tmpfs, emptied at logout) when set, else the cache directory."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime):
        made = _private_dir(os.path.join(runtime, "sparkpipes", "servers"))
        if made:
            return made
    base = cache_dir()
    return _private_dir(os.path.join(base, "servers")) if base else None


def owned_file(path: str) -> bool:
    """Whether ``path`` is a regular file of this user that nobody else can write."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return (
        stat.S_ISREG(st.st_mode)
        and st.st_uid == os.getuid()
        and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    )


def cached_lark(grammar: str, **options: Any):
    """``Lark(grammar, **options)`` with its LALR tables kept in the user's cache: building
    them costs more than the rest of a CLI start. Lark checks a cached file against the
    grammar, options and versions and rebuilds on any mismatch; the file is written under
    a temporary name and renamed, so a concurrent reader never sees half of it."""
    import lark

    where = cache_dir()
    if where is None:
        return lark.Lark(grammar, **options)
    plain = {k: v for k, v in options.items() if k != "lexer_callbacks"}
    key = f"{grammar}\0{sorted(plain.items())!r}\0{lark.__version__}\0{sys.version_info[:2]}"
    path = os.path.join(where, f"grammar-{hashlib.sha256(key.encode()).hexdigest()[:20]}.lark")
    if owned_file(path):
        return lark.Lark(grammar, cache=path, **options)
    tmp = f"{path}.{os.getpid()}.tmp"
    parser = lark.Lark(grammar, cache=tmp, **options)
    with contextlib.suppress(OSError):
        os.replace(tmp, path)
        _prune(where, "grammar-", KEEP_GRAMMARS)
    return parser


#: cached grammars kept (one per sparkpipes version in use; older ones are removed)
KEEP_GRAMMARS = 8


def _prune(where: str, prefix: str, keep: int) -> None:
    files = [e for e in os.scandir(where) if e.name.startswith(prefix) and e.is_file()]
    files.sort(key=lambda e: e.stat().st_mtime, reverse=True)
    for old in files[keep:]:
        with contextlib.suppress(OSError):
            os.remove(old.path)
