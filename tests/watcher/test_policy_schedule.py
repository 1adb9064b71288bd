"""sidecar/watcher/policy/schedule.py: a RepackPolicy's schedule as Kubernetes' CronJob controller
reads it (robfig/cron v3's ParseStandard and Next, the controller's missed-time arithmetic).

The expected times below come from robfig's spec_test.go where it has the case (the DST ones in
New York and Sao Paulo) and were checked against the Go code by tests/go/test_go_crontable.py,
which runs every row of NEXT and BAD through the real parser too.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sidecar.errors import InputError
from sidecar.watcher.policy.schedule import (
    NEVER,
    REQUEUE_DELTA,
    STAR,
    TOO_MANY_MISSED,
    Schedule,
    most_recent,
    next_time,
    parse,
    requeue_after,
    run_name,
    time_zone,
)

NY = "America/New_York"

#: (schedule, timeZone, from, the next firings) — times in RFC 3339; fewer than asked: none follows
NEXT: list[tuple[str, str | None, str, list[str]]] = [
    # steps, ranges, lists
    ("*/15 * * * *", None, "2024-01-01T00:00:30Z", ["2024-01-01T00:15:00Z", "2024-01-01T00:30:00Z"]),
    ("5-50/20 */6 * * *", None, "2024-01-01T00:30:00Z", ["2024-01-01T00:45:00Z", "2024-01-01T06:05:00Z"]),
    ("10/25 * * * *", None, "2024-01-01T00:00:00Z", ["2024-01-01T00:10:00Z", "2024-01-01T00:35:00Z"]),
    ("0 0 1,,15 * *", None, "2024-01-02T00:00:00Z", ["2024-01-15T00:00:00Z", "2024-02-01T00:00:00Z"]),
    ("+5 007 * * *", None, "2024-01-01T00:00:00Z", ["2024-01-01T07:05:00Z"]),  # Atoi: sign, zeros
    # names, any case (Go's ToLower: FRİ is fri)
    ("0 12 * JAN-mar MON-fri", None, "2024-03-29T13:00:00Z", ["2025-01-01T12:00:00Z", "2025-01-02T12:00:00Z"]),
    ("0 0 * * FRİ", None, "2024-09-01T00:00:00Z", ["2024-09-06T00:00:00Z"]),
    ("0\u00a00 * * *", None, "2024-09-01T00:00:00Z", ["2024-09-02T00:00:00Z"]),  # NBSP is Go whitespace
    # Feb 29, and Next giving up after five years
    ("0 0 29 2 *", None, "2023-01-01T00:00:00Z", ["2024-02-29T00:00:00Z", "2028-02-29T00:00:00Z"]),
    ("0 0 29 2 *", None, "2096-03-01T00:00:00Z", []),
    ("0 0 30 2 *", None, "2024-01-01T00:00:00Z", []),
    ("0 0 , * *", None, "2024-01-01T00:00:00Z", []),
    # day of month OR day of week, unless either holds a star
    (
        "0 0 13 * 5",
        None,
        "2024-09-01T00:00:00Z",
        ["2024-09-06T00:00:00Z", "2024-09-13T00:00:00Z", "2024-09-20T00:00:00Z"],
    ),
    ("0 0 13 * */1", None, "2024-09-01T00:00:00Z", ["2024-09-13T00:00:00Z", "2024-10-13T00:00:00Z"]),
    ("0 0 13 * */2", None, "2024-09-01T00:00:00Z", ["2024-09-03T00:00:00Z", "2024-09-05T00:00:00Z"]),
    ("0 0 1-31 * 1", None, "2024-09-01T00:00:00Z", ["2024-09-02T00:00:00Z", "2024-09-03T00:00:00Z"]),
    ("0 0 *-5 * 1", None, "2024-09-01T00:00:00Z", ["2024-09-02T00:00:00Z", "2024-09-09T00:00:00Z"]),
    ("0 0 ? * sun", None, "2024-09-01T00:00:00Z", ["2024-09-08T00:00:00Z"]),
    # descriptors
    ("@yearly", None, "2024-05-05T00:00:00Z", ["2025-01-01T00:00:00Z"]),
    ("@annually", None, "2024-05-05T00:00:00Z", ["2025-01-01T00:00:00Z"]),
    ("@monthly", None, "2024-05-05T00:00:00Z", ["2024-06-01T00:00:00Z"]),
    ("@weekly", None, "2024-05-05T00:00:00Z", ["2024-05-12T00:00:00Z"]),
    ("@daily", None, "2024-05-05T00:00:00Z", ["2024-05-06T00:00:00Z"]),
    ("@midnight", None, "2024-05-05T00:00:00Z", ["2024-05-06T00:00:00Z"]),
    ("@hourly", None, "2024-05-05T10:30:00Z", ["2024-05-05T11:00:00Z"]),
    ("@every 90m", None, "2024-01-01T00:00:30.5Z", ["2024-01-01T01:30:30Z", "2024-01-01T03:00:30Z"]),
    ("@every 1.5h", "Asia/Kolkata", "2024-01-01T00:00:00Z", ["2024-01-01T01:30:00Z"]),  # zone-blind
    ("@every -1h", None, "2024-01-01T00:00:00.5Z", ["2024-01-01T00:00:01Z", "2024-01-01T00:00:02Z"]),
    # a time zone moves the wall clock
    ("0 9 * * *", "Asia/Kolkata", "2024-01-01T00:00:00Z", ["2024-01-01T03:30:00Z"]),
    ("0 9 * * *", "Etc/GMT+5", "2024-01-01T00:00:00Z", ["2024-01-01T14:00:00Z"]),
    # New York, spring forward (robfig's spec_test.go): a skipped 02:30 is not run that day
    ("30 2 11 Mar ?", NY, "2012-03-11T00:00:00-05:00", ["2013-03-11T02:30:00-04:00"]),
    ("0 * * * ?", NY, "2012-03-11T00:00:00-05:00", ["2012-03-11T01:00:00-05:00", "2012-03-11T03:00:00-04:00"]),
    ("30 2 * * *", NY, "2024-03-09T12:00:00Z", ["2024-03-11T02:30:00-04:00"]),
    # New York, fall back: a time in the repeated hour fires in both
    ("0 1 * * ?", NY, "2012-11-04T00:00:00-04:00", ["2012-11-04T01:00:00-04:00", "2012-11-04T01:00:00-05:00"]),
    ("30 1 4 Nov ?", NY, "2012-11-04T01:45:00-04:00", ["2012-11-04T01:30:00-05:00"]),
    ("0 2 * * ?", NY, "2012-11-04T00:00:00-04:00", ["2012-11-04T02:00:00-05:00", "2012-11-05T02:00:00-05:00"]),
    # Berlin: the same both ways
    ("30 2 * * *", "Europe/Berlin", "2024-03-30T12:00:00Z", ["2024-04-01T02:30:00+02:00"]),
    (
        "30 2 * * *",
        "Europe/Berlin",
        "2024-10-26T12:00:00Z",
        ["2024-10-27T02:30:00+02:00", "2024-10-27T02:30:00+01:00", "2024-10-28T02:30:00+01:00"],
    ),
    # Lord Howe's half-hour change: Next's minute loop steps from 01:59 to 02:30 (no wrap to
    # minute 0, so no re-check of the hour) and fires at 02:45, a wall clock the fields exclude
    (
        "45 1 * * *",
        "Australia/Lord_Howe",
        "2024-10-05T14:40:00Z",
        ["2024-10-05T15:15:00Z", "2024-10-05T15:45:00Z", "2024-10-06T14:45:00Z"],
    ),
    # Sao Paulo's DST began at midnight (robfig's case for the day loop's hour fix)
    ("0 9 10 * ?", "America/Sao_Paulo", "2018-10-17T05:00:00-04:00", ["2018-11-10T06:00:00-05:00"]),
]

#: (schedule, the problem) — each refused at spec.schedule
BAD: list[tuple[str, str]] = [
    ("", "Required value"),
    ("0 0 * *", "expected exactly 5 fields, found 4: [0 0 * *]"),
    ("0 0 0 * * *", "expected exactly 5 fields, found 6: [0 0 0 * * *]"),
    (" @daily", "expected exactly 5 fields, found 1: [@daily]"),
    ("0\x1c0 * * *", "expected exactly 5 fields, found 4: [0\x1c0 * * *]"),  # not Go whitespace
    ("0 0 * * 7", "end of range (7) above maximum (6): 7"),
    ("0 0 * * 0-7", "end of range (7) above maximum (6): 0-7"),
    ("0 0 0 * *", "beginning of range (0) below minimum (1): 0"),
    ("60 * * * *", "end of range (60) above maximum (59): 60"),
    ("0 24 * * *", "end of range (24) above maximum (23): 24"),
    ("0 0 * 13 *", "end of range (13) above maximum (12): 13"),
    ("5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1"),
    ("*/0 * * * *", "step of range should be a positive number: */0"),
    ("*/-1 * * * *", "negative number (-1) not allowed: -1"),
    ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
    ("1/2/3 * * * *", "too many slashes: 1/2/3"),
    ("x * * * *", 'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax'),
    ("-5 * * * *", 'failed to parse int from : strconv.Atoi: parsing "": invalid syntax'),
    ("５ * * * *", 'failed to parse int from ５: strconv.Atoi: parsing "５": invalid syntax'),
    ("0 0 * JANUARY *", 'failed to parse int from JANUARY: strconv.Atoi: parsing "JANUARY": invalid syntax'),
    ("0 0 * * mon/x", 'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax'),
    (
        "99999999999999999999x * * * *",
        "failed to parse int from 99999999999999999999x: "
        'strconv.Atoi: parsing "99999999999999999999x": value out of range',
    ),
    ("@DAILY", "unrecognized descriptor: @DAILY"),
    ("@daily ", "unrecognized descriptor: @daily "),
    ("@every", "unrecognized descriptor: @every"),
    ("@every 1d", 'failed to parse duration @every 1d: time: unknown unit "d" in duration "1d"'),
    ("@every 90", 'failed to parse duration @every 90: time: missing unit in duration "90"'),
    ("@every  1h", 'failed to parse duration @every  1h: time: invalid duration " 1h"'),
    ("TZ=Europe/Berlin 0 0 * * *", "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"),
    ("CRON_TZ=UTC 0 0 * * *", "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"),
    ("TZ=UTC", "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"),  # robfig panics here
]

#: (timeZone, the problem, or None if admitted)
ZONES: list[tuple[str, str | None]] = [
    ("UTC", None),
    (NY, None),
    ("Etc/GMT+5", None),
    ("Foo/Bar", "unknown time zone Foo/Bar"),
    ("utc", "unknown time zone utc"),
    ("America", "unknown time zone America"),  # a directory (Go: "is a directory")
    ("America/New_York/", "unknown time zone America/New_York/"),
    ("../etc/passwd", "unknown time zone ../etc/passwd"),
    ("-0500", "unknown time zone -0500"),
    ("A23456789012345", "unknown time zone A23456789012345"),
    ("Local", "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"),
    ("local", "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"),
]


def at(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp)


def firings(schedule: Schedule, start: datetime, count: int) -> list[datetime]:
    out: list[datetime] = []
    while len(out) < count and (found := schedule.next_after(out[-1] if out else start)) is not None:
        out.append(found)
    return out


@pytest.mark.parametrize("expr,tz,start,expected", NEXT, ids=[f"{c[0]}|{c[1]}|{c[2]}" for c in NEXT])
def test_next_firings(expr: str, tz: str | None, start: str, expected: list[str]) -> None:
    schedule = parse(expr, zone=time_zone(tz))
    got = firings(schedule, at(start), len(expected) + 1)
    assert got[: len(expected)] == [at(e) for e in expected]
    assert [t.utcoffset() for t in got] == [at(start).utcoffset()] * len(got)  # in the caller's zone
    if not expected:
        assert got == []


def test_the_wall_clock_of_a_repeated_hour_fires_twice() -> None:
    """Fall back in New York: 01:30 EDT and 01:30 EST are both 01:30, and both fire."""
    schedule = parse("30 1 * * *", zone=ZoneInfo(NY))
    got = firings(schedule, at("2024-11-03T00:00:00-04:00"), 3)
    assert [t.astimezone(ZoneInfo(NY)).strftime("%d %H:%M %Z") for t in got] == [
        "03 01:30 EDT",
        "03 01:30 EST",
        "04 01:30 EST",
    ]


@pytest.mark.parametrize("expr,problem", BAD, ids=[repr(c[0]) for c in BAD])
def test_bad_schedules_name_the_field(expr: str, problem: str) -> None:
    with pytest.raises(InputError) as caught:
        parse(expr, "spec.schedule")
    assert (caught.value.field, caught.value.problem) == ("spec.schedule", problem)


def test_the_path_is_the_callers() -> None:
    with pytest.raises(InputError, match=r"^spec\.triggers\[2\]\.schedule: end of range"):
        parse("0 0 * * 7", "spec.triggers[2].schedule")


@pytest.mark.parametrize("name,problem", ZONES)
def test_time_zones(name: str, problem: str | None) -> None:
    if problem is None:
        assert (
            datetime(2024, 7, 1, tzinfo=time_zone(name)).utcoffset()
            == datetime(2024, 7, 1, tzinfo=ZoneInfo(name)).utcoffset()
        )
        return
    with pytest.raises(InputError) as caught:
        time_zone(name)
    assert (caught.value.field, caught.value.problem) == ("spec.timeZone", problem)


@pytest.mark.parametrize("name", [None, ""])
def test_no_time_zone_is_utc_never_the_local_one(name: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    assert time_zone(name) is UTC
    assert parse("0 9 * * *", zone=time_zone(name)).next_after(at("2024-01-01T00:00:00Z")) == at("2024-01-01T09:00:00Z")


def test_next_after_needs_an_aware_time() -> None:
    with pytest.raises(ValueError, match="aware"):
        parse("* * * * *").next_after(datetime(2024, 1, 1))


# ---- most_recent, next_time, requeue_after: the controller's arithmetic ----

MINUTELY = parse("* * * * *")
T0 = at("2024-01-01T00:00:00Z")


#: (schedule, timeZone, earliest, now, the most recent firing, Kubernetes' missed estimate)
RECENT: list[tuple[str, str | None, str, str, str | None, int]] = [
    ("* * * * *", None, "2024-01-01T00:00:00Z", "2024-01-01T00:00:30Z", None, 0),
    ("* * * * *", None, "2024-01-01T00:00:00Z", "2024-01-01T00:01:00Z", "2024-01-01T00:01:00Z", 0),  # now counts
    ("* * * * *", None, "2024-01-01T00:00:00Z", "2024-01-01T00:01:59Z", "2024-01-01T00:01:00Z", 0),  # one due
    ("* * * * *", None, "2024-01-01T00:00:00Z", "2024-01-01T00:02:00Z", "2024-01-01T00:02:00Z", 2),
    ("* * * * *", None, "2024-01-01T00:00:00Z", "2024-01-02T00:00:30Z", "2024-01-02T00:00:00Z", 1440),
    # a controller down from Friday 17:01 to Tuesday 09:30 (Kubernetes' comment): 88 hourly runs
    ("0 * * * *", None, "2024-03-01T17:01:00Z", "2024-03-05T09:30:00Z", "2024-03-05T09:00:00Z", 88),
    # 24 years of minutes (12.8 million): one jump, not a walk
    ("* * * * *", None, "2000-01-01T00:00:00Z", "2024-06-01T12:34:56Z", "2024-06-01T12:34:00Z", 12842674),
    ("30 6-16/4 * * 1-5", None, "2024-03-04T00:00:00Z", "2024-03-07T12:00:00Z", "2024-03-07T10:30:00Z", 20),
    # the jump counts whole first intervals: Thu->Fri is a day, so from Wednesday to Sunday it
    # lands on Saturday, past Friday's firing, and finds none
    ("0 9 * * 1-5", None, "2024-03-06T09:00:00Z", "2024-03-10T12:00:00Z", None, 4),
    # Berlin's repeated 02:30: two firings an hour apart, estimated three, the jump lands on the
    # second and looks after it
    ("30 2 * * *", "Europe/Berlin", "2024-10-26T12:00:00Z", "2024-10-27T03:00:00Z", None, 3),
]


@pytest.mark.parametrize("expr,tz,earliest,now,recent,missed", RECENT)
def test_most_recent(expr: str, tz: str | None, earliest: str, now: str, recent: str | None, missed: int) -> None:
    schedule = parse(expr, zone=time_zone(tz))
    assert most_recent(schedule, at(earliest), at(now)) == (recent and at(recent), missed)
    assert (missed > TOO_MANY_MISSED) == (missed in (1440, 12842674))


def test_most_recent_in_the_callers_zone() -> None:
    berlin = ZoneInfo("Europe/Berlin")
    recent, _ = most_recent(MINUTELY, T0.astimezone(berlin), T0 + timedelta(minutes=5))
    assert recent == T0 + timedelta(minutes=5) and recent is not None and recent.tzinfo is berlin


@pytest.mark.parametrize("expr", ["0 0 30 2 *", "0 0 , * *"])
def test_a_schedule_that_never_fires_is_invalid_to_the_controller(expr: str) -> None:
    with pytest.raises(InputError) as caught:
        most_recent(parse(expr, "spec.schedule"), T0, T0 + timedelta(days=400))
    assert (caught.value.field, caught.value.problem) == ("spec.schedule", NEVER)


def test_next_time_counts_from_the_last_run_or_the_creation() -> None:
    now = T0 + timedelta(minutes=10, seconds=5)
    assert next_time(MINUTELY, created=T0, last_scheduled=None, now=now) == (T0 + timedelta(minutes=10), 10)
    last = T0 + timedelta(minutes=10)
    assert next_time(MINUTELY, created=T0, last_scheduled=last, now=now) == (None, 0)
    assert next_time(MINUTELY, created=T0, last_scheduled=last - timedelta(minutes=1), now=now) == (last, 0)


def test_next_time_looks_back_no_further_than_the_starting_deadline() -> None:
    now = T0 + timedelta(days=30, seconds=5)
    assert next_time(MINUTELY, created=T0, last_scheduled=None, now=now, starting_deadline_seconds=200) == (
        T0 + timedelta(days=30),
        4,
    )
    # the deadline after the last firing: nothing left to start
    assert next_time(MINUTELY, created=T0, last_scheduled=None, now=now, starting_deadline_seconds=3) == (None, 0)


def test_requeue_after() -> None:
    now = T0 + timedelta(seconds=30)
    assert requeue_after(MINUTELY, created=T0, last_scheduled=None, now=now) == timedelta(seconds=30) + REQUEUE_DELTA
    later = T0 + timedelta(minutes=3, seconds=10)  # missed some: from the latest due one
    assert requeue_after(MINUTELY, created=T0, last_scheduled=None, now=later) == timedelta(seconds=50) + REQUEUE_DELTA
    assert requeue_after(parse("0 0 30 2 *"), created=T0, last_scheduled=None, now=now) is None


def test_run_name_is_the_minute_of_the_firing() -> None:
    assert run_name("nightly", T0) == "nightly-28401120"
    assert run_name("nightly", T0.astimezone(ZoneInfo(NY))) == "nightly-28401120"  # an instant, not a wall clock
    assert run_name("nightly", T0 + timedelta(seconds=59, microseconds=999999)) == "nightly-28401120"
    assert run_name("nightly", at("1969-12-31T23:59:30Z")) == "nightly-0"  # Go's division truncates


# ---- properties ----


def _field(low: int, high: int, names: tuple[str, ...] = ()) -> st.SearchStrategy[str]:
    value = st.integers(low, high)
    pair = st.tuples(value, value).map(sorted)
    step = st.integers(1, high - low + 1)
    piece = st.one_of(
        st.sampled_from(["*", "?"]),
        value.map(str),
        pair.map(lambda p: f"{p[0]}-{p[1]}"),
        st.tuples(st.sampled_from(["*", "?"]), step).map(lambda p: f"{p[0]}/{p[1]}"),
        st.tuples(pair, step).map(lambda p: f"{p[0][0]}-{p[0][1]}/{p[1]}"),
        st.tuples(value, step).map(lambda p: f"{p[0]}/{p[1]}"),
        *([st.sampled_from(names).map(str.upper)] if names else []),
    )
    return st.lists(piece, min_size=1, max_size=3).map(",".join)


MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
EXPRESSIONS = st.tuples(
    _field(0, 59), _field(0, 23), _field(1, 31), _field(1, 12, MONTHS), _field(0, 6, ("sun", "mon", "sat"))
).map(" ".join)
DST_DAYS = [date(2024, 3, 10), date(2024, 3, 31), date(2024, 10, 27), date(2024, 11, 3)]
DST_DAYS = [date(2024, 3, 10), date(2024, 3, 31), date(2024, 10, 27), date(2024, 11, 3)]
TIMES = st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2090, 1, 1), timezones=st.just(UTC))


def _fires_at(s: Schedule, t: datetime) -> bool:
    dom, dow = bool(1 << t.day & s.dom), bool(1 << (t.weekday() + 1) % 7 & s.dow)
    day = dom and dow if (s.dom | s.dow) & STAR else dom or dow
    return bool(1 << t.minute & s.minute and 1 << t.hour & s.hour and 1 << t.month & s.month) and day and t.second == 0


def _reference_next(s: Schedule, t: datetime, until: datetime) -> datetime | None:
    """The first firing after ``t`` in UTC, day by day: a second way to the same answer."""
    hours = [h for h in range(24) if 1 << h & s.hour]
    minutes = [m for m in range(60) if 1 << m & s.minute]
    day = t.date()
    while day <= until.date():
        midnight = datetime(day.year, day.month, day.day, tzinfo=UTC)
        if _fires_at(s, midnight.replace(hour=hours[0], minute=minutes[0])):
            for h in hours:
                for m in minutes:
                    if (candidate := midnight.replace(hour=h, minute=m)) > t:
                        return candidate
        day += timedelta(days=1)
    return None


@settings(max_examples=150, deadline=None)
@given(EXPRESSIONS, TIMES)
def test_next_after_is_the_first_firing_after_t_in_utc(expr: str, t: datetime) -> None:
    schedule = parse(expr)
    found = schedule.next_after(t)
    horizon = datetime(t.year + 5, 12, 31, 23, 59, tzinfo=UTC)  # Next's own limit: five more years
    assert found == _reference_next(schedule, t, horizon)
    if found is not None:
        assert found > t and _fires_at(schedule, found)


@settings(max_examples=150, deadline=None)
@given(
    EXPRESSIONS, st.sampled_from([NY, "Europe/Berlin"]), st.sampled_from(DST_DAYS), st.integers(-2 * 86400, 2 * 86400)
)
def test_next_after_across_dst_fires_on_a_matching_wall_clock(expr: str, zone: str, day: date, shift: int) -> None:
    """Around a DST change in New York or Berlin a firing is still later and on a wall clock the
    fields allow (not so at Lord Howe's half-hour change, where robfig's minute loop can step
    into the next hour unchecked; the Go comparison covers that zone)."""
    tz = ZoneInfo(zone)
    t = datetime(day.year, day.month, day.day, tzinfo=UTC) + timedelta(seconds=shift)
    schedule = parse(expr, zone=tz)
    found = schedule.next_after(t)
    if found is not None:
        assert found > t
        assert _fires_at(schedule, found.astimezone(tz))
