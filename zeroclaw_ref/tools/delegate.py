"""`delegate`: one sub-turn as another agent (policy.md §4.8).

The tool checks the grant and its arguments; the child itself is built and run by the engine's
`DelegatePort`, so the child's contract comes from `resolve()` and never from this process's
objects (POL-DELEG-03).
"""

from __future__ import annotations

from typing import ClassVar

from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.policy.security import SecurityPolicy
from zeroclaw_ref.tools.base import (
    Tool,
    ToolContext,
    ToolResult,
    ToolSettings,
    argument,
    missing,
)


class DelegateTool:
    """Runs a prompt as one of the agent's `delegates` (act tool)."""

    name: ClassVar[str] = "delegate"
    description: ClassVar[str] = (
        "Delegate a task to another agent. The agent works on its own with its own tools and "
        "returns its final answer."
    )
    act: ClassVar[bool] = True

    def __init__(self, settings: ToolSettings) -> None:
        self.settings = settings
        # The one part of the spec that comes from data: the agents this one may name.
        self.parameters: JSONObject = {
            "type": "object",
            "properties": {
                "agent": {"type": "string", "enum": list(settings.delegates)},
                "prompt": {"type": "string"},
                "context": {"type": "string"},
            },
            "required": ["agent", "prompt"],
        }

    def execute(self, arguments: JSON, context: ToolContext) -> ToolResult:
        target = argument(arguments, "agent")
        if not isinstance(target, str) or not target.strip():
            return missing("agent")
        prompt = argument(arguments, "prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            return missing("prompt")
        target = target.strip()
        if target not in self.settings.delegates:
            alias = self.settings.agent_alias
            return ToolResult.fail(f"Agent '{target}' is not a delegate target of '{alias}'")
        extra = argument(arguments, "context")
        background = extra.strip() if isinstance(extra, str) and extra.strip() else None
        if context.delegate is None:
            return ToolResult.fail(
                f"Delegation to '{target}' failed closed: no delegation port on this path"
            )
        return context.delegate.delegate(
            target, prompt, background, context.call_id, context.cancel
        )


def tools(security: SecurityPolicy, settings: ToolSettings) -> list[Tool]:
    """[POL-DELEG-01] present only when the agent has delegate targets."""
    del security
    return [DelegateTool(settings)] if settings.delegates else []
