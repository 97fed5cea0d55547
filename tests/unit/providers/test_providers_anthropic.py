"""The `anthropic` provider against a loopback server: the Messages wire format, stream events,
failures, retries and cancellation (config.md CFG-PROV-04, -07, -08; policy.md POL-ENGINE-12)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.fake_llm import FakeLLM, Reply, anthropic_stream
from zeroclaw_ref.config.model import ProviderConfig
from zeroclaw_ref.core.jsontypes import JSONObject
from zeroclaw_ref.providers import http
from zeroclaw_ref.providers.anthropic import AnthropicProvider
from zeroclaw_ref.providers.base import (
    Done,
    ModelRequest,
    ProviderError,
    ProviderEvent,
    TextChunk,
    ThoughtChunk,
    ToolCall,
    ToolSpec,
)

KEY = "sk-ant-api03-0123456789abcdefSECRET"
SYSTEM: JSONObject = {"role": "system", "content": "You are terse."}
USER: JSONObject = {"role": "user", "content": "hello"}

START = {"type": "message_start", "message": {"id": "msg_1", "usage": {"input_tokens": 9}}}
STOP = {"type": "message_stop"}


def _block(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def _delta(index: int, delta: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


def _end(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def _text(index: int, *pieces: str) -> list[dict[str, Any]]:
    return [
        _block(index, {"type": "text", "text": ""}),
        *(_delta(index, {"type": "text_delta", "text": p}) for p in pieces),
        _end(index),
    ]


def _tool(index: int, call_id: str, name: str, *fragments: str) -> list[dict[str, Any]]:
    return [
        _block(index, {"type": "tool_use", "id": call_id, "name": name, "input": {}}),
        *(_delta(index, {"type": "input_json_delta", "partial_json": f}) for f in fragments),
        _end(index),
    ]


def _message(*events: dict[str, Any], reason: str = "end_turn") -> Reply:
    ending = {"type": "message_delta", "delta": {"stop_reason": reason},
              "usage": {"output_tokens": 12}}  # fmt: skip
    return Reply(events=anthropic_stream(START, *events, ending, STOP))


@pytest.fixture
def server() -> Iterator[FakeLLM]:
    with FakeLLM() as fake:
        yield fake


def _provider(server: FakeLLM, **overrides: object) -> AnthropicProvider:
    fields: dict[str, object] = {
        "name": "claude", "kind": "anthropic", "model": "claude-test", "base_url": server.url,
        "api_key": KEY, "extra_headers": {"x-team": "blue"}, "timeout_secs": 10,
        "max_tokens": 2048,
    }  # fmt: skip
    fields.update(overrides)
    return AnthropicProvider(ProviderConfig(**fields), Path())  # type: ignore[arg-type]


def _request(*messages: JSONObject, tools: tuple[ToolSpec, ...] = ()) -> ModelRequest:
    return ModelRequest(
        model="claude-test", temperature=0.5, messages=(SYSTEM, *(messages or (USER,))),
        tools=tools,
    )  # fmt: skip


def _run(provider: AnthropicProvider, request: ModelRequest | None = None) -> list[ProviderEvent]:
    return list(provider.stream(request or _request()))


def _failure(provider: AnthropicProvider) -> str:
    with pytest.raises(ProviderError) as caught:
        _run(provider)
    return str(caught.value)


@pytest.mark.req("CFG-PROV-07", "CFG-PROV-05")
def test_thinking_and_text_blocks_stream_and_the_request_is_the_messages_api(
    server: FakeLLM,
) -> None:
    thinking = [
        _block(0, {"type": "thinking", "thinking": ""}),
        _delta(0, {"type": "thinking_delta", "thinking": "Let me "}),
        _delta(0, {"type": "thinking_delta", "thinking": "see."}),
        _delta(0, {"type": "signature_delta", "signature": "c2ln"}),
        _end(0),
    ]
    server.queue(_message(*thinking, {"type": "ping"}, *_text(1, "Hel", "lo!")))
    tools = (ToolSpec("file_read", "Read a file", {"type": "object", "required": ["path"]}),)
    events = _run(_provider(server), _request(USER, tools=tools))
    assert events == [
        ThoughtChunk("Let me "), ThoughtChunk("see."), TextChunk("Hel"), TextChunk("lo!"), Done(),
    ]  # fmt: skip
    (seen,) = server.requests
    assert seen.path == "/v1/messages"
    assert seen.headers["x-api-key"] == KEY
    assert seen.headers["anthropic-version"] == "2023-06-01"
    assert seen.headers["x-team"] == "blue"
    assert "authorization" not in seen.headers
    assert seen.body == {
        "model": "claude-test",
        "max_tokens": 2048,
        "system": "You are terse.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hello"}]}],
        "temperature": 0.5,
        "stream": True,
        "tools": [{"name": "file_read", "description": "Read a file",
                   "input_schema": {"type": "object", "required": ["path"]}}],
    }  # fmt: skip


@pytest.mark.req("CFG-PROV-07")
def test_tool_use_blocks_are_assembled_from_input_json_deltas(server: FakeLLM) -> None:
    server.queue(_message(
        *_text(0, "Running both."),
        *_tool(1, "toolu_1", "shell", '{"comm', 'and": ', '"ls', ' -la"}'),
        *_tool(2, "toolu_2", "file_read", "", '{"path"', ': "a.txt"}'),
        *_tool(3, "toolu_3", "todo_write"),
        reason="tool_use",
    ))  # fmt: skip
    assert _run(_provider(server)) == [
        TextChunk("Running both."),
        ToolCall("toolu_1", "shell", {"command": "ls -la"}),
        ToolCall("toolu_2", "file_read", {"path": "a.txt"}),
        ToolCall("toolu_3", "todo_write", {}),
        Done(),
    ]


@pytest.mark.req("CFG-PROV-07", "POL-ENGINE-12")
def test_history_maps_to_tool_use_and_tool_result_blocks_with_images(server: FakeLLM) -> None:
    image = {"type": "image", "path": "/w/uploads/a.png", "mime_type": "image/png", "data": "iVBO"}
    history: tuple[JSONObject, ...] = (
        USER,
        {"role": "assistant", "content": "Looking.", "reasoning": "hm",
         "toolCalls": [{"id": "c1", "name": "shot", "arguments": {"n": 1}},
                       {"id": "c2", "name": "shot", "arguments": {"n": 2}}]},
        {"role": "tool", "content": "/w/uploads/a.png", "toolCallId": "c1", "name": "shot",
         "images": [image]},
        {"role": "tool", "content": "nothing", "toolCallId": "c2", "name": "shot"},
        {"role": "user", "content": "Now answer."},
    )  # fmt: skip
    server.queue(_message(*_text(0, "ok")))
    _run(_provider(server), _request(*history))
    assert server.requests[0].body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hello"}]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Looking."},
            {"type": "tool_use", "id": "c1", "name": "shot", "input": {"n": 1}},
            {"type": "tool_use", "id": "c2", "name": "shot", "input": {"n": 2}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "c1", "content": [
                {"type": "text", "text": "/w/uploads/a.png"},
                {"type": "image", "source": {
                    "type": "base64", "media_type": "image/png", "data": "iVBO"}},
            ]},
            {"type": "tool_result", "tool_use_id": "c2", "content": "nothing"},
            {"type": "text", "text": "Now answer."},
        ]},
    ]  # fmt: skip


@pytest.mark.req("CFG-PROV-04")
def test_a_provider_without_api_key_fails_when_used_and_sends_nothing(server: FakeLLM) -> None:
    assert _failure(_provider(server, api_key="")) == "provider claude: api_key is not set"
    assert server.requests == []


@pytest.mark.req("CFG-PROV-08", "CFG-SECRETS-14")
@pytest.mark.parametrize("status", [401, 500])
def test_an_http_error_names_provider_and_status_and_never_the_key(
    server: FakeLLM, status: int
) -> None:
    body = {"type": "error", "error": {"type": "authentication_error",
                                       "message": f"invalid x-api-key {KEY}"}}  # fmt: skip
    server.queue(
        Reply(status=status, body=json.dumps(body).encode(), content_type="application/json")
    )
    text = _failure(_provider(server))
    assert text.startswith(f'provider claude: HTTP {status}: {{"type": "error"')
    assert "authentication_error" in text
    assert KEY not in text and KEY[:14] not in text


@pytest.mark.req("CFG-PROV-08")
def test_a_429_is_retried_after_its_retry_after_before_any_token(
    server: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    waits: list[float] = []
    monkeypatch.setattr(http, "_pause", lambda stop, secs: waits.append(secs) or False)
    server.queue(
        Reply(status=429, body=b'{"type":"error"}', content_type="application/json",
              headers={"retry-after": "3"}),
        _message(*_text(0, "fine")),
    )  # fmt: skip
    assert _run(_provider(server)) == [TextChunk("fine"), Done()]
    assert waits == [3.0]
    assert len(server.requests) == 2


@pytest.mark.req("CFG-PROV-08")
def test_a_rate_limit_error_after_the_first_token_fails_without_retry(
    server: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(http, "_pause", lambda stop, secs: pytest.fail("must not retry"))
    error = {"type": "error", "error": {"type": "rate_limit_error", "message": "Slow down"}}
    server.queue(Reply(events=anthropic_stream(
        START, _block(0, {"type": "text", "text": ""}),
        _delta(0, {"type": "text_delta", "text": "Par"}), error,
    )))  # fmt: skip
    seen: list[ProviderEvent] = []
    with pytest.raises(ProviderError) as caught:
        seen.extend(_provider(server).stream(_request()))
    assert seen == [TextChunk("Par")]
    assert str(caught.value) == "provider claude: stream error: rate_limit_error: Slow down"
    assert len(server.requests) == 1


@pytest.mark.req("CFG-PROV-08")
@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (Reply(events=anthropic_stream(START, {"type": "error", "error": {
            "type": "overloaded_error", "message": "Overloaded"}})),
         "provider claude: stream error: overloaded_error: Overloaded"),
        (Reply(events=anthropic_stream(START, *_text(0, "Hal")), cut=True),
         "provider claude: connection lost mid-stream: "),
        (Reply(events=anthropic_stream(START, *_text(0, "Hal"))),
         "provider claude: the stream ended before the response was complete"),
        (Reply(body=b"<!DOCTYPE html><title>502</title>", content_type="text/html"),
         "provider claude: HTTP 200: expected an event stream, got text/html: <!DOCTYPE html>"),
        (Reply(events=[b"event: message_start\ndata: \x01garbage\n\n"]),
         "provider claude: malformed stream event: \x01garbage"),
        (Reply(events=anthropic_stream(START, *_tool(0, "t", "shell", '{"command": '))),
         'provider claude: tool call shell: arguments are not valid JSON: {"command":'),
    ],
    ids=["error-event", "cut", "no-message-stop", "html", "garbage", "truncated-input"],
)  # fmt: skip
def test_a_broken_stream_fails_with_a_clear_message(
    server: FakeLLM, reply: Reply, expected: str
) -> None:
    server.queue(reply)
    assert _failure(_provider(server)).startswith(expected)


@pytest.mark.req("CFG-PROV-07")
def test_setting_stop_ends_a_slow_stream_promptly_and_closes_the_connection(
    server: FakeLLM,
) -> None:
    # The next event would come after 60 s, past the 10 s read timeout: only waking the blocked
    # read ends the stream quietly; a read left blocked fails with the timeout instead.
    opening = b"".join(anthropic_stream(
        START, _block(0, {"type": "text", "text": ""}),
        _delta(0, {"type": "text_delta", "text": "tick 1 "}),
    ))  # fmt: skip
    later = anthropic_stream(_delta(0, {"type": "text_delta", "text": "tick 2 "}), _end(0), STOP)
    server.queue(Reply(events=[opening, *later], pace=60))
    request = _request()
    stream = _provider(server).stream(request)
    assert next(stream) == TextChunk("tick 1 ")
    threading.Thread(target=request.stop.set).start()
    assert list(stream) == []
    assert server.disconnected.wait(10), "the server never saw the connection close"
    assert not server.served.is_set()
