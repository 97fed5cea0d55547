"""No test may rewrite the repository's own corpus with ``record`` (transcripts.md TX-RECORD-06).

CI runs the test suite, so a test that handed ``record --write`` the real ``fixtures/`` instead
of a copy in tmp_path would be CI rewriting goldens behind review. ``write_scenario`` is the one
place where ``record`` replaces a golden; `forbid_corpus_writes` makes it fail the test before
anything is written there.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from zeroclaw_ref.conformance.tools import record as record_module

REPO_CORPUS = Path(__file__).resolve().parents[2] / "fixtures"
REFUSAL = "TX-RECORD-06: a test ran record --write over the repository's corpus"


def inside_repo_corpus(path: Path) -> bool:
    return path.resolve().is_relative_to(REPO_CORPUS.resolve())


def forbid_corpus_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    write = record_module.write_scenario

    def guarded(path: Path, old_text: str, new_text: str) -> None:
        if inside_repo_corpus(path):
            pytest.fail(f"{REFUSAL}: {path}")
        write(path, old_text, new_text)

    monkeypatch.setattr(record_module, "write_scenario", guarded)
