"""Skills: an agent's own instructions and shell-backed tools (policy.md §10).

Implements POL-SKILL-01 to POL-SKILL-07 and POL-APPROVE-13; admission (POL-SKILL-08) and the
snapshot rule (POL-SKILL-10) belong to `assemble()` and `resolve()`, which call this module.

Design note.
  Goals: a bad skill never takes the agent down, and a model-supplied argument can never
  become shell syntax.
  Plan: `load_skills` reads each skill once into frozen values, skipping what is invalid
  with a warning. A skill tool substitutes every `{{arg}}` in one pass, each value quoted
  with `shlex.quote`, then hands the command to `shell.run_checked`, so the command policy,
  the path scan and the process handling are exactly those of `shell`.
  Caveats: quoting stops an argument from adding syntax, not from naming a path; the path
  scan of POL-SHELL-08 runs on the substituted command and covers that.
"""

from __future__ import annotations

import logging
import re
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from zeroclaw_ref.config.schema import server_name_ok
from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.policy.security import SecurityPolicy
from zeroclaw_ref.tools.base import Tool, ToolContext, ToolResult, ToolSettings, argument, missing
from zeroclaw_ref.tools.shell import run_checked

log = logging.getLogger(__name__)

SKILLS_DIR = "skills"  # [POL-SKILL-01] <agent workspace>/skills/<name>/
INSTRUCTIONS_FILE = "SKILL.md"
MANIFEST_FILE = "SKILL.toml"
SEPARATOR = "__"  # [POL-SKILL-06] <skill>__<tool>
DEFAULT_TIMEOUT_SECS, MAX_TIMEOUT_SECS = 60, 3600  # [POL-SKILL-05]
# One pass over the template: a value that itself contains `{{x}}` is never substituted again.
_PLACEHOLDER = re.compile(r"\{\{([^{}]*)\}\}")


@dataclass(frozen=True, slots=True)
class SkillToolSpec:
    """One `[[tools]]` entry of a manifest; `args` keeps the manifest's order."""

    name: str
    description: str
    command: str
    args: tuple[tuple[str, str], ...] = ()
    timeout_secs: int = DEFAULT_TIMEOUT_SECS


@dataclass(frozen=True, slots=True)
class LoadedSkill:
    """A skill as read at resolution time (POL-SKILL-10): its instructions and its tools."""

    name: str
    instructions: str
    tools: tuple[SkillToolSpec, ...] = ()


def valid_name(name: str) -> bool:
    """[POL-SKILL-03] the pattern shared by skill and skill-tool names, with no `__`."""
    # The same rule as MCP server names and config's skills list (CFG-AGENT-06).
    return server_name_ok(name)


def load_skills(
    agent_workspace: Path, names: tuple[str, ...] | None, alias: str
) -> tuple[LoadedSkill, ...]:
    """[POL-SKILL-01] [POL-SKILL-02] the agent's skills, in name order.

    `names` is the agent's `skills` setting: None loads every skill directory, a tuple only
    those named (a missing one is logged), and an empty tuple none. Problems are logged as
    warnings and skipped; nothing is raised.
    """
    root = agent_workspace / SKILLS_DIR
    if names is None:
        candidates = _scan(root)
    else:
        candidates = []
        for name in sorted(set(names)):
            if valid_name(name) and _is_skill(root / name):
                candidates.append(name)
            else:
                log.warning("Skill '%s' not found for agent '%s'", name, alias)
    return tuple(_load(root / name, name) for name in candidates)


def _is_skill(folder: Path) -> bool:
    """[POL-SKILL-03] a directory holding SKILL.md or SKILL.toml."""
    return folder.is_dir() and (
        (folder / INSTRUCTIONS_FILE).is_file() or (folder / MANIFEST_FILE).is_file()
    )


def _scan(root: Path) -> list[str]:
    """The names of the skill directories under `root`, sorted; bad names skipped with a warning."""
    try:
        entries = sorted(root.iterdir(), key=lambda p: p.name)
    except OSError:
        return []  # no skills directory: no skills
    found: list[str] = []
    for entry in entries:
        if not _is_skill(entry):
            continue
        if not valid_name(entry.name):
            log.warning("Skipping skill directory '%s': invalid skill name", entry.name)
            continue
        found.append(entry.name)
    return found


def _load(folder: Path, name: str) -> LoadedSkill:
    """One skill: instructions and tools, each loaded whether or not the other is valid."""
    return LoadedSkill(name, _instructions(folder, name), _manifest_tools(folder, name))


def _instructions(folder: Path, name: str) -> str:
    """[POL-SKILL-04] the stripped UTF-8 text of SKILL.md, or empty when absent or unreadable."""
    path = folder / INSTRUCTIONS_FILE
    if not path.is_file():
        return ""
    try:
        return path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        log.warning("Skill '%s': cannot read %s: %s", name, INSTRUCTIONS_FILE, exc)
        return ""


