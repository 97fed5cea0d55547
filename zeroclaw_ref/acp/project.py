"""Turn events → `session/update` payloads (acp.md §5), plus the closing and cancel updates.

One `TurnProjector` lives for one turn. It is the only code that turns engine events into ACP
update objects, so the field rules (kinds, rawInput, status, scrubbing) sit in one place. It
also remembers what the turn showed: the calls still open (ACP-UPD-17), the streamed text for a
cancelled result (ACP-PROMPT-28) and the update log persisted for replay (ACP-STORE-10).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path

from zeroclaw_ref.core.jsontypes import JSON, JSONObject, dumps
from zeroclaw_ref.core.scrub import clean_output
from zeroclaw_ref.engine.events import (
    HistoryTrimmed,
    PlanUpdated,
    TextDelta,
    ThoughtDelta,
    ToolCallStarted,
    ToolFinished,
    TurnEvent,
    UsageReported,
)
from zeroclaw_ref.wire import acp as wire

# [ACP-PROMPT-28] the cancel marker
CANCEL_MARKER = "[turn cancelled via client]"

EDIT_TOOLS = frozenset({"file_edit", "file_write"})

# [ACP-UPD-13] acp.md Table 5-3; every other name (MCP, skills, unknown) is `other`.
TOOL_KINDS: dict[str, str] = {
    "file_read": wire.KIND_READ,
    "glob_search": wire.KIND_SEARCH,
    "content_search": wire.KIND_SEARCH,
    "tool_search": wire.KIND_SEARCH,
    "file_write": wire.KIND_EDIT,
    "file_edit": wire.KIND_EDIT,
    "memory_forget": wire.KIND_DELETE,
    "memory_purge": wire.KIND_DELETE,
    "cron_remove": wire.KIND_DELETE,
    "shell": wire.KIND_EXECUTE,
    "ask_user": wire.KIND_EXECUTE,
    "delegate": wire.KIND_EXECUTE,
    "escalate_to_human": wire.KIND_EXECUTE,
}


def tool_kind(name: str) -> str:
    return TOOL_KINDS.get(name, wire.KIND_OTHER)


def text_content(text: str) -> JSONObject:
    """A tool-call content item holding text (ACP-UPD-08)."""
    return {"type": "content", "content": {"type": "text", "text": text}}


def _arg(arguments: JSON, key: str) -> JSON:
    return arguments.get(key) if isinstance(arguments, dict) else None


def absolute_path(workspace: Path, raw: JSON) -> str | None:
    """[ACP-UPD-07] a relative `path` argument resolved against the session workspace."""
    if not isinstance(raw, str):
        return None
    path = Path(raw).expanduser()
    return str(path if path.is_absolute() else workspace / path)


def raw_input(name: str, arguments: JSON) -> JSON:
    """[ACP-UPD-06] acp.md Table 5-2: edit tools in edit form, others as the model sent them."""
    if name == "file_edit":
        return {
            "path": _arg(arguments, "path"),
            "oldText": _arg(arguments, "old_string"),
            "newText": _arg(arguments, "new_string"),
        }
    if name == "file_write":
        return {"path": _arg(arguments, "path"), "newText": _arg(arguments, "content")}
    return arguments


def diff_content(name: str, arguments: JSON, workspace: Path) -> list[JSON] | None:
    """[ACP-UPD-07] the single diff item of an edit tool's call, else None."""
    if name not in EDIT_TOOLS:
        return None
    item: JSONObject = {"type": "diff", "path": absolute_path(workspace, _arg(arguments, "path"))}
    if name == "file_edit":
        item["oldText"] = _arg(arguments, "old_string")
        item["newText"] = _arg(arguments, "new_string")
    else:
        item["newText"] = _arg(arguments, "content")
    return [item]


