"""Image parts rebuilt before each model request, and the bodies the network providers send for
them (policy.md POL-ENGINE-12, mcp.md MCP-RESULT-20, MCP-RESULT-23)."""

from __future__ import annotations

import base64
import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.fake_llm import FakeLLM, Reply, anthropic_stream, openai_stream
from zeroclaw_ref.config.model import ProviderConfig
from zeroclaw_ref.core.jsontypes import JSONObject
from zeroclaw_ref.engine.images import attach_images, sniff_image
from zeroclaw_ref.providers.anthropic import AnthropicProvider
from zeroclaw_ref.providers.base import ModelRequest
from zeroclaw_ref.providers.openai_compat import OpenAIProvider

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 8
GIF = b"GIF89a" + b"\x00" * 4
WEBP = b"RIFF\x00\x00\x00\x00WEBPVP8 "


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "ws" / "uploads").mkdir(parents=True)
    return tmp_path / "ws"


def _upload(workspace: Path, name: str, data: bytes) -> str:
    path = workspace / "uploads" / name
    path.write_bytes(data)
    return str(path)


@pytest.mark.req("MCP-RESULT-23")
@pytest.mark.parametrize(
    ("data", "mime"),
    [(PNG, "image/png"), (JPEG, "image/jpeg"), (GIF, "image/gif"), (b"GIF87a..", "image/gif"),
     (WEBP, "image/webp"), (b"RIFF\x00\x00\x00\x00WEB", None), (b"%PDF-1.7", None), (b"", None)],
)  # fmt: skip
def test_images_are_identified_by_signature(data: bytes, mime: str | None) -> None:
    assert sniff_image(data) == mime


@pytest.mark.req("POL-ENGINE-12", "ACP-PROMPT-17")
def test_user_markers_become_image_parts_in_marker_order(workspace: Path) -> None:
    # The extension is not trusted: the `.png` name holds a JPEG.
    first = _upload(workspace, "b.png", JPEG)
    second = _upload(workspace, "a.webp", WEBP)
    user: JSONObject = {"role": "user", "content": f"see [IMAGE:{first}] and [IMAGE:{second}]"}
    messages = [{"role": "assistant", "content": f"[IMAGE:{first}]"}, user]
    out = attach_images(messages, workspace)
    assert out[0] is messages[0]  # markers in assistant text are never used
    assert out[1] == {
        **user,
        "images": [
            {"type": "image", "path": first, "mime_type": "image/jpeg", "data": _b64(JPEG)},
            {"type": "image", "path": second, "mime_type": "image/webp", "data": _b64(WEBP)},
        ],
    }
    assert "images" not in user  # the input is never mutated


@pytest.mark.req("POL-ENGINE-12", "MCP-RESULT-19", "MCP-RESULT-20")
def test_tool_attachments_become_parts_and_paths_in_tool_text_do_not(workspace: Path) -> None:
    shot = _upload(workspace, "shot.gif", GIF)
    other = _upload(workspace, "other.png", PNG)
    tool: JSONObject = {
        "role": "tool", "content": f"{shot} [IMAGE:{other}]", "toolCallId": "c1", "name": "t",
        "attachments": [{"path": shot, "mimeType": "image/png"}],
    }  # fmt: skip
    (out,) = attach_images([tool], workspace)
    assert out["images"] == [
        {"type": "image", "path": shot, "mime_type": "image/gif", "data": _b64(GIF)}
    ]


