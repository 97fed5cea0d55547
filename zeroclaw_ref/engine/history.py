"""History trimming by message count at user-turn boundaries (policy.md POL-ENGINE-10)."""

from __future__ import annotations

from dataclasses import dataclass

from zeroclaw_ref.core.jsontypes import JSONObject

TRIM_REASON = "history message limit exceeded"  # [ACP-RT-07]


@dataclass(frozen=True, slots=True)
class Trimmed:
    kept: tuple[JSONObject, ...]
    dropped: int

    @property
    def kept_turns(self) -> int:
        """Turns in the kept window (counted only when a trim is reported, ACP-RT-07)."""
        return [m.get("role") for m in self.kept].count("user")


def trim(messages: list[JSONObject], limit: int) -> Trimmed:
    """Keep at most `limit` of the most recent messages, cutting only before a user message.

    The current (last) turn is always kept whole, even when it alone exceeds the limit, because
    a turn cut in the middle would show the model tool results without their calls. Design: only
    the last `limit` messages (or the current turn) are looked at, so a long session costs
    O(limit) per model request, not O(history).
    """
    total = len(messages)
    start = 0
    if total > limit:
        lowest = total - limit  # the earliest index the limit allows
        start = next((i for i in range(lowest, total) if _is_user(messages[i])), -1)
        if start < 0:  # the current turn alone exceeds the limit: keep it whole
            start = lowest - 1
            while start > 0 and not _is_user(messages[start]):
                start -= 1
            start = max(start, 0)
    return Trimmed(tuple(messages[start:]), start)


def _is_user(message: JSONObject) -> bool:
    return message.get("role") == "user"
