"""Semantic validation of a built snapshot (config.md §9.2, mcp.md MCP-CFG-07, MCP-TFG-08/09).

Runs after environment overrides. Every error and warning is collected before reporting
(CFG-VALID-01); the texts are the specification's exactly. The bundle warnings never become
errors (CFG-VALID-18).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePath
from urllib.parse import urlsplit

from zeroclaw_ref.config.model import (
    AutonomyConfig,
    ConfigSnapshot,
    McpServerConfig,
    ScriptTurn,
    effective_profile,
)
from zeroclaw_ref.config.schema import server_name_message, server_name_ok
from zeroclaw_ref.config.script import ScriptError, load_script, script_path

# [MCP-CFG-07] an HTTP token (RFC 9110 tchar).
_TOKEN_RE = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")


@dataclass(slots=True)
class Validation:
    """The outcome: errors (stop loading), warnings, and the parsed scripts by provider."""

    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    scripts: dict[str, tuple[ScriptTurn, ...]] = field(default_factory=dict)


def validate(snapshot: ConfigSnapshot) -> Validation:
    """Check cross-field rules; errors come back sorted (CFG-LOAD-07)."""
    result = Validation()
    _providers(snapshot, result)
    _agents(snapshot, result)
    _autonomy(snapshot, result)
    _runtime_profiles(snapshot, result)
    if snapshot.mcp.enabled:
        # [CFG-MCP-06] a disabled [mcp] is validated by the schema only.
        for index, server in enumerate(snapshot.mcp.servers):
            result.errors += _server(index, server)
        result.errors += _duplicates(snapshot.mcp.servers)
    for index, board in enumerate(snapshot.peripherals.boards):
        if not board.board.strip():
            # [CFG-VALID-13]
            result.errors.append(f"peripherals.boards[{index}].board must not be empty")
    _bundle_warnings(snapshot, result)
    default_agent = snapshot.acp.default_agent
    if default_agent is not None and default_agent not in snapshot.agents:
        # [CFG-VALID-17]
        result.warnings.append(f"acp.default_agent '{default_agent}' names no configured agent")
    result.errors.sort()
    return result


def _providers(snapshot: ConfigSnapshot, result: Validation) -> None:
    for name, provider in snapshot.providers.items():
        if provider.kind == "scripted":
            if provider.script is None:
                # [CFG-VALID-02]
                result.errors.append(f'providers.{name}.script is required for kind = "scripted"')
                continue
            try:
                path = script_path(snapshot.config_dir, provider.script)
                result.scripts[name] = load_script(path)
            except ScriptError as exc:
                # [CFG-VALID-03]
                result.errors.append(f"providers.{name}.script: {exc}")
        if provider.kind in ("openai", "anthropic"):
            if not provider.model.strip():
                # [CFG-PROV-02] Design: the spec requires a model but gives no text; this one
                # mirrors CFG-VALID-02.
                result.errors.append(
                    f'providers.{name}.model is required for kind = "{provider.kind}"'
                )
            if not provider.api_key:
                # [CFG-PROV-04] a configuration may be prepared before its key is entered.
                result.warnings.append(f"providers.{name}.api_key is not set")


_REFERENCES = (
    ("model_provider", "providers"),
    ("risk_profile", "risk_profiles"),
    ("runtime_profile", "runtime_profiles"),
)


def _agents(snapshot: ConfigSnapshot, result: Validation) -> None:
    sections = {
        "providers": snapshot.providers,
        "risk_profiles": snapshot.risk_profiles,
        "runtime_profiles": snapshot.runtime_profiles,
    }
    for alias, agent in snapshot.agents.items():
        for key, section in _REFERENCES:
            target = str(getattr(agent, key))
            if target and target not in sections[section]:
                # [CFG-AGENT-02]
                result.errors.append(
                    f"agents.{alias}.{key} references an undefined [{section}.{target}]"
                )
        seen: set[str] = set()
        for delegate in agent.delegates:
            reason = None
            if delegate == alias:
                reason = "an agent cannot delegate to itself"
            elif delegate in seen:
                reason = f"duplicate entry '{delegate}'"
            elif delegate not in snapshot.agents:
                reason = f"'{delegate}' names no configured agent"
            seen.add(delegate)
            if reason is not None:
                # [CFG-AGENT-04]
                result.errors.append(f"agents.{alias}.delegates: {reason}")


def _deny_conflict(profile: AutonomyConfig) -> bool:
    return profile.deny_all_tools and bool(profile.allowed_tools)


def _autonomy(snapshot: ConfigSnapshot, result: Validation) -> None:
    # [CFG-VALID-04] in [autonomy] and in every effective risk profile.
    suffix = ".deny_all_tools cannot be combined with a non-empty allowed_tools list"
    if _deny_conflict(snapshot.autonomy):
        result.errors.append(f"autonomy{suffix}")
    for name, profile in snapshot.risk_profiles.items():
        if _deny_conflict(effective_profile(snapshot.autonomy, profile)):
            result.errors.append(f"risk_profiles.{name}{suffix}")


def _runtime_profiles(snapshot: ConfigSnapshot, result: Validation) -> None:
    for name, profile in snapshot.runtime_profiles.items():
        for index, group in enumerate(profile.tool_filter_groups):
            where = f"runtime_profiles.{name}.tool_filter_groups[{index}]"
            if any(not pattern for pattern in group.tools):
                # [MCP-TFG-08]
                result.errors.append(f"{where}.tools contains empty pattern")
            if group.mode == "dynamic" and not group.keywords:
                # [MCP-TFG-09] such a group could never expose anything.
                result.errors.append(f'{where} has mode = "dynamic" but no keywords')


def _server(index: int, server: McpServerConfig) -> list[str]:
    where = f"mcp.servers[{index}]"
    errors: list[str] = []
    if not server.name.strip():
        errors.append(f"{where}.name must not be empty")  # [CFG-VALID-05]
    elif not server_name_ok(server.name):
        errors.append(server_name_message(index, server.name))  # [CFG-MCP-05]
    timeout = server.tool_timeout_secs
    if timeout is not None and timeout <= 0:
        errors.append(f"{where}.tool_timeout_secs must be greater than 0")  # [CFG-VALID-07]
    elif timeout is not None and timeout > 600:
        errors.append(f"{where}.tool_timeout_secs exceeds max 600")  # [CFG-VALID-08]
    startup = server.startup_timeout_secs
    if startup is not None and startup <= 0:
        # Design: as CFG-VALID-07 for the startup wait (a zero wait could never connect).
        errors.append(f"{where}.startup_timeout_secs must be greater than 0")
    elif startup is not None and startup > 600:
        errors.append(f"{where}.startup_timeout_secs exceeds max 600")
    if server.transport == "stdio":
        if not server.command.strip():
            # [CFG-VALID-09]
            errors.append(f"{where} with transport=stdio requires non-empty command")
        return errors
    errors += _remote(where, server)
    for header, value in server.headers.items():
        text = value if isinstance(value, str) else ""
        if not _TOKEN_RE.match(header) or any(c in text for c in "\r\n\0"):
            # [MCP-CFG-07] the value is never printed.
            errors.append(f"{where}.headers contains an invalid header `{header}`")
    return errors


def _remote(where: str, server: McpServerConfig) -> list[str]:
    """[CFG-VALID-10] [CFG-VALID-11] [CFG-VALID-12] the URL and CA checks of http/sse."""
    errors: list[str] = []
    url = (server.url or "").strip()
    scheme = ""
    if not url:
        errors.append(f"{where} with transport={server.transport} requires url")
    else:
        try:
            parts = urlsplit(url)
            scheme, host = parts.scheme.lower(), parts.hostname
        except ValueError:
            scheme, host = "", None
        if scheme and scheme not in ("http", "https"):
            errors.append(f"{where}.url must use http/https")
        elif not scheme or not host:
            errors.append(f"{where}.url is not a valid URL")
    ca = server.tls_ca_cert_path
    if ca is not None:
        if not ca.strip():
            errors.append(f"{where}.tls_ca_cert_path must not be empty")
        elif not PurePath(ca).is_absolute():
            errors.append(f"{where}.tls_ca_cert_path must be an absolute path")
        if url and scheme != "https":
            errors.append(f"{where}.url must use https when tls_ca_cert_path is set")
    return errors


def _duplicates(servers: tuple[McpServerConfig, ...]) -> list[str]:
    # [CFG-VALID-06] names equal ignoring case; each later duplicate is reported once.
    seen: set[str] = set()
    errors: list[str] = []
    for server in servers:
        folded = server.name.strip().casefold()
        if folded and folded in seen:
            errors.append(f"mcp.servers contains duplicate name: {server.name}")
        seen.add(folded)
    return errors


def _bundle_warnings(snapshot: ConfigSnapshot, result: Validation) -> None:
    names = {server.name for server in snapshot.mcp.servers}
    if snapshot.mcp.enabled and snapshot.mcp.servers and not snapshot.mcp_bundles:
        # [CFG-VALID-14] the `<alias>` placeholders are part of the text.
        result.warnings.append(
            "[[mcp.servers]] is configured but no [mcp_bundles.*] bundles exist; no agent will "
            "receive any MCP tools. Add a [mcp_bundles.<alias>] entry and reference it from "
            "agents.<alias>.mcp_bundles to grant access."
        )
    for alias, bundle in snapshot.mcp_bundles.items():
        for server in (*bundle.servers, *bundle.exclude):
            if server not in names:
                # [CFG-VALID-15]
                result.warnings.append(
                    "mcp_bundles.<alias> references an MCP server name not in [mcp.servers]; "
                    f"it grants nothing (mcp_bundle: '{alias}', server: '{server}')"
                )
    for alias, agent in snapshot.agents.items():
        for bundle_name in agent.mcp_bundles:
            if bundle_name not in snapshot.mcp_bundles:
                # [CFG-VALID-16]
                result.warnings.append(
                    "agents.<alias>.mcp_bundles references an undefined [mcp_bundles.<alias>]; "
                    "the agent is granted no servers from it "
                    f"(agent: '{alias}', mcp_bundle: '{bundle_name}')"
                )
