# ruff: noqa: E501
"""Persistence seen from the ACP server: restarts, kills, concurrency, locks, idle sessions and
history trimming (acp.md §7.4, §8). Real processes where a process boundary is the point."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from freezegun import freeze_time

from tests.conftest import wait_for
from tests.helpers.acp_client import AcpProcess
from tests.helpers.json_at import at, text_at
from zeroclaw_ref.acp.server import AcpServer
from zeroclaw_ref.config.load import load_config
from zeroclaw_ref.core.clock import SystemClock
from zeroclaw_ref.core.ids import RandomIds
from zeroclaw_ref.store.sessions import SessionStore, store_path


def _new_session(agent: AcpProcess, msg_id: int = 1) -> str:
    agent.request(msg_id, "session/new", {})
    return str(agent.response(msg_id)["result"]["sessionId"])


def _prompt(
    agent: AcpProcess, sid: str, msg_id: int, text: str
) -> tuple[dict[str, object], list[dict[str, object]]]:
    agent.request(msg_id, "session/prompt", {"sessionId": sid, "prompt": text})
    updates: list[dict[str, object]] = []
    return agent.response(msg_id, updates), updates


@pytest.mark.req("ACP-STORE-05", "ACP-STORE-12", "ACP-LOAD-06")
def test_a_kill_during_a_turn_leaves_only_complete_turns(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg"
    agent = AcpProcess(cfg)
    sid = _new_session(agent)
    _prompt(agent, sid, 2, "first")
    agent.request(3, "session/prompt", {"sessionId": sid, "prompt": "slow: 500"})
    agent.recv("the first tick")
    agent.kill()  # SIGKILL mid-stream
    db = sqlite3.connect(store_path(cfg / "data"))
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert db.execute("SELECT turn_index FROM acp_turns").fetchall() == [(0,)]
    db.close()
    again = AcpProcess(cfg)
    again.request(1, "session/load", {"sessionId": sid})
    updates: list[dict[str, object]] = []
    assert again.response(1, updates)["result"] == {}
    texts = [at(u, "params", "update", "content", "text") for u in updates]
    assert texts == ["first", "Echo: first"]
    result, _ = _prompt(again, sid, 2, "recall:")
    assert at(result, "result", "content") == "Previous: first"
    assert again.close_input() == 0


@pytest.mark.req("ACP-STORE-09")
def test_two_sessions_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg"
    agent = AcpProcess(cfg)
    a, b = _new_session(agent, 1), _new_session(agent, 2)
    for i in range(20):
        agent.request(100 + i, "session/prompt", {"sessionId": a, "prompt": f"a{i}"})
        agent.request(200 + i, "session/prompt", {"sessionId": b, "prompt": f"b{i}"})
        results: dict[object, dict[str, object]] = {}
        while len(results) < 2:
            message = agent.recv("both results")
            if "result" in message:
                results[message["id"]] = message
    assert agent.close_input() == 0
    store = SessionStore.open_existing(cfg / "data")
    assert store is not None
    for sid, prefix in ((a, "a"), (b, "b")):
        stored = store.load(sid)
        assert stored is not None and [t.turn_index for t in stored.turns] == list(range(20))
        firsts = [json.loads(t.messages_json)[0]["content"] for t in stored.turns]
        assert firsts == [f"{prefix}{i}" for i in range(20)]
    store.close()


@pytest.mark.req("ACP-STORE-04", "ACP-INIT-04")
@pytest.mark.parametrize("damage", ["data-is-a-file", "corrupt-db"])
def test_an_unusable_store_leaves_the_server_in_memory_and_the_file_untouched(
    tmp_path: Path, damage: str
) -> None:
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    if damage == "data-is-a-file":
        victim = cfg / "data"
        victim.write_text("not a directory")
    else:
        victim = store_path(cfg / "data")
        victim.parent.mkdir(parents=True)
        victim.write_bytes(b"\x00garbage" * 100)
    before = victim.read_bytes()
    agent = AcpProcess(cfg)
    agent.request(1, "initialize")
    caps = agent.response(1)["result"]["agentCapabilities"]
    assert caps["loadSession"] is False and "sessionCapabilities" not in caps
    sid = _new_session(agent, 2)
    result, _ = _prompt(agent, sid, 3, "hi")
    assert at(result, "result", "stopReason") == "end_turn"
    agent.request(4, "session/load", {"sessionId": sid})
    assert agent.response(4)["error"] == {"code": -32000, "message": f"Session not found: {sid}"}
    assert agent.close_input() == 0
    assert victim.read_bytes() == before
    assert any("Failed to open ACP session store: " in line for line in agent.stderr_lines)


def _server(
    tmp_path: Path, store: SessionStore | None, env: dict[str, str] | None = None
) -> tuple[AcpServer, list[dict[str, object]]]:
    out: list[dict[str, object]] = []
    config = load_config(tmp_path / "cfg", tmp_path / "data", env or {})
    server = AcpServer(
        config, lambda line: out.append(json.loads(line)), RandomIds(), SystemClock(), store=store
    )
    return server, out


def _call(
    server: AcpServer,
    out: list[dict[str, object]],
    msg_id: int,
    method: str,
    params: dict[str, object],
) -> dict[str, object]:
    done = threading.Event()
    server.endpoint.dispatch(
        json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}).encode()
    )
    for _ in range(1000):
        found = [m for m in out if m.get("id") == msg_id]
        if found:
            return found[0]
        done.wait(0.01)
    raise AssertionError(f"no answer to {method}: {out}")


@pytest.mark.req("ACP-STORE-13")
def test_a_locked_store_fails_the_write_boundedly_and_the_turn_still_ends(tmp_path: Path) -> None:
    store = SessionStore.open(tmp_path / "data", busy_timeout_ms=50)
    server, out = _server(tmp_path, store)
    sid = text_at(_call(server, out, 1, "session/new", {}), "result", "sessionId")
    locker = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3,sys; c=sqlite3.connect(sys.argv[1], isolation_level=None); "
            "c.execute('BEGIN IMMEDIATE'); print('locked', flush=True); sys.stdin.read()",
            str(store_path(tmp_path / "data")),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert locker.stdout is not None and locker.stdout.readline().strip() == "locked"
    try:
        result = _call(server, out, 2, "session/prompt", {"sessionId": sid, "prompt": "hi"})
        assert at(result, "result", "stopReason") == "end_turn"
    finally:
        assert locker.stdin is not None
        locker.stdin.close()
        locker.wait(10)
    stored = store.load(sid)
    assert stored is not None and stored.turns == []  # rolled back whole; nothing half-written
    result = _call(server, out, 3, "session/prompt", {"sessionId": sid, "prompt": "again"})
    assert at(result, "result", "content") == "Echo: again"
    stored = store.load(sid)
    assert stored is not None and len(stored.turns) == 1
    server.shutdown(5)
    store.close()


@pytest.mark.req("ACP-REAP-01", "ACP-REAP-02", "ACP-REAP-03")
def test_idle_sessions_are_reaped_silently_and_stay_restorable(tmp_path: Path) -> None:
    store = SessionStore.open(tmp_path / "data")
    with freeze_time("2026-01-01T00:00:00Z") as frozen:
        server, out = _server(tmp_path, store, {"ZEROCLAW_acp__session_timeout_secs": "60"})
        busy = text_at(_call(server, out, 1, "session/new", {}), "result", "sessionId")
        idle = text_at(_call(server, out, 2, "session/new", {}), "result", "sessionId")
        frozen.tick(timedelta(seconds=30))
        _call(server, out, 3, "session/update", {"sessionId": busy, "type": "ping"})
        frozen.tick(timedelta(seconds=31))
        before = len(out)
        assert server.reap_idle() == [idle]
        assert len(out) == before  # silent
        missing = _call(server, out, 4, "session/prompt", {"sessionId": idle, "prompt": "x"})
        assert at(missing, "error", "code") == -32000
        wait_for(lambda: idle not in server._draining, "the reaped worker to end")
        restored = _call(server, out, 5, "session/resume", {"sessionId": idle})
        assert restored["result"] == {}
    server.shutdown(5)
    store.close()


@pytest.mark.req("ACP-RT-07", "ACP-UPD-15", "ACP-UPD-23", "ACP-LOAD-07", "ACP-LOAD-12")
def test_history_trimming_is_reported_after_a_turn_and_before_a_restore(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "config.toml").write_text(
        '[providers.demo]\nkind = "demo"\n[risk_profiles.r]\n[runtime_profiles.small]\nmax_history_messages = 2\n'
        '[agents.a]\nmodel_provider = "demo"\nrisk_profile = "r"\nruntime_profile = "small"\n'
    )
    agent = AcpProcess(cfg)
    sid = _new_session(agent)
    _, first = _prompt(agent, sid, 2, "one")
    assert all(m["method"] == "session/update" for m in first)
    _, second = _prompt(agent, sid, 3, "two")
    assert second[-1] == {
        "jsonrpc": "2.0",
        "method": "_zeroclaw/history_trimmed",
        "params": {
            "sessionId": sid,
            "droppedMessages": 2,
            "keptTurns": 1,
            "reason": "history message limit exceeded",
        },
    }
    assert agent.close_input() == 0
    again = AcpProcess(cfg)
    again.request(1, "session/load", {"sessionId": sid})
    seen: list[dict[str, object]] = []
    again.response(1, seen)
    assert seen[0]["method"] == "_zeroclaw/history_trimmed"
    assert at(seen, 0, "params", "droppedMessages") == 2
    replayed = [at(m, "params", "update", "content", "text") for m in seen[1:]]
    assert replayed == ["one", "Echo: one", "two", "Echo: two"]  # every stored turn is replayed
    assert again.close_input() == 0


@pytest.mark.req("ACP-STORE-12", "ACP-LOAD-09")
def test_a_failed_turn_is_neither_stored_nor_replayed(tmp_path: Path) -> None:
    """A turn that completes, then one the model fails: the store holds one turn, and after a
    restart `session/load` replays only the completed one (the failed prompt is lost)."""
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "config.toml").write_text(
        '[providers.script]\nkind = "scripted"\nscript = "model.json"\n[risk_profiles.r]\n'
        '[runtime_profiles.d]\n[agents.a]\nmodel_provider = "script"\nrisk_profile = "r"\n'
        'runtime_profile = "d"\n'
    )
    turns = [{"chunks": ["First done."]}, {"error": "upstream unavailable"}]
    (cfg / "model.json").write_text(json.dumps({"turns": turns}))
    agent = AcpProcess(cfg)
    sid = _new_session(agent)
    done, _ = _prompt(agent, sid, 2, "first")
    assert at(done, "result", "stopReason") == "end_turn"
    failed, _ = _prompt(agent, sid, 3, "second")
    assert at(failed, "error", "code") == -32603
    assert agent.close_input() == 0
    db = sqlite3.connect(store_path(cfg / "data"))
    stored = db.execute("SELECT turn_index, updates_json FROM acp_turns").fetchall()
    db.close()
    assert [index for index, _ in stored] == [0]
    assert "second" not in stored[0][1]
    again = AcpProcess(cfg)
    again.request(1, "session/load", {"sessionId": sid})
    updates: list[dict[str, object]] = []
    assert again.response(1, updates)["result"] == {}
    texts = [at(u, "params", "update", "content", "text") for u in updates]
    assert texts == ["first", "First done."]
    assert again.close_input() == 0
