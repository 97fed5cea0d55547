"""``show`` and ``list`` (transcripts.md [TX-RUN-12]).

``show`` uses the JSON-RPC 2.0 specification's arrows: ``-->`` for what goes to
the server side and ``<--`` for what comes back. On ``acp`` the IUT is the
server; on a peer channel the peer is, so an IUT message to a peer is ``-->``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

from ..core.jsonlex import JSON, dumps
from ..core.suite import SelectionError, discover
from ..core.transcript import Frame, Scenario, TranscriptError, load
from ..serve.steps import prose, show_document
from ..serve.values import servable_problems


def _find(fixtures: Path, name: str) -> Path:
    path = Path(name)
    if path.is_file():
        return path
    return fixtures / (name.removesuffix(".jsonl") + ".jsonl")


def render(sc: Scenario) -> str:
    """One frame per line, notes as comments; for a servable scenario, the client's steps."""
    lines = [f"// {sc.id} ({sc.level}, profile {sc.profile}): {sc.description}"]
    lines.append("// requirements: " + ", ".join(sc.requirements))
    if sc.needs:
        lines.append("// needs: " + ", ".join(sc.needs))
    if sc.client_needs:
        lines.append("// client needs: " + ", ".join(sc.client_needs))
    for frame in sc.frames:
        lines.append(_frame_line(frame))
    if servable(sc):
        lines += prose(sc)  # [ZC-SERVE-07] what a client author must make the client do
    return "\n".join(lines)


def _frame_line(frame: Frame) -> str:
    prefix = "" if frame.ch == "acp" else f"{frame.ch} "
    to_server, to_client = ("-->", "<--") if frame.ch == "acp" else ("<--", "-->")
    if frame.verb == "note":
        return f"// {frame.value}"
    if frame.verb == "send":
        return f"{prefix}{to_server} {dumps(frame.value)}"
    if frame.verb == "send_raw":
        return f"{prefix}{to_server} (raw) {frame.value}"
    if frame.verb == "expect":
        return f"{prefix}{to_client} {dumps(frame.value)}"
    if frame.verb == "expect_unordered":
        values = frame.value if isinstance(frame.value, list) else []
        return f"{prefix}{to_client} (any order) " + " | ".join(dumps(v) for v in values)
    if frame.verb == "expect_stderr":
        only = " (only these lines)" if frame.mods.get("only") is True else ""
        values = frame.value if isinstance(frame.value, list) else []
        return f"== stderr{only} " + " | ".join(dumps(v) for v in values)
    if frame.verb == "expect_exit":
        return f"{prefix}== exit {dumps(frame.value)}"
    extra = "".join(f" {k}={dumps(v)}" for k, v in frame.mods.items() if k != "ch")
    return f"{prefix}== do {frame.value}{extra}"


def servable(sc: Scenario) -> bool:
    """[TX-SERVE-02] what `serve` accepts: one definition, shared with the command itself."""
    return not servable_problems(sc)


def show_scenario(fixtures: Path, name: str, as_json: bool = False) -> int:
    """Print one scenario; an unknown name is one ``error:`` line and exit 2 ([TX-CLI-01]).

    ``as_json`` prints the steps a client harness follows instead ([ZC-SERVE-07]).
    """
    path = _find(fixtures, name)
    if not path.is_file():
        raise SelectionError(f"{name}: no such scenario in {fixtures}")
    try:
        sc = load(path, fixtures)
    except TranscriptError as exc:
        print(exc, file=sys.stderr)
        return 2
    if as_json:
        print(json.dumps(show_document(sc), ensure_ascii=False))
    else:
        print(render(sc))
    return 0


def list_scenarios(
    fixtures: Path,
    only_servable: bool,
    profiles: Sequence[str] | None = None,
    selection: Sequence[Path] = (),
    as_json: bool = False,
) -> int:
    """``<id>  <level>  <profile>  <tags>`` per scenario ([TX-RUN-12]); ``as_json``: ids."""
    if not fixtures.is_dir():
        raise SelectionError(f"{fixtures}: no such corpus directory")
    status = 0
    chosen: list[Scenario] = []
    for path in discover(fixtures, selection):
        try:
            sc = load(path, fixtures)
        except TranscriptError as exc:
            print(exc, file=sys.stderr)
            status = 2
            continue
        if only_servable and not servable(sc):
            continue
        if profiles is not None and sc.profile not in profiles:
            continue
        chosen.append(sc)
    if as_json:
        ids: list[JSON] = [sc.id for sc in sorted(chosen, key=lambda s: s.id)]
        print(json.dumps(ids))
        return status
    for sc in chosen:
        print(f"{sc.id}  {sc.level}  {sc.profile}  {','.join(sc.tags)}".rstrip())
    return status
