"""`zeroclaw_ref config get | set | unset | list | validate | rename | edit` (config.md §12, §13).

Every change goes through `config/write.py`, the write path the gateway and the editors share;
this module only reads the command line, takes secret input safely and prints. Exit status 0
on success, 1 on a refusal (`ERROR: ` lines on standard error), 2 on a usage error (CFG-CLI-01).

Note: `set`, `unset` and `rename` rewrite `config.toml` from its parsed data, so comments and
formatting in the file are not kept (CFG-CLI-26).
"""

from __future__ import annotations

import argparse
import getpass
import re
from collections.abc import Mapping
from pathlib import Path

from zeroclaw_ref.cli.streams import Streams
from zeroclaw_ref.config.dirs import resolve_dirs
from zeroclaw_ref.config.edit import Outcome, StepKind, parse_path
from zeroclaw_ref.config.model import ConfigError
from zeroclaw_ref.core import jsontypes
from zeroclaw_ref.core.jsontypes import JSONObject

_SECRET_TTY = "Secret input requires a terminal on stdin; use --value-stdin or --no-interactive"
# A leading key path in a message, for `validate --json` (CFG-CLI-28).
_PATH_RE = re.compile(r"^([a-z_][A-Za-z0-9_\-]*(?:\.[A-Za-z0-9_\-]+|\[\d+\])+)[: ]")
_LINE_RE = re.compile(r"^:(\d+): ")
_TOML_LINE_RE = re.compile(r"\(at line (\d+), column \d+\)")


class _Refused(Exception):
    """A refusal with the lines to print after `ERROR: `."""

    def __init__(self, *lines: str) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


def run_config(args: argparse.Namespace, environ: Mapping[str, str], io: Streams) -> int:
    """Run one `config` action; returns the exit status (CFG-CLI-01)."""
    config_dir, data_dir = resolve_dirs(
        getattr(args, "sub_config_dir", None) or args.config_dir, environ
    )
    action = args.config_action
    try:
        if action == "validate":
            return _validate(config_dir, data_dir, environ, args.json, io)
        if action in ("get", "list"):
            _show(args, config_dir, environ, io)
            return 0
        if action == "edit":
            from zeroclaw_ref.cli.config_edit import run_editor

            return run_editor(config_dir, data_dir, environ, io)  # [CFG-UI-12]
        key_path = _change(args, config_dir, io)
    except (ConfigError, _Refused) as exc:
        for line in exc.lines:
            print(f"ERROR: {line}", file=io.stderr)
        return 1
    if key_path is not None:
        from zeroclaw_ref.config.write import follow_up_warnings

        for warning in follow_up_warnings(config_dir, data_dir, key_path or None, environ):
            print(f"warning: {warning}", file=io.stderr)  # [CFG-CLI-17] [CFG-CLI-25]
    return 0


def _show(
    args: argparse.Namespace, config_dir: Path, environ: Mapping[str, str], io: Streams
) -> None:
    from zeroclaw_ref.config.view import get_leaf, read_view, render_json, render_text, select

    leaves = read_view(config_dir, environ)
    if args.config_action == "get":
        leaf = get_leaf(leaves, args.key_path)
        shown = jsontypes.dumps(render_json(leaf)) if args.json else render_text(leaf)
        print(shown, file=io.stdout)  # [CFG-CLI-05] [CFG-CLI-06]
        return
    chosen = select(leaves, args.filter, args.secrets)
    if args.json:
        print(jsontypes.dumps([render_json(leaf) for leaf in chosen]), file=io.stdout)
        return
    for leaf in chosen:
        print(f"{leaf.path} = {render_text(leaf)}", file=io.stdout)  # [CFG-CLI-07]


def _change(args: argparse.Namespace, config_dir: Path, io: Streams) -> str | None:
    """Run set, unset or rename; returns the key path for the follow-up warnings, or None."""
    from zeroclaw_ref.config import write

    if args.config_action == "unset":
        outcome = write.unset(config_dir, args.key_path)
        key_path = args.key_path
    elif args.config_action == "rename":
        outcome = _rename(config_dir, args.key_path, args.new_name)
        key_path = ""
    else:
        target = write.check_settable(args.key_path)
        text = _secret_text(args, io) if target.secret else _plain_text(args, io)
        outcome = write.set_text(config_dir, args.key_path, text)
        key_path = args.key_path
    print(outcome.message, file=io.stdout)  # [CFG-CLI-18] [CFG-CLI-19] [CFG-UI-07]
    return key_path if outcome.changed else None


