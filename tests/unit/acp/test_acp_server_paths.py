# ruff: noqa: E501 - exact error texts are kept on one line so they can be compared with the spec
"""Server paths no transcript can reach: restores under a changed configuration, a vanished
workspace, runtime and store failures on `session/new`, the end of a turn (acp.md §3, §4, §8),
driven through an in-process `AcpServer`."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from zeroclaw_ref.acp.intake import render_prompt
from zeroclaw_ref.acp.project import TurnProjector
from zeroclaw_ref.acp.server import AcpServer, ServerOptions
from zeroclaw_ref.acp.session import AcpSession
from zeroclaw_ref.config.load import load_config
from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.core.ids import RandomIds
from zeroclaw_ref.core.jsontypes import JSONObject
from zeroclaw_ref.engine import resolve as resolve_module
from zeroclaw_ref.engine.events import (
    Completed,
    Failed,
    FailureKind,
    TextDelta,
    TurnEvent,
    UsageReported,
)
from zeroclaw_ref.engine.execution import ResolvedAgentExecution
from zeroclaw_ref.engine.resolve import ResolveError
from zeroclaw_ref.store.sessions import SessionStore, StoreError
from zeroclaw_ref.wire.errors import RpcError

Message = dict[str, object]

AGENT = 'model_provider = "demo"\nrisk_profile = "r"\nruntime_profile = "t"\n'
BASE = '[providers.demo]\nkind = "demo"\n[risk_profiles.r]\n[runtime_profiles.t]\n'


class StepClock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.instant = datetime(2026, 1, 1, tzinfo=UTC)

    def now(self) -> datetime:
        return self.instant

    def tick(self, seconds: int) -> None:
        self.instant += timedelta(seconds=seconds)


@dataclass
class Harness:
    server: AcpServer
    out: list[Message]
    store: SessionStore | None
    on_line: list[Callable[[Message], None]] = field(default_factory=list)

    def call(self, msg_id: int, method: str, params: JSONObject) -> Message:
        self.server.endpoint.dispatch(
            json.dumps(
                {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
            ).encode()
        )
        waiter = threading.Event()
        for _ in range(1000):
            found = [m for m in self.out if m.get("id") == msg_id]
            if found:
                return found[0]
            waiter.wait(0.01)
        raise AssertionError(f"no answer to {method}: {self.out}")

    def new(self, msg_id: int = 1, **params: object) -> str:
        answer = self.call(msg_id, "session/new", dict(params))
        return str(answer["result"]["sessionId"])  # type: ignore[index]

    def session(self, sid: str) -> AcpSession:
        return self.server._active[sid]

    def close(self) -> None:
        self.server.shutdown(5)


def _harness(
    tmp_path: Path,
    config_text: str,
    *,
    store: bool = True,
    clock: StepClock | None = None,
    options: ServerOptions | None = None,
) -> Harness:
    cfg = tmp_path / "cfg"
    cfg.mkdir(exist_ok=True)
    (cfg / "config.toml").write_text(config_text)
    config = load_config(cfg, tmp_path / "data", {})
    opened = SessionStore.open(tmp_path / "data") if store else None
    out: list[Message] = []
    hooks: list[Callable[[Message], None]] = []

    def send(line: str) -> None:
        message = json.loads(line)
        for hook in hooks:
            hook(message)
        out.append(message)

    server = AcpServer(
        config,
        send,
        RandomIds(),
        clock or StepClock(),
        options=options or ServerOptions(),
        store=opened,
    )
    return Harness(server, out, opened, hooks)


def _restart(tmp_path: Path, old: Harness, config_text: str, **kw: object) -> Harness:
    old.close()
    if old.store is not None:
        old.store.close()
    return _harness(tmp_path, config_text, **kw)  # type: ignore[arg-type]


# --- restore: agent choice (ACP-LOAD-04), fresh resolution (POL-PATH-06) -------------------


@pytest.mark.req("ACP-LOAD-04", "POL-PATH-06")
def test_a_restore_keeps_the_stored_alias_when_it_is_still_dispatchable(tmp_path: Path) -> None:
    first = _harness(tmp_path, BASE + f"[agents.a]\n{AGENT}[agents.b]\n{AGENT}")
    sid = first.new(agentAlias="a")
    first.session(sid).execution.io.approval.allow_always("shell")  # an "allow always" grant
    second = _restart(
        tmp_path,
        first,
        BASE.replace("[runtime_profiles.t]\n", "[runtime_profiles.t]\nmax_tool_iterations = 3\n")
        + f'[acp]\ndefault_agent = "b"\n[agents.a]\n{AGENT}[agents.b]\n{AGENT}',
    )
    assert second.call(1, "session/resume", {"sessionId": sid})["result"] == {}
    execution = second.session(sid).execution
    assert execution.agent_alias == "a"
    assert execution.knobs.max_tool_iterations == 3  # the agent's current configuration
    assert execution.io.approval.session_allowlist == ()  # empty allow list
    second.close()


FALLBACKS = [
    pytest.param(
        f'[acp]\ndefault_agent = "b"\n[agents.b]\n{AGENT}[agents.c]\n{AGENT}',
        "b",
        id="default-agent",
    ),
    pytest.param(
        f'[acp]\ndefault_agent = "b"\n[agents.a]\nenabled = false\n{AGENT}[agents.b]\n{AGENT}',
        "b",
        id="stored-alias-disabled",
    ),
    pytest.param(f"[agents.c]\n{AGENT}", "c", id="only-agent"),
    pytest.param(
        f'[acp]\ndefault_agent = "ghost"\n[agents.c]\n{AGENT}', "c", id="default-unknown-then-only"
    ),
]


@pytest.mark.req("ACP-LOAD-04", "POL-PATH-06", "ACP-LOAD-08")
@pytest.mark.parametrize(("agents", "expected"), FALLBACKS)
@pytest.mark.parametrize("method", ["session/load", "session/resume"])
def test_a_restore_falls_back_to_the_default_or_the_only_agent(
    tmp_path: Path, agents: str, expected: str, method: str
) -> None:
    first = _harness(tmp_path, BASE + f"[agents.a]\n{AGENT}")
    sid = first.new()
    first.call(2, "session/prompt", {"sessionId": sid, "prompt": "hi"})
    second = _restart(tmp_path, first, BASE + agents)
    assert second.call(1, method, {"sessionId": sid})["result"] == {}
    execution = second.session(sid).execution
    assert execution.agent_alias == expected
    assert execution.path == "acp" and execution.io.approval.session_allowlist == ()
    assert second.store is not None
    assert second.store.load(sid).agent_alias == "a"  # type: ignore[union-attr]  # ACP-LOAD-08
    second.close()


NO_AGENT = [
    pytest.param(f"[agents.b]\n{AGENT}[agents.c]\n{AGENT}", id="two-agents-no-default"),
    pytest.param(f"[agents.b]\nenabled = false\n{AGENT}", id="only-agent-disabled"),
    pytest.param(
        f'[acp]\ndefault_agent = "b"\n[agents.b]\nenabled = false\n{AGENT}[agents.c]\n{AGENT}',
        id="default-disabled",
    ),
    pytest.param("", id="no-agents"),
]


@pytest.mark.req("ACP-LOAD-04")
@pytest.mark.parametrize("agents", NO_AGENT)
def test_a_restore_with_no_dispatchable_agent_fails(tmp_path: Path, agents: str) -> None:
    first = _harness(tmp_path, BASE + f"[agents.a]\n{AGENT}")
    sid = first.new()
    second = _restart(tmp_path, first, BASE + agents)
    assert second.call(1, "session/load", {"sessionId": sid})["error"] == {
        "code": -32603,
        "message": f"Failed to create agent: no dispatchable agent to restore session {sid}",
    }
    assert sid not in second.server._active
    second.close()


@pytest.mark.req("ACP-LOAD-04", "ACP-NEW-06")
@pytest.mark.parametrize("method", ["session/load", "session/resume"])
def test_a_restore_never_uses_the_gateway_agent(tmp_path: Path, method: str) -> None:
    first = _harness(tmp_path, BASE + f"[agents.a]\n{AGENT}")
    sid = first.new()
    second = _restart(
        tmp_path,
        first,
        BASE + f"[agents.b]\n{AGENT}[agents.c]\n{AGENT}",
        options=ServerOptions(connection_agent="c"),
    )
    answer = second.call(1, method, {"sessionId": sid})
    assert answer["error"] == {
        "code": -32603,
        "message": f"Failed to create agent: no dispatchable agent to restore session {sid}",
    }
    second.close()


# --- restore: vanished workspace (ACP-LOAD-05) -----------------------------------------------


@pytest.mark.req("ACP-LOAD-05")
@pytest.mark.parametrize("method", ["session/load", "session/resume"])
def test_a_restore_into_a_vanished_workspace_fails(tmp_path: Path, method: str) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    first = _harness(tmp_path, BASE + f"[agents.a]\n{AGENT}")
    sid = first.new(cwd=str(workspace))
    second = _restart(tmp_path, first, BASE + f"[agents.a]\n{AGENT}")
    workspace.rmdir()
    assert second.call(1, method, {"sessionId": sid})["error"] == {
        "code": -32603,
        "message": f"Failed to load session: workspace directory is not available: {workspace.resolve()}",
    }
    workspace.write_text("now a file")  # still not a directory
    assert second.call(2, method, {"sessionId": sid})["error"]["code"] == -32603  # type: ignore[index]
    assert second.server._active == {}
    second.close()


@pytest.mark.req("ACP-LOAD-05", "ACP-LOAD-02", "ACP-RESUME-01", "ACP-NEW-10", "ACP-SEC-09")
@pytest.mark.parametrize("method", ["session/load", "session/resume"])
@pytest.mark.parametrize("swapped", ["workspace", "parent"])
def test_a_restore_refuses_a_stored_workspace_now_replaced_by_a_symbolic_link(
    tmp_path: Path, method: str, swapped: str, caplog: pytest.LogCaptureFixture
) -> None:
    """ACP-LOAD-05 / ACP-LOAD-02 step (7): the stored canonical path is the boundary; once it
    (or a parent) is a link, following it would serve the link's target, so it counts as gone.
    """
    parent = tmp_path / "projects"
    workspace = parent / "ws"
    workspace.mkdir(parents=True)
    first = _harness(tmp_path, BASE + f"[agents.a]\n{AGENT}")
    sid = first.new(cwd=str(workspace))
    second = _restart(tmp_path, first, BASE + f"[agents.a]\n{AGENT}")
    if swapped == "workspace":  # mv ws ws.orig; ln -s .. ws
        workspace.rename(parent / "ws.orig")
        workspace.symlink_to("..")
    else:  # the directory itself is intact, one of its parents is a link now
        parent.rename(tmp_path / "moved")
        parent.symlink_to(tmp_path / "moved")
    assert workspace.is_dir()  # the old check followed the link and passed
    with caplog.at_level("WARNING", logger="zeroclaw_ref.acp.workspace"):
        answer = second.call(1, method, {"sessionId": sid})
    assert answer["error"] == {
        "code": -32603,
        "message": f"Failed to load session: workspace directory is not available: {workspace}",
    }
    assert [m for m in second.out if m.get("method") == "session/update"] == []
    assert second.server._active == {}
    assert "symbolic link" in caplog.text  # the operator learns why
    second.close()


# --- path-like params no file can have (a NUL, a lone surrogate) -----------------------------


@pytest.mark.req("ACP-NEW-10", "ACP-NEW-07", "ACP-NEW-09", "ACP-ERR-01")
@pytest.mark.parametrize("key", ["cwd", "workspaceDir", "workspace_dir"])
@pytest.mark.parametrize("given", ["/tmp\x00x", "relative\x00", "\x00", "/tmp/\ud800"])
def test_a_cwd_no_file_can_have_is_the_usable_directory_error(
    tmp_path: Path, key: str, given: str
) -> None:
    """ACP-NEW-10, Table 3-2: a NUL (or a character with no file-system encoding) names no
    file, like the empty string, so it is −32602 `No such file or directory` — it used to
    escape as an internal error (−32603)."""
    harness = _harness(tmp_path, BASE + f"[agents.a]\n{AGENT}")
    assert harness.call(1, "session/new", {key: given})["error"] == {
        "code": -32602,
        "message": f"cwd is not a usable directory ({given}): No such file or directory",
    }
    assert harness.server._active == {} and harness.server._reserved == 0
    harness.close()


@pytest.mark.req("ACP-LOAD-01", "ACP-RESUME-01")
@pytest.mark.parametrize("method", ["session/load", "session/resume"])
def test_a_restore_ignores_a_cwd_with_a_nul(tmp_path: Path, method: str) -> None:
    """ACP-LOAD-01: only the session id is read, so a NUL in `cwd` cannot fail a restore."""
    first = _harness(tmp_path, BASE + f"[agents.a]\n{AGENT}")
    sid = first.new()
    second = _restart(tmp_path, first, BASE + f"[agents.a]\n{AGENT}")
    params: JSONObject = {"sessionId": sid, "cwd": "/tmp\x00x", "workspaceDir": "\x00"}
    assert second.call(1, method, params) == {"jsonrpc": "2.0", "id": 1, "result": {}}
    second.close()


@pytest.mark.req("ACP-NEW-14")
def test_a_configured_agent_workspace_with_a_nul_fails_like_one_that_cannot_be_created(
    tmp_path: Path,
) -> None:
    """ACP-NEW-14: the −32603 `cannot create agent workspace` error, not an unexpected one."""
    agent = AGENT + 'workspace.path = "/tmp/a\\u0000b"\n'
    harness = _harness(tmp_path, BASE + f"[agents.a]\n{agent}")
    error = harness.call(1, "session/new", {})["error"]
    assert error["code"] == -32603  # type: ignore[index]
    assert error["message"].startswith(  # type: ignore[index]
        "Failed to create agent: cannot create agent workspace /tmp/a\x00b: "
    )
    harness.close()


# --- session/new failures (ACP-NEW-14, ACP-NEW-18, ACP-NEW-19) --------------------------------


@pytest.mark.req("ACP-NEW-14")
@pytest.mark.parametrize("with_cwd", [False, True])
def test_an_agent_workspace_that_cannot_be_created_fails_session_new(
    tmp_path: Path, with_cwd: bool
) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where a directory is needed")
    target = blocker / "ws"
    harness = _harness(
        tmp_path, BASE + f'[agents.a]\n{AGENT}[agents.a.workspace]\npath = "{target}"\n'
    )
    params: JSONObject = {"cwd": str(tmp_path)} if with_cwd else {}
    assert harness.call(1, "session/new", params)["error"] == {
        "code": -32603,
        "message": f"Failed to create agent: cannot create agent workspace {target}: Not a directory",
    }
    assert harness.server._active == {}
    harness.close()


@pytest.mark.req("ACP-NEW-14")
def test_a_missing_agent_workspace_is_created_with_its_parents_and_canonicalised(
    tmp_path: Path,
) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    target = tmp_path / "link" / "deep" / "ws"
    harness = _harness(
        tmp_path, BASE + f'[agents.a]\n{AGENT}[agents.a.workspace]\npath = "{target}"\n'
    )
    cwd = tmp_path / "session"
    cwd.mkdir()
    answer = harness.call(1, "session/new", {"cwd": str(cwd)})
    assert answer["result"]["workspaceDir"] == str(cwd)  # type: ignore[index]
    assert (real / "deep" / "ws").is_dir()  # created even though a cwd was given
    sid = str(answer["result"]["sessionId"])  # type: ignore[index]
    roots = harness.session(sid).execution.security.allowed_roots
    assert real / "deep" / "ws" in roots and target not in roots  # the canonical path
    harness.close()


@pytest.mark.req("ACP-NEW-18")
def test_a_runtime_that_cannot_be_built_fails_session_new_scrubbed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    harness = _harness(tmp_path, BASE + f"[agents.a]\n{AGENT}")

    def broken(*args: object, **kwargs: object) -> ResolvedAgentExecution:
        raise ResolveError("provider refused: api_key=hunter2hunter2")

    monkeypatch.setattr(resolve_module, "resolve", broken)  # read at each session
    assert harness.call(1, "session/new", {})["error"] == {
        "code": -32603,
        "message": "Failed to create agent: provider refused: api_key=hunt*[REDACTED]",
    }
    assert harness.server._active == {}
    assert harness.store is not None and harness.store.list_sessions() == []
    harness.close()


@pytest.mark.req("ACP-NEW-19")
def test_a_session_row_that_cannot_be_written_fails_session_new_unpublished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    harness = _harness(tmp_path, BASE + f"[agents.a]\n{AGENT}")
    assert harness.store is not None
    seen: list[int] = []

    def failing(*args: object, **kwargs: object) -> None:
        seen.append(len(harness.server._active))  # not yet published when the row is written
        raise StoreError("database is locked")

    monkeypatch.setattr(harness.store, "insert_session", failing)
    assert harness.call(1, "session/new", {})["error"] == {
        "code": -32603,
        "message": "Failed to persist session: database is locked",
    }
    assert seen == [0] and harness.server._active == {}
    monkeypatch.undo()
    sid = harness.new(2)  # the reservation was released; the next one works
    assert harness.store.load(sid) is not None
    harness.close()


# --- the end of a turn (ACP-PROMPT-23, -24, -25, -29) ------------------------------------------


@pytest.mark.req("ACP-PROMPT-23")
def test_updates_are_sent_while_the_turn_is_still_running(tmp_path: Path) -> None:
    harness = _harness(tmp_path, BASE + f"[agents.a]\n{AGENT}")
    sid = harness.new()
    busy_at_update: list[bool] = []
    harness.on_line.append(
        lambda m: (
            busy_at_update.append(harness.session(sid).busy)
            if m.get("method") == "session/update"
            else None
        )
    )
    result = harness.call(2, "session/prompt", {"sessionId": sid, "prompt": "slow: 3"})
    assert result["result"]["stopReason"] == "end_turn"  # type: ignore[index]
    assert len(busy_at_update) >= 3 and all(busy_at_update)
    updates = [m for m in harness.out if m.get("method") == "session/update"]
    assert harness.out.index(result) > harness.out.index(updates[-1])
    harness.close()


@dataclass
class ScriptedEngine:
    """Stands in for the turn engine: optionally fires the cancel, then fails."""

    cancel_first: bool
    kind: FailureKind = FailureKind.OTHER
    texts: list[str] = field(default_factory=list)

    def run_turn(
        self,
        execution: ResolvedAgentExecution,
        history: list[JSONObject],
        text: str,
        on_event: Callable[[TurnEvent], None],
        token: CancelToken,
    ) -> Failed:
        self.texts.append(text)
        on_event(TextDelta("partial"))
        if self.cancel_first:
            token.fire()
        return Failed(self.kind, "the provider broke")


@pytest.mark.req("ACP-PROMPT-29")
@pytest.mark.parametrize(
    "kind", [FailureKind.OTHER, FailureKind.PANIC, FailureKind.INVALID_COMPLETION]
)
def test_a_failure_after_the_cancel_fired_is_reported_as_cancelled(
    tmp_path: Path, kind: FailureKind
) -> None:
    harness = _harness(tmp_path, BASE + f"[agents.a]\n{AGENT}")
    harness.server.engine = ScriptedEngine(cancel_first=True, kind=kind)  # type: ignore[assignment]
    sid = harness.new()
    answer = harness.call(2, "session/prompt", {"sessionId": sid, "prompt": "go"})
    assert answer["result"]["stopReason"] == "cancelled"  # type: ignore[index]
    assert "error" not in answer
    harness.close()


@pytest.mark.req("ACP-PROMPT-24")
@pytest.mark.parametrize("outcome", ["completed", "failed", "cancelled"])
def test_last_active_is_set_when_the_turn_ends_whatever_the_outcome(
    tmp_path: Path, outcome: str
) -> None:
    clock = StepClock()
    harness = _harness(tmp_path, BASE + f"[agents.a]\n{AGENT}", clock=clock)
    if outcome != "completed":
        harness.server.engine = ScriptedEngine(cancel_first=outcome == "cancelled")  # type: ignore[assignment]
    sid = harness.new()
    clock.tick(100)
    ended_at = clock.instant + timedelta(seconds=5)

    def move_clock_during_the_turn(message: Message) -> None:
        if message.get("method") == "session/update" and clock.instant < ended_at:
            clock.instant = ended_at  # the turn ends after this instant

    harness.on_line.append(move_clock_during_the_turn)
    answer = harness.call(2, "session/prompt", {"sessionId": sid, "prompt": "hello"})
    assert ("error" in answer) == (outcome == "failed")
    assert harness.session(sid).last_active == ended_at
    harness.close()


@pytest.mark.req("ACP-PROMPT-25")
@pytest.mark.parametrize("outcome", ["completed", "failed", "cancelled"])
def test_the_slot_is_free_and_the_turn_stored_when_the_answer_is_written(
    tmp_path: Path, outcome: str
) -> None:
    harness = _harness(tmp_path, BASE + f"[agents.a]\n{AGENT}")
    if outcome != "completed":
        harness.server.engine = ScriptedEngine(cancel_first=outcome == "cancelled")  # type: ignore[assignment]
    sid = harness.new()
    at_answer: list[tuple[bool, int]] = []

    def inspect(message: Message) -> None:
        if message.get("id") == 2:
            stored = harness.store.load(sid)  # type: ignore[union-attr]
            at_answer.append((harness.session(sid).busy, len(stored.turns)))  # type: ignore[union-attr]

    harness.on_line.append(inspect)
    harness.call(2, "session/prompt", {"sessionId": sid, "prompt": "hello"})
    assert at_answer == [(False, 1 if outcome == "completed" else 0)]
    harness.close()


# --- projection: usage is never sent (ACP-UPD-16) ---------------------------------------------


@pytest.mark.req("ACP-UPD-16")
def test_usage_events_produce_no_message(tmp_path: Path) -> None:
    sent: list[JSONObject] = []
    trimmed: list[JSONObject] = []
    projector = TurnProjector("s", tmp_path, sent.append, trimmed.append)
    projector.on_event(UsageReported(input_tokens=10, output_tokens=3))
    assert sent == [] and trimmed == [] and projector.update_log == []
    projector.on_event(TextDelta("x"))
    assert len(sent) == 1  # the projector does send other events


@pytest.mark.req("ACP-UPD-16")
def test_approvals_reach_the_client_only_as_permission_requests(tmp_path: Path) -> None:
    """The runtime has no approval event type: the only approval traffic is the back-channel."""
    from zeroclaw_ref.engine import events

    names = {t.__name__ for t in events.TurnEvent.__args__}  # type: ignore[attr-defined]
    assert not any("Approv" in name or "Permission" in name for name in names)


# --- blob size limit (ACP-PROMPT-14) ----------------------------------------------------------

LIMIT = 10_485_760


@pytest.mark.req("ACP-PROMPT-14")
def test_a_blob_over_ten_mib_is_refused_with_its_decoded_size(tmp_path: Path) -> None:
    big = base64.b64encode(b"\0" * (LIMIT + 1)).decode()
    prompt = [
        {"type": "text", "text": "see"},
        {"type": "resource", "resource": {"uri": "file:///x.bin", "blob": big}},
    ]
    with pytest.raises(RpcError) as info:
        render_prompt(prompt, tmp_path)
    assert info.value.to_json() == {
        "code": -32602,
        "message": f"Embedded resource exceeds 10 MB limit ({LIMIT + 1} bytes)",
    }
    assert not (tmp_path / "uploads").exists() or not any((tmp_path / "uploads").iterdir())


@pytest.mark.req("ACP-PROMPT-14")
def test_a_blob_of_exactly_ten_mib_is_accepted(tmp_path: Path) -> None:
    exact = base64.b64encode(b"\0" * LIMIT).decode()
    prompt = [{"type": "resource", "resource": {"uri": "file:///x.bin", "blob": exact}}]
    text = render_prompt(prompt, tmp_path)
    assert "[Document: x.bin]" in text


@pytest.mark.req("ACP-PROMPT-14")
def test_an_oversized_blob_fails_the_prompt_on_the_wire_and_frees_the_slot(tmp_path: Path) -> None:
    harness = _harness(tmp_path, BASE + f"[agents.a]\n{AGENT}")
    sid = harness.new()
    big = base64.b64encode(b"a" * (LIMIT + 3)).decode()
    prompt = [
        {"type": "text", "text": "see"},
        {
            "type": "resource",
            "resource": {"uri": "attachment://big.png", "mimeType": "image/png", "blob": big},
        },
    ]
    answer = harness.call(2, "session/prompt", {"sessionId": sid, "prompt": prompt})
    assert answer["error"] == {
        "code": -32602,
        "message": f"Embedded resource exceeds 10 MB limit ({LIMIT + 3} bytes)",
    }
    again = harness.call(3, "session/prompt", {"sessionId": sid, "prompt": "hi"})
    assert again["result"]["stopReason"] == "end_turn"  # type: ignore[index]
    harness.close()


# --- one resolution per session (POL-PATH-03) --------------------------------------------------


@pytest.mark.req("POL-PATH-03")
def test_new_load_and_resume_each_resolve_once_and_every_prompt_uses_that_execution(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from zeroclaw_ref.acp.approver import AcpApprover

    calls: list[tuple[str, object]] = []
    real_resolve = resolve_module.resolve

    def spying(
        config: object, alias: str, request: object, ids: object = None
    ) -> ResolvedAgentExecution:
        calls.append((alias, request))
        return real_resolve(config, alias, request, ids)  # type: ignore[arg-type]

    monkeypatch.setattr(resolve_module, "resolve", spying)
    workspace = (tmp_path / "ws").resolve()
    workspace.mkdir()
    first = _harness(tmp_path, BASE + f"[agents.a]\n{AGENT}")
    used: list[object] = []
    real_run = first.server.engine.run_turn

    def run_turn(execution: ResolvedAgentExecution, *rest: object) -> object:
        used.append(execution)
        return real_run(execution, *rest)  # type: ignore[arg-type]

    first.server.engine.run_turn = run_turn  # type: ignore[method-assign]
    sid = first.new(cwd=str(workspace))
    for msg_id in (2, 3, 4):
        first.call(msg_id, "session/prompt", {"sessionId": sid, "prompt": f"p{msg_id}"})
    execution = first.session(sid).execution
    assert len(calls) == 1 and len(used) == 3 and all(u is execution for u in used)
    for method in ("session/load", "session/resume"):
        second = _restart(tmp_path, first, BASE + f"[agents.a]\n{AGENT}")
        assert second.call(1, method, {"sessionId": sid})["result"] == {}
        first = second
    assert len(calls) == 3
    for alias, request in calls:
        assert alias == "a"
        assert request.path == "acp"  # type: ignore[attr-defined]
        assert request.session_workspace == workspace  # type: ignore[attr-defined]
        approver = request.approver  # type: ignore[attr-defined]
        assert isinstance(approver, AcpApprover) and approver._session_id == sid
    first.close()


# --- the agent workspace stays a root (ACP-SEC-02) ----------------------------------------------


@pytest.mark.req("ACP-SEC-02")
def test_the_agent_workspace_stays_a_root_and_the_source_of_skills_whatever_the_cwd(
    tmp_path: Path,
) -> None:
    agent_ws = tmp_path / "agent-ws"
    (agent_ws / "skills" / "own").mkdir(parents=True)
    (agent_ws / "skills" / "own" / "SKILL.md").write_text("Own skill.")
    (agent_ws / "notes.txt").write_text("agent state")
    session_ws = tmp_path / "session"
    (session_ws / "skills" / "foreign").mkdir(parents=True)
    (session_ws / "skills" / "foreign" / "SKILL.md").write_text("Foreign skill.")
    harness = _harness(
        tmp_path,
        BASE.replace("[risk_profiles.r]\n", '[risk_profiles.r]\nlevel = "full"\n')
        + f'[agents.a]\n{AGENT}[agents.a.workspace]\npath = "{agent_ws}"\n',
    )
    sid = harness.new(cwd=str(session_ws))
    execution = harness.session(sid).execution
    assert execution.security.workspace_dir == session_ws.resolve()
    assert agent_ws.resolve() in execution.security.allowed_roots
    assert [s.name for s in execution.skills] == ["own"]  # loaded from the agent workspace
    tool = execution.io.tools.get("file_read")
    assert tool is not None
    from zeroclaw_ref.tools.base import ToolContext

    result = tool.execute(
        {"path": str(agent_ws / "notes.txt")}, ToolContext(cancel=CancelToken(), approved=True)
    )
    assert result.success and "agent state" in result.output
    # and without a cwd the agent workspace is the session workspace itself
    other = harness.new(2)
    assert harness.session(other).execution.security.workspace_dir == agent_ws.resolve()
    harness.close()


@pytest.mark.req("ACP-INIT-07")
def test_initialize_reports_the_installed_package_version(tmp_path: Path) -> None:
    from importlib.metadata import version

    harness = _harness(tmp_path, BASE + f"[agents.a]\n{AGENT}", store=False)
    info = harness.call(1, "initialize", {})["result"]["agentInfo"]  # type: ignore[index]
    assert info["version"] == version("zeroclaw_ref")
    harness.close()


@pytest.mark.req("ACP-TR-33")
def test_every_update_of_a_turn_is_written_before_its_prompt_response(tmp_path: Path) -> None:
    harness = _harness(tmp_path, BASE + f"[agents.a]\n{AGENT}", store=False)
    sid = harness.new()
    for msg_id in (2, 3):
        harness.call(msg_id, "session/prompt", {"sessionId": sid, "prompt": "hello"})
    harness.close()
    kinds = ["u" if m.get("method") == "session/update" else m.get("id") for m in harness.out]
    first, second = kinds.index(2), kinds.index(3)
    assert "u" in kinds[1:first] and "u" in kinds[first + 1 : second]  # each turn updated
    assert "u" not in kinds[second + 1 :]


@pytest.mark.req("ACP-PROMPT-30")
def test_a_turn_the_runtime_completed_stays_completed_when_the_cancel_fires_late(
    tmp_path: Path,
) -> None:
    class CompletesThenCancel:
        def run_turn(self, *args: object) -> Completed:
            token = args[-1]
            assert isinstance(token, CancelToken)
            token.fire()  # the signal fires after the runtime finished its work
            return Completed("all done", ({"role": "user", "content": "go"},))

    harness = _harness(tmp_path, BASE + f"[agents.a]\n{AGENT}", store=False)
    harness.server.engine = CompletesThenCancel()  # type: ignore[assignment]
    sid = harness.new()
    answer = harness.call(2, "session/prompt", {"sessionId": sid, "prompt": "go"})
    assert answer["result"] == {"sessionId": sid, "stopReason": "end_turn", "content": "all done"}
    harness.close()


@pytest.mark.req("ACP-PROMPT-19")
def test_blob_intake_creates_uploads_replaces_links_and_refuses_a_linked_dir(
    tmp_path: Path,
) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "outside.txt"
    ws.mkdir()
    outside.write_text("keep")
    blob = base64.b64encode(b"payload").decode()
    prompt = [{"type": "resource", "resource": {"uri": "file:///x.bin", "blob": blob}}]
    render_prompt(prompt, ws)  # uploads/ did not exist
    (written,) = (ws / "uploads").iterdir()
    assert written.read_bytes() == b"payload" and not written.is_symlink()
    written.unlink()
    written.symlink_to(outside)
    render_prompt(prompt, ws)
    assert not written.is_symlink() and written.read_bytes() == b"payload"
    assert outside.read_text() == "keep"  # the link was replaced, not followed
    (ws / "uploads").rename(tmp_path / "real")
    (ws / "uploads").symlink_to(tmp_path / "real")
    with pytest.raises(RpcError) as info:
        render_prompt(prompt, ws)
    assert info.value.to_json() == {
        "code": -32602,
        "message": "uploads path is a symlink; refusing to materialize blob",
    }


SCRIPTED = '[providers.s]\nkind = "scripted"\nscript = "model.json"\n[risk_profiles.r]\n[runtime_profiles.t]\n'


@pytest.mark.req("ACP-MEM-06", "ACP-RT-06")
def test_memory_md_stays_out_and_the_turn_records_the_rendered_prompt(tmp_path: Path) -> None:
    (tmp_path / "cfg" / "agents" / "a" / "workspace").mkdir(parents=True)
    (tmp_path / "cfg" / "agents" / "a" / "workspace" / "MEMORY.md").write_text("SECRET-MEMO\n")
    (tmp_path / "cfg" / "model.json").write_text('{"turns": [{"chunks": ["ok"]}]}')
    agent = AGENT.replace('"demo"', '"s"')
    harness = _harness(tmp_path, SCRIPTED + f"[agents.a]\n{agent}", store=False)
    sid = harness.new()
    prompt = [{"type": "text", "text": "hello there"}]
    harness.call(2, "session/prompt", {"sessionId": sid, "prompt": prompt})
    session = harness.session(sid)
    sent = json.dumps(session.execution.model.provider.requests)  # type: ignore[attr-defined]
    assert "hello there" in sent and "SECRET-MEMO" not in sent
    roles = [m["role"] for m in session.history]
    assert roles == ["user", "assistant"]  # no system message among the turn's messages
    assert str(session.history[0]["content"]).endswith(render_prompt(prompt, tmp_path))
    harness.close()
