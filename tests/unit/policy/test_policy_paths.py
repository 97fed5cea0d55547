"""The shared path check against planted escapes (policy.md §4.2, acp.md §10.2)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from zeroclaw_ref.policy.security import PathRefusal, SecurityPolicy


def make_policy(
    ws: Path,
    *,
    level: str = "supervised",
    roots: tuple[Path, ...] = (),
    forbidden: tuple[str, ...] = (),
) -> SecurityPolicy:
    return SecurityPolicy(
        level=level,
        workspace_dir=ws,
        allowed_roots=(ws, *roots),
        workspace_only=level != "full",
        forbidden_paths=forbidden,
        allowed_commands=("*",),
        require_approval_for_medium_risk=True,
        block_high_risk_commands=True,
        shell_env_passthrough=(),
        allowed_tools=None,
        excluded_tools=frozenset(),
    )


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    """A workspace with links in and out, and a secret beside it."""
    ws = tmp_path / "ws"
    outside = tmp_path / "outside"
    (ws / "sub").mkdir(parents=True)
    outside.mkdir()
    (ws / "a.txt").write_text("a")
    (outside / "secret").write_text("SECRET")
    (ws / "link-out").symlink_to(outside / "secret")
    (ws / "dir-out").symlink_to(outside)
    (ws / "link-in").symlink_to(ws / "a.txt")
    (ws / "loop1").symlink_to(ws / "loop2")
    (ws / "loop2").symlink_to(ws / "loop1")
    return {"ws": ws, "outside": outside, "root": tmp_path}


def refusal(result: Path | PathRefusal) -> str:
    assert isinstance(result, PathRefusal), result
    return result.reason


LEXICAL = ["../outside/secret", "sub/../../outside/secret", "..\\x", "a/..", "..%2fx", "x%2F..",
           "..%2Fx", "~root/.ssh", "~+/x"]  # fmt: skip


@pytest.mark.req("POL-FS-02", "ACP-SEC-06")
@pytest.mark.parametrize("raw", LEXICAL)
def test_lexical_escapes_are_refused_by_text(tree: dict[str, Path], raw: str) -> None:
    policy = make_policy(tree["ws"])
    assert refusal(policy.check_path(raw)) == f"Path not allowed by security policy: {raw}"


@pytest.mark.req("POL-FS-01", "ACP-SEC-05")
def test_a_nul_byte_is_refused(tree: dict[str, Path]) -> None:
    policy = make_policy(tree["ws"], level="full")
    assert refusal(policy.check_path("a\x00b")) == "Path not allowed: contains null byte"


@pytest.mark.req("POL-FS-06", "ACP-SEC-09")
@pytest.mark.parametrize("raw", ["link-out", "dir-out/secret", "dir-out/new-file", "dir-out"])
def test_links_pointing_outside_are_refused(tree: dict[str, Path], raw: str) -> None:
    policy = make_policy(tree["ws"])
    assert refusal(policy.check_path(raw)) == f"Path escapes workspace directory: {raw}"


@pytest.mark.req("POL-FS-06")
def test_an_absolute_path_outside_is_refused(tree: dict[str, Path]) -> None:
    raw = str(tree["outside"] / "secret")
    assert refusal(make_policy(tree["ws"]).check_path(raw)).startswith("Path escapes workspace")


@pytest.mark.req("POL-FS-04")
def test_a_symlink_loop_fails_to_resolve(tree: dict[str, Path]) -> None:
    reason = refusal(make_policy(tree["ws"]).check_path("loop1"))
    assert reason.startswith("Failed to resolve file path: ")


@pytest.mark.req("POL-FS-04", "POL-FS-05")
def test_links_inside_and_new_files_resolve_inside(tree: dict[str, Path]) -> None:
    policy = make_policy(tree["ws"])
    ws = tree["ws"].resolve()
    assert policy.check_path("link-in") == ws / "a.txt"
    assert policy.check_path("sub/new/deeper.txt") == ws / "sub/new/deeper.txt"
    assert policy.check_path(str(ws / "a.txt")) == ws / "a.txt"
    assert policy.check_path("./a.txt") == ws / "a.txt"


@pytest.mark.req("POL-FS-05")
def test_dev_null_is_always_allowed(tree: dict[str, Path]) -> None:
    policy = make_policy(tree["ws"], level="full", forbidden=("/dev",))
    assert policy.check_path("/dev/null") == Path("/dev/null")
    assert isinstance(make_policy(tree["ws"]).check_path("/dev/null"), Path)
    assert isinstance(make_policy(tree["ws"]).check_path("/dev/zero"), PathRefusal)


@pytest.mark.req("POL-FS-07", "ACP-SEC-03")
def test_allowed_roots_extend_the_boundary(tree: dict[str, Path]) -> None:
    policy = make_policy(tree["ws"], roots=(tree["outside"],))
    assert policy.check_path("link-out") == (tree["outside"] / "secret").resolve()
    assert policy.check_path(str(tree["outside"] / "secret")) == (tree["outside"] / "secret")


@pytest.mark.req("POL-AUTO-04", "POL-FS-06", "ACP-SEC-14")
def test_forbidden_paths_still_hold_at_full(tree: dict[str, Path]) -> None:
    policy = make_policy(tree["ws"], level="full", forbidden=(str(tree["outside"]),))
    for raw in ("link-out", "dir-out/secret", str(tree["outside"] / "secret")):
        assert refusal(policy.check_path(raw)) == f"Path blocked by security policy: {raw}"
    # outside every forbidden prefix, level full allows it
    (tree["root"] / "free.txt").write_text("free")
    assert policy.check_path(str(tree["root"] / "free.txt")) == tree["root"] / "free.txt"


@pytest.mark.req("ACP-SEC-08")
def test_a_workspace_under_a_forbidden_prefix_still_works(tree: dict[str, Path]) -> None:
    policy = make_policy(tree["ws"], level="full", forbidden=(str(tree["root"]), "/tmp"))
    assert policy.check_path("a.txt") == tree["ws"].resolve() / "a.txt"
    assert isinstance(policy.check_path(str(tree["outside"] / "secret")), PathRefusal)


@pytest.mark.req("ACP-SEC-08")
def test_containment_is_component_wise(tmp_path: Path) -> None:
    ws, ws2 = tmp_path / "ws", tmp_path / "ws2"
    ws.mkdir()
    ws2.mkdir()
    (ws2 / "f").write_text("x")
    policy = make_policy(ws)
    assert refusal(policy.check_path(str(ws2 / "f"))).startswith("Path escapes workspace")
    full = make_policy(ws, level="full", forbidden=(str(ws2),))
    assert isinstance(full.check_path(str(ws2 / "f")), PathRefusal)
    assert (
        make_policy(ws, level="full", forbidden=(str(tmp_path / "w"),)).check_path(str(ws2 / "f"))
        == ws2 / "f"
    )


@pytest.mark.req("POL-FS-03")
def test_home_expansion_is_checked_after_expanding(
    tree: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tree["outside"]))
    policy = make_policy(tree["ws"])
    assert refusal(policy.check_path("~/secret")) == "Path escapes workspace directory: ~/secret"
    assert refusal(policy.check_path("~")) == "Path escapes workspace directory: ~"
    monkeypatch.setenv("HOME", str(tree["ws"]))
    assert policy.check_path("~/a.txt") == tree["ws"].resolve() / "a.txt"
    assert os.environ["HOME"] == str(tree["ws"])


@pytest.mark.req("POL-FS-04", "ACP-SEC-09")
def test_a_dangling_link_is_judged_by_where_it_points(tmp_path: Path) -> None:
    from zeroclaw_ref.config.model import AutonomyConfig
    from zeroclaw_ref.policy.security import PathRefusal, SecurityPolicy

    ws = (tmp_path / "ws").resolve()
    ws.mkdir()
    (ws / "dangling").symlink_to(tmp_path / "not-yet-outside")
    (ws / "inside").symlink_to(ws / "later")
    policy = SecurityPolicy.build(AutonomyConfig(), ws, ws)
    assert policy.check_path("dangling") == PathRefusal(
        "Path escapes workspace directory: dangling"
    )
    assert policy.check_path("dangling/child") == PathRefusal(
        "Path escapes workspace directory: dangling/child"
    )
    assert policy.check_path("inside") == ws / "later"
