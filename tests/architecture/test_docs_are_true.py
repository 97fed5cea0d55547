"""The READMEs say only what is true of the tree they describe (issue 17).

In the manner of sqlite-utils' documentation tests: the commands the READMEs show are parsed
by the real parsers, the paths and scenario ids they name exist, every package of
`zeroclaw_ref/` has its row in the package map, every command of the command line is shown,
and "Trying it by hand" begins as a client must, with `initialize`. Each check is a function of
the document's text, so the tests at the end can show that a broken document is caught.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest

from zeroclaw_ref.cli.gateway_cmd import parse_bridge_args
from zeroclaw_ref.cli.main import _parser as cli_parser
from zeroclaw_ref.conformance.__main__ import build_parser as conformance_parser

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
FIXTURES = ROOT / "fixtures"
FIXTURES_README = FIXTURES / "README.md"
DOCS = (README, FIXTURES_README)

# A backticked token is taken for a path when it ends in one of these, ends in `/`, or starts
# with a top-level folder of the repository.
_SUFFIXES = (".py", ".md", ".json", ".jsonl", ".txt", ".toml", ".cfg", ".html", ".sql", ".mjs")
_TOP = ("zeroclaw_ref", "tests", "fixtures", "bench", "tools", ".ci")
_PATHLIKE = re.compile(r"^[\w.\-/]+$")
_SCENARIO_ID = re.compile(r"^(acp|mcp)/[\w-]+(/[\w-]+)?$")
_PROFILES = {"acp", "client", "zeroclaw", "zeroclaw-mcp"}


# --- reading the documents -------------------------------------------------------------------


def code_blocks(text: str) -> list[tuple[str, str]]:
    """Every fenced block as (language, body)."""
    return [(m[1], m[2]) for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.M | re.S)]


def prose(text: str) -> str:
    """The text outside fenced blocks."""
    return re.sub(r"^```\w*\n.*?^```", "", text, flags=re.M | re.S)


def section(text: str, title: str) -> str:
    """The body of the `## title` section, up to the next heading of level two."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match is not None, f"no section '## {title}'"
    return match[1]


def shell_commands(text: str) -> list[list[str]]:
    """The commands of the `sh` blocks, continuation lines joined, `&&` chains split."""
    commands: list[list[str]] = []
    for language, body in code_blocks(text):
        if language != "sh":
            continue
        for line in body.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            while words:
                cut = words.index("&&") if "&&" in words else len(words)
                commands.append(words[:cut])
                words = words[cut + 1 :]
    return commands


def inline_tokens(text: str) -> list[str]:
    return re.findall(r"`([^`\n]+)`", prose(text))


