"""Reading a scenario file into a ``Scenario`` (transcripts.md §1 to §3).

``load`` applies the file-level rules every command shares: encoding and lines
([TX-FORMAT-02], [TX-FORMAT-03]), the header (its table of members is header.py's,
[TX-HEADER-01] to [TX-HEADER-10]) and the frame shapes ([TX-FRAME-01]). Rules that
follow the frames in order (placeholders and static binding) live in checks.py.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .header import Channel, number, pointers, read_header, support_path
from .jsonlex import JSON, JsonError, loads
from .profiles import CLIENT_PROFILE, capability_needs, first_send_is_initialize

PROTOCOLS = ("acp", "mcp", "policy", "config")
KEBAB = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
VERBS = (
    "send",
    "send_raw",
    "expect",
    "expect_unordered",
    "do",
    "expect_exit",
    "expect_stderr",
    "note",
)
DO_ACTIONS = ("close_input", "restart", "kill", "sleep_ms")
# [TX-FRAME-01] which modifiers each verb allows
MODIFIERS: Mapping[str, frozenset[str]] = {
    "send": frozenset({"ch", "http", "serve_strict"}),
    "send_raw": frozenset({"ch", "http", "stream", "encoding", "newline"}),
    "expect": frozenset({"ch", "within", "http", "example", "ignore"}),
    "expect_unordered": frozenset({"ch", "within"}),
    "do": frozenset({"ch", "ms", "model", "status"}),
    "expect_exit": frozenset({"ch", "within"}),
    "expect_stderr": frozenset({"only"}),
    "note": frozenset(),
}


@dataclass(frozen=True, slots=True)
class Problem:
    """One transcript error, printed as ``<file>:<line>: <ID>: <message>`` ([TX-REPORT-03])."""

    file: str
    line: int
    rule: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.rule}: {self.message}"


class TranscriptError(Exception):
    """The scenario cannot be run as written; ``problems`` says why."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("\n".join(str(p) for p in problems))
        self.problems = problems


@dataclass(frozen=True, slots=True)
class Frame:
    """One line after the header: its verb, value, channel and other modifiers."""

    line: int
    verb: str
    value: JSON
    ch: str
    mods: Mapping[str, JSON]


@dataclass(frozen=True, slots=True)
class Scenario:
    """A parsed scenario; ``display`` is the path shown in messages (relative, stable)."""

    path: Path
    fixtures: Path
    display: str
    id: str
    header: Mapping[str, JSON]
    frames: tuple[Frame, ...]
    description: str = ""
    requirements: tuple[str, ...] = ()
    level: str = "required"
    tags: tuple[str, ...] = ()
    channels: Mapping[str, Channel] = field(default_factory=dict)
    setup: Mapping[str, JSON] = field(default_factory=dict)
    timeout_expect: float = 5.0
    timeout_exit: float = 5.0
    ignore: tuple[str, ...] = ()
    profile: str = "zeroclaw"
    needs: tuple[str, ...] = ()
    # [ZC-SERVE-03] [ZC-SERVE-04] what a client judged by serve must offer and prepare
    client_needs: tuple[str, ...] = ()
    client_files: Mapping[str, str] = field(default_factory=dict)


def display_path(path: Path, fixtures: Path) -> str:
    """A path relative to the corpus' parent, so messages carry no temporary prefix."""
    try:
        return path.resolve().relative_to(fixtures.resolve().parent).as_posix()
    except ValueError:
        return path.as_posix()


def scenario_id(path: Path, fixtures: Path) -> str | None:
    """[TX-FORMAT-05] the id is the path under fixtures/ without `.jsonl`."""
    try:
        rel = path.resolve().relative_to(fixtures.resolve())
    except ValueError:
        return None
    return rel.with_suffix("").as_posix() if rel.suffix == ".jsonl" else None


class _Collector:
    def __init__(self, display: str) -> None:
        self.display = display
        self.problems: list[Problem] = []

    def add(self, line: int, rule: str, message: str) -> None:
        self.problems.append(Problem(self.display, line, rule, message))