@pytest.mark.req("POL-ENGINE-12")
def test_unusable_files_add_no_part_and_log_one_warning_each(
    workspace: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    outside = tmp_path / "secret.png"
    outside.write_bytes(PNG)
    link = workspace / "uploads" / "link.png"
    link.symlink_to(outside)
    nested = workspace / "uploads" / "sub"
    nested.mkdir()
    deep = str(nested / "deep.png")
    Path(deep).write_bytes(PNG)
    fifo = workspace / "uploads" / "pipe.png"
    os.mkfifo(fifo)
    bad = [
        str(outside), str(link), deep, str(fifo), str(nested),
        _upload(workspace, "doc.png", b"%PDF-1.7"), str(workspace / "uploads" / "missing.png"),
        f"{workspace}/uploads/../../secret.png", "uploads/relative.png",
    ]  # fmt: skip
    good = _upload(workspace, "ok.png", PNG)
    content = " ".join(f"[IMAGE:{p}]" for p in [*bad, good])
    with caplog.at_level(logging.WARNING, logger="zeroclaw_ref.engine.images"):
        (out,) = attach_images([{"role": "user", "content": content}], workspace)
    assert out["images"] == [
        {"type": "image", "path": good, "mime_type": "image/png", "data": _b64(PNG)}
    ]
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == len(bad)
    for path, warning in zip(bad, warnings, strict=True):
        assert warning.startswith(f"image {path} not sent to the model: ")


@pytest.mark.req("POL-ENGINE-12", "ACP-PROMPT-17")
def test_a_marker_path_no_file_can_have_adds_no_part_instead_of_failing_the_turn(
    workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """POL-ENGINE-12: a NUL or a lone surrogate in a prompt's marker is one more unusable
    path (one WARN, no part); the operating-system call used to raise and fail the turn."""
    good = _upload(workspace, "ok.png", PNG)
    bad = [f"{workspace}/uploads/a\x00b.png", f"{workspace}/upl\x00oads/a.png"]
    bad.append(f"{workspace}/uploads/a\ud800.png")
    content = " ".join(f"[IMAGE:{p}]" for p in [*bad, good])
    with caplog.at_level(logging.WARNING, logger="zeroclaw_ref.engine.images"):
        (out,) = attach_images([{"role": "user", "content": content}], workspace)
    assert out["images"] == [
        {"type": "image", "path": good, "mime_type": "image/png", "data": _b64(PNG)}
    ]
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == len(bad)
    for path, warning in zip(bad, warnings, strict=True):
        assert warning.startswith(f"image {path} not sent to the model: ")


@pytest.mark.req("POL-ENGINE-12")
def test_a_marker_naming_nothing_usable_leaves_no_images_key(workspace: Path) -> None:
    message: JSONObject = {"role": "user", "content": "[IMAGE:/nowhere/x.png]", "images": []}
    (out,) = attach_images([message], workspace)
    assert out == {"role": "user", "content": "[IMAGE:/nowhere/x.png]"}


# --- the request bodies for an [IMAGE:…] marker in a user prompt --------------------------


@pytest.fixture
def server() -> Iterator[FakeLLM]:
    with FakeLLM() as fake:
        yield fake


def _marker_request(workspace: Path) -> tuple[ModelRequest, str]:
    path = _upload(workspace, "cat.png", PNG)
    messages = attach_images(
        [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": f"What is [IMAGE:{path}]"},
        ],
        workspace,
    )
    return ModelRequest(model="m", temperature=0.0, messages=tuple(messages)), path


@pytest.mark.req("POL-ENGINE-12", "CFG-PROV-06")
def test_openai_sends_a_marker_image_as_an_image_url_part(workspace: Path, server: FakeLLM) -> None:
    request, path = _marker_request(workspace)
    server.queue(Reply(events=openai_stream({"content": "A cat."}, {"finish_reason": "stop"})))
    config = ProviderConfig(name="o", kind="openai", model="m", base_url=server.url, api_key="k")
    list(OpenAIProvider(config, Path()).stream(request))
    assert server.requests[0].body == {
        "model": "m",
        "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": [
                {"type": "text", "text": f"What is [IMAGE:{path}]"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{_b64(PNG)}"}},
            ]},
        ],
        "temperature": 0.0,
        "stream": True,
        "stream_options": {"include_usage": True},
    }  # fmt: skip


@pytest.mark.req("POL-ENGINE-12", "CFG-PROV-07")
def test_anthropic_sends_a_marker_image_as_a_base64_image_block(
    workspace: Path, server: FakeLLM
) -> None:
    request, path = _marker_request(workspace)
    server.queue(
        Reply(events=anthropic_stream({"type": "message_start"}, {"type": "message_stop"}))
    )
    config = ProviderConfig(name="a", kind="anthropic", model="m", base_url=server.url, api_key="k")
    list(AnthropicProvider(config, Path()).stream(request))
    assert server.requests[0].body == {
        "model": "m",
        "max_tokens": 4096,
        "system": "sys",
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": f"What is [IMAGE:{path}]"},
                {"type": "image", "source": {
                    "type": "base64", "media_type": "image/png", "data": _b64(PNG)}},
            ]},
        ],
        "temperature": 0.0,
        "stream": True,
    }  # fmt: skip
