"""The pure rules of ``serve``: servability, invented values, client checks (transcripts.md §14).

Design: nothing here touches a stream. ``servable_problems`` says why a
scenario cannot be served ([TX-SERVE-02]); ``Instantiator`` turns an ``expect``
value into the concrete message serve writes ([TX-SERVE-04]); ``check_client``
judges one client message against a ``send`` frame at the level of
[TX-SERVE-05] or in full ([TX-SERVE-05] ``serve_strict``, [TX-SERVE-06]).
play.py drives them.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from ..core.jsonlex import JSON, dumps, string_values
from ..core.match import ABSENT, MatchContext, Mismatch, match, split_pointer
from ..core.placeholders import HOST_NAMES, Placeholder, PlaceholderError, parse, type_matches
from ..core.transcript import Frame, Problem, Scenario
from ..peers import RELAY_SCRIPT
from .rules import real_client_problems

# The fixed instant every invented rfc3339 value uses [TX-SERVE-04].
FIXED_INSTANT = "2026-01-01T00:00:00Z"
# A match-time name that stands for ${WORKSPACE} while it is read from a client message.
_WORKSPACE_PROBE = "zc_serve_workspace_probe"


class _Missing:
    """No ``example`` value exists at this pointer."""


MISSING = _Missing()


# -- servability -----------------------------------------------------------------


def servable_problems(sc: Scenario) -> list[Problem]:
    """Why ``serve`` must refuse this scenario; empty when it is servable [TX-SERVE-02].

    A placeholder counts as any-typed when serve would have to invent its value
    and its type is ``any``: a whole-value ``${_}``/``${_:any}``, or the first
    occurrence of a lower-case name written as a whole value without a type or
    with ``any``. Later untyped occurrences of a name carry the type of the first
    ([TX-PH-08]) and untyped embedded placeholders are strings ([TX-PH-07]), so
    neither needs an ``example``.
    """
    out: list[Problem] = []

    def add(line: int, message: str) -> None:
        out.append(Problem(sc.display, line, "TX-SERVE-02", message))

    if sc.channels:
        add(1, f"it declares peer channels ({', '.join(sorted(sc.channels))}); serve has no peers")
    judged = [f for f in sc.frames if f.verb not in ("note", "expect_exit", "expect_stderr")]
    for frame in sc.frames:
        if frame.verb == "send_raw":
            add(frame.line, "a send_raw frame cannot be played by a client under test")
        elif frame.verb == "do" and (
            frame.value != "close_input" or frame.ch != "acp" or frame is not judged[-1]
        ):
            add(frame.line, f"do {dumps(frame.value)}: only a final close_input can be served")
    first_types: dict[str, str | None] = {}
    for frame in sc.frames:
        if frame.verb == "send":
            _bound_by_client(frame, first_types)
            continue
        if frame.verb not in ("expect", "expect_unordered"):
            continue
        values = frame.value if frame.verb == "expect_unordered" else [frame.value]
        found: list[str] = []
        for value in values if isinstance(values, list) else []:
            found += _invented_any(value, first_types)
        if frame.verb == "expect" and found and "example" not in frame.mods:
            add(frame.line, f"{found[0]} is any-typed and the frame has no example")
    # issue 15: what a real editor's client does by itself (ZC-SERVE-01, -03, -05)
    return out + real_client_problems(sc)


def _bound_by_client(frame: Frame, first_types: dict[str, str | None]) -> None:
    """Names a client message binds when serve matches it [TX-SERVE-05] [TX-SERVE-06].

    A response (and a ``serve_strict`` frame) is matched in full, so every name in
    it is bound from the client; a request or notification only at its session id.
    """
    value = frame.value
    if send_kind(value) == "call" and frame.mods.get("serve_strict") is not True:
        params = value.get("params") if isinstance(value, dict) else None
        value = params.get("sessionId") if isinstance(params, dict) else None
    for _pointer, text in string_values(value):
        try:
            template = parse(text)
        except PlaceholderError:
            continue
        for ph in template.placeholders:
            if ph.is_binding and ph.name not in first_types:
                first_types[ph.name] = ph.type


def _invented_any(value: JSON, first_types: dict[str, str | None]) -> list[str]:
    """Any-typed placeholders serve would invent in ``value``; records first types."""
    found: list[str] = []
    for pointer, text in string_values(value):
        try:
            template = parse(text)
        except PlaceholderError:
            continue
        whole = template.whole is not None
        for ph in template.placeholders:
            if ph.is_host:
                continue
            if ph.is_binding:
                if ph.name in first_types:
                    continue
                first_types[ph.name] = ph.type
            if whole and ph.type in (None, "any"):
                found.append(f"{ph.text()} at {pointer or '(root)'}")
    return found


# -- runner-provided names ----------------------------------------------------------


class HostNames(Mapping[str, str]):
    """The upper-case names serve provides, created on first use [TX-PH-04].

    ``${WORKSPACE}`` is taken from the client when it shows it ([TX-SERVE-04]);
    otherwise it, like ``CONFIG_DIR``, ``DATA_DIR`` and ``HOME``, is a directory
    under one fresh temporary root that ``cleanup`` removes.
    """

    def __init__(self, fixtures: Path) -> None:
        self._values: dict[str, str] = {
            "FIXTURES": os.path.realpath(fixtures),
            "PYTHON": os.path.realpath(sys.executable),
            "RELAY": str(RELAY_SCRIPT),
        }
        self._root: Path | None = None

    def __contains__(self, name: object) -> bool:
        return name in HOST_NAMES

    def __getitem__(self, name: str) -> str:
        if name not in HOST_NAMES:
            raise KeyError(name)
        if name not in self._values:
            self._values[name] = self._create(name)
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(HOST_NAMES))

    def __len__(self) -> int:
        return len(HOST_NAMES)

    @property
    def workspace_known(self) -> bool:
        return "WORKSPACE" in self._values

    def bind_workspace(self, path: str) -> None:
        self._values["WORKSPACE"] = path

    def fresh_workspace(self) -> None:
        """The client did not show its workspace: use a new directory of serve's own."""
        if not self.workspace_known:
            self._values["WORKSPACE"] = self._create("WORKSPACE")

    def resolved(self) -> dict[str, str]:
        """The values fixed so far (for scrubbing reports), creating nothing."""
        return dict(self._values)

    def _create(self, name: str) -> str:
        if self._root is None:
            self._root = Path(os.path.realpath(tempfile.mkdtemp(prefix="zc-serve-")))
        relative = {
            "WORKSPACE": "workspace",
            "CONFIG_DIR": "config",
            "DATA_DIR": "config/data",
            "HOME": "home",
        }[name]
        path = self._root / relative
        path.mkdir(parents=True, exist_ok=True)
        return str(path)

    def cleanup(self) -> None:
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)


