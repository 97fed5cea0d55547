"""The frozen configuration snapshot and its section values (config.md §3 to §9).

Every section is a frozen dataclass; maps are read-only `Mapping`s in file order. The loader
(`config/load.py`) is the only producer. Secrets are held decrypted in memory and never shown by
`repr` (CFG-LOAD-11, CFG-SECRETS-14).
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TypeVar

V = TypeVar("V")

# [CFG-AUTO-01] default shell allow-list; `free` is added on Linux.
DEFAULT_ALLOWED_COMMANDS: tuple[str, ...] = (
    "git", "npm", "cargo", "ls", "cat", "grep", "find", "echo", "pwd", "wc", "head", "tail",
    "date", "df", "du", "uname", "uptime", "hostname", "python", "python3", "pip", "node",
) + (("free",) if sys.platform.startswith("linux") else ())  # fmt: skip

# [CFG-AUTO-01] (acp.md Table 10-1)
DEFAULT_FORBIDDEN_PATHS: tuple[str, ...] = (
    "/etc", "/root", "/home", "/usr", "/bin", "/sbin", "/lib", "/opt", "/boot", "/dev",
    "/proc", "/sys", "/var", "/tmp", "~/.ssh", "~/.gnupg", "~/.aws", "~/.config",
)  # fmt: skip

# [POL-APPROVE-04] [CFG-AUTO-03] merged back into every effective auto_approve list.
DEFAULT_AUTO_APPROVE: tuple[str, ...] = (
    "file_read", "memory_recall", "web_search_tool", "web_fetch", "calculator", "glob_search",
    "content_search", "image_info", "weather", "tool_search", "browser", "browser_open",
    "ask_user", "todo_write",
)  # fmt: skip

# [CFG-PERIPH-02]
DEFAULT_PERIPHERAL_PREFIXES: tuple[str, ...] = (
    "/dev/ttyACM", "/dev/ttyUSB", "/dev/tty.usbmodem", "/dev/cu.usbmodem", "/dev/tty.usbserial",
    "/dev/cu.usbserial", "COM",
)  # fmt: skip

LEVELS: tuple[str, ...] = ("read_only", "supervised", "full")
PROVIDER_KINDS: tuple[str, ...] = ("demo", "scripted", "openai", "anthropic")

MASK = "****"


def frozen_map(items: Mapping[str, V] | None = None) -> Mapping[str, V]:
    """A read-only view over a copy of `items` (keeps insertion order)."""
    return MappingProxyType(dict(items or {}))


@dataclass(frozen=True, slots=True)
class AutonomyConfig:
    """`[autonomy]`, and the effective risk profile after the overlay (CFG-AUTO-01/02)."""

    level: str = "supervised"
    workspace_only: bool = True
    allowed_commands: tuple[str, ...] = DEFAULT_ALLOWED_COMMANDS
    forbidden_paths: tuple[str, ...] = DEFAULT_FORBIDDEN_PATHS
    allowed_roots: tuple[str, ...] = ()
    require_approval_for_medium_risk: bool = True
    block_high_risk_commands: bool = True
    shell_env_passthrough: tuple[str, ...] = ()
    auto_approve: tuple[str, ...] = ()
    always_ask: tuple[str, ...] = ()
    allowed_tools: tuple[str, ...] = ()
    excluded_tools: tuple[str, ...] = ()
    deny_all_tools: bool = False


@dataclass(frozen=True, slots=True)
class RiskProfileConfig:
    """`[risk_profiles.<name>]`: only the keys the file sets (`values` maps key -> value)."""

    name: str
    values: Mapping[str, object] = field(default_factory=frozen_map)


def effective_profile(base: AutonomyConfig, profile: RiskProfileConfig | None) -> AutonomyConfig:
    """[CFG-AUTO-02] overlay the profile's keys on `[autonomy]`, lists replaced whole;
    [CFG-AUTO-03] then merge the built-in auto_approve defaults back in."""
    merged = dataclasses.replace(base, **dict(profile.values)) if profile else base  # type: ignore[arg-type]
    missing = tuple(n for n in DEFAULT_AUTO_APPROVE if n not in merged.auto_approve)
    return dataclasses.replace(merged, auto_approve=merged.auto_approve + missing)


@dataclass(frozen=True, slots=True)
class ToolFilterGroup:
    """One `tool_filter_groups` entry (CFG-RUNTIME-02, mcp.md §9.3)."""

    mode: str = "dynamic"
    tools: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RuntimeProfileConfig:
    """`[runtime_profiles.<name>]` (CFG-RUNTIME-01)."""

    name: str
    max_tool_iterations: int = 10
    max_history_messages: int = 50
    max_tool_result_chars: int = 50000
    parallel_tools: bool = False
    temperature: float | None = None
    shell_timeout_secs: int = 60
    max_delegation_depth: int = 1
    tool_filter_groups: tuple[ToolFilterGroup, ...] = ()
    auto_memory: bool = True


@dataclass(frozen=True, slots=True)
class ScriptToolCall:
    """A tool call of a scripted model turn; `arguments_json` is compact JSON of an object."""

    name: str
    arguments_json: str
    id: str | None = None


@dataclass(frozen=True, slots=True)
class ScriptTurn:
    """One turn of a `scripted` provider's script (CFG-PROV-10)."""

    thoughts: tuple[str, ...] = ()
    chunks: tuple[str, ...] = ()
    tool_calls: tuple[ScriptToolCall, ...] = ()
    error: str | None = None


