"""The operator tools `ask_user` and `escalate_to_human` (policy.md §4.5; acp.md §6.4, §6.6).

The tools validate their arguments with the texts every path shares and hand the rest to the
execution's `UserChannel`; without one (interaction mode `none`) they fail at once, because a
non-interactive turn must never hang waiting for nobody (POL-ASK-04, POL-ASK-08).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import ClassVar

from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.policy.security import SecurityPolicy
from zeroclaw_ref.tools.base import Tool, ToolContext, ToolResult, ToolSettings, argument, missing

log = logging.getLogger(__name__)

DEFAULT_ASK_TIMEOUT = 300  # [ACP-ASK-01]
URGENCIES = ("low", "medium", "high", "critical")
BAD_URGENCY = "urgency must be one of low, medium, high, critical"  # [POL-ASK-05]
NO_OPERATOR_ASK = "No operator is available to answer ask_user on this path."  # [POL-ASK-04]
NO_OPERATOR_ESCALATE = (
    "No operator is available to receive escalate_to_human on this path."  # [POL-ASK-08]
)


def _trimmed(value: JSON) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _timeout(value: JSON, default: int | None) -> int | None:
    """A non-negative integer, else the default (booleans are not integers)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return default


@dataclass(frozen=True, slots=True)
class AskUserTool:
    """`ask_user`: a question with choices, answered by the operator (act tool)."""

    name: ClassVar[str] = "ask_user"
    description: ClassVar[str] = (
        "Ask the user a question and wait for the answer. Give the choices the user can pick "
        "from; the result is the chosen text."
    )
    parameters: ClassVar[JSONObject] = {
        "type": "object",
        "properties": {
            "question": {"type": "string", "description": "The question to ask."},
            "choices": {"type": "array", "items": {"type": "string"}},
            "timeout_secs": {"type": "integer", "minimum": 0},
        },
        "required": ["question"],
    }
    act: ClassVar[bool] = True

    def execute(self, arguments: JSON, context: ToolContext) -> ToolResult:
        question = _trimmed(argument(arguments, "question"))
        if question is None:
            return missing("question")  # [POL-ASK-01] [ACP-ASK-02]
        raw_choices = argument(arguments, "choices")
        choices = tuple(
            c.strip()
            for c in (raw_choices if isinstance(raw_choices, list) else [])
            if isinstance(c, str) and c.strip()
        )  # [ACP-ASK-01] trimmed, blank and non-string items dropped
        timeout = _timeout(argument(arguments, "timeout_secs"), DEFAULT_ASK_TIMEOUT)
        if context.channel is None:
            return ToolResult.fail(NO_OPERATOR_ASK)
        return context.channel.ask(question, choices, timeout or 0, context.cancel)


@dataclass(frozen=True, slots=True)
class EscalateTool:
    """`escalate_to_human`: tell the operator something needs a human (act tool)."""

    name: ClassVar[str] = "escalate_to_human"
    description: ClassVar[str] = (
        "Escalate to a human operator with a summary, optional context and an urgency "
        "(low, medium, high or critical)."
    )
    parameters: ClassVar[JSONObject] = {
        "type": "object",
        "properties": {
            "summary": {"type": "string"},
            "context": {"type": "string"},
            "urgency": {"type": "string", "enum": list(URGENCIES)},
            "wait_for_response": {"type": "boolean"},
            "timeout_secs": {"type": "integer", "minimum": 0},
        },
        "required": ["summary"],
    }
    act: ClassVar[bool] = True

    def execute(self, arguments: JSON, context: ToolContext) -> ToolResult:
        summary = _trimmed(argument(arguments, "summary"))
        if summary is None:
            return missing("summary")  # [POL-ASK-05] [ACP-ESC-01]
        urgency = argument(arguments, "urgency")
        if urgency is None:
            urgency = "medium"
        if urgency not in URGENCIES:
            return ToolResult.fail(BAD_URGENCY)
        assert isinstance(urgency, str)
        wait = argument(arguments, "wait_for_response") is True
        details = _trimmed(argument(arguments, "context"))
        timeout = _timeout(argument(arguments, "timeout_secs"), None)
        if context.channel is None:
            log.warning("escalation [%s] with no operator: %s", urgency, summary)
            return ToolResult.fail(NO_OPERATOR_ESCALATE)
        return context.channel.escalate(summary, details, urgency, wait, timeout, context.cancel)


def tools(security: SecurityPolicy, settings: ToolSettings) -> list[Tool]:
    """The operator tools of one execution."""
    del security, settings  # they act through the channel, never on files
    return [AskUserTool(), EscalateTool()]
