# ruff: noqa: E501 - exact error texts are kept on one line so they can be compared with the spec
"""Loading stages, defaults, the embedded default and schema errors (config.md §2, §3, §14)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from zeroclaw_ref.config.load import EMBEDDED_DEFAULT
from zeroclaw_ref.config.model import (
    DEFAULT_ALLOWED_COMMANDS,
    DEFAULT_AUTO_APPROVE,
    DEFAULT_FORBIDDEN_PATHS,
    ConfigSnapshot,
    effective_profile,
)

Loader = Callable[..., ConfigSnapshot]
Failer = Callable[..., list[str]]


@pytest.mark.req("CFG-LOAD-02", "CFG-DEFAULT-01", "CFG-DEFAULT-02", "CFG-DEFAULT-03")
def test_a_missing_file_loads_the_embedded_default_and_writes_nothing(
    load: Loader, tmp_path: Path
) -> None:
    snapshot = load(None)
    assert not snapshot.file_exists
    assert list(snapshot.agents) == ["default"]
    agent = snapshot.agents["default"]
    assert agent.dispatchable
    assert snapshot.providers["demo"].kind == "demo"
    assert snapshot.providers["demo"].model == "demo"
    profile = effective_profile(snapshot.autonomy, snapshot.risk_profiles["default"])
    assert profile.level == "supervised"
    assert snapshot.mcp.servers == ()
    assert not snapshot.peripherals.enabled
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    assert snapshot.warnings == ()


@pytest.mark.req("CFG-LOAD-02")
def test_environment_overrides_apply_to_the_embedded_default(load: Loader) -> None:
    snapshot = load(None, {"ZEROCLAW_agents__default__enabled": "false"})
    assert not snapshot.agents["default"].enabled
    assert snapshot.overrides == {"agents.default.enabled": "ZEROCLAW_agents__default__enabled"}


@pytest.mark.req("CFG-DEFAULT-01")
def test_embedded_default_text_is_the_specified_document() -> None:
    assert EMBEDDED_DEFAULT.splitlines()[0] == "schema_version = 1"
    assert "auto_approve" not in EMBEDDED_DEFAULT
    assert EMBEDDED_DEFAULT.count("[") == 4


@pytest.mark.req(
    "CFG-LOAD-03", "CFG-AUTO-01", "CFG-RUNTIME-01", "CFG-ACP-01", "CFG-GW-01", "POL-AUTO-02",
    "CFG-SCHED-01", "CFG-SECRETS-01",
)  # fmt: skip
def test_an_empty_file_has_every_default_and_no_agents(load: Loader) -> None:
    snapshot = load("")
    assert snapshot.file_exists
    assert dict(snapshot.agents) == {}
    assert dict(snapshot.providers) == {}
    assert snapshot.schema_version == 1
    auto = snapshot.autonomy
    assert auto.level == "supervised"
    assert auto.allowed_commands == DEFAULT_ALLOWED_COMMANDS
    assert auto.forbidden_paths == DEFAULT_FORBIDDEN_PATHS
    assert auto.workspace_only and auto.block_high_risk_commands
    assert (snapshot.acp.max_sessions, snapshot.acp.session_timeout_secs) == (10, 3600)
    assert (snapshot.gateway.host, snapshot.gateway.port) == ("127.0.0.1", 42617)
    assert snapshot.gateway.require_pairing and snapshot.gateway.path_prefix is None
    assert snapshot.scheduler.enabled and snapshot.scheduler.tick_secs == 30
    assert snapshot.secrets.encrypt and snapshot.mcp.enabled
    assert not snapshot.mcp.deferred_loading


@pytest.mark.req("CFG-RUNTIME-01", "CFG-PROV-02", "CFG-AGENT-01")
def test_section_defaults(load: Loader, tmp_path: Path) -> None:
    (tmp_path / "s.json").write_text('{"turns": []}')
    snapshot = load(
        "[runtime_profiles.r]\n[providers.d]\nkind = 'demo'\n[providers.s]\nkind = 'scripted'\n"
        "script = 's.json'\n[providers.o]\nkind = 'openai'\nmodel = 'm'\napi_key = 'k'\n"
        "[providers.a]\nkind = 'anthropic'\nmodel = 'm'\napi_key = 'k'\n[agents.x]\n"
    )
    runtime = snapshot.runtime_profiles["r"]
    assert (runtime.max_tool_iterations, runtime.max_history_messages) == (10, 50)
    assert (runtime.max_tool_result_chars, runtime.shell_timeout_secs) == (50000, 60)
    assert runtime.max_delegation_depth == 1 and runtime.temperature is None
    assert runtime.auto_memory and not runtime.parallel_tools
    providers = snapshot.providers
    assert (providers["d"].model, providers["s"].model) == ("demo", "scripted")
    assert providers["o"].base_url == "https://api.openai.com/v1"
    assert providers["a"].base_url == "https://api.anthropic.com"
    assert providers["d"].base_url is None
    assert providers["o"].temperature == 0.7
    assert (providers["o"].timeout_secs, providers["a"].max_tokens) == (120, 4096)
    assert providers["s"].script_turns == ()
    agent = snapshot.agents["x"]
    assert agent.enabled and not agent.dispatchable and agent.skills is None
    assert agent.workspace_path is None


@pytest.mark.req("CFG-LOAD-01")
def test_a_byte_order_mark_is_stripped(load: Loader) -> None:
    snapshot = load(b"\xef\xbb\xbf[gateway]\nport = 1234\n")
    assert snapshot.gateway.port == 1234


@pytest.mark.req("CFG-LOAD-04")
@pytest.mark.parametrize(
    ("raw", "offset"),
    [(b"a = 1\n\xff", 6), (b"\xef\xbb\xbf# \xc3\x28", 5), (b"x = '\xe2\x82'", 5)],
)
def test_invalid_utf8_names_the_byte_offset(fail: Failer, raw: bytes, offset: int) -> None:
    assert fail(raw) == [f"CFG: not valid UTF-8 (byte offset {offset})"]


@pytest.mark.req("CFG-LOAD-05")
def test_invalid_toml_carries_the_parser_line_and_column(fail: Failer) -> None:
    lines = fail("[gateway]\nport = = 3\n")
    assert len(lines) == 1
    assert lines[0].startswith("CFG: invalid TOML: ")
    assert "(at line 2, column 8)" in lines[0]


SCHEMA_CASES = [
    # (requirement, file text, expected error lines)
    (
        "CFG-SCHEMA-01",
        "[autonomy]\nexcluded_tool = []\n",
        ["CFG:2: autonomy.excluded_tool: unknown key"],
    ),
    ("CFG-SCHEMA-01", "bogus = 1\n", ["CFG:1: bogus: unknown key"]),
    (
        "CFG-SCHEMA-02",
        "[gateway]\nport = '80'\n",
        ["CFG:2: gateway.port: expected integer, found string"],
    ),
    (
        "CFG-SCHEMA-02",
        "[gateway]\nport = true\n",
        ["CFG:2: gateway.port: expected integer, found boolean"],
    ),
    (
        "CFG-SCHEMA-02",
        "[gateway]\nport = 1.5\n",
        ["CFG:2: gateway.port: expected integer, found float"],
    ),
    (
        "CFG-SCHEMA-02",
        "[scheduler]\nenabled = 1\n",
        ["CFG:2: scheduler.enabled: expected boolean, found integer"],
    ),
    ("CFG-SCHEMA-02", "gateway = 3\n", ["CFG:1: gateway: expected table, found integer"]),
    (
        "CFG-SCHEMA-02",
        "[autonomy]\nalways_ask = 'x'\n",
        ["CFG:2: autonomy.always_ask: expected list of strings, found string"],
    ),
    (
        "CFG-SCHEMA-02",
        "[autonomy]\nalways_ask = ['a', 1]\n",
        ["CFG:2: autonomy.always_ask: expected list of strings, found integer at index 1"],
    ),
    (
        "CFG-SCHEMA-02",
        "[mcp]\nservers = 1\n",
        ["CFG:2: mcp.servers: expected list of tables, found integer"],
    ),
    (
        "CFG-SCHEMA-02",
        "[[mcp.servers]]\nname = 'a'\nenv = { K = 1 }\n",
        ["CFG:3: mcp.servers[0].env: expected table of strings, found integer for 'K'"],
    ),
    (
        "CFG-SCHEMA-03",
        "[agents.Coder]\n",
        [
            "CFG:1: agents.Coder: invalid alias 'Coder': may contain only lower-case letters, digits, '_' and '-'"
        ],
    ),
    (
        "CFG-SCHEMA-03",
        "[agents.a__b]\n",
        ["CFG:1: agents.a__b: invalid alias 'a__b': must not contain '__'"],
    ),
    (
        "CFG-SCHEMA-03",
        "[risk_profiles.-x]\n",
        [
            "CFG:1: risk_profiles.-x: invalid alias '-x': must start and end with a lower-case letter or digit"
        ],
    ),
    (
        "CFG-SCHEMA-03",
        f"[mcp_bundles.{'a' * 64}]\n",
        [
            f"CFG:1: mcp_bundles.{'a' * 64}: invalid alias '{'a' * 64}': must be at most 63 characters"
        ],
    ),
    (
        "CFG-SCHEMA-04",
        "schema_version = 2\n",
        ["CFG:1: schema_version: unsupported schema_version 2 (expected 1)"],
    ),
    (
        "CFG-SCHEMA-05",
        "[autonomy]\nlevel = 'Full'\n",
        [
            'CFG:2: autonomy.level: invalid value "Full" (expected one of read_only, supervised, full)'
        ],
    ),
    (
        "CFG-SCHEMA-05",
        "[providers.p]\nkind = 'ollama'\n",
        [
            'CFG:2: providers.p.kind: invalid value "ollama" (expected one of demo, scripted, openai, anthropic)'
        ],
    ),
    (
        "CFG-SCHEMA-06",
        "[gateway]\nport = 0\n",
        ["CFG:2: gateway.port: 0 is out of range (1..65535)"],
    ),
    (
        "CFG-SCHEMA-06",
        "[runtime_profiles.r]\ntemperature = 2.5\n",
        ["CFG:2: runtime_profiles.r.temperature: 2.5 is out of range (0.0..2.0)"],
    ),
    (
        "CFG-SCHEMA-06",
        "[[mcp.servers]]\nname = 'a'\ncommand = 'x'\nmax_response_bytes = -1\n",
        ["CFG:4: mcp.servers[0].max_response_bytes: -1 is out of range (0..)"],
    ),
    (
        "CFG-SCHEMA-06",
        "[[peripherals.boards]]\nboard = 'b'\nbaud = 0\n",
        ["CFG:3: peripherals.boards[0].baud: 0 is out of range (1..4000000)"],
    ),
    ("CFG-PROV-01", "[providers.p]\nmodel = 'x'\n", ["CFG:1: providers.p: kind is required"]),
    (
        "CFG-MCP-02",
        "[mcp]\nservers = []\nmcpServers = []\n",
        ["CFG:3: mcp.mcpServers: mcp.servers and mcp.mcpServers are the same setting; keep one"],
    ),
    (
        "CFG-AUTO-06",
        "[autonomy]\nallowed_roots = ['rel/dir']\n",
        ["CFG:2: autonomy.allowed_roots: path must be absolute or start with ~: rel/dir"],
    ),
    (
        "CFG-AUTO-06",
        "[risk_profiles.r]\nforbidden_paths = ['/ok', 'x']\n",
        ["CFG:2: risk_profiles.r.forbidden_paths: path must be absolute or start with ~: x"],
    ),
    (
        "CFG-AUTO-07",
        "[autonomy]\nexcluded_tools = [' shell']\n",
        ['CFG:2: autonomy.excluded_tools: invalid entry " shell"'],
    ),
    (
        "CFG-AUTO-07",
        "[autonomy]\nallowed_commands = ['']\n",
        ['CFG:2: autonomy.allowed_commands: invalid entry ""'],
    ),
    (
        "CFG-AGENT-06",
        "[agents.a]\nskills = ['ok', 'bad__name']\n",
        ["CFG:2: agents.a.skills: invalid skill name 'bad__name'"],
    ),
    (
        "CFG-GW-01",
        "[gateway]\npath_prefix = '/x/'\n",
        [
            'CFG:2: gateway.path_prefix: invalid value "/x/" (must start with "/" and must not end with "/")'
        ],
    ),
    (
        "CFG-GW-01",
        "[gateway]\npaired_tokens = ['abc']\n",
        [
            "CFG:2: gateway.paired_tokens: entry 0 is not a 64-character lower-case hexadecimal SHA-256 digest"
        ],
    ),
]


# Constant citations of the per-row IDs above, for tools/req_coverage.py.
@pytest.mark.req(
    "CFG-SCHEMA-03", "CFG-SCHEMA-04", "CFG-SCHEMA-05", "CFG-MCP-02", "CFG-AUTO-06", "CFG-AUTO-07",
    "CFG-AGENT-06",
)  # fmt: skip
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(text, expected, marks=pytest.mark.req(req, "CFG-LOAD-06"), id=req)
        for req, text, expected in SCHEMA_CASES
    ],
)
def test_schema_errors(fail: Failer, text: str, expected: list[str]) -> None:
    assert fail(text) == expected


@pytest.mark.req("CFG-LOAD-06", "CFG-LOAD-07")
def test_schema_errors_are_collected_and_sorted_by_line_then_key_path(fail: Failer) -> None:
    text = (
        "[gateway]\n"
        "port = 0\n"
        "[autonomy]\n"
        "zeta = 1\n"
        "alpha = 2\n"
        "[[mcp.servers]]\n"
        "name = 'a'\n"
        "transport = 'ftp'\n"
        "[providers.p]\n"
        'extra_headers = { "X-A" = 1 }\n'
        "[agents.x]\n"
        "workspace.path = 3\n"
    )
    assert fail(text) == [
        "CFG:2: gateway.port: 0 is out of range (1..65535)",
        "CFG:4: autonomy.zeta: unknown key",
        "CFG:5: autonomy.alpha: unknown key",
        'CFG:8: mcp.servers[0].transport: invalid value "ftp" (expected one of stdio, http, sse)',
        "CFG:9: providers.p: kind is required",
        "CFG:10: providers.p.extra_headers: expected table of strings, found integer for 'X-A'",
        "CFG:12: agents.x.workspace.path: expected string, found integer",
    ]


@pytest.mark.req("CFG-LOAD-06")
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # inline table keys are located on their own line
        (
            "[mcp]\nservers = [\n  { name = 'a' },\n  { name = 'b', bogus = 1 },\n]\n",
            "CFG:4: mcp.servers[1].bogus: unknown key",
        ),
        # dotted keys inside a table
        ("[agents.x]\nworkspace.bogus = 1\n", "CFG:2: agents.x.workspace.bogus: unknown key"),
        # quoted keys
        ('[autonomy]\n"level" = 1\n', "CFG:2: autonomy.level: expected string, found integer"),
        # dotted top-level keys, no header
        ("\n\ngateway.port = 'x'\n", "CFG:3: gateway.port: expected integer, found string"),
        # a multi-line string that looks like a header is skipped
        ("a_note_first = 1\n", "CFG:1: a_note_first: unknown key"),
        (
            "[providers.p]\nkind = 'demo'\nmodel = '''\n[fake]\n'''\nbogus = 1\n",
            "CFG:6: providers.p.bogus: unknown key",
        ),
        # the mcpServers alias keeps its own spelling and line
        (
            "[mcp]\n\n[[mcp.mcpServers]]\nname = 'a'\nport = 1\n",
            "CFG:5: mcp.mcpServers[0].port: unknown key",
        ),
        # a missing key falls back to its table header
        ("x = 1\n\n[providers.p]\nmodel = 'm'\n", "CFG:3: providers.p: kind is required"),
    ],
)
def test_schema_error_lines(fail: Failer, text: str, expected: str) -> None:
    assert expected in fail(text)


@pytest.mark.req("CFG-MCP-01")
def test_mcp_servers_alias_is_accepted(load: Loader) -> None:
    snapshot = load(
        "[[mcp.mcpServers]]\nname = 'fs'\ncommand = 'npx'\n[mcp_bundles.b]\nservers = ['fs']\n"
    )
    assert [s.name for s in snapshot.mcp.servers] == ["fs"]
    assert snapshot.mcp.servers[0].transport == "stdio"


@pytest.mark.req("CFG-AUTO-04", "POL-AUTO-01")
def test_readonly_is_normalised_to_read_only(load: Loader) -> None:
    snapshot = load("[autonomy]\nlevel = 'readonly'\n[risk_profiles.r]\nlevel = 'readonly'\n")
    assert snapshot.autonomy.level == "read_only"
    assert snapshot.risk_profiles["r"].values["level"] == "read_only"


@pytest.mark.req("CFG-AUTO-05")
def test_none_sentinel_becomes_deny_all_with_a_warning(load: Loader) -> None:
    snapshot = load(
        "[autonomy]\nallowed_tools = ['__none__']\n[risk_profiles.r]\nallowed_tools = ['__none__']\n"
    )
    assert snapshot.autonomy.deny_all_tools and snapshot.autonomy.allowed_tools == ()
    profile = effective_profile(snapshot.autonomy, snapshot.risk_profiles["r"])
    assert profile.deny_all_tools and profile.allowed_tools == ()
    assert snapshot.warnings == (
        'autonomy.allowed_tools: allowed_tools = ["__none__"] is deprecated; use deny_all_tools = true',
        'risk_profiles.r.allowed_tools: allowed_tools = ["__none__"] is deprecated; '
        "use deny_all_tools = true",
    )


@pytest.mark.req("CFG-AUTO-02", "CFG-AUTO-03")
def test_risk_profiles_keep_only_their_keys_and_lists_replace(load: Loader) -> None:
    snapshot = load(
        "[autonomy]\nexcluded_tools = ['memory_purge']\nauto_approve = []\n"
        "[risk_profiles.r]\nlevel = 'full'\nexcluded_tools = []\n"
    )
    values = dict(snapshot.risk_profiles["r"].values)
    assert values == {"level": "full", "excluded_tools": ()}
    profile = effective_profile(snapshot.autonomy, snapshot.risk_profiles["r"])
    assert profile.excluded_tools == () and profile.level == "full"
    assert profile.auto_approve == DEFAULT_AUTO_APPROVE


@pytest.mark.req("CFG-RUNTIME-01")
def test_zero_iterations_means_the_default(load: Loader) -> None:
    snapshot = load("[runtime_profiles.r]\nmax_tool_iterations = 0\n")
    assert snapshot.runtime_profiles["r"].max_tool_iterations == 10


@pytest.mark.req("CFG-SCHEMA-02")
def test_floats_accept_integers(load: Loader) -> None:
    snapshot = load("[runtime_profiles.r]\ntemperature = 1\n")
    assert snapshot.runtime_profiles["r"].temperature == 1.0


@pytest.mark.req("CFG-LOAD-01")
def test_the_file_is_never_modified(load: Loader, tmp_path: Path) -> None:
    text = "[autonomy]\nlevel = 'readonly'\n"
    load(text, {"ZEROCLAW_gateway__port": "9"})
    assert (tmp_path / "config.toml").read_text() == text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.toml"]


@pytest.mark.req("CFG-LOAD-11")
def test_snapshot_is_immutable(load: Loader) -> None:
    snapshot = load(None)
    with pytest.raises(AttributeError):
        snapshot.gateway = snapshot.gateway  # type: ignore[misc]
    with pytest.raises(TypeError):
        snapshot.agents["x"] = snapshot.agents["default"]  # type: ignore[index]


def test_importing_the_loader_does_not_import_heavy_modules() -> None:
    code = (
        "import sys, zeroclaw_ref.config.load, zeroclaw_ref.config.store;"
        "print(sorted(m for m in ('cryptography', 'requests', 'tomli_w') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.req("POL-APPROVE-05", "POL-APPROVE-06", "POL-MCPT-02")
def test_default_approval_lists_keep_unprovided_names_silently(load: Loader) -> None:
    snapshot = load("")
    profile = effective_profile(snapshot.autonomy, None)
    assert profile.always_ask == ()
    assert profile.auto_approve == DEFAULT_AUTO_APPROVE
    # weather and browser are not tools of this implementation, yet stay listed, unwarned.
    assert {"weather", "browser", "browser_open", "tool_search"} <= set(profile.auto_approve)
    assert list(snapshot.warnings) == []
