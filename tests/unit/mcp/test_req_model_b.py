"""The client surface, discovery, recovery and response sizes (mcp.md §0.5, §2.3, §6.2, §7,
§8), against the scripted stdio server (its `--more-tools`) and the loopback
HTTP fake."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import wait_for
from tests.helpers.fake_mcp_http import FakeMcpHttp
from tests.helpers.mcp_server import RICH_FIELDS, more_tools_config
from tests.unit.mcp.conftest import Connect
from zeroclaw_ref.config.model import McpServerConfig
from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.mcp import (
    McpCancelledError,
    McpOptions,
    McpProtocolError,
    McpRegistry,
    McpRpcError,
    McpSizeLimitError,
    McpToolError,
    format_result_for_model,
)
from zeroclaw_ref.mcp import httpbody as hb
from zeroclaw_ref.mcp.adapters import McpToolAdapter
from zeroclaw_ref.mcp.discovery import list_all
from zeroclaw_ref.mcp.lifecycle import State
from zeroclaw_ref.tools.base import ToolContext

HTTP_OPTS = McpOptions(init_timeout_s=5, list_timeout_s=5, default_tool_timeout_s=5)


def _recorded(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _methods(path: Path) -> list[str | None]:
    return [m.get("method") for m in _recorded(path)]


def _text(result: object) -> str:
    assert isinstance(result, dict)
    return str(result["content"][0]["text"])


def _pid(reg: McpRegistry) -> int:
    pid = reg.connection("peer")._transport.pid  # type: ignore[attr-defined]
    assert isinstance(pid, int)
    return pid


@pytest.fixture
def http_fake() -> Iterator[FakeMcpHttp]:
    server = FakeMcpHttp(more_tools=True)
    yield server
    server.close()


def _http(fake: FakeMcpHttp, **fields: object) -> McpServerConfig:
    return McpServerConfig(name="h", transport="http", url=fake.url, **fields)  # type: ignore[arg-type]


# --- the public surface ------------------------------------------------------------------


@pytest.mark.req("MCP-API-01")
def test_the_package_exports_its_public_surface() -> None:
    import zeroclaw_ref.mcp as package

    names = (
        "McpRegistry", "McpOptions", "ClientHandlers", "accept_with_defaults",
        "format_result_for_model",
    )  # fmt: skip
    errors = (
        "McpError", "McpConnectError", "McpProtocolError", "McpRpcError", "McpToolError",
        "McpTimeoutError", "McpOutcomeUnknownError", "McpCancelledError", "McpUnavailableError",
        "McpSizeLimitError", "McpClosedError",
    )  # fmt: skip
    for name in names + errors:
        assert name in package.__all__ and getattr(package, name) is not None, name
    for name in errors:
        cls = getattr(package, name)
        assert isinstance(cls, type) and issubclass(cls, package.McpError), name
    assert callable(package.McpRegistry.connect_all)


_PROBE = r"""
import ast, importlib, json, pkgutil, sys
import zeroclaw_ref.mcp as package
for info in pkgutil.iter_modules(package.__path__):
    importlib.import_module("zeroclaw_ref.mcp." + info.name)

def runtime_imports(tree):
    # every import except those under `if TYPE_CHECKING:`
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for b in node.body for n in ast.walk(b))
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module

found = set()
for name, module in sorted(sys.modules.items()):
    path = getattr(module, "__file__", None)
    if name.startswith("zeroclaw_ref") and path and path.endswith(".py"):
        tree = ast.parse(open(path, encoding="utf-8").read())
        found.update(n.split(".")[0] for n in runtime_imports(tree))
