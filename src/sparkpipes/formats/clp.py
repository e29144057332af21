"""CLP's message encoding (y-scope's Compressed Log Processor), as Apache Pinot's
``CLPLogMessageDecoder`` stores it: ``MessageEncoder`` of ``com.yscope.clp:clp-ffi`` 0.4.7
(the version apache/pinot@210c2951e72 pins) with the rules it names
``com.yscope.clp.VariablesSchemaV2`` and ``com.yscope.clp.VariableEncodingMethodsV1``,
eight-byte encoded variables.

Why it is written here: clp-ffi-py (PyPI, 0.0.14) exposes only CLP's four-byte IR
stream, whose variables split differently (an integer past 32 bits, a float of more than
eight digits become dictionary variables there) and whose logtypes escape ``\\``; it
cannot give the eight-byte result Pinot stores.

What is promised, each rule from CLP's source at y-scope/clp@2b884bd6 (the submodule of
clp-ffi-java v0.4.7): ``components/core/src/ir/parsing.cpp`` (tokens, variables) and
``components/core/src/ffi/encoding_methods.inc`` (``encode_message``,
``encode_float_string``, ``encode_float_properties``, ``encode_integer_string``):

* **Tokens.** A token is a maximal run of the bytes ``+ - . 0-9 A-Z \\ _ a-z``; every
  other byte (spaces, punctuation, any byte of a multi-byte UTF-8 character) delimits.
  A token is a variable if it holds a decimal digit, or directly follows ``=`` and holds
  a letter, or is two or more hex digits (``ad``, ``ff``).
* **Variables.** A variable that is a float (an optional ``-``, digits with one ``.``
  not at the end, at least one digit, at most 16 digits) is an encoded float; else one
  that is a 64-bit integer written plainly (``0`` or an optional ``-`` and a digit 1-9,
  then digits: no ``+``, no zero padding, no ``-0``) is an encoded integer; else it is a
  dictionary variable (its bytes). The logtype holds the message with each variable
  replaced by its placeholder byte: ``0x11`` integer, ``0x12`` dictionary, ``0x13`` float.
* **Float bits.** From the most significant: 1 bit negative, 1 bit unused (0), 54 bits
  the digits without the point as an integer, 4 bits the number of digits minus 1 (leading
  zeros count: ``00.00`` has four), 4 bits the digits after the point minus 1; read as a
  signed 64-bit value.
* **Placeholders in the message.** This version does not escape: a message holding a
  byte ``0x11``, ``0x12`` or ``0x13`` cannot be encoded (:class:`Unencodable`; Pinot's
  ``IOException`` "message contains variable placeholders"). A ``\\`` is kept as is.

Pinot's Java side turns the bytes into ``String``s as ISO-8859-1 (``EncodedMessage.
getLogTypeAsString`` and ``getDictionaryVarsAsStrings``), so text other than ASCII is
stored byte by byte (``é`` as ``Ã©``): :func:`encode_text` gives those strings.
:func:`decode_message` is CLP's ``decode_message`` (Pinot's ``clpDecode``), for tests.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: the placeholder bytes of the logtype (``ir::VariablePlaceholder``)
INTEGER = 0x11
DICTIONARY = 0x12
FLOAT = 0x13

#: a token: a run of bytes that are not delimiters (``ir::is_delim``)
_TOKEN = re.compile(rb"[+\-.0-9A-Z\\_a-z]+")
_DIGIT = re.compile(rb"[0-9]")
_LETTER = re.compile(rb"[A-Za-z]")
_HEX = re.compile(rb"[0-9A-Fa-f]{2,}")
#: a representable float's shape (the count of digits is checked apart)
_FLOAT = re.compile(rb"(-?)([0-9]*)\.([0-9]+)")
#: an integer without sign, zero padding or ``-0``
_INTEGER = re.compile(rb"0|-?[1-9][0-9]*")
_PLACEHOLDERS = re.compile(rb"[\x11-\x13]")

#: at most 16 digits in an eight-byte float (``cMaxDigitsInRepresentableEightByteFloatVar``)
_MAX_FLOAT_DIGITS = 16
_DIGITS_MASK = (1 << 54) - 1
_INT64 = 1 << 63
_INT32_MAX = (1 << 31) - 1


class Unencodable(ValueError):
    """CLP cannot encode the message (it holds a placeholder byte)."""


@dataclass(frozen=True)
class EncodedMessage:
    """A message as CLP encodes it: the logtype (bytes), the dictionary variables (the
    message's bytes of each) and the encoded variables (signed 64-bit values), each in
    the order the message holds them."""

    logtype: bytes
    dictionary_vars: tuple[bytes, ...]
    encoded_vars: tuple[int, ...]


def _signed(bits: int) -> int:
    return bits - (1 << 64) if bits >= _INT64 else bits


def encode_float(token: bytes) -> int | None:
    """``encode_float_string`` (eight bytes) of ``token``; None when it is no
    representable float."""
    m = _FLOAT.fullmatch(token)
    if m is None:
        return None
    negative, whole, fraction = m.groups()
    digits = whole + fraction
    if len(digits) > _MAX_FLOAT_DIGITS:  # (CLP: longer than 16 digits and the point)
        return None
    bits = 1 if negative else 0
    bits = (bits << 55) | (int(digits) & _DIGITS_MASK)
    bits = (bits << 4) | ((len(digits) - 1) & 0x0F)
    bits = (bits << 4) | ((len(fraction) - 1) & 0x0F)
    return _signed(bits)


def encode_integer(token: bytes) -> int | None:
    """``encode_integer_string`` (eight bytes) of ``token``; None when it is no plainly
    written 64-bit integer."""
    if _INTEGER.fullmatch(token) is None:
        return None
    value = int(token)
    return value if -_INT64 <= value < _INT64 else None


def variables(message: bytes) -> list[tuple[int, int]]:
    """The bounds (begin, end) of each variable of ``message``, in order
    (``ir::get_bounds_of_next_var``)."""
    found = []
    for m in _TOKEN.finditer(message):
        token = m.group()
        begin = m.start()
        if (
            _DIGIT.search(token)
            or (begin > 0 and message[begin - 1] == 0x3D and _LETTER.search(token))  # '='
            or _HEX.fullmatch(token)
        ):
            found.append((begin, m.end()))
    return found


def encode_message(message: bytes) -> EncodedMessage:
    """``ffi::encode_message`` with eight-byte variables: raises :class:`Unencodable`
    for a message holding a placeholder byte (or too long for its bounds)."""
    if _PLACEHOLDERS.search(message):
        raise Unencodable("message contains variable placeholders")
    logtype = bytearray()
    dictionary: list[bytes] = []
    encoded: list[int] = []
    last = 0
    for begin, end in variables(message):
        if end > _INT32_MAX:
            raise Unencodable("message too long to encode")
        logtype += message[last:begin]
        last = end
        token = message[begin:end]
        value = encode_float(token)
        if value is not None:
            logtype.append(FLOAT)
            encoded.append(value)
            continue
        value = encode_integer(token)
        if value is not None:
            logtype.append(INTEGER)
            encoded.append(value)
            continue
        logtype.append(DICTIONARY)
        dictionary.append(token)
    logtype += message[last:]
    return EncodedMessage(bytes(logtype), tuple(dictionary), tuple(encoded))


_SURROGATE = re.compile("[\ud800-\udfff]")


def java_utf8(text: str) -> bytes:
    """Java's ``String.getBytes(UTF_8)``: an unpaired surrogate becomes ``?``."""
    return _SURROGATE.sub("?", text).encode("utf-8")


def encode_text(text: str) -> tuple[str, list[str] | None, list[int] | None]:
    """What Pinot's ``CLPLogRecordExtractor`` gets for ``text``: the logtype and the
    dictionary variables as ISO-8859-1 strings of their bytes, the encoded variables;
    no dictionary (or no encoded) variables is None, as ``EncodedMessage`` gives
    null. Raises :class:`Unencodable` as :func:`encode_message`."""
    encoded = encode_message(java_utf8(text))
    dictionary = [v.decode("latin-1") for v in encoded.dictionary_vars]
    return (
        encoded.logtype.decode("latin-1"),
        dictionary or None,
        list(encoded.encoded_vars) or None,
    )


def decode_float(value: int) -> bytes:
    """``decode_float_var`` (eight bytes): the float's text."""
    bits = value & ((1 << 64) - 1)
    point = (bits & 0x0F) + 1
    count = ((bits >> 4) & 0x0F) + 1
    digits = (bits >> 8) & _DIGITS_MASK
    if digits > 9_999_999_999_999_999 or count < point or len(str(digits)) > count:
        raise ValueError("corrupt encoded float")
    text = str(digits).rjust(count, "0")
    sign = "-" if bits >> 63 else ""
    return f"{sign}{text[: count - point]}.{text[count - point :]}".encode()


def decode_message(
    logtype: bytes, dictionary_vars: list[bytes] | tuple[bytes, ...], encoded_vars: list[int]
) -> bytes:
    """``ffi::decode_message``: the message ``logtype`` and its variables encode (what
    Pinot's ``clpDecode`` answers, as bytes). Raises ValueError where CLP throws (fewer
    variables than placeholders, a corrupt float)."""
    out = bytearray()
    dictionary = iter(dictionary_vars)
    encoded = iter(encoded_vars)
    for byte in logtype:
        if byte == DICTIONARY:
            value = next(dictionary, None)
            if value is None:
                raise ValueError("fewer dictionary variables than placeholders in the logtype")
            out += value
        elif byte in (INTEGER, FLOAT):
            number = next(encoded, None)
            if number is None:
                raise ValueError("fewer encoded variables than placeholders in the logtype")
            out += decode_float(number) if byte == FLOAT else str(number).encode()
        else:
            out.append(byte)
    return bytes(out)
