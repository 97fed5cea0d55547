"""Requirement coverage of the corpus (transcripts.md §13, adapted to this project).

The product ships its own manifest, ``fixtures/requirements.json``: the IDs it
implements, each with a statement, its spec file and its tags. Without
``--spec`` the manifest is the set of defined IDs ([TX-COVER-03] to
[TX-COVER-05]): every ID a scenario cites, and every ID that a test mark or a
code tag of the repository holding the corpus cites (citations.py), must be
stated in it. With ``--spec DIR`` the manifest is also checked against the
spec documents ([TX-COVER-02]): no invented or withdrawn ID, matching file and
tags, and every defined spec ID stated in the manifest (a missing one fails); cited
mcp.md catalogue texts must exist in the catalogue, and the manifest's ``TX``
IDs are checked against transcripts.md (the project's own additions to the
contract are stated in ``fixtures/CONTRACT.md``).
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from ..core.jsonlex import JSON, JsonError, loads
from ..core.suite import discover, header_of
from .citations import scan

SPEC_ITEM = re.compile(r"\s*(?:[-*]|\d+\.)\s+\*\*(?P<id>[A-Z]+-[A-Z0-9]+-[0-9]+)\*\*(?P<rest>.*)")
TAG = re.compile(r"\s*\[(?P<tag>[^\]]*)\]")
WITHDRAWN = re.compile(r"\s*Withdrawn: superseded by")
CATALOGUE_LINE = re.compile(r"(?P<id>[A-Z]+-[A-Z0-9]+-[0-9]+) +\[")
CONTRACT = "transcripts.md"  # the document of the TX IDs (not in spec-index.json, TX-COVER-01)
LOCAL_CONTRACT = "CONTRACT.md"  # fixtures/CONTRACT.md: the project's additions to it
LINE = re.compile(r"(?P<id>\S+)\s+#\s*(?P<why>\S.*)")
# The `spec` of a project-own requirement (ZC-…): stated by the manifest itself, in no document.
PROJECT = "project"


class CoverageInputError(Exception):
    """An input file is missing or malformed (exit status 2)."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One manifest row."""

    statement: str
    spec: str
    tags: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SpecDoc:
    """IDs a spec document defines, with their tags, and those it withdraws."""

    defined: dict[str, tuple[str, ...]]
    withdrawn: frozenset[str]
    catalogue: frozenset[str] = frozenset()  # numbered text lines inside code blocks


def _read_json(path: Path) -> JSON:
    try:
        return loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CoverageInputError(f"{path.name}: cannot read: {exc.strerror}") from exc
    except (UnicodeDecodeError, JsonError) as exc:
        raise CoverageInputError(f"{path.name}: not strict JSON: {exc}") from exc


def load_index(fixtures: Path) -> dict[str, str]:
    """[TX-COVER-01] requirement-ID prefix → spec document."""
    value = _read_json(fixtures / "spec-index.json")
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise CoverageInputError("spec-index.json: expected an object of strings")
    return {k: v for k, v in value.items() if isinstance(v, str)}


def load_manifest(fixtures: Path) -> dict[str, Entry]:
    """The product's requirement manifest, ``fixtures/requirements.json``."""
    value = _read_json(fixtures / "requirements.json")
    if not isinstance(value, dict):
        raise CoverageInputError("requirements.json: expected an object")
    out: dict[str, Entry] = {}
    for rid, row in value.items():
        if not isinstance(row, dict):
            raise CoverageInputError(f"requirements.json: {rid}: expected an object")
        statement, spec, tags = row.get("statement"), row.get("spec"), row.get("tags", [])
        if not isinstance(statement, str) or not isinstance(spec, str):
            raise CoverageInputError(f"requirements.json: {rid}: needs statement and spec")
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise CoverageInputError(f"requirements.json: {rid}: tags must be strings")
        out[rid] = Entry(statement, spec, tuple(t for t in tags if isinstance(t, str)))
    return out


def load_exemptions(fixtures: Path) -> dict[str, str]:
    """`<ID>  # <reason>` lines of coverage-exemptions.txt; a missing file means none."""
    path = fixtures / "coverage-exemptions.txt"
    if not path.exists():
        return {}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CoverageInputError(f"{path.name}: cannot read: {exc.__class__.__name__}") from exc
    out: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = LINE.fullmatch(line.strip())
        if m is None:
            raise CoverageInputError(f"{path.name}:{number}: expected '<ID>  # <reason>'")
        out[m.group("id")] = m.group("why")
    return out


