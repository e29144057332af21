"""The catalog's clock: naive UTC (every database stores it alike)."""

import datetime as dt


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)
