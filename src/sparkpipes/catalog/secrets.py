"""Credentials at rest: encrypted in the catalog with a key the user controls.

The key is ``$SPARKPIPES_SECRET_KEY`` (a Fernet key, or any passphrase, which is
stretched to one) — the choice for a catalog several engines share — or else a key file
created owner-only (0600) in the warehouse root, never inside a table directory. Values
are stored as ``fernet:<token>`` (AES-128-CBC with HMAC-SHA256, from ``cryptography``),
for SQLite and PostgreSQL catalogs alike. A value written by an older sparkpipes in
clear text is still read, and sealed when the catalog opens.
"""

from __future__ import annotations

import base64
import hashlib
import os

from sparkpipes.errors import CatalogError

PREFIX = "fernet:"
ENV = "SPARKPIPES_SECRET_KEY"
KEY_FILE = "secret.key"


class SecretBox:
    """Seals and opens credential blobs with one key."""

    def __init__(self, key: bytes) -> None:
        from cryptography.fernet import Fernet

        self._fernet = Fernet(key)

    @classmethod
    def for_warehouse(cls, warehouse: str) -> SecretBox:
        """The key from the environment, else the warehouse's key file (made if absent)."""
        given = os.environ.get(ENV)
        if given:
            return cls(as_key(given))
        path = os.path.join(warehouse, KEY_FILE)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            with open(path, "rb") as f:
                return cls(f.read().strip())
        from cryptography.fernet import Fernet

        key = Fernet.generate_key()
        with os.fdopen(fd, "wb") as f:
            f.write(key)
        return cls(key)

    def seal(self, clear: str) -> str:
        return PREFIX + self._fernet.encrypt(clear.encode()).decode()

    def open(self, stored: str) -> str:
        """The clear text of a stored value (clear-text values of old catalogs pass)."""
        if not stored.startswith(PREFIX):
            return stored
        from cryptography.fernet import InvalidToken

        try:
            return self._fernet.decrypt(stored[len(PREFIX) :].encode()).decode()
        except InvalidToken:
            raise CatalogError(
                f"the catalog's credentials were sealed with another key: set {ENV} to the "
                f"key they were written with (or restore the warehouse's {KEY_FILE})"
            ) from None


def sealed(stored: str) -> bool:
    return stored.startswith(PREFIX)


def as_key(given: str) -> bytes:
    """A Fernet key as given, or one derived from a passphrase."""
    raw = given.strip().encode()
    try:
        if len(base64.urlsafe_b64decode(raw)) == 32:
            return raw
    except ValueError:
        pass
    return base64.urlsafe_b64encode(hashlib.pbkdf2_hmac("sha256", raw, b"sparkpipes", 200_000))
