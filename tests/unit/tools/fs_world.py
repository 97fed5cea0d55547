"""Shared helpers for the file, search and delivery tool tests: a workspace and a planted secret."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from zeroclaw_ref.config.model import AutonomyConfig
from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.core.jsontypes import JSON
from zeroclaw_ref.policy.security import SecurityPolicy
from zeroclaw_ref.tools.base import Tool, ToolContext, ToolResult

SECRET = "TOPSECRET-7f3a9"


@dataclass(frozen=True)
class World:
    """A workspace `ws`, an `outside` directory holding the secret, and the bound policy."""

    root: Path
    ws: Path
    outside: Path
    security: SecurityPolicy
    level: str

    @property
    def secret_file(self) -> Path:
        return self.outside / "secret.txt"

    def refusal(self, raw: str) -> str:
        """The policy text for a canonical path outside the roots at this level."""
        if self.level == "full":
            return f"Path blocked by security policy: {raw}"
        return f"Path escapes workspace directory: {raw}"

    def outside_snapshot(self) -> dict[str, bytes | str]:
        """Every entry outside the workspace (names, link targets and contents)."""
        seen: dict[str, bytes | str] = {}
        for path in sorted(self.root.rglob("*")):
            if path == self.ws or self.ws in path.parents:
                continue
            if path.is_symlink():
                seen[str(path)] = str(path.readlink())
            elif path.is_file():
                seen[str(path)] = path.read_bytes()
            else:
                seen[str(path)] = "dir"
        return seen


def make_world(root: Path, level: str, monkeypatch: pytest.MonkeyPatch) -> World:
    ws = root / "ws"
    outside = root / "outside"
    ws.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET + "\n")
    monkeypatch.setenv("HOME", str(outside))  # `~/secret.txt` names the planted secret
    if level == "full":
        # [POL-AUTO-04] full lifts workspace_only; the secret sits under a forbidden prefix.
        profile = AutonomyConfig(level="full", forbidden_paths=(str(outside),))
    else:
        profile = AutonomyConfig(level=level)
    security = SecurityPolicy.build(profile, ws, ws)
    return World(root, ws, outside, security, level)


def run(tool: Tool, arguments: JSON) -> ToolResult:
    return tool.execute(arguments, ToolContext(cancel=CancelToken()))


def find(tools: list[Tool], name: str) -> Tool:
    return next(t for t in tools if t.name == name)


Runner = Callable[[Tool, JSON], ToolResult]
