"""CI never rewrites goldens: no CI step runs ``record --write`` (transcripts.md TX-RECORD-06).

CI is `.ci/run`: shell steps, then the test suite. The shell steps are read as the shell reads
them (continued lines joined, comments dropped, commands split at `;`, `&&`, `||`, `|` and
groupings), and every oracle command among them is parsed by the oracle's own argument parser,
so whatever spelling the oracle would take as ``record --write`` is caught, abbreviations
(argparse accepts `--wr`) included. The test suite is covered by the guard this directory's
conftest.py installs (tests/helpers/record_guard.py): it fails any test that makes ``record``
replace a file of the repository's own corpus. The rule's other half, review and the
changelog entry, is a human step; no test here claims it.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.record_guard import REFUSAL, REPO_CORPUS, inside_repo_corpus
from zeroclaw_ref.conformance.__main__ import build_parser

REPO = Path(__file__).resolve().parents[3]
ORACLE_MODULES = {"zeroclaw_ref.conformance", "zeroclaw_ref.conformance.__main__"}
SEPARATORS = {";", "&&", "||", "|", "&", "(", ")", "{", "}", ";;"}


def shell_commands(text: str) -> list[list[str]]:
    """The simple commands of a shell script, each as its words."""
    commands: list[list[str]] = []
    for line in text.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = "#"
        try:
            words = list(lexer)
        except ValueError:  # a quote left open on this line: keep the plain words
            words = line.split()
        current: list[str] = []
        for word in [*words, ";"]:
            if word in SEPARATORS:
                if current:
                    commands.append(current)
                current = []
            else:
                current.append(word)
    return commands


def oracle_arguments(words: list[str]) -> list[str] | None:
    """The arguments given to the oracle when this command runs it (`python -m …`), else None."""
    for index in range(len(words) - 1):
        if words[index] == "-m" and words[index + 1] in ORACLE_MODULES:
            return words[index + 2 :]
    return None


def records_with_write(arguments: list[str]) -> bool:
    """Whether the oracle takes these arguments as ``record`` in write mode."""
    try:
        parsed, _ = build_parser().parse_known_args(arguments)
    except SystemExit:  # the oracle would refuse the command line: nothing is recorded
        return False
    return parsed.command == "record" and bool(parsed.write)


def recording_steps(text: str) -> list[str]:
    found = []
    for words in shell_commands(text):
        arguments = oracle_arguments(words)
        if arguments is not None and records_with_write(arguments):
            found.append(shlex.join(words))
    return found


@pytest.mark.req("TX-RECORD-06")
def test_no_ci_step_runs_record_in_write_mode() -> None:
    scripts = [path for path in sorted((REPO / ".ci").rglob("*")) if path.is_file()]
    assert REPO / ".ci" / "run" in scripts
    for path in scripts:
        text = path.read_text(encoding="utf-8", errors="replace")
        assert recording_steps(text) == [], path
    # The check reads real steps: CI's own oracle commands are found and are not record.
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    oracle = [oracle_arguments(words) for words in shell_commands(ci)]
    assert ["lint"] in oracle


@pytest.mark.req("TX-RECORD-06")
@pytest.mark.parametrize(
    ("step", "writes"),
    [
        ("python3 -m zeroclaw_ref.conformance record --write fixtures/acp", True),
        ("python3 -m zeroclaw_ref.conformance \\\n  record --write", True),  # a continued line
        ("python3 -m zeroclaw_ref.conformance record --wr fixtures", True),  # argparse prefix
        ("python3 -m zeroclaw_ref.conformance record fixtures/acp --write", True),
        ("( cd x && python -m zeroclaw_ref.conformance.__main__ record --write )", True),
        ("lint; python3 -m zeroclaw_ref.conformance record --write", True),
        ("python3 -m zeroclaw_ref.conformance record fixtures/acp", False),  # a diff only
        ("python3 -m zeroclaw_ref.conformance lint  # then record --write by hand", False),
        ("echo 'python3 -m zeroclaw_ref.conformance record --write'", False),
        ("python3 -m zeroclaw_ref.conformance run --write", False),  # refused by the oracle
    ],
)
def test_the_check_reads_steps_as_the_shell_and_the_oracle_do(step: str, writes: bool) -> None:
    assert bool(recording_steps(step)) is writes


# A test that forgot the copy: it hands record the repository's corpus. The agent run is
# replaced by a ready outcome whose draft differs, and mkstemp refuses, so even without the
# guard nothing would be written; the guard must fail the test first.
FORGETFUL_TEST = """
import tempfile
from pathlib import Path

from zeroclaw_ref.conformance.__main__ import main
from zeroclaw_ref.conformance.tools import record as record_module

GOLDEN = Path({golden!r})


def test_forgot_the_copy(monkeypatch):
    def drafted(path, fixtures, options):
        text = GOLDEN.read_text(encoding="utf-8")
        return record_module.Outcome("x", "x", old_text=text, new_text=text + "\\n")

    def refuse(*args, **kwargs):
        raise OSError("this test never writes")

    monkeypatch.setattr(record_module, "record_scenario", drafted)
    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    main(["record", "--write", "--fixtures", {corpus!r}, str(GOLDEN)])
"""


@pytest.mark.req("TX-RECORD-06")
def test_a_test_that_records_over_the_repository_corpus_fails(tmp_path: Path) -> None:
    """The guard seen from outside, in a pytest process of its own with this directory's
    conftest: the forgetful test fails naming the rule, and the golden is untouched."""
    golden = REPO_CORPUS / "acp" / "permission" / "allow-once-runs-the-tool.jsonl"
    shutil.copy(Path(__file__).with_name("conftest.py"), tmp_path / "conftest.py")
    test = FORGETFUL_TEST.format(golden=str(golden), corpus=str(REPO_CORPUS))
    (tmp_path / "test_forgetful.py").write_text(test, encoding="utf-8")
    before = golden.read_bytes()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--rootdir", str(tmp_path),
         str(tmp_path)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=tmp_path,
        timeout=120,
        check=False,
    )  # fmt: skip
    assert golden.read_bytes() == before
    assert done.returncode == 1, done.stdout + done.stderr
    assert REFUSAL in done.stdout, done.stdout


@pytest.mark.req("TX-RECORD-06")
def test_the_guard_lets_copies_be_written(tmp_path: Path) -> None:
    assert not inside_repo_corpus(tmp_path / "fixtures" / "acp" / "x.jsonl")
    assert inside_repo_corpus(REPO_CORPUS / "acp" / ".." / "mcp" / "x.jsonl")
