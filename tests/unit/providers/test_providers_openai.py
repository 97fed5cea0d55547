"""The `openai` provider against a loopback server: the wire format, stream assembly, failures,
retries and cancellation (config.md CFG-PROV-04, -06, -08; policy.md POL-ENGINE-12)."""

from __future__ import annotations

import base64
import json
import re
import threading
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.acp_client import AcpProcess
from tests.helpers.fake_llm import FakeLLM, Reply, openai_stream, sse
from zeroclaw_ref.config.model import ProviderConfig
from zeroclaw_ref.core.jsontypes import JSONObject
from zeroclaw_ref.providers import http
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
from zeroclaw_ref.providers.factory import create_provider
from zeroclaw_ref.providers.openai_compat import OpenAIProvider

KEY = "sk-test-0123456789abcdefSECRET"
SYSTEM: JSONObject = {"role": "system", "content": "You are terse."}
USER: JSONObject = {"role": "user", "content": "hello"}


@pytest.fixture
def server() -> Iterator[FakeLLM]:
    with FakeLLM() as fake:
        yield fake


def _provider(server: FakeLLM, **overrides: object) -> OpenAIProvider:
    fields: dict[str, object] = {
        "name": "main", "kind": "openai", "model": "gpt-test", "base_url": server.url + "/v1",
        "api_key": KEY, "extra_headers": {"x-team": "blue"}, "timeout_secs": 10,
    }  # fmt: skip
    fields.update(overrides)
    return OpenAIProvider(ProviderConfig(**fields), Path())  # type: ignore[arg-type]


def _request(*messages: JSONObject, tools: tuple[ToolSpec, ...] = ()) -> ModelRequest:
    return ModelRequest(
        model="gpt-test", temperature=0.5, messages=(SYSTEM, *(messages or (USER,))), tools=tools
    )


def _run(provider: OpenAIProvider, request: ModelRequest | None = None) -> list[ProviderEvent]:
    return list(provider.stream(request or _request()))


def _failure(provider: OpenAIProvider, request: ModelRequest | None = None) -> str:
    with pytest.raises(ProviderError) as caught:
        _run(provider, request)
    return str(caught.value)


@pytest.mark.req("CFG-PROV-06", "CFG-PROV-05")
def test_text_and_reasoning_deltas_stream_as_chunks_and_the_request_is_chat_completions(
    server: FakeLLM,
) -> None:
    server.queue(Reply(events=openai_stream(
        {"role": "assistant", "content": ""},
        {"reasoning_content": "Think"}, {"reasoning": "ing."},
        {"content": "Hel"}, {"content": "lo!"}, {"finish_reason": "stop"},
        {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2}},
    )))  # fmt: skip
    tools = (ToolSpec("file_read", "Read a file", {"type": "object", "required": ["path"]}),)
    events = _run(_provider(server), _request(USER, tools=tools))
    assert events == [
        ThoughtChunk("Think"), ThoughtChunk("ing."), TextChunk("Hel"), TextChunk("lo!"), Done(),
    ]  # fmt: skip
    (seen,) = server.requests
    assert seen.path == "/v1/chat/completions"
    assert seen.headers["authorization"] == f"Bearer {KEY}"
    assert seen.headers["x-team"] == "blue"
    assert seen.body == {
        "model": "gpt-test",
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "hello"},
        ],
        "temperature": 0.5,
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": [{"type": "function", "function": {
            "name": "file_read", "description": "Read a file",
            "parameters": {"type": "object", "required": ["path"]}}}],
    }  # fmt: skip


@pytest.mark.req("CFG-PROV-06")
def test_one_tool_call_is_assembled_from_argument_fragments(server: FakeLLM) -> None:
    pieces = ['{"pa', 'th"', ': "RE', "ADME", '.md"', "}"]
    server.queue(Reply(events=openai_stream(
        {"tool_calls": [{"index": 0, "id": "call_a", "type": "function",
                         "function": {"name": "file_read", "arguments": ""}}]},
        *({"tool_calls": [{"index": 0, "function": {"arguments": p}}]} for p in pieces),
        {"finish_reason": "tool_calls"},
    )))  # fmt: skip
    assert _run(_provider(server)) == [
        ToolCall("call_a", "file_read", {"path": "README.md"}),
        Done(),
    ]


