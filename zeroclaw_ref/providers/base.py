"""The one streaming interface every model provider implements (config.md CFG-PROV-05).

A provider is a plain generator: `stream(request)` yields `TextChunk`, `ThoughtChunk` and
`ToolCall` events and ends with `Done`. Failures are raised as `ProviderError` (the turn then
fails with `Agent turn failed: <message>`, acp.md Table 4-3). Providers never see threads or
cancellation: the engine drains them through a `core.pump.Pump` (DESIGN §7.6).

Messages use the ConversationMessage shape of acp.md ACP-RT-05 (`role`, `content`, optional
`reasoning`, `toolCalls`, `toolCallId`, `name`, `attachments`), with the system message first and
an optional `images` list of image parts on user and tool messages (policy.md POL-ENGINE-12).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

from zeroclaw_ref.core.jsontypes import JSON, JSONObject


@dataclass(frozen=True, slots=True)
class TextChunk:
    """A delta of the assistant's answer."""

    text: str


@dataclass(frozen=True, slots=True)
class ThoughtChunk:
    """A delta of the model's reasoning."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A complete tool call; `id` is None when the provider supplies none (ACP-RT-03)."""

    id: str | None
    name: str
    arguments: JSON


@dataclass(frozen=True, slots=True)
class Done:
    """End of one model response."""


ProviderEvent = TextChunk | ThoughtChunk | ToolCall | Done


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool offered to the model (policy.md POL-TOOL-05)."""

    name: str
    description: str
    parameters: JSONObject = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One model request (CFG-PROV-05).

    `stop` is set by the engine's pump when the turn abandons the stream (cancellation): a
    provider that waits between events waits on it (the demo's `slow:` ticks), and a network
    provider closes its response when it sees it. It is not part of the recorded request.
    """

    model: str
    temperature: float
    messages: tuple[JSONObject, ...]
    tools: tuple[ToolSpec, ...] = ()
    stop: threading.Event = field(default_factory=threading.Event, compare=False, repr=False)


class ProviderError(Exception):
    """A provider failure; `str(exc)` is the diagnostic for `Agent turn failed: <diagnostic>`."""


class InvalidCompletion(ProviderError):
    """An empty or semantically invalid completion (acp.md Table 4-3, first row)."""


class ModelProvider(Protocol):
    """A model provider instance; one per resolved execution (policy.md POL-RESOLVE-12)."""

    name: str
    requests: list[JSONObject]
    # True when `stream` blocks on I/O (network kinds): the engine then drains it on a pump
    # thread. False when it only ever waits on `request.stop` (demo, scripted): drained inline.
    blocking: bool

    def stream(self, request: ModelRequest) -> Iterator[ProviderEvent]:
        """Yield the events of one model response, ending with `Done`."""
        ...


def record_of(request: ModelRequest) -> JSONObject:
    """[CFG-PROV-15] the request as kept in `requests` and appended to a `record` file."""
    return {
        "model": request.model,
        "temperature": request.temperature,
        "tools": [t.name for t in request.tools],
        # Design: the message dicts are shared, not copied: nobody mutates a sent message, and
        # copying a 50-message window per request dominated a demo turn.
        "messages": list(request.messages),
    }
