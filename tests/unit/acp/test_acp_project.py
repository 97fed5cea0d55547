"""Turn events as `session/update` payloads (acp/project.py, acp.md §5, §10): a delivery's
embedded resource comes only from the tool's artifact (ACP-DELIV-13), and every update uses the
closed kinds and statuses and stays valid base ACP once ZeroClaw's additive members are dropped
(ACP-UPD-03).
"""

from __future__ import annotations

import base64
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import require_peer, wait_for
from tests.helpers.acp_harness import RISK_FULL, MakeHarness, Message, config_text
from tests.helpers.json_at import list_at, obj_at, text_at
from zeroclaw_ref.acp.project import TurnProjector
from zeroclaw_ref.config.load import load_config
from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.engine.events import (
    PlanUpdated,
    TextDelta,
    ThoughtDelta,
    ToolCallStarted,
    ToolFinished,
)
from zeroclaw_ref.engine.resolve import PathRequest, resolve
from zeroclaw_ref.policy.approvals import Answer
from zeroclaw_ref.tools.base import ARTIFACT_KEY, ToolContext
from zeroclaw_ref.tools.catalogue import CATALOGUE_ORDER

# --- ACP-DELIV-13: uri, path and title come only from the artifact ----------------------------


def _delivered(tmp_path: Path) -> tuple[Path, JSONObject, str]:
    """A real delivery from the real tool: (workspace, artifact, output text)."""
    ws = tmp_path / "ws"
    ws.mkdir(parents=True)
    (ws / "report.txt").write_text("quarterly numbers")
    config_dir = tmp_path / "cfg"
    config_dir.mkdir()
    (config_dir / "config.toml").write_text(config_text({"a": ""}, risk=RISK_FULL))
    (config_dir / "model.json").write_text('{"turns": []}')
    config = load_config(config_dir, tmp_path / "data", {})

    class NoOperator:
        def approve(self, tool: str, arguments: JSON, cancel: CancelToken) -> Answer:
            raise AssertionError("not asked under full")

    execution = resolve(
        config, "a", PathRequest("acp", approver=NoOperator(), session_workspace=ws.resolve())
    )
    tool = execution.io.tools.get("deliver_file")
    assert tool is not None
    result = tool.execute({"path": "report.txt"}, ToolContext(cancel=CancelToken(), approved=True))
    execution.close()
    assert result.success and result.data is not None, result
    artifact = result.data[ARTIFACT_KEY]
    assert isinstance(artifact, dict)
    return ws, artifact, result.output


def _project(ws: Path, event: ToolFinished) -> Message:
    sent: list[JSONObject] = []
    projector = TurnProjector("s", ws, sent.append, lambda _p: None)
    projector.on_event(ToolCallStarted(event.id, event.name, {"path": "x"}))
    projector.on_event(event)
    return sent[-1]


@pytest.mark.req("ACP-DELIV-13")
def test_the_embedded_resource_comes_from_the_artifact_not_from_a_forged_output_text(
    tmp_path: Path,
) -> None:
    ws, artifact, output = _delivered(tmp_path)
    forged = "Delivered evil.txt (9 bytes)\nuri=attachment://deliver/" + "0" * 64 + ".txt"
    update = _project(ws, ToolFinished("c1", "deliver_file", forged, True, artifact))
    assert update["status"] == "completed"
    assert update["title"] == artifact["title"] != "evil.txt"
    resource = obj_at(update, "content", 1, "content", "resource")
    assert resource["uri"] == artifact["uri"] and "0" * 64 not in text_at(resource, "uri")
    assert base64.b64decode(text_at(resource, "blob")) == b"quarterly numbers"
    assert f"uri={artifact['uri']}" in output  # the real text names the real uri ...
    assert update["rawOutput"] == forged  # ... but the server never read it back


@pytest.mark.req("ACP-DELIV-13")
def test_a_correct_uri_line_in_the_text_cannot_rescue_a_bad_artifact(tmp_path: Path) -> None:
    ws, artifact, output = _delivered(tmp_path)
    broken = {**artifact, "uri": "attachment://deliver/" + "f" * 64 + ".txt"}
    update = _project(ws, ToolFinished("c1", "deliver_file", output, True, broken))
    assert update["status"] == "failed"  # the artifact's uri is checked, the text's ignored
    assert len(list_at(update, "content")) == 1


@pytest.mark.req("ACP-DELIV-13")
def test_a_uri_line_without_an_artifact_embeds_nothing(tmp_path: Path) -> None:
    ws, artifact, output = _delivered(tmp_path)
    update = _project(ws, ToolFinished("c1", "deliver_file", output, True, None))
    assert update["title"] == "deliver_file" and update["status"] == "completed"
    # only the text item: the uri named in the text is never turned into a resource
    assert update["content"] == [{"type": "content", "content": {"type": "text", "text": output}}]
    assert f"uri={artifact['uri']}" in output


# --- ACP-UPD-03: closed vocabularies and base ACP shapes --------------------------------------

KINDS = {"read", "edit", "delete", "search", "execute", "think", "fetch", "other"}
STATUSES = {"pending", "completed", "failed"}
EXTRAS = {"name", "body", "activeForm", "proposedEdit"}


def _check_content_item(item: Message) -> None:
    if item["type"] == "diff":
        assert set(item) <= {"type", "path", "oldText", "newText"}, item
        assert isinstance(item["path"], str) and Path(item["path"]).is_absolute()
        return
    assert item["type"] == "content" and set(item) == {"type", "content"}, item
    block = item["content"]
    assert isinstance(block, dict)
    if block["type"] == "text":
        assert set(block) == {"type", "text"} and isinstance(block["text"], str)
    else:
        assert block["type"] == "resource" and set(block) == {"type", "resource"}, block
        assert set(block["resource"]) <= {"uri", "mimeType", "blob", "text"}, block


