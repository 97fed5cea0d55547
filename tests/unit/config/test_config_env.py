# ruff: noqa: E501 - exact error texts are kept on one line so they can be compared with the spec
"""Environment overrides and the textual value syntax (config.md §10)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from zeroclaw_ref.config.env import ValueSyntaxError, override_variables, parse_text_value
from zeroclaw_ref.config.model import ConfigSnapshot
from zeroclaw_ref.config.schema import Field, Kind

Loader = Callable[..., ConfigSnapshot]
Failer = Callable[..., list[str]]


@pytest.mark.req("CFG-ENV-01", "CFG-DIR-08")
def test_only_lower_case_tails_are_overrides() -> None:
    env = {
        "ZEROCLAW_CONFIG_DIR": "/tmp/zc",
        "ZEROCLAW_REF_DETERMINISTIC": "1",
        "ZEROCLAW_CONFORMANCE_MODEL_SCRIPT": "x",
        "ZEROCLAW_agents__Coder__enabled": "false",
        "ZEROCLAW_": "x",
        "zeroclaw_gateway__port": "1",
        "ZEROCLAW_gateway__port": "8080",
        "ZEROCLAW_acp__default_agent": "coder",
    }
    assert override_variables(env) == [
        ("ZEROCLAW_acp__default_agent", "coder"),
        ("ZEROCLAW_gateway__port", "8080"),
    ]


@pytest.mark.req("CFG-DIR-08")
def test_upper_case_variables_are_never_a_startup_error(load: Loader) -> None:
    env = {"ZEROCLAW_CONFIG_DIR": "/x", "ZEROCLAW_ACP_BRIDGE_TOKEN": "t", "ZEROCLAW_Bogus": "1"}
    assert load(None, env).overrides == {}


TABLE_CASES = [
    # The CFG-ENV table: (variable, value, key path, check)
    (
        "ZEROCLAW_mcp__deferred_loading",
        "true",
        "mcp.deferred_loading",
        lambda s: s.mcp.deferred_loading,
    ),
    (
        "ZEROCLAW_mcp__servers__fs__url",
        "https://mcp.example/mcp",
        "mcp.servers.fs.url",
        lambda s: (
            s.mcp.servers[0].url == "https://mcp.example/mcp" and s.mcp.servers[0].name == "fs"
        ),
    ),
    (
        "ZEROCLAW_agents__coder__acp_enable_mcp",
        "true",
        "agents.coder.acp_enable_mcp",
        lambda s: s.agents["coder"].acp_enable_mcp,
    ),
    (
        "ZEROCLAW_agents__coder__workspace__path",
        "/srv/coder",
        "agents.coder.workspace.path",
        lambda s: s.agents["coder"].workspace_path == "/srv/coder",
    ),
    (
        "ZEROCLAW_risk_profiles__strict__level",
        "read_only",
        "risk_profiles.strict.level",
        lambda s: s.risk_profiles["strict"].values == {"level": "read_only"},
    ),
    (
        "ZEROCLAW_autonomy__always_ask",
        "shell,file_write",
        "autonomy.always_ask",
        lambda s: s.autonomy.always_ask == ("shell", "file_write"),
    ),
    ("ZEROCLAW_gateway__port", "8080", "gateway.port", lambda s: s.gateway.port == 8080),
    (
        "ZEROCLAW_acp__default_agent",
        "default",
        "acp.default_agent",
        lambda s: s.acp.default_agent == "default",
    ),
    (
        "ZEROCLAW_runtime_profiles__default__temperature",
        "0.5",
        "runtime_profiles.default.temperature",
        lambda s: s.runtime_profiles["default"].temperature == 0.5,
    ),
    (
        "ZEROCLAW_mcp_bundles__b__servers",
        '["x", "y"]',
        "mcp_bundles.b.servers",
        lambda s: s.mcp_bundles["b"].servers == ("x", "y"),
    ),
    (
        "ZEROCLAW_autonomy__level",
        "readonly",
        "autonomy.level",
        lambda s: s.autonomy.level == "read_only",
    ),
]


@pytest.mark.req("CFG-ENV-02", "CFG-ENV-03", "CFG-ENV-04", "CFG-ENV-06", "CFG-ENV-11")
@pytest.mark.parametrize(
    ("var", "value", "key_path", "check"), TABLE_CASES, ids=[c[0] for c in TABLE_CASES]
)
def test_override_table(
    load: Loader, var: str, value: str, key_path: str, check: Callable[[ConfigSnapshot], bool]
) -> None:
    env = {var: value}
    if var.startswith("ZEROCLAW_mcp__servers__"):
        env["ZEROCLAW_mcp__servers__fs__transport"] = "http"
    snapshot = load(None, env)
    assert check(snapshot)
    assert snapshot.overrides[key_path] == var


@pytest.mark.req("CFG-ENV-10", "CFG-ENV-12", "CFG-SECRETS-14")
def test_secret_overrides_warn_without_the_value(load: Loader) -> None:
    snapshot = load(
        None,
        {
            "ZEROCLAW_providers__main__kind": "openai",
            "ZEROCLAW_providers__main__model": "m",
            "ZEROCLAW_providers__main__api_key": "sk-SECRET",
            "ZEROCLAW_providers__main__extra_headers__x_org": "h-SECRET",
            "ZEROCLAW_mcp__servers__fs__command": "npx",
            "ZEROCLAW_mcp__servers__fs__env__token": "e-SECRET",
            "ZEROCLAW_mcp_bundles__b__servers": "fs",
        },
    )
    assert snapshot.providers["main"].api_key == "sk-SECRET"
    assert snapshot.providers["main"].extra_headers == {"x_org": "h-SECRET"}
    assert snapshot.mcp.servers[0].env == {"token": "e-SECRET"}
    assert snapshot.warnings == (
        "Secret applied from env override: mcp.servers.fs.env.token (ZEROCLAW_mcp__servers__fs__env__token)",
        "Secret applied from env override: providers.main.api_key (ZEROCLAW_providers__main__api_key)",
        "Secret applied from env override: providers.main.extra_headers.x_org (ZEROCLAW_providers__main__extra_headers__x_org)",
    )
    assert "SECRET" not in repr(snapshot)


@pytest.mark.req("CFG-VALUE-04", "CFG-ENV-13", "CFG-ENV-02")
def test_server_list_json_replaces_the_list_before_per_server_variables(load: Loader) -> None:
    snapshot = load(
        "[[mcp.servers]]\nname = 'old'\ncommand = 'x'\n[mcp_bundles.b]\nservers = ['fs']\n",
        {
            "ZEROCLAW_mcp__servers": '[{"name":"fs","transport":"http","url":"https://mcp.example/mcp","headers":{"A":"v"}}]',
            "ZEROCLAW_mcp__servers__fs__tool_timeout_secs": "30",
        },
    )
    assert [s.name for s in snapshot.mcp.servers] == ["fs"]
    assert snapshot.mcp.servers[0].tool_timeout_secs == 30
    assert snapshot.mcp.servers[0].headers == {"A": "v"}
    assert snapshot.overrides["mcp.servers"] == "ZEROCLAW_mcp__servers"
    assert (
        "Secret applied from env override: mcp.servers.fs.headers.A (ZEROCLAW_mcp__servers)"
        in snapshot.warnings
    )


@pytest.mark.req("CFG-ENV-06")
def test_an_existing_entry_is_updated_not_duplicated(load: Loader) -> None:
    snapshot = load(
        "[[mcp.servers]]\nname = 'fs'\ncommand = 'x'\n[mcp_bundles.b]\nservers = ['fs']\n",
        {"ZEROCLAW_mcp__servers__fs__args": "-y, pkg"},
    )
    assert len(snapshot.mcp.servers) == 1
    assert snapshot.mcp.servers[0].args == ("-y", "pkg")


ERROR_CASES = [
    (
        "CFG-ENV-07",
        {"ZEROCLAW_mcp__servers__command": "npx"},
        ["ZEROCLAW_mcp__servers__command did not resolve to a schema path"],
    ),
    (
        "CFG-ENV-07",
        {"ZEROCLAW_gateway__bogus": "1"},
        ["ZEROCLAW_gateway__bogus did not resolve to a schema path"],
    ),
    (
        "CFG-ENV-07",
        {"ZEROCLAW_gateway": "1"},
        ["ZEROCLAW_gateway did not resolve to a schema path"],
    ),
    ("CFG-ENV-07", {"ZEROCLAW_agents": "1"}, ["ZEROCLAW_agents did not resolve to a schema path"]),
    (
        "CFG-ENV-07",
        {"ZEROCLAW_agents__x__workspace": "1"},
        ["ZEROCLAW_agents__x__workspace did not resolve to a schema path"],
    ),
    (
        "CFG-ENV-07",
        {"ZEROCLAW_providers__p__extra_headers": "1"},
        ["ZEROCLAW_providers__p__extra_headers did not resolve to a schema path"],
    ),
    (
        "CFG-ENV-08",
        {"ZEROCLAW_schema_version": "1"},
        ["ZEROCLAW_schema_version -> schema_version: this field is not overridable via env vars"],
    ),
    (
        "CFG-ENV-09",
        {"ZEROCLAW_gateway__port": "80a"},
        ["ZEROCLAW_gateway__port -> gateway.port: expected an integer"],
    ),
    (
        "CFG-ENV-09",
        {"ZEROCLAW_gateway__port": "0"},
        ["ZEROCLAW_gateway__port -> gateway.port: 0 is out of range (1..65535)"],
    ),
    (
        "CFG-ENV-09",
        {"ZEROCLAW_mcp__enabled": "yes"},
        ["ZEROCLAW_mcp__enabled -> mcp.enabled: expected true or false"],
    ),
    (
        "CFG-ENV-09",
        {"ZEROCLAW_runtime_profiles__r__temperature": "nan"},
        [
            "ZEROCLAW_runtime_profiles__r__temperature -> runtime_profiles.r.temperature: expected a number"
        ],
    ),
    (
        "CFG-ENV-09",
        {"ZEROCLAW_autonomy__level": "Full"},
        [
            'ZEROCLAW_autonomy__level -> autonomy.level: invalid value "Full" (expected one of read_only, supervised, full)'
        ],
    ),
    (
        "CFG-ENV-09",
        {"ZEROCLAW_autonomy__always_ask": "[1, 2]"},
        ["ZEROCLAW_autonomy__always_ask -> autonomy.always_ask: expected a list of strings"],
    ),
    (
        "CFG-ENV-13",
        {"ZEROCLAW_peripherals__boards": "[]"},
        [
            "ZEROCLAW_peripherals__boards -> peripherals.boards: lists of tables cannot be set from the environment"
        ],
    ),
    (
        "CFG-ENV-13",
        {"ZEROCLAW_runtime_profiles__r__tool_filter_groups": "[]"},
        [
            "ZEROCLAW_runtime_profiles__r__tool_filter_groups -> runtime_profiles.r.tool_filter_groups: lists of tables cannot be set from the environment"
        ],
    ),
    (
        "CFG-VALUE-04",
        {"ZEROCLAW_mcp__servers": '{"name": "x"}'},
        ["ZEROCLAW_mcp__servers -> mcp.servers: expected a JSON array of server tables"],
    ),
    (
        "CFG-VALUE-04",
        {"ZEROCLAW_mcp__servers": "[1]"},
        ["ZEROCLAW_mcp__servers -> mcp.servers: expected a JSON array of server tables"],
    ),
    (
        "CFG-VALUE-04",
        {"ZEROCLAW_mcp__servers": '[{"name": "a", "transport": "ws", "bogus": 1}]'},
        [
            'ZEROCLAW_mcp__servers -> mcp.servers[0].transport: invalid value "ws" (expected one of stdio, http, sse)',
            "ZEROCLAW_mcp__servers -> mcp.servers[0].bogus: unknown key",
        ],
    ),
    (
        "CFG-VALUE-04",
        {"ZEROCLAW_mcp__servers": '[{"name": "a__b", "command": "x"}]'},
        [
            "ZEROCLAW_mcp__servers -> mcp.servers[0].name 'a__b' must be 1-63 letters, digits, '_' or '-', start with a letter or digit, and not contain '__'"
        ],
    ),
    (
        "CFG-ENV-05",
        {"ZEROCLAW_agents__x___y__enabled": "true"},
        ["ZEROCLAW_agents__x___y__enabled did not resolve to a schema path"],
    ),
    (
        "CFG-ENV-05",
        {"ZEROCLAW_agents__x___enabled": "true"},
        ["ZEROCLAW_agents__x___enabled did not resolve to a schema path"],
    ),
    (
        "CFG-ENV-05",
        {"ZEROCLAW_agents__x_y___enabled": "true"},
        ["ZEROCLAW_agents__x_y___enabled did not resolve to a schema path"],
    ),
    (
        "CFG-ENV-05",
        {"ZEROCLAW_agents__x___z__enabled": "1"},
        ["ZEROCLAW_agents__x___z__enabled did not resolve to a schema path"],
    ),
    (
        "CFG-ENV-05",
        {"ZEROCLAW_agents__bad___x__enabled": "true"},
        ["ZEROCLAW_agents__bad___x__enabled did not resolve to a schema path"],
    ),
    (
        "CFG-ENV-05",
        {"ZEROCLAW_agents__a_": "true", "ZEROCLAW_agents__x_": "1"},
        [
            "ZEROCLAW_agents__a_ did not resolve to a schema path",
            "ZEROCLAW_agents__x_ did not resolve to a schema path",
        ],
    ),
    (
        "CFG-ENV-05",
        {"ZEROCLAW_agents__x___enabled": "true", "ZEROCLAW_agents__ab_c__enabled": "maybe"},
        [
            "ZEROCLAW_agents__ab_c__enabled -> agents.ab_c.enabled: expected true or false",
            "ZEROCLAW_agents__x___enabled did not resolve to a schema path",
        ],
    ),
    (
        "CFG-ENV-05",
        {"ZEROCLAW_agents___x__enabled": "true"},
        [
            "ZEROCLAW_agents___x__enabled: invalid alias '_x' for 'agents': must start and end with a lower-case letter or digit"
        ],
    ),
    (
        "CFG-ENV-05",
        {"ZEROCLAW_mcp__servers___x__command": "npx"},
        [
            "ZEROCLAW_mcp__servers___x__command: invalid alias '_x' for 'mcp.servers': must be 1-63 letters, digits, '_' or '-', start with a letter or digit, and not contain '__'"
        ],
    ),
    ("CFG-ENV-07", {"ZEROCLAW_providers__p__model": "m"}, ["providers.p: kind is required"]),
]


# Constant citations of the per-row IDs above, for tools/req_coverage.py.
@pytest.mark.req("CFG-ENV-05", "CFG-ENV-08")
@pytest.mark.parametrize(
    ("env", "expected"),
    [
        pytest.param(env, expected, marks=pytest.mark.req(req), id=f"{req}-{i}")
        for i, (req, env, expected) in enumerate(ERROR_CASES)
    ],
)
def test_override_errors(fail: Failer, env: dict[str, str], expected: list[str]) -> None:
    assert fail(None, env) == expected


VALUE_CASES = [
    (Kind.BOOL, "TRUE", True),
    (Kind.BOOL, "false", False),
    (Kind.INT, "+7", 7),
    (Kind.INT, "-3", -3),
    (Kind.FLOAT, "1e-3", 0.001),
    (Kind.FLOAT, "2", 2.0),
    (Kind.STR, " verbatim ", " verbatim "),
    (Kind.STR_LIST, "", ()),
    (Kind.STR_LIST, " a , ,b ", ("a", "b")),
    (Kind.STR_LIST, '["a,b", "c"]', ("a,b", "c")),
    (Kind.STR_LIST, "[]", ()),
]


@pytest.mark.req("CFG-VALUE-01", "CFG-VALUE-02")
@pytest.mark.parametrize(("kind", "text", "expected"), VALUE_CASES)
def test_text_values_convert(kind: Kind, text: str, expected: object) -> None:
    assert parse_text_value(Field(kind), text) == expected


@pytest.mark.req("CFG-VALUE-03")
@pytest.mark.parametrize(
    ("kind", "text", "reason"),
    [
        (Kind.BOOL, "1", "expected true or false"),
        (Kind.INT, "1.0", "expected an integer"),
        (Kind.INT, "", "expected an integer"),
        (Kind.FLOAT, "inf", "expected a number"),
        (Kind.FLOAT, "x", "expected a number"),
        (Kind.STR_LIST, "[1]", "expected a list of strings"),
        (Kind.STR_LIST, "[", "expected a list of strings"),
    ],
)
def test_text_value_failures(kind: Kind, text: str, reason: str) -> None:
    with pytest.raises(ValueSyntaxError) as info:
        parse_text_value(Field(kind), text)
    assert str(info.value) == reason
