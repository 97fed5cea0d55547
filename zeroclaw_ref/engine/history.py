"""History trimming by message count at user-turn boundaries (policy.md POL-ENGINE-10)."""

from __future__ import annotations

from dataclasses import dataclass

from zeroclaw_ref.core.jsontypes import JSONObject

TRIM_REASON = "history message limit exceeded"  # [ACP-RT-07]


@dataclass(frozen=True, slots=True)
class Trimmed:
    kept: tuple[JSONObject, ...]
    dropped: int
    kept_turns: int


def trim(messages: list[JSONObject], limit: int) -> Trimmed:
    """Keep at most `limit` of the most recent messages, cutting only before a user message.

    The current (last) turn is always kept whole, even when it alone exceeds the limit, because
    a turn cut in the middle would show the model tool results without their calls.
    """
    starts = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    start = 0
    if len(messages) > limit and starts:
        fitting = [i for i in starts if len(messages) - i <= limit]
        start = fitting[0] if fitting else starts[-1]
    kept = messages[start:]
    kept_turns = sum(1 for m in kept if m.get("role") == "user")
    return Trimmed(tuple(kept), start, kept_turns)
