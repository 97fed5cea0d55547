"""The parity INDEX (policy.md §8.2): one row per policy surface, data only.

A row names the setting, who owns it, the requirement ID that tracks it and the test that is
its evidence. Per-path verdicts do not live here: the (setting x path) expectations are the
intended-difference table of `test_l2_paths.py`.

Every row of the initial INDEX (policy.md §8.6) is here and `Tested`. The MCP rows
(POL-BUNDLE-02, POL-ACCESS-04, POL-PARITY-15, POL-ASSEMBLE-10, POL-ASSEMBLE-09) are evidenced
against real stdio MCP servers (`conftest.mcp_server_toml`), on every path variant, once with
`mcp.deferred_loading = false` and once with `true`. The released INDEX holds no
`TrackedDivergence` row (POL-PARITY-06). The gateway paths (`gateway-chat`, `gateway-tools`)
add builders and intended-difference entries in the L2 harness, not rows here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

Status = Literal["Tested", "TrackedDivergence"]

TESTED: Final = "Tested"
TRACKED_DIVERGENCE: Final = "TrackedDivergence"


@dataclass(frozen=True, slots=True)
class ParityRow:
    surface: str
    setting: str
    owner: str
    tracking: str
    status: Status
    evidence: str


L2 = "test_l2_paths"
L1 = "test_l1_engine"

INDEX: Final[list[ParityRow]] = [
    ParityRow("seam", "only resolve() mints executions; only assemble() mints registries",
              "runtime", "POL-RESOLVE-01", "Tested", f"{L2}::test_parity_seam_is_sealed"),
    ParityRow("tools", "built-in allow/deny filter",
              "policy", "POL-ASSEMBLE-06", "Tested", f"{L2}::test_parity_l2_builtin_filter"),
    ParityRow("tools", "deny_all_tools",
              "policy", "POL-ACCESS-06", "Tested", f"{L2}::test_parity_l2_deny_all"),
    ParityRow("tools", "caller allow-list (cron jobs, inherited by their delegate children)",
              "policy", "POL-PATH-17", "Tested", f"{L2}::test_parity_l2_caller_allowlist"),
    ParityRow("tools", "mcp_bundles server scope",
              "mcp", "POL-BUNDLE-02", "Tested", f"{L2}::test_parity_l2_mcp_scope"),
    ParityRow("tools", "MCP access policy and __ rule",
              "policy", "POL-ACCESS-04", "Tested", f"{L2}::test_parity_l2_mcp_access_policy"),
    ParityRow("tools", "no MCP server, tool, stub or pin of one agent in another agent's "
              "execution", "mcp", "POL-PARITY-15", "Tested",
              f"{L2}::test_parity_l2_cross_agent_mcp_isolation"),
    ParityRow("tools", "MCP eager/deferred/listing mode and tool_search",
              "mcp", "POL-ASSEMBLE-10", "Tested", f"{L2}::test_parity_l2_mcp_mode"),
    ParityRow("tools", "capability tools and pinned section",
              "mcp", "POL-ASSEMBLE-09", "Tested", f"{L2}::test_parity_l2_capability_and_pins"),
    ParityRow("tools", "skills registration",
              "policy", "POL-ASSEMBLE-15", "Tested", f"{L2}::test_parity_l2_skills"),
    ParityRow("tools", "final excluded_tools subtraction",
              "policy", "POL-ASSEMBLE-16", "Tested", f"{L2}::test_parity_l2_final_exclusion"),
    ParityRow("tools", "peripherals on acp, gateway-chat, cli-run and cron; never on the "
              "listing or delegate", "runtime", "POL-ASSEMBLE-05", "Tested",
              f"{L2}::test_parity_l2_peripherals"),
    ParityRow("context", "memory strip on the ACP surface",
              "runtime", "POL-PATH-05", "Tested", f"{L2}::test_parity_l2_memory_strip"),
    ParityRow("context", "deliver_file only on ACP",
              "acp", "POL-ASSEMBLE-07", "Tested", f"{L2}::test_parity_l2_deliver_file"),
    ParityRow("approvals", "level, auto_approve, always_ask",
              "policy", "POL-APPROVE-01", "Tested", f"{L2}::test_parity_l2_approval_policy"),
    ParityRow("approvals", "interaction mode per path",
              "policy", "POL-PATH-22", "Tested", f"{L2}::test_parity_l2_interaction_mode"),
    ParityRow("security", "workspace and command policy",
              "policy", "POL-FS-07", "Tested", f"{L2}::test_parity_l2_security_policy"),
    ParityRow("runtime", "runtime knobs",
              "runtime", "POL-RESOLVE-13", "Tested", f"{L2}::test_parity_l2_runtime_knobs"),
    ParityRow("model", "provider, model, temperature",
              "runtime", "POL-RESOLVE-11", "Tested", f"{L2}::test_parity_l2_model_access"),
    ParityRow("prompt", "system prompt",
              "runtime", "POL-RESOLVE-14", "Tested", f"{L2}::test_parity_l2_system_prompt"),
    ParityRow("delegate", "child contract rebuilt through resolve()",
              "runtime", "POL-DELEG-03", "Tested",
              f"{L2}::test_parity_l2_delegate_rebuilds_contract"),
    ParityRow("delegate", "child transcript isolation and lineage",
              "runtime", "POL-DELEG-05", "Tested",
              f"{L2}::test_parity_l2_delegate_transcript_isolation"),
    ParityRow("delegate", "unresolvable child fails closed",
              "runtime", "POL-DELEG-04", "Tested", f"{L2}::test_parity_l2_delegate_fails_closed"),
    ParityRow("delegate", "child bounded by the parent's caller allow-list and the target's "
              "policy", "policy", "POL-DELEG-11", "Tested",
              f"{L2}::test_parity_l2_delegate_caller_allowlist"),
    ParityRow("engine", "excluded tool never executes",
              "runtime", "POL-ENGINE-04", "Tested",
              f"{L1}::test_parity_l1_excluded_tool_never_executes"),
    ParityRow("engine", "caller allow-list narrows",
              "runtime", "POL-ACCESS-08", "Tested",
              f"{L1}::test_parity_l1_caller_allowlist_narrows"),
    ParityRow("engine", "deny-all blocks built-ins, MCP and skills",
              "runtime", "POL-ACCESS-06", "Tested",
              f"{L1}::test_parity_l1_deny_all_blocks_everything"),
    ParityRow("engine", "no approval, no execution",
              "runtime", "POL-APPROVE-07", "Tested",
              f"{L1}::test_parity_l1_unapproved_tool_never_runs"),
    ParityRow("engine", "max_tool_iterations stops the loop",
              "runtime", "POL-ENGINE-07", "Tested",
              f"{L1}::test_parity_l1_max_tool_iterations_stops_loop"),
    ParityRow("engine", "read-only refuses act tools",
              "runtime", "POL-AUTO-06", "Tested",
              f"{L1}::test_parity_l1_read_only_refuses_act_tools"),
    ParityRow("engine", "runtime-owned approved",
              "runtime", "POL-APPROVE-12", "Tested",
              f"{L1}::test_parity_l1_model_cannot_set_approved"),
]  # fmt: skip
