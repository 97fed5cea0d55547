"""Selecting scenarios, running them, and judging the run (transcripts.md §9, §10).

Implements selection ([TX-RUN-02], [TX-RUN-03]), the expected-failures ratchet
([TX-XFAIL-01] to [TX-XFAIL-05]), parallel runs ([TX-FLOW-09]), the exit status
([TX-RUN-07]) and the ``--json`` document ([TX-RUN-09]).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from .jsonlex import JSON, JsonError, loads
from .runner import RunOptions, ScenarioResult, run_scenario

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
    paths: Sequence[Path], levels: Sequence[str], tags: Sequence[str], skip_tags: Sequence[str]
) -> list[Path]:
    """[TX-RUN-03] filter by level and tags, read from each header."""
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


@dataclass(slots=True)
class RunOutcome:
    """All results of a run, plus problems that affect the exit status."""

    results: list[ScenarioResult]
    stale: list[str] = field(default_factory=list)
    strict: bool = False

    def exit_status(self) -> int:
        """[TX-RUN-07] 2 for errors, 1 for failures, xpass or stale entries, else 0."""
        if any(r.status == "error" for r in self.results):
            return 2
        for r in self.results:
            if r.status == "xpass":
                return 1
            if r.status == "fail" and (
                r.level == "required" or (self.strict and r.level == "optional")
            ):
                return 1
        return 1 if self.stale else 0


def apply_expected_failures(
    results: list[ScenarioResult], listed: dict[str, str], corpus_ids: set[str]
) -> tuple[list[ScenarioResult], list[str]]:
    """Turn fail/pass into xfail/xpass for listed ids; report stale entries ([TX-XFAIL-04])."""
    out: list[ScenarioResult] = []
    for r in results:
        if r.scenario in listed and r.status in ("fail", "pass"):
            status = "xfail" if r.status == "fail" else "xpass"
            r = ScenarioResult(
                r.scenario, r.level, status, r.reason, r.line, r.pointer, r.report, r.tags
            )
        out.append(r)
    stale = sorted(set(listed) - corpus_ids)
    return out, stale


def run_many(
    paths: Sequence[Path], fixtures: Path, options: RunOptions, jobs: int = 1
) -> list[ScenarioResult]:
    """Run scenarios, in parallel when ``jobs`` > 1; results keep the input order."""
    if jobs <= 1:
        return [run_scenario(p, fixtures, options) for p in paths]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(lambda p: run_scenario(p, fixtures, options), paths))


def json_document(contract: str, agent: str, outcome: RunOutcome, summary: dict[str, JSON]) -> str:
    """[TX-RUN-09] the machine-readable result."""
    results: list[JSON] = []
    for r in outcome.results:
        item: dict[str, JSON] = {"scenario": r.scenario, "level": r.level, "status": r.status}
        if r.reason is not None:
            item["reason"] = r.reason
        if r.line is not None:
            item["line"] = r.line
        if r.pointer is not None:
            item["pointer"] = r.pointer
        results.append(item)
    doc: dict[str, JSON] = {
        "contract": contract,
        "agent": agent,
        "results": results,
        "summary": summary,
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def summary_counts(outcome: RunOutcome) -> dict[str, JSON]:
    counts: dict[str, JSON] = {}
    for r in outcome.results:
        per = counts.setdefault(r.status, {})
        assert isinstance(per, dict)
        previous = per.get(r.level, 0)
        per[r.level] = (previous if isinstance(previous, int) else 0) + 1
    counts["stale_expected_failures"] = list[JSON](outcome.stale)
    counts["exit_status"] = outcome.exit_status()
    return counts