@pytest.mark.req("CFG-PROV-06")
def test_several_interleaved_tool_calls_are_assembled_by_index(server: FakeLLM) -> None:
    server.queue(Reply(events=openai_stream(
        {"content": "Running both."},
        {"tool_calls": [
            {"index": 0, "id": "call_1", "function": {"name": "shell", "arguments": ""}},
            {"index": 1, "id": "call_2", "function": {"name": "file_read"}}]},
        {"tool_calls": [{"index": 1, "function": {"arguments": '{"path":'}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": '{"command"'}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": ': "ls"}'}}]},
        {"tool_calls": [{"index": 1, "function": {"arguments": ' "a.txt"}'}}]},
        {"tool_calls": [{"index": 2, "id": "call_3", "function": {"name": "todo_write"}}]},
        {"finish_reason": "tool_calls"},
    )))  # fmt: skip
    assert _run(_provider(server)) == [
        TextChunk("Running both."),
        ToolCall("call_1", "shell", {"command": "ls"}),
        ToolCall("call_2", "file_read", {"path": "a.txt"}),
        ToolCall("call_3", "todo_write", {}),
        Done(),
    ]


@pytest.mark.req("CFG-PROV-06", "POL-ENGINE-12")
def test_history_maps_to_tool_calls_tool_messages_and_a_user_message_for_tool_images(
    server: FakeLLM,
) -> None:
    image = {"type": "image", "path": "/w/uploads/a.png", "mime_type": "image/png", "data": "iVBO"}
    history: tuple[JSONObject, ...] = (
        USER,
        {"role": "assistant", "content": "", "reasoning": "hm",
         "toolCalls": [{"id": "c1", "name": "shot", "arguments": {"n": 1}},
                       {"id": "c2", "name": "shot", "arguments": {"n": 2}}]},
        {"role": "tool", "content": "/w/uploads/a.png", "toolCallId": "c1", "name": "shot",
         "images": [image]},
        {"role": "tool", "content": "nothing", "toolCallId": "c2", "name": "shot"},
        {"role": "assistant", "content": "Seen."},
    )  # fmt: skip
    server.queue(Reply(events=openai_stream({"content": "ok"}, {"finish_reason": "stop"})))
    _run(_provider(server), _request(*history))
    assert server.requests[0].body["messages"][1:] == [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "shot", "arguments": '{"n":1}'}},
            {"id": "c2", "type": "function", "function": {"name": "shot", "arguments": '{"n":2}'}},
        ]},
        {"role": "tool", "tool_call_id": "c1", "content": "/w/uploads/a.png"},
        {"role": "tool", "tool_call_id": "c2", "content": "nothing"},
        {"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}}]},
        {"role": "assistant", "content": "Seen."},
    ]  # fmt: skip


@pytest.mark.req("CFG-PROV-04")
def test_a_provider_without_api_key_fails_when_used_and_sends_nothing(server: FakeLLM) -> None:
    assert _failure(_provider(server, api_key=None)) == "provider main: api_key is not set"
    assert server.requests == []


@pytest.mark.req("CFG-PROV-08", "CFG-SECRETS-14")
@pytest.mark.parametrize("status", [401, 500])
def test_an_http_error_names_provider_and_status_and_never_the_key(
    server: FakeLLM, status: int
) -> None:
    body = json.dumps({"error": {"message": f"Incorrect API key provided: {KEY}", "x": "y" * 900}})
    server.queue(Reply(status=status, body=body.encode(), content_type="application/json"))
    text = _failure(_provider(server))
    assert text.startswith(f"provider main: HTTP {status}: {{")
    assert "Incorrect API key provided" in text
    assert KEY not in text and KEY[:12] not in text
    assert len(text) <= len(f"provider main: HTTP {status}: ") + http.EXCERPT_CHARS


# A key with the characters JSON, URL and base64 encoders rewrite, and a proxy's Basic header.
ODD_KEY = "k3y/With+Plus=And/Slash=="
PROXY_PASSWORD = "pr0xyPa/55w+0rdQ="
PROXY_AUTH = "Basic " + base64.b64encode(f"bob:{PROXY_PASSWORD}".encode()).decode()


@pytest.mark.req("CFG-PROV-08", "CFG-SECRETS-14")
@pytest.mark.parametrize(
    "echo",
    [
        ODD_KEY.replace("/", "\\/"),  # JSON with `/` escaped
        ODD_KEY.translate({47: "\\u002F", 43: "\\u002b", 61: "\\u003D"}),  # JSON \u escapes
        urllib.parse.quote(ODD_KEY, safe=""),  # %2F %2B %3D
        re.sub("%..", lambda m: m.group().lower(), urllib.parse.quote(ODD_KEY, safe="")),
        base64.b64encode(f"user:{ODD_KEY}".encode()).decode(),  # the key sent as Basic
        f"bob:{PROXY_PASSWORD}",  # the proxy's Basic header, decoded
        urllib.parse.quote(PROXY_PASSWORD, safe=""),
    ],
    ids=["json-slash", "json-u", "url", "url-lower", "base64", "basic-decoded", "basic-url"],
)
def test_an_http_error_never_echoes_a_secret_in_any_encoding(server: FakeLLM, echo: str) -> None:
    """CFG-PROV-08: the excerpt is scrubbed of the key however the server spelled it; only the
    verbatim form used to be removed, so `k3y\\/With+…` or `k3y%2FWith%2B…` got through."""
    body = '{"error":{"message":"Incorrect API key provided: ' + echo + '","type":"auth"}}'
    server.queue(Reply(status=401, body=body.encode(), content_type="application/json"))
    headers = {"x-team": "blue", "Proxy-Authorization": PROXY_AUTH}
    text = _failure(_provider(server, api_key=ODD_KEY, extra_headers=headers))
    assert text.startswith('provider main: HTTP 401: {"error":{"message":"Incorrect API key')
    assert "[REDACTED]" in text and text.endswith('","type":"auth"}}')
    for secret in (ODD_KEY, PROXY_PASSWORD):
        for part in re.split(r"[/+=]+", secret):
            assert len(part) < 4 or part not in text, (part, text)


