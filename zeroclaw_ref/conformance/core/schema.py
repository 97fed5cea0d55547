"""The official ACP JSON Schema as a second judge of what an agent sends (issue 14 item 3).

The corpus pins a copy of the stable ACP v1 schema, ``fixtures/schema/acp-v1.schema.json``,
with its origin and sha256 in ``fixtures/schema/pins.json`` ([TX-LINT-03]). This module checks
JSON-RPC messages against that copy, one definition at a time:

* a request or a notification by its ``method`` (the definitions carrying ``x-method``, split by
  ``x-side``: the agent sends the methods a *client* handles, and the other way round);
* a response by the method of the request it answers, which only the caller knows: a ``result``
  against that method's ``…Response`` definition, an ``error`` against ``Error``;
* the envelope of every message (``jsonrpc``, the ``id`` type, ``result`` xor ``error``).

Methods whose names start with ``_`` are extensions: only their envelope is checked. A method
the schema does not define (ZeroClaw's ``session/stop``, say) is reported when it is *sent* as a
request or notification; the response to one is checked only as an envelope.

The schema cannot say everything ACP requires. One rule it states in prose is checked here as
well: a ``tool_call`` update opens a tool call whose ``toolCallId`` is unique within its session
(a replay after ``session/load`` starts the session's record again).

Design: the runner stays stdlib-only. ``jsonschema`` is imported only when a validator is asked
for; without it :func:`validator` returns None and says so once on stderr, and the runner goes
on without this judge. Our own test suite installs it (the ``test`` extra), so there it always
judges.

The runner's ``ScenarioRun`` uses :class:`JudgedExchange` as its ``exchange``: it is the
runner's ``Exchange`` (which already sees every line written on ``acp`` and every message taken
from it) with the judge added, and fails the scenario with reason ``schema`` at the first agent
message that breaks the schema, naming the frame being run, the message, the JSON Pointer and
the schema's complaint. Other callers can drive the judge directly (one :class:`Conversation`
per IUT connection)::

    judge = schema.validator(fixtures)            # None: no schema or no jsonschema
    talk = judge.conversation(schema.exceptions(sc.header)) if judge else None
    ...
    if talk: talk.sent(message)                   # every message written on ``acp``
    ...
    if talk:                                      # every message read from ``acp``
        for problem in talk.received(message):    # [] when the frame is schema-valid
            ...                                   # e.g. fail the scenario as "schema"

``Conversation.sent`` records the ids of the client's requests so that ``received`` can type the
responses; it returns the problems of the client's own message, which the runner may ignore
(scenarios send invalid input on purpose). ``Validator.problems(direction, message, answers)``
is the stateless form for callers that track requests themselves.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import sys
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Literal, Protocol

from .exchange import Exchange
from .jsonlex import JSON, JsonError, Real, dumps, loads
from .match import Mismatch
from .report import failure
from .transcript import Frame, Scenario

SCHEMA_FILE = Path("schema") / "acp-v1.schema.json"
PINS_FILE = Path("schema") / "pins.json"

EXCEPTION_MEMBER = "x-schema-exception"
Direction = Literal["agent", "client"]
"""Who sends the message: ``agent`` (agent → client) or ``client`` (client → agent)."""

_OTHER: dict[str, str] = {"agent": "client", "client": "agent"}
_ENVELOPE_REQUEST = {"required": ["jsonrpc", "id", "method"]}
_ENVELOPE_NOTIFICATION = {"required": ["jsonrpc", "method"]}
_ENVELOPE_RESULT = {"required": ["jsonrpc", "id", "result"]}
_ENVELOPE_ERROR = {"required": ["jsonrpc", "id", "error"]}


class _Fault(Protocol):
    """What this module reads of a ``jsonschema`` ValidationError."""

    message: str
    validator: object
    absolute_path: Sequence[object]
    relative_path: Sequence[object]
    relative_schema_path: Sequence[object]
    context: list[_Fault]


class _Checker(Protocol):
    """What this module uses of a ``jsonschema`` validator."""

    def iter_errors(self, instance: object) -> Iterable[_Fault]: ...


class SchemaError(Exception):
    """The pinned schema is unreadable or does not match its recorded sha256."""


@dataclass(frozen=True, slots=True)
class Pin:
    """Where the pinned copy comes from (``fixtures/schema/pins.json``)."""

    source: str
    version: str
    path: str
    sha256: str


@dataclass(frozen=True, slots=True)
class _Methods:
    """The definition names of one method, as the schema's ``x-method`` marks them."""

    request: str | None = None
    response: str | None = None
    notification: str | None = None


_said: set[str] = set()
_said_lock = threading.Lock()
_cache: dict[Path, Validator | None] = {}
_cache_lock = threading.Lock()


