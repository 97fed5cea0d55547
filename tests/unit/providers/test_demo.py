"""The demo provider's grammar, chunking, ids and cancellation (config.md CFG-PROV-09, -15)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from zeroclaw_ref.config.model import ProviderConfig
from zeroclaw_ref.core.jsontypes import JSONObject
from zeroclaw_ref.providers.base import (
    Done,
    ModelRequest,
    ProviderEvent,
    TextChunk,
    ThoughtChunk,
    ToolCall,
    ToolSpec,
)
from zeroclaw_ref.providers.demo import DemoProvider, split_chunks, strip_timestamp

ALL_TOOLS = ("shell", "file_read", "deliver_file", "file_write", "ask_user", "todo_write")
SYSTEM: JSONObject = {"role": "system", "content": "You are a demo."}


def _provider() -> DemoProvider:
    return DemoProvider(ProviderConfig(name="demo", kind="demo", model="demo"), Path())


def _request(*messages: JSONObject, tools: tuple[str, ...] = ALL_TOOLS) -> ModelRequest:
    return ModelRequest(
        model="demo",
        temperature=0.7,
        messages=(SYSTEM, *messages),
        tools=tuple(ToolSpec(name=n, description=n) for n in tools),
    )


def _user(text: str) -> JSONObject:
    return {"role": "user", "content": text}


def _answer(text: str, tools: tuple[str, ...] = ALL_TOOLS) -> list[ProviderEvent]:
    return list(_provider().stream(_request(_user(text), tools=tools)))


def _text(events: list[ProviderEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextChunk))


def _call(name: str, arguments: JSONObject) -> list[ProviderEvent]:
    return [ToolCall("demo-call-1", name, arguments), Done()]


def _says(text: str) -> list[ProviderEvent]:
    return [*(TextChunk(c) for c in split_chunks(text)), Done()]


GRAMMAR = [
    ("run: ls -la", _call("shell", {"command": "ls -la"})),
    ("read:   notes/a.md  ", _call("file_read", {"path": "notes/a.md"})),
    ("deliver: out/report.pdf", _call("deliver_file", {"path": "out/report.pdf"})),
    (
        "write: a.txt hello  world",
        _call("file_write", {"path": "a.txt", "content": "hello  world"}),
    ),
    (
        "write: a.txt \n line1\nline2",
        _call("file_write", {"path": "a.txt", "content": "line1\nline2"}),
    ),
    ("write: a.txt", _call("file_write", {"path": "a.txt", "content": ""})),
    ('call: my_tool {"x": [1, 2]}', _call("my_tool", {"x": [1, 2]})),
    ("call: nowhere_tool {}", _call("nowhere_tool", {})),
    ("call: my_tool", _says("call: arguments must be a JSON object")),
    ("call: my_tool [1, 2]", _says("call: arguments must be a JSON object")),
    ("call: my_tool {not json", _says("call: arguments must be a JSON object")),
    ("call: my_tool NaN", _says("call: arguments must be a JSON object")),
    (
        "ask: Proceed? | yes | | no ",
        _call("ask_user", {"question": "Proceed?", "choices": ["yes", "no"]}),
    ),
    ("ask: Proceed?", _call("ask_user", {"question": "Proceed?"})),
    ("ask: Proceed? | ", _call("ask_user", {"question": "Proceed?"})),
    (
        "plan: write code; ; test it ;",
        _call(
            "todo_write",
            {
                "todos": [
                    {"content": "write code", "status": "pending"},
                    {"content": "test it", "status": "pending"},
                ]
            },
        ),
    ),
    ("plan: ;", _call("todo_write", {"todos": []})),
    ("think: about  it", [ThoughtChunk("about  it"), TextChunk("Done thinking."), Done()]),
    ("slow: 3", [TextChunk("tick 1 "), TextChunk("tick 2 "), TextChunk("tick 3 "), Done()]),
    ("slow: 01", [TextChunk("tick 1 "), Done()]),
    ("hello there", _says("Echo: hello there")),
    ("  padded  ", _says("Echo: padded")),
]

FALL_THROUGH = [
    "run:",
    "run:   ",
    "read:",
    "deliver:",
    "write:",
    "call:",
    "ask:",
    "ask: | ",
    "plan:",
    "think:",
    "slow:",
    "slow: 0",
    "slow: 000",
    "slow: -2",
    "slow: +2",
    "slow: 2.5",
    "slow: two",
    "slow: ２",
    "Run: ls",
    "RUN: ls",
    "run ls",
    "unknown: thing",
    "http://example.com",
]


@pytest.mark.req("CFG-PROV-09")
@pytest.mark.parametrize(("text", "expected"), GRAMMAR, ids=[g[0] for g in GRAMMAR])
def test_each_prefix_produces_its_events(text: str, expected: list[ProviderEvent]) -> None:
    assert _answer(text) == expected


@pytest.mark.req("CFG-PROV-09")
@pytest.mark.parametrize("text", FALL_THROUGH)
def test_empty_or_invalid_rest_falls_through_to_echo(text: str) -> None:
    assert _answer(text) == _says(f"Echo: {text.strip()}")


class _InstantStop(threading.Event):
    """A stop event whose timed waits return at once, recording the period asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.periods: list[float | None] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.periods.append(timeout)
        return self.is_set()


