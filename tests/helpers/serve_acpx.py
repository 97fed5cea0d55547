"""acpx (0.19.1) as a client of `serve`: which scenarios its command line can play, and playing one.

acpx is a headless ACP client; a test can only use what its command line offers. What it does
on the wire (seen with `--format json`, which prints the trace, and serve's reports):

- `acpx --agent CMD exec TEXT` spawns the agent once and sends `initialize` (protocolVersion 1,
  clientCapabilities fs.readTextFile, fs.writeTextFile and terminal all true, clientInfo acpx),
  `session/new` {cwd: --cwd, mcpServers: []} and one `session/prompt` with one text block, then
  closes the agent's input when the result arrives. Nothing else: no session/close, no cancel.
- `acpx --agent CMD sessions new --name N` spawns the agent for `initialize` and `session/new`
  only, then closes it. Later `prompt -s N` commands start the agent AGAIN (a second connection,
  which re-initializes), so a multi-prompt or cancel conversation cannot be one `serve`
  connection: only the exec and sessions-new shapes are playable.
- Permission requests are answered by policy, never scripted: `--approve-all` selects the first
  option of kind allow_once, else allow_always, else the first option; `--deny-all` selects the
  first reject_once, else reject_always, else answers `cancelled`; no options: `cancelled`.
- fs/* and terminal/* are served from the cwd's files and real processes when approved:
  `--approve-all` allows them, `--deny-all` refuses even reads. Paths must be absolute and
  inside --cwd.

So a scenario is playable when its steps are exactly those requests (with params acpx would
send), every response step is a permission answer equal to one mode's pick or an "auto"
fs/terminal answer (approve-all), and nothing is due after the prompt result.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
ACPX_CAPABILITIES = {"fs.readTextFile", "fs.writeTextFile", "terminal"}
MODES = ("approve-all", "deny-all")


@dataclass(frozen=True)
class Play:
    """How acpx plays a scenario: `shape` is "exec" or "sessions-new"; `text` is the prompt."""

    shape: str
    mode: str
    text: str = ""


def _agent_requests(scenario: str) -> dict[str, dict[str, Any]]:
    """Agent-to-client requests in the scenario file, by JSON of their id."""
    found: dict[str, dict[str, Any]] = {}
    for line in (FIXTURES / f"{scenario}.jsonl").read_text("utf-8").splitlines():
        if not line.strip():
            continue
        expect = json.loads(line).get("expect")
        if isinstance(expect, dict) and "method" in expect and "id" in expect:
            found[json.dumps(expect["id"])] = expect
    return found


def _send_count(scenario: str) -> int:
    lines = (FIXTURES / f"{scenario}.jsonl").read_text("utf-8").splitlines()
    return sum(1 for line in lines if line.lstrip().startswith('{"send"'))


def _pick(options: list[dict[str, Any]], mode: str) -> dict[str, Any]:
    """The result acpx sends for a permission request under `mode` (see the module text)."""
    kinds = (
        ("allow_once", "allow_always")
        if mode == "approve-all"
        else ("reject_once", "reject_always")
    )
    for kind in kinds:
        for option in options:
            if option.get("kind") == kind:
                return {"outcome": {"outcome": "selected", "optionId": option.get("optionId")}}
    if mode == "approve-all" and options:
        return {"outcome": {"outcome": "selected", "optionId": options[0].get("optionId")}}
    return {"outcome": {"outcome": "cancelled"}}


def _prompt_text(params: Any) -> str | None:
    if not isinstance(params, dict) or set(params) - {"sessionId", "prompt"}:
        return None
    prompt = params.get("prompt")
    if isinstance(prompt, str):
        return prompt
    if (
        isinstance(prompt, list)
        and len(prompt) == 1
        and isinstance(prompt[0], dict)
        and prompt[0].get("type") == "text"
        and not set(prompt[0]) - {"type", "text"}
        and isinstance(prompt[0].get("text"), str)
    ):
        return str(prompt[0]["text"])
    return None


def playable(show: dict[str, Any]) -> tuple[Play | None, str]:
    """(how acpx plays the scenario, "") or (None, why its command line cannot)."""
    needs = set(show.get("client_needs") or []) - ACPX_CAPABILITIES
    if needs:
        return None, f"needs {sorted(needs)}, which acpx does not advertise"
    steps: list[dict[str, Any]] = show.get("steps") or []
    sends = _send_count(str(show["scenario"]))
    if sends != len(steps):
        return None, f"{sends - len(steps)} send frame(s) are no step (raw or non-object lines)"
    requests = [s for s in steps if s.get("kind") != "response"]
    shape = [(s.get("kind"), s.get("method")) for s in requests]
    if shape == [("request", "initialize"), ("request", "session/new")]:
        kind = "sessions-new"
    elif shape == [
        ("request", "initialize"),
        ("request", "session/new"),
        ("request", "session/prompt"),
    ]:
        kind = "exec"
    else:
        return None, "client steps " + ", ".join(
            f"{k} {m}" for k, m in shape
        ) + " are not one acpx exec"
    new = requests[1].get("params")
    if (
        not isinstance(new, dict)
        or set(new) - {"cwd", "mcpServers"}
        or new.get("cwd") != "${WORKSPACE}"
        or new.get("mcpServers") not in (None, [])
    ):
        return None, f"session/new params {json.dumps(new)} are not acpx's {{cwd, mcpServers: []}}"
    text = ""
    if kind == "exec":
        prompt = requests[2]
        found = _prompt_text(prompt.get("params"))
        if found is None:
            return None, "the prompt is not one text block (acpx sends exactly one)"
        text = found
        sid = (
            (show.get("binds") or {})
            .get(str(requests[1].get("frame")), {})
            .get("/result/sessionId")
        )
        if sid is None or (prompt.get("params") or {}).get("sessionId") != "${" + sid + "}":
            return None, "the prompt names another session than session/new's; acpx uses its own"
        after = prompt.get("after") or {}
        if after.get("updates") or after.get("requests"):
            return None, "the prompt waits for agent messages; acpx prompts right after session/new"
        prompt_frame = prompt.get("frame")
    responses = [s for s in steps if s.get("kind") == "response"]
    if responses and kind != "exec":
        return None, "agent requests before any prompt"
    agent_requests = _agent_requests(str(show["scenario"])) if responses else {}
    modes = set(MODES)
    for step in responses:
        if kind == "exec" and prompt_frame in ((step.get("after") or {}).get("results") or []):
            return (
                None,
                f"frame {step.get('frame')} is due after the prompt result; acpx has exited",
            )
        method = step.get("method")
        if step.get("auto"):
            if not (str(method).startswith("fs/") or str(method).startswith("terminal/")):
                return None, f"frame {step.get('frame')}: acpx computes no {method} answer"
            modes &= {"approve-all"}
            continue
        if method != "session/request_permission" or "result" not in step:
            return None, f"frame {step.get('frame')}: acpx cannot send this {method} answer"
        request = agent_requests.get(json.dumps(step.get("id")))
        options = ((request or {}).get("params") or {}).get("options")
        if not isinstance(options, list):
            return None, f"frame {step.get('frame')}: its permission request has no option list"
        modes = {m for m in modes if _pick(options, m) == step["result"]}
    if not modes:
        return None, "no single --approve-all/--deny-all policy gives every scripted answer"
    mode = "approve-all" if "approve-all" in modes else "deny-all"
    return Play(kind, mode, text), ""


@dataclass(frozen=True)
class Ran:
    status: int
    stdout: str
    stderr: str


def run(
    node: str, acpx: str, agent: list[str], show: dict[str, Any], play: Play, home: Path
) -> Ran:
    """Play one scenario with acpx: files in a fresh cwd, then `exec` or `sessions new`."""
    with tempfile.TemporaryDirectory(prefix="zc-acpx-") as raw:
        cwd = Path(raw)
        for rel, text in (show.get("client_files") or {}).items():
            target = cwd / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, "utf-8")
        head = [node, acpx, "--format", "json", f"--{play.mode}", "--cwd", str(cwd)]
        head += ["--agent", shlex.join(agent)]
        if play.shape == "exec":
            command = [*head, "exec", play.text]
        else:
            command = [*head, "sessions", "new", "--name", "serve"]
        env = {k: v for k, v in os.environ.items() if not k.startswith("ZEROCLAW")}
        env["HOME"] = str(home)
        done = subprocess.run(
            command, cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False
        )
    return Ran(done.returncode, done.stdout, done.stderr)
