"""Command line of the oracle: run | lint | coverage | show | list | record | serve.

The commands are those of transcripts.md §9, §11, §12, §13 and §14. Exit statuses
follow [TX-RUN-07], [TX-LINT-02], [TX-COVER-05], [TX-RECORD-04] and [TX-SERVE-01];
an invalid command line or unusable input exits 2 with one ``error:`` line, and a
closed standard output (``list | head``) ends any command quietly ([TX-CLI-01]).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from .core.options import RunOptions, default_agent
from .core.profiles import HOOKS, PROFILES
from .core.suite import (
    SelectionError,
    apply_expected_failures,
    contract_version,
    discover,
    read_expected_failures,
    run_many,
    select,
)
from .core.transcript import scenario_id
from .core.verdicts import (
    ERROR,
    FAIL,
    RunOutcome,
    ScenarioResult,
    json_document,
    junit_document,
    progress_line,
    summary_lines,
)
from .locate import fixtures_for, resolve_selection
from .serve.play import DEFAULT_IDLE_TIMEOUT, ServeOptions, serve_command
from .serve.relay import relay
from .serve.suite import serve_suite
from .tools.coverage import run_coverage
from .tools.lint import run_lint
from .tools.record import run_record
from .tools.show import list_scenarios, show_scenario

REFERENCE_NAME = "zeroclaw_ref"
_Shown = Callable[[int, ScenarioResult], None]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(2)


def _env_pair(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name, value


def _split(values: Sequence[str], allowed: Sequence[str], what: str) -> list[str]:
    """Repeatable or comma-separated names, checked against ``allowed`` ("all" means all)."""
    names: list[str] = []
    for value in values:
        for name in (n.strip() for n in value.split(",")):
            if name == "all":
                names += [a for a in allowed if a not in names]
            elif name == "none" and what == "hook":
                continue
            elif name not in allowed:
                raise SelectionError(f"unknown {what} {name!r} (known: {', '.join(allowed)})")
            elif name not in names:
                names.append(name)
    return names


def default_jobs() -> int:
    """Two scenarios per CPU: they spend most of their time waiting on the agent."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return 2 * cpus


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m zeroclaw_ref.conformance", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = sub.add_parser("run", help="run scenarios against an agent")
    run.add_argument("--agent", help="the agent's command (default: the reference)")
    run.add_argument("--agent-name", help="selects fixtures/expected-failures/NAME.txt")
    run.add_argument("--fixtures", type=Path)
    run.add_argument("--profile", action="append", default=[], help=", ".join(PROFILES))
    run.add_argument("--hooks", action="append", default=[], help="config,model,workspace|all")
    run.add_argument("--levels", default="required,optional")
    run.add_argument("--tag", action="append", default=[])
    run.add_argument("--skip-tag", action="append", default=[])
    run.add_argument("--expected-failures", type=Path)
    run.add_argument("--strict", action="store_true")
    run.add_argument("--timeout-scale", type=float, default=1.0)
    run.add_argument("--jobs", type=int, default=default_jobs())
    run.add_argument("--no-barrier", action="store_true", help="end acp scenarios by waiting")
    run.add_argument("--env", type=_env_pair, action="append", default=[])
    run.add_argument("--pass-env", action="append", default=[])
    run.add_argument("--json", type=Path)
    run.add_argument("--junit", type=Path)
    run.add_argument("--keep", action="store_true")
    run.add_argument("paths", nargs="*", type=Path)
    lint = sub.add_parser("lint", help="check scenarios without running them")
    lint.add_argument("--fixtures", type=Path)
    lint.add_argument("--spec", type=Path)
    lint.add_argument("paths", nargs="*", type=Path)
    cov = sub.add_parser("coverage", help="requirement coverage of the corpus")
    cov.add_argument("--fixtures", type=Path)
    cov.add_argument("--spec", type=Path)
    cov.add_argument("--json", type=Path)
    show = sub.add_parser("show", help="print a scenario for humans")
    show.add_argument("--fixtures", type=Path)
    show.add_argument("--json", action="store_true", help="the client's steps, as data")
    show.add_argument("scenario")
    lst = sub.add_parser("list", help="list scenario ids with level, profile and tags")
    lst.add_argument("--fixtures", type=Path)
    lst.add_argument("--servable", action="store_true")
    lst.add_argument("--profile", action="append", default=[])
    lst.add_argument("--json", action="store_true", help="a JSON array of the ids")
    lst.add_argument("paths", nargs="*", type=Path)
    rec = sub.add_parser("record", help="draft expected frames from an agent, for review")
    rec.add_argument("--agent", default=default_agent())
    rec.add_argument("--fixtures", type=Path)
    rec.add_argument("--write", action="store_true")
    rec.add_argument("--timeout-scale", type=float, default=1.0)
    rec.add_argument("paths", nargs="*", type=Path)
    srv = sub.add_parser("serve", help="play the agent of one scenario to judge an ACP client")
    srv.add_argument("--fixtures", type=Path)
    srv.add_argument("--report", type=Path)
    srv.add_argument("--allow-tail", action="store_true")
    srv.add_argument("--idle-timeout", type=float, default=DEFAULT_IDLE_TIMEOUT)
    srv.add_argument("--suite", action="store_true", help="play a selection, one per connection")
    srv.add_argument("--connect", metavar="SOCKET", help="relay stdio to a serve --suite")
    srv.add_argument("--socket", type=Path, help="where serve --suite listens")
    srv.add_argument("--profile", action="append", default=[])
    srv.add_argument("--json", type=Path)
    srv.add_argument("--junit", type=Path)
    srv.add_argument("scenario", nargs="*")
    return parser


