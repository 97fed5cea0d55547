"""What a running turn reports (acp.md Table 0-1) and how it ends (ACP-RT-02).

Events are past-tense values; every front door projects them its own way (ACP updates, terminal
text, an HTTP body) through an `EventSink`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from zeroclaw_ref.core.jsontypes import JSON, JSONObject


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ThoughtDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    """A call is dispatched, denied or replaced; `arguments` are the model's (no `approved`)."""

    id: str
    name: str
    arguments: JSON


@dataclass(frozen=True, slots=True)
class ToolFinished:
    """A call ended; `output` is the text of acp.md Table 5-4 before scrubbing."""

    id: str
    name: str
    output: str
    success: bool
    artifact: JSONObject | None = None


@dataclass(frozen=True, slots=True)
class PlanUpdated:
    entries: tuple[JSONObject, ...]


@dataclass(frozen=True, slots=True)
class HistoryTrimmed:
    dropped_messages: int
    kept_turns: int
    reason: str


@dataclass(frozen=True, slots=True)
class UsageReported:
    input_tokens: int
    output_tokens: int


TurnEvent = (
    TextDelta | ThoughtDelta | ToolCallStarted | ToolFinished | PlanUpdated | HistoryTrimmed
    | UsageReported
)  # fmt: skip
EventSink = Callable[[TurnEvent], None]


class FailureKind(Enum):
    """acp.md Table 4-3 rows."""

    INVALID_COMPLETION = "invalid_completion"
    PROVIDER_TOOLS_WITHOUT_ANSWER = "provider_tools_without_answer"
    OTHER = "other"
    PANIC = "panic"


@dataclass(frozen=True, slots=True)
class Completed:
    """The final text and the ConversationMessages the turn added (ACP-RT-05)."""

    text: str
    messages: tuple[JSONObject, ...]


@dataclass(frozen=True, slots=True)
class Cancelled:
    pass


@dataclass(frozen=True, slots=True)
class Failed:
    kind: FailureKind
    diagnostic: str


TurnOutcome = Completed | Cancelled | Failed