@pytest.mark.req("CFG-PROV-09")
@pytest.mark.parametrize(
    ("rest", "count"), [("1", 1), ("3", 3), ("10000", 10000), ("10001", 10000), ("9" * 5000, 10000)]
)
def test_slow_emits_min_n_10000_ticks_fifty_ms_apart(rest: str, count: int) -> None:
    stop = _InstantStop()
    request = ModelRequest("demo", 0.7, (SYSTEM, _user(f"slow: {rest}")), stop=stop)
    events = list(_provider().stream(request))
    assert events == [*(TextChunk(f"tick {i} ") for i in range(1, count + 1)), Done()]
    assert stop.periods == [0.05] * (count - 1)


@pytest.mark.req("CFG-PROV-09", "ACP-RT-04")
@pytest.mark.parametrize("after", [1, 2])
def test_slow_stops_between_ticks_once_stop_is_set(after: int) -> None:
    request = _request(_user("slow: 10000"))
    stream = _provider().stream(request)
    seen = [next(stream) for _ in range(after)]
    request.stop.set()
    assert seen == [TextChunk(f"tick {i} ") for i in range(1, after + 1)]
    assert list(stream) == []


@pytest.mark.req("CFG-PROV-09")
@pytest.mark.parametrize(
    ("prefix", "tool"),
    [
        ("run: ls", "shell"),
        ("read: a", "file_read"),
        ("deliver: a", "deliver_file"),
        ("write: a b", "file_write"),
        ("ask: q", "ask_user"),
        ("plan: a", "todo_write"),
    ],
)
def test_prefix_naming_an_unoffered_tool_answers_in_text(prefix: str, tool: str) -> None:
    others = tuple(t for t in ALL_TOOLS if t != tool)
    assert _answer(prefix, tools=others) == _says(f"Tool {tool} is not available to this agent.")


@pytest.mark.req("CFG-PROV-09")
def test_call_skips_the_availability_check() -> None:
    assert _answer("call: shell {}", tools=()) == _call("shell", {})


@pytest.mark.req("CFG-PROV-09")
def test_tool_call_ids_count_per_instance_and_skip_text_answers() -> None:
    provider = _provider()
    texts = ["run: a", "hello", "read: b", "call: x 1", 'call: x {"k": 1}']
    calls = [
        e for t in texts for e in provider.stream(_request(_user(t))) if isinstance(e, ToolCall)
    ]
    assert [c.id for c in calls] == ["demo-call-1", "demo-call-2", "demo-call-3"]
    # A new instance starts again at 1 [CFG-PROV-09].
    fresh = next(_provider().stream(_request(_user("run: a"))))
    assert fresh == ToolCall("demo-call-1", "shell", {"command": "a"})


@pytest.mark.req("CFG-PROV-09")
@pytest.mark.parametrize(
    ("reply", "chunks"),
    [
        ("Echo: a b c d e f g", ["Echo: a b ", "c d e ", "f g"]),
        ("Echo: a  b\n\tc", ["Echo: a  b\n\t", "c"]),
        ("Echo: one two", ["Echo: one two"]),
        ("Echo: ", ["Echo: "]),
        ("  lead x", ["  lead x"]),
        ("", []),
    ],
)
def test_text_is_chunked_three_tokens_at_a_time(reply: str, chunks: list[str]) -> None:
    assert split_chunks(reply) == chunks
    assert "".join(split_chunks(reply)) == reply


@pytest.mark.req("CFG-PROV-09")
def test_echo_chunks_arrive_in_threes() -> None:
    assert _answer("one two three four five six seven") == [
        TextChunk("Echo: one two "),
        TextChunk("three four five "),
        TextChunk("six seven"),
        Done(),
    ]


@pytest.mark.req("CFG-PROV-09")
@pytest.mark.parametrize(
    ("text", "stripped"),
    [
        ("[2025-01-02T03:04:05Z] run: ls", "run: ls"),
        ("[2025-01-02 03:04:05 UTC]   run: ls  ", "run: ls"),
        ("[2025-01-02T03:04:05+01:00] [2025-01-02] run: ls", "[2025-01-02] run: ls"),
        ("[note] run: ls", "[note] run: ls"),
        ("[2025-01-02]run: ls", "[2025-01-02]run: ls"),
        (" [2025-01-02] run: ls", "[2025-01-02] run: ls"),
        ("[2025-01-02\n] run: ls", "[2025-01-02\n] run: ls"),
    ],
)
def test_one_leading_timestamp_prefix_is_removed(text: str, stripped: str) -> None:
    assert strip_timestamp(text) == stripped