def _rename(config_dir: Path, key_path: str, new_name: str) -> Outcome:
    from zeroclaw_ref.config import write

    steps = parse_path(key_path).steps
    if len(steps) != 3 or steps[2].kind is not StepKind.SERVER:
        # Design: the spec renames servers only; other paths get a plain refusal.
        raise _Refused(f"only mcp.servers.<name> can be renamed, not {key_path}")
    return write.rename_server(config_dir, steps[2].name, new_name)


def _read_stdin(io: Streams) -> str:
    # [CFG-CLI-10] all of standard input, less one trailing line break.
    text = io.stdin.read()
    for ending in ("\r\n", "\n"):
        if text.endswith(ending):
            return text[: -len(ending)]
    return text


def _plain_text(args: argparse.Namespace, io: Streams) -> str:
    if args.value_stdin:
        return _read_stdin(io)
    if args.value is None:
        # [CFG-CLI-08]
        raise _Refused("Value required. Usage: zeroclaw_ref config set <key path> <value>")
    return str(args.value)


def _secret_text(args: argparse.Namespace, io: Streams) -> str:
    """[CFG-CLI-09] [CFG-CLI-10] [CFG-CLI-11] take a secret without leaking it by accident."""
    path = args.key_path
    if args.value_stdin:
        text = _read_stdin(io)
    elif args.no_interactive:
        if args.value is None:
            raise _Refused(
                "Value required in --no-interactive mode. Usage: zeroclaw_ref config set "
                "--no-interactive <key path> <value>"
            )
        text = str(args.value)
    elif not io.stdin.isatty():
        raise _Refused(_SECRET_TTY)
    else:
        if args.value is not None:
            print(f"⚠ {path} is an encrypted secret — using masked input.", file=io.stderr)
        text = getpass.getpass(f"Enter value for {path}: ", stream=io.stderr)
    if text:
        print("✓ Secret received", file=io.stderr)
    return text


def _validate(
    config_dir: Path, data_dir: Path, environ: Mapping[str, str], as_json: bool, io: Streams
) -> int:
    """[CFG-CLI-27] [CFG-CLI-28] load as a command would and report everything found."""
    from zeroclaw_ref.config.dirs import config_file
    from zeroclaw_ref.config.load import load_config

    errors: list[str] = []
    warnings: list[str] = []
    try:
        warnings = list(load_config(config_dir, data_dir, environ).warnings)
    except ConfigError as exc:
        errors = list(exc.lines)
    if as_json:
        prefix = str(config_file(config_dir))
        report: JSONObject = {
            "valid": not errors,
            "errors": [_error_json(line, prefix) for line in errors],
            "warnings": [{"path": _path_of(w), "message": w} for w in warnings],
        }
        print(jsontypes.dumps(report), file=io.stdout)
    else:
        for line in errors:
            print(f"ERROR: {line}", file=io.stderr)
        for warning in warnings:
            print(f"warning: {warning}", file=io.stderr)
        if errors:
            print(f"configuration has {len(errors)} error(s)", file=io.stderr)
        else:
            print("OK: configuration is valid", file=io.stdout)
    return 1 if errors else 0


def _path_of(message: str) -> str | None:
    match = _PATH_RE.match(message)
    return match.group(1) if match else None


def _error_json(line: str, file_prefix: str) -> JSONObject:
    """[CFG-CLI-28] one error as `{path, line, message}`; the file name is dropped."""
    number: int | None = None
    message = line
    if line.startswith(file_prefix):
        rest = line[len(file_prefix) :]
        located = _LINE_RE.match(rest)
        if located:
            number, message = int(located.group(1)), rest[located.end() :]
        else:
            message = rest.removeprefix(": ")
        toml = _TOML_LINE_RE.search(message)
        if toml and message.startswith("invalid TOML: "):
            number = int(toml.group(1))
    return {"path": _path_of(message), "line": number, "message": message}
