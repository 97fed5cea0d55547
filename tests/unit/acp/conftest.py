"""The in-process server harness shared by the ACP unit tests (tests/helpers/acp_harness.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.acp_harness import MakeHarness, harness_factory


@pytest.fixture
def make_harness(tmp_path: Path) -> Iterator[MakeHarness]:
    with harness_factory(tmp_path) as make:
        yield make