print(json.dumps({"asyncio": "asyncio" in sys.modules, "imports": sorted(found)}))
"""


def _runtime_closure(roots: tuple[str, ...]) -> set[str]:
    """The distributions `roots` need at run time (extras left out), normalised names."""
    from packaging.requirements import Requirement

    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop().lower().replace("_", "-")
        if name in seen:
            continue
        seen.add(name)
        for line in metadata.requires(name) or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return seen


@pytest.mark.req("MCP-API-07")
def test_the_client_uses_no_asyncio_and_only_the_allowed_dependencies() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=60, check=True
    )
    report = json.loads(done.stdout)
    assert report["asyncio"] is False
    assert not {"asyncio", "anyio", "trio"} & set(report["imports"])
    third_party = {
        name
        for name in report["imports"]
        if name not in sys.stdlib_module_names and name not in ("__future__", "zeroclaw_ref")
    }
    assert {"requests", "sseclient"} <= third_party
    # every outside import belongs to requests, sseclient-py or cryptography (or what they
    # themselves install, such as urllib3 under requests)
    allowed = _runtime_closure(("requests", "sseclient-py", "cryptography"))
    owners = metadata.packages_distributions()
    for name in third_party:
        dists = {d.lower().replace("_", "-") for d in owners.get(name, [name])}
        assert dists <= allowed, (name, dists)


# --- cancellation and recovery -----------------------------------------------------------


@pytest.fixture
def gate(tmp_path: Path) -> Iterator[tuple[Path, list[int]]]:
    """A FIFO the extended server reads one byte from before answering `initialize`."""
    path = tmp_path / "gate"
    fds: list[int] = []
    yield path, fds
    for fd in fds:
        os.close(fd)


def _arm(path: Path, fds: list[int]) -> None:
    os.mkfifo(path)
    fds.append(os.open(path, os.O_RDWR))  # read-write: never blocks, keeps the pipe alive


def _kill_and_wait_broken(reg: McpRegistry) -> None:
    os.kill(_pid(reg), 9)
    wait_for(lambda: reg.connection("peer").state is State.BROKEN, "death noticed")


@pytest.mark.req("MCP-CANCEL-07", "MCP-CANCEL-05")
def test_a_cancel_during_recovery_lets_it_finish_then_fails_before_writing(
    connect: Connect, tmp_path: Path, gate: tuple[Path, list[int]]
) -> None:
    record = tmp_path / "rec.jsonl"
    path, fds = gate
    reg = connect(more_tools_config("--record", str(record), "--init-gate", str(path)))
    _arm(path, fds)
    _kill_and_wait_broken(reg)
    token = CancelToken()
    errors: list[BaseException] = []

    def call() -> None:
        try:
            reg.call_tool("peer__echo", {"message": "never"}, cancel=token)
        except BaseException as exc:
            errors.append(exc)

    caller = threading.Thread(target=call)
    caller.start()
    wait_for(lambda: _methods(record).count("initialize") == 2, "re-handshake started")
    token.fire()  # while the recovery waits for its initialize response
    os.write(fds[0], b"x")
    caller.join(10)
    assert len(errors) == 1 and isinstance(errors[0], McpCancelledError)
    assert str(errors[0]) == "MCP server `peer` call cancelled before writing tool call `echo`"
    conn = reg.connection("peer")
    assert conn.state is State.READY  # the recovery completed
    wait_for(lambda: _methods(record).count("notifications/initialized") == 2, "handshake end")
    assert not [m for m in _recorded(record) if m.get("params", {}).get("name") == "echo"]
    pid = _pid(reg)
    assert _text(reg.call_tool("peer__echo", {"message": "next"})) == "Echo: next"
    assert _pid(reg) == pid and _methods(record).count("initialize") == 2


@pytest.mark.req("MCP-REC-06")
def test_recovery_is_lazy_in_the_caller_thread_and_shared_by_concurrent_callers(
    connect: Connect, tmp_path: Path, gate: tuple[Path, list[int]]
) -> None:
    record = tmp_path / "rec.jsonl"
    path, fds = gate
    reg = connect(more_tools_config("--record", str(record), "--init-gate", str(path)))
    conn = reg.connection("peer")
    transport = conn._transport  # type: ignore[attr-defined]
    opened_on: list[str] = []
    real_open = transport.open

    def spy(generation: int, deadline: float) -> None:
        opened_on.append(threading.current_thread().name)
        real_open(generation, deadline)

    transport.open = spy
    _arm(path, fds)
    _kill_and_wait_broken(reg)
    # nothing respawns in the background: the connection waits for its next caller
    assert opened_on == [] and _methods(record).count("initialize") == 1
    assert conn.state is State.BROKEN
    results: dict[str, str] = {}

    def call(i: int) -> None:
        results[threading.current_thread().name] = _text(
            reg.call_tool("peer__echo", {"message": str(i)})
        )

    callers = [threading.Thread(target=call, args=(i,), name=f"caller-{i}") for i in range(4)]
    callers[0].start()
    wait_for(lambda: _methods(record).count("initialize") == 2, "recovery started")
    for t in callers[1:]:
        t.start()
    wait_for(lambda: all(t.is_alive() for t in callers), "callers waiting")
    os.write(fds[0], b"x")
    for t in callers:
        t.join(10)
    assert sorted(results) == [f"caller-{i}" for i in range(4)]
    assert opened_on == ["caller-0"]  # one recovery, run by the first caller itself
    assert _methods(record).count("initialize") == 2


@pytest.mark.req("MCP-REC-05")
def test_errors_that_are_answers_never_retry_or_reset_stdio(
    connect: Connect, tmp_path: Path
) -> None:
    record = tmp_path / "rec.jsonl"
    reg = connect(more_tools_config("--record", str(record)))
    pid = _pid(reg)
    with pytest.raises(McpRpcError):
        reg.call_tool("peer__rpcerror", {})
    with pytest.raises(McpToolError):
        reg.call_tool("peer__fail", {})
    assert _pid(reg) == pid and reg.connection("peer").state is State.READY
    names = [m["params"]["name"] for m in _recorded(record) if m.get("method") == "tools/call"]
    assert names == ["rpcerror", "fail"]  # each sent exactly once
    assert _methods(record).count("initialize") == 1


@pytest.mark.req("MCP-REC-05")
def test_errors_that_are_answers_never_retry_or_reset_http(
    connect: Connect, http_fake: FakeMcpHttp
) -> None:
    reg = connect(_http(http_fake, max_response_bytes=5000), options=HTTP_OPTS)
    with pytest.raises(McpProtocolError, match="HTTP 500"):
        reg.call_tool("h__status500", {})
    with pytest.raises(McpSizeLimitError):
        reg.call_tool("h__big", {"bytes": 10_000})
    assert reg.connection("h").state is State.READY
    posts = [p.body for p in http_fake.seen("POST")]
    assert [p.get("method") for p in posts].count("initialize") == 1
    calls = [p["params"]["name"] for p in posts if p.get("method") == "tools/call"]
    assert calls == ["status500", "big"]
    assert not http_fake.seen("DELETE")


@pytest.mark.req("MCP-RPC-09")
def test_the_model_sees_the_specific_failure_text(connect: Connect) -> None:
    reg = connect(
        more_tools_config(), options=McpOptions(default_tool_timeout_s=0.5, close_grace_s=1)
    )
    ctx = ToolContext(cancel=CancelToken())
    by_name = {t.prefixed_name: McpToolAdapter(t, reg, None) for t in reg.tools()}
    expected = {
        "peer__rpcerror": "MCP tool `rpcerror` error -32602: bad arguments: ?x",
        "peer__fail": "MCP `fail` (server `peer`) returned isError: it failed",
        "peer__slow": (
            "MCP server `peer` timed out after 0.5s during tool call `slow`; outcome unknown and "
            "request was not replayed"
        ),
    }
    for name, text in expected.items():
        result = by_name[name].execute({}, ctx)
        assert not result.success and result.error == text


# --- discovery ---------------------------------------------------------------------------


@pytest.mark.req("MCP-DISC-07")
def test_extra_tool_fields_are_kept_but_change_nothing_the_model_sees(connect: Connect) -> None:
    reg = connect(more_tools_config("--rich-tools", name="rich"), more_tools_config(name="plain"))
    tools = {t.prefixed_name: t for t in reg.tools()}
    rich, plain = tools["rich__structured"], tools["plain__structured"]
    for key, value in RICH_FIELDS.items():
        assert rich.raw[key] == value
    assert (rich.description, rich.input_schema) == (plain.description, plain.input_schema)
    shown = McpToolAdapter(rich, reg, None)
    baseline = McpToolAdapter(plain, reg, None)
    assert (shown.description, shown.parameters) == (baseline.description, baseline.parameters)
    # structuredContent is not checked against the (violated) outputSchema
    result = reg.call_tool("rich__structured", {})
    assert result["structuredContent"] == {"n": 1}
    text, _ = format_result_for_model(result, None)
    assert json.loads(text)["structuredContent"] == {"n": 1}


@pytest.mark.req("MCP-DISC-13")
def test_cursors_are_opaque_and_every_listing_starts_afresh() -> None:
    cursors = [" page two ", '{"after": 3}', "ζ/3=="]
    sent: list[JSONObject] = []

    def requester(method: str, params: JSONObject) -> JSON:
        sent.append(dict(params))
        position = 0 if "cursor" not in params else cursors.index(str(params["cursor"])) + 1
        result: JSONObject = {"tools": [{"name": f"t{position}"}]}
        if position < len(cursors):
            result["nextCursor"] = cursors[position]
        return result

    assert len(list_all("s", requester, "tools/list", "tools", 100)) == 4
    assert sent == [{}] + [{"cursor": c} for c in cursors]  # passed back verbatim
    sent.clear()
    list_all("s", requester, "tools/list", "tools", 100)
    assert sent[0] == {}  # a later listing never resumes from an old cursor


@pytest.mark.req("MCP-DISC-13")
def test_a_refresh_lists_from_the_first_page(connect: Connect, tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    reg = connect(
        more_tools_config("--record", str(record), "--page-size", "10", "--fillers", "15")
    )
    reg.call_tool("peer__change_tools", {})
    wait_for(lambda: reg.connection("peer").tools_stale, "list_changed")
    assert reg.refresh_if_stale() is True
    listings = [m["params"] for m in _recorded(record) if m.get("method") == "tools/list"]
    starts = [i for i, params in enumerate(listings) if params == {}]
    assert len(starts) == 2 and len(listings) == 2 * starts[1]
    assert listings[: starts[1]] == listings[starts[1] :]  # the same walk, from the start


@pytest.mark.req("MCP-DISC-16")
def test_a_list_changed_during_a_listing_leaves_the_list_stale(connect: Connect) -> None:
    reg = connect(more_tools_config("--notify-during-list"))
    conn = reg.connection("peer")
    assert conn.tools_stale is True  # arrived while the connect's listing ran
    assert reg.refresh_if_stale() is True
    assert conn.tools_stale is True  # arrived again during the refresh's listing
    assert "peer__echo" in [t.prefixed_name for t in reg.tools()]


@pytest.mark.req("MCP-DISC-20")
def test_resource_and_prompt_list_changes_send_nothing(connect: Connect, tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    reg = connect(more_tools_config("--record", str(record)))
    before = len(_recorded(record))
    assert _text(reg.call_tool("peer__notify_lists", {})) == "lists changed"
    assert reg.connection("peer").tools_stale is False
    assert reg.refresh_if_stale() is False
    reg.call_tool("peer__echo", {"message": "after"})
    later = _recorded(record)[before:]
    assert [m["params"]["name"] for m in later] == ["notify_lists", "echo"]


@pytest.mark.req("MCP-NOTE-04")
def test_the_client_never_sends_unsupported_methods_or_progress_tokens(
    connect: Connect, tmp_path: Path
) -> None:
    record = tmp_path / "rec.jsonl"
    reg = connect(more_tools_config("--record", str(record)))
    reg.call_tool("peer__echo", {"message": "x"})
    reg.call_tool("peer__notify", {})  # the server logs and reports progress
    reg.list_resources()
    reg.list_resources("peer")
    reg.read_resource("peer__test://doc/1")
    reg.list_prompts()
    reg.get_prompt("peer__greet", {"who": "Ada"})
    reg.call_tool("peer__change_tools", {})
    wait_for(lambda: reg.connection("peer").tools_stale, "list_changed")
    reg.refresh_if_stale()
    sent = _recorded(record)
    methods = {m.get("method") for m in sent}
    assert {"resources/read", "prompts/get", "tools/call"} <= methods
    assert not methods & {"logging/setLevel", "resources/subscribe", "completion/complete"}
    assert "progressToken" not in json.dumps(sent)


# --- response sizes ----------------------------------------------------------------------


@pytest.mark.req("MCP-SIZE-02")
def test_the_limit_counts_raw_body_bytes_not_decoded_text(
    connect: Connect, http_fake: FakeMcpHttp
) -> None:
    reg = connect(_http(http_fake, max_response_bytes=5000), options=HTTP_OPTS)
    # 1000 characters (2000 bytes as UTF-8) sent as \u00e9 escapes: about 6000 raw bytes
    with pytest.raises(McpSizeLimitError, match="exceeds the 5000-byte limit"):
        reg.call_tool("h__escaped", {"chars": 1000})
    with pytest.raises(McpSizeLimitError, match="SSE response body exceeds the 5000-byte"):
        reg.call_tool("h__escaped", {"chars": 1000, "sse": True})
    assert _text(reg.call_tool("h__escaped", {"chars": 500})) == "é" * 500  # about 3000 raw


@pytest.mark.req("MCP-SIZE-02", "MCP-SIZE-01")
def test_the_default_limit_admits_a_full_ten_mib_blob(
    connect: Connect, http_fake: FakeMcpHttp, tmp_path: Path
) -> None:
    reg = connect(_http(http_fake), options=HTTP_OPTS)
    result = reg.call_tool("h__blob", {"bytes": 10 * 1024 * 1024})  # 13.98 MB of base64
    text, _ = format_result_for_model(result, tmp_path)
    marker = json.loads(text)["content"][0]["resource"]["materialized"]
    assert marker.startswith("[Document: big.bin] ")
    assert Path(marker.split("] ", 1)[1]).stat().st_size == 10 * 1024 * 1024


@pytest.mark.req("MCP-SIZE-07")
def test_an_sse_reply_is_returned_before_the_stream_ends(
    connect: Connect, http_fake: FakeMcpHttp, caplog: pytest.LogCaptureFixture
) -> None:
    reg = connect(_http(http_fake, max_response_bytes=5000), options=HTTP_OPTS)
    with caplog.at_level(logging.WARNING):
        result = reg.call_tool("h__sse_hold", {"flood": 20_000})
        assert _text(result) == "early"
        assert not http_fake.state.hold_finished.is_set()  # the server still holds the stream
        http_fake.state.hold_release.set()
        wait_for(http_fake.state.hold_finished.is_set, "stream end")
        assert _text(reg.call_tool("h__echo", {"message": "next"})) == "Echo: next"
    assert http_fake.state.hold_released_in_time
    assert reg.connection("h").state is State.READY
    assert "limit" not in caplog.text


class _Body(hb.Body):
    status, content_type, content_length = 400, "text/plain", None

    def __init__(self, parts: list[bytes]) -> None:
        self.parts = parts
        self.read = 0

    def chunks(self) -> Iterator[bytes]:
        for part in self.parts:
            self.read += 1
            yield part

    def header(self, name: str) -> str | None:
        return None

    def shutdown(self) -> None: ...

    def close(self) -> None: ...


@pytest.mark.req("MCP-SIZE-10", "MCP-HTTP-38")
def test_a_diagnostic_body_is_read_only_up_to_4096_bytes() -> None:
    words = b" session not found"
    assert hb.stale_400(_Body([b"Bad Request:" + words]))
    late = _Body([b"x" * 4096, words])
    assert not hb.stale_400(late) and late.read == 1  # the second chunk is never pulled
    assert not hb.stale_400(_Body([b"y" * 5000 + words]))  # beyond 4096 in one chunk
    assert hb.stale_400(_Body([b"z" * (4096 - len(words)) + words]))  # ends at exactly 4096
