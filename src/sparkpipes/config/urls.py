"""Passwords inside URLs: found, taken out as secrets, and put back only where a client is
built.

A user may write a password into a URL-valued option: ``http://user:pass@registry:8081``,
``jdbc:mysql://db/app?user=u&password=p``, a Kafka location ``user:pass@host:9092/topic``.
When a spec is built (:mod:`sparkpipes.config.spec`) every such password is taken out of
the option, which keeps the URL with ``<redacted>`` in the password's place (what is stored
in clear, shown and logged), and kept as a :class:`Secret` among the component's
credentials under ``url:<option>`` (sealed with the other credentials). A client's
constructor asks :func:`restore` (or :func:`login`) for what its client takes.

What counts as a password: the part after the first ``:`` of a URL's user info
(``scheme://user:password@host``; the last ``@`` of the authority ends it, so a password
may hold ``@``) and the value of a ``password`` query parameter. Host lists without a
scheme (Kafka's ``host:port,host:port``) have user info only where :func:`spans` is told
they are host lists (``bare``): elsewhere ``a:b@c`` is not read as a URL.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from sparkpipes.config.core import REDACTED, Secret
from sparkpipes.errors import ConfigError

#: the credential key prefix of a URL option's password: ``url:<option>``
URL_SECRET = "url:"
#: the location's own key among a source's URL options
LOCATION = "location"

_SCHEME = re.compile(r"\s*[A-Za-z][A-Za-z0-9+.\-]*(?::[A-Za-z][A-Za-z0-9+.\-]*)*://")
_SCHEME_IN = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*(?::[A-Za-z][A-Za-z0-9+.\-]*)*://")
_HOST_LIST_IN = re.compile(
    r'"([\w.]*(?:bootstrap\.servers|broker\.list|ddlEndpoint|clientEndpoint))"\s*:\s*"([^"]*)"'
)
_URL_END = re.compile(r"[\s\"'`]")
#: query parameters that carry a password (the login's) or another secret (a token, a
#: signature, a key): each is sealed; only the password is the login's. A name is read
#: percent-decoded, lower-cased, ``-`` as ``_``: one of :data:`TOKEN_NAMES`, or holding one
#: of :data:`TOKEN_WORDS` (sealing a harmless parameter costs only its display)
PASSWORD_PARAMS = ("password", "passwd", "pwd")
TOKEN_NAMES = frozenset({"sig", "key", "code", "auth", "secret", "token", "pass", "pw", "sas"})
TOKEN_WORDS = (
    "token",
    "secret",
    "password",
    "passwd",
    "signature",
    "apikey",
    "api_key",
    "access_key",
    "accesskey",
    "private_key",
    "privatekey",
    "credential",
    "session_key",
    "auth_key",
    "client_key",
    "sharedkey",
    "shared_key",
    "passphrase",
    "authorization",
)
_PARAM = re.compile(r"(?:^|[?&;])([^=&;#?]+)=([^&;#]*)")
#: the comma before the next URL of a list
_NEXT_URL = re.compile(r",\s*(?=[A-Za-z][A-Za-z0-9+.\-]*://)")
#: a sealed value holding a URL's password and its tokens (see :func:`split`)
_PACKED = "\x00"


def secret_key(option: str) -> str:
    """The credential key that holds the password of URL option ``option``."""
    return URL_SECRET + option


def option_of(key: str) -> str | None:
    """The URL option a credential key holds the password of; None for other keys."""
    return key[len(URL_SECRET) :] if key.startswith(URL_SECRET) else None


def is_host_list(option: str) -> bool:
    """Options whose values are ``[user:pass@]host:port[,…]`` without a scheme."""
    return option.endswith(("bootstrap.servers", "broker.list", "ddlEndpoint", "clientEndpoint"))


def spans(text: str, *, bare: bool = False) -> list[tuple[int, int]]:
    """Where the secrets of ``text`` are (``(start, end)``, empty ones left out)."""
    return [(start, end) for start, end, _ in _spans(text, bare=bare)]


def _spans(text: str, *, bare: bool = False) -> list[tuple[int, int, bool]]:
    """:func:`spans` in order, each marked whether it is the login's password (user info,
    ``password=``) rather than a token. A list of URLs (``http://a,http://u:p@b``, as a
    schema registry's ``url`` takes) is read URL by URL."""
    if _SCHEME.match(text) is not None and _NEXT_URL.search(text):
        out: list[tuple[int, int, bool]] = []
        starts = [0, *(m.end() for m in _NEXT_URL.finditer(text))]
        ends = [m.start() for m in _NEXT_URL.finditer(text)] + [len(text)]
        for start, end in zip(starts, ends, strict=True):
            out += [(start + a, start + b, pw) for a, b, pw in _one(text[start:end], bare)]
        return out
    return _one(text, bare)


def _one(text: str, bare: bool) -> list[tuple[int, int, bool]]:
    m = _SCHEME.match(text)
    out: list[tuple[int, int, bool]] = []
    if m is not None:
        start = m.end()
        end = _authority_end(text, start)
        out += [(s, e, True) for s, e in _userinfo(text, start, end)]
        query = text.find("?", end)
        if query >= 0:
            stop = text.find("#", query)
            stop = len(text) if stop < 0 else stop
            for p in _PARAM.finditer(text, query, stop):
                kind = _param_kind(p.group(1))
                if kind is not None and p.end(2) > p.start(2):
                    out.append((p.start(2), p.end(2), kind))
    elif bare:
        end = _authority_end(text, 0)
        start = 0
        for entry in text[:end].split(","):
            out += [(s, e, True) for s, e in _userinfo(text, start, start + len(entry))]
            start += len(entry) + 1
    return out


def spans_in(text: str, *, bare: bool = False) -> list[tuple[int, int]]:
    """The passwords of every URL anywhere in ``text`` (a JSON document, a statement's
    string), each URL ending at a quote or white space, and of the host lists of JSON
    keys that name one; with ``bare``, ``text`` is also read as a host list from its
    start."""
    out = spans(text, bare=True) if bare else []
    for m in _SCHEME_IN.finditer(text):
        end = _URL_END.search(text, m.end())
        url = text[m.start() : end.start() if end else len(text)]
        out += [(m.start() + s, m.start() + e) for s, e in spans(url)]
    for m in _HOST_LIST_IN.finditer(text):  # "bootstrap.servers": "user:pass@host" in JSON
        out += [(m.start(2) + s, m.start(2) + e) for s, e in spans(m.group(2), bare=True)]
    return sorted(set(out))


def _param_kind(name: str) -> bool | None:
    """Whether query parameter ``name`` is the login's password (True), another secret
    (False), or no secret (None)."""
    n = unquote(name).strip().lower().replace("-", "_")
    if n in PASSWORD_PARAMS:
        return True
    if n in TOKEN_NAMES or any(w in n for w in TOKEN_WORDS):
        return False
    return None


def _authority_end(text: str, start: int) -> int:
    ends = [i for i in (text.find(c, start) for c in "/?#") if i >= 0]
    return min(ends) if ends else len(text)


def _userinfo(text: str, start: int, end: int) -> list[tuple[int, int]]:
    at = text.rfind("@", start, end)
    colon = text.find(":", start, at) if at >= 0 else -1
    return [(colon + 1, at)] if 0 <= colon < at - 1 else []


#: where a password hides in a JDBC URL of a syntax that is not a URL's: SQL Server's
#: ``;password=…`` properties, Oracle's ``thin:user/password@``. Such URLs are refused
#: (the password belongs in ``connection.password``), but are shown, redacted, in the answer
_DRIVER_PASSWORDS = (
    re.compile(r"(?i)(;\s*(?:password|pwd)\s*=\s*)(\{[^}]*\}?|[^;]+)"),
    re.compile(r"(?i)(jdbc:oracle:[a-z0-9]+:[^/@:\s]*/)([^@\s]+)(?=@)"),
)


def redact(text: str, *, bare: bool = False) -> str:
    """``text`` with every password in it replaced by ``<redacted>``: what may be shown."""
    for start, end in reversed(spans(text, bare=bare)):
        text = text[:start] + REDACTED + text[end:]
    for pattern in _DRIVER_PASSWORDS:
        text = pattern.sub(lambda m: m.group(1) + REDACTED, text)
    return text


def split(text: str, *, bare: bool = False, what: str = "the URL") -> tuple[str, str | None]:
    """``(text redacted, its secret)``; nothing to seal (or every secret already shown
    ``<redacted>``): ``(text, None)``. The secret is the password when the URL has no
    tokens; with tokens (``sig=``, ``X-Amz-Security-Token=`` …) it packs the password and
    the tokens in order, for :func:`restore` (and :func:`password_of`). Two different
    passwords in one URL, or a secret in clear beside one shown ``<redacted>``, are a
    ConfigError naming ``what`` (never the secrets)."""
    found = [(text[s:e], pw) for s, e, pw in _spans(text, bare=bare)]
    fresh = [v for v, _ in found if v != REDACTED]
    if not fresh:
        return text, None
    if len(fresh) < len(found):
        raise ConfigError(
            f"{what} shows a secret as {REDACTED} beside one in clear: give them all, or "
            "the URL as it was shown"
        )
    passwords = {v for v, pw in found if pw}
    if len(passwords) > 1:
        raise ConfigError(f"{what} holds two different passwords: give one")
    tokens = [v for v, pw in found if not pw]
    password = passwords.pop() if passwords else None
    if not tokens:
        return redact(text, bare=bare), password
    return redact(text, bare=bare), _PACKED + json.dumps({"password": password, "tokens": tokens})


def password_of(secret: str | Secret | None) -> str | None:
    """The login's password among a URL's sealed secret (:func:`split`)."""
    value = secret.reveal() if isinstance(secret, Secret) else secret
    if value is None or not value.startswith(_PACKED):
        return value
    return json.loads(value[len(_PACKED) :])["password"]


def redact_all(doc: Any, key: str = "") -> Any:
    """A JSON document with the password of every URL in it (host lists by their key)
    redacted: a stored config shown back."""
    if isinstance(doc, Mapping):
        return {k: redact_all(v, str(k)) for k, v in doc.items()}
    if isinstance(doc, list):
        return [redact_all(v, key) for v in doc]
    if isinstance(doc, str):
        return redact(doc, bare=is_host_list(key))
    return doc


def is_redacted(text: str, *, bare: bool = False) -> bool:
    """Whether ``text`` shows a password as ``<redacted>`` (SHOW CREATE PIPELINE's form)."""
    return any(text[s:e] == REDACTED for s, e in spans(text, bare=bare))


def restore(text: str, password: str | Secret | None, *, bare: bool = False) -> str:
    """``text`` with each ``<redacted>`` secret replaced by the sealed one (``password``,
    as :func:`split` made it): the URL as the user wrote it, for a client that takes the
    URL whole."""
    if password is None:
        return text
    value = password.reveal() if isinstance(password, Secret) else password
    if value.startswith(_PACKED):
        packed = json.loads(value[len(_PACKED) :])
        pw, tokens = packed["password"], list(packed["tokens"])
    else:
        pw, tokens = value, []
    found = _spans(text, bare=bare)
    wanted = sum(1 for s, e, is_pw in found if not is_pw and text[s:e] == REDACTED)
    tokens = tokens if len(tokens) == wanted else [None] * wanted  # not this URL's tokens
    for start, end, is_pw in reversed(found):
        if text[start:end] != REDACTED:
            continue
        put = pw if is_pw else tokens.pop()
        if put is not None:
            text = text[:start] + put + text[end:]
    return text


def login(text: str, password: str | Secret | None) -> tuple[str, str | None, str | None]:
    """For a client that takes the login apart from the URL (basic auth, a driver's
    ``password=``): ``(URL without user info, user, password)``, percent-decoded as a
    URL's user info is. ``text`` is the URL as stored (its password ``<redacted>``) with
    ``password`` its secret, or a URL in clear with ``password`` None. In a list of URLs
    every one loses its user info, and the first one's is the login."""
    clear = restore(text, password)
    if _SCHEME.match(clear) is None:
        return clear, None, None
    starts = [0, *(m.end() for m in _NEXT_URL.finditer(clear))]
    ends = [m.start() for m in _NEXT_URL.finditer(clear)] + [len(clear)]
    parts, user, secret = [], None, None
    for start, end in zip(starts, ends, strict=True):
        bare, u, p = _login_one(clear[start:end])
        parts.append(clear[start:end] if bare is None else bare)
        if user is None and secret is None:
            user, secret = u, p
    seps = [clear[e:s] for e, s in zip(ends, starts[1:], strict=False)]
    out = parts[0] + "".join(sep + part for sep, part in zip(seps, parts[1:], strict=True))
    return out, user, secret


def _login_one(url: str) -> tuple[str | None, str | None, str | None]:
    m = _SCHEME.match(url)
    if m is None:
        return None, None, None
    start, end = m.end(), _authority_end(url, m.end())
    at = url.rfind("@", start, end)
    if at < 0:
        return url, None, None
    user, colon, secret = url[start:at].partition(":")
    return url[:start] + url[at + 1 :], unquote(user) or None, unquote(secret) if colon else None


def in_query(text: str) -> bool:
    """Whether a password of ``text`` is a ``password=`` query parameter."""
    m = _SCHEME.match(text)
    if m is None:
        return False
    end = _authority_end(text, m.end())
    return any(s > end and pw for s, _, pw in _spans(text))


def lift(
    values: Mapping[str, Any],
    credentials: dict[str, Secret],
    *,
    what: str,
    bare: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """``values`` (a config's top-level options) with the password of every string value
    taken out into ``credentials`` (under ``url:<option>``); options in ``bare`` (and
    host lists) are read as host lists too."""
    out = dict(values)
    for key, value in values.items():
        if not isinstance(value, str):
            continue
        shown, password = split(
            value, bare=key in bare or is_host_list(key), what=f"{what} '{key}'"
        )
        if password is not None:
            out[key] = shown
            credentials[secret_key(key)] = Secret(password)
    return out


def redacted_options(values: Mapping[str, Any], *, bare: frozenset[str] = frozenset()) -> list[str]:
    """The options of ``values`` that show a password as ``<redacted>``."""
    return [
        k
        for k, v in values.items()
        if isinstance(v, str) and is_redacted(v, bare=k in bare or is_host_list(k))
    ]


def revealed(values: Mapping[str, Any], secrets: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` with each URL option whose password is in ``secrets`` (``url:<option>``,
    a Secret or the clear text) put back as the user wrote it: for a plugin that takes
    its options as given."""
    out = dict(values)
    for key, secret in secrets.items():
        option = option_of(key)
        if option is not None and isinstance(out.get(option), str):
            out[option] = restore(out[option], secret, bare=is_host_list(option))
    return out


def refuse(
    credentials: Mapping[str, Any],
    texts: Mapping[str, Any],
    why: str,
    *,
    bare: frozenset[str] = frozenset(),
) -> None:
    """A ConfigError for the first URL option (``texts``: option → its text as given)
    that holds a password, sealed (``url:<option>`` among ``credentials``) or still in
    clear: ``why`` says what to write instead. The option is shown redacted."""
    for option, text in texts.items():
        if not isinstance(text, str):
            continue
        host_list = option in bare or is_host_list(option)
        if secret_key(option) in credentials or split(text, bare=host_list)[1] is not None:
            shown = redact(text, bare=host_list)
            raise ConfigError(f"{_named(option)} '{shown}' holds a password: {why}")


def _named(option: str) -> str:
    return "the location" if option == LOCATION else f"option '{option}'"
