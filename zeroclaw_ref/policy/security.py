"""SecurityPolicy: the per-execution boundary every built-in tool is bound to (policy.md §4.2).

This module holds the values and the built-in access predicate; the path checks of acp.md §10.2
grow here with the file tools.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from zeroclaw_ref.config.model import AutonomyConfig


@dataclass(frozen=True, slots=True)
class SecurityPolicy:
    """The boundary of one execution, derived from its effective risk profile."""

    level: str
    workspace_dir: Path
    allowed_roots: tuple[Path, ...]
    workspace_only: bool
    forbidden_paths: tuple[str, ...]
    allowed_commands: tuple[str, ...]
    require_approval_for_medium_risk: bool
    block_high_risk_commands: bool
    shell_env_passthrough: tuple[str, ...]
    # None: no restriction [POL-ACCESS-03]; (): deny-all [POL-ACCESS-06]
    allowed_tools: tuple[str, ...] | None
    excluded_tools: frozenset[str]

    @classmethod
    def build(
        cls, profile: AutonomyConfig, workspace_dir: Path, agent_workspace: Path
    ) -> SecurityPolicy:
        """Bind `profile` to a canonical workspace; the agent workspace is the second root."""
        roots = [workspace_dir]
        if agent_workspace != workspace_dir:
            roots.append(agent_workspace)  # [ACP-SEC-02] [ACP-SEC-03]
        roots.extend(Path(r).expanduser() for r in profile.allowed_roots)
        if profile.deny_all_tools:
            allowed: tuple[str, ...] | None = ()
        else:
            allowed = profile.allowed_tools or None
        return cls(
            level=profile.level,
            workspace_dir=workspace_dir,
            allowed_roots=tuple(roots),
            # [POL-AUTO-04] level full lifts workspace_only, never forbidden_paths.
            workspace_only=profile.workspace_only and profile.level != "full",
            forbidden_paths=profile.forbidden_paths,
            allowed_commands=profile.allowed_commands,
            require_approval_for_medium_risk=profile.require_approval_for_medium_risk,
            block_high_risk_commands=profile.block_high_risk_commands,
            shell_env_passthrough=profile.shell_env_passthrough,
            allowed_tools=allowed,
            excluded_tools=frozenset(profile.excluded_tools),
        )

    def is_tool_allowed(self, name: str) -> bool:
        """[POL-ACCESS-02] exact-name predicate for built-in and peripheral tools."""
        if name in self.excluded_tools:
            return False
        return self.allowed_tools is None or name in self.allowed_tools
