"""The 2026-07-28 era over stdio (mcp.md §14): era detection and its fallbacks, the envelope,
result kinds, version retries, multi round-trip requests, list caching and listen, against the
scripted modern server (tests/helpers/fake_mcp_modern.py) and the scripted legacy one
(tests/helpers/mcp_server.py)."""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import wait_for
from tests.helpers.fake_mcp_http import FakeMcpHttp, script_for
from tests.helpers.json_at import text_at
from tests.unit.mcp.conftest import FAST, Connect, stdio_config
from zeroclaw_ref import __version__
from zeroclaw_ref.config.model import McpServerConfig
from zeroclaw_ref.core.jsontypes import JSONObject
from zeroclaw_ref.mcp import (
    ClientHandlers,
    McpOptions,
    McpOutcomeUnknownError,
    McpProtocolError,
    McpRpcError,
    McpTimeoutError,
    accept_with_defaults,
    mrtr,
)
from zeroclaw_ref.mcp import era as eras

MODERN_SERVER = Path(__file__).resolve().parents[2] / "helpers" / "fake_mcp_modern.py"
MODERN = "2026-07-28"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "zeroclaw_ref", "version": __version__},
    "io.modelcontextprotocol/logLevel": "warning",
}
STATE = 'st "ü" {1}  \\u00e9'  # the fake's default requestState: quotes, non-ASCII, escapes


def modern_config(*args: str, record: Path | None = None, **fields: Any) -> McpServerConfig:
    extra = ("--record", str(record)) if record is not None else ()
    return McpServerConfig(
        name=fields.pop("name", "m"),
        command=sys.executable,
        args=(str(MODERN_SERVER), *args, *extra),
        **fields,
    )