def say_once(text: str, write: Callable[[str], object] | None = None) -> None:
    """Write ``text`` (one line, to stderr by default) the first time it is said here."""
    with _said_lock:
        if text in _said:
            return
        _said.add(text)
    (write or sys.stderr.write)(text + "\n")


def read_pin(fixtures: Path) -> Pin:
    """The recorded origin and digest of the pinned schema.

    Raises:
        SchemaError: the file is missing or malformed.
    """
    try:
        raw = json.loads((fixtures / PINS_FILE).read_text(encoding="utf-8"))
        pin = raw["acp-v1"]
        return Pin(str(pin["source"]), str(pin["version"]), str(pin["path"]), str(pin["sha256"]))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SchemaError(f"{PINS_FILE}: cannot read the pin: {exc}") from exc


def validator(fixtures: Path, *, required: bool = False) -> Validator | None:
    """The judge for this corpus, built once per fixtures directory.

    Returns None, after saying why once on stderr, when the corpus pins no schema or when the
    ``jsonschema`` package is not importable; with ``required`` those raise instead (our own
    test suite must always judge).

    Raises:
        SchemaError: the copy does not match its pinned sha256, or (``required``) no judge.
    """
    key = fixtures.resolve()
    with _cache_lock:
        if key in _cache and (_cache[key] is not None or not required):
            return _cache[key]
    built = _build(key, required)
    with _cache_lock:
        _cache[key] = built
    return built


def _build(fixtures: Path, required: bool) -> Validator | None:
    path = fixtures / SCHEMA_FILE
    if not path.is_file():
        _absent(f"schema: {SCHEMA_FILE} not in the corpus; frames not validated", required)
        return None
    try:
        module = importlib.import_module("jsonschema")
    except ImportError:
        why = "schema: the jsonschema package is not installed; frames not validated"
        _absent(why + " against the ACP schema (pip install jsonschema)", required)
        return None
    pin = read_pin(fixtures)
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != pin.sha256:
        raise SchemaError(f"{SCHEMA_FILE}: sha256 {digest} is not the pinned {pin.sha256}")
    return Validator(json.loads(data), pin, module)


def _absent(why: str, required: bool) -> None:
    if required:
        raise SchemaError(why)
    say_once(why)


