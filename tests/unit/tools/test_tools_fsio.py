"""Race-resistant file access and the planted-secret attacks through every file-touching tool
(policy.md §4.2, acp.md ACP-SEC-09)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from fs_world import SECRET, World, find, run

from zeroclaw_ref.core.jsontypes import JSON
from zeroclaw_ref.policy.security import SecurityPolicy
from zeroclaw_ref.tools import deliver_file, files, fsio, search
from zeroclaw_ref.tools.base import Tool, ToolResult
from zeroclaw_ref.tools.catalogue import ToolSettings


def all_tools(world: World) -> list[Tool]:
    settings = ToolSettings(agent_alias="default", data_dir=world.root / "data")
    return [
        *files.tools(world.security, settings),
        *search.tools(world.security, settings),
        *deliver_file.tools(world.security, settings),
    ]


def plant_links(world: World) -> None:
    (world.ws / "link.txt").symlink_to(world.secret_file)  # last component
    (world.ws / "linkdir").symlink_to(world.outside)  # intermediate directory


# Each tool's call for a path argument `p`.
CALLS: dict[str, Callable[[str], JSON]] = {
    "file_read": lambda p: {"path": p},
    "file_write": lambda p: {"path": p, "content": "pwned"},
    "file_edit": lambda p: {"path": p, "old_string": SECRET, "new_string": "pwned"},
    "deliver_file": lambda p: {"path": p},
    "content_search": lambda p: {"pattern": "TOPSECRET", "path": p},
}


def expected_refusal(world: World, raw: str) -> str:
    """The exact text each attack must produce (POL-FS-01, POL-FS-02, POL-FS-06)."""
    if "\x00" in raw:
        return "Path not allowed: contains null byte"
    if ".." in raw or raw.startswith("~root"):
        return f"Path not allowed by security policy: {raw}"
    return world.refusal(raw)


def attacks(world: World) -> list[str]:
    return [
        "../outside/secret.txt",
        str(world.secret_file),
        "~/secret.txt",
        "..%2foutside%2fsecret.txt",
        "%2F..%2Foutside/secret.txt",
        "link.txt",
        "linkdir/secret.txt",
        "secret.txt\x00",
        "~root/secret.txt",
        "sub/../../outside/secret.txt",
        "..\\outside\\secret.txt",
    ]


def assert_nothing_leaked(world: World, result: ToolResult, before: dict[str, bytes | str]) -> None:
    assert SECRET not in result.output
    assert SECRET not in (result.error or "")
    assert SECRET not in repr(result.data)
    assert world.outside_snapshot() == before
    assert not (world.ws / "uploads").exists()


@pytest.mark.req("POL-FS-01", "POL-FS-02", "POL-FS-06", "ACP-SEC-09", "ACP-SEC-10", "ACP-DELIV-03")
@pytest.mark.parametrize("tool_name", sorted(CALLS))
def test_every_path_attack_is_refused_with_its_exact_text(world: World, tool_name: str) -> None:
    plant_links(world)
    tool = find(all_tools(world), tool_name)
    before = world.outside_snapshot()
    for raw in attacks(world):
        result = run(tool, CALLS[tool_name](raw))
        assert not result.success, raw
        assert result.error == expected_refusal(world, raw), raw
        assert_nothing_leaked(world, result, before)


@pytest.mark.req("POL-FILE-06", "ACP-SEC-09")
def test_glob_never_lists_or_follows_links_out_of_the_workspace(world: World) -> None:
    plant_links(world)
    (world.ws / "mine.txt").write_text("ok\n")
    tool = find(all_tools(world), "glob_search")
    before = world.outside_snapshot()
    for pattern in ("**", "**/*", "*", "linkdir/*", "linkdir/**/*.txt", "link*", "**/secret*"):
        result = run(tool, {"pattern": pattern})
        none = f"No files matching pattern '{pattern}' found in workspace."
        assert result.output == ("mine.txt" if pattern in ("**", "**/*", "*") else none)
        assert_nothing_leaked(world, result, before)
    refusals = {
        "../outside/*": "Path not allowed by security policy: ../outside/*",
        "**/../../outside/*": "Path not allowed by security policy: **/../../outside/*",
        str(world.outside / "*"): "Absolute paths are not allowed. Use a relative glob pattern.",
        "a\x00b": "Path not allowed: contains null byte",
    }
    for pattern, text in refusals.items():
        assert run(tool, {"pattern": pattern}).error == text


@pytest.mark.req("POL-FILE-07", "ACP-SEC-09")
def test_content_search_of_the_workspace_never_reads_through_links(world: World) -> None:
    plant_links(world)
    (world.ws / "mine.txt").write_text("TOPSECRET is only a word here\n")
    tool = find(all_tools(world), "content_search")
    for mode in ("content", "files_with_matches", "count"):
        result = run(tool, {"pattern": "TOPSECRET", "output_mode": mode})
        assert result.success
        assert SECRET not in result.output
        assert "link" not in result.output
        assert result.output.startswith("mine.txt")


@pytest.mark.req("POL-FS-06", "POL-FILE-07")
def test_content_search_above_the_workspace_at_full_skips_the_forbidden_directory(
    world: World,
) -> None:
    if world.level != "full":
        pytest.skip("only level full may search outside the roots")
    (world.ws / "mine.txt").write_text("TOPSECRET here too\n")
    (world.root / "other.txt").write_text("TOPSECRET elsewhere\n")
    tool = find(all_tools(world), "content_search")
    result = run(tool, {"pattern": "TOPSECRET", "path": str(world.root)})
    # Inside the workspace paths are relative; elsewhere they are absolute.
    other = f"{world.root / 'other.txt'}:1:TOPSECRET elsewhere"
    assert result.output == f"{other}\nmine.txt:1:TOPSECRET here too"


@pytest.mark.req("ACP-SEC-09", "POL-FS-04", "POL-FILE-04")
def test_a_dangling_link_out_of_the_workspace_is_never_written_through(world: World) -> None:
    (world.ws / "dangle").symlink_to(world.outside / "created.txt")
    tools = all_tools(world)
    before = world.outside_snapshot()
    for name in ("file_read", "file_write", "file_edit"):
        result = run(find(tools, name), CALLS[name]("dangle"))
        assert result.error == world.refusal("dangle"), name
    deliver = run(find(tools, "deliver_file"), {"path": "dangle"})
    assert deliver.error == "Failed to resolve file path: No such file or directory"
    assert world.outside_snapshot() == before


@pytest.mark.req("ACP-SEC-09", "POL-FILE-04")
def test_a_dangling_link_planted_after_the_check_is_replaced_not_followed(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    def plant() -> None:
        (world.ws / "new.txt").symlink_to(world.outside / "created.txt")

    swap_after_check(monkeypatch, plant, "new.txt")
    before = world.outside_snapshot()
    write = run(find(all_tools(world), "file_write"), {"path": "new.txt", "content": "pwned"})
    assert write.output == "Written 5 bytes to new.txt"
    assert not (world.ws / "new.txt").is_symlink()
    assert (world.ws / "new.txt").read_text() == "pwned"
    assert world.outside_snapshot() == before


@pytest.mark.req("POL-FILE-04", "ACP-SEC-09")
def test_file_write_through_a_linked_directory_is_refused(world: World) -> None:
    plant_links(world)
    before = world.outside_snapshot()
    tool = find(all_tools(world), "file_write")
    for raw in ("linkdir/new.txt", "linkdir/deeper/new.txt", "../x", "linkdir/secret.txt"):
        result = run(tool, {"path": raw, "content": "pwned"})
        assert result.error == expected_refusal(world, raw), raw
    assert world.outside_snapshot() == before


# --------------------------------------------------------------- swaps between check and use


def swap_after_check(
    monkeypatch: pytest.MonkeyPatch, swap: Callable[[], None], trigger: str
) -> None:
    """Run `swap` right after `check_path(trigger)` returns, as a racing attacker would."""
    original = SecurityPolicy.check_path

    def racing(self: SecurityPolicy, raw: str) -> object:
        checked = original(self, raw)
        if raw == trigger:
            swap()
        return checked

    monkeypatch.setattr(SecurityPolicy, "check_path", racing)


def dir_swapper(world: World) -> Callable[[], None]:
    def swap() -> None:
        (world.ws / "data").rename(world.ws / "data.old")
        (world.ws / "data").symlink_to(world.outside)

    return swap


def file_swapper(world: World) -> Callable[[], None]:
    def swap() -> None:
        (world.ws / "data" / "secret.txt").unlink()
        (world.ws / "data" / "secret.txt").symlink_to(world.secret_file)

    return swap


ENOTDIR = "Not a directory"
ELOOP = "Too many levels of symbolic links"
RACE_TEXTS = {
    # tool -> (text after a directory swap, text after a final-component swap)
    "file_read": (f"Failed to read file: {ENOTDIR}", f"Failed to read file: {ELOOP}"),
    "file_edit": (f"Failed to read file: {ENOTDIR}", f"Failed to read file: {ELOOP}"),
    "deliver_file": (f"Failed to open file: {ENOTDIR}", f"Failed to open file: {ELOOP}"),
    "content_search": (None, None),
}


@pytest.mark.req("ACP-SEC-09", "POL-FS-04")
@pytest.mark.parametrize("tool_name", sorted(RACE_TEXTS))
@pytest.mark.parametrize("which", [0, 1])
def test_a_link_swapped_in_after_the_check_is_not_followed(
    world: World, monkeypatch: pytest.MonkeyPatch, tool_name: str, which: int
) -> None:
    (world.ws / "data").mkdir()
    (world.ws / "data" / "secret.txt").write_text("decoy TOPSECRET-decoy\n")
    raw = "data/secret.txt" if tool_name != "content_search" or which else "data"
    swap = dir_swapper(world) if which == 0 else file_swapper(world)
    swap_after_check(monkeypatch, swap, raw)
    before = world.outside_snapshot()
    result = run(find(all_tools(world), tool_name), CALLS[tool_name](raw))
    text = RACE_TEXTS[tool_name][which]
    if text is None:
        assert result.output == "No matches found."
    else:
        assert result.error == text
    assert_nothing_leaked(world, result, before)


@pytest.mark.req("ACP-SEC-09", "POL-FILE-04")
def test_file_write_after_a_directory_swap_fails_and_creates_nothing_outside(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    (world.ws / "data").mkdir()
    swap_after_check(monkeypatch, dir_swapper(world), "data/new.txt")
    before = world.outside_snapshot()
    result = run(find(all_tools(world), "file_write"), {"path": "data/new.txt", "content": "x"})
    assert result.error == "Failed to write file: Not a directory"
    assert world.outside_snapshot() == before


@pytest.mark.req("ACP-SEC-09", "POL-FILE-04")
def test_file_write_onto_a_link_swapped_in_replaces_the_link(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    (world.ws / "data").mkdir()
    (world.ws / "data" / "secret.txt").write_text("old\n")
    swap_after_check(monkeypatch, file_swapper(world), "data/secret.txt")
    before = world.outside_snapshot()
    result = run(
        find(all_tools(world), "file_write"), {"path": "data/secret.txt", "content": "new"}
    )
    assert result.output == "Written 3 bytes to data/secret.txt"
    target = world.ws / "data" / "secret.txt"
    assert not target.is_symlink() and target.read_text() == "new"
    assert world.outside_snapshot() == before


# ------------------------------------------------------------------------- fsio itself


@pytest.mark.req("ACP-SEC-09")
def test_walk_refuses_a_link_in_any_component(ws_world: World) -> None:
    (ws_world.ws / "real").mkdir()
    (ws_world.ws / "real" / "f.txt").write_text("ok")
    assert fsio.read_regular(ws_world.ws / "real" / "f.txt", 100) == b"ok"
    (ws_world.ws / "alias").symlink_to(ws_world.ws / "real")
    with pytest.raises(fsio.OpenFailed, match="Not a directory"):
        fsio.read_regular(ws_world.ws / "alias" / "f.txt", 100)
    with pytest.raises(fsio.FsError, match="Not a directory"):
        fsio.write_regular(ws_world.ws / "alias" / "g.txt", b"x", create_parents=True)
    assert not (ws_world.ws / "real" / "g.txt").exists()


def test_read_limits_and_types(ws_world: World) -> None:
    ws = ws_world.ws
    (ws / "f").write_bytes(b"12345")
    assert fsio.read_regular(ws / "f", 5) == b"12345"
    with pytest.raises(fsio.TooLarge) as too_large:
        fsio.read_regular(ws / "f", 4)
    assert too_large.value.size == 5
    with pytest.raises(fsio.NotRegular, match="Is a directory"):
        fsio.read_regular(ws, 10)
    os.mkfifo(ws / "fifo")
    with pytest.raises(fsio.NotRegular, match="not a regular file"):
        fsio.read_regular(ws / "fifo", 10)  # O_NONBLOCK: the open does not hang
    with pytest.raises(fsio.OpenFailed, match="No such file or directory"):
        fsio.read_regular(ws / "missing", 10)
    assert fsio.read_regular(fsio.DEV_NULL, 10) == b""


def test_atomic_write_creates_parents_keeps_mode_and_leaves_no_temp(ws_world: World) -> None:
    target = ws_world.ws / "a" / "b" / "c.txt"
    with pytest.raises(fsio.FsError, match="No such file or directory"):
        fsio.write_regular(target, b"x", create_parents=False)
    fsio.write_regular(target, b"one", create_parents=True)
    target.chmod(0o640)
    fsio.write_regular(target, b"two", create_parents=False)
    assert target.read_bytes() == b"two"
    assert target.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in target.parent.iterdir()) == ["c.txt"]
    with pytest.raises(fsio.FsError, match="Is a directory"):
        fsio.write_regular(ws_world.ws / "a", b"x", create_parents=False)
    fsio.write_regular(fsio.DEV_NULL, b"discarded", create_parents=False)


def test_walk_rejects_a_relative_path(ws_world: World) -> None:
    with pytest.raises(fsio.FsError), fsio.walk_dir(Path("relative")):
        pass


def test_os_detail_drops_the_path() -> None:
    assert fsio.os_detail(FileNotFoundError(2, "No such file or directory", "/x")) == (
        "No such file or directory"
    )
