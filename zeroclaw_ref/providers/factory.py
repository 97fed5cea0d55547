"""Maps a provider's `kind` to its implementation (config.md CFG-PROV-01, CFG-PROV-05)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

from zeroclaw_ref.config.model import ProviderConfig
from zeroclaw_ref.providers.base import ModelProvider, ProviderError

# kind -> (module, class). Design: modules load on first use, so answering `initialize`
# imports neither the network providers nor `requests` (DESIGN §5.4).
_KINDS: dict[str, tuple[str, str]] = {
    "demo": ("zeroclaw_ref.providers.demo", "DemoProvider"),
    "scripted": ("zeroclaw_ref.providers.scripted", "ScriptedProvider"),
    "openai": ("zeroclaw_ref.providers.openai_compat", "OpenAIProvider"),
    "anthropic": ("zeroclaw_ref.providers.anthropic", "AnthropicProvider"),
}


def create_provider(config: ProviderConfig, config_dir: Path) -> ModelProvider:
    """A new provider instance for one execution (policy.md POL-RESOLVE-12, CFG-PROV-12).

    Raises:
        ProviderError: the kind is unknown; the turn fails with it.
    """
    entry = _KINDS.get(config.kind)
    if entry is None:
        raise ProviderError(f"provider {config.name}: kind {config.kind} is unknown")
    module, name = entry
    factory: Callable[[ProviderConfig, Path], ModelProvider] = getattr(
        importlib.import_module(module), name
    )
    return factory(config, config_dir)
