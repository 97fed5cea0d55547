"""The wheel carries the corpus: installed in a fresh venv, the oracle runs from any directory.

Slow-ish (a wheel build and a venv, about 30 s): marked ``slow``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD_INPUTS = ("setup.cfg", "pyproject.toml", "README.md", "zeroclaw_ref", "fixtures")


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=180, check=False
    )


@pytest.mark.slow
@pytest.mark.req("TX-CORPUS-01", "TX-CORPUS-02")
def test_the_installed_wheel_lists_and_runs_the_corpus_from_an_unrelated_directory(
    tmp_path: Path,
) -> None:
    # Build from a copy of the sources, so the checkout gets no build/ or egg-info.
    source = tmp_path / "source"
    source.mkdir()
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for name in BUILD_INPUTS:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, source / name, ignore=skip)
        else:
            shutil.copy2(REPO / name, source / name)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    wheels = tmp_path / "wheels"
    built = _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), "."],
        source,
        env,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = wheels.glob("zeroclaw_ref-*.whl")
    venv = tmp_path / "venv"
    made = _run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], tmp_path, env)
    assert made.returncode == 0, made.stderr
    python = str(venv / "bin" / "python")
    installed = _run([python, "-m", "pip", "install", "-q", "--no-deps", str(wheel)], tmp_path, env)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    where = _run(
        [python, "-c", "from zeroclaw_ref import conformance; print(conformance.__file__)"],
        elsewhere,
        env,
    )
    assert where.stdout.startswith(str(venv)), where.stdout + where.stderr  # not the checkout
    oracle = [python, "-m", "zeroclaw_ref.conformance"]
    listed = _run([*oracle, "list"], elsewhere, env)
    assert listed.returncode == 0, listed.stderr
    ids = [line.split()[0] for line in listed.stdout.splitlines()]
    assert "acp/startup/invalid-toml" in ids and "mcp/handshake/stdio-initialize-then-list" in ids
    assert len(ids) == len(list((REPO / "fixtures").glob("*/*/*.jsonl")))
    ran = _run([*oracle, "run", "acp/startup/invalid-toml", "--json", "run.json"], elsewhere, env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "] pass acp/startup/invalid-toml" in ran.stdout
    # --fixtures still selects another copy: here, the checkout's
    other = _run([*oracle, "list", "--fixtures", str(REPO / "fixtures")], elsewhere, env)
    assert other.returncode == 0 and other.stdout == listed.stdout, other.stderr
