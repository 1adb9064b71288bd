"""A RepackPolicy's ``schedule`` and ``timeZone``, read and followed as Kubernetes' CronJob
controller v2 reads and follows a CronJob's.

Kubernetes v1.34.1: the fields' checks in pkg/apis/batch/validation/validation.go
(``validateScheduleFormat``, ``validateTimeZone``), the controller's arithmetic in
pkg/controller/cronjob/utils.go (``mostRecentScheduleTime``, ``nextScheduleTime``,
``nextScheduleTimeDuration``) and cronjob_controllerv2.go (``getJobName``); the parser it uses,
robfig/cron v3.0.1's ``ParseStandard`` (parser.go) and ``SpecSchedule.Next`` (spec.go). Ported
rather than rewritten so that a policy fires when a CronJob with the same schedule would, quirks
included (``tests/go/test_go_crontable.py`` compares with the Go code itself):

* day of week is 0-6 with Sunday 0: ``7`` is rejected ("end of range (7) above maximum (6)");
* ``@every <Go duration>`` is accepted (Kubernetes only asks the parser): a fixed interval from
  the last time, blind to the time zone, below one second (``-1h`` too) raised to one second;
* day of month and day of week combine with OR only when neither field holds a star: ``*``,
  ``?``, ``*/1``, a list with ``*`` in it, and ``*-5`` (the range after a star is ignored) count
  as a star, ``*/2`` and ``1-31`` do not; ``1,,2`` is ``1,2`` and ``,`` selects nothing;
* a schedule that never fires (Feb 30, or ``,``) is valid; robfig's search gives up after five
  years (so ``0 0 29 2 *`` finds nothing from March 2096 to the 2104 leap day), and the controller
  then reports "time difference between two schedules is less than 1 second";
* around a DST change Next steps wall clocks with Go's ``time.Date`` (``gostd.go_date``): a time
  in a skipped hour does not fire that day, one in a repeated hour fires twice (two runs, two
  names), and at Lord Howe's half-hour change ``45 1 * * *`` also fires at 02:45 (the minute loop
  steps from 01:59 to 02:30 without re-checking the hour).

Deliberate differences: without a ``timeZone`` the schedule is UTC, never the watcher's own local
zone (it runs in a container; Kubernetes would use kube-controller-manager's); an empty
``timeZone`` means none (Kubernetes rejects it); and ``TZ=``/``CRON_TZ=`` in the schedule is
always refused, as Kubernetes refuses it on create.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sidecar.errors import InputError
from sidecar.watcher.policy import gostd
from sidecar.watcher.policy.gostd import GoError, add_date, go_date, instant

#: robfig's mark of a field written with a star, which switches the day rule from OR to AND
STAR = 1 << 63
#: Kubernetes warns (TooManyMissedTimes) past this many missed times; it never lists them
TOO_MANY_MISSED = 100
#: nextScheduleTimeDuration's padding against clock skew
REQUEUE_DELTA = timedelta(milliseconds=100)
#: the controller's error (its InvalidSchedule event) for a schedule that fires no more
NEVER = "time difference between two schedules is less than 1 second"

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTH_NAMES = {m: i for i, m in enumerate(_MONTHS, 1)}
_DOW_NAMES = {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
#: (min, max, names) of minute, hour, day of month, month, day of week
_BOUNDS: tuple[tuple[int, int, dict[str, int]], ...] = ((0, 59, {}), (0, 23, {}), (1, 31, {}))
_BOUNDS += ((1, 12, _MONTH_NAMES), (0, 6, _DOW_NAMES))
_ZONE_PART = re.compile(r"[A-Za-z.\-_0-9+]{1,14}")


def _bits(low: int, high: int, step: int = 1) -> int:
    return sum(1 << i for i in range(low, high + 1, step))


_ALL_HOURS, _ALL_DOM, _ALL_MONTHS, _ALL_DOW = (_bits(lo, hi) | STAR for lo, hi, _ in _BOUNDS[1:])
#: parseDescriptor: (minute, hour, dom, month, dow)
_DESCRIPTORS = {
    "@yearly": (1, 1, 1 << 1, 1 << 1, _ALL_DOW),
    "@annually": (1, 1, 1 << 1, 1 << 1, _ALL_DOW),
    "@monthly": (1, 1, 1 << 1, _ALL_MONTHS, _ALL_DOW),
    "@weekly": (1, 1, _ALL_DOM, _ALL_MONTHS, 1),
    "@daily": (1, 1, _ALL_DOM, _ALL_MONTHS, _ALL_DOW),
    "@midnight": (1, 1, _ALL_DOM, _ALL_MONTHS, _ALL_DOW),
    "@hourly": (1, _ALL_HOURS, _ALL_DOM, _ALL_MONTHS, _ALL_DOW),
}


@dataclass(frozen=True, kw_only=True)
class Schedule:
    """A parsed schedule: one bit per allowed value of each field (plus STAR), or ``every``."""

    expr: str
    minute: int = 0
    hour: int = 0
    dom: int = 0
    month: int = 0
    dow: int = 0
    #: ``@every``: robfig's ConstantDelaySchedule, whole seconds
    every: timedelta | None = None
    zone: tzinfo = UTC
    path: str = "spec.schedule"

    def next_after(self, t: datetime) -> datetime | None:
        """The first firing after ``t`` (aware), in ``t``'s zone; None where robfig's ``Next``
        returns the zero time (nothing within five years)."""
        start = gostd.unix(_utc(t))  # Next drops the fraction and starts at the following second
        if self.every is not None:
            return instant(start + self.every // timedelta(seconds=1), t.tzinfo or UTC)
        found = self._next(start + 1)
        return None if found is None else instant(found, t.tzinfo or UTC)

    def day_matches(self, t: datetime) -> bool:
        """robfig's ``dayMatches``: both day fields must match if either holds a star, else either."""
        dom = bool(1 << t.day & self.dom)
        dow = bool(1 << (t.weekday() + 1) % 7 & self.dow)
        return dom and dow if (self.dom | self.dow) & STAR else dom or dow

    def _next(self, start: int) -> int | None:
        if not (self.minute and self.hour and self.month):  # a field that selects nothing: Next's
            return None  # five-year walk ends with the zero time anyway, only slower
        walk = _Walk(self, start)
        year_limit = walk.t.year + 5
        while walk.t.year <= year_limit:  # each wrap re-checks every field from the month down
            if not (walk.month() or walk.day() or walk.hour() or walk.minute() or walk.second()):
                return walk.u
        return None


