"""Maps a provider's `kind` to its implementation (config.md CFG-PROV-01, CFG-PROV-05)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from zeroclaw_ref.config.model import ProviderConfig
from zeroclaw_ref.providers.base import ModelProvider, ProviderError
from zeroclaw_ref.providers.demo import DemoProvider
from zeroclaw_ref.providers.scripted import ScriptedProvider

_KINDS: dict[str, Callable[[ProviderConfig, Path], ModelProvider]] = {
    "demo": DemoProvider,
    "scripted": ScriptedProvider,
}

# Design: the network kinds are added by a later change; until then they fail when used.
_UNAVAILABLE_KINDS = ("openai", "anthropic")


def create_provider(config: ProviderConfig, config_dir: Path) -> ModelProvider:
    """A new provider instance for one execution (policy.md POL-RESOLVE-12, CFG-PROV-12).

    Raises:
        ProviderError: the kind has no implementation in this build; the turn fails with it.
    """
    factory = _KINDS.get(config.kind)
    if factory is None:
        if config.kind in _UNAVAILABLE_KINDS:
            detail = "is not available in this build"
        else:
            detail = "is unknown"
        raise ProviderError(f"provider {config.name}: kind {config.kind} {detail}")
    return factory(config, config_dir)
