"""A scenario's header, line 1, as a table of members (transcripts.md §2, §3, §8).

Design: ``HEADER`` keeps the header's members as data, the way h11 keeps its tables: for
each member its JSON type, the rule that requires it, the value read when it is absent and
the check that reads it ([TX-HEADER-01] to [TX-HEADER-10], [TX-PROFILE-01],
[TX-NEEDS-01], [ZC-SERVE-03], [ZC-SERVE-04]). ``read_header`` applies the table in order;
each check reports what is wrong and stores what it read on the ``HeaderReading``; then the
one rule across members follows ([TX-PROFILE-02]). transcript.py makes the ``Scenario``.

fixtures/schema/transcript.schema.json states the same members for other tools (and for
``lint``); tests/unit/conformance/test_transcript_schema.py holds the two to each other.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .jsonlex import JSON, Real
from .profiles import (
    Report,
    acp_uses_no_hook,
    read_client_files,
    read_client_needs,
    read_needs,
    read_profile,
)

FORMAT_MAJOR = 2
LEVELS = ("required", "optional", "informational")
TRANSPORTS = ("stdio", "http", "sse")
CHANNEL_NAME = re.compile(r"[a-z][a-z0-9_]*")
REQUIREMENT_ID = re.compile(r"[A-Z]+-[A-Z0-9]+-[0-9]+")
# [TX-HEADER-08] variables the host hooks own
HOST_ENV = frozenset(
    {"PATH", "PYTHONPATH", "HOME", "LANG", "LC_ALL", "TZ", "ZEROCLAW_CONFIG_DIR"}
    | {"ZEROCLAW_DATA_DIR", "ZEROCLAW_CONFORMANCE", "ZEROCLAW_CONFORMANCE_MODEL_SCRIPT"}
)
SETUP_MEMBERS = frozenset({"config", "config_dir", "model", "workspace", "env"})
CHANNEL_OPTIONS: Mapping[str, frozenset[str]] = {
    "stdio": frozenset({"on_eof"}),
    "http": frozenset({"get"}),
    "sse": frozenset({"endpoint"}),
}


@dataclass(frozen=True, slots=True)
class Channel:
    """A declared MCP peer channel ([TX-HEADER-09])."""

    name: str
    transport: str
    options: Mapping[str, JSON]


def number(value: JSON) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return float(value)
    if isinstance(value, Real):
        return float(value.value)
    return None


def strings(value: JSON) -> tuple[str, ...] | None:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(v for v in value if isinstance(v, str))
    return None


def pointers(value: JSON) -> tuple[str, ...] | None:
    """[TX-MATCH-07] an array of JSON Pointer patterns, else None."""
    patterns = strings(value)
    if patterns is None or any(not p.startswith("/") for p in patterns):
        return None
    return patterns


@dataclass(slots=True)
class HeaderReading:
    """One header being read: where it is, where problems go, what the checks found."""

    expected_id: str | None  # the id the file's path gives it ([TX-FORMAT-05])
    fixtures: Path
    report: Report
    id: str = ""
    description: str = ""
    requirements: tuple[str, ...] = ()
    level: str = "required"
    tags: tuple[str, ...] = ()
    timeouts: dict[str, float] = field(default_factory=lambda: {"expect": 5.0, "exit": 5.0})
    ignore: tuple[str, ...] = ()
    setup: dict[str, JSON] = field(default_factory=dict)
    channels: dict[str, Channel] = field(default_factory=dict)
    profile: str = "zeroclaw"
    needs: tuple[str, ...] = ()
    client_needs: tuple[str, ...] = ()
    client_files: dict[str, str] = field(default_factory=dict)

    def add(self, rule: str, message: str) -> None:
        self.report(1, rule, message)


def _format(value: JSON, r: HeaderReading) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        r.add("TX-HEADER-01", "format must be an integer")
    elif value != FORMAT_MAJOR:
        r.add("TX-HEADER-05", f"format {value} is not supported (this runner: {FORMAT_MAJOR})")


def _scenario(value: JSON, r: HeaderReading) -> None:
    expected = r.expected_id
    if not isinstance(value, str) or (expected is not None and value != expected):
        r.add("TX-FORMAT-05", f"scenario id must be {expected!r}")
    r.id = value if isinstance(value, str) else ""


def _description(value: JSON, r: HeaderReading) -> None:
    if not isinstance(value, str):
        r.add("TX-HEADER-01", "description must be a string")
        value = ""
    _check_description(value, r.report)
    r.description = value


def _requirements(value: JSON, r: HeaderReading) -> None:
    ids = strings(value)
    if not ids:
        r.add("TX-HEADER-03", "requirements must be a non-empty array of strings")
        return
    if len(set(ids)) != len(ids):
        r.add("TX-HEADER-03", "requirements must be distinct")
    for rid in ids:
        if not REQUIREMENT_ID.fullmatch(rid):
            r.add("TX-HEADER-03", f"{rid!r} is not a requirement ID")
    r.requirements = ids


def _level(value: JSON, r: HeaderReading) -> None:
    if not isinstance(value, str) or value not in LEVELS:
        r.add("TX-HEADER-04", f"level must be one of {', '.join(LEVELS)}")
        return
    r.level = value


def _tags(value: JSON, r: HeaderReading) -> None:
    tags = strings(value)
    if tags is None:
        r.add("TX-HEADER-01", "tags must be an array of strings")
        return
    r.tags = tags


def _timeouts(value: JSON, r: HeaderReading) -> None:
    if not isinstance(value, dict):
        r.add("TX-HEADER-01", "timeouts must be an object")
        return
    for key, limit in value.items():
        seconds = number(limit)
        if key not in r.timeouts or seconds is None or seconds <= 0:
            r.add("TX-HEADER-01", f"timeouts.{key} must be expect/exit seconds > 0")
        else:
            r.timeouts[key] = seconds


def _ignore(value: JSON, r: HeaderReading) -> None:
    patterns = pointers(value)
    if patterns is None:
        r.add("TX-MATCH-07", "ignore must be an array of JSON Pointers")
        return
    r.ignore = patterns


def _timing(value: JSON, r: HeaderReading) -> None:
    if not isinstance(value, str):
        r.add("TX-HEADER-01", "timing must be a string")


def _record(value: JSON, r: HeaderReading) -> None:
    # the masks themselves are record's to read (tools/generalise.py, [TX-RECORD-02])
    if not isinstance(value, dict) or set(value) - {"enabled", "masks"}:
        r.add("TX-HEADER-01", "record must be an object with enabled and masks")


def _setup(value: JSON, r: HeaderReading) -> None:
    if not isinstance(value, dict):
        r.add("TX-HEADER-01", "setup must be an object")
        value = {}
    _check_setup(value, r.fixtures, r.report)
    r.setup = value


def _channels_member(value: JSON, r: HeaderReading) -> None:
    r.channels = _channels(value, r.report)


def _profile(value: JSON, r: HeaderReading) -> None:
    r.profile = read_profile(value, r.report)


def _needs(value: JSON, r: HeaderReading) -> None:
    r.needs = read_needs(value, r.report)


def _client_needs(value: JSON, r: HeaderReading) -> None:
    r.client_needs = read_client_needs(value, r.report)


def _client_files(value: JSON, r: HeaderReading) -> None:
    r.client_files = read_client_files(value, r.report)


@dataclass(frozen=True, slots=True)
class Member:
    """One header member: its JSON type, the rule requiring it, its absent value, its check."""

    type: str  # the JSON Schema type the member's value has
    check: Callable[[JSON, HeaderReading], None]
    default: JSON  # what the check reads when the member is absent; None: not checked
    required: str | None = None  # the rule that requires the member, if one does


HEADER: Mapping[str, Member] = {
    "format": Member("integer", _format, FORMAT_MAJOR, required="TX-HEADER-01"),
    "scenario": Member("string", _scenario, "", required="TX-HEADER-01"),
    "description": Member("string", _description, "", required="TX-HEADER-01"),
    "requirements": Member("array", _requirements, [], required="TX-HEADER-01"),
    "level": Member("string", _level, "required", required="TX-HEADER-01"),
    "tags": Member("array", _tags, []),
    "timeouts": Member("object", _timeouts, {}),
    "ignore": Member("array", _ignore, []),
    "timing": Member("string", _timing, None),
    "record": Member("object", _record, {}),
    "setup": Member("object", _setup, {}),
    "channels": Member("object", _channels_member, {}),
    "profile": Member("string", _profile, None, required="TX-PROFILE-01"),
    "needs": Member("array", _needs, []),
    "client_needs": Member("array", _client_needs, []),
    "client_files": Member("object", _client_files, {}),
}


def read_header(
    header: Mapping[str, JSON], expected_id: str | None, fixtures: Path, report: Report
) -> HeaderReading:
    """[TX-HEADER-01] the members of HEADER, in its order; then the rules across members."""
    r = HeaderReading(expected_id, fixtures, report)
    for name, member in HEADER.items():
        if member.required is not None and name not in header:
            r.report(1, member.required, f"header lacks {name!r}")
    for name in header:
        if name not in HEADER and not name.startswith("x-"):
            r.report(1, "TX-HEADER-01", f"unknown header member {name!r}")
    for name, member in HEADER.items():
        if name in header:
            member.check(header[name], r)
        elif member.default is not None:
            member.check(member.default, r)
    if r.profile == "acp":
        acp_uses_no_hook(r.setup, len(r.channels), r.needs, report)
    return r


def _check_description(text: str, report: Report) -> None:
    # [TX-HEADER-02] one sentence, at most 200 characters, no "should"/"test that"
    lowered = text.lower()
    if not text or len(text) > 200:
        report(1, "TX-HEADER-02", "description must be 1 to 200 characters")
    if re.search(r"\bshould\b", lowered) or "test that" in lowered:
        report(1, "TX-HEADER-02", 'description must not say "should" or "test that"')
    if re.search(r"[.!?]\s+[A-Z]", text) or not text.rstrip().endswith((".", "!", "?")):
        report(1, "TX-HEADER-02", "description must be a single sentence ending in a full stop")


def support_path(value: JSON, fixtures: Path) -> Path | None:
    """A setup path relative to fixtures/ that lies under _support/ ([TX-HEADER-06])."""
    if not isinstance(value, str) or value.startswith("/") or not value.startswith("_support/"):
        return None
    target = (fixtures / value).resolve()
    support = (fixtures / "_support").resolve()
    if support not in target.parents or not target.exists():
        return None
    return target


def _check_setup(setup: dict[str, JSON], fixtures: Path, report: Report) -> None:
    for name in setup:
        if name not in SETUP_MEMBERS:
            report(1, "TX-HEADER-01", f"unknown setup member {name!r}")
    config = setup.get("config")
    if isinstance(config, dict):
        if set(config) != {"path"} or support_path(config["path"], fixtures) is None:
            report(1, "TX-HEADER-06", "setup.config.path must name a file under _support/")
    elif config is not None and not isinstance(config, str):
        report(1, "TX-HEADER-01", "setup.config must be TOML text or {path}")
    for name in ("config_dir", "model", "workspace"):
        if name in setup and support_path(setup[name], fixtures) is None:
            report(1, "TX-HEADER-06", f"setup.{name} must name an existing path under _support/")
    env = setup.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        report(1, "TX-HEADER-01", "setup.env must be an object of strings")
    else:
        for name in env:
            if name in HOST_ENV:
                report(1, "TX-HEADER-08", f"setup.env must not set {name}")


def _channels(value: JSON, report: Report) -> dict[str, Channel]:
    channels: dict[str, Channel] = {}
    if not isinstance(value, dict):
        report(1, "TX-HEADER-09", "channels must be an object")
        return channels
    for name, spec in value.items():
        if name == "acp" or not CHANNEL_NAME.fullmatch(name):
            report(1, "TX-HEADER-09", f"bad channel name {name!r}")
            continue
        if not isinstance(spec, dict) or spec.get("role") != "mcp-server":
            report(1, "TX-HEADER-09", f"channel {name!r} must have role mcp-server")
            continue
        transport = spec.get("transport")
        if not isinstance(transport, str) or transport not in TRANSPORTS:
            report(1, "TX-HEADER-09", f"channel {name!r} transport must be stdio, http or sse")
            continue
        options = {k: v for k, v in spec.items() if k not in ("role", "transport")}
        for option in options:
            if option not in CHANNEL_OPTIONS[transport] and not option.startswith("x-"):
                report(1, "TX-HEADER-09", f"channel {name!r}: unknown option {option!r}")
        channels[name] = Channel(name, transport, options)
    return channels