@dataclass(frozen=True, slots=True)
class ProviderConfig:
    """`[providers.<name>]` (CFG-PROV-02). `api_key` and `extra_headers` are secrets."""

    name: str
    kind: str
    model: str = ""
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    extra_headers: Mapping[str, object] = field(default_factory=frozen_map, repr=False)
    temperature: float | None = None
    script: str | None = None
    script_turns: tuple[ScriptTurn, ...] | None = field(default=None, repr=False)
    record: str | None = None
    timeout_secs: int = 120
    max_tokens: int = 4096


@dataclass(frozen=True, slots=True)
class AgentConfig:
    """`[agents.<alias>]` (CFG-AGENT-01)."""

    alias: str
    enabled: bool = True
    model_provider: str = ""
    risk_profile: str = ""
    runtime_profile: str = ""
    system_prompt: str = ""
    workspace_path: str | None = None
    mcp_bundles: tuple[str, ...] = ()
    acp_enable_mcp: bool = False
    skills: tuple[str, ...] | None = None
    delegates: tuple[str, ...] = ()

    @property
    def dispatchable(self) -> bool:
        """[CFG-AGENT-03] enabled, and the three references are non-blank."""
        refs = (self.model_provider, self.risk_profile, self.runtime_profile)
        return self.enabled and all(r.strip() for r in refs)


@dataclass(frozen=True, slots=True)
class McpServerConfig:
    """One `[[mcp.servers]]` entry (CFG-MCP-03). `env` and `headers` values are secrets."""

    name: str
    transport: str = "stdio"
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, object] = field(default_factory=frozen_map, repr=False)
    url: str | None = None
    headers: Mapping[str, object] = field(default_factory=frozen_map, repr=False)
    tool_timeout_secs: int | None = None
    startup_timeout_secs: int | None = None  # initialize/discover wait; unset = the default
    pinned_resources: tuple[str, ...] = ()
    tls_ca_cert_path: str | None = None
    max_response_bytes: int | None = None
    era: str | None = None  # auto | legacy | modern; unset = McpOptions.era (auto)


@dataclass(frozen=True, slots=True)
class McpConfig:
    """`[mcp]` (CFG-MCP-01)."""

    enabled: bool = True
    deferred_loading: bool = False
    servers: tuple[McpServerConfig, ...] = ()


