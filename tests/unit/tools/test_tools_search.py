"""`glob_search` and `content_search` (policy.md §4.4 POL-FILE-06..08)."""

from __future__ import annotations

import glob
import re
from pathlib import Path

import pytest
from fs_world import World, run

from zeroclaw_ref.core.jsontypes import JSON
from zeroclaw_ref.tools.search import ContentSearch, GlobSearch

TREE = {
    "a.py": "print('a')\n",
    "notes.txt": "alpha\nbeta\ngamma\nbeta2\n",
    ".hidden.py": "x\n",
    "src/b.py": "beta\n",
    "src/deep/c.py": "c\n",
    "src/.h/d.py": "d\n",
    "src/.e.py": "e\n",
}


def plant(ws: Path) -> None:
    for rel, text in TREE.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    (ws / "emptydir").mkdir()


GLOBS = ["*.py", "**/*.py", "src/*", "src/**", "**", "**/*", ".*.py", "src/.*", "*/*.py",
         "src/**/*.py", "src/deep/c.py", "**/deep/*", "*.txt", "[an]*", "?.py", "src//b.py",
         "./a.py", "src/**/", "**/.h/*", "**/**/*.py"]  # fmt: skip


@pytest.mark.req("POL-FILE-06")
@pytest.mark.parametrize("pattern", GLOBS)
def test_glob_agrees_with_python_glob_on_a_link_free_tree(ws_world: World, pattern: str) -> None:
    ws = ws_world.ws
    plant(ws)
    expected = sorted(
        {
            Path(p).as_posix()
            for p in glob.glob(pattern, root_dir=ws, recursive=True)  # noqa: PTH207 - the oracle
            if (ws / p).is_file()
        }
    )
    result = run(GlobSearch(ws_world.security), {"pattern": pattern})
    none = f"No files matching pattern '{pattern}' found in workspace."
    assert result.output == ("\n".join(expected) if expected else none)


GLOB_TEXTS: list[tuple[JSON, str | None, str | None]] = [
    ({"pattern": "*.py"}, "a.py", None),
    ({"pattern": "**/*.py"}, "a.py\nsrc/b.py\nsrc/deep/c.py", None),
    ({"pattern": "nomatch*"}, "No files matching pattern 'nomatch*' found in workspace.", None),
    ({"pattern": "/etc/*"}, None, "Absolute paths are not allowed. Use a relative glob pattern."),
    ({"pattern": "\\x\\*"}, None, "Absolute paths are not allowed. Use a relative glob pattern."),
    ({"pattern": "../*"}, None, "Path not allowed by security policy: ../*"),
    ({"pattern": "src/../a.py"}, None, "Path not allowed by security policy: src/../a.py"),
    ({"pattern": 3}, None, "Missing 'pattern' parameter"),
    ({}, None, "Missing 'pattern' parameter"),
]


@pytest.mark.req("POL-FILE-06", "POL-TOOL-04")
@pytest.mark.parametrize(("arguments", "output", "error"), GLOB_TEXTS)
def test_glob_texts(
    ws_world: World, arguments: JSON, output: str | None, error: str | None
) -> None:
    plant(ws_world.ws)
    result = run(GlobSearch(ws_world.security), arguments)
    assert (result.output or None, result.error) == (output, error)


@pytest.mark.req("POL-FILE-06")
def test_glob_caps_the_list_at_1000(ws_world: World) -> None:
    for i in range(1001):
        (ws_world.ws / f"f{i:04d}.txt").write_text("")
    result = run(GlobSearch(ws_world.security), {"pattern": "*.txt"})
    lines = result.output.split("\n")
    assert lines[:1000] == [f"f{i:04d}.txt" for i in range(1000)]
    assert lines[1000:] == ["[Results truncated: showing first 1000 of 1001 matches]"]


@pytest.mark.req("POL-FILE-06", "ACP-SEC-09")
def test_glob_lists_a_link_to_a_workspace_file_but_never_descends_a_linked_directory(
    ws_world: World,
) -> None:
    ws = ws_world.ws
    plant(ws)
    (ws / "inner.py").symlink_to(ws / "a.py")
    (ws / "srclink").symlink_to(ws / "src")
    (ws / "loop").symlink_to(ws)
    result = run(GlobSearch(ws_world.security), {"pattern": "**/*.py"})
    assert result.output == "a.py\ninner.py\nsrc/b.py\nsrc/deep/c.py"


# ------------------------------------------------------------------------------ content_search

