"""Every golden transcript passes against the reference agent (test id = scenario id)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from zeroclaw_ref.conformance.runner import RunOptions, run_scenario
from zeroclaw_ref.conformance.suite import discover
from zeroclaw_ref.conformance.transcript import scenario_id

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
SCENARIOS = discover(FIXTURES) if FIXTURES.is_dir() else []


def _options() -> RunOptions:
    # The reference is run from the checkout, so the IUT needs the repository on its path.
    inherited = os.environ.get("PYTHONPATH")
    path = str(REPO) + (os.pathsep + inherited if inherited else "")
    return RunOptions(env=(("PYTHONPATH", path),))


@pytest.mark.parametrize(
    "path", SCENARIOS, ids=[scenario_id(p, FIXTURES) or p.name for p in SCENARIOS]
)
def test_scenario_passes_against_the_reference(path: Path) -> None:
    result = run_scenario(path, FIXTURES, _options())
    assert result.status == "pass", result.report
