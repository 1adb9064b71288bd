"""What robfig/cron v3 takes from Go's standard library, reproduced so that a schedule means, and
its error reads, what Kubernetes' own parse would say.

The parser splits with ``strings.Fields`` (Go's whitespace, not Python's), lowers names with
``strings.ToLower``, reads numbers with ``strconv.Atoi`` (a sign, leading zeros; its error quotes
with ``strconv.Quote``) and ``@every`` durations with ``time.ParseDuration`` (``1h30m``, ``1.5h``,
``-1h``; its error quotes with the time package's own quote). ``Next`` walks wall clocks with
``time.Date`` and ``AddDate``, whose way of resolving a wall clock that a DST change skips or
repeats (go/src/time/time.go, ``Date``) decides which instant a schedule fires at around one.
Instants are whole Unix seconds throughout: a schedule fires on a second, and Go's ``Truncate``
works on the time since year 1, a whole number of minutes from the Unix epoch.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import UTC, date, datetime, timedelta, tzinfo

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_EPOCH_DAY = date(1970, 1, 1).toordinal()
#: unicode.IsSpace: ASCII's six, U+0085, U+00A0 and Unicode's White_Space (not Python's
#: str.split, which also splits at the ASCII separators U+001C..U+001F)
_SPACE = re.compile("[\t\n\v\f\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+")
_NAMED_ESCAPES = {"\a": r"\a", "\b": r"\b", "\f": r"\f", "\n": r"\n", "\r": r"\r", "\t": r"\t", "\v": r"\v"}
_UINT64 = (1 << 64) - 1
_INT64_MAX = (1 << 63) - 1
SECOND_NS = 10**9
#: time.ParseDuration's units, in nanoseconds (both micro signs, as Go spells them)
_UNITS = {b"ns": 1, b"us": 10**3, "µs".encode(): 10**3, "μs".encode(): 10**3, b"ms": 10**6, b"s": SECOND_NS}
_UNITS |= {b"m": 60 * SECOND_NS, b"h": 3600 * SECOND_NS}


class GoError(ValueError):
    """A Go error, worded as its ``Error()`` method words it."""


def fields(text: str) -> list[str]:
    """``strings.Fields``: the pieces between runs of Go's whitespace."""
    return [piece for piece in _SPACE.split(text) if piece]


def lower(text: str) -> str:
    """``strings.ToLower``: simple case mapping, so "FRİ" lowers to "fri" as in Go (Python's full
    mapping makes İ two characters)."""
    return "".join("i" if c == "\u0130" else c.lower() for c in text)