SEARCHES: list[tuple[dict[str, JSON], str]] = [
    ({}, "notes.txt:2:beta\nnotes.txt:4:beta2\nsrc/b.py:1:beta"),
    ({"output_mode": "files_with_matches"}, "notes.txt\nsrc/b.py"),
    ({"output_mode": "count"}, "notes.txt:2\nsrc/b.py:1"),
    ({"pattern": "BETA"}, "No matches found."),
    (
        {"pattern": "BETA", "case_sensitive": False},
        "notes.txt:2:beta\nnotes.txt:4:beta2\nsrc/b.py:1:beta",
    ),
    ({"pattern": "BETA", "case_sensitive": True}, "No matches found."),
    ({"include": "*.py"}, "src/b.py:1:beta"),
    ({"include": "notes.*"}, "notes.txt:2:beta\nnotes.txt:4:beta2"),
    ({"include": "src/*"}, "src/b.py:1:beta"),
    ({"path": "src"}, "src/b.py:1:beta"),
    ({"path": "notes.txt", "output_mode": "count"}, "notes.txt:2"),
    (
        {"context_before": 1},
        "notes.txt-1-alpha\nnotes.txt:2:beta\nnotes.txt-3-gamma\nnotes.txt:4:beta2\nsrc/b.py:1:beta",
    ),
    ({"pattern": "alpha", "context_after": 1}, "notes.txt:1:alpha\nnotes.txt-2-beta"),
    (
        {"pattern": "gamma", "context_before": 5, "context_after": 5},
        "notes.txt-1-alpha\nnotes.txt-2-beta\nnotes.txt:3:gamma\nnotes.txt-4-beta2",
    ),
    (
        {"pattern": "^b", "context_after": -2},
        "notes.txt:2:beta\nnotes.txt:4:beta2\nsrc/b.py:1:beta",
    ),
    ({"pattern": "nothing"}, "No matches found."),
    ({"path": "missing"}, "No matches found."),
]


@pytest.mark.req("POL-FILE-07", "POL-FILE-08")
@pytest.mark.parametrize(("extra", "output"), SEARCHES)
def test_content_search_outputs(ws_world: World, extra: dict[str, JSON], output: str) -> None:
    ws = ws_world.ws
    plant(ws)
    (ws / "bin.dat").write_bytes(b"beta\x00beta\n")  # a NUL in the first 8192 bytes: skipped
    arguments: dict[str, JSON] = {"pattern": "beta", **extra}
    result = run(ContentSearch(ws_world.security), arguments)
    assert result.success
    assert result.output == output


def _regex_detail(pattern: str) -> str:
    try:
        re.compile(pattern)
    except re.error as exc:
        return str(exc)
    raise AssertionError("compiled")


@pytest.mark.req("POL-FILE-08", "POL-TOOL-04")
def test_content_search_failures(ws_world: World) -> None:
    tool = ContentSearch(ws_world.security)
    cases: dict[str, JSON] = {
        f"Invalid regex pattern: {_regex_detail('(')}": {"pattern": "("},
        "Missing 'pattern' parameter": {"path": "."},
        "Invalid output_mode 'lines' (expected 'content', 'files_with_matches' or 'count')": {
            "pattern": "x",
            "output_mode": "lines",
        },
        "Path not allowed by security policy: ../x": {"pattern": "x", "path": "../x"},
    }
    for text, arguments in cases.items():
        assert run(tool, arguments).error == text


@pytest.mark.req("POL-FILE-07")
def test_content_search_skips_files_over_10_mib(ws_world: World) -> None:
    big = ws_world.ws / "big.txt"
    big.write_bytes(b"needle\n" + b"x" * 10_485_760)
    (ws_world.ws / "small.txt").write_text("needle\n")
    result = run(ContentSearch(ws_world.security), {"pattern": "needle"})
    assert result.output == "small.txt:1:needle"


@pytest.mark.req("POL-FILE-08")
def test_content_search_stops_after_1000_lines(ws_world: World) -> None:
    (ws_world.ws / "many.txt").write_text("hit\n" * 1500)
    result = run(ContentSearch(ws_world.security), {"pattern": "hit"})
    lines = result.output.split("\n")
    assert lines == [f"many.txt:{i}:hit" for i in range(1, 1001)]


@pytest.mark.req("POL-FILE-08")
def test_content_search_caps_output_at_one_mebibyte(ws_world: World) -> None:
    (ws_world.ws / "wide.txt").write_text(("w" * 4000 + "\n") * 600)
    result = run(ContentSearch(ws_world.security), {"pattern": "w"})
    size = len(result.output.encode())
    assert size <= 1_048_576
    assert size > 1_048_576 - 5000  # filled up to the cap, one whole line at a time
    assert all(line.startswith("wide.txt:") for line in result.output.split("\n"))


@pytest.mark.req("POL-FILE-07", "ACP-SEC-09")
def test_content_search_reads_a_link_to_a_workspace_file_under_the_link_name(
    ws_world: World,
) -> None:
    ws = ws_world.ws
    (ws / "real.txt").write_text("needle\n")
    (ws / "alias.txt").symlink_to(ws / "real.txt")
    (ws / "loop").symlink_to(ws)
    result = run(ContentSearch(ws_world.security), {"pattern": "needle"})
    assert result.output == "alias.txt:1:needle\nreal.txt:1:needle"


def test_search_tool_classes(ws_world: World) -> None:
    tools = [GlobSearch(ws_world.security), ContentSearch(ws_world.security)]
    assert [(t.name, t.act, t.parameters["required"]) for t in tools] == [
        ("glob_search", False, ["pattern"]),
        ("content_search", False, ["pattern"]),
    ]