class TurnProjector:
    """Projects one turn's events and sends each update as soon as it is produced."""

    def __init__(
        self,
        session_id: str,
        workspace: Path,
        send_update: Callable[[JSONObject], None],
        send_trimmed: Callable[[JSONObject], None],
    ) -> None:
        self.session_id = session_id
        self.workspace = workspace
        self._send_update = send_update
        self._send_trimmed = send_trimmed
        self.open_calls: dict[str, str] = {}  # call id -> tool name, in emission order
        self.streamed_text: list[str] = []
        # Each update as the store keeps it: encoded from the same object that is sent, so the
        # log holds exactly what the client received (ACP-STORE-10).
        self.update_log: list[str] = []
        self.last_plan: list[JSON] | None = None

    def emit(self, update: JSONObject) -> None:
        """Send one update and log it for replay (ACP-STORE-10)."""
        self.update_log.append(dumps(update))
        self._send_update(update)

    def on_event(self, event: TurnEvent) -> None:
        """[ACP-PROMPT-23] project and send each event as it arrives (order: ACP-UPD-18)."""
        if isinstance(event, TextDelta):
            self.streamed_text.append(event.text)
            self.emit(_chunk(wire.UPDATE_AGENT_MESSAGE_CHUNK, event.text))  # [ACP-UPD-04]
        elif isinstance(event, ThoughtDelta):
            self.emit(_chunk(wire.UPDATE_AGENT_THOUGHT_CHUNK, event.text))  # [ACP-UPD-05]
        elif isinstance(event, ToolCallStarted):
            self.open_calls[event.id] = event.name
            self.emit(self._tool_call(event))
        elif isinstance(event, ToolFinished):
            self.open_calls.pop(event.id, None)
            if event.artifact is not None:
                self._delivered(event)  # [ACP-DELIV-09..13]
            else:
                update = self._tool_call_update(
                    event.id, event.name, event.output, wire.STATUS_COMPLETED
                )
                self.emit(update)
        elif isinstance(event, PlanUpdated):
            self.last_plan = list(event.entries)
            self.emit({"sessionUpdate": wire.UPDATE_PLAN, "entries": list(event.entries)})
        elif isinstance(event, HistoryTrimmed):
            # [ACP-UPD-15] its own notification; never part of the update log (ACP-STORE-10)
            self._send_trimmed(
                {
                    "sessionId": self.session_id,
                    "droppedMessages": event.dropped_messages,
                    "keptTurns": event.kept_turns,
                    "reason": event.reason,
                }
            )
        elif isinstance(event, UsageReported):
            pass  # [ACP-UPD-16] never sent

    def send_message(self, text: str) -> None:
        """[ACP-UPD-24] an out-of-band message: a chunk that is not part of the answer text."""
        self.emit(_chunk(wire.UPDATE_AGENT_MESSAGE_CHUNK, text))

    def _tool_call(self, event: ToolCallStarted) -> JSONObject:
        update: JSONObject = {
            "sessionUpdate": wire.UPDATE_TOOL_CALL,
            "toolCallId": event.id,
            "name": event.name,
            "title": event.name,
            "kind": tool_kind(event.name),
            "status": wire.STATUS_PENDING,
            "rawInput": raw_input(event.name, event.arguments),
        }
        diff = diff_content(event.name, event.arguments, self.workspace)
        if diff is not None:
            update["content"] = diff
        return update

    def _delivered(self, event: ToolFinished) -> None:
        """[ACP-DELIV-09..13] embed a delivered file only after re-reading and re-hashing it;
        uri, title and MIME come from the artifact, never from the output text."""
        from zeroclaw_ref.tools.deliver_file import verify_delivery

        artifact = event.artifact or {}
        title = artifact.get("title")
        update = self._tool_call_update(event.id, event.name, event.output, wire.STATUS_COMPLETED)
        update["title"] = title if isinstance(title, str) else event.name  # [ACP-UPD-10]
        data = verify_delivery(artifact)
        if data is None:
            update["status"] = wire.STATUS_FAILED  # [ACP-DELIV-11] text content only
            self.emit(update)
            return
        resource: JSONObject = {"uri": artifact.get("uri"), "mimeType": artifact.get("mimeType")}
        logged = dict(update)
        content = update["content"]
        assert isinstance(content, list)
        # [ACP-STORE-11] the update log keeps the resource without its blob
        logged["content"] = [
            *content,
            {"type": "content", "content": {"type": "resource", "resource": dict(resource)}},
        ]
        resource["blob"] = base64.b64encode(data).decode("ascii")
        update["content"] = [
            *content,
            {"type": "content", "content": {"type": "resource", "resource": resource}},
        ]
        self.update_log.append(dumps(logged))
        self._send_update(update)

    @staticmethod
    def _tool_call_update(call_id: str, name: str, output: str, status: str) -> JSONObject:
        text = clean_output(output)  # [ACP-UPD-11] token redaction, then scrubbing
        return {
            "sessionUpdate": wire.UPDATE_TOOL_CALL_UPDATE,
            "toolCallId": call_id,
            "name": name,
            "title": name,
            "kind": tool_kind(name),
            "status": status,
            "rawOutput": text,
            "body": text,
            "content": [text_content(text)],
        }

    def close_open_calls(self, text: str) -> None:
        """[ACP-UPD-17] a failed update for every call still open, in emission order."""
        for call_id, name in list(self.open_calls.items()):
            self.emit(self._tool_call_update(call_id, name, text, wire.STATUS_FAILED))
        self.open_calls.clear()

    def turn_cancelled(self, suffix: str) -> None:
        """[ACP-UPD-26] the synthetic call that precedes a cancelled result (Table 5-1).

        Its id is `turn-cancelled-<sessionId>-<suffix>`, not Table 5-1's bare
        `turn-cancelled-<sessionId>`: ACP wants every tool call id of a session to be unique,
        and a session may be cancelled more than once (fixtures/CONTRACT.md, divergences).
        """
        self.emit(
            {
                "sessionUpdate": wire.UPDATE_TOOL_CALL,
                "toolCallId": f"turn-cancelled-{self.session_id}-{suffix}",
                "name": "turn-cancelled",
                "title": "turn-cancelled",
                "kind": wire.KIND_THINK,
                "status": wire.STATUS_COMPLETED,
                "content": [text_content(CANCEL_MARKER)],
            }
        )

    def cancelled_content(self) -> str:
        """[ACP-PROMPT-28] the streamed answer text, then the cancel marker."""
        streamed = "".join(self.streamed_text)
        return f"{streamed}\n\n{CANCEL_MARKER}" if streamed else CANCEL_MARKER


def _chunk(kind: str, text: str) -> JSONObject:
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}}
