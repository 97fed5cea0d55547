"""SecurityPolicy: the per-execution boundary every built-in tool is bound to (policy.md §4.2,
acp.md §10).

Goals: one path check for every file-touching tool, decided on the canonical path, so that no
`..`, symbolic link (in any component), `~user` or percent-encoded trick reaches outside the
allowed roots (ACP-SEC-09). Plan: lexical refusals first (NUL, `..`, `%2f`, `~user`), then
expansion and canonicalisation of the deepest existing ancestor, then the root/forbidden
decision. Caveat: a check is only as good as the open that follows it; tools open the checked
path without following a final symbolic link to narrow the check-to-use window.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from zeroclaw_ref.config.model import AutonomyConfig, SandboxConfig

# A policy built without a sandbox setting (unit tests of the tools) runs commands unconfined.
UNCONFINED = SandboxConfig(backend="none")

# [POL-FS-01] [ACP-SEC-05]
NUL_REFUSAL = "Path not allowed: contains null byte"
_ENCODED_PARENT = re.compile(r"\.\.%2f|%2f\.\.", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class PathRefusal:
    """A refused path; `reason` is the exact failure text for the tool's result."""

    reason: str


def _lexically_refused(raw: str) -> str | None:
    """[POL-FS-01] [POL-FS-02] refusals decided on the text alone."""
    if "\x00" in raw:
        return NUL_REFUSAL
    parts = re.split(r"[/\\]", raw)
    tilde_user = raw.startswith("~") and not (raw == "~" or raw.startswith("~/"))
    if ".." in parts or _ENCODED_PARENT.search(raw) or tilde_user:
        return f"Path not allowed by security policy: {raw}"
    return None


def canonicalise(path: Path) -> Path:
    """[POL-FS-04] [ACP-SEC-07] realpath of an existing path; for one that does not exist
    yet, every symbolic link on the way is still resolved — including a dangling link, whose
    target is where a write would land — and the missing components are appended.

    Raises:
        OSError: the path cannot be canonicalised (a link loop, a permission error).
    """
    try:
        return Path(os.path.realpath(path, strict=True))
    except FileNotFoundError:
        pass
    # Non-strict realpath follows every link it can, dangling ones included, and keeps the
    # components that do not exist; a loop still surfaces as an error on the strict probe of
    # the deepest existing ancestor.
    resolved = Path(os.path.realpath(path))
    ancestor = resolved
    while not os.path.lexists(ancestor) and ancestor.parent != ancestor:
        ancestor = ancestor.parent
    os.path.realpath(ancestor, strict=True)
    return resolved


def is_within(path: Path, root: Path) -> bool:
    """Component-wise containment (`/work2` is not inside `/work`)."""
    return path == root or root in path.parents


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
    # The OS confinement of commands (ZC-SBX-01) and what it must hide besides forbidden_paths:
    # the configuration and data directories (ZC-SBX-03).
    sandbox: SandboxConfig = UNCONFINED
    sandbox_hidden: tuple[Path, ...] = ()

    @classmethod
    def build(
        cls,
        profile: AutonomyConfig,
        workspace_dir: Path,
        agent_workspace: Path,
        sandbox: SandboxConfig = UNCONFINED,
        hidden: tuple[Path, ...] = (),
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
            sandbox=sandbox,
            sandbox_hidden=hidden,
        )

    def check_path(self, raw: str) -> Path | PathRefusal:
        """[POL-FS-01..07] [ACP-SEC-05..10] the canonical path a tool may use, or why not.

        `raw` is the model's argument; refusal texts quote it as given.
        """
        refused = _lexically_refused(raw)
        if refused is not None:
            return PathRefusal(refused)
        # [POL-FS-03] `~` and `~/` expand to the home directory; relative joins the workspace.
        candidate = Path(raw).expanduser() if raw.startswith("~") else Path(raw)
        if not candidate.is_absolute():
            candidate = self.workspace_dir / candidate
        try:
            canonical = canonicalise(candidate)
        except OSError as exc:
            return PathRefusal(f"Failed to resolve file path: {exc.strerror or exc}")
        return self.decide(canonical, raw)

    def decide(self, canonical: Path, raw: str) -> Path | PathRefusal:
        """[POL-FS-05] [POL-FS-06] the root/forbidden decision on a canonical path."""
        if canonical == Path("/dev/null"):
            return canonical
        if any(is_within(canonical, root) for root in self.canonical_roots()):
            return canonical  # allowed roots win over forbidden_paths
        if self.workspace_only:
            return PathRefusal(f"Path escapes workspace directory: {raw}")
        for entry in self.forbidden_paths:
            forbidden = Path(entry).expanduser()
            if is_within(canonical, forbidden) or is_within(canonical, _real(forbidden)):
                return PathRefusal(f"Path blocked by security policy: {raw}")
        return canonical

    def canonical_roots(self) -> tuple[Path, ...]:
        """The workspace and allowed roots, canonicalised (roots may not exist yet)."""
        return tuple(_real(root) for root in self.allowed_roots)

    def is_tool_allowed(self, name: str) -> bool:
        """[POL-ACCESS-02] exact-name predicate for built-in and peripheral tools."""
        if name in self.excluded_tools:
            return False
        return self.allowed_tools is None or name in self.allowed_tools


def _real(path: Path) -> Path:
    try:
        return canonicalise(path)
    except OSError:
        return path