# --- the checks; each returns what is wrong ---------------------------------------------------


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace | str:
    """The parsed arguments, or argparse's complaint."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            return parser.parse_args(argv)
        except SystemExit:
            return err.getvalue().strip().splitlines()[-1] if err.getvalue() else "exit"


def scenario_exists(name: str) -> bool:
    """An id (`acp/cancel/x`), an area (`acp/cancel`) or a path below the repository."""
    return any(p.exists() for p in (FIXTURES / f"{name}.jsonl", FIXTURES / name, ROOT / name))


def command_problems(argv: list[str]) -> list[str]:
    """What is wrong with one shown command (nothing for commands of other programs)."""
    shown = " ".join(argv)
    if argv[:1] not in (["python"], ["python3"]):
        return []
    if argv[1:2] != ["-m"]:
        # `python3 tools/modern_corpus.py`: the script must exist
        return [] if (ROOT / argv[1]).is_file() else [f"{shown}: no file {argv[1]}"]
    module, rest = argv[2], argv[3:]
    if module == "zeroclaw_ref.conformance":
        args = _parse(conformance_parser(), rest)
        if isinstance(args, str):
            return [f"{shown}: {args}"]
        names = [str(p) for p in getattr(args, "paths", [])]
        scenario = getattr(args, "scenario", None)  # one id, or a list of them for serve
        names += [str(s) for s in (scenario if isinstance(scenario, list) else [scenario]) if s]
        return [f"{shown}: no scenario {n}" for n in names if not scenario_exists(n)]
    if module == "zeroclaw_ref":
        if "acp-bridge" in rest:
            at = rest.index("acp-bridge")
            parsed = parse_bridge_args(rest[:at] + rest[at + 1 :])
            return [f"{shown}: {parsed}"] if isinstance(parsed, str) else []
        args = _parse(cli_parser(), rest)
        return [f"{shown}: {args}"] if isinstance(args, str) else []
    return []  # pip, pytest: other programs' command lines


def path_problems(text: str, doc_dir: Path) -> list[str]:
    """Backticked paths that do not exist (below the repository, `zeroclaw_ref/` or the doc)."""
    problems: list[str] = []
    for token in inline_tokens(text):
        if not _PATHLIKE.match(token) or "/" not in token or token.startswith(("/", "..")):
            continue
        if _SCENARIO_ID.match(token):
            if not scenario_exists(token):
                problems.append(f"no scenario or area {token}")
            continue
        pathlike = token.endswith(_SUFFIXES) or token.endswith("/")
        if not pathlike and token.split("/")[0] not in _TOP:
            continue  # a method name such as session/update
        bases = (ROOT, ROOT / "zeroclaw_ref", doc_dir)
        if not any((base / token).exists() for base in bases):
            problems.append(f"no path {token}")
    return problems


def packages() -> list[str]:
    return sorted(p.parent.name for p in (ROOT / "zeroclaw_ref").glob("*/__init__.py"))


def map_problems(text: str) -> list[str]:
    """Packages without a row in the package map."""
    rows = [line for line in section(text, "Package map").splitlines() if line.startswith("|")]
    listed = {m for row in rows for m in re.findall(r"`zeroclaw_ref/(\w+)/`", row)}
    return [f"package {p} is not in the map" for p in packages() if p not in listed]


def _subcommands(parser: argparse.ArgumentParser) -> list[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices)
    return []


def command_list_problems(text: str, conformance_text: str) -> list[str]:
    """Commands of either command line that no `sh` block shows."""
    shown = {tuple(argv[2:4]) for argv in shell_commands(text) if argv[1:2] == ["-m"]}
    shown |= {tuple(argv[2:4]) for argv in shell_commands(conformance_text) if argv[1:2] == ["-m"]}
    wanted = [("zeroclaw_ref", c) for c in _subcommands(cli_parser())]
    wanted += [("zeroclaw_ref.conformance", c) for c in _subcommands(conformance_parser())]
    return [f"`{m} {c}` is shown nowhere" for m, c in wanted if (m, c) not in shown]


def by_hand_problems(text: str) -> list[str]:
    """The typed lines of "Trying it by hand" are JSON-RPC requests, `initialize` first."""
    blocks = [body for language, body in code_blocks(section(text, "Trying it by hand"))]
    lines = [line for body in blocks[:1] for line in body.splitlines() if line.strip()]
    if not lines:
        return ["Trying it by hand shows no input"]
    try:
        methods = [json.loads(line)["method"] for line in lines]
    except (ValueError, KeyError) as exc:
        return [f"Trying it by hand: a line is not a JSON-RPC request ({exc})"]
    return [] if methods[0] == "initialize" else [f"Trying it by hand begins with {methods[0]}"]


def folder_problems(text: str) -> list[str]:
    """The scenario folders of fixtures/README.md are the real ones, and all of them."""
    body = section(text, "Scenario folders")
    areas = {
        f"{d.parent.name}/{d.name}" for top in ("acp", "mcp") for d in FIXTURES.glob(f"{top}/*")
    }
    names = {area.split("/")[1] for area in areas}
    patterns = [t[:-1] for t in re.findall(r"`((?:acp|mcp)/[\w-]+\*)`", body)]
    problems = []
    for token in re.findall(r"`([\w/-]+)`", body):
        if token.endswith("/"):  # a folder of fixtures/
            known = (FIXTURES / token).is_dir()
        else:  # an area, by its name or as acp/<name>
            known = token in names or token in areas or token in _PROFILES or token == "serve"
        if not known:
            problems.append(f"no scenario folder {token}")
    for area in sorted(areas):
        named = area.split("/")[1] in re.findall(r"`([\w-]+)`", body) or f"`{area}`" in body
        if not named and not any(area.startswith(p) for p in patterns):
            problems.append(f"folder {area} is not described")
    return problems


def setup_problems(text: str) -> list[str]:
    """README's set-up is two commands: install and run, run the tests."""
    commands = shell_commands(section(text, "Set up"))
    joined = [" ".join(c) for c in commands]
    return [] if len(commands) == 4 and len(code_blocks(section(text, "Set up"))) == 2 else joined


