"""Wall-clock access behind a port, so tests and deterministic recordings control it (DESIGN §8).

Waits never use this clock: they use the monotonic clocks inside `queue` and `threading`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    """Tells the current UTC time."""

    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...


class SystemClock:
    """Reads the system clock at every call (freezegun controls it in tests)."""

    def now(self) -> datetime:
        return datetime.now(UTC)


class FixedClock:
    """Always returns the same instant (deterministic mode)."""

    def __init__(self, instant: datetime | None = None) -> None:
        self._instant = instant or datetime(2026, 1, 1, tzinfo=UTC)

    def now(self) -> datetime:
        return self._instant


def rfc3339(moment: datetime) -> str:
    """RFC 3339 UTC text with a `Z` suffix and whole seconds (store timestamps, DESIGN §10)."""
    # isoformat() is several times cheaper than strftime() and writes the same digits here
    # (a four-digit year); this runs once per stored turn (bench/acp_prompt_rtt).
    return moment.astimezone(UTC).replace(microsecond=0, tzinfo=None).isoformat() + "Z"
