"""The offline, deterministic `demo` model provider (config.md §4.1, CFG-PROV-09, CFG-PROV-15).

Each request is answered from its last message alone (and, for `recall:`, the user message before
it), so every interesting ACP flow can be tried by typing a prefix.

Design notes:
- The last message decides: a `tool` message is summarised as `<t> result: <text>`; a `user`
  message goes through the prefix grammar; any other role (an assistant or system message, or no
  message at all) is answered by the echo rule with its trimmed content, because the grammar is
  about what the user typed.
- The leading timestamp removed from user text is `TIMESTAMP_PREFIX`: `[`, an ISO date
  `YYYY-MM-DD`, anything up to the first `]` on the same line, `]` and exactly one space. Requiring
  the date keeps bracketed user text such as `[note] run: ls` intact.
- Only text is chunked: the `think:` thought is one `ThoughtChunk`. An `ask:` whose parts are all
  empty (`ask: |`) has no question and falls through to echo; `plan: ;` is a call with no todos.
- `stream` is a generator function: the request is recorded, and ids are taken, when the stream is
  first advanced (on the engine's pump thread), never at call time.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from zeroclaw_ref.config.model import ProviderConfig
from zeroclaw_ref.core.jsontypes import JSON, JSONObject, as_object, loads
from zeroclaw_ref.core.limits import DEMO_SLOW_MAX_TICKS, DEMO_SLOW_TICK_SECS
from zeroclaw_ref.providers.base import (
    Done,
    ModelRequest,
    ProviderEvent,
    TextChunk,
    ThoughtChunk,
    ToolCall,
    record_of,
)

# [CFG-PROV-09] one leading `[<timestamp>] ` prefix; see the module note for the exact shape.
TIMESTAMP_PREFIX = re.compile(r"\[[0-9]{4}-[0-9]{2}-[0-9]{2}[^\]\n]*\] ")

# [CFG-PROV-09] a tool result is cut to this many characters, then `…` is appended.
RESULT_SUMMARY_CHARS = 200

# [CFG-PROV-09] text is split into `\S+\s*` tokens, three tokens to a chunk.
_TOKEN = re.compile(r"\S+\s*")
_TOKENS_PER_CHUNK = 3

_DECIMAL = re.compile(r"[0-9]+")
_FIRST_WORD = re.compile(r"(\S+)\s*(.*)", re.DOTALL)

CALL_ARGUMENTS_TEXT = "call: arguments must be a JSON object"


def strip_timestamp(text: str) -> str:
    """[CFG-PROV-09] user text with one leading timestamp prefix removed, then trimmed."""
    match = TIMESTAMP_PREFIX.match(text)
    return (text[match.end() :] if match else text).strip()


def split_chunks(reply: str) -> list[str]:
    """[CFG-PROV-09] the reply as chunks of three `\\S+\\s*` tokens, concatenating to it exactly."""
    tokens = _TOKEN.findall(reply)
    lead = reply[: len(reply) - len(reply.lstrip())]
    # Design: leading whitespace matches no token; it joins the first chunk so nothing is lost.
    if lead and tokens:
        tokens[0] = lead + tokens[0]
    elif lead:
        tokens = [lead]
    step = _TOKENS_PER_CHUNK
    return ["".join(tokens[i : i + step]) for i in range(0, len(tokens), step)]


def _text_events(reply: str) -> list[ProviderEvent]:
    return [TextChunk(c) for c in split_chunks(reply)]


def _content(message: JSONObject) -> str:
    value = message.get("content")
    return value if isinstance(value, str) else ""


def _first_word(rest: str) -> tuple[str, str]:
    match = _FIRST_WORD.match(rest)
    return (match.group(1), match.group(2)) if match else ("", "")


def _ask(rest: str) -> tuple[str, JSONObject] | None:
    parts: list[JSON] = [p.strip() for p in rest.split("|") if p.strip()]
    # Design: `ask: |` leaves no question to ask, so it falls through to the echo rule.
    if not parts:
        return None
    arguments: JSONObject = {"question": parts[0]}
    if len(parts) > 1:
        arguments["choices"] = parts[1:]
    return "ask_user", arguments


def _plan(rest: str) -> tuple[str, JSONObject] | None:
    todos: list[JSON] = [
        {"content": item.strip(), "status": "pending"} for item in rest.split(";") if item.strip()
    ]
    return "todo_write", {"todos": todos}


def _write(rest: str) -> tuple[str, JSONObject] | None:
    path, content = _first_word(rest)
    return "file_write", {"path": path, "content": content}


# [CFG-PROV-09] prefixes that become a call of a fixed tool, subject to the availability check.
_TOOL_PREFIXES: dict[str, Callable[[str], tuple[str, JSONObject] | None]] = {
    "run:": lambda rest: ("shell", {"command": rest}),
    "read:": lambda rest: ("file_read", {"path": rest}),
    "deliver:": lambda rest: ("deliver_file", {"path": rest}),
    "write:": _write,
    "ask:": _ask,
    "plan:": _plan,
}


class DemoProvider:
    """The `demo` kind: answers by prefix grammar and keeps every request in `requests`."""

    blocking = False  # waits only on request.stop: drained inline by the engine

    def __init__(self, config: ProviderConfig, config_dir: Path | None = None) -> None:
        # [CFG-PROV-15] the demo keeps `requests` only; `config_dir` is unused (no record file).
        del config_dir
        self.name = config.name
        self.requests: list[JSONObject] = []
        self._next_call = 1

    def stream(self, request: ModelRequest) -> Iterator[ProviderEvent]:
        """Yield the answer to `request` (CFG-PROV-09), ending with `Done` unless stopped."""
        self.requests.append(record_of(request))
        messages = request.messages
        last = messages[-1] if messages else {}
        if last.get("role") == "tool":
            yield from _text_events(self._summarise_result(last, messages))
        elif last.get("role") == "user":
            text = strip_timestamp(_content(last))
            events = self._answer_user(text, request)
            yield from events if events is not None else _text_events(f"Echo: {text}")
            # [ACP-RT-04] a cancelled `slow:` turn ends between two ticks, without `Done`.
            if request.stop.is_set():
                return
        else:
            yield from _text_events(f"Echo: {_content(last).strip()}")
        yield Done()

    def _summarise_result(self, last: JSONObject, messages: tuple[JSONObject, ...]) -> str:
        # [CFG-PROV-09] [POL-TOOL-03] `content` is the text the model was given for the result.
        result = _content(last)
        if len(result) > RESULT_SUMMARY_CHARS:
            result = result[:RESULT_SUMMARY_CHARS] + "…"
        return f"{_tool_name(last, messages)} result: {result}"

    def _answer_user(self, text: str, request: ModelRequest) -> Iterable[ProviderEvent] | None:
        """The events for user `text`, or None when it falls through to the echo rule."""
        prefix, colon, tail = text.partition(":")
        if not colon:
            return None
        key, rest = prefix + colon, tail.strip()
        # [CFG-PROV-09] an empty `<rest>` falls through to echo, except for `recall:`.
        if key == "recall:":
            return _text_events(f"Previous: {_previous_user(request.messages)}")
        if not rest:
            return None
        builder = _TOOL_PREFIXES.get(key)
        if builder is not None:
            built = builder(rest)
            return None if built is None else self._tool_call(built[0], built[1], request)
        special: dict[str, Callable[[str, ModelRequest], Iterable[ProviderEvent] | None]] = {
            "call:": self._call,
            "think:": lambda r, _req: [ThoughtChunk(r), *_text_events("Done thinking.")],
            "slow:": _slow,
        }
        handler = special.get(key)
        return handler(rest, request) if handler is not None else None

    def _tool_call(
        self, name: str, arguments: JSONObject, request: ModelRequest
    ) -> list[ProviderEvent]:
        # [CFG-PROV-09] a prefix naming a tool the request does not offer is answered in text.
        if name not in {t.name for t in request.tools}:
            return _text_events(f"Tool {name} is not available to this agent.")
        return [self._emit_call(name, arguments)]

    def _call(self, rest: str, request: ModelRequest) -> list[ProviderEvent]:
        # [CFG-PROV-09] `call:` names its tool exactly and skips the availability check, so that
        # unknown and excluded tools can be exercised.
        del request
        name, json_text = _first_word(rest)
        try:
            arguments = as_object(loads(json_text)) if json_text.strip() else None
        except ValueError:
            arguments = None
        if arguments is None:
            return _text_events(CALL_ARGUMENTS_TEXT)
        return [self._emit_call(name, arguments)]

    def _emit_call(self, name: str, arguments: JSONObject) -> ToolCall:
        # [CFG-PROV-09] ids are `demo-call-<n>`, counting from 1 per provider instance.
        call = ToolCall(f"demo-call-{self._next_call}", name, arguments)
        self._next_call += 1
        return call


def _slow(rest: str, request: ModelRequest) -> Iterator[ProviderEvent] | None:
    """[CFG-PROV-09] `slow: <n>` ticks, or None when `<rest>` is not a decimal integer ≥ 1."""
    if not _DECIMAL.fullmatch(rest):
        return None
    digits = rest.lstrip("0")
    # Design: cap by length first; int() refuses very long digit strings.
    count = DEMO_SLOW_MAX_TICKS if len(digits) > 5 else min(int(digits or "0"), DEMO_SLOW_MAX_TICKS)
    if count < 1:
        return None
    return _ticks(count, request)


def _ticks(count: int, request: ModelRequest) -> Iterator[ProviderEvent]:
    # [CFG-PROV-09] [DESIGN §7.10] the 50 ms period is the specified behaviour, so it is a wait on
    # `stop`, which also ends the stream at once when the turn is cancelled.
    for i in range(1, count + 1):
        if i > 1 and request.stop.wait(DEMO_SLOW_TICK_SECS):
            return
        yield TextChunk(f"tick {i} ")


def _tool_name(last: JSONObject, messages: tuple[JSONObject, ...]) -> str:
    """The tool a result belongs to: its `name`, else the assistant call with its `toolCallId`."""
    name = last.get("name")
    if isinstance(name, str):
        return name
    call_id = last.get("toolCallId")
    for message in reversed(messages):
        calls = message.get("toolCalls")
        for call in calls if isinstance(calls, list) else []:
            found = as_object(call)
            if found is not None and found.get("id") == call_id:
                called = found.get("name")
                return called if isinstance(called, str) else ""
    return ""


def _previous_user(messages: tuple[JSONObject, ...]) -> str:
    """[CFG-PROV-09] the user message before the last one, prefix removed, or `(none)`."""
    users = [m for m in messages[:-1] if m.get("role") == "user"]
    return strip_timestamp(_content(users[-1])) if users else "(none)"
