"""The tool contract shared by built-in, MCP and skill tools (policy.md §4, POL-TOOL-02..05).

A tool reports policy refusals and bad arguments as a failed `ToolResult`, never by raising;
an exception escaping `execute` is a bug the engine reports as `Error executing <tool>: …`
(POL-TOOL-03). Tools reach the client only through the `UserChannel` port (ACP-RT-08) and other
agents only through the `DelegatePort`, both handed over in the `ToolContext`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

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


# [POL-TOOL-04] the generic missing-argument failure
def missing(argument: str) -> ToolResult:
    return ToolResult.fail(f"Missing '{argument}' parameter")


def argument(arguments: JSON, key: str) -> JSON:
    """The value of `key` when the arguments are an object, else None."""
    return arguments.get(key) if isinstance(arguments, dict) else None


@runtime_checkable
class UserChannel(Protocol):
    """The operator's channel of the execution that owns the turn (ACP-RT-08, policy.md §4.5).

    Implemented by the ACP back-channel (acp/approver.py) and the terminal (cli); absent in
    interaction mode `none`. Arguments arrive validated by the operator tools; each channel
    owns its own texts and reports failures as values, never by raising.
    """

    def ask(
        self, question: str, choices: tuple[str, ...], timeout_secs: int, cancel: CancelToken
    ) -> ToolResult:
        """Ask `question`; succeed with the answer text, or fail with the channel's reason."""
        ...

    def escalate(
        self,
        summary: str,
        context: str | None,
        urgency: str,
        wait_for_response: bool,
        timeout_secs: int | None,
        cancel: CancelToken,
    ) -> ToolResult:
        """Deliver an escalation (and, where the channel can, wait for a reply)."""
        ...


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a running tool may use besides its arguments and its bound SecurityPolicy."""

    cancel: CancelToken
    approved: bool = False
    channel: UserChannel | None = None
    interaction: str = "none"  # acp_backchannel | terminal | none (policy.md §1)
    call_id: str = ""
    delegate: DelegatePort | None = None


class DelegatePort(Protocol):
    """Runs one child turn as another agent through `resolve()` (policy.md §4.8); implemented
    by `engine/delegation.py`, so tools never import the engine (DESIGN §5.2)."""

    def delegate(
        self, target: str, prompt: str, context: str | None, call_id: str, cancel: CancelToken
    ) -> ToolResult:
        """Run the child turn; succeed with its final text, or fail closed (POL-DELEG-04)."""
        ...


@dataclass(frozen=True, slots=True)
class ToolSettings:
    """What built-in tools need besides the SecurityPolicy; filled in by `resolve()`."""

    agent_alias: str
    data_dir: Path
    shell_timeout_secs: int = 60
    has_delegates: bool = False
    delegates: tuple[str, ...] = ()  # agents this one may delegate to (POL-DELEG-01)
    scheduler_enabled: bool = True  # [POL-CRON-01]
    conversation_id: str = ""  # [POL-MEM-09] stored as a memory entry's session_id


# Keys of `ToolResult.data` the engine understands (everything else is passed through).
PLAN_KEY = "plan_entries"  # [POL-TODO-04] a list of plan entries → one plan event
ARTIFACT_KEY = "artifact"  # [ACP-DELIV-08] the delivery artifact of deliver_file


class Tool(Protocol):
    """A callable tool with its model-facing spec (POL-TOOL-05).

    `act` is the class of policy.md §4.1: an act tool changes state outside the turn and is
    refused at level `read_only` by the engine (POL-AUTO-06, POL-AUTO-09).

    Every tool states its spec the same way, as plain attributes: `ClassVar`s in the class
    body when the spec is fixed (`shell`, `file_read`, …), set once in `__init__` when it comes
    from data (a skill's manifest, an MCP server's listing, the agent's delegates). The members
    are read-only here, so callers never change a tool's spec.
    """

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def parameters(self) -> JSONObject: ...

    @property
    def act(self) -> bool: ...

    def execute(self, arguments: JSON, context: ToolContext) -> ToolResult:
        """Run the call; return a failed result for refusals and bad arguments."""
        ...
