"""The MySQL endpoint's packet checks (``server.mysql_wire``): a packet they let through is
one mysql-mimic's own parser gets through — its reader of NUL-terminated strings never ends
on a string without its NUL, so a packet the checks missed would hang the parse, and with
it the server. Checked by parsing, in a child process with a deadline, every prefix of real
packets and a few thousand random ones; and the limits refuse what MySQL refuses."""

from __future__ import annotations

import asyncio
import json
import random
import struct
import subprocess
import sys

import pytest
from mysql_mimic.constants import DEFAULT_SERVER_CAPABILITIES
from mysql_mimic.types import Capabilities

from sparkpipes.server.mysql_wire import (
    SECURE_TRANSPORT_REQUIRED,
    GuardedStream,
    MysqlLimits,
    Refused,
    change_user_problem,
    field_list_problem,
    handshake_problem,
)

SERVER = DEFAULT_SERVER_CAPABILITIES
CLIENT = (
    Capabilities.CLIENT_PROTOCOL_41
    | Capabilities.CLIENT_SECURE_CONNECTION
    | Capabilities.CLIENT_PLUGIN_AUTH
    | Capabilities.CLIENT_CONNECT_WITH_DB
    | Capabilities.CLIENT_CONNECT_ATTRS
    | Capabilities.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA
    | Capabilities.CLIENT_LONG_PASSWORD
)


def handshake(caps: Capabilities = CLIENT, database: bytes = b"sparkpipes") -> bytes:
    """A handshake response as the mariadb client and PyMySQL send it."""
    scramble = bytes(range(20))
    out = struct.pack("<IIB", int(caps), 1 << 24, 45) + b"\0" * 23 + b"ana\0"
    out += bytes([len(scramble)]) + scramble  # one length byte, length-encoded or not
    if Capabilities.CLIENT_CONNECT_WITH_DB in caps:
        out += database + b"\0"
    if Capabilities.CLIENT_PLUGIN_AUTH in caps:
        out += b"mysql_native_password\0"
    if Capabilities.CLIENT_CONNECT_ATTRS in caps:
        attrs = b"\x0c_client_name\x07pymysql"
        out += bytes([len(attrs)]) + attrs
    return out


def change_user() -> bytes:
    tail = b"\x2d\x00mysql_native_password\0"  # character set, plugin
    return b"bo\0" + bytes([20]) + bytes(range(20)) + b"sparkpipes\0" + tail


PARSE = r"""
import json, sys
from mysql_mimic import packets
from mysql_mimic.charset import CharacterSet
from mysql_mimic.types import Capabilities
for kind, caps, hexed in json.loads(sys.stdin.read()):
    data = bytes.fromhex(hexed)
    try:
        if kind == "handshake":
            packets.parse_handshake_response(Capabilities(caps), data)
        elif kind == "change_user":
            packets.parse_com_change_user(Capabilities(caps), CharacterSet.utf8mb4, data)
        else:
            packets.parse_com_field_list(CharacterSet.utf8mb4, data)
    except Exception:
        pass  # an error is fine: it ends the connection; only a hang is not
print("done")
"""


def parse_all(cases: list[tuple[str, int, bytes]]) -> None:
    """mysql-mimic parses every case, each to an end, in a child process with a deadline."""
    payload = json.dumps([(k, c, d.hex()) for k, c, d in cases])
    try:
        out = subprocess.run(
            [sys.executable, "-c", PARSE], input=payload, capture_output=True, text=True, timeout=60
        )
    except subprocess.TimeoutExpired:
        raise AssertionError("mysql-mimic hung on a packet the checks let through") from None
    assert out.stdout.strip() == "done", out.stderr


