"""Command line of the oracle: run | lint | coverage | show | list | record | serve.

The commands are those of transcripts.md §9, §11, §12, §13 and §14. Exit statuses
follow [TX-RUN-07], [TX-LINT-02], [TX-COVER-05], [TX-RECORD-04] and [TX-SERVE-01];
an invalid command line exits 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from .coverage import run_coverage
from .lint import run_lint
from .record import run_record
from .report import status_line, summary_line
from .runner import RunOptions, default_agent
from .serve import DEFAULT_IDLE_TIMEOUT, ServeOptions, serve_command
from .show import list_scenarios, show_scenario
from .suite import (
    RunOutcome,
    SelectionError,
    apply_expected_failures,
    contract_version,
    discover,
    json_document,
    read_expected_failures,
    run_many,
    select,
    summary_counts,
)
from .transcript import scenario_id


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


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m zeroclaw_ref.conformance", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = sub.add_parser("run", help="run scenarios against an agent")
    run.add_argument("--agent", default=default_agent())
    run.add_argument("--fixtures", type=Path, default=Path("fixtures"))
    run.add_argument("--levels", default="required,optional")
    run.add_argument("--tag", action="append", default=[])
    run.add_argument("--skip-tag", action="append", default=[])
    run.add_argument("--expected-failures", type=Path)
    run.add_argument("--strict", action="store_true")
    run.add_argument("--timeout-scale", type=float, default=1.0)
    run.add_argument("--jobs", type=int, default=1)
    run.add_argument("--env", type=_env_pair, action="append", default=[])
    run.add_argument("--pass-env", action="append", default=[])
    run.add_argument("--json", type=Path)
    run.add_argument("--keep", action="store_true")
    run.add_argument("paths", nargs="*", type=Path)
    lint = sub.add_parser("lint", help="check scenarios without running them")
    lint.add_argument("--fixtures", type=Path, default=Path("fixtures"))
    lint.add_argument("--spec", type=Path)
    lint.add_argument("paths", nargs="*", type=Path)
    cov = sub.add_parser("coverage", help="requirement coverage of the corpus")
    cov.add_argument("--fixtures", type=Path, default=Path("fixtures"))
    cov.add_argument("--spec", type=Path)
    cov.add_argument("--json", type=Path)
    show = sub.add_parser("show", help="print a scenario for humans")
    show.add_argument("--fixtures", type=Path, default=Path("fixtures"))
    show.add_argument("scenario")
    lst = sub.add_parser("list", help="list scenario ids with level and tags")
    lst.add_argument("--fixtures", type=Path, default=Path("fixtures"))
    lst.add_argument("--servable", action="store_true")
    rec = sub.add_parser("record", help="draft expected frames from an agent, for review")
    rec.add_argument("--agent", default=default_agent())
    rec.add_argument("--fixtures", type=Path, default=Path("fixtures"))
    rec.add_argument("--write", action="store_true")
    rec.add_argument("--timeout-scale", type=float, default=1.0)
    rec.add_argument("paths", nargs="*", type=Path)
    srv = sub.add_parser("serve", help="play the agent of one scenario to judge an ACP client")
    srv.add_argument("--fixtures", type=Path, default=Path("fixtures"))
    srv.add_argument("--report", type=Path)
    srv.add_argument("--allow-tail", action="store_true")
    srv.add_argument("--idle-timeout", type=float, default=DEFAULT_IDLE_TIMEOUT)
    srv.add_argument("scenario")
    return parser


def fixtures_for(paths: Sequence[Path], default: Path) -> Path:
    """The corpus root: the given one, or the nearest ancestor with a VERSION file."""
    if default.is_dir() or not paths:
        return default
    for parent in paths[0].resolve().parents:
        if (parent / "VERSION").is_file():
            return parent
    return default


def cmd_run(args: argparse.Namespace) -> int:
    fixtures = fixtures_for(args.paths, args.fixtures)
    if args.timeout_scale <= 0 or args.jobs < 1:
        sys.stderr.write("error: --timeout-scale must be > 0 and --jobs >= 1\n")
        return 2
    try:
        listed = read_xfail(args.expected_failures)
        paths = discover(fixtures, args.paths)
    except SelectionError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    levels = [lvl.strip() for lvl in args.levels.split(",") if lvl.strip()]
    chosen = select(paths, levels, args.tag, args.skip_tag)
    options = RunOptions(
        agent=args.agent,
        timeout_scale=args.timeout_scale,
        env=tuple(args.env),
        pass_env=tuple(args.pass_env),
        keep=args.keep,
    )
    results = run_many(chosen, fixtures, options, args.jobs)
    corpus = {sid for p in discover(fixtures) if (sid := scenario_id(p, fixtures))}
    results, stale = apply_expected_failures(results, listed, corpus)
    outcome = RunOutcome(results, stale, args.strict)
    for r in results:
        print(status_line(r.status, r.scenario, r.level))
        if r.status in ("fail", "error") and r.report:
            print("    " + r.report.replace("\n", "\n    "))
    for entry in stale:
        print(f"STALE {entry}  (expected-failures entry names no scenario)")
    contract = contract_version(fixtures)
    print(summary_line(contract, ((r.status, r.level) for r in results)))
    if args.json is not None:
        doc = json_document(contract, args.agent, outcome, summary_counts(outcome))
        args.json.write_text(doc, encoding="utf-8")
    return outcome.exit_status()


def read_xfail(path: Path | None) -> dict[str, str]:
    return read_expected_failures(path) if path is not None else {}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "run":
        return cmd_run(args)
    if args.command == "lint":
        return run_lint(args.fixtures, args.paths, args.spec)
    if args.command == "coverage":
        return run_coverage(args.fixtures, args.spec, args.json)
    if args.command == "show":
        return show_scenario(args.fixtures, args.scenario)
    if args.command == "record":
        options = RunOptions(agent=args.agent, timeout_scale=args.timeout_scale)
        return run_record(fixtures_for(args.paths, args.fixtures), args.paths, options, args.write)
    if args.command == "serve":
        served = ServeOptions(args.idle_timeout, args.allow_tail, args.report)
        return serve_command(args.scenario, args.fixtures, served)
    return list_scenarios(args.fixtures, args.servable)


if __name__ == "__main__":
    sys.exit(main())