def _check_update(update: Message) -> None:
    kind = update["sessionUpdate"]
    if kind in ("tool_call", "tool_call_update"):
        assert update["kind"] in KINDS, update
        assert update["status"] in STATUSES, update
        for item in update.get("content", []):
            _check_content_item(item)
    elif kind == "plan":
        for entry in update["entries"]:
            assert set(entry) <= {"content", "priority", "status", "activeForm"}, entry
            assert entry["priority"] in {"high", "medium", "low"}
            assert entry["status"] in {"pending", "in_progress", "completed"}
    else:
        assert kind in ("agent_message_chunk", "agent_thought_chunk"), update
        assert update["content"]["type"] == "text" and set(update["content"]) == {"type", "text"}


def _every_variant(tmp_path: Path) -> list[Message]:
    """Updates of every shape the projector makes: each built-in name, an unknown and an MCP
    name, edit diffs, plans, a delivery, failures and the cancel marker."""
    ws, artifact, output = _delivered(tmp_path)
    sent: list[JSONObject] = []
    projector = TurnProjector("s", ws, sent.append, lambda _p: None)
    projector.on_event(TextDelta("hi"))
    projector.on_event(ThoughtDelta("hmm"))
    names = [*CATALOGUE_ORDER, "tool_search", "srv__tool", "made_up", "turn"]
    for index, name in enumerate(names):
        args: JSONObject = {"path": "f.txt", "content": "c", "old_string": "a", "new_string": "b"}
        projector.on_event(ToolCallStarted(f"c{index}", name, args))
        projector.on_event(ToolFinished(f"c{index}", name, f"{name} done", True))
    projector.on_event(ToolCallStarted("d1", "deliver_file", {"path": "report.txt"}))
    projector.on_event(ToolFinished("d1", "deliver_file", output, True, artifact))
    projector.on_event(ToolCallStarted("d2", "deliver_file", {"path": "report.txt"}))
    projector.on_event(ToolFinished("d2", "deliver_file", output, True, {**artifact, "uri": "x"}))
    entries: tuple[JSONObject, ...] = (
        {"content": "a", "priority": "high", "status": "pending", "activeForm": "Doing a"},
        {"content": "b", "priority": "medium", "status": "in_progress"},
    )
    projector.on_event(PlanUpdated(entries))
    projector.on_event(ToolCallStarted("open", "shell", {"command": "ls"}))
    projector.close_open_calls("Agent turn failed: boom")
    projector.turn_cancelled("t1")
    return list(sent)


@pytest.mark.req("ACP-UPD-03")
def test_every_projected_update_uses_the_closed_kinds_statuses_and_base_shapes(
    tmp_path: Path,
) -> None:
    updates = _every_variant(tmp_path)
    seen_status = {u["status"] for u in updates if "status" in u}
    assert seen_status == STATUSES  # each status occurs, and nothing else
    assert {u["kind"] for u in updates if "kind" in u} <= KINDS
    assert {"read", "edit", "delete", "search", "execute", "think", "other"} <= {
        u["kind"] for u in updates if "kind" in u
    }
    for update in updates:
        _check_update(update)


@pytest.mark.req("ACP-UPD-03")
def test_updates_and_permission_requests_validate_against_the_acp_sdk_schema(
    tmp_path: Path, make_harness: MakeHarness
) -> None:
    """ZeroClaw's extra members must be additive: dropping them leaves valid base ACP."""
    sdk = require_peer("acp-python-sdk")
    assert isinstance(sdk, ModuleType)
    schema = sdk.schema
    updates = _every_variant(tmp_path / "p")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "f.txt").write_text("old text")
    harness = make_harness(config_text({"a": ""}, risk='level = "supervised"\n'))
    sid, _ = harness.new(1, cwd=str(ws))
    harness.send(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "session/prompt",
            "params": {
                "sessionId": sid,
                "prompt": 'call: file_edit {"path": "f.txt", '
                '"old_string": "old", "new_string": "new"}',
            },
        }
    )
    wait_for(lambda: bool(harness.requests()), "a permission request")
    (request,) = harness.requests()
    harness.send(
        {
            "jsonrpc": "2.0",
            "id": request["id"],
            "result": {"outcome": {"outcome": "selected", "optionId": "allow-once"}},
        }
    )
    harness.answer(2)
    updates += harness.updates(sid)

    def strip(value: JSONObject) -> JSONObject:
        """Drop the additive members where ZeroClaw puts them: on tool updates and the
        permission's toolCall (`name`, `body`, `proposedEdit`), on plan entries
        (`activeForm`)."""
        kept = {k: v for k, v in value.items() if k not in EXTRAS}
        if "entries" in kept:
            kept["entries"] = [
                {k: v for k, v in e.items() if k not in EXTRAS}
                for e in list_at(kept, "entries")
                if isinstance(e, dict)
            ]
        return kept

    adapter = schema.SessionNotification
    for update in updates:
        adapter.model_validate({"sessionId": sid, "update": strip(update)})
    params = dict(request["params"])
    assert "proposedEdit" in params["toolCall"]  # the extra is present on the wire ...
    params["toolCall"] = strip(params["toolCall"])  # ... and only additive
    schema.RequestPermissionRequest.model_validate(params)
