"""The system prompt layout of policy.md POL-RESOLVE-14."""

from __future__ import annotations

from pathlib import Path


def build_system_prompt(
    alias: str,
    base_prompt: str,
    workspace_dir: Path,
    skill_instructions: tuple[tuple[str, str], ...] = (),
    mcp_block: str = "",
) -> str:
    """Base prompt, working directory, skills (name order), then the MCP block."""
    text = base_prompt or f"You are {alias}, an AI agent running on ZeroClaw."
    text += f"\n\nWorking directory: {workspace_dir}"
    skills = sorted((name, body) for name, body in skill_instructions if body)
    if skills:
        text += "\n\n## Skills"
        for name, body in skills:
            text += f"\n\n### {name}\n\n{body}"
    if mcp_block:
        text += f"\n\n{mcp_block}"
    return text