def quote(text: str) -> str:
    """``strconv.Quote``: printable runes as they are, the rest escaped."""
    out = ['"']
    for c in text:
        code = ord(c)
        if c in '"\\':
            out.append("\\" + c)
        elif 0x20 <= code < 0x7F or (code >= 0x80 and unicodedata.category(c)[0] in "LMNPS"):
            out.append(c)
        elif c in _NAMED_ESCAPES:
            out.append(_NAMED_ESCAPES[c])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif 0xD800 <= code <= 0xDFFF:  # not a rune: Go writes the replacement character's escape
            out.append("\\ufffd")
        else:
            out.append(f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    return "".join([*out, '"'])


def time_quote(text: str) -> str:
    """The time package's ``quote``: every byte of a non-ASCII or control rune as ``\\xNN``."""
    out = ['"']
    for c in text:
        if ord(c) >= 0x80 or c < " ":
            out.extend(f"\\x{b:02x}" for b in c.encode(errors="surrogatepass"))
        else:
            out.append("\\" + c if c in '"\\' else c)
    return "".join([*out, '"'])


def _num_error(text: str, problem: str) -> GoError:
    return GoError(f"strconv.Atoi: parsing {quote(text)}: {problem}")


def atoi(text: str) -> int:
    """``strconv.Atoi`` on 64 bits: an optional sign and decimal digits; under 19 bytes its fast
    path, else ``ParseInt(s, 10, 0)``, which reports an overflow met before a bad byte as a range
    error (internal/strconv/atoi.go)."""
    raw = text.encode()
    body = raw[1:] if raw[:1] in (b"+", b"-") else raw
    if 0 < len(raw) < 19:
        if not body or not body.isdigit():
            raise _num_error(text, "invalid syntax")
        return -int(body) if raw[:1] == b"-" else int(body)
    if not body:
        raise _num_error(text, "invalid syntax")
    value = 0
    for byte in body:
        if not 0x30 <= byte <= 0x39:
            raise _num_error(text, "invalid syntax")
        value = value * 10 + byte - 0x30
        if value > _UINT64:
            raise _num_error(text, "value out of range")
    if value > _INT64_MAX + (raw[:1] == b"-"):
        raise _num_error(text, "value out of range")
    return -value if raw[:1] == b"-" else value


def _duration_error(problem: str, orig: str) -> GoError:
    return GoError(f"time: {problem} {time_quote(orig)}")


def parse_duration(text: str) -> int:
    """``time.ParseDuration`` in nanoseconds: ``[-+]?([0-9]*(\\.[0-9]*)?[a-z]+)+`` or a bare 0,
    with its overflow checks and its float rounding of fractions (go/src/time/format.go)."""
    s = text.encode()
    neg = s[:1] == b"-"
    if s[:1] in (b"-", b"+"):
        s = s[1:]
    if s == b"0":
        return 0
    if not s:
        raise _duration_error("invalid duration", text)
    total = 0
    while s:
        if not (s[0] == 0x2E or 0x30 <= s[0] <= 0x39):
            raise _duration_error("invalid duration", text)
        digits = len(s) - len(s.lstrip(b"0123456789"))
        whole = 0
        for byte in s[:digits]:
            whole = whole * 10 + byte - 0x30
            if whole > 1 << 63:
                raise _duration_error("invalid duration", text)
        s = s[digits:]
        frac, scale, post = 0, 1.0, False
        if s[:1] == b".":
            s = s[1:]
            places = len(s) - len(s.lstrip(b"0123456789"))
            for byte in s[:places]:  # leadingFraction: stops gaining precision instead of failing
                if frac > _INT64_MAX // 10 or frac * 10 + byte - 0x30 > 1 << 63:
                    break
                frac, scale = frac * 10 + byte - 0x30, scale * 10
            s, post = s[places:], places > 0
        if not digits and not post:
            raise _duration_error("invalid duration", text)
        letters = 0
        while letters < len(s) and not (s[letters] == 0x2E or 0x30 <= s[letters] <= 0x39):
            letters += 1
        if not letters:
            raise _duration_error("missing unit in duration", text)
        unit_text, s = s[:letters], s[letters:]
        unit = _UNITS.get(unit_text)
        if unit is None:
            raise _duration_error(f"unknown unit {time_quote(unit_text.decode())} in duration", text)
        if whole > (1 << 63) // unit:
            raise _duration_error("invalid duration", text)
        whole *= unit
        if frac > 0:
            whole += int(float(frac) * (float(unit) / scale))
            if whole > 1 << 63:
                raise _duration_error("invalid duration", text)
        total += whole
        if total > 1 << 63:
            raise _duration_error("invalid duration", text)
    if neg:
        return -total
    if total > _INT64_MAX:
        raise _duration_error("invalid duration", text)
    return total


def unix(t: datetime) -> int:
    """Whole seconds since the epoch, rounded down (``t.Unix()``)."""
    delta = t - _EPOCH
    return delta.days * 86400 + delta.seconds


def instant(seconds: int, zone: tzinfo) -> datetime:
    """The Unix second ``seconds`` as a wall clock in ``zone`` (``time.Unix(s, 0).In(zone)``)."""
    return (_EPOCH + timedelta(seconds=seconds)).astimezone(zone)


def _offset(seconds: int, zone: tzinfo) -> int:
    offset = instant(seconds, zone).utcoffset()
    return 0 if offset is None else offset.days * 86400 + offset.seconds


def go_date(zone: tzinfo, year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> int:
    """``time.Date``: the fields normalised (Feb 30 is Mar 2, hour 24 the next day), then the zone's
    offset looked up at the wall clock read as UTC and, when that lands outside the offset's
    period, again at the corrected instant. So a wall clock that a DST change skips or repeats
    resolves by the zone's side of UTC, not by Python's fold: the skipped 02:30 is 01:30 EST in
    New York and 03:30 CEST in Berlin; the repeated 01:30 in New York is the first (EDT), the
    repeated 02:30 in Berlin the second (CET)."""
    year, month = year + (month - 1) // 12, (month - 1) % 12 + 1
    minute, second = minute + second // 60, second % 60
    hour, minute = hour + minute // 60, minute % 60
    day, hour = day + hour // 24, hour % 24
    days = date(year, month, 1).toordinal() - _EPOCH_DAY + day - 1
    wall = days * 86400 + hour * 3600 + minute * 60 + second
    offset = _offset(wall, zone)
    if offset:
        offset = _offset(wall - offset, zone)
    return wall - offset


def add_date(seconds: int, zone: tzinfo, months: int = 0, days: int = 0) -> int:
    """``t.AddDate(0, months, days)``: the same wall clock that many months and days on."""
    t = instant(seconds, zone)
    return go_date(zone, t.year, t.month + months, t.day + days, t.hour, t.minute, t.second)


def seconds_between(later: datetime, earlier: datetime) -> float:
    """``later.Sub(earlier).Seconds()``: a Duration saturates at about 292 years."""
    delta = later - earlier
    ns = max(-(1 << 63), min(_INT64_MAX, ((delta.days * 86400 + delta.seconds) * 10**6 + delta.microseconds) * 1000))
    whole = abs(ns) // SECOND_NS
    sign = -1 if ns < 0 else 1
    return sign * (float(whole) + float(abs(ns) - whole * SECOND_NS) / 1e9)
