"""What a real client's harness needs to play servable scenarios (issue 15, TX-SERVE-*).

`serve --suite` plays scenarios in the order of `list --servable --json`; a harness prepares each
one from `show --json` (files to create, steps to take). This module asks the oracle for both,
and adds one thing the client needs to substitute placeholders: which placeholder each response
to a client request defines (`binds`, read from the scenario's expect frames: the agent's
`session/new` result defines `${sid}`, and so on).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
ORACLE = (sys.executable, "-m", "zeroclaw_ref.conformance")
TYPED = re.compile(r"^\$\{([A-Za-z0-9_]+):[a-z]+\}$")


def _oracle(*args: str) -> str:
    done = subprocess.run(
        [*ORACLE, *args], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} exited {done.returncode}: {done.stderr.strip()}")
    return done.stdout


def servable(selection: list[str]) -> list[str]:
    """The ids `serve --suite SELECTION` plays, in its order."""
    value = json.loads(_oracle("list", "--servable", *selection, "--json"))
    if isinstance(value, dict):  # tolerate {"scenarios": [...]} as well as a bare list
        value = value.get("scenarios", [])
    return [item if isinstance(item, str) else str(item["scenario"]) for item in value]


def _show_json(scenario: str) -> str:
    """`show --json SCENARIO`'s output: the command's own code, run in-process (one interpreter
    start per scenario would cost more than the clients), or the command itself."""
    try:
        from zeroclaw_ref.conformance.tools.show import show_scenario
    except ImportError:
        return _oracle("show", "--json", scenario)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = show_scenario(FIXTURES, scenario, as_json=True)
    if status != 0:
        raise RuntimeError(f"show --json {scenario} exited {status}")
    return out.getvalue()


def show(scenario: str) -> dict[str, Any]:
    """`show --json SCENARIO`, plus the `binds` of its client requests."""
    value: dict[str, Any] = json.loads(_show_json(scenario))
    value["binds"] = binds(scenario)
    return value


def show_many(scenarios: list[str]) -> list[dict[str, Any]]:
    return [show(s) for s in scenarios]


def _frames(scenario: str) -> list[tuple[int, dict[str, Any]]]:
    path = FIXTURES / f"{scenario}.jsonl"
    frames: list[tuple[int, dict[str, Any]]] = []
    for number, line in enumerate(path.read_text("utf-8").splitlines(), 1):
        try:
            value = json.loads(line)
        except ValueError:  # a raw frame (bytes that are not JSON) defines nothing
            continue
        if isinstance(value, dict):
            frames.append((number, value))
    return frames


def _typed(value: Any, pointer: str, out: dict[str, str]) -> None:
    if isinstance(value, str):
        match = TYPED.match(value)
        if match and match.group(1) != "_":
            out.setdefault(pointer, match.group(1))
    elif isinstance(value, dict):
        for key, item in value.items():
            escaped = str(key).replace("~", "~0").replace("/", "~1")
            _typed(item, f"{pointer}/{escaped}", out)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _typed(item, f"{pointer}/{index}", out)


def binds(scenario: str) -> dict[str, dict[str, str]]:
    """{send frame: {JSON pointer in the response: placeholder name it defines}}."""
    sent: dict[str, int] = {}  # JSON of the client's request id -> its frame
    out: dict[str, dict[str, str]] = {}
    for number, frame in _frames(scenario):
        send, expect = frame.get("send"), frame.get("expect")
        if isinstance(send, dict) and "method" in send and "id" in send:
            sent[json.dumps(send["id"])] = number
        elif isinstance(expect, dict) and "method" not in expect and "id" in expect:
            origin = sent.get(json.dumps(expect["id"]))
            if origin is None:
                continue
            found: dict[str, str] = {}
            for part in ("result", "error"):
                if part in expect:
                    _typed(expect[part], f"/{part}", found)
            if found:
                out.setdefault(str(origin), {}).update(found)
    return out
