"""sidecar/watcher/policy/schedule.py against the Go code it ports: go/tools/crontable runs
Kubernetes v1.34.1's CronJob validation and robfig/cron v3.0.1 (ParseStandard, Next, and the
controller's mostRecentScheduleTime) on the same schedules, time zones and times.

Every row of the unit tests' tables plus a few hundred seeded random schedules (well-formed and
not, names, steps, descriptors, @every durations, odd whitespace, TZ= prefixes) in zones with DST
(New York, Berlin, Sao Paulo's midnight change, Lord Howe's half hour), from times around their
transitions: the same accept/reject with the same message, the same next five firings, the same
most recent time and missed count. And ``gostd.go_date``, where every DST choice is made, against
``time.Date`` for each quarter hour of each DST change's day. The tool is a Go module of its own
(robfig pinned as Kubernetes pins it); without Go the tests skip, except under CI (require_go).
Cost: about 2 s with Go's caches warm.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from sidecar.errors import InputError
from sidecar.watcher.policy.gostd import go_date, instant
from sidecar.watcher.policy.schedule import most_recent, parse, time_zone
from tests.go.test_go_codegen_drift import GO, require_go
from tests.watcher.test_policy_schedule import BAD, NEXT, RECENT, ZONES

TOOL = GO / "tools" / "crontable"
SEED = 20250601
RANDOM_CASES = 400
ZONE_NAMES = [None, "UTC", "America/New_York", "Europe/Berlin", "America/Sao_Paulo", "Australia/Lord_Howe"]
ZONE_NAMES += ["Asia/Kolkata", "Pacific/Chatham", "Etc/GMT+5"]
BAD_ZONES = ["Foo/Bar", "Local", "America", "utc", "../x", "-x", "America/New_York/", "zone.tab"]
MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
GARBAGE = ["", "-", "x", "1-2-3", "1/2/3", "*/0", "*/-1", "5-", "-5", "1,,2", ",", "1/", "/2", "+3", "007"]
GARBAGE += ["*-3", "?/3", "99999999999999999999", "1-", "*/", "L", "5#2", "1-2/0", "jan-", "MON/2"]
DURATIONS = ["1h", "90m", "1h30m", "1.5h", ".5h", "-1h", "0", "0s", "500ms", "1d", "1", "1.", ".", "1h 2m"]
DURATIONS += ["2562047h", "2562048h", "9223372036854775807ns", "1µs", "1e3s", "+45s", "3600s"]
DESCRIPTORS = ["@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly", "@DAILY"]
DESCRIPTORS += ["@daily ", "@every", "@reboot", "@"]


@dataclass(frozen=True)
class Case:
    expr: str
    tz: str | None
    start: datetime
    now: datetime | None = None


@pytest.fixture(scope="module")
def crontable(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tool built (gofmt- and vet-clean, go.mod/go.sum never rewritten)."""
    require_go()
    out = tmp_path_factory.mktemp("crontable") / "crontable"
    env = {**os.environ, "GOFLAGS": "-mod=readonly", "CGO_ENABLED": "0"}
    unformatted = subprocess.run(["gofmt", "-l", "."], cwd=TOOL, capture_output=True, text=True, timeout=120)
    assert unformatted.returncode == 0 and not unformatted.stdout, unformatted.stdout + unformatted.stderr
    for args in (["go", "vet", "./..."], ["go", "build", "-o", str(out), "."]):
        proc = subprocess.run(args, cwd=TOOL, capture_output=True, text=True, timeout=600, env=env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def _piece(rng: random.Random, low: int, high: int, names: list[str]) -> str:
    def value() -> str:
        if names and rng.random() < 0.3:
            name = rng.choice(names)
            return "".join(c.upper() if rng.random() < 0.5 else c for c in name)
        return str(rng.choice([low, high, low - 1, high + 1, rng.randint(low, high), rng.randint(low, high)]))

    kind = rng.randrange(9)
    step = rng.choice([1, 2, 3, 5, 7, 15, 40])
    if kind == 0:
        return rng.choice(["*", "?"])
    if kind == 1:
        return f"{rng.choice(['*', '?'])}/{step}"
    if kind == 2:
        return f"{value()}-{value()}"
    if kind == 3:
        return f"{value()}-{value()}/{step}"
    if kind == 4:
        return f"{value()}/{step}"
    if kind == 5 and rng.random() < 0.3:
        return rng.choice(GARBAGE)
    return value()


def _field(rng: random.Random, low: int, high: int, names: list[str]) -> str:
    return ",".join(_piece(rng, low, high, names) for _ in range(rng.choice([1, 1, 1, 2, 3])))


def _expr(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.06:
        return rng.choice(DESCRIPTORS)
    if roll < 0.12:
        return "@every " + rng.choice(DURATIONS)
    if roll < 0.14:
        return rng.choice(["TZ=UTC 0 0 * * *", "CRON_TZ=Europe/Berlin 0 * * * *", "TZ=UTC", "0 0 * * * TZ"])
    bounds = [(0, 59, []), (0, 23, []), (1, 31, []), (1, 12, MONTHS), (0, 6, DAYS)]
    parts = [_field(rng, low, high, names) for low, high, names in bounds]
    if rng.random() < 0.5:  # near the small hours, where DST changes happen
        parts[1] = rng.choice(["0", "1", "2", "3", "1-3", "*/2", "0,2", "*"])
        parts[0] = rng.choice(["0", "30", "*/15", "59", "*", "0,45"])
        parts[2:] = rng.choice([["*", "*", "*"], ["*", "*", "?"], ["1-15", "*", "0"], ["*/2", "*", "*"]])
    if rng.random() < 0.05:
        parts = parts[: rng.choice([3, 4])] if rng.random() < 0.5 else [*parts, "*"]
    sep = rng.choice([" ", " ", " ", "  ", "\t"])
    return (" " if rng.random() < 0.05 else "") + sep.join(parts)


def _transitions(zone: str | None, years: tuple[int, ...] = (2018, 2019, 2024)) -> list[datetime]:
    """The instants the zone's UTC offset changes in ``years`` (hour by hour, then minute by minute)."""
    if zone is None:
        return []
    tz = ZoneInfo(zone)
    found = []
    for year in years:
        t = datetime(year, 1, 1, tzinfo=UTC)
        while t.year == year:
            if t.astimezone(tz).utcoffset() != (t + timedelta(hours=1)).astimezone(tz).utcoffset():
                u = t
                while u.astimezone(tz).utcoffset() == t.astimezone(tz).utcoffset():
                    u += timedelta(minutes=1)
                found.append(u)
            t += timedelta(hours=1)
    return found


def _cases() -> list[Case]:
    rng = random.Random(SEED)
    cases = [Case(expr, tz, datetime.fromisoformat(start)) for expr, tz, start, _ in NEXT]
    cases += [Case(expr, None, datetime(2024, 1, 1, tzinfo=UTC)) for expr, _ in BAD]
    cases += [Case("0 0 * * *", name, datetime(2024, 1, 1, tzinfo=UTC)) for name, _ in ZONES]
    cases += [Case(expr, tz, datetime.fromisoformat(e), datetime.fromisoformat(n)) for expr, tz, e, n, *_ in RECENT]
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    cases += [Case(expr, None, t0, t0 + timedelta(days=400)) for expr in ("0 0 30 2 *", "0 0 , * *")]  # never
    transitions = {z: _transitions(z) for z in ZONE_NAMES}
    for _ in range(RANDOM_CASES):
        tz = rng.choice(BAD_ZONES) if rng.random() < 0.03 else rng.choice(ZONE_NAMES)
        if transitions.get(tz) and rng.random() < 0.7:
            start = rng.choice(transitions[tz]) + timedelta(seconds=rng.randint(-30 * 3600, 30 * 3600))
        else:
            start = datetime(2000, 1, 1, tzinfo=UTC) + timedelta(seconds=rng.randint(0, 40 * 365 * 86400))
        if rng.random() < 0.2:
            start += timedelta(microseconds=rng.randint(1, 999999))
        span = rng.choice([30, 3600, 86400, 7 * 86400, 40 * 86400])
        cases.append(Case(_expr(rng), tz, start, start + timedelta(seconds=rng.randint(0, span))))
    return cases


def _query(case: Case) -> str:
    # "" is no time zone to the Python module (Kubernetes refuses it): the tool gets null
    q: dict[str, object] = {"expr": case.expr, "tz": case.tz or None, "from": case.start.isoformat()}
    if case.now is not None:
        q["now"] = case.now.isoformat()
    return json.dumps(q)


@dataclass
class Answer:
    """One side's view of a case: the refusals, or the next firings and the most recent one."""

    errors: list[str] = field(default_factory=list)
    next: list[datetime] = field(default_factory=list)
    recent: datetime | None = None
    missed: int = 0
    invalid: str | None = None

    @classmethod
    def of_go(cls, line: str) -> Answer:
        doc = json.loads(line)
        recent = doc.get("mostRecent")
        return cls(
            errors=doc.get("errors") or [],
            next=[datetime.fromisoformat(t) for t in doc.get("next") or []],
            recent=None if recent is None else datetime.fromisoformat(recent),
            missed=doc.get("missed", 0),
            invalid=doc.get("invalid"),
        )

    @classmethod
    def of_python(cls, case: Case) -> Answer:
        answer = cls()
        zone: tzinfo = UTC
        try:
            parse(case.expr)
        except InputError as exc:
            answer.errors.append(exc.problem)
        try:
            zone = time_zone(case.tz)
        except InputError as exc:
            answer.errors.append(exc.problem)
        if answer.errors:
            return answer
        schedule = parse(case.expr, zone=zone)
        while len(answer.next) < 5:
            found = schedule.next_after(answer.next[-1] if answer.next else case.start)
            if found is None:
                break
            answer.next.append(found)
        if case.now is not None:
            try:
                answer.recent, answer.missed = most_recent(schedule, case.start, case.now)
            except InputError as exc:
                answer.invalid = exc.problem
        return answer


def _differ(case: Case, go: Answer, py: Answer) -> str | None:
    where = f"{case.expr!r} tz={case.tz!r} from={case.start.isoformat()} now={case.now and case.now.isoformat()}"
    if bool(go.errors) != bool(py.errors):
        return f"{where}: Go {go.errors or 'accepts'}, Python {py.errors or 'accepts'}"
    for problem in py.errors:
        # Go words a zone that is a directory or a data file its own way ("is a directory")
        odd_zone = problem.startswith("unknown time zone") and not any(e.startswith("unknown") for e in go.errors)
        if problem not in go.errors and not odd_zone:
            return f"{where}: Python says {problem!r}, Go {go.errors}"
    if go.next != py.next:
        return f"{where}: next Go {[t.isoformat() for t in go.next]}, Python {[t.isoformat() for t in py.next]}"
    if case.now is not None and (go.recent, go.missed, go.invalid) != (py.recent, py.missed, py.invalid):
        return (
            f"{where}: most recent Go {(go.recent, go.missed, go.invalid)}, Python {(py.recent, py.missed, py.invalid)}"
        )
    return None


def test_python_schedules_equal_kubernetes_and_robfig(crontable: Path) -> None:
    cases = _cases()
    proc = subprocess.run(
        [str(crontable)], input="\n".join(map(_query, cases)) + "\n", capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    answers = [Answer.of_go(line) for line in proc.stdout.splitlines()]
    assert len(answers) == len(cases)
    differences = [d for c, a in zip(cases, answers, strict=True) if (d := _differ(c, a, Answer.of_python(c)))]
    assert not differences, f"{len(differences)} of {len(cases)} differ:\n" + "\n".join(differences[:15])
    accepted = [a for a in answers if not a.errors]
    assert len(cases) // 3 < len(accepted) < len(cases) - 50  # both sides well exercised
    assert sum(bool(a.next) for a in accepted) > len(accepted) // 2
    assert sum(a.missed > 1 for a in accepted) > 20


def _wall_clocks() -> list[tuple[str | None, tuple[int, int, int, int, int, int]]]:
    """Every quarter hour of each DST change's local day (skipped and repeated ones included),
    and fields time.Date normalises (Feb 30, month 13, hour 24, minute 60)."""
    clocks: list[tuple[str | None, tuple[int, int, int, int, int, int]]] = []
    for zone in ZONE_NAMES:
        for change in _transitions(zone):
            day = instant(int(change.timestamp()), ZoneInfo(str(zone))).date()
            clocks += [(zone, (day.year, day.month, day.day, q // 4, q % 4 * 15, 0)) for q in range(24 * 4)]
    odd = [(2024, 2, 30, 0, 0, 0), (2024, 13, 1, 0, 0, 0), (2024, 0, 1, 0, 0, 0), (2024, 1, 32, 0, 0, 0)]
    odd += [(2023, 2, 29, 0, 0, 0), (2024, 1, 1, 24, 0, 0), (2024, 1, 1, 0, 60, 0), (2024, 3, 31, 2, 30, 0)]
    clocks += [(zone, fields) for zone in ("Europe/Berlin", "America/Sao_Paulo", None) for fields in odd]
    return clocks


def test_go_date_is_time_date(crontable: Path) -> None:
    """The one place DST choices are made (``gostd.go_date``) gives Go's instant for every wall clock."""
    clocks = _wall_clocks()
    lines = [json.dumps({"date": list(fields), "tz": zone}) for zone, fields in clocks]
    proc = subprocess.run([str(crontable)], input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    go = [datetime.fromisoformat(json.loads(line)["date"]) for line in proc.stdout.splitlines()]
    python = [instant(go_date(ZoneInfo(z) if z else UTC, *fields), UTC) for z, fields in clocks]
    differ = [
        f"{z} {fields}: Go {g}, Python {p}" for (z, fields), g, p in zip(clocks, go, python, strict=True) if g != p
    ]
    assert not differ, "\n".join(differ[:15])
    assert len(clocks) > 2000
