"""Every oracle test runs with the corpus guard of tests/helpers/record_guard.py (TX-RECORD-06)."""

from __future__ import annotations

import pytest

from tests.helpers.record_guard import forbid_corpus_writes


@pytest.fixture(autouse=True)
def _the_repository_corpus_is_never_rewritten(monkeypatch: pytest.MonkeyPatch) -> None:
    forbid_corpus_writes(monkeypatch)