@pytest.mark.req("CFG-PROV-08")
def test_a_429_is_retried_after_its_retry_after_before_any_token(
    server: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    waits: list[float] = []
    monkeypatch.setattr(http, "_pause", lambda stop, secs: waits.append(secs) or False)
    server.queue(
        Reply(status=429, body=b"slow down", content_type="text/plain",
              headers={"retry-after": "7"}),
        Reply(events=openai_stream({"content": "fine"}, {"finish_reason": "stop"})),
    )  # fmt: skip
    assert _run(_provider(server)) == [TextChunk("fine"), Done()]
    assert waits == [7.0]
    assert len(server.requests) == 2


@pytest.mark.req("CFG-PROV-08")
def test_repeated_429s_give_up_after_the_bounded_attempts(
    server: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(http, "_pause", lambda stop, secs: False)
    limited = Reply(status=429, body=b"rate limited", content_type="text/plain")
    server.queue(*([limited] * http.MAX_ATTEMPTS))
    assert _failure(_provider(server)) == "provider main: HTTP 429: rate limited"
    assert len(server.requests) == http.MAX_ATTEMPTS


@pytest.mark.req("CFG-PROV-08")
def test_a_rate_limit_after_the_first_token_fails_without_retry(
    server: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(http, "_pause", lambda stop, secs: pytest.fail("must not retry"))
    error = {"error": {"message": "Rate limit reached", "code": 429}}
    server.queue(Reply(events=openai_stream({"content": "Par"}, error, done=False)))
    seen: list[ProviderEvent] = []
    with pytest.raises(ProviderError) as caught:
        seen.extend(_provider(server).stream(_request()))
    assert seen == [TextChunk("Par")]
    assert str(caught.value) == "provider main: stream error: Rate limit reached"
    assert len(server.requests) == 1


@pytest.mark.req("CFG-PROV-08")
def test_an_error_event_fails_the_turn_with_its_message(server: FakeLLM) -> None:
    error = {"error": {"message": "model overloaded", "type": "server_error"}}
    server.queue(Reply(events=[sse(error, event="error")]))
    assert _failure(_provider(server)) == "provider main: stream error: model overloaded"


@pytest.mark.req("CFG-PROV-08")
@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (Reply(events=openai_stream({"content": "Hal"}, done=False), cut=True),
         "provider main: connection lost mid-stream: "),
        (Reply(events=openai_stream({"content": "Hal"}, done=False)),
         "provider main: the stream ended before the response was complete"),
        (Reply(body=b"<html><body>Sign in</body></html>", content_type="text/html"),
         "provider main: HTTP 200: expected an event stream, got text/html: <html><body>Sign in"),
        (Reply(events=[b"data: {not json\n\n"]),
         "provider main: malformed stream event: {not json"),
        (Reply(events=[sse([1, 2])]), "provider main: malformed stream event: [1, 2]"),
        (Reply(events=openai_stream({"tool_calls": [{"index": 0, "id": "c", "function": {
            "name": "shell", "arguments": '{"command": "l'}}]}, {"finish_reason": "length"})),
         'provider main: tool call shell: arguments are not valid JSON: {"command": "l'),
    ],
    ids=["cut", "no-done", "html", "garbage", "not-an-object", "truncated-arguments"],
)  # fmt: skip
def test_a_broken_stream_fails_with_a_clear_message(
    server: FakeLLM, reply: Reply, expected: str
) -> None:
    server.queue(reply)
    assert _failure(_provider(server)).startswith(expected)


@pytest.mark.req("CFG-PROV-08")
def test_an_unreachable_server_is_a_transport_failure(server: FakeLLM) -> None:
    provider = _provider(server, base_url="http://127.0.0.1:9/v1")
    assert _failure(provider).startswith("provider main: request failed: ")


@pytest.mark.req("CFG-PROV-08")
def test_a_silent_server_hits_the_read_timeout(server: FakeLLM) -> None:
    server.queue(Reply(events=openai_stream({"content": "a"}, {"content": "b"}), pace=30))
    endpoint = http.Endpoint("main", server.url + "/v1/chat/completions", {}, 0.3)
    stream = http.stream_with_retries(
        endpoint, {}, threading.Event(), lambda events: (TextChunk(e.data) for e in events)
    )
    with pytest.raises(ProviderError) as caught:
        list(stream)
    assert str(caught.value) == "provider main: no data from the server for 0.3 s (read timeout)"


@pytest.mark.req("CFG-PROV-06")
def test_setting_stop_ends_a_slow_stream_promptly_and_closes_the_connection(
    server: FakeLLM,
) -> None:
    # The second event would come after 60 s, past the 10 s read timeout: only waking the
    # blocked read ends the stream quietly; a read left blocked fails with the timeout instead.
    server.queue(
        Reply(events=openai_stream({"content": "tick 1 "}, {"content": "tick 2 "}), pace=60)
    )
    request = _request()
    stream = _provider(server).stream(request)
    assert next(stream) == TextChunk("tick 1 ")
    threading.Thread(target=request.stop.set).start()
    rest = list(stream)  # returns only because the blocked read was woken
    assert Done() not in rest
    assert server.disconnected.wait(10), "the server never saw the connection close"
    assert not server.served.is_set()


@pytest.mark.req("CFG-PROV-01", "CFG-PROV-05")
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_the_factory_maps_the_network_kinds_to_blocking_providers(kind: str) -> None:
    provider = create_provider(ProviderConfig(name="net", kind=kind, model="m"), Path())
    assert provider.blocking is True
    assert provider.name == "net"


# --- end to end through an ACP session -----------------------------------------------------

CONFIG = """schema_version = 1

[providers.main]
kind = "openai"
model = "gpt-test"
base_url = "{url}/v1"
api_key = "{key}"

[risk_profiles.default]
level = "supervised"

[runtime_profiles.default]

[agents.default]
model_provider = "main"
risk_profile = "default"
runtime_profile = "default"
system_prompt = "Be brief."
"""


@pytest.mark.req("CFG-PROV-06", "CFG-PROV-08", "ACP-PROMPT-31")
def test_an_acp_session_streams_the_model_and_survives_a_failed_turn(
    server: FakeLLM, tmp_path: Path
) -> None:
    config_dir = tmp_path / "cfg"
    config_dir.mkdir()
    (config_dir / "config.toml").write_text(CONFIG.format(url=server.url, key=KEY))
    server.queue(
        Reply(events=openai_stream({"reasoning_content": "Hmm."}, {"content": "Hello "},
                                   {"content": "there."}, {"finish_reason": "stop"})),
        Reply(status=401, body=f'{{"error": "bad key {KEY}"}}'.encode(),
              content_type="application/json"),
        Reply(events=openai_stream({"content": "Back."}, {"finish_reason": "stop"})),
    )  # fmt: skip
    agent = AcpProcess(config_dir)
    try:
        agent.request(1, "session/new", {"cwd": str(tmp_path), "mcpServers": []})
        sid = agent.response(1)["result"]["sessionId"]
        agent.request(2, "session/prompt", {"sessionId": sid, "prompt": "hi there"})
        updates: list[dict[str, Any]] = []
        assert agent.response(2, updates)["result"]["stopReason"] == "end_turn"
        shown = [
            (u["params"]["update"]["sessionUpdate"], u["params"]["update"]["content"]["text"])
            for u in updates
        ]
        assert shown == [
            ("agent_thought_chunk", "Hmm."),
            ("agent_message_chunk", "Hello "),
            ("agent_message_chunk", "there."),
        ]
        body = server.requests[0].body
        assert body["model"] == "gpt-test" and body["stream"] is True
        assert body["messages"][0]["role"] == "system"
        assert "Be brief." in body["messages"][0]["content"]
        assert body["messages"][1]["role"] == "user"
        assert body["messages"][1]["content"].endswith("hi there")
        assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"

        agent.request(3, "session/prompt", {"sessionId": sid, "prompt": "again"})
        error = agent.response(3, [])["error"]
        assert error["code"] == -32603
        assert error["message"].startswith("Agent turn failed: provider main: HTTP 401: ")
        assert KEY not in json.dumps(error) and KEY not in "".join(agent.stderr_lines)

        agent.request(4, "session/prompt", {"sessionId": sid, "prompt": "still there?"})
        seen: list[dict[str, Any]] = []
        assert agent.response(4, seen)["result"]["stopReason"] == "end_turn"
        assert seen[-1]["params"]["update"]["content"]["text"] == "Back."
        assert len(server.requests) == 3
    finally:
        agent.kill()
