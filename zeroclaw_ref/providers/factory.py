"""Maps a provider's `kind` to its implementation (config.md CFG-PROV-01, CFG-PROV-05)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from zeroclaw_ref.config.model import ProviderConfig
from zeroclaw_ref.providers.anthropic import AnthropicProvider
from zeroclaw_ref.providers.base import ModelProvider, ProviderError
from zeroclaw_ref.providers.demo import DemoProvider
from zeroclaw_ref.providers.openai_compat import OpenAIProvider
from zeroclaw_ref.providers.scripted import ScriptedProvider

# The network kinds import `requests` only when they first stream (DESIGN §5.4).
_KINDS: dict[str, Callable[[ProviderConfig, Path], ModelProvider]] = {
    "demo": DemoProvider,
    "scripted": ScriptedProvider,
    "openai": OpenAIProvider,
    "anthropic": AnthropicProvider,
}


def create_provider(config: ProviderConfig, config_dir: Path) -> ModelProvider:
    """A new provider instance for one execution (policy.md POL-RESOLVE-12, CFG-PROV-12).

    Raises:
        ProviderError: the kind is unknown; the turn fails with it.
    """
    factory = _KINDS.get(config.kind)
    if factory is None:
        raise ProviderError(f"provider {config.name}: kind {config.kind} is unknown")
    return factory(config, config_dir)
