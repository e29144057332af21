"""What becomes of a record Pinot cannot load: here as in Pinot's realtime consumer.

Pinot's consumer (``RealtimeSegmentDataManager.processStreamEvents``) does not stop for a
bad record unless told to:

- a message its decoder cannot read is dropped and counted, or, with the stream config
  ``stopOnDecodeError: "true"``, consumption stops there;
- a record its transforms cannot load (a value that does not convert to its column's type,
  a transform that throws, ``maxLengthExceedStrategy: ERROR``) is dropped with a segment
  error; under ``continueOnError`` the type conversion stores the column's default null
  value instead and keeps the row (every Pinot decoder: ``formats.pinot_json``, and
  ``formats.pinot_convert`` for CSV, Avro and Protobuf).

Here a dropped record goes to ``PIPELINES_ERRORS`` with its partition and offset, so nothing
is lost unseen, and consumption goes on (a transform that throws: the pipeline's
``rejects``, written by the lowering from ``PinotExpr.fails``). Stopping is a failed
batch: retried, then the pipeline stops with the error, its offsets where they were. Under
``stopOnDecodeError`` every record the decoder refuses stops it, a value that does not
convert included (Pinot's transforms drop that one).
"""

from __future__ import annotations

from collections.abc import Mapping

#: the stream config key (any ``streamType``)
STOP_ON_DECODE_ERROR = "stopOnDecodeError"


def stop_on_decode_error(given: Mapping[str, str], notes: list[str]) -> bool:
    """Whether the stream stops at a record its decoder cannot read. Any value but
    ``true``/``false`` (either case) is read as false with a note, as Pinot reads it."""
    value = given.get(STOP_ON_DECODE_ERROR)
    if value is None or value.lower() == "false":
        return False
    if value.lower() == "true":
        return True
    notes.append(
        f"{STOP_ON_DECODE_ERROR} '{value}' is neither true nor false: read as false "
        "(a record that does not decode goes to PIPELINES_ERRORS), as Pinot reads it"
    )
    return False


def skip_flags(stop_on_decode: bool) -> dict[str, bool]:
    """The format's ``skip_parser_errors`` and ``skip_constraint_errors`` for a stream."""
    return {"skip_parser_errors": not stop_on_decode, "skip_constraint_errors": True}
