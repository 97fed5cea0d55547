"""Failure reports and run summaries (transcripts.md §9, [TX-REPORT-01] to [TX-REPORT-03]).

Design: a report is built from plain values the runner hands over, then every
host path is rewritten as its placeholder, longest value first, so two runs
against the same IUT print the same text ([TX-REPORT-02]).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .jsonlex import JSON, dumps, pretty
from .match import Mismatch
from .placeholders import PlaceholderError, parse
from .transcript import Frame

STDERR_TAIL = 40
HISTORY = 5


@dataclass(slots=True)
class FailureInfo:
    """What went wrong, where, and the evidence the report needs."""

    reason: str
    message: str
    line: int | None = None
    verb: str = ""
    ch: str = "acp"
    mismatch: Mismatch | None = None
    expected: JSON = None
    actual: JSON = None
    has_messages: bool = False
    extra: list[str] = field(default_factory=list)


class Failed(Exception):
    """A failing frame; ``run``, ``record`` and ``serve`` raise it and report ``info``."""

    def __init__(self, info: FailureInfo) -> None:
        super().__init__(info.message)
        self.info = info


def failure(reason: str, frame: Frame | None, message: str, **evidence: object) -> Failed:
    """A ``Failed`` for ``frame`` (None for the implicit ending) with a [TX-RUN-06] reason.

    ``evidence`` sets further ``FailureInfo`` fields (mismatch, expected, ...).
    """
    info = FailureInfo(reason, message)
    if frame is not None:
        info.line, info.verb, info.ch = frame.line, frame.verb, frame.ch
    for key, value in evidence.items():
        setattr(info, key, value)
    return Failed(info)


def annotate(expected: JSON, bindings: Mapping[str, JSON]) -> JSON:
    """Show bound placeholders as ``${name=value}`` in an expected value ([TX-REPORT-01])."""
    if isinstance(expected, list):
        return [annotate(v, bindings) for v in expected]
    if isinstance(expected, dict):
        return {k: annotate(v, bindings) for k, v in expected.items()}
    if not isinstance(expected, str):
        return expected
    try:
        template = parse(expected)
    except PlaceholderError:
        return expected
    if template.literal is not None:
        return expected
    out: list[str] = []
    for part in template.parts:
        if isinstance(part, str):
            out.append(part.replace("${", "$${"))
        elif part.is_binding and part.name in bindings:
            bound = bindings[part.name]
            shown = bound if isinstance(bound, str) and template.whole is None else dumps(bound)
            out.append(f"${{{part.name}={shown}}}")
        else:
            out.append(part.text())
    return "".join(out)


def scrub(text: str, host: Mapping[str, str]) -> str:
    """Write absolute host paths as their placeholders ([TX-REPORT-02])."""
    paths = sorted(
        ((name, value) for name, value in host.items() if value.startswith("/") and len(value) > 1),
        key=lambda item: len(item[1]),
        reverse=True,
    )
    for name, value in paths:
        text = text.replace(value, "${" + name + "}")
    return text


def render_failure(
    *,
    scenario: str,
    description: str,
    display: str,
    failure: FailureInfo,
    bindings: Mapping[str, JSON],
    history: Mapping[str, Sequence[str]],
    stderr_tail: Sequence[str],
    host: Mapping[str, str],
) -> str:
    """The full failure report as text."""
    lines = [f"scenario: {scenario}", f"description: {description}"]
    where = f"{display}:{failure.line}" if failure.line else f"{display} (implicit ending)"
    verb = f" {failure.verb}" if failure.verb else ""
    lines.append(f"frame: {where}{verb} on {failure.ch}")
    lines.append(f"reason: {failure.reason}: {failure.message}")
    if failure.mismatch is not None:
        m = failure.mismatch
        lines += [
            f"pointer: {m.pointer or '(root)'}",
            f"mismatch: {m.reason}",
            f"  expected there: {m.expected}",
            f"  actual there:   {m.actual}",
        ]
    if failure.has_messages:
        lines.append("expected message:")
        lines += _indent(pretty(annotate(failure.expected, bindings)))
        lines.append("actual message:")
        lines += _indent(pretty(failure.actual))
    lines += failure.extra
    lines.append("bindings:")
    lines += [f"  {name} = {dumps(value)}" for name, value in bindings.items()] or ["  (none)"]
    for channel, entries in history.items():
        lines.append(f"last messages on {channel}:")
        lines += [f"  {entry}" for entry in entries] or ["  (none)"]
    lines.append(f"stderr (last {STDERR_TAIL} lines):")
    lines += [f"  | {line}" for line in stderr_tail] or ["  (empty)"]
    return scrub("\n".join(lines), host)


def _indent(text: str) -> list[str]:
    return ["  " + line for line in text.splitlines()]


def status_line(status: str, scenario: str, level: str) -> str:
    """[TX-RUN-08] one line per scenario; the level is shown unless it is required."""
    suffix = f"  ({level})" if level != "required" else ""
    return f"{status.upper():<5} {scenario}{suffix}"
