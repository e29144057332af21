"""CLP's eight-byte message encoding (``formats.clp``) against the cases of CLP's and
Pinot's own tests. The expected logtypes and variables are worked out by hand from CLP's
rules (``ir/parsing.cpp`` and ``ffi/encoding_methods.inc`` at y-scope/clp@2b884bd6, the
submodule of clp-ffi-java v0.4.7 that Pinot pins), since those tests only check that a
message decodes back; they were also checked against clp-ffi-py 0.0.14's four-byte IR
(the same tokens, constants and kinds of variable wherever a value fits four bytes)."""

from __future__ import annotations

import pytest

from sparkpipes.formats import clp

#: the placeholders: integer, dictionary, float
N, D, F = "\x11", "\x12", "\x13"


def _float(negative: bool, digits: int, count: int, after_point: int) -> int:
    """An eight-byte encoded float from its properties, as ``encode_float_properties``
    lays its bits out (sign, unused, 54 bits of digits, count - 1, point - 1)."""
    bits = (int(negative) << 63) | (digits << 8) | ((count - 1) << 4) | (after_point - 1)
    return bits - (1 << 64) if negative else bits


#: message → (logtype, dictionary variables, encoded variables)
VECTORS = {
    # apache/pinot@210c2951e72:pinot-plugins/pinot-input-format/pinot-clp-log/src/test/
    # java/org/apache/pinot/plugin/inputformat/clplog/CLPLogRecordExtractorTest.java
    # (MESSAGE_1_FIELD_VALUE; also ClpTransformFunctionsTest.TEST_MESSAGE)
    "Started job_123 on node-987: 4 cores, 8 threads and 51.4% memory used.": (
        f"Started {D} on {D}: {N} cores, {N} threads and {F}% memory used.",
        ["job_123", "node-987"],
        [4, 8, _float(False, 514, 3, 1)],
    ),
    # the same test's MESSAGE_2_FIELD_VALUE
    "Stopped job_123 on node-987: 3 cores, 6 threads and 22.0% memory used.": (
        f"Stopped {D} on {D}: {N} cores, {N} threads and {F}% memory used.",
        ["job_123", "node-987"],
        [3, 6, _float(False, 220, 3, 1)],
    ),
    # y-scope/clp@2b884bd6:components/core/tests/test-encoding_methods.cpp
    # ("wildcard_query_matches_any_encoded_var"; clp-ffi-java v0.4.7 EncodingTests.java)
    "Static text, dictVar1, 123, 456.7, dictVar2, 987, 654.3": (
        f"Static text, {D}, {N}, {F}, {D}, {N}, {F}",
        ["dictVar1", "dictVar2"],
        [123, _float(False, 4567, 4, 1), 987, _float(False, 6543, 4, 1)],
    ),
    # test-encoding_methods.cpp, "Encoding messages": every variable kind, INT64_MAX,
    # a float of 15 digits (a dictionary variable in four bytes, encoded in eight)
    (
        "here is a string with a small int 4938 and a medium int 2147483647 and a very "
        "large int 9223372036854775807 and a small float 0.1 and a medium float -25.519686 "
        "and a weird float -25.5196868642755 and a string with numbers -00.00 and another "
        "string with numbers bin/python2.7.3"
    ): (
        f"here is a string with a small int {N} and a medium int {N} and a very large int "
        f"{N} and a small float {F} and a medium float {F} and a weird float {F} and a "
        f"string with numbers {F} and another string with numbers bin/{D}",
        ["python2.7.3"],
        [
            4938,
            2147483647,
            9223372036854775807,
            _float(False, 1, 2, 1),
            _float(True, 25519686, 8, 6),
            _float(True, 255196868642755, 15, 13),
            _float(True, 0, 4, 2),
        ],
    ),
    # y-scope/clp@2b884bd6:components/core/tests/test-ir_parsing.cpp: '=' then a letter,
    # a float, '+394' (no integer: its sign), '%x' (no variable)
    "~=x!abc123;1.2%x:+394/-": (f"~={D}!{D};{F}%x:{D}/-", ["x", "abc123", "+394"], [3088]),
    # the same test: hex runs of two or more; '0d' is zero-padded, no integer
    " ad ff 95 24 0d ff ": (f" {D} {D} {N} {N} {D} {D} ", ["ad", "ff", "0d", "ff"], [95, 24]),
    # Pinot's log lines (apache/pinot@210c2951e72:pinot-integration-tests/src/test/
    # resources/clpEncodingITData.tar.gz, CLPEncodingRealtimeTest's data): '06' is
    # zero-padded, so a dictionary variable
    "17/06/08 19:01:00 INFO executor.Executor: Starting executor ID 5 on host mesos-master-1": (
        f"{N}/{D}/{D} {N}:{D}:{D} INFO executor.Executor: Starting executor ID {N} on host {D}",
        ["06", "08", "01", "00", "mesos-master-1"],
        [17, 19, 5],
    ),
}


