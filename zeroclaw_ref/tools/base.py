"""The tool contract shared by built-in, MCP and skill tools (policy.md §4, POL-TOOL-02..05).

A tool reports policy refusals and bad arguments as a failed `ToolResult`, never by raising;
an exception escaping `execute` is a bug the engine reports as `Error executing <tool>: …`
(POL-TOOL-03). Tools reach the client only through the `UserChannel` port (ACP-RT-08) and other
agents only through the `DelegatePort`, both handed over in the `ToolContext`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.core.jsontypes import JSON, JSONObject


@dataclass(frozen=True, slots=True)
class ToolResult:
    """[POL-TOOL-02] the outcome of one call; `data` carries structured extras (artifacts)."""

    success: bool
    output: str = ""
    error: str | None = None
    data: JSONObject | None = None

    @classmethod
    def ok(cls, output: str, data: JSONObject | None = None) -> ToolResult:
        return cls(True, output, None, data)

    @classmethod
    def fail(cls, error: str) -> ToolResult:
        return cls(False, "", error, None)

    def model_text(self) -> str:
        """[POL-TOOL-03] the text the model is given for this result."""
        if self.success:
            return self.output or "(no output)"
        return f"Error: {self.error or ''}"


class UserChoice(Protocol):
    """What `ask_user` learns from the channel: a chosen text or a failure reason."""


class UserChannel(Protocol):
    """The back-channel of the session that owns the turn (ACP-RT-08)."""

    def send_message(self, text: str) -> None:
        """Send an out-of-band message to the user (acp.md §6.6)."""
        ...


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a running tool may use besides its arguments."""

    cancel: CancelToken
    approved: bool = False
    channel: UserChannel | None = None
    call_id: str = ""
    extras: JSONObject = field(default_factory=dict)


class Tool(Protocol):
    """A callable tool with its model-facing spec (POL-TOOL-05)."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def parameters(self) -> JSONObject: ...

    def execute(self, arguments: JSON, context: ToolContext) -> ToolResult:
        """Run the call; return a failed result for refusals and bad arguments."""
        ...
