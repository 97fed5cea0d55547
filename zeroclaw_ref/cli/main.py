"""`zeroclaw_ref` / `python -m zeroclaw_ref`: the subcommand table.

The global `--config-dir DIR` is accepted before or after the subcommand (CFG-DIR-01,
ACP-TR-04). Configuration errors print `ERROR: ` lines and exit 1 before anything else
happens (CFG-LOAD-09, ACP-TR-05); usage errors exit 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import sys
from collections.abc import Callable, Mapping

from zeroclaw_ref import __version__
from zeroclaw_ref.cli.config_args import add_config_parser
from zeroclaw_ref.config.model import ConfigError, ConfigSnapshot
from zeroclaw_ref.core import log as logsetup
from zeroclaw_ref.core.clock import Clock, FixedClock, SystemClock
from zeroclaw_ref.core.ids import IdFactory, RandomIds, SequentialIds
from zeroclaw_ref.core.limits import DEFAULT_REAPER_INTERVAL_SECS

log = logging.getLogger(__name__)

# [CFG-ACP-01] ranges of the command-line overrides (ACP-CFG-09)
_ACP_RANGES = {"max_sessions": (1, 1000), "session_timeout_secs": (1, 86400)}


class StartupError(Exception):
    """An error that prints `ERROR: <line>` lines and exits 1."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="zeroclaw_ref", description=__doc__.splitlines()[0])
    parser.add_argument("--config-dir", dest="config_dir", metavar="DIR")
    parser.add_argument("--version", action="version", version=f"zeroclaw_ref {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    acp = commands.add_parser("acp", help="serve ACP over stdio (JSON-RPC, one message a line)")
    acp.add_argument("--config-dir", dest="sub_config_dir", metavar="DIR")
    acp.add_argument("--max-sessions", metavar="N")
    acp.add_argument("--session-timeout", metavar="SECS")
    acp.add_argument("--reaper-interval", metavar="SECS", default=str(DEFAULT_REAPER_INTERVAL_SECS))
    agent = commands.add_parser("agent", help="run agent turns from the command line (cli-run)")
    agent.add_argument("--config-dir", dest="sub_config_dir", metavar="DIR")
    agent.add_argument("--agent", dest="agent_alias", metavar="ALIAS")
    agent.add_argument("-m", "--message", metavar="TEXT")
    agent.add_argument("--non-interactive", action="store_true")
    # [ACP-TR-04] or exactly one of `sessions list` / `sessions delete <id>` (ACP-STORE-15/16)
    acp.add_argument("sessions", nargs="*", metavar="sessions list | sessions delete ID")
    cron = commands.add_parser("cron", help="list scheduled jobs, run the due ones, or run daemon")
    cron.add_argument("--config-dir", dest="sub_config_dir", metavar="DIR")
    cron.add_argument("action", choices=("list", "run-due", "daemon"))
    cron.add_argument("--agent", metavar="ALIAS")
    add_config_parser(commands)
    from zeroclaw_ref.cli.mcp_cmd import add_mcp_parser

    add_mcp_parser(commands)
    gateway = commands.add_parser("gateway", help="serve /acp over WebSocket and the HTTP API")
    gateway.add_argument("--config-dir", dest="sub_config_dir", metavar="DIR")
    gateway.add_argument("--host", metavar="H")
    gateway.add_argument("--port", metavar="P", type=int)
    # [ACP-BR-02] parsed by cli/gateway_cmd.py (its own error texts); listed here for --help.
    commands.add_parser("acp-bridge", help="relay ACP between stdio and the gateway's /acp")
    conf = commands.add_parser(
        "mcp-conformance-client", help="the MCP conformance suite's client (mcp.md §15.1)"
    )
    conf.add_argument("url", help="the mock server URL the harness appends")
    return parser


def _load(config_dir_arg: str | None, environ: Mapping[str, str]) -> ConfigSnapshot:
    from zeroclaw_ref.config.dirs import resolve_dirs
    from zeroclaw_ref.config.load import load_config

    config_dir, data_dir = resolve_dirs(config_dir_arg, environ)
    snapshot = load_config(config_dir, data_dir, environ)
    for warning in snapshot.warnings:
        print(f"warning: {warning}", file=sys.stderr)  # [CFG-LOAD-08]
    return snapshot


def _int_option(name: str, raw: str | None, key: str) -> int | None:
    """[ACP-CFG-09] a decimal integer within the config.md range, else a startup error."""
    if raw is None:
        return None
    low, high = _ACP_RANGES[key]
    if not raw.isascii() or not raw.isdigit() or not low <= int(raw) <= high:
        raise StartupError([f"invalid value for {name}: {raw}"])
    return int(raw)


def _determinism(environ: Mapping[str, str]) -> tuple[Clock, IdFactory]:
    """DESIGN §8: ZEROCLAW_REF_DETERMINISTIC=1 fixes the clock and numbers the ids."""
    if environ.get("ZEROCLAW_REF_DETERMINISTIC") == "1":
        return FixedClock(), SequentialIds()
    return SystemClock(), RandomIds()


def _run_acp(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    if args.sessions:
        return _run_acp_sessions(args, environ)
    max_sessions = _int_option("--max-sessions", args.max_sessions, "max_sessions")
    timeout = _int_option("--session-timeout", args.session_timeout, "session_timeout_secs")
    try:
        interval = float(args.reaper_interval)
        if not interval > 0:
            raise ValueError
    except ValueError:
        raise StartupError(
            [f"invalid value for --reaper-interval: {args.reaper_interval}"]
        ) from None
    from zeroclaw_ref.config.dirs import resolve_dirs
    from zeroclaw_ref.config.store import ConfigStore

    # [CFG-LOAD-10] one store for the life of the process; the first load keeps the start-up
    # contract (warnings printed, errors raised as ERROR lines and exit 1, CFG-LOAD-09).
    store = ConfigStore(*resolve_dirs(args.sub_config_dir or args.config_dir, environ), environ)
    started = store.snapshot()
    for warning in started.warnings:
        print(f"warning: {warning}", file=sys.stderr)  # [CFG-LOAD-08]

    def overridden(config: ConfigSnapshot) -> ConfigSnapshot:
        """[ACP-CFG-08] command line beats environment beats file beats default, on every
        snapshot the store hands out, reloaded ones included."""
        acp = config.acp
        if max_sessions is not None:
            acp = dataclasses.replace(acp, max_sessions=max_sessions)
        if timeout is not None:
            acp = dataclasses.replace(acp, session_timeout_secs=timeout)
        return dataclasses.replace(config, acp=acp)

    from zeroclaw_ref.acp.stdio import StdioOptions, serve_stdio
    from zeroclaw_ref.core.affinity import pin_wanted

    clock, ids = _determinism(environ)
    opts = StdioOptions(
        reaper_interval=interval,
        pin_cpu=pin_wanted(environ),
        config_source=lambda: overridden(store.snapshot()),
    )
    return serve_stdio(overridden(started), ids, clock, opts)


def _run_acp_sessions(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """`acp sessions list` and `acp sessions delete <id>` (ACP-STORE-15..17)."""
    words = list(args.sessions)
    ok = words == ["sessions", "list"] or (len(words) == 3 and words[:2] == ["sessions", "delete"])
    if not ok or args.max_sessions or args.session_timeout:
        _parser().print_usage(sys.stderr)
        print("zeroclaw_ref acp: expected `sessions list` or `sessions delete ID`", file=sys.stderr)
        return 2  # [ACP-TR-04]
    from zeroclaw_ref.cli.acp_sessions import run_sessions
    from zeroclaw_ref.config.dirs import resolve_dirs

    _, data_dir = resolve_dirs(args.sub_config_dir or args.config_dir, environ)
    return run_sessions(words[1:], data_dir, sys.stdout, sys.stderr)


def _run_agent(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """[POL-PATH-14..16] the cli-run front door."""
    config = _load(args.sub_config_dir or args.config_dir, environ)
    from zeroclaw_ref.cli.agent import run_agent

    return run_agent(config, args.agent_alias, args.message, args.non_interactive)


def _run_cron(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """`cron list | run-due | daemon` (POL-PATH-18)."""
    if args.agent is not None and args.action == "daemon":
        _parser().print_usage(sys.stderr)
        print("zeroclaw_ref cron: --agent applies to list and run-due only", file=sys.stderr)
        return 2
    config = _load(args.sub_config_dir or args.config_dir, environ)
    from zeroclaw_ref.cli.cron_cmd import run_cron
    from zeroclaw_ref.config.store import ConfigStore

    clock, ids = _determinism(environ)
    # [CFG-LOAD-10] the daemon is a long-running process: each tick takes the current snapshot.
    store = ConfigStore(config.config_dir, config.data_dir, environ)
    return run_cron(
        args.action, args.agent, config, clock, ids, sys.stdout, sys.stderr, store.snapshot
    )


def _run_config(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """`config get | set | unset | list | validate | rename` (config.md §12, §13.2)."""
    from zeroclaw_ref.cli.config_cmd import run_config
    from zeroclaw_ref.cli.streams import Streams

    return run_config(args, environ, Streams(sys.stdin, sys.stdout, sys.stderr))


def _run_mcp(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """`mcp tools [--agent ALIAS]`: the gateway-tools listing for one agent."""
    config = _load(args.sub_config_dir or args.config_dir, environ)
    from zeroclaw_ref.cli.mcp_cmd import run_mcp_tools

    return run_mcp_tools(config, args.agent_alias, args.json, sys.stdout, sys.stderr)


def _run_gateway(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """[ACP-GW-01] the gateway: WebSocket /acp, /api/chat, /api/tools and pairing."""
    from zeroclaw_ref.cli.gateway_cmd import run_gateway

    clock, ids = _determinism(environ)
    config_dir = args.sub_config_dir or args.config_dir
    return run_gateway(config_dir, args.host, args.port, environ, clock, ids)


def _run_mcp_conformance(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """[MCP-CONF-01] the conformance driver; no configuration is loaded."""
    from zeroclaw_ref.cli.mcp_conformance import run_conformance_client

    return run_conformance_client(args.url, environ, sys.stderr)


def _bridge_argv(argv: list[str]) -> list[str] | None:
    """The bridge's own arguments when the command is `acp-bridge` (a global `--config-dir`
    before it included), else None."""
    if argv[:1] == ["acp-bridge"]:
        return argv[1:]
    if len(argv) >= 3 and argv[0] == "--config-dir" and argv[2] == "acp-bridge":
        return argv[:2] + argv[3:]
    if len(argv) >= 2 and argv[0].startswith("--config-dir=") and argv[1] == "acp-bridge":
        return argv[:1] + argv[2:]
    return None


COMMANDS: dict[str, Callable[[argparse.Namespace, Mapping[str, str]], int]] = {
    "acp": _run_acp,
    "agent": _run_agent,
    "cron": _run_cron,
    "config": _run_config,
    "gateway": _run_gateway,
    "mcp": _run_mcp,
    "mcp-conformance-client": _run_mcp_conformance,
}


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and run one subcommand; returns the exit status."""
    logsetup.configure()
    environ = dict(os.environ)
    bridge_args = _bridge_argv(sys.argv[1:] if argv is None else argv)
    if bridge_args is not None:
        from zeroclaw_ref.cli.gateway_cmd import run_bridge_cli

        return run_bridge_cli(bridge_args, environ)  # [ACP-BR-01]
    args = _parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args, environ)
    except (ConfigError, StartupError) as exc:
        for line in exc.lines:
            print(f"ERROR: {line}", file=sys.stderr)
        return 1