def _read_lines(path: Path, data: bytes | None, out: _Collector) -> list[dict[str, JSON]] | None:
    if data is None:
        try:
            data = path.read_bytes()
        except OSError as exc:
            out.add(1, "TX-FORMAT-02", f"cannot read file: {exc.strerror}")
            return None
    if data.startswith(b"\xef\xbb\xbf"):
        out.add(1, "TX-FORMAT-02", "file starts with a byte-order mark")
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        out.add(1, "TX-FORMAT-02", f"not UTF-8 at byte {exc.start}")
        return None
    if "\r" in text:
        out.add(text[: text.index("\r")].count("\n") + 1, "TX-FORMAT-02", "CR found; use LF")
        return None
    if not text.endswith("\n"):
        out.add(text.count("\n") + 1, "TX-FORMAT-02", "file does not end with a newline")
        return None
    objects: list[dict[str, JSON]] = []
    for lineno, line in enumerate(text[:-1].split("\n"), start=1):
        if line == "":
            out.add(lineno, "TX-FORMAT-02", "blank line")
            continue
        try:
            value = loads(line)
        except JsonError as exc:
            out.add(lineno, "TX-FORMAT-03", f"not strict JSON: {exc}")
            continue
        if not isinstance(value, dict):
            out.add(lineno, "TX-FORMAT-03", "line is not a JSON object")
            continue
        objects.append(value)
    if out.problems:
        return None
    if len(objects) < 2:
        out.add(1, "TX-FORMAT-04", "a scenario needs a header and at least one frame")
        return None
    return objects


def load(path: Path, fixtures: Path, data: bytes | None = None) -> Scenario:
    """Read and check one scenario file.

    ``data``, when given, is the file's content already read by the caller (record
    rewrites the very text it parsed); ``path`` still names the scenario.

    Raises:
        TranscriptError: any file, header or frame problem; the scenario must not run.
    """
    display = display_path(path, fixtures)
    out = _Collector(display)
    lines = _read_lines(path, data, out)
    if lines is None:
        raise TranscriptError(out.problems)
    _check_path(path, fixtures, out)
    header = lines[0]
    r = read_header(header, scenario_id(path, fixtures), fixtures, out.add)
    scenario = Scenario(
        path=path,
        fixtures=fixtures,
        display=display,
        id=r.id,
        header=header,
        frames=(),
        description=r.description,
        requirements=r.requirements,
        level=r.level,
        tags=r.tags,
        channels=r.channels,
        setup=r.setup,
        timeout_expect=r.timeouts["expect"],
        timeout_exit=r.timeouts["exit"],
        ignore=r.ignore,
        profile=r.profile,
        needs=r.needs,
        client_needs=r.client_needs,
        client_files=r.client_files,
    )
    frames = tuple(
        f for n, obj in enumerate(lines[1:], 2) if (f := _frame(n, obj, scenario, out)) is not None
    )
    _check_opening(scenario, frames, out)
    if out.problems:
        raise TranscriptError(out.problems)
    return dataclasses.replace(scenario, frames=frames)


def _check_opening(sc: Scenario, frames: tuple[Frame, ...], out: _Collector) -> None:
    """[TX-PROFILE-02] [TX-NEEDS-03] who is judged on capabilities begins with initialize."""
    if first_send_is_initialize((f.verb, f.ch, f.value) for f in frames):
        return
    if sc.profile == "acp":
        out.add(1, "TX-PROFILE-02", "an acp scenario's first message on acp is initialize")
    elif sc.profile == CLIENT_PROFILE:
        out.add(1, "ZC-SERVE-01", "a client scenario's first message on acp is initialize")
    elif capability_needs(sc.needs):
        out.add(1, "TX-NEEDS-03", "a scenario that needs a capability begins with initialize")


def _check_path(path: Path, fixtures: Path, out: _Collector) -> None:
    sid = scenario_id(path, fixtures)
    if sid is None:
        out.add(1, "TX-FORMAT-01", "a scenario must be a .jsonl file under fixtures/")
        return
    parts = sid.split("/")
    if len(parts) != 3 or parts[0] not in PROTOCOLS:
        out.add(1, "TX-FORMAT-01", "path must be <protocol>/<area>/<name>.jsonl")
        return
    if not all(KEBAB.fullmatch(p) for p in parts[1:]):
        out.add(1, "TX-FORMAT-01", "area and name must be lower-case kebab-case")


def _frame(line: int, obj: dict[str, JSON], sc: Scenario, out: _Collector) -> Frame | None:
    verbs = [k for k in obj if k in VERBS]
    if len(verbs) != 1:
        out.add(line, "TX-FRAME-01", f"a frame needs exactly one verb, found {len(verbs)}")
        return None
    verb = verbs[0]
    mods = {k: v for k, v in obj.items() if k != verb}
    for name in mods:
        if name not in MODIFIERS[verb]:
            out.add(line, "TX-FRAME-01", f"modifier {name!r} is not allowed with {verb}")
    ch = mods.get("ch", "acp")
    if not isinstance(ch, str) or (ch != "acp" and ch not in sc.channels):
        out.add(line, "TX-FRAME-01", f"unknown channel {ch!r}")
        return None
    frame = Frame(line, verb, obj[verb], ch, mods)
    _check_frame_value(frame, sc, out)
    return frame


