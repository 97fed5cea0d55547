"""The keys of a resolved-execution snapshot (POL-RESOLVE-16), in order.

Written out independently of `snapshot()`, so a key added or dropped there fails both the
unit test of resolve() and the parity harness.
"""

SNAPSHOT_KEYS: tuple[str, ...] = (
    "tools.names", "tools.builtin", "tools.peripheral", "tools.capability", "tools.mcp",
    "tools.skill", "tools.mcp_deferred", "tools.tool_search",
    "prompt.system", "prompt.deferred_section", "prompt.pinned_section",
    "access.allowed_tools", "access.excluded_tools", "access.caller_allowed",
    "mcp.connected", "mcp.granted_servers", "mcp.mode",
    "approval.level", "approval.auto_approve", "approval.always_ask", "approval.interaction",
    "approval.session_allowlist",
    "security.workspace_dir", "security.allowed_roots", "security.workspace_only",
    "security.forbidden_paths", "security.allowed_commands",
    "security.require_approval_for_medium_risk", "security.block_high_risk_commands",
    "security.shell_env_passthrough",
    "knobs.max_tool_iterations", "knobs.max_history_messages", "knobs.max_tool_result_chars",
    "knobs.parallel_tools", "knobs.shell_timeout_secs", "knobs.max_delegation_depth",
    "knobs.tool_filter_groups",
    "model.provider", "model.kind", "model.model", "model.temperature",
    "memory.enabled", "memory.store",
    "skills.loaded",
    "lineage.executing_agent", "lineage.parent_agent", "lineage.depth", "lineage.surface",
    "assembly.caller_allowed", "assembly.connect_mcp", "assembly.connect_peripherals",
    "assembly.exclude_memory", "assembly.acp_delivery", "assembly.list_deferred_mcp_specs",
)  # fmt: skip
