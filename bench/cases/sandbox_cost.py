"""What the OS sandbox costs per command: `run: echo ok` round trip, confined vs not.

Three `acp` agents on the same machine, each with its own configuration directory: `ours` with
the default backend (`auto`, Landlock here), `bwrap` with Bubblewrap, and `unconfined` with
`backend = "none"`. The client is bench/client.py's plain blocking JSON-RPC client, in
another process. Each sample is one `session/prompt` whose demo-model turn runs the shell tool
once (approval not needed: the profile is level `full` with `echo` allowed). The budget is the
issue's goal: at most 10 ms added per command (`max_difference_ms` against `unconfined`).
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

from client import INITIALIZE_PARAMS, AgentSpec, RawClient, agent_specs

NAME = "sandbox_cost"
DESCRIPTION = "session/prompt 'run: echo ok' → result; sandbox auto / bwrap vs none"
CONFIG = """\
schema_version = 1

[providers.demo]
kind = "demo"
model = "demo"

[risk_profiles.default]
level = "full"
allowed_commands = ["echo"]

[runtime_profiles.default]

[agents.default]
model_provider = "demo"
risk_profile = "default"
runtime_profile = "default"

[security.sandbox]
backend = "{backend}"
"""
BACKENDS = {"ours": "auto", "bwrap": "bwrap", "unconfined": "none"}


def missing() -> str | None:
    """Why the case cannot run here, or None."""
    return None if shutil.which("bwrap") else "bwrap is not installed (apt-get install bubblewrap)"


def specs(scratch: Path) -> list[AgentSpec]:
    base = agent_specs(scratch)[0]
    out = []
    for name, backend in BACKENDS.items():
        config_dir = scratch / f"sandbox-{name}"
        config_dir.mkdir(parents=True, exist_ok=True)
        (config_dir / "config.toml").write_text(CONFIG.format(backend=backend))
        env = {**base.env, "ZEROCLAW_CONFIG_DIR": str(config_dir)}
        out.append(AgentSpec(name, (sys.executable, "-m", "zeroclaw_ref", "acp"), env))
    return out


def rounds(quick: bool) -> tuple[int, int]:
    """(warm-up rounds discarded, measured rounds); each round runs every agent once."""
    return (1, 2) if quick else (1, 6)


def sample(spec: AgentSpec, cwd: Path, quick: bool) -> list[float]:
    warm, measured = (5, 20) if quick else (10, 60)
    samples: list[float] = []
    with RawClient(spec, cwd) as client:
        client.request("initialize", INITIALIZE_PARAMS)
        session = client.request("session/new", {"cwd": str(cwd), "mcpServers": []})
        params = {
            "sessionId": session["result"]["sessionId"],
            "prompt": [{"type": "text", "text": "run: echo ok"}],
        }
        for i in range(warm + measured):
            start = time.perf_counter()
            response = client.request("session/prompt", params)
            elapsed = time.perf_counter() - start
            text = str(response["result"].get("content", ""))
            if "ok" not in text:
                raise RuntimeError(f"{spec.name}: the command did not run: {text!r}")
            if i >= warm:
                samples.append(elapsed)
    return samples
