"""Skills: loading from the agent workspace and shell-backed skill tools (policy.md §10)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.core.jsontypes import JSON
from zeroclaw_ref.policy.security import SecurityPolicy
from zeroclaw_ref.tools.base import Tool, ToolContext, ToolResult, ToolSettings
from zeroclaw_ref.tools.skills import (
    LoadedSkill,
    SkillToolSpec,
    load_skills,
    render_command,
    skill_tools,
)

GIT_HELPER = """
[[tools]]
name = "status"
description = "Show the short git status of a path"
command = "git status --short {{path}}"
args = { path = "Path inside the workspace" }
timeout_secs = 30
"""


def _skill(ws: Path, name: str, md: str | None = None, toml: str | None = None) -> Path:
    folder = ws / "skills" / name
    folder.mkdir(parents=True)
    if md is not None:
        (folder / "SKILL.md").write_text(md, encoding="utf-8")
    if toml is not None:
        (folder / "SKILL.toml").write_text(toml, encoding="utf-8")
    return folder


def _policy(
    ws: Path, commands: tuple[str, ...] = ("printf", "echo", "rm", "cat"), block_high: bool = True
) -> SecurityPolicy:
    return SecurityPolicy(
        level="supervised",
        workspace_dir=ws,
        allowed_roots=(ws,),
        workspace_only=True,
        forbidden_paths=(),
        allowed_commands=commands,
        require_approval_for_medium_risk=True,
        block_high_risk_commands=block_high,
        shell_env_passthrough=(),
        allowed_tools=None,
        excluded_tools=frozenset(),
    )


def _tool(
    ws: Path,
    command: str,
    args: tuple[tuple[str, str], ...] = (("text", "Text"),),
    timeout: int = 60,
    policy: SecurityPolicy | None = None,
) -> Tool:
    skill = LoadedSkill("demo", "", (SkillToolSpec("run", "Run it", command, args, timeout),))
    (tool,) = skill_tools(skill, policy or _policy(ws), ToolSettings("main", ws.parent))
    return tool


def _call(tool: Tool, arguments: JSON, approved: bool = False) -> ToolResult:
    return tool.execute(arguments, ToolContext(cancel=CancelToken(), approved=approved))


# -- loading ------------------------------------------------------------------------------


@pytest.mark.req("POL-SKILL-01", "POL-SKILL-04", "POL-SKILL-05")
def test_every_skill_directory_loads_in_name_order(tmp_path: Path) -> None:
    _skill(tmp_path, "zeta", md="\n  Zeta rules.\n\n")
    _skill(tmp_path, "git_helper", md="# Git\nUse git.\n", toml=GIT_HELPER)
    _skill(tmp_path, "tools-only", toml='[[tools]]\nname = "x"\ndescription = ""\ncommand = "ls"\n')
    _skill(tmp_path, "not-a-skill")  # neither file: not a skill, silently ignored
    (tmp_path / "skills" / "README.md").write_text("a file, not a directory")
    loaded = load_skills(tmp_path, None, "main")
    assert loaded == (
        LoadedSkill(
            "git_helper",
            "# Git\nUse git.",
            (
                SkillToolSpec(
                    "status",
                    "Show the short git status of a path",
                    "git status --short {{path}}",
                    (("path", "Path inside the workspace"),),
                    30,
                ),
            ),
        ),
        LoadedSkill("tools-only", "", (SkillToolSpec("x", "", "ls", (), 60),)),
        LoadedSkill("zeta", "Zeta rules.", ()),
    )


def test_no_skills_directory_means_no_skills(tmp_path: Path) -> None:
    assert load_skills(tmp_path, None, "main") == ()
    assert load_skills(tmp_path / "missing", None, "main") == ()


@pytest.mark.req("POL-SKILL-02")
def test_an_empty_list_loads_none(tmp_path: Path) -> None:
    _skill(tmp_path, "alpha", md="A")
    assert load_skills(tmp_path, (), "main") == ()


@pytest.mark.req("POL-SKILL-02")
def test_a_named_list_narrows_and_reports_missing_skills(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _skill(tmp_path, "alpha", md="A")
    _skill(tmp_path, "beta", md="B")
    _skill(tmp_path, "gamma", md="G")
    _skill(tmp_path, "empty")
    with caplog.at_level(logging.WARNING, logger="zeroclaw_ref.tools.skills"):
        loaded = load_skills(tmp_path, ("gamma", "ghost", "alpha", "empty"), "coder")
    assert [s.name for s in loaded] == ["alpha", "gamma"]
    assert "Skill 'ghost' not found for agent 'coder'" in caplog.messages
    assert "Skill 'empty' not found for agent 'coder'" in caplog.messages


@pytest.mark.req("POL-SKILL-03")
@pytest.mark.parametrize("name", ["bad__name", "-dash", "_under", "dot.ted", "x" * 64, "spa ce"])
def test_a_directory_with_an_invalid_name_is_skipped_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, name: str
) -> None:
    _skill(tmp_path, name, md="bad")
    _skill(tmp_path, "good", md="ok")
    with caplog.at_level(logging.WARNING, logger="zeroclaw_ref.tools.skills"):
        loaded = load_skills(tmp_path, None, "main")
    assert [s.name for s in loaded] == ["good"]
    assert any(name in message for message in caplog.messages)


@pytest.mark.req("POL-SKILL-03")
def test_the_longest_valid_name_loads(tmp_path: Path) -> None:
    _skill(tmp_path, "A" + "b-_" * 20 + "xy", md="ok")
    assert len(load_skills(tmp_path, None, "main")) == 1


@pytest.mark.req("POL-SKILL-05", "POL-SKILL-04")
@pytest.mark.parametrize(
    "manifest",
    ["[[tools]\nname = ", 'tools = "status"', "\xff", '[tools]\nname = "x"'],
    ids=["syntax", "not-an-array", "not-utf8", "a-table"],
)
def test_an_invalid_manifest_is_skipped_and_the_instructions_still_load(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, manifest: str
) -> None:
    folder = _skill(tmp_path, "broken", md="Still here.")
    data = b"\xff\xfe" if manifest == "\xff" else manifest.encode()
    (folder / "SKILL.toml").write_bytes(data)
    with caplog.at_level(logging.WARNING, logger="zeroclaw_ref.tools.skills"):
        loaded = load_skills(tmp_path, None, "main")
    assert loaded == (LoadedSkill("broken", "Still here.", ()),)
    assert caplog.messages


BAD_ENTRIES = {
    "no-command": 'name = "a"\ndescription = "d"',
    "no-description": 'name = "a"\ncommand = "ls"',
    "bad-name": 'name = "a__b"\ndescription = "d"\ncommand = "ls"',
    "name-not-string": 'name = 1\ndescription = "d"\ncommand = "ls"',
    "timeout-zero": 'name = "a"\ndescription = "d"\ncommand = "ls"\ntimeout_secs = 0',
    "timeout-high": 'name = "a"\ndescription = "d"\ncommand = "ls"\ntimeout_secs = 3601',
    "timeout-bool": 'name = "a"\ndescription = "d"\ncommand = "ls"\ntimeout_secs = true',
    "timeout-text": 'name = "a"\ndescription = "d"\ncommand = "ls"\ntimeout_secs = "60"',
    "args-array": 'name = "a"\ndescription = "d"\ncommand = "ls"\nargs = ["x"]',
    "args-value": 'name = "a"\ndescription = "d"\ncommand = "ls"\nargs = { x = 1 }',
}


@pytest.mark.req("POL-SKILL-05")
@pytest.mark.parametrize("entry", BAD_ENTRIES.values(), ids=BAD_ENTRIES.keys())
def test_an_invalid_entry_is_skipped_and_the_others_load(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, entry: str
) -> None:
    good = '[[tools]]\nname = "ok"\ndescription = "fine"\ncommand = "ls"\ntimeout_secs = 3600\n'
    _skill(tmp_path, "mixed", md="I", toml=f"[[tools]]\n{entry}\n\n{good}")
    with caplog.at_level(logging.WARNING, logger="zeroclaw_ref.tools.skills"):
        (skill,) = load_skills(tmp_path, None, "main")
    assert skill.instructions == "I"
    assert skill.tools == (SkillToolSpec("ok", "fine", "ls", (), 3600),)
    assert any("tools[0]" in message for message in caplog.messages)


def test_a_duplicate_tool_name_keeps_the_first(tmp_path: Path) -> None:
    entry = '[[tools]]\nname = "a"\ndescription = "{d}"\ncommand = "ls"\n'
    _skill(tmp_path, "dup", toml=entry.format(d="first") + entry.format(d="second"))
    (skill,) = load_skills(tmp_path, None, "main")
    assert [t.description for t in skill.tools] == ["first"]


@pytest.mark.req("POL-SKILL-10")
def test_loaded_skills_are_a_snapshot(tmp_path: Path) -> None:
    folder = _skill(tmp_path, "snap", md="before", toml=GIT_HELPER)
    loaded = load_skills(tmp_path, None, "main")
    (folder / "SKILL.md").write_text("after")
    (folder / "SKILL.toml").write_text("")
    assert loaded[0].instructions == "before" and len(loaded[0].tools) == 1
    assert load_skills(tmp_path, None, "main")[0] == LoadedSkill("snap", "after", ())


# -- tools --------------------------------------------------------------------------------


@pytest.mark.req("POL-SKILL-06", "POL-SKILL-09", "POL-APPROVE-13")
def test_the_tool_is_named_and_shaped_as_in_the_spec_example(tmp_path: Path) -> None:
    _skill(tmp_path, "git_helper", toml=GIT_HELPER)
    (skill,) = load_skills(tmp_path, None, "main")
    (tool,) = skill_tools(skill, _policy(tmp_path), ToolSettings("main", tmp_path))
    assert tool.name == "git_helper__status" and tool.act
    assert tool.description == "Show the short git status of a path"
    assert tool.parameters == {
        "type": "object",
        "properties": {"path": {"type": "string", "description": "Path inside the workspace"}},
        "required": ["path"],
        "additionalProperties": False,
    }


def test_a_tool_without_args_has_an_empty_schema(tmp_path: Path) -> None:
    tool = _tool(tmp_path, "printf ok", args=())
    assert tool.parameters == {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    }
    assert _call(tool, {}) == ToolResult.ok("ok")


@pytest.mark.req("POL-TOOL-04")
@pytest.mark.parametrize("arguments", [{}, {"text": 5}, None, {"text": None}])
def test_a_missing_argument_is_reported(tmp_path: Path, arguments: JSON) -> None:
    assert _call(_tool(tmp_path, "printf %s {{text}}"), arguments) == ToolResult.fail(
        "Missing 'text' parameter"
    )


@pytest.mark.req("POL-SKILL-07")
def test_placeholders_are_quoted_in_one_pass_and_unknown_ones_kept() -> None:
    values = {"a": "x y", "b": "{{a}}"}
    assert render_command("cmd {{a}} {{b}} {{c}} {{ a }}", values) == (
        "cmd 'x y' '{{a}}' {{c}} {{ a }}"
    )
    assert render_command("cmd {{a}}{{a}}", {"a": ""}) == "cmd ''''"


INJECTIONS = [
    "x; touch pwned",
    "$(touch pwned)",
    "`touch pwned`",
    'it\'s "quoted"',
    "a && touch pwned",
    "a | touch pwned",
    "> pwned",
    "$HOME",
    "a\ntouch pwned",
    "{{text}}",
    "--help",
    "",
]


@pytest.mark.req("POL-SKILL-07")
@pytest.mark.parametrize("value", INJECTIONS)
def test_an_argument_is_one_literal_word_even_without_the_command_policy(
    tmp_path: Path, value: str
) -> None:
    # The escape hatch switches the syntax checks off, so only the quoting stands between the
    # value and the shell.
    policy = _policy(tmp_path, commands=("*",), block_high=False)
    tool = _tool(tmp_path, "printf '[%s]' {{text}}", policy=policy)
    assert _call(tool, {"text": value}) == ToolResult.ok(f"[{value}]")
    assert not (tmp_path / "pwned").exists()


@pytest.mark.req("POL-SKILL-07", "POL-SHELL-02")
@pytest.mark.parametrize("value", INJECTIONS)
def test_an_argument_never_runs_as_shell_syntax_under_the_command_policy(
    tmp_path: Path, value: str
) -> None:
    result = _call(_tool(tmp_path, "printf '[%s]' {{text}}"), {"text": value})
    # Some values are refused by the syntax check even inside quotes; none is ever executed.
    assert result == ToolResult.ok(f"[{value}]") or (
        result.error is not None and result.error.startswith("Command not allowed")
    )
    assert not (tmp_path / "pwned").exists()


@pytest.mark.req("POL-SKILL-07", "POL-SHELL-03")
def test_the_command_policy_applies_to_the_template(tmp_path: Path) -> None:
    result = _call(_tool(tmp_path, "ls {{text}}"), {"text": "a b"})
    assert result == ToolResult.fail("Command not allowed by security policy: ls 'a b'")


@pytest.mark.req("POL-SKILL-07", "POL-SHELL-08")
def test_the_path_scan_applies_to_substituted_arguments(tmp_path: Path) -> None:
    result = _call(_tool(tmp_path, "cat {{text}}"), {"text": "/etc/passwd"})
    assert result == ToolResult.fail("Path blocked by security policy: /etc/passwd")


@pytest.mark.req("POL-SKILL-07", "POL-APPROVE-13", "POL-SHELL-06")
def test_the_approval_comes_from_the_context_only(tmp_path: Path) -> None:
    (tmp_path / "doomed.txt").write_text("x")
    tool = _tool(tmp_path, "rm {{text}}")
    refused = _call(tool, {"text": "doomed.txt", "approved": True})
    assert refused == ToolResult.fail(
        "Command requires explicit approval (approved=true): high-risk operation"
    )
    assert (tmp_path / "doomed.txt").exists()
    assert _call(tool, {"text": "doomed.txt"}, approved=True) == ToolResult.ok("")
    assert not (tmp_path / "doomed.txt").exists()


@pytest.mark.req("POL-SHELL-09")
def test_the_command_runs_in_the_workspace(tmp_path: Path) -> None:
    (tmp_path / "note.txt").write_text("inside\n")
    assert _call(_tool(tmp_path, "cat {{text}}"), {"text": "note.txt"}) == ToolResult.ok("inside\n")


@pytest.mark.req("POL-SKILL-07", "POL-SHELL-10")
def test_the_tool_uses_its_own_timeout(tmp_path: Path) -> None:
    policy = _policy(tmp_path, commands=("sleep",))
    tool = _tool(tmp_path, "sleep {{text}}", timeout=1, policy=policy)
    assert _call(tool, {"text": "30"}) == ToolResult.fail(
        "Command timed out after 1s and was killed"
    )


def test_a_fired_cancel_token_spawns_nothing(tmp_path: Path) -> None:
    cancel = CancelToken()
    cancel.fire()
    tool = _tool(tmp_path, "printf x > {{text}}", policy=_policy(tmp_path, ("*",), False))
    result = tool.execute({"text": "made"}, ToolContext(cancel=cancel, approved=True))
    assert not result.success and not (tmp_path / "made").exists()
