"""The `openai` model provider: streamed Chat Completions for OpenAI and every compatible server
(config.md CFG-PROV-02, -04, -06, -08; image parts of policy.md POL-ENGINE-12).

vLLM, the llama.cpp server, Ollama's OpenAI endpoint and OpenRouter differ only in `base_url`.

Design notes:
- Events: `delta.content` becomes text, `delta.reasoning_content` or `delta.reasoning` (the two
  spellings servers use) a thought; tool-call fragments are assembled by `index` and emitted,
  in index order, when the response is complete (`[DONE]`, or the end of a stream that already
  carried a `finish_reason` — some servers omit `[DONE]`). A stream that ends before either is
  a failure: an answer cut in the middle must not pass for a whole one.
- Reasoning is not sent back: several compatible servers reject `reasoning_content` in input.
- The request asks for usage (`stream_options.include_usage`); usage and `finish_reason` are
  logged at debug level only, since the event interface carries neither.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from zeroclaw_ref.config.model import ProviderConfig
from zeroclaw_ref.core.jsontypes import JSON, JSONObject, as_object, dumps, loads
from zeroclaw_ref.providers.base import (
    Done,
    ModelRequest,
    ProviderEvent,
    TextChunk,
    ThoughtChunk,
    ToolCall,
    ToolSpec,
)
from zeroclaw_ref.providers.http import (
    Endpoint,
    RateLimited,
    SseEvent,
    keyed_endpoint,
    stream_with_retries,
)

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"  # [CFG-PROV-02]


class OpenAIProvider:
    """The `openai` kind: one streamed `POST <base_url>/chat/completions` per request."""

    blocking = True  # waits on the network: the engine drains it on a pump thread

    def __init__(self, config: ProviderConfig, config_dir: Path) -> None:
        self.name = config.name
        # Design: CFG-PROV-15 asks only demo and scripted to keep their requests; a network
        # session would otherwise hold every request, images included, for its whole life.
        self.requests: list[JSONObject] = []
        self._config = config

    def stream(self, request: ModelRequest) -> Iterator[ProviderEvent]:
        """Yield the events of one streamed completion, ending with `Done`.

        Raises:
            ProviderError: no key, an HTTP or transport failure, or a malformed stream; the text
                is the CFG-PROV-08 one and the turn fails with it.
        """
        endpoint = _endpoint(self._config)
        body = request_body(request)
        yield from stream_with_retries(
            endpoint, body, request.stop, lambda events: _parse(endpoint, events)
        )


def _endpoint(config: ProviderConfig) -> Endpoint:
    return keyed_endpoint(
        config,
        DEFAULT_BASE_URL,
        "/chat/completions",
        lambda key: {"authorization": f"Bearer {key}"},
    )


def request_body(request: ModelRequest) -> JSONObject:
    """[CFG-PROV-06] the Chat Completions body: streamed, function tools, image parts."""
    body: JSONObject = {
        "model": request.model,
        "messages": wire_messages(request.messages),
        "temperature": request.temperature,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.tools:
        body["tools"] = [_tool(spec) for spec in request.tools]
    return body


def _tool(spec: ToolSpec) -> JSON:
    parameters: JSONObject = spec.parameters or {"type": "object", "properties": {}}
    return {
        "type": "function",
        "function": {"name": spec.name, "description": spec.description, "parameters": parameters},
    }


def wire_messages(messages: tuple[JSONObject, ...]) -> list[JSON]:
    """ConversationMessages (ACP-RT-05) as Chat Completions messages.

    [POL-ENGINE-12] tool messages carry text only, so the image parts of a round's tool
    messages follow, in order, in one `user` message after the round's last tool message.
    """
    out: list[JSON] = []
    pending: list[JSON] = []  # image parts of the current round of tool messages
    for message in messages:
        role = message.get("role")
        if role != "tool" and pending:
            out.append({"role": "user", "content": pending})
            pending = []
        content = _text(message.get("content"))
        if role == "tool":
            out.append(
                {"role": "tool", "tool_call_id": _text(message.get("toolCallId")),
                 "content": content}
            )  # fmt: skip
            pending.extend(_image_parts(message))
        elif role == "assistant":
            out.append(_assistant(message, content))
        elif role == "user":
            parts = _image_parts(message)
            if parts:
                out.append({"role": "user", "content": [{"type": "text", "text": content}, *parts]})
            else:
                out.append({"role": "user", "content": content})
        else:
            out.append({"role": "system", "content": content})
    if pending:
        out.append({"role": "user", "content": pending})
    return out


def _assistant(message: JSONObject, content: str) -> JSON:
    calls = message.get("toolCalls")
    if not isinstance(calls, list) or not calls:
        return {"role": "assistant", "content": content}
    wire_calls: list[JSON] = []
    for call in calls:
        entry = as_object(call) or {}
        wire_calls.append(
            {
                "id": entry.get("id"),
                "type": "function",
                # Chat Completions carries arguments as a JSON string.
                "function": {"name": entry.get("name"), "arguments": dumps(entry.get("arguments"))},
            }
        )
    # Design: `null` content beside tool calls is what OpenAI itself sends back.
    return {"role": "assistant", "content": content or None, "tool_calls": wire_calls}


def _image_parts(message: JSONObject) -> list[JSON]:
    # [POL-ENGINE-12] `{"type": "image_url", "image_url": {"url": "data:<mime>;base64,<data>"}}`
    images = message.get("images")
    if not isinstance(images, list):
        return []
    parts: list[JSON] = []
    for image in images:
        part = as_object(image) or {}
        url = f"data:{_text(part.get('mime_type'))};base64,{_text(part.get('data'))}"
        parts.append({"type": "image_url", "image_url": {"url": url}})
    return parts


def _text(value: JSON) -> str:
    return value if isinstance(value, str) else ""


# --- the event stream ---------------------------------------------------------------------


@dataclass
class _CallSlot:
    id: str | None = None
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class _Response:
    calls: dict[int, _CallSlot] = field(default_factory=dict)
    finish_reason: str | None = None


def _parse(endpoint: Endpoint, events: Iterator[SseEvent]) -> Iterator[ProviderEvent]:
    state = _Response()
    for event in events:
        if event.data.strip() == "[DONE]":
            yield from _finish(endpoint, state)
            return
        chunk = _decode(endpoint, event)
        yield from _apply(endpoint, state, chunk)
    if state.finish_reason is None:
        raise endpoint.failure("the stream ended before the response was complete")
    yield from _finish(endpoint, state)


def _decode(endpoint: Endpoint, event: SseEvent) -> JSONObject:
    try:
        chunk = as_object(loads(event.data))
    except ValueError:
        chunk = None
    if chunk is None:
        raise endpoint.failure(f"malformed stream event: {endpoint.excerpt(event.data)}")
    error = chunk.get("error")
    if error is not None or event.event == "error":
        _raise_error(endpoint, error if error is not None else chunk)
    return chunk


def _raise_error(endpoint: Endpoint, error: JSON) -> None:
    """An error reported inside the stream (OpenRouter, vLLM and others send one mid-stream)."""
    details = as_object(error) or {}
    message = details.get("message")
    text = message if isinstance(message, str) else dumps(error)
    code = details.get("code")
    status = details.get("status") if code is None else code
    kind = details.get("type")
    detail = f"stream error: {endpoint.excerpt(text)}"
    if status in (429, "429") or kind in ("rate_limit_error", "rate_limit_exceeded"):
        raise RateLimited(endpoint.failure(detail).args[0], None)
    raise endpoint.failure(detail)


def _apply(endpoint: Endpoint, state: _Response, chunk: JSONObject) -> Iterator[ProviderEvent]:
    usage = chunk.get("usage")
    if usage is not None:
        log.debug("provider %s usage: %s", endpoint.provider, dumps(usage))
    choices = chunk.get("choices")
    if not isinstance(choices, list) or not choices:
        return
    choice = as_object(choices[0]) or {}
    delta = as_object(choice.get("delta")) or {}
    for key in ("reasoning_content", "reasoning"):
        thought = delta.get(key)
        if isinstance(thought, str) and thought:
            yield ThoughtChunk(thought)
            break
    text = delta.get("content")
    if isinstance(text, str) and text:
        yield TextChunk(text)
    fragments = delta.get("tool_calls")
    if isinstance(fragments, list):
        for fragment in fragments:
            _add_fragment(state, as_object(fragment) or {})
    reason = choice.get("finish_reason")
    if isinstance(reason, str):
        state.finish_reason = reason
        log.debug("provider %s finish_reason: %s", endpoint.provider, reason)


def _add_fragment(state: _Response, fragment: JSONObject) -> None:
    # [CFG-PROV-06] fragments are assembled by index; a server that sends no index sends each
    # call whole, so a new id opens a new slot.
    index = fragment.get("index")
    call_id = fragment.get("id")
    if not isinstance(index, int):
        known = [i for i, s in state.calls.items() if call_id and s.id == call_id]
        if known:
            index = known[0]
        elif call_id or not state.calls:
            index = len(state.calls)
        else:  # a continuation without index or id belongs to the latest call
            index = max(state.calls)
    slot = state.calls.setdefault(index, _CallSlot())
    if isinstance(call_id, str) and call_id and slot.id is None:
        slot.id = call_id
    function = as_object(fragment.get("function")) or {}
    name = function.get("name")
    if isinstance(name, str) and name and not slot.name:
        slot.name = name
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        slot.arguments.append(arguments)
    elif isinstance(arguments, dict):  # a few servers send the object itself
        slot.arguments.append(dumps(arguments))


def _finish(endpoint: Endpoint, state: _Response) -> Iterator[ProviderEvent]:
    for index in sorted(state.calls):
        slot = state.calls[index]
        if not slot.name:
            raise endpoint.failure(f"tool call {index} arrived without a name")
        text = "".join(slot.arguments).strip() or "{}"
        try:
            arguments = loads(text)
        except ValueError:
            raise endpoint.failure(
                f"tool call {slot.name}: arguments are not valid JSON: {endpoint.excerpt(text)}"
            ) from None
        yield ToolCall(slot.id, slot.name, arguments)
    yield Done()
