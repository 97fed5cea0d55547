"""Outcomes of a run and how they are written: lines, summary, ``--json``, ``--junit``.

A scenario ends with one outcome ([TX-VERDICT-01]): ``pass``, ``fail``,
``not-applicable`` (a need the agent does not meet, [TX-NEEDS-04]),
``expected-fail`` and ``unexpected-pass`` (the expected-failures ratchet), or
``error`` (a transcript error). Each is printed as it finishes, with a progress
count ([TX-VERDICT-02]); the run ends with counts per outcome and per profile
([TX-VERDICT-03]). The JSON and JUnit documents list the results in scenario id
order, so two runs against the same agent write the same files
([TX-VERDICT-04], [TX-VERDICT-05]).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from .jsonlex import JSON

PASS = "pass"
FAIL = "fail"
NOT_APPLICABLE = "not-applicable"
EXPECTED_FAIL = "expected-fail"
UNEXPECTED_PASS = "unexpected-pass"
ERROR = "error"
OUTCOMES = (PASS, FAIL, NOT_APPLICABLE, EXPECTED_FAIL, UNEXPECTED_PASS, ERROR)


@dataclass(frozen=True, slots=True)
class ScenarioResult:
    """One scenario's verdict; ``report`` explains a failure or error.

    ``reason`` is the failure reason ([TX-RUN-06]) or, for ``not-applicable``,
    the missing needs; ``detail`` is the one-line message; ``line`` and
    ``pointer`` locate a failure in the scenario file and the actual message.
    """

    scenario: str
    level: str
    status: str
    reason: str | None = None
    line: int | None = None
    pointer: str | None = None
    report: str = ""
    tags: tuple[str, ...] = ()
    profile: str = "zeroclaw"
    requirements: tuple[str, ...] = ()
    detail: str = ""
    missing: tuple[str, ...] = ()


def progress_line(done: int, total: int, r: ScenarioResult) -> str:
    """[TX-VERDICT-02] ``[12/297] pass acp/cancel/...`` with the level and why, when useful."""
    width = len(str(total))
    text = f"[{done:>{width}}/{total}] {r.status} {r.scenario}"
    if r.level != "required":
        text += f"  ({r.level})"
    if r.status == NOT_APPLICABLE:
        text += f"  needs {', '.join(r.missing)}" if r.missing else f"  {r.reason}"
    elif r.status in (FAIL, EXPECTED_FAIL) and r.reason:
        where = f" at line {r.line}" if r.line else ""
        text += f"  {r.reason}{where}"
    return text


@dataclass(slots=True)
class RunOutcome:
    """All results of a run, plus problems that affect the exit status."""

    results: list[ScenarioResult]
    stale: list[str] = field(default_factory=list)
    strict: bool = False

    def exit_status(self) -> int:
        """[TX-RUN-07] 2 for errors; 1 for failures, unexpected passes or stale entries; else 0.

        ``not-applicable`` and ``expected-fail`` never fail a run ([TX-VERDICT-01]).
        """
        if any(r.status == ERROR for r in self.results):
            return 2
        for r in self.results:
            if r.status == UNEXPECTED_PASS:
                return 1
            if r.status == FAIL and (
                r.level == "required" or (self.strict and r.level == "optional")
            ):
                return 1
        return 1 if self.stale else 0


def _counts(results: Iterable[ScenarioResult]) -> dict[str, int]:
    counts = {name: 0 for name in OUTCOMES}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    return counts


def _shown(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{name} {n}" for name, n in counts.items() if n) or "nothing run"


def summary_lines(contract: str, outcome: RunOutcome) -> list[str]:
    """[TX-VERDICT-03] [TX-VERSION-01] counts per outcome, then per profile."""
    results = outcome.results
    lines = [f"contract {contract}: {len(results)} scenarios: {_shown(_counts(results))}"]
    for profile in sorted({r.profile for r in results}):
        mine = [r for r in results if r.profile == profile]
        lines.append(f"  profile {profile}: {len(mine)}: {_shown(_counts(mine))}")
    for entry in outcome.stale:
        lines.append(f"  stale expected-failures entry: {entry} (names no scenario)")
    lines.append(f"exit status {outcome.exit_status()}")
    return lines


def summary_counts(outcome: RunOutcome) -> dict[str, JSON]:
    profiles: dict[str, JSON] = {}
    for profile in sorted({r.profile for r in outcome.results}):
        mine = [r for r in outcome.results if r.profile == profile]
        profiles[profile] = dict[str, JSON](_counts(mine))
    return {
        "total": len(outcome.results),
        "outcomes": dict[str, JSON](_counts(outcome.results)),
        "profiles": profiles,
        "stale_expected_failures": list[JSON](outcome.stale),
        "exit_status": outcome.exit_status(),
    }


def _record(r: ScenarioResult) -> dict[str, JSON]:
    item: dict[str, JSON] = {
        "id": r.scenario,
        "profile": r.profile,
        "level": r.level,
        "outcome": r.status,
        "requirements": list[JSON](r.requirements),
        "reason": r.reason,
    }
    if r.detail:
        item["detail"] = r.detail
    if r.missing:
        item["missing"] = list[JSON](r.missing)
    if r.line is not None:
        item["frame"] = r.line
    if r.pointer is not None:
        item["pointer"] = r.pointer
    return item


def json_document(contract: str, agent: str, outcome: RunOutcome) -> str:
    """[TX-VERDICT-04] one record per scenario (id order), then the summary."""
    ordered = sorted(outcome.results, key=lambda r: r.scenario)
    doc: dict[str, JSON] = {
        "contract": contract,
        "agent": agent,
        "results": [_record(r) for r in ordered],
        "summary": summary_counts(outcome),
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def junit_document(contract: str, agent: str, outcome: RunOutcome) -> str:
    """[TX-VERDICT-05] JUnit XML: one testsuite per profile, one testcase per scenario.

    ``fail`` and ``unexpected-pass`` are failures, ``error`` an error, and
    ``not-applicable`` and ``expected-fail`` are skipped with their reason. A stale
    expected-failures entry is a failing testcase of its own.
    """
    root = ET.Element("testsuites", name=f"zeroclaw conformance {contract}")
    by_profile: dict[str, list[ScenarioResult]] = {}
    for r in sorted(outcome.results, key=lambda r: r.scenario):
        by_profile.setdefault(r.profile, []).append(r)
    for profile, results in sorted(by_profile.items()):
        _suite(root, profile, results)
    if outcome.stale:
        suite = ET.SubElement(root, "testsuite", name="expected-failures")
        suite.set("tests", str(len(outcome.stale)))
        suite.set("failures", str(len(outcome.stale)))
        for entry in outcome.stale:
            case = ET.SubElement(suite, "testcase", name=entry, classname="expected-failures")
            ET.SubElement(case, "failure", message="stale entry: names no scenario")
    keys = ("tests", "failures", "errors", "skipped")
    totals = {k: sum(int(s.get(k, "0")) for s in root) for k in keys}
    for key, value in totals.items():
        root.set(key, str(value))
    props = ET.Element("properties")
    ET.SubElement(props, "property", name="agent", value=agent)
    ET.SubElement(props, "property", name="contract", value=contract)
    for suite in root:
        suite.insert(0, _copy(props))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _copy(element: ET.Element) -> ET.Element:
    return ET.fromstring(ET.tostring(element))


def _suite(root: ET.Element, profile: str, results: Sequence[ScenarioResult]) -> None:
    counts = _counts(results)
    suite = ET.SubElement(root, "testsuite", name=profile)
    suite.set("tests", str(len(results)))
    suite.set("failures", str(counts[FAIL] + counts[UNEXPECTED_PASS]))
    suite.set("errors", str(counts[ERROR]))
    suite.set("skipped", str(counts[NOT_APPLICABLE] + counts[EXPECTED_FAIL]))
    for r in results:
        area = r.scenario.rsplit("/", 1)[0].replace("/", ".")
        case = ET.SubElement(suite, "testcase", name=r.scenario, classname=area)
        message = r.reason or r.status
        if r.detail:
            message += f": {r.detail}"
        if r.status == FAIL:
            ET.SubElement(case, "failure", message=message, type=r.reason or FAIL).text = r.report
        elif r.status == UNEXPECTED_PASS:
            ET.SubElement(case, "failure", message="passed, but listed as an expected failure")
        elif r.status == ERROR:
            ET.SubElement(case, "error", message="transcript error").text = r.report
        elif r.status == NOT_APPLICABLE:
            why = "needs " + ", ".join(r.missing) if r.missing else (r.reason or "")
            ET.SubElement(case, "skipped", message="not applicable: " + why)
        elif r.status == EXPECTED_FAIL:
            ET.SubElement(case, "skipped", message=f"expected failure: {message}")