@pytest.mark.parametrize("message", sorted(VECTORS))
def test_vectors(message):
    logtype, dictionary, encoded = VECTORS[message]
    got = clp.encode_message(message.encode())
    assert got.logtype == logtype.encode()
    assert list(got.dictionary_vars) == [v.encode() for v in dictionary]
    assert list(got.encoded_vars) == encoded
    # CLP's decode_message gives the message back (what Pinot's tests check)
    assert clp.decode_message(got.logtype, got.dictionary_vars, encoded) == message.encode()


def test_the_float_bit_layout():
    # 51.4: digits 514, 3 digits, 1 after the point → 514 << 8 | 2 << 4 | 0
    assert clp.encode_float(b"51.4") == 131616
    # sign in the top bit; the bit under it unused
    assert clp.encode_float(b"-1.0") == -(1 << 63) + (10 << 8) + (1 << 4)
    # 16 digits is the most (test-encoding_methods.cpp's representable range) …
    for text in (b"999999999999999.9", b"-999999999999999.9", b".9999999999999999"):
        assert clp.decode_float(clp.encode_float(text)) == text
    assert clp.decode_float(clp.encode_float(b"-.9999999999999999")) == b"-.9999999999999999"
    # … 17 is a dictionary variable
    assert clp.encode_float(b"9999999999999999.9") is None
    assert clp.encode_float(b"0.0") == _float(False, 0, 2, 1)


#: test-encoding_methods.cpp, "Test non-floats"
NOT_FLOATS = ["", "a", "-", "+", "-a", "+a", "--", "++", ".", "1.", " 1.0", "1.0 ", "- 1.0"]
NOT_FLOATS += ["+1.0", "1.0f", "1.0F", "1.0l", "1.0L", "1.0.0"]


@pytest.mark.parametrize("text", NOT_FLOATS)
def test_not_floats(text):
    assert clp.encode_float(text.encode()) is None


def test_integers():
    # test-encoding_methods.cpp, "Encoding integers" (eight bytes)
    for text in ("0", "-1", "1", str(-(2**63)), str(2**63 - 1)):
        assert clp.encode_integer(text.encode()) == int(text)
    not_integers = ["9223372036854775808", "-9223372036854775809", "", "a", "-", "+", "-a"]
    not_integers += ["+a", "--", "++", " 1", "- 1", "1 ", "01", "+1", "1u", "1U", "1l", "1L"]
    not_integers += ["1ll", "1LL", "0.0", "-0"]
    for text in not_integers:
        assert clp.encode_integer(text.encode()) is None, text


def test_tokens():
    # test-ir_parsing.cpp: no variable in '', '/', 'xyz', '='
    for text in (b"", b"/", b"xyz", b"="):
        assert clp.variables(text) == []
    # a placeholder byte delimits; a backslash does not
    assert clp.variables(b" text \x11 var123 ") == [(8, 14)]
    assert clp.encode_message(b"a\\b1 c").dictionary_vars == (b"a\\b1",)
    # each byte of a character past ASCII delimits (a signed char)
    assert clp.encode_message("é5 x=é1".encode()).logtype == "é\x11 x=é\x11".encode()


def test_placeholders_make_a_message_unencodable():
    # test-encoding_methods.cpp: a placeholder after, or before, the variables
    with pytest.raises(clp.Unencodable, match="placeholders"):
        clp.encode_message(b" test var123 \x11")
    with pytest.raises(clp.Unencodable):
        clp.encode_message(b" test var123 \x11 var234")


def test_text_as_pinot_gets_it():
    """``EncodedMessage``'s strings are its bytes as ISO-8859-1; none of a kind is None."""
    assert clp.encode_text("naïve 5") == ("naÃ¯ve \x11", None, [5])
    assert clp.encode_text("café") == ("\x12Ã©", ["caf"], None)  # 'caf' is hex
    assert clp.encode_text("id=é1x") == ("id=Ã©\x12", ["1x"], None)
    assert clp.encode_text("") == ("", None, None)
    # Java's getBytes(UTF_8) writes an unpaired surrogate as '?'
    assert clp.encode_text("a\ud800b 1") == ("a?b \x11", None, [1])
