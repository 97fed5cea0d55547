"""Prompt validation and rendering (acp.md §4.2, §4.3).

Two passes over an array prompt: the first classifies and validates every element, decoding
and size-checking every blob, and reports the first invalid element before anything touches
the disk (ACP-PROMPT-08); the second writes the blobs and renders the text.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.tools.uploads import (
    UploadError,
    check_size,
    decode_base64,
    display_name,
    materialise,
    mime_for,
)
from zeroclaw_ref.wire.errors import RpcError

# [ACP-PROMPT-07] [ACP-PROMPT-11] [ACP-PROMPT-12]
MISSING_PROMPT = "Missing required parameter: prompt (must be string or array of parts)"
EMPTY_ARRAY = "Parameter 'prompt' array must contain at least one text part"
BLANK_TURN = "Agent turn failed: empty user message: refusing to dispatch a blank turn"


@dataclass(frozen=True, slots=True)
class _Text:
    text: str


@dataclass(frozen=True, slots=True)
class _Blob:
    data: bytes
    name: str
    mime: str


_Part = _Text | _Blob


def _bad(index: int, what: str) -> RpcError:
    return RpcError.invalid_params(f"Invalid prompt part at index {index}: {what}")


def _classify(index: int, element: JSON) -> _Part:
    """One element of acp.md Table 4-1, validated (P1–P11)."""
    if not isinstance(element, dict):
        raise _bad(index, "expected an object")  # P1
    kind = element.get("type")
    if "type" in element and not isinstance(kind, str):
        raise _bad(index, "`type` must be a string")  # P2
    if kind == "text" or (kind is None and "text" in element):
        text = element.get("text")
        if not isinstance(text, str):
            raise _bad(index, "`text` must be a string")  # P4
        return _Text(text)
    if kind == "resource" or (kind is None and "resource" in element):
        return _resource(index, element.get("resource"))
    if kind == "resource_link":
        uri, name = element.get("uri"), element.get("name")
        if not isinstance(uri, str):
            raise _bad(index, "resource_link requires a string `uri`")  # P8
        label = name if isinstance(name, str) and name.strip() else uri
        return _Text(f"[Link: {label}] {uri}")
    if kind in ("image", "audio"):
        # [ACP-PROMPT-09] P9, P10: not advertised, so refused loudly instead of dropped.
        raise RpcError.invalid_params(
            f"Unsupported prompt content type `{kind}`: promptCapabilities.{kind} is false"
        )
    if kind is None:
        raise _bad(index, "missing `type`")  # P3
    raise RpcError.invalid_params(f"Unsupported prompt content type `{kind}`")  # P11


def _resource(index: int, resource: JSON) -> _Part:
    if not isinstance(resource, dict):
        raise _bad(index, "`resource` must be an object")  # P5
    text, blob = resource.get("text"), resource.get("blob")
    if isinstance(text, str) and isinstance(blob, str):
        raise _bad(index, "resource must not carry both `text` and `blob`")  # P7
    if isinstance(text, str):
        return _Text(text)
    if not isinstance(blob, str):
        raise _bad(index, "resource must carry a string `text` or `blob`")  # P6
    uri = resource.get("uri")
    try:
        data = decode_base64(blob)  # [ACP-PROMPT-13]
        check_size(data)  # [ACP-PROMPT-14]
    except UploadError as exc:
        raise RpcError.invalid_params(str(exc)) from exc
    name = display_name(uri if isinstance(uri, str) else None)  # [ACP-PROMPT-16]
    return _Blob(data, name, mime_for(resource.get("mimeType"), name))  # [ACP-PROMPT-18]


def render_prompt(prompt: JSON, workspace: Path) -> str:
    """Validate and render `params.prompt`; write blobs under `<workspace>/uploads/`.

    Raises:
        RpcError: −32602 with the exact text of the first problem (nothing is written when
            validation fails; files of earlier blobs may remain when a later write fails,
            ACP-PROMPT-21).
    """
    if isinstance(prompt, str):
        return prompt  # [ACP-PROMPT-05]
    if not isinstance(prompt, list):
        raise RpcError.invalid_params(MISSING_PROMPT)
    parts = [_classify(i, element) for i, element in enumerate(prompt)]  # [ACP-PROMPT-08]
    rendered: list[str] = []
    for part in parts:
        if isinstance(part, _Text):
            rendered.append(part.text)
            continue
        try:
            saved = materialise(workspace, part.data, part.name, part.mime)  # [ACP-PROMPT-15]
        except UploadError as exc:
            raise RpcError.invalid_params(str(exc)) from exc
        # [ACP-PROMPT-17] markers only; the base64 never enters the prompt.
        if part.mime.startswith("image/"):
            rendered.append(f"[IMAGE:{saved.path}]")
        else:
            rendered.append(f"[Document: {part.name}] {saved.path}")
    text = "\n\n".join(r for r in rendered if r)  # [ACP-PROMPT-10]
    if not text:
        raise RpcError.invalid_params(EMPTY_ARRAY)  # [ACP-PROMPT-11]
    return text


def is_blank(text: str) -> bool:
    """[ACP-PROMPT-12] blank = empty after trimming Unicode whitespace."""
    return not text.strip()


def session_id_of(params: JSONObject) -> str:
    """[ACP-TR-21] `sessionId`, or `session_id` only when `sessionId` is absent.

    Raises:
        RpcError: −32602 `Missing required parameter: sessionId`.
    """
    key = "sessionId" if "sessionId" in params else "session_id"
    value = params.get(key)
    if not isinstance(value, str):
        raise RpcError.missing_session_id()
    return value