# -- instantiating what serve writes ---------------------------------------------------


def invented(name: str, ptype: str | None, n: int, workspace: Callable[[], str]) -> JSON:
    """The deterministic value of a type when no ``example`` gives one [TX-SERVE-04].

    ``n`` numbers the invented values of one serve session from 1; ``_`` is
    called ``value`` wherever a name is part of the result. ``workspace`` is only
    asked for a ``path``, so inventing a value never fixes ``${WORKSPACE}`` early.
    """
    label = "value" if name == "_" else name
    kind = ptype or "any"
    if kind == "uuid":
        return f"00000000-0000-4000-8000-{n:012x}"
    if kind in ("int", "number"):
        return n
    if kind == "rfc3339":
        return FIXED_INSTANT
    if kind == "path":
        return f"{workspace()}/{label}"
    if kind == "bool":
        return False
    if kind == "base64":
        return ""
    if kind == "sha256":
        return hashlib.sha256(label.encode("utf-8")).hexdigest()
    # string, nonempty, id and any: a string
    return f"{label}-{n}"


class Instantiator:
    """Turns expected values into concrete messages, binding as it goes [TX-SERVE-04]."""

    def __init__(self, host: HostNames, bindings: dict[str, JSON]) -> None:
        self.host = host
        self.bindings = bindings
        self.counter = 0

    def instantiate(self, value: JSON, example: JSON | _Missing = MISSING) -> JSON:
        """Walk ``value`` and ``example`` together, replacing every placeholder."""
        if isinstance(value, dict):
            ex_obj = example if isinstance(example, dict) else {}
            return {k: self.instantiate(v, ex_obj.get(k, MISSING)) for k, v in value.items()}
        if isinstance(value, list):
            ex_list = example if isinstance(example, list) else []
            return [
                self.instantiate(v, ex_list[i] if i < len(ex_list) else MISSING)
                for i, v in enumerate(value)
            ]
        if not isinstance(value, str):
            return value
        template = parse(value)
        if template.literal is not None:
            return template.literal
        whole = template.whole
        if whole is not None:
            return self._whole(whole, example)
        return self._embedded(value, template.parts, example)

    def _known(self, ph: Placeholder) -> bool:
        return ph.is_host or (ph.is_binding and ph.name in self.bindings)

    def _value_of(self, ph: Placeholder) -> JSON:
        return self.host[ph.name] if ph.is_host else self.bindings[ph.name]

    def _invent(self, ph: Placeholder) -> JSON:
        self.counter += 1
        value = invented(ph.name, ph.type, self.counter, lambda: self.host["WORKSPACE"])
        if ph.is_binding:
            self.bindings[ph.name] = value
        return value

    def _whole(self, ph: Placeholder, example: JSON | _Missing) -> JSON:
        if self._known(ph):
            return self._value_of(ph)
        if not isinstance(example, _Missing) and type_matches(ph.type, example):
            if ph.is_binding:
                self.bindings[ph.name] = example
            return example
        return self._invent(ph)

    def _embedded(
        self, text: str, parts: tuple[str | Placeholder, ...], example: JSON | _Missing
    ) -> str:
        if all(isinstance(p, str) or self._known(p) for p in parts):
            return self._join(parts)
        if isinstance(example, str):
            # the example is usable when it is an instance of the template as bound now
            trial = MatchContext(self.host, dict(self.bindings))
            if match(text, example, trial) is None:
                self.bindings.update(trial.bindings)
                return example
        return self._join(parts)

    def _join(self, parts: tuple[str | Placeholder, ...]) -> str:
        out: list[str] = []
        for part in parts:
            if isinstance(part, str):
                out.append(part)
                continue
            value = self._value_of(part) if self._known(part) else self._invent(part)
            if isinstance(value, bool) or not isinstance(value, str | int):
                raise PlaceholderError(f"{part.text()} is bound to a value that cannot be embedded")
            out.append(str(value))
        return "".join(out)