class _Walk:
    """``SpecSchedule.Next``'s loops, field by field; each returns True where Go does ``goto WRAP``.
    The first field that must move resets the smaller ones (``added``); later moves keep them."""

    def __init__(self, spec: Schedule, start: int) -> None:
        self.spec, self.zone, self.added = spec, spec.zone, False
        self._go(start)

    def _go(self, u: int) -> None:
        self.u, self.t = u, instant(u, self.zone)

    def _first(self) -> bool:
        """True the first time a field has to move (Go's ``if !added { added = true; reset }``)."""
        first, self.added = not self.added, True
        return first

    def month(self) -> bool:
        while not 1 << self.t.month & self.spec.month:
            if self._first():
                self._go(go_date(self.zone, self.t.year, self.t.month, 1))
            self._go(add_date(self.u, self.zone, months=1))
            if self.t.month == 1:
                return True
        return False

    def day(self) -> bool:
        while not self.spec.day_matches(self.t):
            if self._first():
                self._go(go_date(self.zone, self.t.year, self.t.month, self.t.day))
            self._go(add_date(self.u, self.zone, days=1))
            if self.t.hour:  # a midnight that DST skipped (Sao Paulo): back or on to the day's start
                self._go(self.u + ((24 - self.t.hour) if self.t.hour > 12 else -self.t.hour) * 3600)
            if self.t.day == 1:
                return True
        return False

    def hour(self) -> bool:
        while not 1 << self.t.hour & self.spec.hour:
            if self._first():
                self._go(go_date(self.zone, self.t.year, self.t.month, self.t.day, self.t.hour))
            self._go(self.u + 3600)
            if self.t.hour == 0:
                return True
        return False

    def minute(self) -> bool:
        while not 1 << self.t.minute & self.spec.minute:
            if self._first():
                self._go(self.u - self.u % 60)
            self._go(self.u + 60)
            if self.t.minute == 0:
                return True
        return False

    def second(self) -> bool:
        while self.t.second:  # the standard parser's seconds field is always "0"
            self._first()
            self._go(self.u + 1)
            if self.t.second == 0:
                return True
        return False


