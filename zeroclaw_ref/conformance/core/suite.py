"""Selecting scenarios, running them, and judging the run (transcripts.md §9, §10).

Implements selection ([TX-RUN-02], [TX-RUN-03], [TX-PROFILE-03]), the
expected-failures ratchet ([TX-XFAIL-01] to [TX-XFAIL-05]) and parallel runs
([TX-FLOW-09]). Outcomes, the exit status and the documents are verdicts.py's.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from .jsonlex import JSON, JsonError, loads
from .runner import RunOptions, ScenarioResult, run_scenario
from .verdicts import EXPECTED_FAIL, FAIL, PASS, UNEXPECTED_PASS, RunOutcome

__all__ = ["RunOutcome", "SelectionError", "apply_expected_failures", "discover", "run_many"]

NOT_SCENARIO_DIRS = ("_support", "expected-failures", "schema")
_XFAIL_LINE = re.compile(r"(?P<id>\S+)\s+#\s*(?P<reason>\S.*)")


class SelectionError(Exception):
    """A positional argument or input file that cannot be used (exit status 2)."""


def contract_version(fixtures: Path) -> str:
    """The MAJOR.MINOR of fixtures/VERSION ([TX-VERSION-01]); "unknown" when unreadable."""
    try:
        return (fixtures / "VERSION").read_text(encoding="utf-8").strip() or "unknown"
    except OSError:
        return "unknown"


def is_scenario_path(path: Path, fixtures: Path) -> bool:
    """[TX-FORMAT-06] `.jsonl` files outside _support/ (and the other non-scenario dirs)."""
    try:
        rel = path.resolve().relative_to(fixtures.resolve())
    except ValueError:
        return path.suffix == ".jsonl"
    return path.suffix == ".jsonl" and rel.parts[0] not in NOT_SCENARIO_DIRS


def discover(fixtures: Path, selection: Sequence[Path] = ()) -> list[Path]:
    """Scenario files named by ``selection`` (files or directories), or the whole corpus.

    Raises:
        SelectionError: a selected path does not exist.
    """
    found: list[Path] = []
    for item in selection or [fixtures]:
        if item.is_file():
            found.append(item)
        elif item.is_dir():
            found += [p for p in sorted(item.rglob("*.jsonl")) if is_scenario_path(p, fixtures)]
        else:
            raise SelectionError(f"{item}: no such file or directory")
    return sorted(set(found), key=lambda p: p.as_posix())


def header_of(path: Path) -> dict[str, JSON]:
    """The first line of a scenario as an object, or {} when it cannot be read."""
    try:
        with path.open(encoding="utf-8") as handle:
            value = loads(handle.readline())
    except (OSError, UnicodeDecodeError, JsonError):
        return {}
    return value if isinstance(value, dict) else {}


def _str_list(value: JSON) -> set[str]:
    return {v for v in value if isinstance(v, str)} if isinstance(value, list) else set()


def select(
    paths: Sequence[Path],
    levels: Sequence[str],
    tags: Sequence[str],
    skip_tags: Sequence[str],
    profiles: Sequence[str] | None = None,
) -> list[Path]:
    """[TX-RUN-03] filter by level and tags, and [TX-PROFILE-03] by profile, from each header."""
    kept: list[Path] = []
    for path in paths:
        header = header_of(path)
        level = header.get("level", "required")
        marks = _str_list(header.get("tags"))
        if isinstance(level, str) and level in LEVELS_KNOWN and level not in levels:
            continue
        if tags and not marks & set(tags):
            continue
        if marks & set(skip_tags):
            continue
        if profiles is not None and header.get("profile") not in profiles:
            continue
        kept.append(path)
    return kept


LEVELS_KNOWN = ("required", "optional", "informational")


def read_expected_failures(path: Path) -> dict[str, str]:
    """[TX-XFAIL-01] `<id>  # <reason>` lines; blank and `#` lines are skipped.

    Raises:
        SelectionError: the file is unreadable or a line is malformed.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SelectionError(f"{path}: cannot read expected failures: {exc}") from exc
    entries: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _XFAIL_LINE.fullmatch(line.strip())
        if m is None:
            raise SelectionError(f"{path}:{number}: TX-XFAIL-01: expected '<id>  # <reason>'")
        entries[m.group("id")] = m.group("reason")
    return entries


def apply_expected_failures(
    results: list[ScenarioResult], listed: dict[str, str], corpus_ids: set[str]
) -> tuple[list[ScenarioResult], list[str]]:
    """Listed ids: fail becomes expected-fail, pass unexpected-pass ([TX-XFAIL-02] to
    [TX-XFAIL-05]); entries naming no scenario are stale."""
    out: list[ScenarioResult] = []
    for r in results:
        if r.scenario in listed and r.status == FAIL:
            r = dataclasses.replace(r, status=EXPECTED_FAIL, detail=listed[r.scenario])
        elif r.scenario in listed and r.status == PASS:
            r = dataclasses.replace(r, status=UNEXPECTED_PASS)
        out.append(r)
    stale = sorted(set(listed) - corpus_ids)
    return out, stale


def run_many(
    paths: Sequence[Path],
    fixtures: Path,
    options: RunOptions,
    jobs: int = 1,
    on_result: Callable[[int, ScenarioResult], None] | None = None,
) -> list[ScenarioResult]:
    """Run scenarios, ``jobs`` at a time ([TX-FLOW-09]); results keep the input order.

    ``on_result(done, result)`` is called in the calling thread as each one
    finishes, so verdicts can be printed as they come ([TX-VERDICT-02]).
    """
    results: dict[int, ScenarioResult] = {}
    pool = ThreadPoolExecutor(max_workers=max(jobs, 1))
    try:
        futures = {pool.submit(run_scenario, p, fixtures, options): i for i, p in enumerate(paths)}
        for future in as_completed(futures):
            results[futures[future]] = result = future.result()
            if on_result is not None:
                on_result(len(results), result)
    finally:
        # on an interruption (a closed stdout, ^C) the queued scenarios never start
        pool.shutdown(wait=True, cancel_futures=True)
    return [results[i] for i in range(len(paths))]