def _plain(value: JSON) -> object:
    """The message as the stdlib decoder would give it (a ``Real`` becomes a float)."""
    if isinstance(value, Real):
        return float(value.value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _pointer(path: Sequence[object]) -> str:
    parts = [str(p).replace("~", "~0").replace("/", "~1") for p in path]
    return "".join("/" + p for p in parts) or "(root)"


class Validator:
    """Checks single messages against the pinned schema's definitions."""

    def __init__(self, schema: dict[str, Any], pin: Pin, jsonschema: ModuleType) -> None:
        self.pin = pin
        self.version = f"{pin.source} {pin.version} {pin.path}"
        self._js = jsonschema
        self._defs: dict[str, Any] = schema["$defs"]
        self._root = {"$schema": schema.get("$schema"), "$defs": self._defs}
        self._compiled: dict[str, _Checker] = {}
        self._lock = threading.Lock()
        self.methods: dict[str, dict[str, _Methods]] = {"agent": {}, "client": {}}
        for name, definition in self._defs.items():
            method, side = definition.get("x-method"), definition.get("x-side")
            if not isinstance(method, str) or side not in ("agent", "client", "protocol"):
                continue
            for handler in ("agent", "client") if side == "protocol" else (side,):
                known = self.methods[handler].get(method, _Methods())
                for suffix in ("request", "response", "notification"):
                    if name.endswith(suffix.capitalize()):
                        known = _replace(known, suffix, name)
                self.methods[handler][method] = known

    def conversation(self, tolerate: Mapping[str, str] | None = None) -> Conversation:
        """A fresh tracker for one connection (``tolerate``: a scenario's exceptions)."""
        return Conversation(self, tolerate)

    def handled_by(self, side: str) -> frozenset[str]:
        """The methods the schema lets ``side`` (``agent`` or ``client``) be asked."""
        return frozenset(self.methods[side])

    def problems(
        self, direction: Direction, message: JSON, answers: str | None = None
    ) -> list[str]:
        """Why ``message``, sent by ``direction``, breaks the schema; [] when it is valid.

        ``answers`` is the method of the request a response answers (None: not known, only
        the envelope and an ``error`` member are checked).
        """
        value = _plain(message)
        if not isinstance(value, dict):
            return ["(root): a JSON-RPC message is an object"]
        handler = _OTHER[direction]  # the side that serves the methods this sender calls
        if "method" in value and "result" not in value and "error" not in value:
            method = value.get("method")
            if not isinstance(method, str):
                return ["/method: not a string"]
            is_request = value.get("id") is not None
            out = self._envelope(value, _ENVELOPE_REQUEST if is_request else _ENVELOPE_NOTIFICATION)
            if method.startswith("_"):
                return out  # [ACP extensibility] only the envelope of an extension method
            known = self.methods[handler].get(method)
            name = None if known is None else known.request if is_request else known.notification
            if name is None:
                kind = "request" if is_request else "notification"
                return [*out, f"/method: {method!r} is not a {kind} a {handler} handles"]
            return out + self._check(name, value.get("params"), "/params", method)
        if "result" in value:
            out = self._envelope(value, _ENVELOPE_RESULT)
            if "error" in value:
                out.append("(root): a response has either result or error, not both")
            known = self.methods[direction].get(answers) if answers else None
            if known is None or known.response is None:
                return out
            return out + self._check(known.response, value.get("result"), "/result", answers)
        if "error" in value:
            out = self._envelope(value, _ENVELOPE_ERROR)
            return out + self._check("Error", value.get("error"), "/error", answers or "?")
        return ["(root): neither a request, a notification nor a response"]

    def _envelope(self, value: dict[str, Any], required: dict[str, Any]) -> list[str]:
        schema = {
            "type": "object",
            "properties": {"jsonrpc": {"const": "2.0"}, "id": {"$ref": "#/$defs/RequestId"}},
            **required,
        }
        return self._errors(schema, value, "", "envelope")

    def _check(self, name: str, value: object, at: str, method: str | None) -> list[str]:
        where = f"{name} ({method})" if method else name
        return self._errors({"$ref": f"#/$defs/{name}"}, value, at, where)

    def _errors(self, schema: dict[str, Any], value: object, at: str, where: str) -> list[str]:
        check = self._compile(schema)
        found = sorted(check.iter_errors(value), key=lambda e: list(map(str, e.absolute_path)))
        out: list[str] = []
        for error in found[:3]:
            best = _explain(error)
            path = at + (_pointer(best.absolute_path) if best.absolute_path else "")
            out.append(f"{path or '(root)'}: {_message(best)} [{where}]")
        return out

    def _compile(self, schema: dict[str, Any]) -> _Checker:
        key = json.dumps(schema, sort_keys=True)
        with self._lock:
            found = self._compiled.get(key)
            if found is None:
                cls = self._js.Draft202012Validator
                found = self._compiled[key] = cls({**self._root, **schema})
        return found


def _explain(error: _Fault) -> _Fault:
    """The error inside an ``anyOf`` that names the real fault.

    The schema's unions are tagged (``sessionUpdate``, ``type``, ``outcome``…): a branch whose
    errors include a wrong tag, or a wrong type of the whole value, is not the one meant. When
    exactly one branch is left, its first error is the explanation, recursively.
    """
    while error.context:
        branches: dict[object, list[_Fault]] = {}
        for sub in error.context:
            branches.setdefault(sub.relative_schema_path[0], []).append(sub)
        meant = [
            errors for errors in branches.values() if not any(_wrong_tag(sub) for sub in errors)
        ]
        if len(meant) != 1:
            return error
        error = min(meant[0], key=lambda sub: (-len(sub.relative_path), str(sub.message)))
    return error


def _wrong_tag(error: _Fault) -> bool:
    depth = len(error.relative_path)
    if error.validator in ("const", "enum") and depth == 1:
        return True
    return error.validator == "type" and depth == 0


def _message(error: _Fault) -> str:
    """The validator's message, without a long dump of the instance."""
    text = str(error.message)
    if len(text) <= 160:
        return text
    if error.validator in ("anyOf", "oneOf"):
        return f"matches none of the {error.validator} alternatives"
    return text[:157] + "..."


def _replace(known: _Methods, field: str, name: str) -> _Methods:
    values = {"request": known.request, "response": known.response}
    values["notification"] = known.notification
    values[field] = name
    return _Methods(**values)


def exceptions(header: Mapping[str, JSON]) -> dict[str, str]:
    """[TX-LINT-03] a scenario's named divergences: ``x-schema-exception`` in its header.

    The member is an object from a JSON Pointer of the agent's messages (``/id``,
    ``/result/content``) to the reason, which names the divergence in CONTRACT.md.

    Raises:
        SchemaError: the member is not such an object.
    """
    value = header.get(EXCEPTION_MEMBER)
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        k.startswith("/") and isinstance(v, str) and v.strip() for k, v in value.items()
    ):
        raise SchemaError(f"{EXCEPTION_MEMBER}: an object from JSON Pointers to reasons")
    return {k: str(v) for k, v in value.items()}


