"""Pinot's ``TimeUnit`` names and their length in milliseconds (``java.util.concurrent``):
date-time field formats, retention and upsert metadata TTLs all count in them."""

TIME_UNITS_MS = {
    "NANOSECONDS": 1e-6,
    "MICROSECONDS": 1e-3,
    "MILLISECONDS": 1,
    "SECONDS": 1000,
    "MINUTES": 60_000,
    "HOURS": 3_600_000,
    "DAYS": 86_400_000,
}
