"""The `anthropic` model provider: the streamed Messages API (config.md CFG-PROV-02, -04, -07,
-08; image parts of policy.md POL-ENGINE-12).

Design notes:
- Events: `content_block_start/delta/stop` for `text` (`text_delta`), `thinking`
  (`thinking_delta`) and `tool_use` (`input_json_delta` fragments, parsed at the block's stop);
  `message_delta` carries the stop reason and usage (logged at debug level); `message_stop`
  ends the response; `error` fails it (a `rate_limit_error` before any token is retried like a
  429). A stream that ends before `message_stop` is a failure.
- The Messages API alternates roles: consecutive ConversationMessages that map to `user`
  (tool results, then the max-iterations nudge) are merged into one message.
- Reasoning is not sent back: a thinking block is only accepted with its signature, which the
  ConversationMessage does not keep.
- Temperature: the API accepts 0..1 while the configuration allows 0..2, so it is clamped.
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
)
from zeroclaw_ref.providers.http import (
    Endpoint,
    RateLimited,
    SseEvent,
    keyed_endpoint,
    stream_with_retries,
)

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.anthropic.com"  # [CFG-PROV-02]
API_VERSION = "2023-06-01"  # [CFG-PROV-07] the required `anthropic-version` header


class AnthropicProvider:
    """The `anthropic` kind: one streamed `POST <base_url>/v1/messages` per request."""

    blocking = True  # waits on the network: the engine drains it on a pump thread

    def __init__(self, config: ProviderConfig, config_dir: Path) -> None:
        self.name = config.name
        # Design: CFG-PROV-15 asks only demo and scripted to keep their requests.
        self.requests: list[JSONObject] = []
        self._config = config

    def stream(self, request: ModelRequest) -> Iterator[ProviderEvent]:
        """Yield the events of one streamed message, ending with `Done`.

        Raises:
            ProviderError: no key, an HTTP or transport failure, an `error` event or a
                malformed stream; the turn fails with its CFG-PROV-08 text.
        """
        endpoint = _endpoint(self._config)
        body = request_body(request, self._config.max_tokens)
        yield from stream_with_retries(
            endpoint, body, request.stop, lambda events: _parse(endpoint, events)
        )


def _endpoint(config: ProviderConfig) -> Endpoint:
    return keyed_endpoint(
        config,
        DEFAULT_BASE_URL,
        "/v1/messages",
        lambda key: {"x-api-key": key, "anthropic-version": API_VERSION},
    )


def request_body(request: ModelRequest, max_tokens: int) -> JSONObject:
    """[CFG-PROV-07] the Messages body: system apart, `max_tokens`, streamed, tools, images."""
    system = "\n\n".join(
        _text(m.get("content")) for m in request.messages if m.get("role") == "system"
    )
    body: JSONObject = {"model": request.model, "max_tokens": max_tokens}
    if system:
        body["system"] = system
    body["messages"] = wire_messages(request.messages)
    body["temperature"] = min(max(request.temperature, 0.0), 1.0)
    body["stream"] = True
    if request.tools:
        body["tools"] = [
            {"name": t.name, "description": t.description,
             "input_schema": t.parameters or {"type": "object", "properties": {}}}
            for t in request.tools
        ]  # fmt: skip
    return body


def wire_messages(messages: tuple[JSONObject, ...]) -> list[JSON]:
    """ConversationMessages (ACP-RT-05), system excluded, as Messages API messages."""
    out: list[JSONObject] = []
    for message in messages:
        role = message.get("role")
        if role == "system":
            continue
        if role == "assistant":
            wire_role, blocks = "assistant", _assistant_blocks(message)
        elif role == "tool":
            wire_role, blocks = "user", [_tool_result(message)]
        else:
            wire_role, blocks = "user", _user_blocks(message)
        previous = out[-1] if out else None
        if previous is not None and previous["role"] == wire_role:
            merged = previous["content"]
            if isinstance(merged, list):
                merged.extend(blocks)
                continue
        out.append({"role": wire_role, "content": blocks})
    return list(out)


def _user_blocks(message: JSONObject) -> list[JSON]:
    # [POL-ENGINE-12] image blocks after the text block of a user message.
    text = _text(message.get("content"))
    blocks: list[JSON] = [{"type": "text", "text": text}] if text else []
    return [*blocks, *_image_blocks(message)]


def _tool_result(message: JSONObject) -> JSON:
    # [POL-ENGINE-12] image blocks after the text in the `content` of the `tool_result`.
    text = _text(message.get("content"))
    images = _image_blocks(message)
    content: JSON = [{"type": "text", "text": text}, *images] if images else text
    return {
        "type": "tool_result",
        "tool_use_id": _text(message.get("toolCallId")),
        "content": content,
    }


def _assistant_blocks(message: JSONObject) -> list[JSON]:
    text = _text(message.get("content"))
    blocks: list[JSON] = [{"type": "text", "text": text}] if text else []
    calls = message.get("toolCalls")
    for call in calls if isinstance(calls, list) else []:
        entry = as_object(call) or {}
        arguments = entry.get("arguments")
        blocks.append(
            {"type": "tool_use", "id": entry.get("id"), "name": entry.get("name"),
             "input": arguments if isinstance(arguments, dict) else {}}
        )  # fmt: skip
    return blocks


def _image_blocks(message: JSONObject) -> list[JSON]:
    images = message.get("images")
    blocks: list[JSON] = []
    for image in images if isinstance(images, list) else []:
        part = as_object(image) or {}
        blocks.append(
            {"type": "image", "source": {"type": "base64", "media_type": part.get("mime_type"),
                                         "data": part.get("data")}}
        )  # fmt: skip
    return blocks


def _text(value: JSON) -> str:
    return value if isinstance(value, str) else ""


# --- the event stream ---------------------------------------------------------------------


@dataclass
class _Block:
    kind: str
    id: str | None = None
    name: str = ""
    json_parts: list[str] = field(default_factory=list)


def _parse(endpoint: Endpoint, events: Iterator[SseEvent]) -> Iterator[ProviderEvent]:
    blocks: dict[int, _Block] = {}
    for event in events:
        payload = _decode(endpoint, event)
        kind = payload.get("type") or event.event
        if kind == "error":
            _raise_error(endpoint, payload.get("error"))
        elif kind == "content_block_start":
            block = as_object(payload.get("content_block")) or {}
            blocks[_index(payload)] = _Block(
                kind=_text(block.get("type")),
                id=_text(block.get("id")) or None,
                name=_text(block.get("name")),
            )
        elif kind == "content_block_delta":
            yield from _delta(endpoint, blocks, payload)
        elif kind == "content_block_stop":
            done = blocks.pop(_index(payload), None)
            if done is not None and done.kind == "tool_use":
                yield _tool_call(endpoint, done)
        elif kind == "message_delta":
            log.debug("provider %s message_delta: %s", endpoint.provider, dumps(payload))
        elif kind == "message_stop":
            yield Done()
            return
        # message_start, ping and future event types carry nothing the engine shows.
    raise endpoint.failure("the stream ended before the response was complete")


def _decode(endpoint: Endpoint, event: SseEvent) -> JSONObject:
    try:
        payload = as_object(loads(event.data))
    except ValueError:
        payload = None
    if payload is None:
        raise endpoint.failure(f"malformed stream event: {endpoint.excerpt(event.data)}")
    return payload


def _index(payload: JSONObject) -> int:
    index = payload.get("index")
    return index if isinstance(index, int) else 0


def _delta(
    endpoint: Endpoint, blocks: dict[int, _Block], payload: JSONObject
) -> Iterator[ProviderEvent]:
    delta = as_object(payload.get("delta")) or {}
    kind = delta.get("type")
    if kind == "text_delta":
        text = _text(delta.get("text"))
        if text:
            yield TextChunk(text)
    elif kind == "thinking_delta":
        thought = _text(delta.get("thinking"))
        if thought:
            yield ThoughtChunk(thought)
    elif kind == "input_json_delta":
        block = blocks.get(_index(payload))
        if block is None:
            raise endpoint.failure("malformed stream: input_json_delta outside a tool_use block")
        block.json_parts.append(_text(delta.get("partial_json")))
    # signature_delta, citations_delta: nothing to show.


def _tool_call(endpoint: Endpoint, block: _Block) -> ToolCall:
    text = "".join(block.json_parts).strip() or "{}"
    try:
        arguments = loads(text)
    except ValueError:
        raise endpoint.failure(
            f"tool call {block.name}: arguments are not valid JSON: {endpoint.excerpt(text)}"
        ) from None
    return ToolCall(block.id, block.name, arguments)


def _raise_error(endpoint: Endpoint, error: JSON) -> None:
    details = as_object(error) or {}
    kind = _text(details.get("type")) or "error"
    message = _text(details.get("message")) or dumps(error)
    detail = f"stream error: {kind}: {endpoint.excerpt(message)}"
    if kind == "rate_limit_error":
        raise RateLimited(endpoint.failure(detail).args[0], None)
    raise endpoint.failure(detail)
