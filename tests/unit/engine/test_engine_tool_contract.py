"""The tool contract over the real catalogue, the effective risk profile, the read-only rule for
MCP-named tools and the assembly log line (policy.md §3, §4, §6)."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.helpers.approvers import OkApprover
from zeroclaw_ref.config.load import load_config
from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.core.ids import SequentialIds
from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.engine import resolve as resolve_module
from zeroclaw_ref.engine.events import ToolFinished, TurnEvent
from zeroclaw_ref.engine.execution import ResolvedAgentExecution
from zeroclaw_ref.engine.resolve import PathRequest, resolve
from zeroclaw_ref.engine.turn import TurnEngine
from zeroclaw_ref.providers import scripted
from zeroclaw_ref.providers.base import ModelRequest, record_of
from zeroclaw_ref.tools.base import ToolContext, ToolResult

CONFIG = """
[autonomy]
{autonomy}
[providers.s]
kind = "scripted"
script = "model.json"
[risk_profiles.p]
{profile}
[runtime_profiles.r]
[agents.a]
model_provider = "s"
risk_profile = "p"
runtime_profile = "r"
delegates = ["b"]
[agents.b]
model_provider = "s"
risk_profile = "p"
runtime_profile = "r"
"""


def _cfg(
    root: Path, *, autonomy: str = "", profile: str = "", turns: list[JSONObject] | None = None
) -> Path:
    cfg = root / "cfg"
    cfg.mkdir(parents=True, exist_ok=True)
    (cfg / "model.json").write_text(json.dumps({"turns": turns or [{"chunks": ["ok"]}]}))
    (cfg / "config.toml").write_text(CONFIG.format(autonomy=autonomy, profile=profile))
    return cfg


def _resolve(cfg: Path, path: str = "acp") -> ResolvedAgentExecution:
    config = load_config(cfg, cfg.parent / "data", {})
    if path == "acp":
        ws = cfg.parent / "session"
        ws.mkdir(exist_ok=True)
        request = PathRequest("acp", approver=OkApprover(), session_workspace=ws.resolve())
    else:
        request = PathRequest(path)
    return resolve(config, "a", request)


# --- POL-TOOL-05: specs --------------------------------------------------------------------


@pytest.mark.req("POL-TOOL-05")
@pytest.mark.parametrize("path", ["acp", "cli-run", "gateway-chat"])
def test_every_tool_exposes_a_name_description_and_object_schema(tmp_path: Path, path: str) -> None:
    execution = _resolve(_cfg(tmp_path, profile='level = "full"'), path)
    registry = execution.io.tools
    assert len(registry) > 5
    for tool, spec in zip(registry, registry.specs, strict=True):
        assert spec.name == tool.name and isinstance(spec.description, str) and spec.description
        assert isinstance(spec.parameters, dict) and spec.parameters.get("type") == "object"
        properties = spec.parameters.get("properties", {})
        assert isinstance(properties, dict)
        required = spec.parameters.get("required", [])
        assert isinstance(required, list) and all(r in properties for r in required)
    assert [s.name for s in registry.specs] == list(registry.names)


@pytest.mark.req("POL-TOOL-05")
def test_the_model_is_offered_exactly_the_registry_specs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[ModelRequest] = []

    def capture(request: ModelRequest) -> JSONObject:
        seen.append(request)
        return record_of(request)

    monkeypatch.setattr(scripted, "record_of", capture)
    cfg = _cfg(
        tmp_path,
        profile='level = "full"\nexcluded_tools = ["shell"]',
        turns=[
            {"tool_calls": [{"id": "c1", "name": "todo_write", "arguments": {"todos": []}}]},
            {"chunks": ["done"]},
        ],
    )
    execution = _resolve(cfg)
    TurnEngine(SequentialIds()).run_turn(execution, [], "go", lambda e: None, CancelToken())
    assert len(seen) == 2
    for request in seen:
        assert tuple(request.tools) == execution.io.tools.specs  # same specs, same order
    assert "shell" not in [t.name for t in seen[0].tools]


# --- POL-TOOL-02: results, never exceptions ----------------------------------------------------


def _context() -> ToolContext:
    return ToolContext(cancel=CancelToken(), approved=True)


@pytest.mark.req("POL-TOOL-02")
@pytest.mark.parametrize(
    "arguments", [{}, "not an object", None, [1, 2], {"path": 5, "command": []}]
)
def test_bad_arguments_are_failed_results_for_every_tool(tmp_path: Path, arguments: JSON) -> None:
    execution = _resolve(_cfg(tmp_path, profile='level = "full"'), "cli-run")
    for tool in execution.io.tools:
        required = tool.parameters.get("required") or []
        result = tool.execute(arguments, _context())
        assert isinstance(result, ToolResult), tool.name
        assert isinstance(result.success, bool) and isinstance(result.output, str)
        assert result.error is None or isinstance(result.error, str)
        assert result.data is None or isinstance(result.data, dict)
        if required:
            assert result.success is False and result.error, (tool.name, arguments)


@pytest.mark.req("POL-TOOL-02")
def test_policy_refusals_are_failed_results(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    execution = _resolve(_cfg(tmp_path, profile='forbidden_paths = ["/etc"]'), "cli-run")
    cases: list[tuple[str, JSONObject]] = [
        ("file_read", {"path": str(outside)}),
        ("file_read", {"path": "/etc/hostname"}),
        ("file_write", {"path": str(outside), "content": "x"}),
        ("file_read", {"path": "../outside.txt"}),
    ]
    for name, arguments in cases:
        tool = execution.io.tools.get(name)
        assert tool is not None, name
        result = tool.execute(arguments, _context())
        assert isinstance(result, ToolResult) and result.success is False and result.error
    assert outside.read_text() == "secret"


# --- POL-AUTO-03: the effective risk profile ------------------------------------------------


@pytest.mark.req("POL-AUTO-03")
def test_the_effective_profile_overlays_the_agent_profile_on_autonomy(tmp_path: Path) -> None:
    cfg = _cfg(
        tmp_path,
        autonomy=(
            'level = "full"\nallowed_commands = ["ls", "cat"]\nforbidden_paths = ["/srv"]\n'
            'auto_approve = ["file_read"]\nexcluded_tools = ["shell"]'
        ),
        profile='level = "supervised"\nallowed_commands = ["git"]',
    )
    execution = _resolve(cfg)
    snapshot = execution.snapshot()
    # the profile's keys win, whole lists replaced ...
    assert execution.security.level == "supervised" and snapshot["approval.level"] == "supervised"
    assert snapshot["security.allowed_commands"] == ["git"]
    # ... and every key the profile leaves out comes from [autonomy]
    assert snapshot["security.forbidden_paths"] == ["/srv"]
    assert "file_read" in snapshot["approval.auto_approve"]  # type: ignore[operator]
    assert snapshot["access.excluded_tools"] == ["shell"]
    assert "shell" not in execution.io.tools.names


@pytest.mark.req("POL-AUTO-03")
def test_an_empty_profile_is_exactly_autonomy(tmp_path: Path) -> None:
    autonomy = 'level = "read_only"\nallowed_commands = ["ls"]\nworkspace_only = false'
    with_profile = _resolve(_cfg(tmp_path / "one", autonomy=autonomy)).snapshot()
    assert with_profile["approval.level"] == "read_only"
    assert with_profile["security.allowed_commands"] == ["ls"]
    assert with_profile["security.workspace_only"] is False


# --- POL-AUTO-07: MCP-named tools at read_only -----------------------------------------------


@dataclass
class McpLikeTool:
    """A read-classified tool with an MCP-style `<server>__<tool>` name."""

    name: str
    calls: list[JSON] = field(default_factory=list)
    description: str = "an MCP tool"
    act: bool = False
    parameters: JSONObject = field(default_factory=lambda: {"type": "object"})

    def execute(self, arguments: JSON, context: ToolContext) -> ToolResult:
        self.calls.append(arguments)
        return ToolResult.ok("ran")


@pytest.mark.req("POL-AUTO-07")
@pytest.mark.parametrize(
    ("auto_approve", "runs"),
    [
        ("[]", False),
        ('["*"]', False),
        ('["fs__read_file"]', True),
        ('["fs__read"]', False),
        ('["FS__READ_FILE"]', False),
    ],
)
def test_read_only_refuses_mcp_tools_unless_exactly_auto_approved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, auto_approve: str, runs: bool
) -> None:
    tool = McpLikeTool("fs__read_file")
    monkeypatch.setattr(resolve_module, "build_universe", lambda s, d: (tool,))
    cfg = _cfg(
        tmp_path,
        profile=f'level = "read_only"\nauto_approve = {auto_approve}',
        turns=[
            {"tool_calls": [{"id": "c1", "name": "fs__read_file", "arguments": {}}]},
            {"chunks": ["k"]},
        ],
    )
    execution = _resolve(cfg)
    assert "fs__read_file" in execution.io.tools.names
    events: list[TurnEvent] = []
    TurnEngine(SequentialIds()).run_turn(execution, [], "go", events.append, CancelToken())
    finished = [e for e in events if isinstance(e, ToolFinished)]
    if runs:
        assert tool.calls == [{}] and finished[0].output == "ran"
    else:
        assert tool.calls == []
        assert (
            finished[0].output
            == "Error: Security policy: read-only mode, cannot perform 'fs__read_file'"
        )


# --- POL-ASSEMBLE-20: one log line per assembly -----------------------------------------------


@pytest.mark.req("POL-ASSEMBLE-20")
@pytest.mark.parametrize("path", ["acp", "cli-run"])
def test_assembly_logs_one_line_with_the_counts(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, path: str
) -> None:
    caplog.set_level(logging.INFO)
    execution = _resolve(_cfg(tmp_path, profile='level = "full"'), path)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("assembled ")]
    origin = execution.io.tools.origin
    assert lines == [
        f"assembled agent=a path={path} builtin={len(origin.builtin)} "
        f"peripheral={len(origin.peripheral)} mcp={len(origin.mcp) + len(origin.mcp_deferred)} "
        f"capability={len(origin.capability)} skill={len(origin.skill)}"
    ]


@pytest.mark.req("POL-ASSEMBLE-20")
def test_the_assembly_line_reaches_standard_error_at_info(tmp_path: Path) -> None:
    """The line is an INFO record: it reaches stderr once the threshold admits INFO (the
    default threshold is WARN, acp.md ACP-TR-03)."""
    import subprocess
    import sys

    cfg = _cfg(tmp_path, profile='level = "full"')
    script = (
        "import logging, sys, pathlib\n"
        "from zeroclaw_ref.config.load import load_config\n"
        "from zeroclaw_ref.core import log\n"
        "from zeroclaw_ref.engine.resolve import PathRequest, resolve\n"
        "log.configure(logging.INFO)\n"
        "cfg = pathlib.Path(sys.argv[1])\n"
        "resolve(load_config(cfg, cfg.parent / 'data', {}), 'a', PathRequest('cli-run'))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script, str(cfg)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout == ""
    lines = [line for line in run.stderr.splitlines() if "assembled agent=a path=cli-run " in line]
    assert len(lines) == 1