def _must_int(text: str) -> int:
    try:
        number = gostd.atoi(text)
    except GoError as exc:
        raise GoError(f"failed to parse int from {text}: {exc}") from None
    if number < 0:
        raise GoError(f"negative number ({number}) not allowed: {text}")
    return number


def _int_or_name(text: str, names: dict[str, int]) -> int:
    named = names.get(gostd.lower(text))
    return _must_int(text) if named is None else named


def _range(expr: str, low: int, high: int, names: dict[str, int]) -> int:
    """``getRange``: ``*``, ``?``, ``a``, ``a-b``, each optionally ``/step`` (``a/step`` runs to the
    field's maximum); the checks, and their order, as robfig makes them."""
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    extra = 0
    if low_and_high[0] in ("*", "?"):
        start, end, extra = low, high, STAR
    else:
        start = _int_or_name(low_and_high[0], names)
        if len(low_and_high) > 2:
            raise GoError(f"too many hyphens: {expr}")
        end = start if len(low_and_high) == 1 else _int_or_name(low_and_high[1], names)
    step = 1
    if len(range_and_step) > 2:
        raise GoError(f"too many slashes: {expr}")
    if len(range_and_step) == 2:
        step = _must_int(range_and_step[1])
        end = high if len(low_and_high) == 1 else end
        extra = 0 if step > 1 else extra
    if start < low:
        raise GoError(f"beginning of range ({start}) below minimum ({low}): {expr}")
    if end > high:
        raise GoError(f"end of range ({end}) above maximum ({high}): {expr}")
    if start > end:
        raise GoError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise GoError(f"step of range should be a positive number: {expr}")
    return _bits(start, end, step) | extra


def _parse_standard(expr: str, zone: tzinfo, path: str) -> Schedule:
    """``cron.ParseStandard`` on a schedule without TZ=: a descriptor, or five fields."""
    if expr.startswith("@"):
        if expr in _DESCRIPTORS:
            minute, hour, dom, month, dow = _DESCRIPTORS[expr]
            return Schedule(expr=expr, minute=minute, hour=hour, dom=dom, month=month, dow=dow, zone=zone, path=path)
        if not expr.startswith("@every "):
            raise GoError(f"unrecognized descriptor: {expr}")
        try:
            ns = gostd.parse_duration(expr.removeprefix("@every "))
        except GoError as exc:
            raise GoError(f"failed to parse duration {expr}: {exc}") from None
        seconds = max(ns, gostd.SECOND_NS) // gostd.SECOND_NS  # Every(): at least 1s, whole seconds
        return Schedule(expr=expr, every=timedelta(seconds=seconds), zone=zone, path=path)
    parts = gostd.fields(expr)
    if len(parts) != 5:
        raise GoError(f"expected exactly 5 fields, found {len(parts)}: [{' '.join(parts)}]")
    bits = [0] * 5
    for i, (part, (low, high, names)) in enumerate(zip(parts, _BOUNDS, strict=True)):
        for piece in part.split(","):  # strings.FieldsFunc: empty pieces vanish
            bits[i] |= _range(piece, low, high, names) if piece else 0
    minute, hour, dom, month, dow = bits
    return Schedule(expr=expr, minute=minute, hour=hour, dom=dom, month=month, dow=dow, zone=zone, path=path)


