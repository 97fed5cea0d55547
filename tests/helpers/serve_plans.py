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
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conftest import wait_for

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
ORACLE = (sys.executable, "-m", "zeroclaw_ref.conformance")
TYPED = re.compile(r"^\$\{([A-Za-z0-9_]+):[a-z]+\}$")
RUN_TIMEOUT_S = 900  # a safety net for a whole suite, never a verdict


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
    """`show --json SCENARIO`, plus the `binds` of its client requests and its `final` state."""
    value: dict[str, Any] = json.loads(_show_json(scenario))
    value["binds"] = binds(scenario)
    value["final"] = final(scenario)
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


def final(scenario: str) -> dict[str, Any]:
    """What the client has received once the agent wrote its last frame, in a step's `after`
    shape: every `session/update`, every agent request, and the answer to every client request
    the scenario answers. A client that closes its output only then lets serve end at once
    (TX-SERVE-08) instead of waiting out --idle-timeout, and never leaves an agent message
    unread (a pipe left full would make serve fail with "the client stopped reading")."""
    updates = requests = 0
    sent: dict[str, int] = {}
    results: list[int] = []
    for number, frame in _frames(scenario):
        send = frame.get("send")
        if isinstance(send, dict) and "method" in send and "id" in send:
            sent[json.dumps(send["id"])] = number
        written = frame.get("expect_unordered")
        items = written if isinstance(written, list) else [frame.get("expect")]
        for item in items:
            if not isinstance(item, dict):
                continue
            if item.get("method") == "session/update":
                updates += 1
            elif "method" in item and "id" in item:
                requests += 1
            elif "method" not in item and "id" in item:
                origin = sent.pop(json.dumps(item["id"]), None)
                if origin is not None:
                    results.append(origin)
    return {"updates": updates, "results": sorted(results), "requests": requests}


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


# ---- the `serve --suite` coordinator ---------------------------------------------------------


@dataclass
class Report:
    """The coordinator's `--json` report (run's format, TX-VERDICT-04) and its output."""

    doc: dict[str, Any]
    log: str  # stderr: the agent command to configure
    out: str  # stdout: run's progress lines, each failure's report indented below its line

    @property
    def results(self) -> list[dict[str, Any]]:
        return list(self.doc.get("results", []))

    def outcomes(self) -> Counter[str]:
        return Counter(str(r["outcome"]) for r in self.results)

    def section(self, scenario: str) -> str:
        """The coordinator's progress line for `scenario` and the report printed under it."""
        lines = self.out.splitlines()
        for index, line in enumerate(lines):
            if line.startswith("[") and line.split("] ", 1)[-1].split(" ")[1:2] == [scenario]:
                end = index + 1
                while end < len(lines) and lines[end].startswith("    "):
                    end += 1
                return "\n".join(lines[index:end])
        return f"(no progress line for {scenario})"

    def unexplained(self) -> list[str]:
        """Every result that is neither a pass nor a not-applicable with its reason."""
        bad = []
        for r in self.results:
            if r["outcome"] == "pass" or (r["outcome"] == "not-applicable" and r.get("reason")):
                continue
            where = f"frame {r.get('frame')} pointer {r.get('pointer')}"
            bad.append(f"{r['id']}: {r['outcome']} at {where}: {r.get('reason')}")
        return bad

    def not_passed(self) -> list[str]:
        """Each result other than a pass, naming the scenario, with its report section."""
        return [
            f"{r['id']}: {r['outcome']} ({r.get('reason')})\n{self.section(str(r['id']))}"
            for r in self.results
            if r["outcome"] != "pass"
        ]


@dataclass
class Suite:
    """A running `serve --suite` coordinator and the agent command its clients launch."""

    proc: subprocess.Popen[bytes]
    folder: Path
    ids: list[str]
    connect: list[str]

    @property
    def relay(self) -> list[str]:
        """The same agent command in its stdlib-only form (`python serve/relay.py PATH`,
        fixtures/CONTRACT.md "Serving"): it starts without importing the oracle."""
        script = REPO / "zeroclaw_ref" / "conformance" / "serve" / "relay.py"
        return [sys.executable, str(script), self.connect[-1]]

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    def finish(self) -> Report:
        """Wait for the coordinator to end (after the last scenario) and read its report."""
        try:
            self.proc.wait(timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        log = (self.folder / "serve.log").read_text("utf-8", "replace")
        out = (self.folder / "serve.out").read_text("utf-8", "replace")
        json_path = self.folder / "report.json"
        assert json_path.is_file(), f"serve --suite wrote no --json report:\n{log[-4000:]}"
        return Report(json.loads(json_path.read_text("utf-8")), log, out)


@contextlib.contextmanager
def suite(tmp_path: Path, ids: list[str], name: str, idle_timeout: str = "5") -> Iterator[Suite]:
    """Start `serve --suite IDS` and wait until its socket accepts connections; the clients
    launch `Suite.connect`, the agent command the coordinator prints (ZC-SERVE-09)."""
    folder = tmp_path / name
    folder.mkdir()
    sock, log, out = folder / "serve.sock", folder / "serve.log", folder / "serve.out"
    command = [*ORACLE, "serve", "--suite", *ids, "--socket", str(sock)]
    command += ["--json", str(folder / "report.json"), "--idle-timeout", idle_timeout]
    with log.open("wb") as err, out.open("wb") as progress:
        proc = subprocess.Popen(
            command, cwd=REPO, stdin=subprocess.DEVNULL, stdout=progress, stderr=err
        )
    running = Suite(proc, folder, ids, [*ORACLE, "serve", "--connect", str(sock)])
    try:
        wait_for(
            lambda: sock.exists() or proc.poll() is not None,
            "serve --suite to open its socket",
            timeout=30,
            detail=lambda: log.read_text("utf-8", "replace"),
        )
        assert proc.poll() is None, log.read_text("utf-8", "replace")
        yield running
    finally:
        if proc.poll() is None and sys.exc_info()[0] is not None:
            proc.kill()
            proc.wait()
