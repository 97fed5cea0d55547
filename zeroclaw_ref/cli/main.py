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
    config = _load(args.sub_config_dir or args.config_dir, environ)
    acp = config.acp
    # [ACP-CFG-08] command line beats environment beats file beats default.
    if max_sessions is not None:
        acp = dataclasses.replace(acp, max_sessions=max_sessions)
    if timeout is not None:
        acp = dataclasses.replace(acp, session_timeout_secs=timeout)
    config = dataclasses.replace(config, acp=acp)
    from zeroclaw_ref.acp.stdio import StdioOptions, serve_stdio

    clock, ids = _determinism(environ)
    return serve_stdio(config, ids, clock, StdioOptions(reaper_interval=interval))


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

    clock, ids = _determinism(environ)
    return run_cron(args.action, args.agent, config, clock, ids, sys.stdout, sys.stderr)


COMMANDS: dict[str, Callable[[argparse.Namespace, Mapping[str, str]], int]] = {
    "acp": _run_acp,
    "agent": _run_agent,
    "cron": _run_cron,
}


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and run one subcommand; returns the exit status."""
    logsetup.configure()
    args = _parser().parse_args(argv)
    environ = dict(os.environ)
    try:
        return COMMANDS[args.command](args, environ)
    except (ConfigError, StartupError) as exc:
        for line in exc.lines:
            print(f"ERROR: {line}", file=sys.stderr)
        return 1
