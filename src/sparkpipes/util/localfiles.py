"""Which options of a config make the server read a file of its own disk.

A user who may create a pipeline, a Pinot table or a connector may not thereby read the
server's files: a Kafka client opens ``ssl.ca.location``, a decoder its schema file, a
stream plugin whatever path its options give. Reading them needs ``FILE READ``, as
``LOAD DATA FS`` does. The front ends ask :func:`local_file_keys` for the options of a
config that name such a file, whatever the option is called: a plugin's options are its
own, so a value that reads as a local path counts as one too (a false alarm costs a
clear refusal naming the option; a miss would be a file oracle).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote_plus

#: option names that name a file whatever the value looks like (libpq's ``sslkey``,
#: ``sslcert``, ``sslrootcert``, ``sslcrl`` too: it opens them relative to its directory;
#: the Java JDBC drivers' ``…KeyStoreUrl`` and MariaDB's ``serverSslCert``)
_FILE_KEY = re.compile(
    r"(?:[._-]|^)(?:location|path|file|filename|dir|directory|certs?|certfile|keyfile|"
    r"keystore|truststore|keytab|cafile|capath|ca_certs|socket)$|[a-z](?:File|Path|Location|Dir)$"
    r"|^ssl(?:key|cert|rootcert|crl|crldir)$|keystoreurl$|^serversslcert$",
)
#: a value that is a path of the local disk: absolute, home, relative, a file: URL, a unix
#: socket, or a SQLite database
_PATH = re.compile(
    r"\s*(?:/|~|\.\.?/|file:|(?:[a-z]+\+)?unix:|(?:jdbc:)?sqlite:|[A-Za-z]:[\\/])",
    re.IGNORECASE,
)
#: a value may list several (``default,/x/evil.so``): each element is judged
_ELEMENTS = re.compile(r"[,;\s]+")
#: a URL's query parameters (``rediss://h?ssl_ca_certs=x``), read percent-decoded: a
#: parameter named like a file (``ssl_certfile``, ``ssl_ca_path``) or valued like a path
#: names one, relative or not (``..%2F..%2Fetc%2Fshadow``)
_PARAM = re.compile(r"[?&;]([^=&;#?]+)=([^&;#]*)")


def as_text(value: Any) -> str | None:
    """An option's value as the clients take it: text as is, a number or a boolean as its
    text (``12345`` opens the file ``12345``), anything else None."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    return None


def names_local_file(key: str, value: Any) -> bool:
    """Whether option ``key`` = ``value`` has the server open a file of its disk (the value
    judged as the text the client gets: :func:`as_text`)."""
    value = as_text(value)
    if value is None or not value.strip():
        return False
    return bool(
        _FILE_KEY.search(key)
        or _FILE_KEY.search(key.lower())
        or any(_PATH.match(part) for part in _ELEMENTS.split(value))
        or any(_param_names_file(*m.groups()) for m in _PARAM.finditer(value))
    )


def _param_names_file(name: str, value: str) -> bool:
    name, value = unquote_plus(name).strip(), unquote_plus(value).strip()
    if not value:
        return False
    return bool(
        _FILE_KEY.search(name.lower().replace("-", "_"))
        or any(_PATH.match(part) for part in _ELEMENTS.split(value))
    )


def local_file_keys(options: Mapping[str, Any]) -> list[str]:
    """The keys of ``options`` (sorted) that name a file of the server's disk."""
    return sorted(k for k, v in options.items() if isinstance(k, str) and names_local_file(k, v))