def parse(expr: str, path: str = "spec.schedule", *, zone: tzinfo = UTC) -> Schedule:
    """The schedule ``expr`` in ``zone`` (see :func:`time_zone`), or InputError at ``path`` worded
    as Kubernetes words it: "Required value", the TZ refusal, else robfig's parse error."""
    if not expr:
        raise InputError(path, "Required value")
    if "TZ" in expr:  # checked first: robfig's own TZ= handling panics on "TZ=UTC" (no space)
        raise InputError(path, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead")
    try:
        return _parse_standard(expr, zone, path)
    except GoError as exc:
        raise InputError(path, str(exc)) from None


def time_zone(name: str | None, path: str = "spec.timeZone") -> tzinfo:
    """The IANA zone ``name`` as ``validateTimeZone`` admits it, or InputError in its words; None
    or "" is UTC, never the watcher's local zone (a container's says nothing about the cluster's
    users)."""
    if not name:
        return UTC
    for part in name.split("/"):
        if part in (".", "..") or part.startswith("-") or not _ZONE_PART.fullmatch(part):
            raise InputError(path, f"unknown time zone {name}")
    if name.lower() == "local":
        raise InputError(path, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones")
    if name == "UTC":
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # Go also says "is a directory" and the like
        raise InputError(path, f"unknown time zone {name}") from None


def most_recent(schedule: Schedule, earliest: datetime, now: datetime) -> tuple[datetime | None, int]:
    """``mostRecentScheduleTime``: the latest firing in (earliest, now] (in ``earliest``'s zone)
    and Kubernetes' estimate of the firings missed: 0 while at most one is due, else the time
    elapsed since the first over the gap between the first two, plus one. A long outage is not
    walked firing by firing: the search jumps that many gaps on, less two, which is exact for
    evenly spaced firings but can land past the last one of an uneven schedule (weekdays across a
    weekend) and then report none. A schedule that fires no more raises InputError (NEVER)."""
    earliest_utc, now_utc = _utc(earliest), _utc(now)
    t1 = schedule.next_after(earliest_utc)
    if t1 is None:
        raise InputError(schedule.path, NEVER)
    t2 = schedule.next_after(t1)
    if now_utc < t1:
        return None, 0
    if t2 is None:
        raise InputError(schedule.path, NEVER)
    if now_utc < t2:
        return t1.astimezone(earliest.tzinfo), 0
    between = int(gostd.seconds_between(t2, t1) + 0.5)  # Round(time.Second): whole seconds here
    if between < 1:
        raise InputError(schedule.path, NEVER)
    missed = int(gostd.seconds_between(now_utc, t1)) // between + 1
    found = None
    t = schedule.next_after(t1 + timedelta(seconds=(missed - 2) * between))
    while t is not None and t <= now_utc:
        found, t = t, schedule.next_after(t)
    return (None if found is None else found.astimezone(earliest.tzinfo)), missed


def _utc(t: datetime) -> datetime:
    """``t`` in UTC: aware datetimes of one ZoneInfo compare and subtract as wall clocks in Python,
    wrong across a DST change; in UTC they compare as instants."""
    if t.utcoffset() is None:
        raise ValueError(f"an aware datetime is needed, got {t!r}")
    return t.astimezone(UTC)


def _earliest(created: datetime, last_scheduled: datetime | None) -> datetime:
    return _utc(created if last_scheduled is None else last_scheduled)


def next_time(
    schedule: Schedule,
    *,
    created: datetime,
    last_scheduled: datetime | None,
    now: datetime,
    starting_deadline_seconds: int | None = None,
) -> tuple[datetime | None, int]:
    """``nextScheduleTime``: the firing to start a run for now (None if none is due), counting from
    the last one started or the policy's creation, never further back than the starting deadline;
    with :func:`most_recent`'s missed estimate (0 with None), over TOO_MANY_MISSED the
    controller's TooManyMissedTimes warning."""
    earliest, now = _earliest(created, last_scheduled), _utc(now)
    if starting_deadline_seconds is not None:
        earliest = max(earliest, now - timedelta(seconds=starting_deadline_seconds))
    found, missed = most_recent(schedule, earliest, now)
    return (None, 0) if found is None or found > now else (found, missed)


def requeue_after(
    schedule: Schedule, *, created: datetime, last_scheduled: datetime | None, now: datetime
) -> timedelta | None:
    """``nextScheduleTimeDuration``: how long to wait before looking again — until the firing
    after the most recent due one (or after now, when that cannot be told), plus REQUEUE_DELTA;
    None when the schedule never fires again."""
    earliest, now = _earliest(created, last_scheduled), _utc(now)
    try:
        found, missed = most_recent(schedule, earliest, now)
    except InputError:
        found, missed = now, 0
    base = found if found is not None else (earliest if missed == 0 else now)
    after = schedule.next_after(base)
    return None if after is None else after + REQUEUE_DELTA - now


def run_name(policy_name: str, scheduled: datetime) -> str:
    """``getJobName``: ``<policy>-<minutes since the epoch>``. The same firing always gets the same
    name, so a create that already happened (before a restart, or by another replica) fails with
    AlreadyExists instead of starting a second run; 11 characters to spare, as Kubernetes keeps
    CronJob names to 52."""
    seconds = gostd.unix(_utc(scheduled))
    minutes = seconds // 60 if seconds >= 0 else -(-seconds // 60)  # Go's division truncates
    return f"{policy_name}-{minutes}"
