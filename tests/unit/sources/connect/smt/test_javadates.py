"""SimpleDateFormat as Kafka's TimestampConverter/TimestampRouter use it (a UTC format in
an English JVM), against OpenJDK's ``SimpleDateFormat.subFormat``/``subParse`` and the
lenient ``GregorianCalendar``."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from sparkpipes.sources.connect.smt.javadates import check_pattern, format_timestamps, parse

UTC = dt.UTC
#: a fixed moment the transform was made: two-digit years fall in 1946-04-02 … 2046-04-01
MADE = dt.datetime(1946, 4, 2, 12, 0, tzinfo=UTC)


def _parse(texts: list[str | None], pattern: str) -> list[dt.datetime | None]:
    return parse(pa.array(texts, pa.string()), pattern, MADE).timestamps.to_pylist()


def _format(when: dt.datetime, pattern: str) -> str:
    ts = pa.array([when], pa.timestamp("ms", "UTC"))
    return format_timestamps(ts, pattern).to_pylist()[0]


def test_names_and_numbers_are_written_as_java_writes_them_in_english():
    when = dt.datetime(2020, 12, 10, 7, 6, 5, 4000, tzinfo=UTC)  # a Thursday
    assert _format(when, "EEE MMM dd HH:mm:ss zzz yyyy") == "Thu Dec 10 07:06:05 UTC 2020"
    assert _format(when, "EEEE, MMMM d") == "Thursday, December 10"
    assert _format(when, "zzzz Z X XXX") == "Coordinated Universal Time +0000 Z Z"
    # S is milliseconds, padded to the count (not a fraction); yy the last two digits
    assert _format(when, "yy-M-d H:m:s.S SSS") == "20-12-10 7:6:5.4 004"
    assert _format(when, "yyyy.MM.dd 'o''clock' ''") == "2020.12.10 o'clock '"


def test_java_date_text_with_its_zone_is_read():
    got = _parse(
        [
            "Thu Dec 10 17:06:59 GMT 2020",  # java.util.Date.toString()
            "thu DEC 10 17:06:59 utc 2020",  # names in any case
            "Thursday December 10 17:06:59 Coordinated Universal Time 2020",
            "Thu Dec 10 17:06:59 GMT+01:30 2020",  # GMT+hh:mm
            "Thu Dec 10 17:06:59 GMT-5:00 2020",  # one hour digit with the colon
            "Thu Dec 10 17:06:59 +0100 2020",  # RFC 822
        ],
        "EEE MMM dd HH:mm:ss zzz yyyy",
    )
    base = dt.datetime(2020, 12, 10, 17, 6, 59, tzinfo=UTC)
    assert got == [
        base,
        base,
        base,
        base - dt.timedelta(hours=1, minutes=30),
        base + dt.timedelta(hours=5),
        base - dt.timedelta(hours=1),
    ]


def test_a_day_name_is_ignored_where_the_day_of_the_month_is_given():
    # the lenient calendar resolves the date by year, month and day of the month
    assert _parse(["Mon Dec 10 2020"], "EEE MMM dd yyyy") == [dt.datetime(2020, 12, 10, tzinfo=UTC)]


def test_lenient_values_roll_over_and_text_after_the_pattern_is_ignored():
    got = _parse(
        ["2020-12-32 00:00", "2020-13-01 24:00", "2020-02-30 10:61 and more", "2020-1-5 1:2"],
        "yyyy-MM-dd HH:mm",
    )
    assert got == [
        dt.datetime(2021, 1, 1, tzinfo=UTC),
        dt.datetime(2021, 1, 2, tzinfo=UTC),
        dt.datetime(2020, 3, 1, 11, 1, tzinfo=UTC),
        dt.datetime(2020, 1, 5, 1, 2, tzinfo=UTC),
    ]


def test_abutting_numbers_take_their_count_and_the_last_takes_every_digit():
    # shouldObeyCount: yyyy and MM are followed by a numeric field, dd is not
    got = _parse(["20201210", "2020121", "202012105"], "yyyyMMdd")
    assert got == [
        dt.datetime(2020, 12, 10, tzinfo=UTC),
        dt.datetime(2020, 12, 1, tzinfo=UTC),
        dt.datetime(2021, 3, 15, tzinfo=UTC),  # day 105 of December 2020
    ]


def test_two_digit_years_fall_within_80_years_before_and_20_after():
    got = _parse(["45-01-01", "46-04-01", "46-04-03", "99-01-01", "2020-01-01"], "yy-MM-dd")
    assert [d.year for d in got] == [2045, 2046, 1946, 1999, 2020]


def test_iso_zones_by_count():
    got = _parse(
        ["2020-12-10T17:06:59Z", "2020-12-10T17:06:59+01:00", "2020-12-10T17:06:59+0100"],
        "yyyy-MM-dd'T'HH:mm:ssXXX",
    )
    base = dt.datetime(2020, 12, 10, 17, 6, 59, tzinfo=UTC)
    assert got == [base, base - dt.timedelta(hours=1), None]  # XXX wants the colon


def test_zone_names_java_would_look_up_are_set_apart():
    out = parse(
        pa.array(["Thu Dec 10 17:06:59 PST 2020", "nonsense", None, "Thu Dec 10 1:2:3 UTC 1"]),
        "EEE MMM dd HH:mm:ss zzz yyyy",
        MADE,
    )
    assert out.refused.to_pylist() == [True, False, False, False]
    assert "time-zone name other than GMT or UTC" in out.why
    assert out.unread.to_pylist() == [False, True, False, False]
    assert out.timestamps.to_pylist()[3] == dt.datetime(1, 12, 10, 1, 2, 3, tzinfo=UTC)


@pytest.mark.parametrize(
    "pattern, why",
    [
        ("YYYY-MM-dd", "pattern letters Y"),
        ("hh:mm a", "pattern letters a, h"),
        ("yyyy-MM-dd'T", "unfinished quote"),
        ("yyyy-qq", "'q', which is no SimpleDateFormat pattern letter"),
        ("XXXX", "1 to 3 letters"),
    ],
)
def test_patterns_not_formatted_here_are_refused_with_why(pattern, why):
    assert why in (check_pattern(pattern) or "")


def test_a_day_name_without_the_day_of_the_month_is_written_not_read():
    assert check_pattern("EEE yyyy") is None
    when = dt.datetime(2020, 12, 10, tzinfo=UTC)
    assert _format(when, "EEE yyyy") == "Thu 2020"
    out = parse(pa.array(["Thu 2020", None]), "EEE yyyy", MADE)
    assert out.refused.to_pylist() == [True, False] and "no day of the month" in out.why


def test_the_patterns_people_write_are_accepted():
    for pattern in ("EEE MMM dd HH:mm:ss zzz yyyy", "yyyy-MM-dd'T'HH:mm:ss.SSSZ", "dd-MMM-yy"):
        assert check_pattern(pattern) is None
