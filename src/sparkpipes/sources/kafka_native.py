"""A partition reader that takes librdkafka's messages straight into Arrow buffers.

confluent-kafka's ``Consumer.consume`` builds a Python ``Message`` (with a ``bytes``
payload and a topic ``str``) for every record; at a million records that is about half
of a drain's CPU. :class:`NativeReader` drives the same librdkafka (the copy bundled
with confluent-kafka) through ``ctypes`` with the same calls confluent-kafka makes
(``rd_kafka_new``, ``rd_kafka_assign``, ``rd_kafka_consume_batch_queue``), and a small C
helper (``_fetchcopy``, built with the package) copies each fetch's payloads and offsets
into Arrow buffers and hands the messages back. Offsets, end-of-partition events and
errors are exactly those confluent-kafka would report, so the partition consumer
(``sources/kafka.py``) keeps one logic for both readers.

:func:`available` says whether this reader can run here (the helper was compiled and
librdkafka could be loaded); otherwise the consumer uses confluent-kafka's ``Consumer``.
"""

from __future__ import annotations

import ctypes
import glob
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np
import pyarrow as pa

#: payload bytes in one Arrow array at most (its offsets are int32)
MAX_BYTES = 2**31 - 1
#: set to 0 to use confluent-kafka's Consumer for every partition
ENV = "SPARKPIPES_KAFKA_NATIVE"

_RD_KAFKA_CONSUMER = 1
_CONF_OK = 0
_ERRSTR = 512
_PY_LEVELS = {0: 50, 1: 50, 2: 50, 3: 40, 4: 30, 5: 20, 6: 20, 7: 10}

_p, _i, _i32, _i64 = ctypes.c_void_p, ctypes.c_int, ctypes.c_int32, ctypes.c_int64
_sz, _ssz = ctypes.c_size_t, ctypes.c_ssize_t
_ERROR_CB = ctypes.CFUNCTYPE(None, _p, _i, ctypes.c_char_p, _p)
_LOG_CB = ctypes.CFUNCTYPE(None, _p, _i, ctypes.c_char_p, ctypes.c_char_p)


class _Message(ctypes.Structure):
    """``rd_kafka_message_t`` (rdkafka.h; public and stable)."""

    _fields_ = [
        ("err", _i),
        ("rkt", _p),
        ("partition", _i32),
        ("payload", _p),
        ("len", _sz),
        ("key", _p),
        ("key_len", _sz),
        ("offset", _i64),
        ("_private", _p),
    ]


class _TopicPartition(ctypes.Structure):
    """``rd_kafka_topic_partition_t`` (rdkafka.h; public and stable)."""

    _fields_ = [
        ("topic", ctypes.c_char_p),
        ("partition", _i32),
        ("offset", _i64),
        ("metadata", _p),
        ("metadata_size", _sz),
        ("opaque", _p),
        ("err", _i),
        ("_private", _p),
    ]


_SIGNATURES: dict[str, tuple[Any, list[Any]]] = {
    "rd_kafka_conf_new": (_p, []),
    "rd_kafka_conf_set": (_i, [_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, _sz]),
    "rd_kafka_conf_set_error_cb": (None, [_p, _ERROR_CB]),
    "rd_kafka_conf_set_log_cb": (None, [_p, _LOG_CB]),
    "rd_kafka_conf_destroy": (None, [_p]),
    "rd_kafka_new": (_p, [_i, _p, ctypes.c_char_p, _sz]),
    "rd_kafka_poll_set_consumer": (_i, [_p]),
    "rd_kafka_queue_get_consumer": (_p, [_p]),
    "rd_kafka_queue_destroy": (None, [_p]),
    "rd_kafka_query_watermark_offsets": (
        _i,
        [_p, ctypes.c_char_p, _i32, ctypes.POINTER(_i64), ctypes.POINTER(_i64), _i],
    ),
    "rd_kafka_topic_partition_list_new": (_p, [_i]),
    "rd_kafka_topic_partition_list_add": (
        ctypes.POINTER(_TopicPartition),
        [_p, ctypes.c_char_p, _i32],
    ),
    "rd_kafka_topic_partition_list_destroy": (None, [_p]),
    "rd_kafka_assign": (_i, [_p, _p]),
    "rd_kafka_consume_batch_queue": (_ssz, [_p, _i, _p, _sz]),
    "rd_kafka_consumer_poll": (ctypes.POINTER(_Message), [_p, _i]),
    "rd_kafka_message_destroy": (None, [_p]),
    "rd_kafka_message_errstr": (ctypes.c_char_p, [ctypes.POINTER(_Message)]),
    "rd_kafka_err2str": (ctypes.c_char_p, [_i]),
    "rd_kafka_consumer_close": (_i, [_p]),
    "rd_kafka_destroy": (None, [_p]),
}


