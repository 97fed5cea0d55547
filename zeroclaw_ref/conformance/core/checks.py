"""Per-file rules that follow the frames in order (transcripts.md §5, TX-LINT-01).

Walking the frames once, this module checks the placeholder grammar and types
([TX-PH-01], [TX-PH-07], [TX-PH-08]), static binding ([TX-PH-03], [TX-PH-05],
[TX-PH-06]), upper-case names ([TX-PH-04]), the wildcard rule ([TX-PH-10]),
ignored pointers ([TX-MATCH-07]), redundant ``send_raw`` ([TX-FRAME-03]),
sends after ``close_input`` ([TX-FRAME-06]) and ``example`` members.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from .header import support_path
from .jsonlex import JSON, JsonError, dumps, escape_pointer_token, loads
from .match import MatchContext, is_ignored, match, split_pointer
from .placeholders import (
    EMBEDDED_TYPES,
    HOST_NAMES,
    Placeholder,
    PlaceholderError,
    parse,
    substitute_host_text,
)
from .profiles import CLIENT_PROFILE
from .transcript import Frame, Problem, Scenario, frame_ignore

WILDCARD_MEMBERS = ("params", "result", "error")


def host_names(sc: Scenario) -> frozenset[str]:
    """Every upper-case name this scenario may use ([TX-PH-04], [TX-HEADER-10])."""
    names = set(HOST_NAMES)
    for ch in sc.channels.values():
        names.add(("PEER_" if ch.transport == "stdio" else "URL_") + ch.name.upper())
    return frozenset(names)


def _strings(value: JSON, at: str = "") -> Iterator[tuple[str, str, bool]]:
    """Yield (pointer, string, is_member_name) in document order."""
    if isinstance(value, str):
        yield at, value, False
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _strings(item, f"{at}/{i}")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield f"{at}/{escape_pointer_token(key)}", key, True
            yield from _strings(item, f"{at}/{escape_pointer_token(key)}")


class _Walker:
    def __init__(self, sc: Scenario) -> None:
        self.sc = sc
        self.problems: list[Problem] = []
        self.types: dict[str, str | None] = {}
        self.hosts = host_names(sc)
        self.ignore = [split_pointer(p) for p in sc.ignore]

    def add(self, line: int, rule: str, message: str) -> None:
        self.problems.append(Problem(self.sc.display, line, rule, message))

    def placeholders(self, line: int, value: JSON) -> Iterator[tuple[str, Placeholder, bool]]:
        """Yield (pointer, placeholder, is_whole) for every well-formed placeholder."""
        for pointer, text, is_name in _strings(value):
            try:
                template = parse(text)
            except PlaceholderError as exc:
                self.add(line, "TX-PH-01", str(exc))
                continue
            if is_name:
                if template.placeholders:
                    self.add(line, "TX-PH-01", f"placeholder in member name at {pointer}")
                continue
            whole = template.whole is not None
            if not whole:
                self.check_embedded(line, template.parts)
            for ph in template.placeholders:
                if ph.is_host and ph.name not in self.hosts:
                    self.add(line, "TX-PH-04", f"unknown runner-provided name {ph.text()}")
                yield pointer, ph, whole

    def check_embedded(self, line: int, parts: tuple[str | Placeholder, ...]) -> None:
        previous_unbound = False
        seen: set[str] = set()
        for part in parts:
            if isinstance(part, str):
                previous_unbound = False
                continue
            unbound = (
                not part.is_host
                and (part.is_wildcard or part.name not in self.types)
                and part.name not in seen
            )
            if part.is_binding and unbound and (part.type or "string") not in EMBEDDED_TYPES:
                self.add(line, "TX-PH-07", f"{part.text()}: this type cannot be embedded")
            if unbound and previous_unbound:
                self.add(line, "TX-PH-07", "two unbound placeholders with no text between them")
            if part.is_binding:
                seen.add(part.name)
            previous_unbound = unbound

    def expect_value(self, frame: Frame, value: JSON) -> None:
        for _pointer, ph, _whole in self.placeholders(frame.line, value):
            if not ph.is_binding:
                continue
            if ph.name not in self.types:
                self.types[ph.name] = ph.type
            elif ph.type is not None and ph.type != self.types[ph.name]:
                # [TX-PH-08] one type per name, or none after the first
                self.add(frame.line, "TX-PH-08", f"{ph.text()} changes the type of {ph.name}")
        self.check_wildcards(frame, value)
        ignore = self.ignore + [split_pointer(p) for p in frame_ignore(frame) or ()]
        for pointer, _text, is_name in _strings(value):
            if is_name and is_ignored(split_pointer(pointer), ignore):
                self.add(frame.line, "TX-MATCH-07", f"expected member at ignored pointer {pointer}")

    def check_wildcards(self, frame: Frame, value: JSON) -> None:
        # [TX-PH-10] no wildcard for a whole message or a whole params/result/error
        spots: list[tuple[str, JSON]] = [("the whole message", value)]
        if isinstance(value, dict):
            spots += [(f"/{k}", value[k]) for k in WILDCARD_MEMBERS if k in value]
        for where, item in spots:
            if isinstance(item, str):
                try:
                    whole = parse(item).whole
                except PlaceholderError:
                    continue
                if whole is not None and whole.is_wildcard:
                    self.add(frame.line, "TX-PH-10", f"a wildcard stands for {where}")

    def send_value(self, frame: Frame, value: JSON) -> None:
        for _pointer, ph, _whole in self.placeholders(frame.line, value):
            if ph.is_wildcard:
                self.add(frame.line, "TX-PH-06", "the wildcard ${_} cannot be sent")
            elif ph.is_binding and ph.name not in self.types:
                self.add(frame.line, "TX-PH-03", f"{ph.text()} is used before it is bound")


def check_frames(sc: Scenario) -> list[Problem]:
    """Run the ordered per-file checks; an empty list means the scenario may run."""
    w = _Walker(sc)
    _check_setup_text(sc, w)
    closed = exited = False
    for frame in sc.frames:
        if frame.verb == "expect_stderr":
            w.expect_value(frame, frame.value)
            if not exited:  # [TX-STDERR-02] stderr is complete once the IUT has exited
                w.add(frame.line, "TX-STDERR-02", "expect_stderr needs an expect_exit on acp first")
        elif frame.verb == "expect_exit" and frame.ch == "acp":
            exited = True
        if frame.verb in ("expect", "expect_unordered"):
            values = frame.value if frame.verb == "expect_unordered" else [frame.value]
            for value in values if isinstance(values, list) else []:
                w.expect_value(frame, value)
            if "example" in frame.mods:
                _check_example(frame, w)
        elif frame.verb in ("send", "send_raw"):
            if frame.ch == "acp" and closed:
                w.add(frame.line, "TX-FRAME-06", "send on acp after close_input, before restart")
            if frame.verb == "send" and sc.profile == CLIENT_PROFILE:
                # [ZC-SERVE-02] only serve plays it: a send is matched against the client's
                # message, so it may bind names (a terminalId the client chose) as an expect does
                w.expect_value(frame, frame.value)
            else:
                w.send_value(frame, frame.value)
            if frame.verb == "send_raw":
                _check_raw(frame, w)
        elif frame.verb == "do" and frame.ch == "acp":
            closed = (closed or frame.value == "close_input") and frame.value != "restart"
            exited = (exited or frame.value == "kill") and frame.value != "restart"
    return w.problems


def _check_raw(frame: Frame, w: _Walker) -> None:
    # [TX-FRAME-03] a send_raw that a send would write identically is redundant
    if not isinstance(frame.value, str) or frame.mods.get("encoding", "utf-8") != "utf-8":
        return
    if frame.mods.get("newline", True) is not True:
        return
    try:
        parsed = loads(frame.value)
    except JsonError:
        return
    if dumps(parsed) == frame.value:
        w.add(frame.line, "TX-FRAME-03", "this send_raw writes what a send would; use send")


def _check_example(frame: Frame, w: _Walker) -> None:
    ignore = [split_pointer(p) for p in (*w.sc.ignore, *(frame_ignore(frame) or ()))]
    ctx = MatchContext(host={}, bindings={}, ignore=ignore, lenient_host=True)
    try:
        miss = match(frame.value, frame.mods["example"], ctx)
    except PlaceholderError as exc:
        w.add(frame.line, "TX-LINT-01", f"example cannot be checked: {exc}")
        return
    if miss is not None:
        w.add(
            frame.line, "TX-LINT-01", f"example does not match at {miss.pointer!r}: {miss.reason}"
        )


def _check_setup_text(sc: Scenario, w: _Walker) -> None:
    """[TX-HEADER-07] only known upper-case names in config text and env values."""
    fake = {name: "/" for name in w.hosts}
    texts: list[str] = []
    config = sc.setup.get("config")
    if isinstance(config, str):
        texts.append(config)
    elif isinstance(config, dict):
        path: Path | None = support_path(config.get("path"), sc.fixtures)
        if path is not None and path.is_file():
            try:
                texts.append(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                w.add(1, "TX-HEADER-06", "setup.config file is not readable UTF-8")
    env = sc.setup.get("env")
    if isinstance(env, dict):
        texts += [v for v in env.values() if isinstance(v, str)]
    for text in texts:
        try:
            substitute_host_text(text, fake)
        except PlaceholderError as exc:
            w.add(1, "TX-HEADER-07", str(exc))
