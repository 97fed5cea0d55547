"""The `config` subcommand's argument parser, kept apart from the command itself so that
building the command line imports nothing heavy (the ACP agent starts through it, DESIGN §5.4).
"""

from __future__ import annotations

import argparse

DESCRIPTION = (
    "Read and change config.toml. set, unset and rename rewrite the whole file from its data: "
    "comments and formatting are not kept."
)


def add_config_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `config` and its actions on the main parser's subcommands."""
    config = commands.add_parser(
        "config", help="read and change config.toml", description=DESCRIPTION
    )
    config.add_argument(
        "--config-dir", dest="sub_config_dir", metavar="DIR", default=argparse.SUPPRESS
    )
    actions = config.add_subparsers(dest="config_action", required=True, metavar="ACTION")
    parsers = {
        name: actions.add_parser(name, help=text, description=DESCRIPTION)
        for name, text in (
            ("get", "print one value"),
            ("set", "set one value"),
            ("unset", "remove a key, entry, server or table"),
            ("list", "print every value"),
            ("validate", "check the configuration"),
            ("rename", "rename an MCP server in place"),
            ("edit", "edit the MCP servers in a full-screen terminal editor"),
        )
    }
    for parser in parsers.values():
        parser.add_argument(
            "--config-dir", dest="sub_config_dir", metavar="DIR", default=argparse.SUPPRESS
        )
    for name in ("get", "set", "unset", "rename"):
        parsers[name].add_argument("key_path", metavar="KEY_PATH")
    for name in ("get", "list", "validate"):
        parsers[name].add_argument("--json", action="store_true")
    parsers["set"].add_argument("value", nargs="?", metavar="VALUE")
    parsers["set"].add_argument("--value-stdin", action="store_true")
    parsers["set"].add_argument("--no-interactive", action="store_true")
    parsers["list"].add_argument("--filter", metavar="PREFIX")
    parsers["list"].add_argument("--secrets", action="store_true")
    parsers["rename"].add_argument("new_name", metavar="NEW_NAME")