def parse_spec(path: Path) -> SpecDoc:
    """[TX-COVER-02] bold IDs opening list items, outside code blocks; withdrawn ones apart."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CoverageInputError(f"{path.name}: cannot read: {exc.__class__.__name__}") from exc
    defined: dict[str, tuple[str, ...]] = {}
    withdrawn: set[str] = set()
    catalogue: set[str] = set()
    in_code = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        if in_code and (c := CATALOGUE_LINE.match(line)) is not None:
            catalogue.add(c.group("id"))
        m = None if in_code else SPEC_ITEM.match(line)
        if m is None:
            continue
        rest = m.group("rest")
        tags: list[str] = []
        while (t := TAG.match(rest)) is not None:
            tag = t.group("tag").strip()
            tags.append("ref" if tag.startswith("ref:") else tag)
            rest = rest[t.end() :]
        if WITHDRAWN.match(rest):
            withdrawn.add(m.group("id"))
        else:
            defined[m.group("id")] = tuple(tags)
    return SpecDoc(defined, frozenset(withdrawn), frozenset(catalogue))


def citations(fixtures: Path) -> list[tuple[str, str, tuple[str, ...]]]:
    """(scenario, level, requirements) for every scenario in the corpus."""
    out: list[tuple[str, str, tuple[str, ...]]] = []
    for path in discover(fixtures):
        header = header_of(path)
        if not header:
            raise CoverageInputError(f"{path.name}: unreadable header")
        level = header.get("level")
        reqs = header.get("requirements")
        ids = tuple(r for r in reqs if isinstance(r, str)) if isinstance(reqs, list) else ()
        out.append((str(header.get("scenario", path.stem)), str(level), ids))
    return out


def evaluate(fixtures: Path, spec_dir: Path | None) -> tuple[list[str], list[str], JSON]:
    """Problems (each fails the run), informational lines, and a JSON summary.

    Raises:
        CoverageInputError: an input cannot be read.
    """
    index = load_index(fixtures)
    manifest = load_manifest(fixtures)
    exempt = load_exemptions(fixtures)
    cited_any: set[str] = set()
    cited_judged: set[str] = set()
    problems: list[str] = []
    for sid, level, ids in citations(fixtures):
        cited_any.update(ids)
        if level in ("required", "optional"):
            cited_judged.update(ids)
        for rid in ids:
            if rid not in manifest:
                problems.append(f"{sid}: cites {rid}, which the manifest does not define")
    for rid in sorted(exempt):
        if rid not in manifest:
            problems.append(f"stale exemption {rid}: not in the manifest")
        elif rid in cited_any:
            problems.append(f"stale exemption {rid}: a scenario cites it")
    table: dict[str, JSON] = {}
    info: list[str] = []
    docs = _spec_docs(index, spec_dir)
    for prefix, document in sorted(index.items()):
        mine = sorted(r for r in manifest if r.startswith(prefix + "-"))
        missing = [r for r in mine if r not in cited_judged and r not in exempt]
        problems += [f"{r}: cited by no required or optional scenario" for r in missing]
        row: dict[str, JSON] = {
            "manifest": len(mine),
            "cited": sum(1 for r in mine if r in cited_judged),
            "exempted": sum(1 for r in mine if r in exempt),
            "missing": len(missing),
        }
        if docs is not None:
            problems += _against_spec(prefix, document, mine, manifest, docs)
            doc = docs[document]
            unstated = [r for r in doc.defined if r not in manifest]
            row["spec_not_in_manifest"] = len(unstated)
            # [TX-COVER-02] a rule the spec defines but the manifest leaves out is a gap the
            # product has not stated in its own words, so it fails the run (not an info line).
            problems += [
                f"{r}: defined in {document} but not stated in requirements.json" for r in unstated
            ]
            info.append(f"{document}: {len(unstated)} spec IDs not yet in the manifest")
        table[document] = row
    problems += _cited_in_repository(fixtures, index, manifest, docs, info)
    if spec_dir is not None:
        problems += _contract_ids(fixtures, spec_dir, manifest, info)
    return problems, info, table


def _cited_in_repository(
    fixtures: Path,
    index: dict[str, str],
    manifest: dict[str, Entry],
    docs: dict[str, SpecDoc] | None,
    info: list[str],
) -> list[str]:
    """[TX-COVER-03] test marks and code tags cite only stated IDs (catalogue texts apart)."""
    prefixes = {*index, "TX", *(rid.split("-", 1)[0] for rid in manifest)}
    cited = scan(fixtures.resolve().parent, prefixes)
    problems = [
        f"{rid}: cited at {_places(places)}, but not stated in requirements.json"
        for rid, places in sorted(cited.requirements.items())
        if rid not in manifest
    ]
    if cited.catalogue:
        info.append(f"{len(cited.catalogue)} catalogue texts cited by tests or code (TX-COVER-02)")
    if docs is not None:
        texts: set[str] = set()
        for doc in docs.values():
            texts |= doc.catalogue
        problems += [
            f"{rid}: cited at {_places(places)}, but no catalogue text has that number"
            for rid, places in sorted(cited.catalogue.items())
            if rid not in texts
        ]
    return problems


def _places(places: list[str]) -> str:
    shown = ", ".join(places[:3])
    return shown + (f" and {len(places) - 3} more" if len(places) > 3 else "")


def _contract_ids(
    fixtures: Path, spec_dir: Path, manifest: dict[str, Entry], info: list[str]
) -> list[str]:
    """The manifest's TX IDs against transcripts.md; additions must be in CONTRACT.md."""
    path = spec_dir / CONTRACT
    ids = sorted(r for r in manifest if r.startswith("TX-"))
    if not ids or not path.is_file():
        return []
    doc = parse_spec(path)
    local = fixtures / LOCAL_CONTRACT
    ours = parse_spec(local).defined if local.is_file() else {}
    problems: list[str] = []
    unstated: list[str] = []
    for rid in ids:
        entry = manifest[rid]
        if entry.spec != CONTRACT:
            problems.append(f"{rid}: manifest says {entry.spec}, TX IDs belong to {CONTRACT}")
        elif rid in doc.defined and sorted(entry.tags) != sorted(doc.defined[rid]):
            problems.append(
                f"{rid}: manifest tags {list(entry.tags)} differ from the spec's "
                f"{list(doc.defined[rid])}"
            )
        elif rid not in doc.defined and rid not in ours:
            unstated.append(rid)
    added = sum(1 for r in ids if r not in doc.defined and r in ours)
    info.append(f"{CONTRACT}: {added} TX IDs are this project's additions, in {LOCAL_CONTRACT}")
    if unstated:
        info.append(f"TX IDs in neither {CONTRACT} nor {LOCAL_CONTRACT}: {', '.join(unstated)}")
    return problems