def _manifest_tools(folder: Path, name: str) -> tuple[SkillToolSpec, ...]:
    """[POL-SKILL-05] the valid `[[tools]]` entries of SKILL.toml; bad ones skipped."""
    path = folder / MANIFEST_FILE
    if not path.is_file():
        return ()
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        log.warning("Skill '%s': skipping invalid %s: %s", name, MANIFEST_FILE, exc)
        return ()
    entries = document.get("tools", [])
    if not isinstance(entries, list):
        log.warning("Skill '%s': skipping %s: 'tools' is not an array of tables", name, path.name)
        return ()
    specs: list[SkillToolSpec] = []
    for index, entry in enumerate(entries):
        parsed = _tool_spec(entry)
        if isinstance(parsed, str):
            log.warning("Skill '%s': skipping tools[%d]: %s", name, index, parsed)
        elif any(spec.name == parsed.name for spec in specs):
            # Design: the first declaration keeps the name, as a registry clash would.
            log.warning("Skill '%s': skipping tools[%d]: duplicate name", name, index)
        else:
            specs.append(parsed)
    return tuple(specs)


def _tool_spec(entry: object) -> SkillToolSpec | str:
    """One manifest entry as a spec, or the reason it is invalid."""
    if not isinstance(entry, dict):
        return "not a table"
    name, description, command = entry.get("name"), entry.get("description"), entry.get("command")
    if not isinstance(name, str) or not valid_name(name):
        return f"invalid tool name {name!r}"
    if not isinstance(description, str):
        return "'description' must be a string"
    if not isinstance(command, str):
        return "'command' must be a string"
    raw_args = entry.get("args", {})
    if not isinstance(raw_args, dict) or not all(
        isinstance(text, str) for text in raw_args.values()
    ):
        return "'args' must map argument names to descriptions"
    timeout = entry.get("timeout_secs", DEFAULT_TIMEOUT_SECS)
    if isinstance(timeout, bool) or not isinstance(timeout, int):
        return "'timeout_secs' must be an integer"
    if not 1 <= timeout <= MAX_TIMEOUT_SECS:
        return f"'timeout_secs' must be between 1 and {MAX_TIMEOUT_SECS}"
    args = tuple((str(key), str(text)) for key, text in raw_args.items())
    return SkillToolSpec(name, description, command, args, timeout)


def render_command(template: str, values: dict[str, str]) -> str:
    """[POL-SKILL-07] every `{{arg}}` of a declared argument replaced by its quoted value.

    Unknown placeholders stay as written; the substitution is one pass, so quoted text is
    never rescanned.
    """

    def replace(match: re.Match[str]) -> str:
        key = match.group(1)
        return shlex.quote(values[key]) if key in values else match.group(0)

    return _PLACEHOLDER.sub(replace, template)


def _parameters(spec: SkillToolSpec) -> JSONObject:
    """[POL-SKILL-06] each declared argument a required string; no `approved`."""
    properties: JSONObject = {
        key: {"type": "string", "description": text} for key, text in spec.args
    }
    return {
        "type": "object",
        "properties": properties,
        "required": [key for key, _ in spec.args],
        "additionalProperties": False,
    }


class SkillTool:
    """One `<skill>__<tool>`: an act tool running its template through the shell policy."""

    act: ClassVar[bool] = True  # [POL-SKILL-09]

    def __init__(self, skill: str, spec: SkillToolSpec, security: SecurityPolicy) -> None:
        # the name, description and parameters come from the skill's manifest
        self.name = f"{skill}{SEPARATOR}{spec.name}"
        self.description = spec.description
        self.parameters = _parameters(spec)
        self.spec = spec
        self.security = security

    def execute(self, arguments: JSON, context: ToolContext) -> ToolResult:
        """Substitute the arguments, then check and run the command exactly like `shell`."""
        values: dict[str, str] = {}
        for key, _ in self.spec.args:
            value = argument(arguments, key)
            if not isinstance(value, str):
                return missing(key)  # [POL-TOOL-04]
            values[key] = value
        command = render_command(self.spec.command, values)
        # [POL-APPROVE-13] the runtime's approval comes from the context; a model-supplied
        # `approved` argument is ignored.
        return run_checked(
            self.security, command, context.approved, self.spec.timeout_secs, context.cancel
        )


def skill_tools(skill: LoadedSkill, security: SecurityPolicy, settings: ToolSettings) -> list[Tool]:
    """The tools of one skill in declaration order, bound to the execution's policy."""
    # `settings` keeps the signature of the tool modules; a skill tool's timeout is its own
    # `timeout_secs`, not the runtime's shell timeout (POL-SKILL-07).
    return [SkillTool(skill.name, spec, security) for spec in skill.tools]