def choose_profiles(args: argparse.Namespace, hooks: list[str]) -> tuple[list[str], str]:
    """[TX-PROFILE-03] the profiles to run, and why."""
    if args.profile:
        return _split(args.profile, PROFILES, "profile"), "as asked"
    if args.agent is None:
        return list(PROFILES), "all: the reference agent honours every hook"
    if hooks:
        return list(PROFILES), "all: the agent honours hooks (--hooks)"
    return ["acp"], "the default for --agent without --hooks"


def choose_hooks(args: argparse.Namespace) -> list[str]:
    if args.hooks:
        return _split(args.hooks, HOOKS, "hook")
    return list(HOOKS) if args.agent is None else []


def expected_failures_file(args: argparse.Namespace, fixtures: Path) -> Path | None:
    """``--expected-failures``, else fixtures/expected-failures/<agent name>.txt when present."""
    if args.expected_failures is not None:
        return Path(args.expected_failures)
    name = args.agent_name or (REFERENCE_NAME if args.agent is None else None)
    if name is None:
        return None
    path = fixtures / "expected-failures" / f"{name}.txt"
    return path if path.is_file() else None


def cmd_run(args: argparse.Namespace) -> int:
    if args.timeout_scale <= 0 or args.jobs < 1:
        raise SelectionError("--timeout-scale must be > 0 and --jobs >= 1")
    fixtures = fixtures_for(args.paths, args.fixtures)
    hooks = choose_hooks(args)
    profiles, why = choose_profiles(args, hooks)
    xfail_file = expected_failures_file(args, fixtures)
    listed = read_expected_failures(xfail_file) if xfail_file is not None else {}
    paths = discover(fixtures, resolve_selection(args.paths, fixtures))
    levels = [lvl.strip() for lvl in args.levels.split(",") if lvl.strip()]
    chosen = select(paths, levels, args.tag, args.skip_tag, profiles)
    agent = default_agent() if args.agent is None else args.agent
    options = RunOptions(
        agent=agent,
        timeout_scale=args.timeout_scale,
        env=tuple(args.env),
        pass_env=tuple(args.pass_env),
        keep=args.keep,
        hooks=frozenset(hooks),
        barrier=not args.no_barrier,
    )
    try:
        words = shlex.split(agent)
    except ValueError as exc:
        raise SelectionError(f"--agent: {exc}") from None
    if not words:
        raise SelectionError("--agent: empty command")
    print(f"agent: {agent}")
    relative = [w for w in words if "/" in w and not w.startswith("/") and Path(w).exists()]
    if relative:  # the agent starts in each scenario's own workspace ([TX-HOST-01])
        sys.stderr.write(
            f"warning: the agent runs in a scratch directory; {relative[0]} is relative\n"
        )
    print(f"profiles: {', '.join(profiles)} ({why}); hooks: {', '.join(hooks) or 'none'}")
    left_out = len(select(paths, levels, args.tag, args.skip_tag)) - len(chosen)
    print(
        f"running {len(chosen)} scenarios, {args.jobs} at a time"
        + (f"; {left_out} of other profiles left out" if left_out else "")
        + (f"; expected failures: {xfail_file}" if xfail_file is not None else ""),
        flush=True,
    )

    def shown(done: int, result: ScenarioResult) -> None:
        print(progress_line(done, len(chosen), result))
        if result.status in (FAIL, ERROR) and result.report:
            print("    " + result.report.replace("\n", "\n    "))
        sys.stdout.flush()

    results = run_many(chosen, fixtures, options, args.jobs, _marked(listed, shown))
    corpus = {sid for p in discover(fixtures) if (sid := scenario_id(p, fixtures))}
    results, stale = apply_expected_failures(results, listed, corpus)
    outcome = RunOutcome(results, stale, args.strict)
    contract = contract_version(fixtures)
    print("\n".join(summary_lines(contract, outcome)))
    documents = ((args.json, json_document), (args.junit, junit_document))
    for target, render in documents:
        if target is None:
            continue
        try:
            target.write_text(render(contract, agent, outcome), encoding="utf-8")
        except OSError as exc:
            raise SelectionError(f"{target}: cannot write: {exc.strerror}") from None
    return outcome.exit_status()