@pytest.mark.req("CFG-PROV-09")
def test_grammar_applies_after_the_timestamp_prefix() -> None:
    assert _answer("[2025-01-02T03:04:05Z] run: ls") == _call("shell", {"command": "ls"})
    assert _answer("[2025-01-02T03:04:05Z] hi") == _says("Echo: hi")


@pytest.mark.req("CFG-PROV-09")
@pytest.mark.parametrize(
    ("history", "expected"),
    [
        ((), "Previous: (none)"),
        ((_user("[2025-01-02T03:04:05Z]  first  "),), "Previous: first"),
        (
            (
                _user("older"),
                {"role": "assistant", "content": "Echo: older"},
                _user("newer"),
                {"role": "assistant", "content": "", "toolCalls": []},
                {"role": "tool", "toolCallId": "c", "name": "shell", "content": "x"},
            ),
            "Previous: newer",
        ),
        (({"role": "assistant", "content": "not a user"},), "Previous: (none)"),
    ],
)
def test_recall_answers_with_the_previous_user_message(
    history: tuple[JSONObject, ...], expected: str
) -> None:
    for text in ("recall:", "recall: ignored rest", "[2025-01-02T03:04:05Z] recall:"):
        events = list(_provider().stream(_request(*history, _user(text))))
        assert events == _says(expected)


LONG = "x" * 250


@pytest.mark.req("CFG-PROV-09", "POL-TOOL-03")
@pytest.mark.parametrize(
    ("result", "summary"),
    [
        ("file1\nfile2", "shell result: file1\nfile2"),
        ("(no output)", "shell result: (no output)"),
        ("Error: boom", "shell result: Error: boom"),
        ("y" * 200, "shell result: " + "y" * 200),
        (LONG, "shell result: " + "x" * 200 + "…"),
    ],
)
def test_tool_result_is_summarised_as_the_final_text(result: str, summary: str) -> None:
    assistant: JSONObject = {
        "role": "assistant",
        "content": "",
        "toolCalls": [{"id": "demo-call-1", "name": "shell", "arguments": {"command": "ls"}}],
    }
    tool: JSONObject = {
        "role": "tool",
        "toolCallId": "demo-call-1",
        "name": "shell",
        "content": result,
    }
    events = list(_provider().stream(_request(_user("run: ls"), assistant, tool)))
    assert events == _says(summary)
    assert _text(events) == summary


@pytest.mark.req("CFG-PROV-09")
def test_tool_result_without_name_takes_it_from_the_matching_call() -> None:
    assistant: JSONObject = {
        "role": "assistant",
        "content": "",
        "toolCalls": [{"id": "c9", "name": "file_read", "arguments": {"path": "a"}}],
    }
    tool: JSONObject = {"role": "tool", "toolCallId": "c9", "content": "data"}
    events = list(_provider().stream(_request(_user("read: a"), assistant, tool)))
    assert _text(events) == "file_read result: data"


@pytest.mark.req("CFG-PROV-09")
@pytest.mark.parametrize(
    ("messages", "reply"),
    [
        (({"role": "assistant", "content": " run: ls "},), "Echo: run: ls"),
        ((), "Echo: You are a demo."),
    ],
)
def test_a_last_message_that_is_not_user_or_tool_is_echoed(
    messages: tuple[JSONObject, ...], reply: str
) -> None:
    assert list(_provider().stream(_request(*messages))) == _says(reply)


@pytest.mark.req("CFG-PROV-09")
def test_a_request_without_messages_is_echoed_empty() -> None:
    request = ModelRequest(model="demo", temperature=0.7, messages=())
    assert list(_provider().stream(request)) == [TextChunk("Echo: "), Done()]


@pytest.mark.req("CFG-PROV-15", "POL-ENGINE-12")
def test_every_request_is_kept_with_its_image_parts() -> None:
    provider = _provider()
    image: JSONObject = {"type": "image", "path": "/w/uploads/a.png", "mime_type": "image/png"}
    first = _request({"role": "user", "content": "look", "images": [image]}, tools=("shell",))
    second = _request(_user("slow: 2"), tools=())
    list(provider.stream(first))
    list(provider.stream(second))
    assert provider.requests == [
        {
            "model": "demo",
            "temperature": 0.7,
            "tools": ["shell"],
            "messages": [SYSTEM, {"role": "user", "content": "look", "images": [image]}],
        },
        {"model": "demo", "temperature": 0.7, "tools": [], "messages": [SYSTEM, _user("slow: 2")]},
    ]
    assert provider.name == "demo"