class Conversation:
    """One connection as the schema sees it: request ids, and each session's tool calls.

    ``tolerate`` lists pointers (see :func:`exceptions`) whose problems are not reported.
    """

    def __init__(self, judge: Validator, tolerate: Mapping[str, str] | None = None) -> None:
        self.judge = judge
        self.tolerate = dict(tolerate or {})
        self._asked: dict[str, dict[tuple[str, str], str]] = {"agent": {}, "client": {}}
        self._tool_calls: dict[str, set[str]] = {}

    def sent(self, message: JSON) -> list[str]:
        """A message the client wrote; returns its own problems (often deliberate)."""
        return self._see("client", message)

    def received(self, message: JSON) -> list[str]:
        """A message the agent wrote; returns why it breaks the schema ([] when valid)."""
        return self._see("agent", message)

    def _see(self, direction: Direction, message: JSON) -> list[str]:
        answers: str | None = None
        if isinstance(message, dict):
            key = _id_key(message.get("id"))
            method = message.get("method")
            is_response = "result" in message or "error" in message
            if is_response and key is not None:
                answers = self._asked[_OTHER[direction]].pop(key, None)
            elif isinstance(method, str) and key is not None:
                self._asked[direction][key] = method
            if direction == "client" and method == "session/load":
                params = message.get("params")
                sid = params.get("sessionId") if isinstance(params, dict) else None
                if isinstance(sid, str):
                    self._tool_calls.pop(sid, None)  # the replay tells the history again
        problems = self.judge.problems(direction, message, answers)
        if direction == "agent" and not problems:
            problems = self._unique_tool_call(message)
        return [p for p in problems if not self._tolerated(p)]

    def _tolerated(self, problem: str) -> bool:
        pointer = problem.split(": ", 1)[0]
        return any(pointer == t or pointer.startswith(t + "/") for t in self.tolerate)

    def _unique_tool_call(self, message: JSON) -> list[str]:
        """A ``tool_call`` update names a toolCallId not yet used in its session."""
        if not isinstance(message, dict) or message.get("method") != "session/update":
            return []
        params = message.get("params")
        update = params.get("update") if isinstance(params, dict) else None
        if not isinstance(params, dict) or not isinstance(update, dict):
            return []
        if update.get("sessionUpdate") != "tool_call":
            return []
        sid, call = params.get("sessionId"), update.get("toolCallId")
        if not isinstance(sid, str) or not isinstance(call, str):
            return []
        seen = self._tool_calls.setdefault(sid, set())
        if call in seen:
            return [f"/params/update/toolCallId: {call!r} is already a tool call of this session"]
        seen.add(call)
        return []


def _id_key(value: JSON) -> tuple[str, str] | None:
    """A request id as a dictionary key that keeps 1 and "1" apart; None for no id."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return ("int", str(value))
    if isinstance(value, str):
        return ("str", value)
    return None


class JudgedExchange(Exchange):
    """The runner's ``Exchange`` with the schema judge on every ``acp`` message.

    Without a pinned schema or without ``jsonschema`` it is the plain ``Exchange``. A copy that
    does not match its pin, or a malformed ``x-schema-exception``, fails the scenario at the
    first message the agent sends, with reason ``schema`` and the cause.
    """

    def __init__(self, sc: Scenario) -> None:
        super().__init__()
        self.talk: Conversation | None = None
        self.unusable: str | None = None
        try:
            judge = validator(sc.fixtures)
            if judge is not None:
                self.talk = judge.conversation(exceptions(sc.header))
        except SchemaError as exc:
            self.unusable = str(exc)

    def sent(self, data: bytes) -> None:
        super().sent(data)
        if self.talk is None:
            return
        try:
            value = loads(data.decode("utf-8").strip())
        except (UnicodeDecodeError, JsonError):
            return  # a deliberately malformed line: nothing to type responses by
        for item in value if isinstance(value, list) else [value]:
            self.talk.sent(item)

    def received(self, value: JSON, frame: Frame | None = None) -> bool:
        """Judge one agent message (raising ``Failed``), then follow it as ``Exchange`` does."""
        if self.unusable is not None:
            raise failure("schema", frame, f"the schema judge cannot run: {self.unusable}")
        problems = self.talk.received(value) if self.talk is not None else []
        if problems:
            pointer = problems[0].split(": ", 1)[0]
            raise failure(
                "schema",
                frame,
                f"the agent's message breaks the ACP schema: {problems[0]}",
                mismatch=Mismatch(pointer, "schema", "schema-valid", problems[0]),
                extra=[
                    f"schema problems ({self.talk.judge.version if self.talk else '?'}):",
                    *(f"  {p}" for p in problems),
                    "message:",
                    f"  {dumps(value)}",
                ],
            )
        return super().received(value)
