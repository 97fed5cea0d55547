"""The ``lint`` command (transcripts.md §12, [TX-LINT-01], [TX-LINT-02]).

Per file it applies everything ``run`` checks before starting an IUT, then
adds what needs the whole corpus: requirement IDs against the manifest (and
the spec documents with ``--spec``), case-colliding ids, orphaned support
files, stray files and expected-failures syntax. When the corpus has
``schema/transcript.schema.json``, every scenario that loads is also checked against
that statement of the format (transcript_schema.py). The ACP schema's judging of
messages ([TX-LINT-03]) is the runner's (core/schema.py), at run time.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from ..core.checks import check_frames
from ..core.profiles import CLIENT_PROFILE
from ..core.suite import NOT_SCENARIO_DIRS, SelectionError, discover, read_expected_failures
from ..core.transcript import PROTOCOLS, Problem, Scenario, TranscriptError, display_path, load
from ..serve.rules import capability_problems
from ..serve.values import servable_problems
from .coverage import (
    PROJECT,
    CoverageInputError,
    SpecDoc,
    load_index,
    load_manifest,
    parse_spec,
)
from .transcript_schema import SCHEMA_FILE, SchemaError, read_schema, scenario_problems

TOP_LEVEL_FILES = frozenset(
    {"README.md", "VERSION", "CHANGELOG.md", "spec-index.json", "coverage-exemptions.txt"}
    | {"requirements.json", "CONTRACT.md"}
)


def lint_paths(fixtures: Path, paths: Sequence[Path], spec_dir: Path | None) -> list[Problem]:
    """Every problem found; an empty list means the corpus is clean."""
    problems: list[Problem] = []
    whole_corpus = not paths
    try:
        files = discover(fixtures, paths)
    except SelectionError as exc:
        return [Problem(str(exc), 1, "TX-LINT-01", "cannot select")]
    try:
        schema = read_schema(fixtures)
    except SchemaError as exc:
        return [Problem(display_path(fixtures / SCHEMA_FILE, fixtures), 1, "TX-LINT-01", str(exc))]
    scenarios: list[Scenario] = []
    for path in files:
        try:
            sc = load(path, fixtures)
        except TranscriptError as exc:
            problems += exc.problems
            continue
        if schema is not None:  # the format's own schema, fixtures/schema/ (transcript_schema.py)
            problems += scenario_problems(sc, schema)
        problems += check_frames(sc)
        problems += _serve_problems(sc)
        scenarios.append(sc)
    problems += _requirement_ids(fixtures, scenarios, spec_dir)
    problems += _case_collisions(scenarios)
    if whole_corpus:
        problems += _orphans(fixtures, scenarios)
        problems += _stray_files(fixtures)
        problems += _expected_failures(fixtures)
    return problems


def _serve_problems(sc: Scenario) -> list[Problem]:
    """[ZC-SERVE-02] a client scenario must be servable; [ZC-SERVE-03] a scenario serve
    would otherwise play may not write fs/terminal requests its client_needs do not name."""
    problems = servable_problems(sc)
    if sc.profile == CLIENT_PROFILE:
        return problems
    capability = capability_problems(sc)
    return capability if len(problems) == len(capability) else []


def _requirement_ids(
    fixtures: Path, scenarios: list[Scenario], spec_dir: Path | None
) -> list[Problem]:
    """[TX-HEADER-03] every cited ID is in the manifest (and defined in the spec)."""
    if not scenarios:
        return []
    manifest_file = display_path(fixtures / "requirements.json", fixtures)
    try:
        index = load_index(fixtures)
        manifest = load_manifest(fixtures)
        docs: dict[str, SpecDoc] = {}
        if spec_dir is not None:
            docs = {d: parse_spec(spec_dir / d) for d in sorted(set(index.values()))}
    except CoverageInputError as exc:
        return [Problem(manifest_file, 1, "TX-HEADER-03", str(exc))]
    problems: list[Problem] = []
    for sc in scenarios:
        for rid in sc.requirements:
            prefix = rid.split("-", 1)[0]
            if rid in manifest and manifest[rid].spec == PROJECT:
                continue  # a project-own ID (ZC-…): the manifest is where it is stated
            if prefix not in index:
                message = f"{rid}: prefix {prefix} is not in spec-index.json"
            elif rid not in manifest:
                message = f"{rid}: not in requirements.json"
            elif docs and rid in docs[index[prefix]].withdrawn:
                message = f"{rid}: withdrawn; cite its successor (TX-COVER-02)"
            elif docs and rid not in docs[index[prefix]].defined:
                message = f"{rid}: not defined in {index[prefix]}"
            else:
                continue
            problems.append(Problem(sc.display, 1, "TX-HEADER-03", message))
    return problems


def _case_collisions(scenarios: list[Scenario]) -> list[Problem]:
    """[TX-FORMAT-05] two ids may not differ only in letter case."""
    seen: dict[str, str] = {}
    problems: list[Problem] = []
    for sc in scenarios:
        key = sc.id.lower()
        if key in seen and seen[key] != sc.id:
            problems.append(Problem(sc.display, 1, "TX-FORMAT-05", f"id collides with {seen[key]}"))
        seen.setdefault(key, sc.id)
    return problems


def _used_support(fixtures: Path, scenarios: list[Scenario]) -> set[Path]:
    used: set[Path] = set()
    for sc in scenarios:
        values = [sc.setup.get(k) for k in ("config_dir", "model", "workspace")]
        config = sc.setup.get("config")
        if isinstance(config, dict):
            values.append(config.get("path"))
        values += [f.mods.get("model") for f in sc.frames if f.verb == "do"]
        used |= {(fixtures / v).resolve() for v in values if isinstance(v, str)}
    return used


def _orphans(fixtures: Path, scenarios: list[Scenario]) -> list[Problem]:
    """[TX-LINT-01] every file under _support/ is used by some scenario."""
    support = fixtures / "_support"
    if not support.is_dir():
        return []
    used = _used_support(fixtures, scenarios)
    problems: list[Problem] = []
    for path in sorted(p for p in support.rglob("*") if p.is_file()):
        resolved = path.resolve()
        if resolved in used or any(u in resolved.parents for u in used):
            continue
        problems.append(
            Problem(
                display_path(path, fixtures), 1, "TX-LINT-01", "support file used by no scenario"
            )
        )
    return problems


def _stray_files(fixtures: Path) -> list[Problem]:
    """[TX-FORMAT-06] outside _support/ only the listed files and scenarios may exist."""
    problems: list[Problem] = []
    if not fixtures.is_dir():
        return [Problem(str(fixtures), 1, "TX-FORMAT-06", "fixtures directory not found")]
    for path in sorted(fixtures.rglob("*")):
        rel = path.relative_to(fixtures)
        if path.is_dir() or rel.parts[0] in NOT_SCENARIO_DIRS:
            continue
        if len(rel.parts) == 1 and rel.name in TOP_LEVEL_FILES:
            continue
        if rel.parts[0] in PROTOCOLS and path.suffix == ".jsonl":
            continue
        problems.append(Problem(display_path(path, fixtures), 1, "TX-FORMAT-06", "not a scenario"))
    return problems


def _expected_failures(fixtures: Path) -> list[Problem]:
    """[TX-XFAIL-01] every expected-failures file is well formed."""
    problems: list[Problem] = []
    folder = fixtures / "expected-failures"
    for path in sorted(folder.glob("*")) if folder.is_dir() else []:
        try:
            read_expected_failures(path)
        except SelectionError as exc:
            problems.append(Problem(display_path(path, fixtures), 1, "TX-XFAIL-01", str(exc)))
    return problems


def run_lint(fixtures: Path, paths: Sequence[Path], spec_dir: Path | None) -> int:
    """The ``lint`` command: print problems, exit 0 when clean and 2 otherwise."""
    problems = lint_paths(fixtures, paths, spec_dir)
    for problem in problems:
        print(problem)
    if problems:
        sys.stderr.write(f"lint: {len(problems)} problem(s)\n")
        return 2
    return 0
