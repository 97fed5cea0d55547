"""Generated paths never escape the boundary (policy.md §4.2, POL-SHELL-08, ACP-SEC-09)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zeroclaw_ref.policy.security import PathRefusal, SecurityPolicy, is_within
from zeroclaw_ref.tools.catalogue import ToolSettings
from zeroclaw_ref.tools.shell import ShellTool

SEGMENTS = ["a", "..", ".", "link-out", "link-in", "dir-out", "", "~", "%2f", "..%2f", "\x00",
            "loop", "new", "link-back"]  # fmt: skip
PREFIXES = ["", "/", "~", "~/", "./"]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """A workspace with links pointing in, out, back and round; HOME lies outside."""
    root = tmp_path_factory.mktemp("prop")
    ws, outside = root / "ws", root / "outside"
    (ws / "a").mkdir(parents=True)
    outside.mkdir()
    (outside / "a").write_text("secret")
    (ws / "link-in").symlink_to(ws / "a")
    (ws / "a" / "link-out").symlink_to(outside / "a")
    (ws / "link-out").symlink_to(outside / "a")
    (ws / "dir-out").symlink_to(outside)
    (outside / "link-back").symlink_to(ws)
    (ws / "loop").symlink_to(ws / "loop")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(outside))
        yield {"ws": ws, "outside": outside, "root": root}


def make_policy(ws: Path, outside: Path, full: bool) -> SecurityPolicy:
    return SecurityPolicy(
        level="full" if full else "supervised",
        workspace_dir=ws,
        allowed_roots=(ws,),
        workspace_only=not full,
        forbidden_paths=(str(outside),),
        allowed_commands=("cat",),
        require_approval_for_medium_risk=True,
        block_high_risk_commands=True,
        shell_env_passthrough=(),
        allowed_tools=None,
        excluded_tools=frozenset(),
    )


paths = st.builds(
    lambda prefix, parts: prefix + "/".join(parts),
    st.sampled_from(PREFIXES),
    st.lists(st.sampled_from(SEGMENTS), max_size=6),
)


def _acceptable(path: Path, policy: SecurityPolicy, outside: Path) -> bool:
    if path == Path("/dev/null"):
        return True
    if any(is_within(path, root) for root in policy.canonical_roots()):
        return True
    return not policy.workspace_only and not is_within(path, outside.resolve())


@pytest.mark.req("POL-FS-02", "POL-FS-04", "POL-FS-05", "POL-FS-06", "ACP-SEC-09")
@settings(deadline=None)
@given(raw=paths, full=st.booleans())
def test_an_allowed_path_lies_inside_the_boundary(
    tree: dict[str, Path], raw: str, full: bool
) -> None:
    policy = make_policy(tree["ws"], tree["outside"], full)
    result = policy.check_path(raw)
    if isinstance(result, PathRefusal):
        return
    assert _acceptable(result, policy, tree["outside"]), (raw, result)
    assert _acceptable(Path(os.path.realpath(result)), policy, tree["outside"]), (raw, result)


@pytest.mark.req("POL-SHELL-08")
@settings(deadline=None)
@given(raw=paths, full=st.booleans())
def test_a_shell_token_that_passes_resolves_inside_the_boundary(
    tree: dict[str, Path], raw: str, full: bool
) -> None:
    policy = make_policy(tree["ws"], tree["outside"], full)
    tool = ShellTool(policy, ToolSettings(agent_alias="a", data_dir=tree["root"]))
    if "\x00" in raw or " " in raw or not raw:
        return
    if tool.path_refusal(f"cat {raw}") is not None:
        return
    # What the shell would open: `~` expanded, relative to the workspace, links followed.
    expanded = (
        Path(raw).expanduser() if raw.startswith("~") and raw[1:2] in ("", "/") else Path(raw)
    )
    opened = Path(os.path.realpath(tree["ws"] / expanded))
    assert _acceptable(opened, policy, tree["outside"]), (raw, opened)