def _spec_docs(index: dict[str, str], spec_dir: Path | None) -> dict[str, SpecDoc] | None:
    if spec_dir is None:
        return None
    return {doc: parse_spec(spec_dir / doc) for doc in sorted(set(index.values()))}


def _against_spec(
    prefix: str, document: str, ids: list[str], manifest: dict[str, Entry], docs: dict[str, SpecDoc]
) -> list[str]:
    problems: list[str] = []
    doc = docs[document]
    for rid in ids:
        entry = manifest[rid]
        if rid in doc.withdrawn:
            problems.append(f"{rid}: withdrawn in {document}; cite its successor")
        elif rid not in doc.defined:
            problems.append(f"{rid}: not defined in {document} (invented)")
        else:
            if entry.spec != document:
                problems.append(f"{rid}: manifest says {entry.spec}, the spec file is {document}")
            if sorted(entry.tags) != sorted(doc.defined[rid]):
                problems.append(
                    f"{rid}: manifest tags {list(entry.tags)} differ from the spec's "
                    f"{list(doc.defined[rid])}"
                )
    return problems


def run_coverage(fixtures: Path, spec_dir: Path | None, json_out: Path | None) -> int:
    """The ``coverage`` command; 0 clean, 1 on problems, 2 on unreadable inputs."""
    try:
        problems, info, table = evaluate(fixtures, spec_dir)
    except CoverageInputError as exc:
        sys.stderr.write(f"coverage: {exc}\n")
        return 2
    print(f"{'document':<12} {'manifest':>8} {'cited':>6} {'exempted':>8} {'missing':>7}")
    if isinstance(table, dict):
        for document, row in table.items():
            if isinstance(row, dict):
                cells = [row.get(k) for k in ("manifest", "cited", "exempted", "missing")]
                print(f"{document:<12} " + " ".join(f"{c!s:>8}" for c in cells))
    for line in info:
        print(f"info: {line}")
    for problem in problems:
        print(f"FAIL {problem}")
    if json_out is not None:
        doc = {"documents": table, "problems": problems}
        json_out.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return 1 if problems else 0
