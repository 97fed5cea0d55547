"""`ResolvedAgentExecution`: the sealed, frozen result of `resolve()` (policy.md §6.1, §6.3).

Only `engine/resolve.py` mints one, inside `_minting()`; a construction anywhere else, including
`dataclasses.replace`, `copy` and `pickle`, raises TypeError (POL-RESOLVE-01). Every minted
instance is remembered in a weak set the engine checks (POL-RESOLVE-02).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from zeroclaw_ref.config.model import ToolFilterGroup
from zeroclaw_ref.engine.registry import ScopedAssembly, ScopedToolRegistry
from zeroclaw_ref.policy.approvals import ApprovalManager
from zeroclaw_ref.policy.security import SecurityPolicy
from zeroclaw_ref.providers.base import ModelProvider

_SEAL_MESSAGE = "ResolvedAgentExecution can only be created by resolve()"
_state = threading.local()
_minted: weakref.WeakSet[ResolvedAgentExecution] = weakref.WeakSet()
_minted_lock = threading.Lock()


@contextmanager
def _minting() -> Iterator[None]:
    """Open the construction window on this thread; used only by `resolve()`."""
    _state.open = True
    try:
        yield
    finally:
        _state.open = False


def is_minted(value: object) -> bool:
    """[POL-RESOLVE-02] True only for executions `resolve()` created."""
    with _minted_lock:
        return isinstance(value, ResolvedAgentExecution) and value in _minted


@dataclass(frozen=True, slots=True)
class ResolvedModelAccess:
    provider_name: str
    provider_kind: str
    model: str
    temperature: float
    provider: ModelProvider = field(repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class ResolvedIo:
    tools: ScopedToolRegistry
    approval: ApprovalManager
    interaction: str
    system_prompt: str
    deferred_section: str = ""
    pinned_section: str = ""


@dataclass(frozen=True, slots=True)
class ResolvedRuntimeKnobs:
    max_tool_iterations: int
    max_history_messages: int
    max_tool_result_chars: int
    parallel_tools: bool
    shell_timeout_secs: int
    max_delegation_depth: int
    excluded_tools: frozenset[str]
    tool_filter_groups: tuple[ToolFilterGroup, ...]


@dataclass(frozen=True, slots=True)
class ResolvedMcpScope:
    connected: bool
    granted_servers: tuple[str, ...]
    mode: str  # none | eager | deferred | listing


@dataclass(frozen=True, slots=True)
class ResolvedMemory:
    enabled: bool
    store_path: Path | None


@dataclass(frozen=True, slots=True)
class ResolvedLineage:
    executing_agent: str
    parent_agent: str | None
    parent_run_id: str | None
    depth: int
    surface: str


@dataclass(frozen=True, slots=True, eq=False, weakref_slot=True)
class ResolvedAgentExecution:
    """Everything one agent turn may use, resolved once (policy.md §6.3)."""

    agent_alias: str
    path: str
    assembly: ScopedAssembly
    model: ResolvedModelAccess
    io: ResolvedIo
    knobs: ResolvedRuntimeKnobs
    security: SecurityPolicy
    mcp: ResolvedMcpScope
    skills: tuple[str, ...]
    memory: ResolvedMemory
    lineage: ResolvedLineage

    def __post_init__(self) -> None:
        if not getattr(_state, "open", False):
            raise TypeError(_SEAL_MESSAGE)
        with _minted_lock:
            _minted.add(self)

    def __copy__(self) -> NoReturn:
        raise TypeError(_SEAL_MESSAGE)

    def __deepcopy__(self, memo: object) -> NoReturn:
        raise TypeError(_SEAL_MESSAGE)

    def __reduce__(self) -> NoReturn:
        raise TypeError(_SEAL_MESSAGE)

    def close(self) -> None:
        """[POL-RESOLVE-15] close MCP connections opened for this execution (idempotent).

        No connection is opened by this build yet, so there is nothing to release.
        """