# -- judging client messages -------------------------------------------------------------


def send_kind(value: JSON) -> str:
    """``call`` (request or notification), ``response``, or ``other`` for anything else."""
    if isinstance(value, dict):
        if "method" in value:
            return "call"
        if "result" in value or "error" in value:
            return "response"
    return "other"


def bind_workspace(frame: Frame, actual: JSON, host: HostNames, ctx: MatchContext) -> None:
    """Take ``${WORKSPACE}`` from the first client message that shows it [TX-SERVE-04].

    The value at the pointer of the frame's first ``${WORKSPACE}`` is used when it
    is an absolute path; otherwise serve creates a fresh directory.
    """
    for pointer, text in string_values(frame.value):
        template = parse(text)
        if not any(p.is_host and p.name == "WORKSPACE" for p in template.placeholders):
            continue
        found = _at(actual, pointer)
        if isinstance(found, str):
            probe = "".join(
                p.replace("${", "$${")
                if isinstance(p, str)
                else ("${" + _WORKSPACE_PROBE + ":path}" if p.name == "WORKSPACE" else p.text())
                for p in template.parts
            )
            trial = MatchContext(ctx.host, dict(ctx.bindings))
            if match(probe, found, trial) is None:
                value = trial.bindings.get(_WORKSPACE_PROBE)
                if isinstance(value, str) and type_matches("path", value):
                    host.bind_workspace(value)
                    return
        host.fresh_workspace()
        return


def _at(value: JSON, pointer: str) -> JSON | _Missing:
    for token in split_pointer(pointer):
        if isinstance(value, dict) and token in value:
            value = value[token]
        elif isinstance(value, list) and token.isdigit() and int(token) < len(value):
            value = value[int(token)]
        else:
            return MISSING
    return value


def _prefixed(miss: Mismatch | None, prefix: str) -> Mismatch | None:
    if miss is None:
        return None
    return Mismatch(prefix + miss.pointer, miss.reason, miss.expected, miss.actual)


def check_client(frame: Frame, actual: JSON, ctx: MatchContext) -> tuple[Mismatch | None, str]:
    """Judge one client message against a ``send`` frame; (mismatch, what was checked).

    Requests and notifications are held to their method, to being a request or
    a notification, and to the session id when the frame has one [TX-SERVE-05];
    with ``serve_strict`` they are then matched in full except for ``id``.
    Responses and anything else are matched in full [TX-SERVE-06], so a response
    must carry the id serve used.
    """
    expected = frame.value
    kind = send_kind(expected)
    if kind != "call" or not isinstance(expected, dict):
        return match(expected, actual, ctx), "the whole message"
    if not isinstance(actual, dict):
        return Mismatch("", "type", "a JSON-RPC request or notification", dumps(actual)), "type"
    if "method" not in actual:
        return Mismatch("/method", "missing-key", dumps(expected["method"]), ABSENT), "method"
    miss = _prefixed(match(expected["method"], actual["method"], ctx), "/method")
    if miss is not None:
        return miss, "method"
    if "id" in expected and "id" not in actual:
        return Mismatch("/id", "missing-key", "an id (a request)", "no id (a notification)"), "id"
    if "id" not in expected and "id" in actual:
        return Mismatch("/id", "extra-key", "no id (a notification)", dumps(actual["id"])), "id"
    params = expected.get("params")
    if isinstance(params, dict) and "sessionId" in params:
        got = actual.get("params")
        if not isinstance(got, dict) or "sessionId" not in got:
            shown = dumps(params["sessionId"])
            return Mismatch("/params/sessionId", "missing-key", shown, ABSENT), "sessionId"
        miss = _prefixed(match(params["sessionId"], got["sessionId"], ctx), "/params/sessionId")
        if miss is not None:
            return miss, "sessionId"
    if frame.mods.get("serve_strict") is True:
        strict_expected = {k: v for k, v in expected.items() if k != "id"}
        strict_actual = {k: v for k, v in actual.items() if k != "id"}
        return match(strict_expected, strict_actual, ctx), "the whole message (serve_strict)"
    return None, "method, id and sessionId"
