"""Options that apply to every scenario of a run, and the reference agent's command."""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass, field

from .profiles import HOOKS


def default_agent() -> str:
    """[TX-RUN-01] the reference agent under this interpreter."""
    return f"{shlex.quote(sys.executable)} -m zeroclaw_ref acp"


@dataclass(frozen=True, slots=True)
class RunOptions:
    """Runner options that apply to every scenario of a run."""

    agent: str = field(default_factory=default_agent)
    timeout_scale: float = 1.0
    env: tuple[tuple[str, str], ...] = ()
    pass_env: tuple[str, ...] = ()
    keep: bool = False
    # [TX-NEEDS-04] the host hooks the agent honours; the reference honours them all
    hooks: frozenset[str] = frozenset(HOOKS)
    # [TX-BARRIER-01] end settled acp-profile scenarios with the quiescence barrier
    barrier: bool = True


class NotApplicable(Exception):
    """The agent lacks something the scenario needs ([TX-NEEDS-04])."""

    def __init__(self, lacking: list[str]) -> None:
        super().__init__(", ".join(lacking))
        self.lacking = lacking
