"""Turn a schema-checked configuration tree into snapshot sections (config.md §3 to §9.1).

This is the defaults and normalisation stage of CFG-LOAD-01. It runs after environment
overrides have been applied to the tree, so normalisation (CFG-AUTO-04, CFG-AUTO-05) covers
values from the file and from the environment alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from zeroclaw_ref.config.model import (
    AcpConfig,
    AgentConfig,
    AutonomyConfig,
    ConfigSnapshot,
    GatewayConfig,
    McpBundleConfig,
    McpConfig,
    McpServerConfig,
    PeripheralBoard,
    PeripheralsConfig,
    ProviderConfig,
    RiskProfileConfig,
    RuntimeProfileConfig,
    SandboxConfig,
    SchedulerConfig,
    SecretsConfig,
    ToolFilterGroup,
    frozen_map,
)

Tree = dict[str, object]

# [CFG-PROV-02] per-kind defaults.
_DEFAULT_MODEL = {"demo": "demo", "scripted": "scripted"}
_DEFAULT_BASE_URL = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
}
_DEFAULT_PROVIDER_TEMPERATURE = 0.7
# [CFG-RUNTIME-01] 0 means the default.
_DEFAULT_ITERATIONS = 10
_NONE_SENTINEL = ("__none__",)


def sub(tree: Mapping[str, object], key: str) -> Tree:
    """The table at `key`, or an empty one."""
    value = tree.get(key)
    return value if isinstance(value, dict) else {}


def table_list(tree: Mapping[str, object], key: str) -> list[Tree]:
    """The list of tables at `key`, or an empty one."""
    value = tree.get(key)
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _str(tree: Mapping[str, object], key: str, default: str) -> str:
    value = tree.get(key, default)
    return value if isinstance(value, str) else default


def _opt_str(tree: Mapping[str, object], key: str) -> str | None:
    value = tree.get(key)
    return value if isinstance(value, str) else None


def _bool(tree: Mapping[str, object], key: str, default: bool) -> bool:
    value = tree.get(key, default)
    return value if isinstance(value, bool) else default


def _opt_int(tree: Mapping[str, object], key: str) -> int | None:
    value = tree.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _int(tree: Mapping[str, object], key: str, default: int) -> int:
    value = _opt_int(tree, key)
    return default if value is None else value


def _opt_float(tree: Mapping[str, object], key: str) -> float | None:
    value = tree.get(key)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _strs(tree: Mapping[str, object], key: str, default: tuple[str, ...]) -> tuple[str, ...]:
    value = tree.get(key)
    if isinstance(value, list | tuple):
        return tuple(v for v in value if isinstance(v, str))
    return default


def _opt_strs(tree: Mapping[str, object], key: str) -> tuple[str, ...] | None:
    return _strs(tree, key, ()) if key in tree else None


def _normalise_autonomy(values: Tree, path: str, warnings: list[str]) -> Tree:
    """[CFG-AUTO-04] [CFG-AUTO-05] one spelling inside the runtime."""
    out = dict(values)
    if out.get("level") == "readonly":
        out["level"] = "read_only"
    if tuple(_strs(out, "allowed_tools", ())) == _NONE_SENTINEL:
        out["allowed_tools"] = ()
        out["deny_all_tools"] = True
        warnings.append(
            f'{path}.allowed_tools: allowed_tools = ["__none__"] is deprecated; '
            "use deny_all_tools = true"
        )
    for key, value in out.items():
        if isinstance(value, list):
            out[key] = tuple(value)
    return out


def _autonomy(values: Tree) -> AutonomyConfig:
    base = AutonomyConfig()
    return AutonomyConfig(
        level=_str(values, "level", base.level),
        workspace_only=_bool(values, "workspace_only", base.workspace_only),
        allowed_commands=_strs(values, "allowed_commands", base.allowed_commands),
        forbidden_paths=_strs(values, "forbidden_paths", base.forbidden_paths),
        allowed_roots=_strs(values, "allowed_roots", base.allowed_roots),
        require_approval_for_medium_risk=_bool(
            values, "require_approval_for_medium_risk", base.require_approval_for_medium_risk
        ),
        block_high_risk_commands=_bool(
            values, "block_high_risk_commands", base.block_high_risk_commands
        ),
        shell_env_passthrough=_strs(values, "shell_env_passthrough", ()),
        auto_approve=_strs(values, "auto_approve", ()),
        always_ask=_strs(values, "always_ask", ()),
        allowed_tools=_strs(values, "allowed_tools", ()),
        excluded_tools=_strs(values, "excluded_tools", ()),
        deny_all_tools=_bool(values, "deny_all_tools", base.deny_all_tools),
    )


def _runtime(name: str, values: Tree) -> RuntimeProfileConfig:
    base = RuntimeProfileConfig(name=name)
    groups = tuple(
        ToolFilterGroup(
            mode=_str(g, "mode", "dynamic"),
            tools=_strs(g, "tools", ()),
            keywords=_strs(g, "keywords", ()),
        )
        for g in table_list(values, "tool_filter_groups")
    )
    return RuntimeProfileConfig(
        name=name,
        max_tool_iterations=_int(values, "max_tool_iterations", base.max_tool_iterations)
        or _DEFAULT_ITERATIONS,
        max_history_messages=_int(values, "max_history_messages", base.max_history_messages),
        max_tool_result_chars=_int(values, "max_tool_result_chars", base.max_tool_result_chars),
        parallel_tools=_bool(values, "parallel_tools", base.parallel_tools),
        temperature=_opt_float(values, "temperature"),
        shell_timeout_secs=_int(values, "shell_timeout_secs", base.shell_timeout_secs),
        max_delegation_depth=_int(values, "max_delegation_depth", base.max_delegation_depth),
        tool_filter_groups=groups,
        auto_memory=_bool(values, "auto_memory", base.auto_memory),
    )


def _provider(name: str, values: Tree) -> ProviderConfig:
    kind = _str(values, "kind", "")
    temperature = _opt_float(values, "temperature")
    return ProviderConfig(
        name=name,
        kind=kind,
        model=_str(values, "model", "") or _DEFAULT_MODEL.get(kind, ""),
        base_url=_opt_str(values, "base_url") or _DEFAULT_BASE_URL.get(kind),
        api_key=_opt_str(values, "api_key"),
        extra_headers=frozen_map(sub(values, "extra_headers")),
        temperature=_DEFAULT_PROVIDER_TEMPERATURE if temperature is None else temperature,
        script=_opt_str(values, "script"),
        record=_opt_str(values, "record"),
        timeout_secs=_int(values, "timeout_secs", 120),
        max_tokens=_int(values, "max_tokens", 4096),
    )


def _agent(alias: str, values: Tree) -> AgentConfig:
    return AgentConfig(
        alias=alias,
        enabled=_bool(values, "enabled", True),
        model_provider=_str(values, "model_provider", ""),
        risk_profile=_str(values, "risk_profile", ""),
        runtime_profile=_str(values, "runtime_profile", ""),
        system_prompt=_str(values, "system_prompt", ""),
        workspace_path=_opt_str(sub(values, "workspace"), "path"),
        mcp_bundles=_strs(values, "mcp_bundles", ()),
        acp_enable_mcp=_bool(values, "acp_enable_mcp", False),
        skills=_opt_strs(values, "skills"),
        delegates=_strs(values, "delegates", ()),
    )


def _server(values: Tree) -> McpServerConfig:
    return McpServerConfig(
        name=_str(values, "name", ""),
        transport=_str(values, "transport", "stdio"),
        command=_str(values, "command", ""),
        args=_strs(values, "args", ()),
        env=frozen_map(sub(values, "env")),
        url=_opt_str(values, "url"),
        headers=frozen_map(sub(values, "headers")),
        tool_timeout_secs=_opt_int(values, "tool_timeout_secs"),
        startup_timeout_secs=_opt_int(values, "startup_timeout_secs"),
        pinned_resources=_strs(values, "pinned_resources", ()),
        tls_ca_cert_path=_opt_str(values, "tls_ca_cert_path"),
        max_response_bytes=_opt_int(values, "max_response_bytes"),
        era=_opt_str(values, "era"),
    )


def _peripherals(values: Tree) -> PeripheralsConfig:
    base = PeripheralsConfig()
    boards = tuple(
        PeripheralBoard(
            board=_str(b, "board", ""),
            transport=_str(b, "transport", "serial"),
            path=_opt_str(b, "path"),
            baud=_int(b, "baud", 115200),
        )
        for b in table_list(values, "boards")
    )
    return PeripheralsConfig(
        enabled=_bool(values, "enabled", base.enabled),
        boards=boards,
        allowed_path_prefixes=_strs(values, "allowed_path_prefixes", base.allowed_path_prefixes),
    )


def build_snapshot(
    tree: Tree,
    paths: tuple[Path, Path, Path, bool],
    overrides: Mapping[str, str],
) -> tuple[ConfigSnapshot, list[str], list[str]]:
    """Build an unvalidated snapshot from `tree`; return it, errors and warnings.

    `paths` is (config dir, data dir, config file, whether the file exists). The errors are the
    ones that only the finished tree can show (a provider created from the environment without
    `kind`). One helper builds each section; the warnings come in file order (autonomy first).
    """
    warnings: list[str] = []
    errors: list[str] = []
    autonomy_values = _normalise_autonomy(sub(tree, "autonomy"), "autonomy", warnings)
    risk = _risk_profiles(tree, warnings)
    providers = _providers(tree, errors)
    snapshot = ConfigSnapshot(
        config_dir=paths[0],
        data_dir=paths[1],
        config_file=paths[2],
        file_exists=paths[3],
        autonomy=_autonomy(autonomy_values),
        risk_profiles=MappingProxyType(risk),
        runtime_profiles=MappingProxyType(
            {n: _runtime(n, v) for n, v in _entries(tree, "runtime_profiles").items()}
        ),
        providers=MappingProxyType(providers),
        agents=MappingProxyType({a: _agent(a, v) for a, v in _entries(tree, "agents").items()}),
        mcp=_mcp(sub(tree, "mcp")),
        mcp_bundles=MappingProxyType(_mcp_bundles(tree)),
        acp=_acp(sub(tree, "acp")),
        gateway=_gateway(sub(tree, "gateway")),
        peripherals=_peripherals(sub(tree, "peripherals")),
        scheduler=_scheduler(sub(tree, "scheduler")),
        secrets=SecretsConfig(encrypt=_bool(sub(tree, "secrets"), "encrypt", True)),
        sandbox=_sandbox(sub(sub(tree, "security"), "sandbox")),
        overrides=MappingProxyType(dict(overrides)),
    )
    return snapshot, errors, warnings


def _risk_profiles(tree: Tree, warnings: list[str]) -> dict[str, RiskProfileConfig]:
    """Each `[risk_profiles.<name>]`, normalised as `[autonomy]` is (CFG-AUTO-04)."""
    return {
        name: RiskProfileConfig(
            name, frozen_map(_normalise_autonomy(values, f"risk_profiles.{name}", warnings))
        )
        for name, values in _entries(tree, "risk_profiles").items()
    }


def _providers(tree: Tree, errors: list[str]) -> dict[str, ProviderConfig]:
    """Each `[providers.<name>]`; one the environment created without its kind is an error
    [CFG-PROV-01] (and still built, so later checks see it)."""
    providers: dict[str, ProviderConfig] = {}
    for name, values in _entries(tree, "providers").items():
        if "kind" not in values:
            errors.append(f"providers.{name}: kind is required")
        providers[name] = _provider(name, values)
    return providers


def _mcp(mcp: Tree) -> McpConfig:
    return McpConfig(
        enabled=_bool(mcp, "enabled", True),
        deferred_loading=_bool(mcp, "deferred_loading", False),
        servers=tuple(_server(s) for s in table_list(mcp, "servers")),
    )


def _mcp_bundles(tree: Tree) -> dict[str, McpBundleConfig]:
    return {
        a: McpBundleConfig(a, _strs(v, "servers", ()), _strs(v, "exclude", ()))
        for a, v in _entries(tree, "mcp_bundles").items()
    }


def _acp(acp: Tree) -> AcpConfig:
    return AcpConfig(
        default_agent=_opt_str(acp, "default_agent"),
        max_sessions=_int(acp, "max_sessions", 10),
        session_timeout_secs=_int(acp, "session_timeout_secs", 3600),
    )


def _gateway(gateway: Tree) -> GatewayConfig:
    return GatewayConfig(
        host=_str(gateway, "host", "127.0.0.1"),
        port=_int(gateway, "port", 42617),
        require_pairing=_bool(gateway, "require_pairing", True),
        path_prefix=_opt_str(gateway, "path_prefix"),
        paired_tokens=_strs(gateway, "paired_tokens", ()),
    )


def _scheduler(scheduler: Tree) -> SchedulerConfig:
    return SchedulerConfig(
        enabled=_bool(scheduler, "enabled", True), tick_secs=_int(scheduler, "tick_secs", 30)
    )


def _sandbox(table: Tree) -> SandboxConfig:
    return SandboxConfig(
        backend=_str(table, "backend", "auto"),
        required=_bool(table, "required", False),
        network=_bool(table, "network", False),
    )


def _entries(tree: Mapping[str, object], section: str) -> dict[str, Tree]:
    return {k: v for k, v in sub(tree, section).items() if isinstance(v, dict)}
