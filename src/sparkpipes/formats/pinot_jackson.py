"""JSON text as Pinot's Jackson reads and writes it (apache/pinot@210c2951e72, Jackson
2.22, Guava 33.5), for what a JSON or multi-value column stores.

- **Maps are ``HashMap``s.** ``JSONRecordExtractor.convertMap`` copies each JSON object
  into ``Maps.newHashMapWithExpectedSize(size)``, so where its keys come out in iteration
  order (a multi-value column's values, an object inside an array written to a JSON
  column) the order is Java's: :func:`hash_order` reproduces it exactly
  (``String.hashCode``, the spread ``h ^ (h >>> 16)``, the table ``tableSizeFor`` makes of
  Guava's ``ceil(n / 0.75)``, resizes at 0.75 and for an overfull bin under 64). A bin of
  eight or more colliding keys in a table of 64 or more becomes a red-black tree, whose
  order is not reproduced (keys stay in insertion order within their bin).
- **Writing** (:func:`write`): ``JsonUtils.objectToString``'s compact form; a double as
  Java's ``Double.toString``, infinities as strings; strings escaped as Jackson escapes
  them (``\\u001B``: upper-case hex, nothing above U+007F escaped). ``sort=True`` is
  ``MapUtils.toString`` (``ORDER_MAP_ENTRIES_BY_KEYS``, at every depth: keys in
  ``String.compareTo`` order, UTF-16 units).
- **Reading a message** (:func:`read_message`): the first JSON value; what follows it is
  never read (the streaming parse stops at the top-level object's closing brace).
- **Reading text into a JSON column** (:func:`tree_text`): ``PinotDataType.toJson`` of a
  string is ``READER_WITH_BIG_DECIMAL.readTree(text).toString()``: the first JSON value
  of the text (the rest is not read: ``FAIL_ON_TRAILING_TOKENS`` is off), objects in
  their own key order, reals as ``BigDecimal`` with trailing zeros stripped
  (``JsonNodeFeature.STRIP_TRAILING_BIGDECIMAL_ZEROES``, on by default:
  ``10.0`` → ``1E+1``, ``1.50`` → ``1.5``, ``0.0`` → ``0``), written by
  ``BigDecimal.toString``; blank text is ``""`` (a ``MissingNode``). Text Jackson cannot
  read (``2024-01-01``: a root number must be followed by a space) is None.
"""

from __future__ import annotations

import decimal
import json
import math
import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["hash_order", "java_double", "java_hash", "read_message", "tree_text", "write"]

_MAX_CAPACITY = 1 << 30
_TREEIFY, _MIN_TREEIFY_CAPACITY = 8, 64
_WS = " \t\n\r"
#: Jackson's ``StreamReadConstraints`` defaults: digits of a whole number, nesting depth
_MAX_NUMBER_LENGTH, _MAX_DEPTH = 1000, 1000
_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n"}
_SHORT_ESCAPES |= {"\f": "\\f", "\r": "\\r"}
_TO_ESCAPE = re.compile('["\\\\\x00-\x1f]')
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?", re.ASCII)
_IDENT = {"Lu", "Ll", "Lt", "Lm", "Lo", "Nl", "Nd", "Mn", "Mc", "Pc", "Sc", "Cf"}


def java_hash(text: str) -> int:
    """``String.hashCode``: ``31·h + c`` over UTF-16 units, in Java's int arithmetic."""
    h = 0
    for unit in _utf16(text):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _utf16(text: str) -> Sequence[int]:
    data = text.encode("utf-16-be", "surrogatepass")
    return [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]


def _spread(h: int) -> int:
    u = h & 0xFFFFFFFF
    return u ^ (u >> 16)  # HashMap.hash: h ^ (h >>> 16), as an unsigned 32-bit value


def _table_size_for(cap: int) -> int:
    return 1 if cap <= 1 else min(_MAX_CAPACITY, 1 << (cap - 1).bit_length())


