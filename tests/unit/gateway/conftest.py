"""An in-process gateway on an ephemeral loopback port, and a demo configuration for it."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from zeroclaw_ref.cli.agent import choose_agent
from zeroclaw_ref.config.store import ConfigStore
from zeroclaw_ref.core.clock import SystemClock
from zeroclaw_ref.core.ids import RandomIds
from zeroclaw_ref.gateway.request import GatewayDeps
from zeroclaw_ref.gateway.server import Gateway

TOKEN = "zc_test_token"
MAX_MESSAGE = 64 * 1024

AGENT = """
[agents.{alias}]
model_provider = "demo"
risk_profile = "p"
runtime_profile = "r"
{extra}
"""


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def demo_config(
    agents: tuple[str, ...] = ("a",),
    tokens: tuple[str, ...] = (TOKEN,),
    gateway: str = "",
    more: str = "",
) -> str:
    listed = ", ".join(f'"{digest(t)}"' for t in tokens)
    text = f"""
[providers.demo]
kind = "demo"
model = "demo"
[risk_profiles.p]
[runtime_profiles.r]
[scheduler]
enabled = false
[gateway]
paired_tokens = [{listed}]
{gateway}
{more}
"""
    return text + "".join(AGENT.format(alias=a, extra="") for a in agents)


@dataclass
class Running:
    gateway: Gateway
    config_dir: Path
    announced: list[str] = field(default_factory=list)

    @property
    def port(self) -> int:
        return self.gateway.address[1]

    def url(self, path: str = "/acp") -> str:
        return f"ws://127.0.0.1:{self.port}{path}"

    def http(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


@pytest.fixture
def start_gateway(tmp_path: Path) -> Iterator[object]:
    """Call with a config.toml text; returns a `Running` gateway, closed after the test."""
    started: list[Gateway] = []

    def start(text: str | None = None) -> Running:
        config_dir = tmp_path / "cfg"
        config_dir.mkdir(exist_ok=True)
        (config_dir / "config.toml").write_text(demo_config() if text is None else text)
        store = ConfigStore(config_dir, config_dir / "data", {})
        running_lines: list[str] = []
        deps = GatewayDeps(
            store, RandomIds(), SystemClock(), choose_agent, running_lines.append, MAX_MESSAGE
        )
        gateway = Gateway(deps, "127.0.0.1", 0)
        gateway.start()
        started.append(gateway)
        return Running(gateway, config_dir, running_lines)

    yield start
    for gateway in started:
        gateway.close()