def _marked(listed: dict[str, str], then: _Shown) -> _Shown:
    """Print a listed scenario with the outcome the ratchet gives it, as it finishes."""

    def show(done: int, result: ScenarioResult) -> None:
        marked, _ = apply_expected_failures([result], listed, set(listed))
        then(done, marked[0])

    return show


def cmd_serve(args: argparse.Namespace, fixtures: Path) -> int:
    """serve SCENARIO | serve --suite [SELECTION] | serve --connect SOCKET ([ZC-SERVE-09])."""
    if args.connect is not None:
        if args.scenario or args.suite:
            raise SelectionError("serve --connect takes no scenario")
        return relay(args.connect)
    served = ServeOptions(args.idle_timeout, args.allow_tail, args.report)
    if args.suite:
        if not args.idle_timeout > 0:
            raise SelectionError("--idle-timeout must be > 0")
        profiles = _split(args.profile, PROFILES, "profile") if args.profile else None
        selection = resolve_selection([Path(s) for s in args.scenario], fixtures)
        return serve_suite(
            fixtures, selection, profiles, served, args.socket, args.json, args.junit
        )
    if len(args.scenario) != 1:
        raise SelectionError("serve takes one scenario (or --suite SELECTION)")
    return serve_command(args.scenario[0], fixtures, served)


def dispatch(args: argparse.Namespace) -> int:
    if args.command == "run":
        return cmd_run(args)
    fixtures = fixtures_for(getattr(args, "paths", []), args.fixtures)
    if args.command == "lint":
        return run_lint(fixtures, resolve_selection(args.paths, fixtures), args.spec)
    if args.command == "coverage":
        return run_coverage(fixtures, args.spec, args.json)
    if args.command == "show":
        return show_scenario(fixtures, args.scenario, args.json)
    if args.command == "record":
        options = RunOptions(agent=args.agent, timeout_scale=args.timeout_scale)
        return run_record(fixtures, resolve_selection(args.paths, fixtures), options, args.write)
    if args.command == "serve":
        return cmd_serve(args, fixtures)
    profiles = _split(args.profile, PROFILES, "profile") if args.profile else None
    selection = resolve_selection(args.paths, fixtures)
    return list_scenarios(fixtures, args.servable, profiles, selection, args.json)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        status = dispatch(args)
        sys.stdout.flush()
        return status
    except SelectionError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return 130
    except BrokenPipeError:
        # [TX-CLI-01] the reader went away (``list | head``): stop quietly, as a pipe should
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