def _guava_capacity(expected: int) -> int:
    """Guava 33's ``Maps.capacity``: ``n + 1`` under 3, else ``ceil(n / 0.75)``."""
    return expected + 1 if expected < 3 else math.ceil(expected / 0.75)


def hash_order(keys: Iterable[str], expected: int | None = None) -> list[str]:
    """The iteration order of a ``HashMap`` made by ``Maps.newHashMapWithExpectedSize(
    expected)`` (default: the number of keys) into which ``keys`` (distinct) are put in
    order."""
    keys = list(keys)
    cap = _table_size_for(_guava_capacity(len(keys) if expected is None else expected))
    bins: list[list[tuple[int, str]]] = [[] for _ in range(cap)]
    for size, key in enumerate(keys, 1):
        h = _spread(java_hash(key))
        b = bins[h & (cap - 1)]
        b.append((h, key))
        if len(b) > _TREEIFY and cap < _MIN_TREEIFY_CAPACITY:
            bins, cap = _resized(bins, cap)  # treeifyBin resizes a small table instead
        if size > int(cap * 0.75):
            bins, cap = _resized(bins, cap)
    return [key for b in bins for _, key in b]


def _resized(bins: list[list[tuple[int, str]]], cap: int) -> tuple[list, int]:
    new = cap * 2
    out: list[list[tuple[int, str]]] = [[] for _ in range(new)]
    for b in bins:  # each bin splits in two, order kept (lo at j, hi at j + cap)
        for h, key in b:
            out[h & (new - 1)].append((h, key))
    return out, new


def java_special(value: float) -> str | None:
    """Java's text of a NaN, an infinity or a zero (the same for a ``float`` and a
    ``double``); None for any other value."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1, value) < 0 else "0.0"
    return None


def java_double(value: float) -> str:
    """Java's ``Double.toString``: ``1.0``, ``1.0E10``, ``1.0E-5``, ``NaN``,
    ``Infinity``."""
    if (special := java_special(value)) is not None:
        return special
    if 1e-3 <= abs(value) < 1e7:
        text = repr(value)
        return text if "." in text else text + ".0"
    sign, digits, exp = decimal.Decimal(repr(value)).as_tuple()
    text = "".join(map(str, digits)).rstrip("0") or "0"
    power = exp + len(digits) - 1  # type: ignore[operator]
    return f"{'-' if sign else ''}{text[0]}.{text[1:] or '0'}E{power}"


def _string(text: str) -> str:
    def escape(m: re.Match[str]) -> str:
        c = m.group()
        return _SHORT_ESCAPES.get(c) or f"\\u{ord(c):04X}"

    return '"' + _TO_ESCAPE.sub(escape, text) + '"'


def write(value: Any, *, sort: bool = False) -> str:
    """``value`` (a Java value as ``JSONRecordExtractor`` gives it: dict for a ``HashMap``,
    list, str, int, float, ``Decimal``, bool, None) as Jackson writes it; ``sort``: maps
    in key order (``MapUtils.toString``), else in ``HashMap`` order."""
    if isinstance(value, dict):
        keys = sorted(value, key=_utf16) if sort else hash_order(value)
        return "{" + ",".join(f"{_string(k)}:{write(value[k], sort=sort)}" for k in keys) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(write(v, sort=sort) for v in value) + "]"
    return _scalar(value)


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, float):
        text = java_double(value)
        return text if math.isfinite(value) else _string(text)  # WRITE_NAN_AS_STRINGS
    if isinstance(value, decimal.Decimal):
        return str(value)  # BigDecimal.toString (WRITE_BIGDECIMAL_AS_PLAIN is off)
    return str(value)


class _Real(str):
    """A JSON real as written, for :func:`tree_text` to write as a stripped BigDecimal."""


def _refuse(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _whole(text: str) -> int:
    if len(text.lstrip("-")) > _MAX_NUMBER_LENGTH:
        raise OverflowError("number longer than Jackson's maxNumberLength (1000)")
    return int(text)


_DECODER = json.JSONDecoder(parse_float=_Real, parse_int=_whole, parse_constant=_refuse)


def tree_text(text: str) -> str | None:
    """``READER_WITH_BIG_DECIMAL.readTree(text).toString()``, or None where Jackson throws
    a ``JsonParseException`` (``toJson`` then writes the text as a JSON string). Raises
    ValueError where Jackson throws another error (a whole number of more than 1000
    digits, nesting deeper than 1000), which fails the conversion; so does nesting deeper
    than Python's recursion limit allows (about 900)."""
    start = len(text) - len(text.lstrip(_WS))
    if start == len(text):
        return ""  # a MissingNode
    try:
        value, end = _DECODER.raw_decode(text, start)
    except OverflowError as e:
        raise ValueError(str(e)) from None
    except RecursionError:
        raise ValueError("JSON nested deeper than Jackson reads") from None
    except ValueError:
        return None
    rest = text[end : end + 1]
    if isinstance(value, int | _Real) and not isinstance(value, bool) and rest not in _WS:
        return None  # "Expected space separating root-level values"
    if (value is None or isinstance(value, bool)) and rest and _java_ident_part(rest):
        return None  # "Unrecognized token 'truex'"
    if _depth(value) > _MAX_DEPTH:
        raise ValueError("JSON nested deeper than Jackson's maxNestingDepth (1000)")
    return _tree(value)


