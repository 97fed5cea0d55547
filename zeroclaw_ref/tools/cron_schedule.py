"""Job schedules: validation, the five-field cron parser and next-run times (policy.md §4.7).

Implements POL-CRON-02 to POL-CRON-04 and the advance rule of POL-PATH-19. Shared by the
`cron_add` tool (first run) and the scheduler (every later run).

Design note.
  Goals: classic cron semantics with the standard library only, correct across daylight
  saving changes, and bounded work for expressions that rarely or never match.
  Plan: a field parses to the set of values it admits. The next run walks the zone's local
  calendar day by day (at most `_HORIZON_DAYS`), and within a matching day the admitted
  hours and minutes in order; each candidate wall time is localised and kept only when it
  exists in the zone and lies after `now`.
  Caveats: a wall time skipped by a DST jump never runs that day; a repeated wall time runs
  at its first occurrence only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from zeroclaw_ref.core.clock import rfc3339
from zeroclaw_ref.core.jsontypes import JSON, JSONObject, dumps

# Design: eight years reach every 29 February, even across a skipped century leap year; an
# expression that matches no day within it (such as 30 February) never matches at all.
_HORIZON_DAYS = 366 * 8

# (lowest, highest) value of each field, in expression order (POL-CRON-04).
_RANGES = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))

# [POL-CRON-02] an RFC 3339 timestamp whose offset is explicit (`Z` or ±hh:mm)
_RFC3339 = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$", re.ASCII
)
_NUMBER = re.compile(r"^\d+$", re.ASCII)

AT_FORMAT_TEXT = "'at' must be an RFC 3339 timestamp with an explicit offset"
AT_PAST_TEXT = "'at' is in the past"
AFTER_TEXT = "after_seconds must be >= 1"
EVERY_TEXT = "every_ms must be >= 1000"


class ScheduleError(ValueError):
    """A schedule that cannot be used; `str(exc)` is the POL-CRON-03 text."""


@dataclass(frozen=True, slots=True)
class CronExpr:
    """A parsed five-field expression: the admitted values of each field.

    `dom_restricted` and `dow_restricted` say whether a day field admits fewer than all its
    values, which decides between "both must match" and "either may match" (POL-CRON-04).
    """

    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday; 7 is folded into 0
    dom_restricted: bool
    dow_restricted: bool

    def matches_day(self, day: date) -> bool:
        """Whether `day` (a local date) is admitted by the month and the two day fields."""
        if day.month not in self.months:
            return False
        dom = day.day in self.days
        dow = (day.isoweekday() % 7) in self.weekdays
        # [POL-CRON-04] both day fields restricted: either may match; otherwise both must
        # (an unrestricted field admits every day anyway).
        if self.dom_restricted and self.dow_restricted:
            return dom or dow
        return dom and dow


def _field(text: str, low: int, high: int) -> set[int]:
    """The values one field admits; ValueError when it is not `*`, `a`, `a-b`, `*/n`,
    `a-b/n` or a comma list of those within [low, high]."""
    values: set[int] = set()
    for item in text.split(","):
        base, slash, step_text = item.partition("/")
        step = 1
        if slash:
            if not _NUMBER.match(step_text) or int(step_text) < 1:
                raise ValueError(item)
            step = int(step_text)
        if base == "*":
            start, end = low, high
        elif "-" in base:
            first, _, last = base.partition("-")
            if not (_NUMBER.match(first) and _NUMBER.match(last)):
                raise ValueError(item)
            start, end = int(first), int(last)
        elif _NUMBER.match(base) and not slash:
            start = end = int(base)
        else:
            # `a/n` is not among the POL-CRON-04 forms
            raise ValueError(item)
        if not low <= start <= end <= high:
            raise ValueError(item)
        values.update(range(start, end + 1, step))
    return values


def parse_cron(expr: str) -> CronExpr:
    """Parse a five-field expression.

    Raises:
        ScheduleError: `Invalid cron expression: <expr>` for any malformed field.
    """
    fields = expr.split()
    if len(fields) != 5:
        raise ScheduleError(f"Invalid cron expression: {expr}")
    try:
        sets = [_field(text, low, high) for text, (low, high) in zip(fields, _RANGES, strict=True)]
    except ValueError:
        raise ScheduleError(f"Invalid cron expression: {expr}") from None
    weekdays = frozenset(d % 7 for d in sets[4])  # [POL-CRON-04] 0 and 7 are both Sunday
    return CronExpr(
        minutes=tuple(sorted(sets[0])),
        hours=tuple(sorted(sets[1])),
        days=frozenset(sets[2]),
        months=frozenset(sets[3]),
        weekdays=weekdays,
        dom_restricted=len(sets[2]) < 31,
        dow_restricted=len(weekdays) < 7,
    )


def zone(name: JSON) -> ZoneInfo:
    """The IANA zone called `name`.

    Raises:
        ScheduleError: `Unknown time zone: <tz>`.
    """
    shown = name if isinstance(name, str) else dumps(name)
    if not isinstance(name, str) or not name:
        raise ScheduleError(f"Unknown time zone: {shown}")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ScheduleError(f"Unknown time zone: {shown}") from None


def next_cron_time(expr: CronExpr, tz: ZoneInfo, after: datetime) -> datetime | None:
    """The first admitted minute strictly after `after`, in UTC; None when none exists."""
    local_after = after.astimezone(tz)
    day = local_after.date()
    for _ in range(_HORIZON_DAYS):
        if expr.matches_day(day):
            for hour in expr.hours:
                for minute in expr.minutes:
                    found = _existing(datetime.combine(day, time(hour, minute), tz))
                    if found is not None and found > after:
                        return found
        day += timedelta(days=1)
    return None


def _existing(local: datetime) -> datetime | None:
    """`local` in UTC, or None when that wall time does not exist in its zone (a DST gap)."""
    in_utc = local.astimezone(UTC)
    back = in_utc.astimezone(local.tzinfo)
    return in_utc if back.replace(tzinfo=None) == local.replace(tzinfo=None) else None


def _positive_int(value: JSON, minimum: int, text: str) -> int:
    # bool is an int subclass in Python, but not an integer in JSON
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ScheduleError(text)
    return value


def normalise(schedule: JSONObject, now: datetime) -> tuple[JSONObject, datetime]:
    """Validate a `cron_add` schedule; return the schedule as stored and its first run.

    Raises:
        ScheduleError: with the POL-CRON-03 text of the first problem found.
    """
    kind = schedule.get("kind")
    if kind == "cron":
        expr = schedule.get("expr")
        if not isinstance(expr, str):
            raise ScheduleError(f"Invalid cron expression: {'' if expr is None else dumps(expr)}")
        tz_name = schedule.get("tz", "UTC")
        tz_name = "UTC" if tz_name is None else tz_name
        parsed, tz = parse_cron(expr), zone(tz_name)
        first = next_cron_time(parsed, tz, now)
        if first is None:
            raise ScheduleError(f"Invalid cron expression: {expr}")
        return {"kind": "cron", "expr": expr, "tz": tz.key}, first
    if kind == "at":
        raw = schedule.get("at")
        if not isinstance(raw, str) or not _RFC3339.match(raw):
            raise ScheduleError(AT_FORMAT_TEXT)
        try:
            moment = datetime.fromisoformat(raw.upper().replace("Z", "+00:00"))
        except ValueError:
            raise ScheduleError(AT_FORMAT_TEXT) from None
        if moment < now:
            raise ScheduleError(AT_PAST_TEXT)
        return {"kind": "at", "at": raw}, moment.astimezone(UTC)
    if kind == "after":
        seconds = _positive_int(schedule.get("after_seconds"), 1, AFTER_TEXT)
        return {"kind": "after", "after_seconds": seconds}, now + timedelta(seconds=seconds)
    if kind == "every":
        millis = _positive_int(schedule.get("every_ms"), 1000, EVERY_TEXT)
        return {"kind": "every", "every_ms": millis}, now + timedelta(milliseconds=millis)
    shown = kind if isinstance(kind, str) else ("" if kind is None else dumps(kind))
    raise ScheduleError(f"Unknown schedule kind: {shown}")


def deletes_after_run(schedule: JSONObject) -> bool:
    """[POL-CRON-08] the default of `delete_after_run`: true for one-shot schedules."""
    return schedule.get("kind") in ("at", "after")


def advance(schedule: JSONObject, due: str, now: datetime) -> str | None:
    """The `next_run_at` a due job moves to before it runs (POL-PATH-19), or None when the
    schedule runs once; `due` is the job's current `next_run_at`.

    Missed runs are skipped: the result always lies after `now`.
    """
    kind = schedule.get("kind")
    if kind == "cron":
        expr, tz = schedule.get("expr"), schedule.get("tz", "UTC")
        try:
            following = next_cron_time(parse_cron(str(expr)), zone(tz), now)
        except ScheduleError:
            return None  # Design: a stored schedule that no longer parses never runs again
        return None if following is None else rfc3339(following)
    if kind == "every":
        step = schedule.get("every_ms")
        if isinstance(step, bool) or not isinstance(step, int) or step < 1000:
            return None
        base = datetime.fromisoformat(due.replace("Z", "+00:00"))
        elapsed = int((now - base) / timedelta(milliseconds=1))
        steps = max(elapsed // step + 1, 1)
        following = base + timedelta(milliseconds=step * steps)
        if following.microsecond:
            # round up, so the stored second-precision value still lies after `now`
            following += timedelta(microseconds=1_000_000 - following.microsecond)
        return rfc3339(following)
    return None
