"""Lenient per-value coercion to an Arrow field's type, for the decoders' slow path.

Raises ValueError with a reason that names the column, the value (shortened) and the type.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
from typing import Any

import pyarrow as pa

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_INT_RANGES = {
    8: (-(2**7), 2**7 - 1),
    16: (-(2**15), 2**15 - 1),
    32: (-(2**31), 2**31 - 1),
    64: (-(2**63), 2**63 - 1),
}


#: digits enough for any DECIMAL(76, 76) a column holds, quantized exactly
_DECIMAL_DIGITS = 160


def _short(v: Any) -> str:
    s = json.dumps(v, default=str) if not isinstance(v, str) else repr(v)
    return s if len(s) <= 60 else s[:57] + "..."


def coerce_column(value: Any, field: pa.Field) -> Any:
    try:
        return coerce(value, field.type)
    except (ValueError, TypeError, OverflowError, decimal.InvalidOperation) as e:
        detail = f": {e}" if str(e) else ""
        raise ValueError(
            f"column '{field.name}': cannot convert {_short(value)} to {field.type}{detail}"
        ) from None


def _decimal(value: decimal.Decimal, t: pa.Decimal128Type) -> decimal.Decimal:
    """``value`` at the column's scale, rounded half away from zero as MySQL and
    SingleStore store a DECIMAL; more whole digits than the precision holds is an error."""
    if not value.is_finite():
        raise ValueError("not a number")
    with decimal.localcontext(prec=_DECIMAL_DIGITS):  # the default 28 digits fail 11 + 18
        rounded = value.quantize(
            decimal.Decimal(1).scaleb(-t.scale), rounding=decimal.ROUND_HALF_UP
        )
    if rounded.adjusted() >= t.precision - t.scale:
        raise ValueError("out of range")
    return rounded


def coerce(value: Any, t: pa.DataType) -> Any:
    if value is None:
        return None
    if pa.types.is_integer(t):
        if isinstance(value, bool):
            raise ValueError("booleans are not integers")
        if isinstance(value, float):
            if not value.is_integer():
                raise ValueError("not a whole number")
            value = int(value)
        elif isinstance(value, str):
            value = int(value.strip())
        elif isinstance(value, dt.datetime):  # Avro's timestamp types: epoch milliseconds
            aware = value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)
            value = (aware - _EPOCH) // dt.timedelta(milliseconds=1)
        elif not isinstance(value, int):
            raise ValueError("")
        low, high = _INT_RANGES[t.bit_width]
        if not low <= value <= high:
            raise ValueError("out of range")
        return value
    if pa.types.is_floating(t):
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise ValueError("")
        return float(value)
    if pa.types.is_decimal(t):
        if isinstance(value, bool) or not isinstance(value, decimal.Decimal | int | float | str):
            raise ValueError("")
        return _decimal(decimal.Decimal(str(value).strip()), t)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        if isinstance(value, str):
            return value
        return json.dumps(value, separators=(",", ":"), default=str)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        if isinstance(value, bytes):
            return value
        if isinstance(value, str):
            return value.encode()
        return json.dumps(value, separators=(",", ":")).encode()
    if pa.types.is_boolean(t):
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        if isinstance(value, str) and value.lower() in ("true", "false", "1", "0"):
            return value.lower() in ("true", "1")
        raise ValueError("")
    if pa.types.is_timestamp(t):
        if isinstance(value, dt.datetime):  # decoded as such (Avro's timestamp types)
            return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)
        if isinstance(value, bool):
            raise ValueError("")
        if isinstance(value, int | float):
            return _EPOCH + dt.timedelta(milliseconds=value)  # epoch milliseconds
        if isinstance(value, str):
            parsed = dt.datetime.fromisoformat(value.strip().replace(" ", "T", 1))
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=dt.UTC)
            return parsed
        raise ValueError("")
    if pa.types.is_date(t):
        if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
            return value
        if isinstance(value, str):
            return dt.date.fromisoformat(value.strip()[:10])
        raise ValueError("")
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        if isinstance(value, str):  # JSON text of an array ('[1,2,3]', SingleStore's VECTOR)
            value = json.loads(value)
        if not isinstance(value, list):
            raise ValueError("not an array")
        return [coerce(v, t.value_type) for v in value]
    if pa.types.is_struct(t):
        if not isinstance(value, dict):
            raise ValueError("not an object")
        return {
            t.field(i).name: coerce(value.get(t.field(i).name), t.field(i).type)
            for i in range(t.num_fields)
        }
    if pa.types.is_map(t):
        if not isinstance(value, dict):
            raise ValueError("not an object")
        return [(coerce(k, t.key_type), coerce(v, t.item_type)) for k, v in value.items()]
    raise ValueError(f"unsupported column type {t}")
