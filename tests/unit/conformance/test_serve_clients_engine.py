"""serve judges real ACP clients (issue 15): the engine rules, `show --json`, `serve --suite`.

The scenarios are written into a scratch corpus; the "client" is this test, speaking JSON
lines to `serve` (a child process, or the suite coordinator through `serve --connect`).
Every wait is a bounded queue read or process wait (a safety net, never a timed assertion).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from zeroclaw_ref.conformance.jsonlex import JSON
from zeroclaw_ref.conformance.runner import RunOptions, run_scenario
from zeroclaw_ref.conformance.serve_values import servable_problems
from zeroclaw_ref.conformance.transcript import TranscriptError, load

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "fixtures"

INIT: JSON = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": 1, "clientCapabilities": {}},
}
INIT_OK: JSON = {
    "jsonrpc": "2.0",
    "id": 0,
    "result": {"protocolVersion": 1, "agentCapabilities": {}},
}
NEW: JSON = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "session/new",
    "params": {"cwd": "${WORKSPACE}", "mcpServers": []},
}
NEW_OK: JSON = {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "${sid:string}"}}


def prompt(rid: int, text: str = "Hi") -> JSON:
    params: JSON = {"sessionId": "${sid}", "prompt": [{"type": "text", "text": text}]}
    return {"jsonrpc": "2.0", "id": rid, "method": "session/prompt", "params": params}


def update(text: str) -> JSON:
    content: JSON = {"type": "text", "text": text}
    body: JSON = {"sessionUpdate": "agent_message_chunk", "content": content}
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": "${sid}", "update": body},
    }


def result(rid: int, stop: str = "end_turn") -> JSON:
    return {"jsonrpc": "2.0", "id": rid, "result": {"stopReason": stop}}


def write(
    root: Path,
    name: str,
    frames: list[dict[str, JSON]],
    profile: str = "client",
    **header: JSON,
) -> Path:
    """acp/engine/<name>.jsonl in the scratch corpus ``root``."""
    head: dict[str, JSON] = {
        "format": 2,
        "scenario": f"acp/engine/{name}",
        "description": "A scratch scenario of the serve engine tests.",
        "requirements": ["ZC-SERVE-01"],
        "level": "required",
        "profile": profile,
        **header,
    }
    (root / "VERSION").write_text("2.9\n", encoding="utf-8")
    path = root / "acp" / "engine" / f"{name}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(obj, separators=(",", ":")) for obj in [head, *frames]]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def oracle(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "zeroclaw_ref.conformance", *args]
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=timeout)


CANCEL_FRAMES: list[dict[str, JSON]] = [
    {"send": INIT},
    {"expect": INIT_OK},
    {"send": NEW},
    {"expect": NEW_OK},
    {"send": prompt(2)},
    {"expect": update("Working")},
    {"send": {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "${sid}"}}},
    {"expect": result(2, "cancelled")},
    {"send": prompt(3, "Again")},
    {"expect": update("Done")},
    {"expect": result(3)},
]


# -- show --json -------------------------------------------------------------------------


@pytest.mark.req("ZC-SERVE-07")
def test_show_json_gives_the_steps_of_a_cancel_scenario(tmp_path: Path) -> None:
    write(tmp_path, "cancel", CANCEL_FRAMES)
    shown = oracle("show", "--json", "--fixtures", str(tmp_path), "acp/engine/cancel")
    assert shown.returncode == 0, shown.stderr
    doc = json.loads(shown.stdout)
    assert (doc["scenario"], doc["profile"], doc["servable"]) == (
        "acp/engine/cancel",
        "client",
        True,
    )
    assert (doc["client_needs"], doc["client_files"]) == ([], {})
    steps = [(s["frame"], s["kind"], s["method"], s["after"]) for s in doc["steps"]]
    assert steps == [
        (2, "request", "initialize", {"updates": 0, "results": [], "requests": 0}),
        (4, "request", "session/new", {"updates": 0, "results": [2], "requests": 0}),
        (6, "request", "session/prompt", {"updates": 0, "results": [2, 4], "requests": 0}),
        # the cancel waits for the first update, not for the prompt's result
        (8, "notification", "session/cancel", {"updates": 1, "results": [2, 4], "requests": 0}),
        (10, "request", "session/prompt", {"updates": 1, "results": [2, 4, 6], "requests": 0}),
    ]
    assert doc["steps"][2]["params"] == {
        "sessionId": "${sid}",
        "prompt": [{"type": "text", "text": "Hi"}],
    }
    text = oracle("show", "--fixtures", str(tmp_path), "acp/engine/cancel").stdout
    assert "// what the client must do" in text
    assert "4. (line 8) after the answers to line(s) 2, 4 and 1 session/update" in text


@pytest.mark.req("ZC-SERVE-07", "ZC-SERVE-03", "ZC-SERVE-04")
def test_show_json_marks_answers_the_client_computes_itself(tmp_path: Path) -> None:
    read: JSON = {
        "jsonrpc": "2.0",
        "id": "r1",
        "method": "fs/read_text_file",
        "params": {"sessionId": "${sid}", "path": "${WORKSPACE}/notes.txt", "line": 2, "limit": 1},
    }
    frames: list[dict[str, JSON]] = [
        {"send": INIT},
        {"expect": INIT_OK},
        {"send": NEW},
        {"expect": NEW_OK},
        {"send": prompt(2)},
        {"expect": read},
        {"send": {"jsonrpc": "2.0", "id": "r1", "result": {"content": "two\n"}}},
        {"expect": result(2)},
    ]
    files: JSON = {"notes.txt": "one\ntwo\nthree\n"}
    write(tmp_path, "read", frames, client_needs=["fs.readTextFile"], client_files=files)
    doc = json.loads(
        oracle("show", "--json", "--fixtures", str(tmp_path), "acp/engine/read").stdout
    )
    assert doc["client_needs"] == ["fs.readTextFile"]
    assert doc["client_files"] == files
    answer = doc["steps"][-1]
    assert answer == {
        "frame": 8,
        "kind": "response",
        "method": "fs/read_text_file",
        "id": "r1",
        "result": {"content": "two\n"},
        "auto": True,
        "after": {"updates": 0, "results": [2, 4], "requests": 1},
    }


# -- what is servable ------------------------------------------------------------------------


@pytest.mark.req("ZC-SERVE-01", "ZC-SERVE-05", "ZC-SERVE-03")
@pytest.mark.parametrize(
    ("frames", "needs", "rule"),
    [
        ([{"send": NEW}, {"expect": NEW_OK}], [], "ZC-SERVE-01"),
        (
            [
                {"send": INIT},
                {"expect": INIT_OK},
                {"send": {"jsonrpc": "2.0", "id": 5, "method": "_zeroclaw/barrier"}},
                {"expect": {"jsonrpc": "2.0", "id": 5, "result": {}}},
            ],
            [],
            "ZC-SERVE-05",
        ),
        (
            [
                {"send": INIT},
                {"expect": INIT_OK},
                {"send": NEW},
                {"expect": NEW_OK},
                {
                    "expect": {
                        "jsonrpc": "2.0",
                        "id": "w",
                        "method": "fs/write_text_file",
                        "params": {"sessionId": "${sid}", "path": "/x", "content": "x"},
                    }
                },
                {"send": {"jsonrpc": "2.0", "id": "w", "result": None}},
            ],
            [],
            "ZC-SERVE-03",
        ),
    ],
    ids=["no-initialize", "oracle-hook", "write-without-client-need"],
)
def test_what_a_real_client_cannot_replay_is_not_servable(
    frames: list[dict[str, JSON]], needs: list[str], rule: str, tmp_path: Path
) -> None:
    path = write(tmp_path, "refused", frames, profile="zeroclaw", client_needs=needs)
    problems = servable_problems(load(path, tmp_path))
    assert rule in {p.rule for p in problems}, problems
    listed = oracle("list", "--servable", "--json", "--fixtures", str(tmp_path))
    assert json.loads(listed.stdout) == []
    served = oracle("serve", "--fixtures", str(tmp_path), "acp/engine/refused")
    assert served.returncode == 2 and rule in served.stderr, served.stderr


@pytest.mark.req("ZC-SERVE-01", "ZC-SERVE-03", "ZC-SERVE-04")
def test_a_client_scenario_header_is_checked(tmp_path: Path) -> None:
    frames: list[dict[str, JSON]] = [{"send": NEW}, {"expect": NEW_OK}]
    path = write(tmp_path, "bad", frames, client_needs=["fs.chmod"], client_files={"../x": "y"})
    with pytest.raises(TranscriptError) as caught:
        load(path, tmp_path)
    rules = {p.rule for p in caught.value.problems}
    assert rules == {"ZC-SERVE-01", "ZC-SERVE-03", "ZC-SERVE-04"}, caught.value.problems


@pytest.mark.req("ZC-SERVE-02")
def test_run_reports_a_client_scenario_not_applicable_without_starting_an_agent(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, "cancel", CANCEL_FRAMES)
    got = run_scenario(path, tmp_path, RunOptions(agent="/nonexistent/agent"))
    assert (got.status, got.reason) == ("not-applicable", "judges clients; play it with serve")
    listed = oracle("list", "--servable", "--json", "--fixtures", str(tmp_path), "acp/engine")
    assert json.loads(listed.stdout) == ["acp/engine/cancel"]
