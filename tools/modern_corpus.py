"""Derive the 2026-07-28 variants of the MCP transcripts (issue 16: every scenario of
fixtures/mcp/ that applies to both eras runs in both).

    python tools/modern_corpus.py            # (re)write the variants, mcp/<area>/<name>-modern
    python tools/modern_corpus.py --check    # exit 1 when a variant is out of step

A variant is its legacy scenario with each fake server's handshake replaced by the modern
start: the client's `server/discover` probe (pinned with its `_meta` envelope) is answered with
a DiscoverResult carrying the capabilities, server info and instructions the `initialize`
result carried, `initialize` and `notifications/initialized` disappear, and the client's later
request ids on that channel move down by one per handshake removed. Over HTTP every later POST
must also carry `MCP-Protocol-Version: 2026-07-28` and `Mcp-Method` (and `Mcp-Name` for the
named methods). Everything else - the ACP side, the tool results, the timings - is unchanged,
which is the point: the agent behaves the same in both eras.

Scenarios that are about the handshake era itself are not derived; `legacy_only` says why.
The runner needs nothing new: a variant is an ordinary scenario beside its legacy one, named
`<name>-modern`, so running an area runs it in both eras.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"
SOURCE = FIXTURES / "mcp"
SUFFIX = "-modern"
MODERN = "2026-07-28"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPS = "io.modelcontextprotocol/clientCapabilities"
META_INFO = "io.modelcontextprotocol/clientInfo"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
# The agent logs MCP server messages at WARNING and above by default (acp.md ACP-TR-03), so it
# asks a modern server for exactly those (MCP-MOD-05).
LOG_LEVEL = "warning"
NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
# Areas that are the handshake era itself: version negotiation and sessions (handshake/), the
# resumption of broken streams (resume/; MCP-MOD-17: no resumption), and server-to-client
# requests (server-requests/; MCP-MOD-18: multi round-trip requests replace them).
LEGACY_AREAS = {
    "handshake": "negotiates the handshake era itself",
    "resume": "resumes a stream, which the 2026-07-28 era never does (MCP-MOD-17)",
    "server-requests": "sends server-to-client requests, which MRTR replaces (MCP-MOD-18)",
}
# Scenarios of those areas that hold in both eras: a server without the tools capability is
# not listed, and discovery is followed by the listing.
BOTH_ERAS = {"no-tools-capability-no-listing", "stdio-initialize-then-list"}
# Methods only the handshake era has on the wire (MCP-MOD-10, MCP-MOD-18).
LEGACY_METHODS = {
    "ping", "logging/setLevel", "resources/subscribe", "elicitation/create",
    "sampling/createMessage", "roots/list",
}  # fmt: skip

DESCRIPTION_MAX = 200  # TX-HEADER-02
Frame = dict[str, Any]


def load(path: Path) -> list[Frame]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def dump(frames: list[Frame]) -> str:
    lines = [json.dumps(f, ensure_ascii=False, separators=(",", ":")) for f in frames]
    return "\n".join(lines) + "\n"


def _message(frame: Frame) -> Frame | None:
    for verb in ("expect", "send"):
        value = frame.get(verb)
        if isinstance(value, dict):
            return value
    return None


def _channels(header: Frame) -> dict[str, Frame]:
    channels = header.get("channels")
    if not isinstance(channels, dict):
        return {}
    return {k: v for k, v in channels.items() if v.get("role") == "mcp-server"}


def legacy_only(path: Path, frames: list[Frame]) -> str | None:
    """Why the scenario exists only in the handshake era, or None when it has a variant."""
    area = path.relative_to(SOURCE).parts[0]
    if path.stem.endswith(SUFFIX):
        return "is itself a variant"
    if area in LEGACY_AREAS and path.stem not in BOTH_ERAS:
        return LEGACY_AREAS[area]
    channels = _channels(frames[0])
    if not channels:
        return "plays no MCP server"
    for name, channel in channels.items():
        if channel.get("transport") == "sse":
            return f"channel `{name}` is a legacy HTTP+SSE server"
    http = {n for n, c in channels.items() if c.get("transport") == "http"}
    for frame in frames[1:]:
        message = _message(frame) or {}
        method = message.get("method")
        if method in LEGACY_METHODS:
            return f"`{method}` exists only in the handshake era"
        meta = frame.get("http")
        if isinstance(meta, dict):
            if meta.get("via") == "get":
                return "uses the standalone GET stream (none in the 2026-07-28 era, MCP-MOD-17)"
            headers = meta.get("headers") or {}
            if any(h.lower() == "mcp-session-id" for h in headers):
                return "pins a session id (none in the 2026-07-28 era, MCP-MOD-17)"
        if frame.get("ch") in http and method == "notifications/cancelled":
            return "cancels over HTTP with a notification (closing the stream, MCP-MOD-17)"
        result = message.get("result")
        caps = result.get("capabilities") if isinstance(result, dict) else None
        if isinstance(caps, dict) and any(
            isinstance(v, dict) and v.get("listChanged") for v in caps.values()
        ):
            return "announces listChanged, which needs subscriptions/listen (MCP-MOD-13)"
    return None


def _discover_result(init_result: Frame) -> Frame:
    result: Frame = {"supportedVersions": [MODERN]}
    result["capabilities"] = init_result.get("capabilities", {})
    if "instructions" in init_result:
        result["instructions"] = init_result["instructions"]
    if "serverInfo" in init_result:
        result["_meta"] = {META_SERVER_INFO: init_result["serverInfo"]}
    return result


def _envelope(init_params: Frame) -> Frame:
    client_info = init_params.get("clientInfo", {"name": "zeroclaw_ref"})
    return {
        META_VERSION: MODERN,
        META_CAPS: init_params.get("capabilities", {}),
        META_INFO: client_info,
        META_LOG_LEVEL: LOG_LEVEL,
    }


class _Channel:
    """The per-channel state of the rewrite: removed request ids so far."""

    def __init__(self, transport: str) -> None:
        self.http = transport == "http"
        self.shift = 0
        self.probe: Frame | None = None  # the pending probe expectation (discover)

    def renumber(self, value: object) -> object:
        return value - self.shift if isinstance(value, int) and value > self.shift else value


def _is(frame: Frame, verb: str, method: str) -> bool:
    message = frame.get(verb)
    return isinstance(message, dict) and message.get("method") == method


def derive(frames: list[Frame], legacy_id: str) -> list[Frame]:
    """The 2026-07-28 variant of one legacy scenario (see the module docstring)."""
    header = dict(frames[0])
    channels = {n: _Channel(c.get("transport", "stdio")) for n, c in _channels(header).items()}
    header["scenario"] = legacy_id + SUFFIX
    described = f"{header['description'].rstrip('.')}, in the 2026-07-28 era."
    if len(described) > DESCRIPTION_MAX:
        described = f"The 2026-07-28 variant of {legacy_id}, discovery in place of the handshake."
    header["description"] = described
    added = ["MCP-MOD-05", "MCP-MOD-10"]
    transports = {"http" if c.http else "stdio" for c in channels.values()}
    added += (["MCP-MOD-01"] if "stdio" in transports else []) + (
        ["MCP-MOD-02", "MCP-MOD-14"] if "http" in transports else []
    )
    header["requirements"] = list(header.get("requirements", [])) + [
        r for r in added if r not in header.get("requirements", [])
    ]
    out: list[Frame] = [header]
    body = [dict(f) for f in frames[1:]]
    i = 0
    while i < len(body):
        frame = body[i]
        channel = channels.get(frame.get("ch", ""))
        if channel is None:
            out.append(frame)
            i += 1
            continue
        # The handshake block: [discover, its error,] initialize, its result, initialized.
        start = i
        probe = None
        if _is(frame, "expect", "server/discover"):
            probe = frame
            i += 2  # the probe and the error that sent the client to the handshake
        if (
            i < len(body)
            and _is(body[i], "expect", "initialize")
            and body[i].get("ch") == frame.get("ch")
        ):
            init_expect, init_send = body[i], body[i + 1]
            initialized = body[i + 2]
            assert _is(initialized, "expect", "notifications/initialized"), legacy_id
            init_params = init_expect["expect"].get("params", {})
            init_result = init_send["send"].get("result", {})
            probe_id = probe["expect"]["id"] if probe is not None else init_expect["expect"]["id"]
            probe_id = channel.renumber(probe_id)
            expect: Frame = {
                "jsonrpc": "2.0",
                "id": probe_id,
                "method": "server/discover",
                "params": {"_meta": _envelope(init_params)},
            }
            probe_frame: Frame = {"expect": expect, "ch": frame["ch"]}
            if channel.http:
                probe_frame["http"] = {"headers": _headers("server/discover", None)}
            answer: Frame = {
                "jsonrpc": "2.0",
                "id": probe_id,
                "result": _discover_result(init_result),
            }
            out += [probe_frame, {"send": answer, "ch": frame["ch"]}]
            # The probe keeps its id; the handshake's request id is gone, so when the legacy
            # flow probed first every later id moves down by one.
            if probe is not None:
                channel.shift += 1
            i += 3
            continue
        i = start
        out.append(_rewrite(frame, channel))
        i += 1
    return out


def _headers(method: str, name: object) -> Frame:
    headers: Frame = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if isinstance(name, str):
        headers["Mcp-Name"] = name
    return headers


def _rewrite(frame: Frame, channel: _Channel) -> Frame:
    """A later frame of a server channel: its client-request id renumbered, and over HTTP the
    modern headers pinned on what the client sends."""
    frame = json.loads(json.dumps(frame))
    for verb in ("expect", "send"):
        message = frame.get(verb)
        if not isinstance(message, dict):
            continue
        is_client_request = verb == "expect" and "method" in message and "id" in message
        is_reply_to_client = verb == "send" and "method" not in message and "id" in message
        if is_client_request or is_reply_to_client:
            message["id"] = channel.renumber(message["id"])
        if verb == "expect" and message.get("method") == "notifications/cancelled":
            params = message.get("params", {})
            params["requestId"] = channel.renumber(params.get("requestId"))
        if verb == "expect" and channel.http and "method" in message:
            method = message["method"]
            params = message.get("params") or {}
            name = params.get(NAMED[method]) if method in NAMED else None
            meta = dict(frame.get("http") or {})
            meta["headers"] = {**(meta.get("headers") or {}), **_headers(method, name)}
            frame["http"] = meta
    return frame


def variants() -> Iterator[tuple[Path, str | None, str]]:
    """(legacy path, why it has no variant or None, the variant's text or '')."""
    for path in sorted(SOURCE.rglob("*.jsonl")):
        rel = path.relative_to(SOURCE)
        if path.stem.endswith(SUFFIX):
            continue
        frames = load(path)
        why = legacy_only(path, frames)
        legacy_id = "mcp/" + rel.with_suffix("").as_posix()
        yield path, why, "" if why else dump(derive(frames, legacy_id))


def target_of(path: Path) -> Path:
    return path.with_name(path.stem + SUFFIX + path.suffix)


def main(argv: list[str]) -> int:
    check = "--check" in argv
    expected: dict[Path, str] = {}
    for path, why, text in variants():
        if why is None:
            expected[target_of(path)] = text
        elif "-v" in argv:
            print(f"legacy only: {path.relative_to(FIXTURES)}: {why}")
    present = set(SOURCE.rglob(f"*{SUFFIX}.jsonl"))
    stale = sorted(present - set(expected))
    differ = sorted(p for p, t in expected.items() if not p.is_file() or p.read_text("utf-8") != t)
    if check:
        for p in stale + differ:
            print(f"out of step: {p.relative_to(FIXTURES)}", file=sys.stderr)
        return 1 if stale or differ else 0
    for p in stale:
        p.unlink()
    for p in differ:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(expected[p], encoding="utf-8")
    print(f"{len(expected)} variants ({len(differ)} written, {len(stale)} removed)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
