"""The access predicate for MCP, capability, pinned, deferred and skill names
(policy.md §2.1, POL-ACCESS-01..11).

Built-in and peripheral tools use `SecurityPolicy.is_tool_allowed` instead: the two predicates
differ on the `__` rule and must never stand in for each other (POL-ACCESS-01).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ToolAccessPolicy:
    """`allowed_tools` None = unrestricted, () = deny-all; `caller_allowed` None = no list."""

    allowed_tools: tuple[str, ...] | None
    excluded_tools: frozenset[str]
    caller_allowed: frozenset[str] | None

    def is_tool_allowed(self, name: str) -> bool:
        """The decision table of policy.md §2.1, first decision wins; names match exactly."""
        if name in self.excluded_tools:
            return False  # step 1 [POL-ACCESS-05] excluded always wins
        if self.allowed_tools == ():
            return False  # step 2 [POL-ACCESS-06] deny-all is not relaxed by `__`
        if self.allowed_tools and name not in self.allowed_tools and "__" not in name:
            return False  # step 3 [POL-ACCESS-04] plain names must be listed
        # step 4 [POL-ACCESS-08] [POL-ACCESS-09] the caller list is strict; step 5 admits
        return self.caller_allowed is None or name in self.caller_allowed

    @property
    def admits_everything(self) -> bool:
        """[POL-ACCESS-11]"""
        return (
            self.allowed_tools is None and not self.excluded_tools and self.caller_allowed is None
        )
