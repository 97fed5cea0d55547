"""`zeroclaw_ref gateway` and `zeroclaw_ref acp-bridge` / `zeroclaw-acp-bridge` (acp.md §13).

The command line and the environment are read here (DESIGN §14); the gateway and the bridge
receive plain values.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Mapping
from pathlib import Path
from types import FrameType

from zeroclaw_ref.cli.agent import choose_agent
from zeroclaw_ref.config.dirs import resolve_dirs
from zeroclaw_ref.config.store import ConfigStore
from zeroclaw_ref.core.clock import Clock
from zeroclaw_ref.core.ids import IdFactory

BRIDGE_USAGE = "usage: zeroclaw-acp-bridge [--config-dir DIR] [--pair-code CODE]"
_VALUE_OPTIONS = {"--config-dir": "config_dir", "--pair-code": "pair_code"}


class _Stop(Exception):
    """SIGTERM or SIGINT asked the gateway to stop."""


_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def _stop(signum: int, frame: FrameType | None) -> None:
    # Once only: a second signal must not raise again while the first one unwinds.
    for stop_signal in _STOP_SIGNALS:
        signal.signal(stop_signal, signal.SIG_IGN)
    raise _Stop


def _announce(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def run_gateway(
    config_dir_arg: str | None,
    host: str | None,
    port: int | None,
    environ: Mapping[str, str],
    clock: Clock,
    ids: IdFactory,
) -> int:
    """[ACP-GW-01] bind, print `listening host:port`, serve until SIGTERM or SIGINT.

    Raises:
        ConfigError: the configuration does not load at start-up; the caller prints it.
    """
    from zeroclaw_ref.gateway.request import GatewayDeps
    from zeroclaw_ref.gateway.server import Gateway

    config_dir, data_dir = resolve_dirs(config_dir_arg, environ)
    store = ConfigStore(config_dir, data_dir, environ)
    for warning in store.snapshot().warnings:
        print(f"warning: {warning}", file=sys.stderr)  # [CFG-LOAD-08]
    deps = GatewayDeps(store, ids, clock, choose_agent, _announce)
    try:
        gateway = Gateway(deps, host, port)
    except OSError as exc:
        shown = host or store.snapshot().gateway.host
        print(f"ERROR: cannot listen on {shown}:{port}: {exc}", file=sys.stderr)
        return 1
    bound_host, bound_port = gateway.address
    # The handler is in place before `listening` announces readiness: a supervisor may stop
    # the gateway as soon as it reads that line, and must get a clean exit, not -15.
    for signum in _STOP_SIGNALS:
        signal.signal(signum, _stop)
    with contextlib.suppress(_Stop):
        print(f"listening {bound_host}:{bound_port}", flush=True)
        gateway.serve_forever()
    for signum in _STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    gateway.close()  # also when the signal came before the loop began (see Gateway.close)
    return 0


def parse_bridge_args(argv: list[str]) -> dict[str, str] | str:
    """[ACP-BR-02] `--config-dir DIR`, `--config-dir=DIR`, `--pair-code[=]CODE`; returns the
    values, or the error line to print."""
    values: dict[str, str] = {}
    index = 0
    while index < len(argv):
        word = argv[index]
        name, eq, inline = word.partition("=")
        if name not in _VALUE_OPTIONS:
            return f"unrecognized argument: {word}"
        if eq:
            value = inline
        elif index + 1 < len(argv) and not argv[index + 1].startswith("--"):
            index += 1
            value = argv[index]
        else:
            value = ""
        if not value:
            kind = "a path value" if name == "--config-dir" else "a value"
            return f"{name} requires {kind}"
        values[_VALUE_OPTIONS[name]] = value
        index += 1
    return values


def run_bridge_cli(argv: list[str], environ: Mapping[str, str]) -> int:
    """The bridge's front door; the status of ACP-BR-02..10."""
    from zeroclaw_ref.gateway.bridge import BridgeOptions, run_bridge

    parsed = parse_bridge_args(argv)
    if isinstance(parsed, str):
        print(parsed, file=sys.stderr)
        if parsed.startswith("unrecognized"):
            print(BRIDGE_USAGE, file=sys.stderr)
            return 2
        return 1  # [ACP-BR-02]
    config_dir, _ = resolve_dirs(parsed.get("config_dir"), environ)  # [ACP-CFG-01]
    opts = BridgeOptions(
        config_dir=Path(config_dir),
        env_token=environ.get("ZEROCLAW_ACP_BRIDGE_TOKEN"),
        env_pair_code=environ.get("ZEROCLAW_ACP_PAIRING_CODE"),
        pair_code=parsed.get("pair_code"),
    )
    return run_bridge(opts, sys.stdout.buffer, sys.stderr)


def bridge_main() -> int:
    """The `zeroclaw-acp-bridge` console script."""
    import os

    from zeroclaw_ref.core import log as logsetup

    logsetup.configure()
    return run_bridge_cli(sys.argv[1:], dict(os.environ))