def frame_ignore(frame: Frame) -> tuple[str, ...] | None:
    """[TX-MATCH-07] an expect frame's own ignore patterns (none when absent, None when invalid)."""
    return pointers(frame.mods.get("ignore", []))


def _check_frame_value(frame: Frame, sc: Scenario, out: _Collector) -> None:
    v, m, line = frame.value, frame.mods, frame.line
    transport = sc.channels[frame.ch].transport if frame.ch != "acp" else "acp"
    if "within" in m and ((number(m["within"]) or 0) <= 0):
        out.add(line, "TX-FRAME-01", "within must be a positive number of seconds")
    if "http" in m and transport not in ("http", "sse"):
        out.add(line, "TX-FRAME-01", "http is only allowed on http and sse channels")
    if frame.verb == "send_raw":
        if not isinstance(v, str):
            out.add(line, "TX-FRAME-01", "send_raw takes a string")
        if m.get("encoding", "utf-8") not in ("utf-8", "base64"):
            out.add(line, "TX-FRAME-01", "encoding must be utf-8 or base64")
        if "newline" in m and not isinstance(m["newline"], bool):
            out.add(line, "TX-FRAME-01", "newline must be a boolean")
        if "stream" in m and (transport != "stdio" or m["stream"] not in ("stdout", "stderr")):
            out.add(line, "TX-FRAME-01", "stream is stdout or stderr, on a stdio peer only")
    if "ignore" in m and frame_ignore(frame) is None:
        # [TX-MATCH-07] JSON Pointer patterns, as in the header, for this frame only
        out.add(line, "TX-MATCH-07", "ignore must be an array of JSON Pointers")
    if frame.verb == "expect_unordered":
        if not isinstance(v, list) or not 2 <= len(v) <= 8:
            out.add(line, "TX-FRAME-05", "expect_unordered takes an array of 2 to 8 values")
    elif frame.verb == "expect_stderr":
        # [TX-STDERR-01] line patterns, as strings with placeholders
        if not isinstance(v, list) or not v or not all(isinstance(x, str) for x in v):
            out.add(line, "TX-STDERR-01", "expect_stderr takes a non-empty array of strings")
        if "only" in m and not isinstance(m["only"], bool):
            out.add(line, "TX-STDERR-01", "only must be a boolean")
    elif frame.verb == "note" and not isinstance(v, str):
        out.add(line, "TX-FRAME-01", "note takes a string")
    elif frame.verb == "expect_exit":
        if frame.ch == "acp":
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 255:
                out.add(line, "TX-FRAME-10", "expect_exit on acp takes an integer 0-255")
        elif v != "eof":
            out.add(line, "TX-FRAME-11", 'expect_exit on a peer channel takes "eof"')
    elif frame.verb == "do":
        _check_do(frame, sc, transport, out)
    elif frame.verb == "send" and "serve_strict" in m and not isinstance(m["serve_strict"], bool):
        out.add(line, "TX-FRAME-01", "serve_strict must be a boolean")


def _check_do(frame: Frame, sc: Scenario, transport: str, out: _Collector) -> None:
    v, m, line = frame.value, frame.mods, frame.line
    if v not in DO_ACTIONS:
        out.add(line, "TX-FRAME-01", f"unknown do action {v!r}")
        return
    allowed = {"sleep_ms": {"ms"}, "restart": {"model"}, "kill": {"status"}}.get(str(v), set())
    for name in m:
        if name != "ch" and name not in allowed:
            out.add(line, "TX-FRAME-01", f"modifier {name!r} is not allowed with do {v}")
    if v == "sleep_ms":
        ms = m.get("ms")
        if isinstance(ms, bool) or not isinstance(ms, int) or not 1 <= ms <= 10000:
            out.add(line, "TX-FRAME-01", "sleep_ms needs ms between 1 and 10000")
        # [TX-FRAME-09] sleeps only where timing is the behaviour under test
        if "timing" not in sc.header or "timing" not in sc.tags:
            out.add(line, "TX-FRAME-09", "sleep_ms needs a timing header and the tag timing")
    if v == "restart" and frame.ch != "acp":
        out.add(line, "TX-FRAME-07", "restart acts on acp only")
    if v == "restart" and "model" in m and support_path(m["model"], sc.fixtures) is None:
        out.add(line, "TX-HEADER-06", "restart model must name a file under _support/")
    if "status" in m:
        status = m["status"]
        if transport != "stdio" or isinstance(status, bool) or not isinstance(status, int):
            out.add(line, "TX-FRAME-08", "status is an integer, on a stdio peer kill only")