@dataclass(frozen=True, slots=True)
class McpBundleConfig:
    """`[mcp_bundles.<alias>]` (CFG-BUNDLE-01)."""

    alias: str
    servers: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class AcpConfig:
    """`[acp]` (CFG-ACP-01)."""

    default_agent: str | None = None
    max_sessions: int = 10
    session_timeout_secs: int = 3600


@dataclass(frozen=True, slots=True)
class GatewayConfig:
    """`[gateway]` (CFG-GW-01)."""

    host: str = "127.0.0.1"
    port: int = 42617
    require_pairing: bool = True
    path_prefix: str | None = None
    paired_tokens: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PeripheralBoard:
    """One `[[peripherals.boards]]` entry (CFG-PERIPH-01)."""

    board: str
    transport: str = "serial"
    path: str | None = None
    baud: int = 115200


@dataclass(frozen=True, slots=True)
class PeripheralsConfig:
    """`[peripherals]` (CFG-PERIPH-01, CFG-PERIPH-02)."""

    enabled: bool = False
    boards: tuple[PeripheralBoard, ...] = ()
    allowed_path_prefixes: tuple[str, ...] = DEFAULT_PERIPHERAL_PREFIXES


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    """`[scheduler]` (CFG-SCHED-01)."""

    enabled: bool = True
    tick_secs: int = 30


SANDBOX_BACKENDS: tuple[str, ...] = ("auto", "landlock", "bwrap", "none")


@dataclass(frozen=True, slots=True)
class SandboxConfig:
    """`[security.sandbox]`: the OS confinement of every command run for the model (ZC-SBX-01).

    `network = false` (the default) denies the command TCP connections and binds, so it
    cannot reach the gateway or other local services on the operator's behalf.
    """

    backend: str = "auto"
    required: bool = False
    network: bool = False


@dataclass(frozen=True, slots=True)
class SecretsConfig:
    """`[secrets]` (CFG-SECRETS-01)."""

    encrypt: bool = True


@dataclass(frozen=True, slots=True)
class ConfigSnapshot:
    """One loaded, validated, immutable configuration (CFG-LOAD-01, CFG-LOAD-11).

    Maps keep file order (ACP-INIT-05 reads the first provider with a model). `overrides` maps
    each key path set from the environment to its variable (CFG-ENV-11); `warnings` holds the
    validation warnings, without the `warning: ` prefix (CFG-LOAD-08).
    """

    config_dir: Path
    data_dir: Path
    config_file: Path
    file_exists: bool = False
    schema_version: int = 1
    autonomy: AutonomyConfig = AutonomyConfig()
    risk_profiles: Mapping[str, RiskProfileConfig] = field(default_factory=frozen_map)
    runtime_profiles: Mapping[str, RuntimeProfileConfig] = field(default_factory=frozen_map)
    providers: Mapping[str, ProviderConfig] = field(default_factory=frozen_map)
    agents: Mapping[str, AgentConfig] = field(default_factory=frozen_map)
    mcp: McpConfig = McpConfig()
    mcp_bundles: Mapping[str, McpBundleConfig] = field(default_factory=frozen_map)
    acp: AcpConfig = AcpConfig()
    gateway: GatewayConfig = GatewayConfig()
    peripherals: PeripheralsConfig = PeripheralsConfig()
    scheduler: SchedulerConfig = SchedulerConfig()
    secrets: SecretsConfig = SecretsConfig()
    sandbox: SandboxConfig = SandboxConfig()
    overrides: Mapping[str, str] = field(default_factory=frozen_map)
    warnings: tuple[str, ...] = ()

    def agent_workspace(self, alias: str) -> Path:
        """[CFG-DIR-06] [ACP-NEW-13] the agent's workspace path (not created, not canonical)."""
        agent = self.agents.get(alias)
        raw = agent.workspace_path if agent else None
        if raw is None:
            return self.config_dir / "agents" / alias / "workspace"
        path = Path(raw).expanduser()
        return path if path.is_absolute() else self.config_dir / path


class ConfigError(Exception):
    """A configuration that does not load; `lines` are printed as `ERROR: <line>`."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = tuple(lines)