def _java_ident_part(c: str) -> bool:
    """``Character.isJavaIdentifierPart`` for a character at or above ``0``, the ones
    Jackson checks after ``true``, ``false`` and ``null`` (not ``]`` or ``}``)."""
    if c < "0" or c in "]}":
        return False
    return unicodedata.category(c) in _IDENT or "\x7f" <= c <= "\x9f"


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


def _tree(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ",".join(f"{_string(k)}:{_tree(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_tree(v) for v in value) + "]"
    if isinstance(value, _Real):
        return _big_decimal(value)
    return _scalar(value)


def _big_decimal(text: str) -> str:
    """``new BigDecimal(text).stripTrailingZeros().toString()`` (zero: ``0``)."""
    d = decimal.Decimal(text)
    if d.is_zero():
        return "0"
    digits = len(d.as_tuple().digits)
    with decimal.localcontext(prec=digits + 1, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN) as ctx:
        ctx.traps[decimal.Inexact] = True  # exact: stripping zeros never rounds
        return str(d.normalize())


def read_message(raw: bytes, parse_constant: Any = _refuse) -> Any:
    """A message's first JSON value, as ``JacksonPayloadParser.parse`` reads a payload
    (``JSONMessageDecoder``'s default path): its encoding found from its first bytes (a
    UTF-8 byte order mark skipped), whitespace before it skipped, and nothing after the
    value read, so ``{"a":1} x`` (or any bytes, even not UTF-8) is the record ``{"a":1}``.
    Raises ValueError (``UnicodeDecodeError`` for bytes that are not UTF-8 within the
    value) where Jackson throws."""
    encoding = json.detect_encoding(raw)
    if encoding.startswith("utf-8"):
        text = raw.decode("utf-8", "surrogateescape")[encoding == "utf-8-sig" :]
    else:  # UTF-16 or UTF-32: the whole payload must decode
        text = raw.decode(encoding)
    start = len(text) - len(text.lstrip(_WS))
    value, end = json.JSONDecoder(parse_constant=parse_constant).raw_decode(text, start)
    bad = _NOT_UTF8.search(text, 0, end)
    if bad is not None:
        at = len(text[: bad.start()].encode("utf-8", "surrogateescape"))
        raise UnicodeDecodeError("utf-8", raw, at, at + 1, "invalid start byte")
    return value


_NOT_UTF8 = re.compile("[\udc80-\udcff]")