def test_real_packets_pass_and_every_cut_that_would_hang_is_caught():
    passed = []
    for caps in (CLIENT, CLIENT & ~Capabilities.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA):
        whole = handshake(caps)
        assert handshake_problem(whole, SERVER, tls=False) is None
        for cut in range(32, len(whole)):
            if handshake_problem(whole[:cut], SERVER, tls=False) is None:
                passed.append(("handshake", int(SERVER), whole[:cut]))
    caps = Capabilities.CLIENT_SECURE_CONNECTION | Capabilities.CLIENT_PROTOCOL_41
    caps |= Capabilities.CLIENT_PLUGIN_AUTH
    assert change_user_problem(change_user(), caps) is None
    for cut in range(len(change_user())):
        if change_user_problem(change_user()[:cut], caps) is None:
            passed.append(("change_user", int(caps), change_user()[:cut]))
    assert field_list_problem(b"t\0") is None and field_list_problem(b"t") is not None
    # the cuts inside a string are refused, those between whole fields are not
    assert any(len(d) < len(handshake()) for k, _, d in passed if k == "handshake")
    parse_all(passed)


def test_random_packets_the_checks_let_through_never_hang_the_parser():
    rng = random.Random(20260125)
    cases = []
    for _ in range(3000):
        caps = Capabilities(rng.getrandbits(32))
        data = struct.pack("<I", int(caps)) + rng.randbytes(rng.randrange(28, 90))
        if rng.random() < 0.5:  # mostly printable, rarely a NUL: the strings run on
            data = data[:32] + bytes(
                rng.choice(b"abc\0" if rng.random() < 0.1 else b"abc") for _ in data[32:]
            )
        if handshake_problem(data, SERVER, tls=False) is None:
            cases.append(("handshake", int(SERVER), data))
        body = data[4:]
        if change_user_problem(body, caps) is None:
            cases.append(("change_user", int(caps), body))
        if field_list_problem(body) is None:
            cases.append(("field_list", 0, body))
    assert len(cases) > 100
    parse_all(cases)


def test_the_messages_name_the_missing_part():
    no_db = handshake()[: -len(b"sparkpipes\0mysql_native_password\0") - 21]
    assert handshake_problem(no_db, SERVER, tls=False) == (
        "the database name has no terminating NUL byte"
    )
    user = struct.pack("<IIB", int(CLIENT), 1 << 24, 45) + b"\0" * 23 + b"ana"
    assert handshake_problem(user, SERVER, tls=False) == "the user name has no terminating NUL byte"
    ssl_request = handshake()[:32]
    assert handshake_problem(ssl_request, SERVER, tls=True) is None
    assert "takes no TLS" in handshake_problem(ssl_request, SERVER, tls=False)
    assert handshake_problem(b"\0" * 10, SERVER, tls=False) == "the handshake response is too short"


@pytest.mark.parametrize(("connect", "wait"), [(0, 10), (3601, 10), (10, 0), (10, 31_536_001)])
def test_timeouts_outside_mysqls_bounds_are_refused(connect, wait):
    with pytest.raises(ValueError, match="timeout is between"):
        MysqlLimits(connect, wait)


class _Peer:
    """A stream writer as far as the endpoint asks it before sign-in: who the peer is."""

    def __init__(self, host: str) -> None:
        self.host = host

    def get_extra_info(self, name: str, default=None):
        return (self.host, 40_000) if name == "peername" else default


@pytest.mark.parametrize(
    ("host", "tls", "refused"),
    [
        ("192.0.2.7", True, True),  # another host, TLS on: TLS only
        ("2001:db8::7", True, True),
        ("127.0.0.1", True, False),  # loopback: no other host sees the traffic
        ("::1", True, False),
        ("192.0.2.7", False, False),  # a server without TLS takes what it can
    ],
)
def test_a_client_of_another_host_must_use_tls_when_the_server_has_it(host, tls, refused):
    async def first_packet():
        reader = asyncio.StreamReader()
        body = handshake()
        reader.feed_data(len(body).to_bytes(3, "little") + b"\x00" + body)
        stream = GuardedStream(
            reader, _Peer(host), limits=MysqlLimits(), capabilities=SERVER, tls=tls
        )
        return await stream.read()

    if refused:
        with pytest.raises(Refused, match="insecure transport") as e:
            asyncio.run(first_packet())
        assert e.value.code == SECURE_TRANSPORT_REQUIRED
    else:
        assert asyncio.run(first_packet()) == handshake()
