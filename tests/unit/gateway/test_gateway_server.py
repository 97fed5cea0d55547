"""Authentication, the prefix and the hosted scheduler of `gateway/server.py` (acp.md ACP-GW-02,
ACP-GW-03, policy.md POL-PATH-12, POL-PATH-18)."""

from __future__ import annotations

from collections.abc import Callable
from email.message import Message
from pathlib import Path
from typing import Any

import pytest

from tests.unit.gateway.conftest import TOKEN, Running, demo_config, digest
from zeroclaw_ref.config.load import load_config
from zeroclaw_ref.gateway.request import HttpRequest
from zeroclaw_ref.gateway.server import _strip_prefix, presented_token, token_accepted

Start = Callable[..., Running]


def _request(path: str, headers: dict[str, str], query: dict[str, str]) -> HttpRequest:
    message = Message()
    for name, value in headers.items():
        message[name] = value
    fake: Any = None
    return HttpRequest("GET", path, query, message, b"", "127.0.0.1", fake, fake, fake)


@pytest.mark.req("ACP-GW-02", "ACP-GW-12")
@pytest.mark.parametrize(
    ("path", "headers", "query", "expected"),
    [
        ("/acp", {"Authorization": "Bearer  a "}, {"token": "c"}, "a"),
        ("/acp", {"Authorization": "Bearer "}, {"token": "c"}, "c"),
        ("/acp", {"Authorization": "bearer a"}, {}, None),
        ("/acp", {"Sec-WebSocket-Protocol": "zeroclaw.acp.v1, bearer.b"}, {"token": "c"}, "b"),
        ("/acp", {"Sec-WebSocket-Protocol": "bearer."}, {"token": "c"}, "c"),
        ("/api/tools", {"Sec-WebSocket-Protocol": "bearer.b"}, {}, None),
        ("/api/tools", {}, {"token": ""}, None),
    ],
)
def test_token_is_the_first_non_empty_carrier(
    path: str, headers: dict[str, str], query: dict[str, str], expected: str | None
) -> None:
    assert presented_token(_request(path, headers, query)) == expected


@pytest.mark.req("ACP-GW-03")
def test_tokens_match_by_digest_only(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(demo_config())
    config = load_config(tmp_path, tmp_path / "data", {})
    assert token_accepted(config, TOKEN)
    assert not token_accepted(config, digest(TOKEN))  # the digest itself is not a token
    assert not token_accepted(config, None)
    assert not token_accepted(config, TOKEN + "x")


@pytest.mark.req("POL-PATH-12")
@pytest.mark.parametrize(
    ("path", "prefix", "expected"),
    [
        ("/api/chat", None, "/api/chat"),
        ("/zc/api/chat", "/zc", "/api/chat"),
        ("/zc", "/zc", "/"),
        ("/zcx/api/chat", "/zc", None),
        ("/api/chat", "/zc", None),
    ],
)
def test_routes_live_below_the_prefix(path: str, prefix: str | None, expected: str | None) -> None:
    assert _strip_prefix(path, prefix) == expected


@pytest.mark.req("POL-PATH-18")
def test_gateway_hosts_the_scheduler_only_when_enabled(start_gateway: Start) -> None:
    off = start_gateway()
    assert off.gateway._scheduler is None
    on = start_gateway(demo_config().replace("enabled = false", "enabled = true"))
    assert on.gateway._scheduler is not None