@dataclass
class _Lib:
    rd: Any
    helper: Any
    destroy: Any = field(init=False)

    def __post_init__(self) -> None:
        for name, (res, args) in _SIGNATURES.items():
            fn = getattr(self.rd, name)
            fn.restype, fn.argtypes = res, args
        h = self.helper
        h.sp_scan.restype = _ssz
        h.sp_scan.argtypes = [_p, _ssz, _i64, ctypes.POINTER(_i64), ctypes.POINTER(_ssz)]
        h.sp_copy.restype = _ssz
        h.sp_copy.argtypes = [_p, _ssz, _p, _p, _p, _p, _p]
        h.sp_destroy.restype = None
        h.sp_destroy.argtypes = [_p, _ssz, _p]
        self.destroy = ctypes.cast(self.rd.rd_kafka_message_destroy, _p)


def _librdkafka_path() -> str | None:
    import confluent_kafka

    site = os.path.dirname(os.path.dirname(confluent_kafka.__file__))
    bundled = sorted(glob.glob(os.path.join(site, "confluent_kafka.libs", "librdkafka*.so*")))
    if bundled:
        return bundled[0]
    from ctypes.util import find_library

    return find_library("rdkafka")


def helper_file() -> str | None:
    """The compiled C helper's path in this installation, if it was built."""
    try:
        from sparkpipes.sources import _fetchcopy  # type: ignore[attr-defined]
    except ImportError:
        return None
    return _fetchcopy.__file__


#: the helper's name inside the package zip shipped to a cluster's executors
SHIPPED_HELPER = "sources/_fetchcopy.so"


def _shipped_helper() -> str | None:
    """The helper from the package zip (``engine.cluster.ship_package``), written once
    per content to the temporary directory: a zip's extension cannot be imported."""
    import hashlib
    import pkgutil
    import tempfile

    try:
        data = pkgutil.get_data("sparkpipes", SHIPPED_HELPER)
    except OSError:
        return None
    if not data:
        return None
    name = f"sparkpipes-fetchcopy-{hashlib.sha256(data).hexdigest()[:16]}.so"
    path = os.path.join(tempfile.gettempdir(), name)
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    return path


@cache
def _lib() -> _Lib | None:
    if os.environ.get(ENV, "1") == "0":
        return None
    try:
        import confluent_kafka.cimpl  # noqa: F401  (loads librdkafka first, as it links it)

        helper = helper_file() or _shipped_helper()
        path = _librdkafka_path()
        if helper is None or path is None:
            return None
        return _Lib(ctypes.CDLL(path), ctypes.CDLL(helper))
    except (ImportError, OSError, AttributeError) as e:
        logging.getLogger("sparkpipes.kafka").debug("native Kafka reader unavailable: %s", e)
        return None


def available() -> bool:
    """Whether :class:`NativeReader` can run in this process."""
    return _lib() is not None


@dataclass(frozen=True)
class RawFetch:
    """One fetch, before the partition consumer's checks: the error-free records'
    payloads and offsets, and each error message as ``(code, text, offset)`` in order.
    ``last_is_error`` says whether the fetch's final message was an error (an
    end-of-partition event there means nothing followed it)."""

    values: pa.Array
    positions: pa.Array
    errors: list[tuple[int, str, int]]
    last_is_error: bool
    keys: pa.Array | None = None
    timestamps: pa.Array | None = None
    headers: pa.Array | None = None

    def __len__(self) -> int:
        return len(self.positions)


