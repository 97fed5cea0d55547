"""`delegate` through a real parent turn with scripted providers (policy.md §4.8, POL-PATH-13)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.helpers.internals import model_requests, request_messages
from tests.helpers.json_at import at, list_at, text_at
from zeroclaw_ref.config.load import load_config
from zeroclaw_ref.config.model import ConfigSnapshot
from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.core.clock import SystemClock
from zeroclaw_ref.core.ids import SequentialIds
from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.engine.delegation import Delegation
from zeroclaw_ref.engine.events import Completed, TextDelta, ToolFinished, TurnEvent, TurnOutcome
from zeroclaw_ref.engine.execution import ResolvedAgentExecution
from zeroclaw_ref.engine.resolve import (
    PathRequest,
    add_resolve_observer,
    remove_resolve_observer,
    resolve,
)
from zeroclaw_ref.engine.turn import TurnEngine
from zeroclaw_ref.policy.approvals import Answer, Decision
from zeroclaw_ref.tools.catalogue import MEMORY_TOOLS

CONFIG = """
[providers.p]
kind = "scripted"
script = "parent.json"
[providers.c]
kind = "scripted"
script = "child.json"
[risk_profiles.lead]
auto_approve = ["delegate"]
{lead_profile}
[risk_profiles.helper]
{helper_profile}
[runtime_profiles.r]
{lead_runtime}
[runtime_profiles.h]
{helper_runtime}
[agents.lead]
model_provider = "p"
risk_profile = "lead"
runtime_profile = "r"
system_prompt = "You lead."
delegates = ["helper", "off", "ghost"]
[agents.helper]
model_provider = "c"
risk_profile = "helper"
runtime_profile = "h"
system_prompt = "You help."
{helper_agent}
[agents.off]
enabled = false
model_provider = "c"
risk_profile = "helper"
runtime_profile = "h"
[agents.ghost]
model_provider = "c"
risk_profile = "helper"
runtime_profile = "h"
[agents.other]
model_provider = "c"
risk_profile = "helper"
runtime_profile = "h"
"""


@dataclass
class RecordingApprover:
    decision: Decision = Decision.ALLOW_ONCE
    asked: list[str] = field(default_factory=list)

    def approve(self, tool: str, arguments: JSON, cancel: CancelToken) -> Answer:
        self.asked.append(tool)
        return Answer(self.decision)


def _call(name: str, call_id: str, **arguments: JSON) -> JSONObject:
    return {"id": call_id, "name": name, "arguments": dict(arguments)}


def _delegate_turns(final: str = "parent done", **arguments: JSON) -> list[JSONObject]:
    args: dict[str, JSON] = {"agent": "helper", "prompt": "Review diff.txt"}
    args.update(arguments)
    return [{"tool_calls": [_call("delegate", "d1", **args)]}, {"chunks": [final]}]


def _config(
    root: Path,
    parent_turns: Sequence[Mapping[str, object]],
    child_turns: Sequence[Mapping[str, object]] | None = None,
    *,
    lead_profile: str = "",
    helper_profile: str = "",
    lead_runtime: str = "",
    helper_runtime: str = "",
    helper_agent: str = "",
) -> ConfigSnapshot:
    cfg = root / "cfg"
    cfg.mkdir(parents=True, exist_ok=True)
    (cfg / "parent.json").write_text(json.dumps({"turns": parent_turns}))
    child = child_turns if child_turns is not None else [{"chunks": ["child ", "answer"]}]
    (cfg / "child.json").write_text(json.dumps({"turns": child}))
    (cfg / "config.toml").write_text(
        CONFIG.format(
            lead_profile=lead_profile,
            helper_profile=helper_profile,
            lead_runtime=lead_runtime,
            helper_runtime=helper_runtime,
            helper_agent=helper_agent,
        )
    )
    return load_config(cfg, root / "data", {})


@dataclass
class Run:
    parent: ResolvedAgentExecution
    outcome: TurnOutcome
    events: list[TurnEvent]
    resolved: list[ResolvedAgentExecution]

    @property
    def children(self) -> list[ResolvedAgentExecution]:
        return [e for e in self.resolved if e.path == "delegate"]

    def tool_outputs(self) -> list[str]:
        return [e.output for e in self.events if isinstance(e, ToolFinished)]


@pytest.fixture
def observed() -> Iterator[list[ResolvedAgentExecution]]:
    seen: list[ResolvedAgentExecution] = []
    add_resolve_observer(seen.append)
    yield seen
    remove_resolve_observer(seen.append)


def _run(
    config: ConfigSnapshot,
    seen: list[ResolvedAgentExecution],
    path: str = "cli-run",
    root: Path | None = None,
    approver: RecordingApprover | None = None,
    caller: frozenset[str] | None = None,
) -> Run:
    if path == "acp":
        assert root is not None
        ws = root / "session"
        ws.mkdir(exist_ok=True)
        request = PathRequest("acp", approver=approver or RecordingApprover(), session_workspace=ws)
    elif path == "cron":
        request = PathRequest("cron", caller_allowed=caller)
    else:
        request = PathRequest(path)
    parent = resolve(config, "lead", request)
    events: list[TurnEvent] = []
    outcome = TurnEngine(SequentialIds()).run_turn(
        parent, [], "please review", events.append, CancelToken()
    )
    return Run(parent, outcome, events, list(seen))


def _records(root: Path) -> list[JSONObject]:
    folder = root / "data" / "delegations"
    if not folder.exists():
        return []
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]


def _child_requests(run: Run) -> list[JSONObject]:
    (child,) = run.children
    return model_requests(child)


# --- refusals ---------------------------------------------------------------------------


@pytest.mark.req("POL-DELEG-01")
def test_a_target_not_listed_is_refused(
    tmp_path: Path, observed: list[ResolvedAgentExecution]
) -> None:
    config = _config(tmp_path, _delegate_turns(agent="other"))
    run = _run(config, observed)
    assert run.tool_outputs() == ["Error: Agent 'other' is not a delegate target of 'lead'"]
    assert run.children == [] and _records(tmp_path) == []
    assert isinstance(run.outcome, Completed) and run.outcome.text == "parent done"


@pytest.mark.req("POL-DELEG-02")
def test_the_parent_at_its_depth_limit_cannot_delegate(
    tmp_path: Path, observed: list[ResolvedAgentExecution]
) -> None:
    config = _config(tmp_path, _delegate_turns(), lead_runtime="max_delegation_depth = 0")
    run = _run(config, observed)
    assert run.tool_outputs() == ["Error: Delegation depth limit reached (0)"]
    assert run.children == [] and _records(tmp_path) == []


@pytest.mark.req("POL-DELEG-02")
def test_a_child_at_the_default_depth_limit_cannot_delegate_again(
    tmp_path: Path,
    observed: list[ResolvedAgentExecution],
) -> None:
    child_turns: list[JSONObject] = [
        {"tool_calls": [_call("delegate", "d2", agent="other", prompt="deeper")]},
        {"chunks": ["child gave up"]},
    ]
    config = _config(
        tmp_path,
        _delegate_turns(),
        child_turns,
        helper_profile='auto_approve = ["delegate"]',
        helper_agent='delegates = ["other"]',
    )
    run = _run(config, observed)
    assert run.tool_outputs() == ["child gave up"]
    (record,) = _records(tmp_path)
    tool_messages = [m for m in request_messages(record) if m["role"] == "tool"]
    assert [m["content"] for m in tool_messages] == ["Error: Delegation depth limit reached (1)"]
    assert len(run.children) == 1  # no grandchild was resolved


@pytest.mark.req("POL-DELEG-04")
@pytest.mark.parametrize(
    ("target", "reason"),
    [
        ("ghost", "Unknown agent `ghost` \u2014 no [agents.ghost] entry configured"),
        ("off", "Agent `off` is not enabled for dispatch"),
    ],
)
def test_a_child_that_cannot_be_resolved_fails_closed(
    tmp_path: Path,
    observed: list[ResolvedAgentExecution],
    target: str,
    reason: str,
) -> None:
    config = _config(tmp_path, _delegate_turns(agent=target))
    # `ghost` is listed as a target but has vanished from the configuration the parent holds
    agents = {k: v for k, v in config.agents.items() if k != "ghost"}
    config = dataclasses.replace(config, agents=agents)
    run = _run(config, observed)
    assert run.tool_outputs() == [f"Error: Delegation to '{target}' failed closed: {reason}"]
    assert run.children == [] and _records(tmp_path) == []


# --- the child's transcript, workspace and record ----------------------------------------


@pytest.mark.req("POL-DELEG-05", "POL-DELEG-03")
def test_the_child_sees_only_its_system_prompt_and_the_delegated_message(
    tmp_path: Path,
    observed: list[ResolvedAgentExecution],
) -> None:
    config = _config(tmp_path, _delegate_turns(context="Diff is in diff.txt."))
    run = _run(config, observed)
    (first, *_) = _child_requests(run)
    (child,) = run.children
    assert first["messages"] == [
        {"role": "system", "content": child.io.system_prompt},
        {"role": "user", "content": "Diff is in diff.txt.\n\nReview diff.txt"},
    ]
    assert child.io.system_prompt.startswith("You help.")
    assert "please review" not in json.dumps(first)  # nothing of the parent conversation
    assert child.agent_alias == "helper" and child.model.provider_name == "c"


@pytest.mark.req("POL-DELEG-05")
def test_without_context_the_message_is_the_prompt_alone(
    tmp_path: Path, observed: list[ResolvedAgentExecution]
) -> None:
    run = _run(_config(tmp_path, _delegate_turns()), observed)
    assert at(_child_requests(run), 0, "messages", 1) == {
        "role": "user",
        "content": "Review diff.txt",
    }


@pytest.mark.req("POL-DELEG-10", "POL-PATH-22")
def test_the_child_works_in_the_targets_workspace(
    tmp_path: Path, observed: list[ResolvedAgentExecution]
) -> None:
    config = _config(tmp_path, _delegate_turns())
    run = _run(config, observed, path="acp", root=tmp_path)
    (child,) = run.children
    helper_ws = (tmp_path / "cfg" / "agents" / "helper" / "workspace").resolve()
    assert run.parent.security.workspace_dir == (tmp_path / "session").resolve()
    assert child.security.workspace_dir == helper_ws
    assert f"Working directory: {helper_ws}" in child.io.system_prompt


@pytest.mark.req("POL-DELEG-06", "POL-DELEG-08")
def test_each_child_run_leaves_a_lineage_record(
    tmp_path: Path, observed: list[ResolvedAgentExecution]
) -> None:
    run = _run(_config(tmp_path, _delegate_turns()), observed, path="cron")
    (child,) = run.children
    (record,) = _records(tmp_path)
    run_id = child.lineage.run_id
    assert (tmp_path / "data" / "delegations" / f"{run_id}.json").is_file()
    assert set(record) == {
        "run_id", "executing_agent", "parent", "depth", "surface", "started_at",
        "finished_at", "outcome", "messages",
    }  # fmt: skip
    assert record["run_id"] == run_id and record["executing_agent"] == "helper"
    assert record["parent"] == {
        "agent": "lead",
        "run_id": run.parent.lineage.run_id,
        "tool_call_id": "d1",
    }
    assert record["depth"] == 1 and record["surface"] == "cron" and record["outcome"] == "success"
    assert isinstance(record["started_at"], str) and isinstance(record["finished_at"], str)
    messages = request_messages(record)
    assert messages[0] == {"role": "system", "content": child.io.system_prompt}
    assert messages[1] == {"role": "user", "content": "Review diff.txt"}
    assert messages[-1]["role"] == "assistant" and messages[-1]["content"] == "child answer"


@pytest.mark.req("POL-DELEG-07")
def test_success_returns_the_answer_and_the_link(
    tmp_path: Path, observed: list[ResolvedAgentExecution]
) -> None:
    config = _config(tmp_path, [{"chunks": ["unused"]}])
    parent = resolve(config, "lead", PathRequest("cli-run"))
    port = Delegation(parent, TurnEngine(SequentialIds()), SystemClock())
    result = port.delegate("helper", "Review diff.txt", None, "d9", CancelToken())
    (child,) = [e for e in observed if e.path == "delegate"]
    assert result.success and result.output == "child answer"
    assert result.data == {
        "agent": "helper",
        "run_id": child.lineage.run_id,
        "parent_agent": "lead",
        "depth": 1,
    }
    # and through a real turn the parent's model gets the answer text as the tool result
    run = _run(_config(tmp_path / "t", _delegate_turns()), observed)
    assert run.tool_outputs() == ["child answer"]
    assert isinstance(run.outcome, Completed)
    assert any(
        m.get("content") == "child answer" for m in run.outcome.messages if m["role"] == "tool"
    )


@pytest.mark.req("POL-DELEG-07", "POL-DELEG-08")
def test_a_failed_child_turn_fails_the_tool(
    tmp_path: Path, observed: list[ResolvedAgentExecution]
) -> None:
    config = _config(tmp_path, _delegate_turns(), [{"error": "model overloaded"}])
    run = _run(config, observed)
    assert run.tool_outputs() == ["Error: Delegated agent 'helper' failed: model overloaded"]
    (record,) = _records(tmp_path)
    assert record["outcome"] == "failure"
    assert isinstance(run.outcome, Completed) and run.outcome.text == "parent done"


# --- the parent's caller list, stream and operator ---------------------------------------


@pytest.mark.req("POL-DELEG-11", "POL-PATH-13", "POL-ACCESS-08")
def test_a_cron_parents_caller_list_bounds_the_child(
    tmp_path: Path, observed: list[ResolvedAgentExecution]
) -> None:
    config = _config(tmp_path, _delegate_turns())
    caller = frozenset({"delegate", "file_read"})
    run = _run(config, observed, path="cron", caller=caller)
    (child,) = run.children
    assert child.assembly.caller_allowed == caller
    assert child.io.tools.names == ("file_read",)
    snapshot = child.snapshot()
    assert snapshot["access.caller_allowed"] == ["delegate", "file_read"]
    assert _child_requests(run)[0]["tools"] == ["file_read"]
    # without a parent caller list the child has its own full set
    free = _run(_config(tmp_path / "free", _delegate_turns()), observed)
    assert free.children[-1].assembly.caller_allowed is None
    assert "shell" in free.children[-1].io.tools.names


@pytest.mark.req("POL-DELEG-09")
def test_child_events_stay_out_of_the_parents_stream(
    tmp_path: Path, observed: list[ResolvedAgentExecution]
) -> None:
    child_turns: list[JSONObject] = [
        {"tool_calls": [_call("todo_write", "c1", todos=[])]},
        {"chunks": ["child ", "answer"]},
    ]
    run = _run(_config(tmp_path, _delegate_turns(), child_turns), observed)
    texts = "".join(e.text for e in run.events if isinstance(e, TextDelta))
    assert texts == "parent done"
    ids = [getattr(e, "id", None) for e in run.events if hasattr(e, "id")]
    assert set(ids) == {"d1"}  # only the parent's own delegate call


@pytest.mark.req("POL-DELEG-09", "POL-DELEG-03")
def test_child_approvals_go_through_the_parents_operator(
    tmp_path: Path, observed: list[ResolvedAgentExecution]
) -> None:
    child_turns: list[JSONObject] = [
        {"tool_calls": [_call("file_write", "c1", path="x.txt", content="x")]},
        {"chunks": ["written"]},
    ]
    approver = RecordingApprover(Decision.REJECT)
    run = _run(
        _config(tmp_path, _delegate_turns(), child_turns),
        observed,
        path="acp",
        root=tmp_path,
        approver=approver,
    )
    assert approver.asked == ["file_write"]  # delegate itself is auto-approved for lead
    (child,) = run.children
    assert child.io.interaction == "acp_backchannel"
    (record,) = _records(tmp_path)
    tool_messages = [m for m in request_messages(record) if m["role"] == "tool"]
    assert tool_messages[0]["content"] == "Denied by user."


@pytest.mark.req("POL-DELEG-03", "POL-APPROVE-07")
def test_a_child_under_a_non_interactive_parent_has_no_operator(
    tmp_path: Path,
    observed: list[ResolvedAgentExecution],
) -> None:
    child_turns: list[JSONObject] = [
        {"tool_calls": [_call("file_write", "c1", path="x.txt", content="x")]},
        {"chunks": ["gave up"]},
    ]
    run = _run(_config(tmp_path, _delegate_turns(), child_turns), observed)
    (record,) = _records(tmp_path)
    tool_messages = [m for m in request_messages(record) if m["role"] == "tool"]
    assert "This was not a user's decision." in text_at(tool_messages, 0, "content")
    assert not (tmp_path / "cfg" / "agents" / "helper" / "workspace" / "x.txt").exists()
    assert run.children[0].io.interaction == "none"


# --- POL-PATH-13: the surface's promises hold for the child -------------------------------


@pytest.mark.req("POL-PATH-13", "POL-MEM-02")
def test_memory_is_stripped_for_a_child_under_an_acp_parent(
    tmp_path: Path, observed: list[ResolvedAgentExecution]
) -> None:
    run = _run(_config(tmp_path, _delegate_turns()), observed, path="acp", root=tmp_path)
    (child,) = run.children
    assert not MEMORY_TOOLS & set(child.io.tools.names)
    assert child.memory.enabled is False and child.memory.store_path is None
    assert child.lineage.surface == "acp" and child.lineage.depth == 1
    assert "deliver_file" not in child.io.tools.names
    assert not MEMORY_TOOLS.intersection(list_at(_child_requests(run)[0], "tools"))
    assert not (tmp_path / "data" / "memory").exists()


@pytest.mark.req("POL-PATH-13")
def test_memory_stays_for_a_child_off_the_acp_surface(
    tmp_path: Path, observed: list[ResolvedAgentExecution]
) -> None:
    run = _run(_config(tmp_path, _delegate_turns()), observed)
    (child,) = run.children
    assert set(child.io.tools.names) >= MEMORY_TOOLS
    assert child.memory.enabled is True and child.lineage.surface == "cli-run"
    assert child.snapshot()["assembly.connect_peripherals"] is False
