"""The manifest claims every requirement ID a test cites: `tools/req_coverage.py` stays clean."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.req("TX-COVER-03")
def test_every_test_citation_is_in_the_manifest() -> None:
    run = subprocess.run(
        [sys.executable, str(REPO / "tools" / "req_coverage.py")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    problems = [line for line in run.stdout.splitlines() if line.startswith("problem:")]
    assert problems == [], "\n".join(problems)
    assert run.returncode == 0, run.stderr
