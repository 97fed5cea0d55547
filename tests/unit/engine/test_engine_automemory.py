"""Automatic recall and save of user messages outside ACP (policy.md POL-MEM-02/03/09)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.helpers.approvers import OkApprover
from zeroclaw_ref.config.load import load_config
from zeroclaw_ref.config.model import ConfigSnapshot
from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.core.ids import SequentialIds
from zeroclaw_ref.core.jsontypes import JSONObject
from zeroclaw_ref.engine.events import Completed
from zeroclaw_ref.engine.execution import ResolvedAgentExecution
from zeroclaw_ref.engine.resolve import PathRequest, resolve
from zeroclaw_ref.engine.turn import TurnEngine
from zeroclaw_ref.store.memory import MemoryStore, memory_path

CONFIG = """
[providers.s]
kind = "scripted"
script = "model.json"
[risk_profiles.p]
[runtime_profiles.r]
{runtime}
[agents.a]
model_provider = "s"
risk_profile = "p"
runtime_profile = "r"
"""


def _config(root: Path, runtime: str = "", turns: int = 3) -> ConfigSnapshot:
    cfg = root / "cfg"
    cfg.mkdir(parents=True)
    script = [{"chunks": [f"answer {i}"]} for i in range(1, turns + 1)]
    (cfg / "model.json").write_text(json.dumps({"turns": script}))
    (cfg / "config.toml").write_text(CONFIG.format(runtime=runtime))
    return load_config(cfg, root / "data", {})


def _resolve(config: ConfigSnapshot, path: str, root: Path) -> ResolvedAgentExecution:
    if path == "acp":
        ws = root / "session"
        ws.mkdir(exist_ok=True)
        return resolve(config, "a", PathRequest("acp", approver=OkApprover(), session_workspace=ws))
    if path == "cron":
        return resolve(config, "a", PathRequest("cron"))
    return resolve(config, "a", PathRequest(path))


def _turn(execution: ResolvedAgentExecution, history: list[JSONObject], message: str) -> Completed:
    outcome = TurnEngine(SequentialIds()).run_turn(
        execution, history, message, lambda e: None, CancelToken()
    )
    assert isinstance(outcome, Completed), outcome
    history.extend(outcome.messages)
    return outcome


def _rows(path: Path) -> list[tuple[str, ...]]:
    with sqlite3.connect(path) as db:
        rows = db.execute(
            "SELECT key, content, category, session_id FROM memories ORDER BY key"
        ).fetchall()
    return [tuple(r) for r in rows]


def _sent_user_messages(execution: ResolvedAgentExecution) -> list[str]:
    requests = execution.model.provider.requests  # type: ignore[attr-defined]
    return [r["messages"][-1]["content"] for r in requests]


@pytest.mark.req("POL-MEM-03", "POL-MEM-09", "POL-MEM-01")
@pytest.mark.parametrize("path", ["cli-run", "cron", "gateway-chat"])
def test_off_acp_turns_are_saved_and_recalled(tmp_path: Path, path: str) -> None:
    config = _config(tmp_path)
    execution = _resolve(config, path, tmp_path)
    store = memory_path(tmp_path / "data", "a")
    run_id = execution.lineage.run_id
    history: list[JSONObject] = []
    _turn(execution, history, "my favourite fruit is apples")
    assert _rows(store) == [
        (f"conversation:{run_id}:1", "my favourite fruit is apples", "conversation", run_id)
    ]
    second = _turn(execution, history, "which fruit do I like")
    sent = _sent_user_messages(execution)
    assert sent[0] == "my favourite fruit is apples"  # nothing to recall on the first turn
    assert sent[1] == (
        "[Memory context]\n"
        f"- conversation:{run_id}:1: my favourite fruit is apples\n"
        "\n"
        "which fruit do I like"
    )
    # the stored conversation keeps the bare message
    assert second.messages[0] == {"role": "user", "content": "which fruit do I like"}
    assert history[2] == {"role": "user", "content": "which fruit do I like"}
    assert [r[0] for r in _rows(store)] == [
        f"conversation:{run_id}:1",
        f"conversation:{run_id}:2",
    ]


@pytest.mark.req("POL-MEM-03")
def test_recall_is_limited_to_three_entries(tmp_path: Path) -> None:
    config = _config(tmp_path, turns=1)
    store = MemoryStore.open(memory_path(tmp_path / "data", "a"))
    try:
        for i in range(5):
            store.store(f"k{i}", f"kiwi note {i}", "core", None, f"2024-01-01T00:00:0{i}Z")
    finally:
        store.close()
    execution = _resolve(config, "cli-run", tmp_path)
    _turn(execution, [], "kiwi")
    sent = _sent_user_messages(execution)[0]
    assert sent.startswith("[Memory context]\n") and sent.endswith("\n\nkiwi")
    assert sent.count("\n- ") == 3


@pytest.mark.req("POL-MEM-02", "POL-MEM-03", "ACP-MEM-03")
def test_on_acp_nothing_is_saved_and_the_store_is_never_created(tmp_path: Path) -> None:
    config = _config(tmp_path)
    execution = _resolve(config, "acp", tmp_path)
    history: list[JSONObject] = []
    _turn(execution, history, "my favourite fruit is apples")
    _turn(execution, history, "which fruit do I like")
    assert _sent_user_messages(execution) == [
        "my favourite fruit is apples",
        "which fruit do I like",
    ]
    assert not memory_path(tmp_path / "data", "a").exists()
    assert not (tmp_path / "data" / "memory").exists()


@pytest.mark.req("POL-MEM-02", "ACP-MEM-02")
def test_on_acp_an_existing_store_is_not_recalled(tmp_path: Path) -> None:
    config = _config(tmp_path)
    path = memory_path(tmp_path / "data", "a")
    store = MemoryStore.open(path)
    try:
        store.store("fruit", "apples", "core", None, "2024-01-01T00:00:00Z")
    finally:
        store.close()
    execution = _resolve(config, "acp", tmp_path)
    _turn(execution, [], "fruit")
    assert _sent_user_messages(execution) == ["fruit"]
    assert _rows(path) == [("fruit", "apples", "core", None)]


@pytest.mark.req("POL-MEM-03")
def test_auto_memory_false_disables_save_and_recall(tmp_path: Path) -> None:
    config = _config(tmp_path, runtime="auto_memory = false")
    execution = _resolve(config, "cli-run", tmp_path)
    history: list[JSONObject] = []
    _turn(execution, history, "fruit apples")
    assert not memory_path(tmp_path / "data", "a").exists()
    # an entry written through the store itself is not recalled either
    store = MemoryStore.open(memory_path(tmp_path / "data", "a"))
    try:
        store.store("fruit", "apples", "core", None, "2024-01-01T00:00:00Z")
    finally:
        store.close()
    _turn(execution, history, "fruit")
    assert _sent_user_messages(execution) == ["fruit apples", "fruit"]
    assert _rows(memory_path(tmp_path / "data", "a")) == [("fruit", "apples", "core", None)]


@pytest.mark.req("POL-MEM-03")
def test_a_failed_turn_is_not_saved(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "model.json").write_text(json.dumps({"turns": [{"error": "boom"}]}))
    (cfg / "config.toml").write_text(CONFIG.format(runtime=""))
    execution = _resolve(load_config(cfg, tmp_path / "data", {}), "cli-run", tmp_path)
    outcome = TurnEngine(SequentialIds()).run_turn(
        execution, [], "hello", lambda e: None, CancelToken()
    )
    assert not isinstance(outcome, Completed)
    path = memory_path(tmp_path / "data", "a")
    assert not path.exists() or _rows(path) == []