class KafkaCError:
    """What confluent-kafka's ``KafkaError`` offers to error handlers, for errors that
    reach them from the native reader."""

    def __init__(self, code: int, text: str) -> None:
        self._code, self._text = code, text

    def code(self) -> int:
        return self._code

    def str(self) -> str:
        return self._text

    def retriable(self) -> bool:
        return False


class NativeError(Exception):
    """A call into librdkafka failed (``args[0]`` is a :class:`KafkaCError`)."""


class NativeReader:
    """One librdkafka consumer reading one assigned partition.

    ``conf`` holds librdkafka's string settings; ``error_cb`` gets each client-wide error
    as a :class:`KafkaCError` (served by :meth:`poll` and :meth:`fetch`, on the calling
    thread); ``log`` gets each log line as ``log(python_level, fmt, text)``. The client
    is created here: build a reader on the executor, never in a pickled object.
    """

    def __init__(
        self,
        conf: Mapping[str, str],
        error_cb: Callable[[KafkaCError], None],
        log: Callable[..., None],
        topic: str,
        partition: int,
        max_bytes: int = MAX_BYTES,
    ) -> None:
        lib = _lib()
        if lib is None:
            raise RuntimeError("the native Kafka reader is not available")
        self._lib, rd = lib, lib.rd
        self.topic, self.partition = topic.encode(), partition
        self.max_bytes = max_bytes  #: payload bytes per fetch at most (one Arrow array)
        self._error_cb = _ERROR_CB(
            lambda _rk, code, reason, _o: error_cb(KafkaCError(code, _text(reason)))
        )
        self._log_cb = _LOG_CB(
            lambda _rk, level, _fac, buf: log(_PY_LEVELS.get(level, 20), "%s", _text(buf))
        )
        errstr = ctypes.create_string_buffer(_ERRSTR)
        conf_h = rd.rd_kafka_conf_new()
        for key, value in conf.items():
            if rd.rd_kafka_conf_set(conf_h, key.encode(), str(value).encode(), errstr, _ERRSTR):
                rd.rd_kafka_conf_destroy(conf_h)
                raise ValueError(_text(errstr.value))
        rd.rd_kafka_conf_set_error_cb(conf_h, self._error_cb)
        rd.rd_kafka_conf_set_log_cb(conf_h, self._log_cb)
        self._rk = rd.rd_kafka_new(_RD_KAFKA_CONSUMER, conf_h, errstr, _ERRSTR)
        if not self._rk:
            rd.rd_kafka_conf_destroy(conf_h)
            raise ValueError(_text(errstr.value))
        rd.rd_kafka_poll_set_consumer(self._rk)
        self._queue = rd.rd_kafka_queue_get_consumer(self._rk)
        self._slots = (_p * 0)()
        self._pending: tuple[Any, int, int] | None = None  # (slots, start, count)

    def poll(self, timeout_s: float) -> None:
        """Serve queued callbacks (errors); only while nothing is assigned."""
        msg = self._lib.rd.rd_kafka_consumer_poll(self._rk, int(timeout_s * 1000))
        if msg:
            self._lib.rd.rd_kafka_message_destroy(msg)

    def watermarks(self, timeout_s: float) -> tuple[int, int]:
        low, high = _i64(), _i64()
        err = self._lib.rd.rd_kafka_query_watermark_offsets(
            self._rk, self.topic, self.partition, low, high, max(1, int(timeout_s * 1000))
        )
        if err:
            raise NativeError(KafkaCError(err, _text(self._lib.rd.rd_kafka_err2str(err))))
        return low.value, high.value

    def assign(self, offset: int) -> None:
        rd = self._lib.rd
        parts = rd.rd_kafka_topic_partition_list_new(1)
        try:
            tp = rd.rd_kafka_topic_partition_list_add(parts, self.topic, self.partition)
            tp.contents.offset = offset
            err = rd.rd_kafka_assign(self._rk, parts)
        finally:
            rd.rd_kafka_topic_partition_list_destroy(parts)
        if err:
            raise NativeError(KafkaCError(err, _text(rd.rd_kafka_err2str(err))))

    def _consume(self, max_records: int, timeout_s: float) -> tuple[Any, int, int]:
        if self._pending is not None:
            pending, self._pending = self._pending, None
            return pending
        if len(self._slots) < max_records:
            self._slots = (_p * max_records)()
        slots, rd = self._slots, self._lib.rd
        # like consume(n, t), which waits for all n records: wait only for the first one
        n = rd.rd_kafka_consume_batch_queue(self._queue, int(timeout_s * 1000), slots, 1)
        if n == 1 and max_records > 1:
            more = rd.rd_kafka_consume_batch_queue(
                self._queue, 0, ctypes.byref(slots, ctypes.sizeof(_p)), max_records - 1
            )
            n += max(0, more)
        if n < 0:
            raise NativeError(KafkaCError(-1, "librdkafka could not consume"))
        return slots, 0, n

    def fetch(self, max_records: int, timeout_s: float) -> RawFetch:
        """Up to ``max_records`` messages (errors included), waiting up to ``timeout_s``
        for the first; the messages are handed back to librdkafka before returning."""
        slots, start, n = self._consume(max_records, timeout_s)
        if n == 0:
            return RawFetch(EMPTY_VALUES, EMPTY_POSITIONS, [], False)
        lib = self._lib
        at = ctypes.byref(slots, start * ctypes.sizeof(_p))
        nbytes, nerrors = _i64(), _ssz()
        take = lib.helper.sp_scan(at, n, self.max_bytes, nbytes, nerrors)
        if take < n:  # the rest go into the next fetch (before slots are reused)
            self._pending = (slots, start + take, n - take)
        count = take - nerrors.value
        data = np.empty(nbytes.value, np.uint8)
        value_offsets = np.empty(count + 1, np.int32)
        valid = np.empty(count, np.uint8)
        positions = np.empty(count, np.int64)
        error_at = np.empty(nerrors.value, np.int64)
        errors: list[tuple[int, str, int]] = []
        try:
            lib.helper.sp_copy(
                at,
                take,
                data.ctypes.data,
                value_offsets.ctypes.data,
                valid.ctypes.data,
                positions.ctypes.data,
                error_at.ctypes.data,
            )
            for i in error_at.tolist():
                msg = ctypes.cast(slots[start + i], ctypes.POINTER(_Message))
                text = _text(lib.rd.rd_kafka_message_errstr(msg))
                errors.append((msg.contents.err, text, msg.contents.offset))
        finally:
            lib.helper.sp_destroy(at, take, lib.destroy)
        last_is_error = bool(nerrors.value) and int(error_at[-1]) == take - 1
        validity = None
        nulls = count - int(valid.sum()) if count else 0
        if nulls:
            validity = pa.py_buffer(np.packbits(valid, bitorder="little"))
        values = pa.Array.from_buffers(
            pa.binary(),
            count,
            [validity, pa.py_buffer(value_offsets), pa.py_buffer(data)],
            null_count=nulls,
        )
        return RawFetch(values, pa.array(positions), errors, last_is_error)

    def close(self) -> None:
        """Leaves the partition and destroys the client (waits for its threads)."""
        rk, self._rk = self._rk, None
        if not rk:
            return
        rd = self._lib.rd
        if self._pending is not None:
            slots, start, n = self._pending
            self._lib.helper.sp_destroy(
                ctypes.byref(slots, start * ctypes.sizeof(_p)), n, self._lib.destroy
            )
            self._pending = None
        rd.rd_kafka_queue_destroy(self._queue)
        rd.rd_kafka_consumer_close(rk)
        rd.rd_kafka_destroy(rk)

    def __del__(self) -> None:
        if getattr(self, "_rk", None):
            try:
                self.close()
            except Exception:  # interpreter shutdown
                pass


def _text(raw: bytes | None) -> str:
    return raw.decode("utf-8", "replace") if raw else ""


EMPTY_VALUES = pa.array([], pa.binary())
EMPTY_POSITIONS = pa.array([], pa.int64())