# --- the tests -------------------------------------------------------------------------------


def _documents() -> Iterator[tuple[Path, str]]:
    for doc in DOCS:
        yield doc, doc.read_text(encoding="utf-8")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shown_command_parses_and_names_real_scenarios(doc: Path) -> None:
    commands = shell_commands(doc.read_text(encoding="utf-8"))
    assert commands
    assert [p for argv in commands for p in command_problems(argv)] == []


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_named_path_and_scenario_exists(doc: Path) -> None:
    assert path_problems(doc.read_text(encoding="utf-8"), doc.parent) == []


def test_every_package_has_its_row_in_the_map() -> None:
    assert map_problems(README.read_text(encoding="utf-8")) == []


def test_every_command_of_both_command_lines_is_shown() -> None:
    readme, fixtures = (text for _, text in _documents())
    assert command_list_problems(readme, fixtures) == []


def test_trying_it_by_hand_begins_with_initialize() -> None:
    assert by_hand_problems(README.read_text(encoding="utf-8")) == []


def test_the_scenario_folders_listed_are_the_real_ones() -> None:
    assert folder_problems(FIXTURES_README.read_text(encoding="utf-8")) == []


def test_set_up_stays_two_commands() -> None:
    assert setup_problems(README.read_text(encoding="utf-8")) == []


# The checks can fail: each catches the kind of slip the issue found in the READMEs.


def test_a_command_naming_a_missing_scenario_is_caught() -> None:
    argv = ["python3", "-m", "zeroclaw_ref.conformance", "show", "acp/cancel/no-such-scenario"]
    assert command_problems(argv) == [f"{' '.join(argv)}: no scenario acp/cancel/no-such-scenario"]
    assert command_problems(["python3", "-m", "zeroclaw_ref", "cron", "tomorrow"]) != []
    assert command_problems(["python3", "-m", "zeroclaw_ref.conformance", "play"]) != []
    assert command_problems(["python3", "tools/no_such_tool.py"]) != []


def test_a_missing_path_or_package_row_or_command_is_caught() -> None:
    assert path_problems("see `zeroclaw_ref/nothing/here.py`", ROOT) == [
        "no path zeroclaw_ref/nothing/here.py"
    ]
    assert path_problems("`session/update` and `acp/server.py`", ROOT) == []
    doc = "## Package map\n\n| L0 | `zeroclaw_ref/core/` | x |\n"
    assert "package mcp is not in the map" in map_problems(doc)
    assert "`zeroclaw_ref gateway` is shown nowhere" in command_list_problems("", "")


def test_a_session_before_initialize_is_caught() -> None:
    doc = (
        "## Trying it by hand\n\n```text\n"
        '{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"."}}\n```\n'
    )
    assert by_hand_problems(doc) == ["Trying it by hand begins with session/new"]


def test_a_folder_that_does_not_exist_is_caught() -> None:
    doc = "## Scenario folders\n\n- `policy/` and `config/`\n"
    problems = folder_problems(doc)
    assert "no scenario folder policy/" in problems and "no scenario folder config/" in problems
    assert "folder acp/cancel is not described" in problems
