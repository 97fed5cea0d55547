"""One run of each golden transcript against the reference, shared by the tests that judge it.

`test_corpus.py` asks for a pass; `test_schema_valid.py` asks that no message our agent sent was
refused by the official schema. Both read the same run, so the corpus runs once per session.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from zeroclaw_ref.conformance.core.runner import RunOptions, ScenarioResult, run_scenario
from zeroclaw_ref.conformance.core.suite import discover
from zeroclaw_ref.conformance.core.transcript import scenario_id

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
SCENARIOS = discover(FIXTURES) if FIXTURES.is_dir() else []
IDS = [scenario_id(p, FIXTURES) or p.name for p in SCENARIOS]


def reference_options() -> RunOptions:
    # The reference is run from the checkout, so the IUT needs the repository on its path.
    inherited = os.environ.get("PYTHONPATH")
    path = str(REPO) + (os.pathsep + inherited if inherited else "")
    return RunOptions(env=(("PYTHONPATH", path),))


@functools.cache
def corpus_result(path: Path) -> ScenarioResult:
    """The verdict of one scenario against the reference, run at most once per session."""
    return run_scenario(path, FIXTURES, reference_options())
