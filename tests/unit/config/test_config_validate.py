# ruff: noqa: E501 - exact error texts are kept on one line so they can be compared with the spec
"""Semantic validation errors and warnings (config.md §9.2, mcp.md MCP-CFG-07, MCP-TFG-08/09)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from zeroclaw_ref.config.load import load_config
from zeroclaw_ref.config.model import ConfigError, ConfigSnapshot

Loader = Callable[..., ConfigSnapshot]
Failer = Callable[..., list[str]]

BUNDLE = "[mcp_bundles.b]\nservers = []\n"


def _servers(*bodies: str) -> str:
    return "".join(f"[[mcp.servers]]\n{body}\n" for body in bodies) + BUNDLE


ERRORS = [
    (
        "CFG-VALID-02",
        "[providers.s]\nkind = 'scripted'\n",
        ['providers.s.script is required for kind = "scripted"'],
    ),
    ("CFG-VALID-03", "[providers.s]\nkind = 'scripted'\nscript = 'missing.json'\n", None),
    (
        "CFG-VALID-04",
        "[autonomy]\ndeny_all_tools = true\nallowed_tools = ['shell']\n",
        ["autonomy.deny_all_tools cannot be combined with a non-empty allowed_tools list"],
    ),
    (
        "CFG-VALID-04",
        "[autonomy]\nallowed_tools = ['shell']\n[risk_profiles.r]\ndeny_all_tools = true\n[risk_profiles.ok]\nallowed_tools = []\ndeny_all_tools = true\n",
        ["risk_profiles.r.deny_all_tools cannot be combined with a non-empty allowed_tools list"],
    ),
    (
        "CFG-VALID-05",
        _servers("name = ' '\ncommand = 'x'"),
        ["mcp.servers[0].name must not be empty"],
    ),
    (
        "CFG-MCP-05",
        _servers("name = 'a__b'\ncommand = 'x'", "name = 'a.b'\ncommand = 'x'"),
        [
            "mcp.servers[0].name 'a__b' must be 1-63 letters, digits, '_' or '-', start with a letter or digit, and not contain '__'",
            "mcp.servers[1].name 'a.b' must be 1-63 letters, digits, '_' or '-', start with a letter or digit, and not contain '__'",
        ],
    ),
    (
        "CFG-VALID-06",
        _servers("name = 'Fs'\ncommand = 'x'", "name = 'fs'\ncommand = 'x'"),
        ["mcp.servers contains duplicate name: fs"],
    ),
    (
        "CFG-VALID-07",
        _servers("name = 'a'\ncommand = 'x'\ntool_timeout_secs = 0"),
        ["mcp.servers[0].tool_timeout_secs must be greater than 0"],
    ),
    (
        "CFG-VALID-08",
        _servers("name = 'a'\ncommand = 'x'\ntool_timeout_secs = 601"),
        ["mcp.servers[0].tool_timeout_secs exceeds max 600"],
    ),
    (
        "CFG-VALID-09",
        _servers("name = 'a'\ncommand = ' '"),
        ["mcp.servers[0] with transport=stdio requires non-empty command"],
    ),
    (
        "CFG-VALID-10",
        _servers("name = 'a'\ntransport = 'sse'"),
        ["mcp.servers[0] with transport=sse requires url"],
    ),
    (
        "CFG-VALID-11",
        _servers("name = 'a'\ntransport = 'http'\nurl = 'not a url'"),
        ["mcp.servers[0].url is not a valid URL"],
    ),
    (
        "CFG-VALID-11",
        _servers("name = 'a'\ntransport = 'http'\nurl = 'ftp://host/x'"),
        ["mcp.servers[0].url must use http/https"],
    ),
    (
        "CFG-VALID-12",
        _servers("name = 'a'\ntransport = 'http'\nurl = 'https://h'\ntls_ca_cert_path = ' '"),
        ["mcp.servers[0].tls_ca_cert_path must not be empty"],
    ),
    (
        "CFG-VALID-12",
        _servers("name = 'a'\ntransport = 'http'\nurl = 'https://h'\ntls_ca_cert_path = 'ca.pem'"),
        ["mcp.servers[0].tls_ca_cert_path must be an absolute path"],
    ),
    (
        "CFG-VALID-12",
        _servers("name = 'a'\ntransport = 'http'\nurl = 'http://h'\ntls_ca_cert_path = '/ca.pem'"),
        ["mcp.servers[0].url must use https when tls_ca_cert_path is set"],
    ),
    (
        "MCP-CFG-07",
        _servers(
            "name = 'a'\ntransport = 'http'\nurl = 'https://h'\nheaders = { 'Bad Name' = 'v', Good = \"x\\ny\" }"
        ),
        [
            "mcp.servers[0].headers contains an invalid header `Bad Name`",
            "mcp.servers[0].headers contains an invalid header `Good`",
        ],
    ),
    (
        "CFG-VALID-13",
        "[[peripherals.boards]]\nboard = ' '\n",
        ["peripherals.boards[0].board must not be empty"],
    ),
    (
        "CFG-AGENT-02",
        "[agents.a]\nmodel_provider = 'p'\nrisk_profile = 'r'\nruntime_profile = 't'\n",
        [
            "agents.a.model_provider references an undefined [providers.p]",
            "agents.a.risk_profile references an undefined [risk_profiles.r]",
            "agents.a.runtime_profile references an undefined [runtime_profiles.t]",
        ],
    ),
    (
        "CFG-AGENT-04",
        "[agents.a]\ndelegates = ['a', 'b', 'b', 'c']\n[agents.b]\n",
        [
            "agents.a.delegates: 'c' names no configured agent",
            "agents.a.delegates: an agent cannot delegate to itself",
            "agents.a.delegates: duplicate entry 'b'",
        ],
    ),
    (
        "MCP-TFG-08",
        "[[runtime_profiles.r.tool_filter_groups]]\nmode = 'always'\ntools = ['', 'x*']\n",
        ["runtime_profiles.r.tool_filter_groups[0].tools contains empty pattern"],
    ),
    (
        "MCP-TFG-09",
        "[[runtime_profiles.r.tool_filter_groups]]\ntools = ['x*']\n",
        ['runtime_profiles.r.tool_filter_groups[0] has mode = "dynamic" but no keywords'],
    ),
    (
        "CFG-PROV-02",
        "[providers.o]\nkind = 'anthropic'\napi_key = 'k'\n",
        ['providers.o.model is required for kind = "anthropic"'],
    ),
]


# Constant citations of the per-row IDs above, for tools/req_coverage.py.
@pytest.mark.req(
    "CFG-VALID-02", "CFG-VALID-04", "CFG-VALID-05", "CFG-VALID-06", "CFG-VALID-07",
    "CFG-VALID-08", "CFG-VALID-09", "CFG-VALID-10", "CFG-VALID-11", "CFG-VALID-12",
    "CFG-VALID-13", "CFG-MCP-05", "CFG-AGENT-02", "CFG-AGENT-04", "POL-ACCESS-07",
)  # fmt: skip
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(t, e, marks=pytest.mark.req(r, "CFG-VALID-01"), id=f"{r}-{i}")
        for i, (r, t, e) in enumerate(ERRORS)
    ],
)
def test_validation_errors(fail: Failer, text: str, expected: list[str] | None) -> None:
    lines = fail(text)
    if expected is None:
        assert len(lines) == 1 and lines[0].startswith("providers.s.script: cannot read ")
    else:
        assert lines == expected


@pytest.mark.req("CFG-MCP-06")
def test_disabled_mcp_servers_are_not_validated(load: Loader) -> None:
    snapshot = load("[mcp]\nenabled = false\n[[mcp.servers]]\nname = 'a__b'\ncommand = ''\n")
    assert snapshot.mcp.servers[0].name == "a__b"
    assert snapshot.warnings == ()


@pytest.mark.req("CFG-VALID-01", "CFG-LOAD-07")
def test_semantic_errors_are_collected_and_sorted(fail: Failer) -> None:
    text = "[agents.z]\nrisk_profile = 'nope'\n" + _servers("name = ''\ncommand = 'x'")
    assert fail(text) == [
        "agents.z.risk_profile references an undefined [risk_profiles.nope]",
        "mcp.servers[0].name must not be empty",
    ]


WARNINGS = [
    (
        "CFG-PROV-04",
        "[providers.o]\nkind = 'openai'\nmodel = 'm'\n",
        ["providers.o.api_key is not set"],
    ),
    (
        "CFG-VALID-14",
        "[[mcp.servers]]\nname = 'a'\ncommand = 'x'\n",
        [
            "[[mcp.servers]] is configured but no [mcp_bundles.*] bundles exist; no agent will receive any MCP tools. Add a [mcp_bundles.<alias>] entry and reference it from agents.<alias>.mcp_bundles to grant access."
        ],
    ),
    (
        "CFG-VALID-15",
        "[[mcp.servers]]\nname = 'a'\ncommand = 'x'\n[mcp_bundles.dev]\nservers = ['a', 'gh']\nexclude = ['zz']\n",
        [
            "mcp_bundles.<alias> references an MCP server name not in [mcp.servers]; it grants nothing (mcp_bundle: 'dev', server: 'gh')",
            "mcp_bundles.<alias> references an MCP server name not in [mcp.servers]; it grants nothing (mcp_bundle: 'dev', server: 'zz')",
        ],
    ),
    (
        "CFG-VALID-16",
        "[agents.coder]\nmcp_bundles = ['files']\n",
        [
            "agents.<alias>.mcp_bundles references an undefined [mcp_bundles.<alias>]; the agent is granted no servers from it (agent: 'coder', mcp_bundle: 'files')"
        ],
    ),
    (
        "CFG-VALID-17",
        "[acp]\ndefault_agent = 'ghost'\n",
        ["acp.default_agent 'ghost' names no configured agent"],
    ),
]


# Constant citations of the per-row IDs above, for tools/req_coverage.py.
@pytest.mark.req("CFG-VALID-14", "CFG-VALID-15", "CFG-VALID-16", "CFG-VALID-17", "POL-BUNDLE-07")
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(t, e, marks=pytest.mark.req(r, "CFG-VALID-18", "CFG-LOAD-08"), id=r)
        for r, t, e in WARNINGS
    ],
)
def test_validation_warnings_do_not_stop_loading(
    load: Loader, text: str, expected: list[str]
) -> None:
    assert list(load(text).warnings) == expected


@pytest.mark.req("CFG-AGENT-03")
def test_a_complete_configuration_loads_cleanly(load: Loader) -> None:
    snapshot = load(
        "[providers.main]\nkind = 'demo'\n[risk_profiles.r]\n[runtime_profiles.t]\n"
        "[agents.a]\nmodel_provider = 'main'\nrisk_profile = 'r'\nruntime_profile = 't'\n"
        "delegates = ['b']\n[agents.b]\nenabled = false\nmodel_provider = 'main'\n"
        "risk_profile = 'r'\nruntime_profile = 't'\n"
        "[[mcp.servers]]\nname = 'h'\ntransport = 'http'\nurl = 'https://h/mcp'\n"
        "tls_ca_cert_path = '/ca.pem'\nheaders = { Authorization = 'Bearer x' }\n"
        "[mcp_bundles.b]\nservers = ['h']\n[acp]\ndefault_agent = 'a'\n"
    )
    assert snapshot.warnings == ()
    assert snapshot.agents["a"].dispatchable and not snapshot.agents["b"].dispatchable


GROUP = "[[runtime_profiles.r.tool_filter_groups]]\n"


# --- configuration ------------------------------------------------------------------------


def _errors(tmp_path: Path, text: str) -> list[str]:
    (tmp_path / "config.toml").write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, tmp_path / "data", {})
    return list(info.value.lines)


@pytest.mark.req("MCP-TFG-08")
def test_an_empty_group_pattern_is_rejected(tmp_path: Path) -> None:
    text = GROUP + 'mode = "always"\ntools = ["fs__*", ""]\n'
    assert "runtime_profiles.r.tool_filter_groups[0].tools contains empty pattern" in _errors(
        tmp_path, text
    )


@pytest.mark.req("MCP-TFG-09")
def test_a_dynamic_group_needs_keywords(tmp_path: Path) -> None:
    text = (
        GROUP + 'mode = "always"\ntools = ["a*"]\n' + GROUP + 'mode = "dynamic"\ntools = ["b*"]\n'
    )
    errors = _errors(tmp_path, text)
    assert 'runtime_profiles.r.tool_filter_groups[1] has mode = "dynamic" but no keywords' in errors
    assert not any("tool_filter_groups[0]" in line for line in errors)


@pytest.mark.req("MCP-NAME-07")
def test_server_names_must_be_unique_ignoring_case(tmp_path: Path) -> None:
    text = (
        '[[mcp.servers]]\nname = "Docs"\ncommand = "x"\n'
        '[[mcp.servers]]\nname = "docs"\ncommand = "y"\n'
    )
    assert "mcp.servers contains duplicate name: docs" in _errors(tmp_path, text)
    (tmp_path / "config.toml").write_text(text.replace('"docs"', '"notes"'), encoding="utf-8")
    loaded = load_config(tmp_path, tmp_path / "data", {})
    assert [s.name for s in loaded.mcp.servers] == ["Docs", "notes"]


# --- §12 validation of [[mcp.servers]] ---------------------------------------------------

GOOD = "[[mcp.servers]]\nname = 'ok'\ncommand = 'x'\n"  # index 0, so the bad entry is [1]


VALIDATION = [
    ("MCP-CFG-01", "name = '   '\ncommand = 'x'", ["mcp.servers[1].name must not be empty"]),
    ("MCP-CFG-02", "name = 'OK'\ncommand = 'y'", ["mcp.servers contains duplicate name: OK"]),
    (
        "MCP-CFG-04",
        "name = 'a'\ncommand = ' \t'",
        ["mcp.servers[1] with transport=stdio requires non-empty command"],
    ),
    (
        "MCP-CFG-05",
        "name = 'a'\ntransport = 'http'",
        ["mcp.servers[1] with transport=http requires url"],
    ),
    (
        "MCP-CFG-05",
        "name = 'a'\ntransport = 'sse'\nurl = '  '",
        ["mcp.servers[1] with transport=sse requires url"],
    ),
    (
        "MCP-CFG-06",
        "name = 'a'\ntransport = 'http'\nurl = 'https://'",
        ["mcp.servers[1].url is not a valid URL"],
    ),
    (
        "MCP-CFG-06",
        "name = 'a'\ntransport = 'sse'\nurl = 'no scheme here'",
        ["mcp.servers[1].url is not a valid URL"],
    ),
    (
        "MCP-CFG-06",
        "name = 'a'\ntransport = 'http'\nurl = 'ws://h/mcp'",
        ["mcp.servers[1].url must use http/https"],
    ),
    (
        "MCP-CFG-07",
        "name = 'a'\ntransport = 'http'\nurl = 'https://h'\n"
        "headers = { 'X(y)' = 'v', Ok = 'fine', Cr = \"tok-AAA\\r\", Lf = \"tok-BBB\\n\", "
        'Nul = "tok-CCC\\u0000" }',
        [
            "mcp.servers[1].headers contains an invalid header `Cr`",
            "mcp.servers[1].headers contains an invalid header `Lf`",
            "mcp.servers[1].headers contains an invalid header `Nul`",
            "mcp.servers[1].headers contains an invalid header `X(y)`",
        ],
    ),
    (
        "MCP-CFG-08",
        "name = 'a'\ncommand = 'x'\ntool_timeout_secs = 0",
        ["mcp.servers[1].tool_timeout_secs must be greater than 0"],
    ),
    (
        "MCP-CFG-08",
        "name = 'a'\ncommand = 'x'\ntool_timeout_secs = -3",
        ["mcp.servers[1].tool_timeout_secs must be greater than 0"],
    ),
    (
        "MCP-CFG-08",
        "name = 'a'\ncommand = 'x'\ntool_timeout_secs = 601",
        ["mcp.servers[1].tool_timeout_secs exceeds max 600"],
    ),
    (
        "MCP-CFG-09",
        "name = 'a'\ntransport = 'http'\nurl = 'https://h'\ntls_ca_cert_path = '  '",
        ["mcp.servers[1].tls_ca_cert_path must not be empty"],
    ),
    (
        "MCP-CFG-09",
        "name = 'a'\ntransport = 'sse'\nurl = 'https://h'\ntls_ca_cert_path = 'certs/ca.pem'",
        ["mcp.servers[1].tls_ca_cert_path must be an absolute path"],
    ),
    (
        "MCP-CFG-10",
        "name = 'a'\ntransport = 'http'\nurl = 'http://h/mcp'\ntls_ca_cert_path = '/etc/ca.pem'",
        ["mcp.servers[1].url must use https when tls_ca_cert_path is set"],
    ),
    (
        "MCP-CFG-10",
        "name = 'a'\ntransport = 'sse'\nurl = 'http://h/sse'\ntls_ca_cert_path = '/etc/ca.pem'",
        ["mcp.servers[1].url must use https when tls_ca_cert_path is set"],
    ),
]


def _load(root: Path, text: str) -> ConfigSnapshot:
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.toml").write_text(text, encoding="utf-8")
    return load_config(root, root / "data", {})


# Constant citations of the per-row IDs above, for tools/req_coverage.py.
@pytest.mark.req(
    "MCP-CFG-01", "MCP-CFG-02", "MCP-CFG-04", "MCP-CFG-05", "MCP-CFG-06", "MCP-CFG-07",
    "MCP-CFG-08", "MCP-CFG-09", "MCP-CFG-10",
)  # fmt: skip
@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        pytest.param(t, e, marks=pytest.mark.req(r), id=f"{r}-{i}")
        for i, (r, t, e) in enumerate(VALIDATION)
    ],
)
def test_server_entries_are_validated_with_exact_texts(
    tmp_path: Path, entry: str, expected: list[str]
) -> None:
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, f"{GOOD}[[mcp.servers]]\n{entry}\n{BUNDLE}")
    assert list(info.value.lines) == expected
    assert not any("tok-" in line for line in info.value.lines)  # values are never printed


@pytest.mark.req("MCP-CFG-08", "MCP-CFG-09", "MCP-CFG-10", "MCP-CFG-07")
def test_boundary_values_are_accepted(tmp_path: Path) -> None:
    snapshot = _load(
        tmp_path,
        f"{GOOD}[[mcp.servers]]\nname = 'a'\ntransport = 'sse'\nurl = 'https://h/sse'\n"
        "tls_ca_cert_path = '/etc/ca.pem'\ntool_timeout_secs = 600\n"
        "headers = { 'X-Token_1.v' = 'tab\tand spaces ok' }\n"
        f"[[mcp.servers]]\nname = 'b'\ncommand = 'x'\ntool_timeout_secs = 1\n{BUNDLE}",
    )
    assert [s.name for s in snapshot.mcp.servers] == ["ok", "a", "b"]
    assert snapshot.mcp.servers[1].tool_timeout_secs == 600