def recorded(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def methods(path: Path) -> list[str]:
    return [str(m.get("method")) for m in recorded(path) if "id" in m]


def text_of(result: Any) -> str:
    return str(result["content"][0]["text"])


# --- §14.1 probing and the cached era --------------------------------------------------------


@pytest.mark.req("MCP-MOD-01", "MCP-MOD-05", "MCP-MOD-10", "MCP-INIT-03")
def test_a_modern_server_is_found_by_discover_and_never_sent_initialize(
    connect: Connect, tmp_path: Path
) -> None:
    record = tmp_path / "rec.jsonl"
    reg = connect(modern_config(record=record))
    conn = reg.connection("m")
    assert (conn.era, conn.protocol_version) == ("modern", MODERN)
    assert text_of(reg.call_tool("m__echo", {"message": "x"})) == "Echo: x"
    sent = recorded(record)
    assert sent[0] == {"jsonrpc": "2.0", "id": 1, "method": "server/discover",
                       "params": {"_meta": ENVELOPE}}  # fmt: skip
    for message in sent:
        if "id" in message:  # every request carries the whole envelope (MCP-MOD-05)
            assert message["params"]["_meta"] == ENVELOPE
    # [MCP-MOD-10] no handshake-era method at all
    assert not {"initialize", "notifications/initialized", "ping"} & {
        str(m.get("method")) for m in sent
    }
    assert conn.server_info == {"name": "modern", "version": "1"}


@pytest.mark.req("MCP-MOD-05", "MCP-INIT-03", "MCP-INIT-04")
def test_the_envelope_declares_only_the_installed_handlers(
    connect: Connect, tmp_path: Path
) -> None:
    record = tmp_path / "rec.jsonl"
    hooks = ClientHandlers(elicitation=accept_with_defaults, roots=lambda: [])
    connect(modern_config(record=record), handlers=hooks)
    caps = recorded(record)[0]["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
    assert caps == {"roots": {}, "elicitation": {}}


@pytest.mark.req("MCP-MOD-01", "MCP-MOD-04", "MCP-PERF-04")
def test_a_legacy_server_answers_the_probe_and_gets_initialize_on_the_same_process(
    connect: Connect, tmp_path: Path
) -> None:
    record = tmp_path / "rec.jsonl"
    reg = connect(stdio_config("--record", str(record)))
    conn = reg.connection("peer")
    assert (conn.era, conn.protocol_version) == ("legacy", "2025-11-25")
    sent = recorded(record)  # one process wrote the whole file: no respawn
    assert [m.get("method") for m in sent[:3]] == [
        "server/discover", "initialize", "notifications/initialized",
    ]  # fmt: skip
    assert [m.get("id") for m in sent[:2]] == [1, 2]
    assert "_meta" not in sent[1]["params"]


@pytest.mark.req("MCP-MOD-01", "MCP-MOD-04")
@pytest.mark.parametrize("mode", ["invalid", "bare-32022", "legacy-32022", "result"])
def test_anything_but_modern_evidence_falls_back_to_initialize(
    connect: Connect, tmp_path: Path, mode: str
) -> None:
    """-32602, a -32022 without data (a code alone is no evidence), a -32022 naming only
    handshake versions, and a discover result without a version we speak."""
    record = tmp_path / "rec.jsonl"
    reg = connect(stdio_config("--discover", mode, "--record", str(record)))
    assert reg.connection("peer").era == "legacy"
    assert methods(record)[:2] == ["server/discover", "initialize"]


@pytest.mark.req("MCP-MOD-01", "MCP-MOD-04", "MCP-STDIO-23")
def test_a_child_that_exits_on_the_probe_is_respawned_before_initialize(
    connect: Connect, tmp_path: Path
) -> None:
    record = tmp_path / "rec.jsonl"
    reg = connect(stdio_config("--discover", "exit", "--record", str(record)))
    assert reg.connection("peer").era == "legacy"
    assert text_of(reg.call_tool("peer__echo", {"message": "y"})) == "Echo: y"
    # the first child read only the probe; the second started with initialize
    assert methods(record)[:3] == ["server/discover", "initialize", "tools/list"]


@pytest.mark.req("MCP-MOD-04")
def test_a_child_that_refuses_initialize_after_the_probe_is_respawned(
    connect: Connect, tmp_path: Path
) -> None:
    record = tmp_path / "rec.jsonl"
    reg = connect(stdio_config("--discover", "strict", "--record", str(record)))
    assert reg.connection("peer").era == "legacy"
    # child 1: probe, refused initialize; child 2: initialize first, and it stays
    assert methods(record)[:4] == ["server/discover", "initialize", "initialize", "tools/list"]


@pytest.mark.req("MCP-MOD-01", "MCP-INIT-11")
def test_a_probe_that_is_never_answered_times_out_and_initialize_follows(
    connect: Connect, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    record = tmp_path / "rec.jsonl"
    opts = replace(FAST, probe_timeout_s=0.3)
    start = time.monotonic()
    with caplog.at_level(logging.WARNING):
        reg = connect(stdio_config("--discover", "silent", "--record", str(record)), options=opts)
    assert reg.connection("peer").era == "legacy"
    assert time.monotonic() - start < 5
    assert "did not answer `server/discover` within 0.3s; trying initialize" in caplog.text
    # no cancellation of the probe reaches a server that is still before initialize
    assert "notifications/cancelled" not in {str(m.get("method")) for m in recorded(record)}


@pytest.mark.req("MCP-MOD-03")
def test_the_era_is_kept_per_server_and_a_known_legacy_server_is_not_probed_again(
    connect: Connect, tmp_path: Path
) -> None:
    record = tmp_path / "rec.jsonl"
    config = stdio_config("--record", str(record))
    connect(config).close()
    assert eras.cached(eras.key(config)) == "legacy"
    mark = len(recorded(record))
    reg = connect(config)  # a new registry: the era is known
    assert reg.connection("peer").era == "legacy"
    assert recorded(record)[mark]["method"] == "initialize"
    assert "server/discover" not in [m.get("method") for m in recorded(record)[mark:]]
    # a respawn after a crash is not probed either
    with pytest.raises(McpOutcomeUnknownError):
        reg.call_tool("peer__crash", {})
    mark = len(recorded(record))
    assert text_of(reg.call_tool("peer__echo", {"message": "z"})) == "Echo: z"
    assert next(m.get("method") for m in recorded(record)[mark:]) == "initialize"
    # a different environment is a different server
    other = replace(config, env={"X": "1"})
    assert eras.key(other) != eras.key(config) and eras.cached(eras.key(other)) is None


@pytest.mark.req("MCP-MOD-03", "MCP-MOD-06")
def test_a_known_legacy_server_that_became_modern_is_probed_again_once(
    connect: Connect, tmp_path: Path
) -> None:
    record = tmp_path / "rec.jsonl"
    config = modern_config(record=record)
    eras.remember("m", eras.key(config), "legacy", "2025-11-25")  # as if it was legacy before
    reg = connect(config)
    assert reg.connection("m").era == "modern"
    # initialize was refused with -32022 naming 2026-07-28: discover followed
    assert methods(record)[:2] == ["initialize", "server/discover"]
    assert eras.cached(eras.key(config)) == "modern"


@pytest.mark.req("MCP-MOD-03")
def test_a_known_modern_server_that_became_legacy_falls_back(
    connect: Connect, tmp_path: Path
) -> None:
    record = tmp_path / "rec.jsonl"
    config = stdio_config("--record", str(record))
    eras.remember("peer", eras.key(config), "modern", MODERN)
    reg = connect(config)
    assert reg.connection("peer").era == "legacy"
    assert methods(record)[:2] == ["server/discover", "initialize"]
    assert eras.cached(eras.key(config)) == "legacy"


@pytest.mark.req("MCP-MOD-01", "MCP-VER-05")
def test_era_settings_force_one_era(
    connect: Connect, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    record = tmp_path / "rec.jsonl"
    reg = connect(stdio_config("--record", str(record), era="legacy"))
    assert reg.connection("peer").era == "legacy" and methods(record)[0] == "initialize"
    with caplog.at_level(logging.WARNING):
        refused = connect(stdio_config(era="modern"))
    assert refused.servers() == ()
    assert (
        "MCP server `peer` does not speak the 2026-07-28 protocol required by era = modern: "
        "error -32601: Method not found"
    ) in caplog.text
    assert connect(modern_config(era="modern")).connection("m").era == "modern"
    # the registry option is the default for servers whose configuration names no era
    legacy_opts = replace(FAST, era="legacy")
    assert connect(modern_config("--dual"), options=legacy_opts).connection("m").era == "legacy"
    assert eras.seen(modern_config("--dual")) == eras.Seen("legacy", "2025-11-25", False)


# --- §14.2 requests and results ---------------------------------------------------------------


@pytest.mark.req("MCP-MOD-06")
def test_a_32022_naming_our_version_is_retried_once(connect: Connect, tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    reg = connect(modern_config("--refuse-first", record=record))
    assert reg.connection("m").era == "modern"
    assert methods(record)[:2] == ["server/discover", "server/discover"]
    ids = [m["id"] for m in recorded(record) if "id" in m]
    assert ids == sorted(set(ids))  # a new id for the retry


@pytest.mark.req("MCP-MOD-06")
def test_modern_refusals_are_explained(connect: Connect) -> None:
    reg = connect(modern_config())
    with pytest.raises(McpRpcError) as info:
        reg.call_tool("m__refuse", {})
    assert str(info.value) == (
        "MCP server `m` refused tool call `refuse`: it needs client capabilities this client "
        "does not offer (sampling) (error -32021: sampling is required)"
    )
    assert info.value.code == -32021


@pytest.mark.req("MCP-MOD-07")
def test_result_types(connect: Connect) -> None:
    reg = connect(modern_config("--no-result-type"))  # missing resultType: complete
    assert text_of(reg.call_tool("m__echo", {"message": "a"})) == "Echo: a"
    with pytest.raises(McpProtocolError) as info:
        reg.call_tool("m__badtype", {})
    assert str(info.value) == (
        'MCP server `m` answered `tools/call` with an unknown resultType "partial"'
    )


def _rounds(record: Path, method: str) -> list[dict[str, Any]]:
    return [m for m in recorded(record) if m.get("method") == method]


@pytest.mark.req("MCP-MOD-08", "MCP-MOD-09", "MCP-S2C-09", "MCP-RPC-02")
def test_input_required_is_answered_by_the_elicitation_handler(
    connect: Connect, tmp_path: Path
) -> None:
    record = tmp_path / "rec.jsonl"
    hooks = ClientHandlers(elicitation=accept_with_defaults)
    reg = connect(modern_config(record=record), handlers=hooks)
    answer = json.loads(text_of(reg.call_tool("m__ask", {"tag": "-a"})))
    assert answer == {"answers": {"q": {"action": "accept", "content": {"name": "Ada"}}},
                      "state": STATE + "-a"}  # fmt: skip
    first, second = _rounds(record, "tools/call")
    assert second["id"] == first["id"] + 1  # a new id
    assert "inputResponses" not in first["params"] and "requestState" not in first["params"]
    assert second["params"]["name"] == "ask" and second["params"]["arguments"] == {"tag": "-a"}
    assert second["params"]["requestState"] == STATE + "-a"  # as received
    # [MCP-MOD-09] the next request carries nothing of the last one
    reg.call_tool("m__echo", {"message": "after"})
    last = _rounds(record, "tools/call")[-1]
    assert set(last["params"]) == {"name", "arguments", "_meta"}


@pytest.mark.req("MCP-MOD-08", "MCP-S2C-04")
def test_without_handlers_elicitation_declines_and_sampling_fails_clearly(
    connect: Connect,
) -> None:
    reg = connect(modern_config())
    answer = json.loads(text_of(reg.call_tool("m__ask", {})))
    assert answer["answers"] == {"q": {"action": "decline"}}
    sampling = connect(modern_config("--ask", "sampling", name="s"))
    with pytest.raises(McpProtocolError) as info:
        sampling.call_tool("s__ask", {})
    assert str(info.value) == (
        "MCP server `s` asked for `sampling/createMessage` input during tool call `ask`, which "
        "this client cannot give (error -32601: Method not found)"
    )


@pytest.mark.req("MCP-MOD-08")
def test_prompts_get_and_resources_read_take_input_rounds_too(connect: Connect) -> None:
    hooks = ClientHandlers(roots=lambda: [{"uri": "file:///w", "name": "w"}])
    reg = connect(modern_config("--ask", "roots"), handlers=hooks)
    prompt = reg.get_prompt("m__greet")
    assert isinstance(prompt, dict)
    text = text_at(prompt, "messages", 0, "content", "text")
    assert json.loads(text)["answers"] == {"q": {"roots": [{"uri": "file:///w", "name": "w"}]}}
    read = reg.read_resource("m__test://doc/1")
    assert isinstance(read, dict)
    assert json.loads(text_at(read, "contents", 0, "text"))["state"] == STATE


@pytest.mark.req("MCP-MOD-08")
def test_rounds_are_bounded(connect: Connect, tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    hooks = ClientHandlers(roots=lambda: [])
    reg = connect(modern_config(record=record), handlers=hooks)
    with pytest.raises(McpProtocolError) as info:
        reg.call_tool("m__forever", {})
    assert str(info.value) == (
        f"MCP server `m` still asked for input after {mrtr.MAX_INPUT_ROUNDS} rounds of tool "
        "call `forever`; giving up"
    )
    assert len(_rounds(record, "tools/call")) == mrtr.MAX_INPUT_ROUNDS + 1


@pytest.mark.req("MCP-MOD-08")
def test_a_state_only_round_is_sent_again_with_its_state(connect: Connect, tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    reg = connect(modern_config(record=record))
    assert text_of(reg.call_tool("m__state_only", {})) == "done after 2"
    states = [m["params"].get("requestState") for m in _rounds(record, "tools/call")]
    assert states == [None, "1", "2"]
    assert all("inputResponses" not in m["params"] for m in _rounds(record, "tools/call"))


@pytest.mark.req("MCP-MOD-08", "MCP-TIME-04", "MCP-TIME-06")
def test_the_tool_timeout_spans_every_round(connect: Connect) -> None:
    release = threading.Event()

    def slow_handler(_params: JSONObject) -> JSONObject:
        release.wait(5)
        return {"action": "decline"}

    hooks = ClientHandlers(elicitation=slow_handler)
    reg = connect(modern_config(tool_timeout_secs=1), handlers=hooks)
    start = time.monotonic()
    try:
        with pytest.raises(McpTimeoutError) as info:
            reg.call_tool("m__ask", {})
    finally:
        release.set()
    assert 0.9 <= time.monotonic() - start < 3
    assert str(info.value) == (
        "MCP server `m` timed out after 1s during tool call `ask`; outcome unknown and request "
        "was not replayed"
    )


@pytest.mark.req("MCP-MOD-09", "MCP-API-06")
def test_concurrent_input_rounds_keep_their_own_state(connect: Connect, tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    hooks = ClientHandlers(elicitation=accept_with_defaults)
    reg = connect(modern_config(record=record), handlers=hooks)
    answers: dict[str, str] = {}

    def call(tag: str) -> None:
        answers[tag] = json.loads(text_of(reg.call_tool("m__ask", {"tag": tag})))["state"]

    threads = [threading.Thread(target=call, args=(f"-{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert answers == {f"-{i}": STATE + f"-{i}" for i in range(4)}
    for message in _rounds(record, "tools/call"):
        state = message["params"].get("requestState")
        assert state is None or state == STATE + message["params"]["arguments"]["tag"]


# --- caching, listen, crashes -------------------------------------------------------------


@pytest.mark.req("MCP-MOD-12")
def test_lists_are_answered_from_cache_within_their_ttl(connect: Connect, tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    reg = connect(modern_config("--ttl-ms", "60000", record=record))
    first = reg.list_resources("m")
    assert reg.list_resources("m") == first
    assert methods(record).count("resources/list") == 1
    # a change notification evicts the list (here: a tools/list through the refresh)
    reg.call_tool("m__change", {})
    wait_for(lambda: reg.connection("m").tools_stale, "the listen notification")
    assert reg.refresh_if_stale() is True
    assert methods(record).count("tools/list") == 2
    assert "m__late_tool" in [t.prefixed_name for t in reg.tools()]
    # no TTL: never cached
    plain = tmp_path / "plain.jsonl"
    reg2 = connect(modern_config(record=plain, name="n"))
    reg2.list_resources("n")
    reg2.list_resources("n")
    assert methods(plain).count("resources/list") == 2


@pytest.mark.req("MCP-MOD-12")
def test_only_public_results_are_shared_between_registries(
    connect: Connect, tmp_path: Path
) -> None:
    private, public = tmp_path / "private.jsonl", tmp_path / "public.jsonl"
    for _ in range(2):
        connect(modern_config("--ttl-ms", "60000", record=private)).close()
        connect(modern_config("--ttl-ms", "60000", "--scope", "public", record=public, name="p"))
    assert methods(private).count("tools/list") == 2
    assert methods(public).count("tools/list") == 1


@pytest.mark.req("MCP-MOD-13", "MCP-DISC-15")
def test_listen_turns_a_change_into_a_refresh_and_is_cancelled_on_close(
    connect: Connect, tmp_path: Path
) -> None:
    record = tmp_path / "rec.jsonl"
    reg = connect(modern_config(record=record))
    listen = next(m for m in recorded(record) if m.get("method") == "subscriptions/listen")
    assert listen["params"]["notifications"] == {"toolsListChanged": True}
    assert listen["params"]["_meta"] == ENVELOPE
    assert reg.connection("m").tools_stale is False
    reg.call_tool("m__change", {})
    wait_for(lambda: reg.connection("m").tools_stale, "the listen notification")
    reg.close()
    wait_for(
        lambda: any(
            m.get("method") == "notifications/cancelled"
            and m["params"]["requestId"] == listen["id"]
            for m in recorded(record)
        ),
        "the listen cancellation",
    )


@pytest.mark.req("MCP-MOD-13")
def test_no_listen_when_no_list_can_change(connect: Connect, tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    connect(modern_config("--no-list-changed", record=record))
    assert "subscriptions/listen" not in methods(record)


@pytest.mark.req("MCP-MOD-18", "MCP-MOD-11", "MCP-REC-01")
def test_a_crashed_modern_server_is_restarted_and_nothing_is_replayed(
    connect: Connect, tmp_path: Path
) -> None:
    record = tmp_path / "rec.jsonl"
    reg = connect(modern_config(record=record))
    with pytest.raises(McpOutcomeUnknownError):
        reg.call_tool("m__crash", {})
    mark = len(recorded(record))
    assert text_of(reg.call_tool("m__echo", {"message": "back"})) == "Echo: back"
    after = [str(m.get("method")) for m in recorded(record)[mark:] if "id" in m]
    assert after[0] == "server/discover"  # the new child's session, in the modern era
    assert "tools/call" in after and after.count("tools/call") == 1  # only the new call
    assert all(m["params"].get("name") != "crash" for m in _rounds(record, "tools/call")[1:])


@pytest.mark.req("MCP-MOD-01", "MCP-VER-05")
def test_the_era_key_of_a_server_table(tmp_path: Path) -> None:
    from zeroclaw_ref.config.load import load_config
    from zeroclaw_ref.config.model import ConfigError

    base = '[[mcp.servers]]\nname = "x"\ncommand = "c"\n'
    (tmp_path / "config.toml").write_text(base + 'era = "modern"\n')
    (server,) = load_config(tmp_path, tmp_path / "data", {}).mcp.servers
    assert server.era == "modern" and eras.setting(server, "auto") == "modern"
    (tmp_path / "config.toml").write_text(base)
    (server,) = load_config(tmp_path, tmp_path / "data", {}).mcp.servers
    assert server.era is None and eras.setting(server, "auto") == "auto"
    (tmp_path / "config.toml").write_text(base + 'era = "2026"\n')
    with pytest.raises(ConfigError, match="era"):
        load_config(tmp_path, tmp_path / "data", {})


OPTS = McpOptions(init_timeout_s=5, list_timeout_s=5, default_tool_timeout_s=5, close_grace_s=1)


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeMcpHttp]:
    server = FakeMcpHttp()
    yield server
    script_for(server).release.set()
    server.close()


def http_config(fake: FakeMcpHttp, **fields: Any) -> McpServerConfig:
    return McpServerConfig(name="h", transport="http", url=fake.url, **fields)


@pytest.mark.req("MCP-VER-05")
def test_the_stateless_era_is_never_attempted_with_era_legacy(
    connect: Connect, tmp_path: Path, fake: FakeMcpHttp
) -> None:
    assert McpOptions().era == "auto" and FAST.era == "auto"  # issue 16: auto by default
    record = tmp_path / "rec.jsonl"
    legacy_server = stdio_config("--record", str(record), era="legacy")
    reg = connect(legacy_server)
    reg.call_tool("peer__echo", {"message": "x"})
    sent = recorded(record)
    assert sent[0]["method"] == "initialize"
    assert sent[0]["params"]["protocolVersion"] == "2025-11-25"
    assert "_meta" not in sent[0]["params"]
    assert not any(m.get("method") == "server/discover" for m in sent)
    connect(http_config(fake), options=replace(OPTS, era="legacy")).call_tool(
        "h__echo", {"message": "y"}
    )
    posts = fake.seen("POST")
    assert posts[0].body["method"] == "initialize"
    assert not any(p.body.get("method") == "server/discover" for p in posts)
    assert not any("Mcp-Method" in p.headers for p in posts)
