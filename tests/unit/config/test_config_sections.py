"""Section shapes not covered elsewhere: file location, server keys, peripherals (config.md)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from zeroclaw_ref.config.dirs import config_file
from zeroclaw_ref.config.model import ConfigSnapshot
from zeroclaw_ref.config.secrets import key_file

Loader = Callable[..., ConfigSnapshot]
Failer = Callable[..., list[str]]


@pytest.mark.req("CFG-DIR-02", "CFG-DIR-07")
def test_the_config_and_key_files_live_in_the_config_dir(load: Loader, tmp_path: Path) -> None:
    assert config_file(tmp_path) == tmp_path / "config.toml"
    assert key_file(tmp_path) == tmp_path / ".secret_key"
    # The loader reads exactly <config dir>/config.toml: a file elsewhere is not consulted.
    (tmp_path / "zeroclaw.toml").write_text("[gateway]\nport = 1234\n")
    assert load("[gateway]\nport = 4321\n").gateway.port == 4321


@pytest.mark.req("CFG-MCP-03")
def test_a_server_entry_accepts_exactly_the_table_keys(load: Loader, fail: Failer) -> None:
    snapshot = load(
        "[[mcp.servers]]\nname = 'a'\ncommand = 'x'\n"
        "[[mcp.servers]]\nname = 'h'\ntransport = 'http'\nurl = 'https://h/mcp'\n"
        "headers = { A = 'b' }\ntool_timeout_secs = 5\npinned_resources = ['r://1']\n"
        "tls_ca_cert_path = '/ca.pem'\nmax_response_bytes = 0\n"
        "[[mcp.servers]]\nname = 's'\ntransport = 'stdio'\ncommand = 'y'\nargs = ['-v']\n"
        "env = { K = 'v' }\n"
        "[mcp_bundles.b]\nservers = ['a', 'h', 's']\n"
    )
    a, h, s = snapshot.mcp.servers
    assert (a.name, a.transport, a.command, a.args, dict(a.env), a.url, dict(a.headers)) == (
        "a", "stdio", "x", (), {}, None, {},
    )  # fmt: skip
    assert (a.tool_timeout_secs, a.pinned_resources, a.tls_ca_cert_path, a.max_response_bytes) == (
        None, (), None, None,
    )  # fmt: skip
    assert (h.transport, h.url, dict(h.headers), h.tool_timeout_secs) == (
        "http", "https://h/mcp", {"A": "b"}, 5,
    )  # fmt: skip
    assert (h.pinned_resources, h.tls_ca_cert_path, h.max_response_bytes) == (
        ("r://1",), "/ca.pem", 0,
    )  # fmt: skip
    assert (s.args, dict(s.env)) == (("-v",), {"K": "v"})
    assert fail("[[mcp.servers]]\nname = 'a'\ncommand = 'x'\ncwd = '/'\n") == [
        "CFG:4: mcp.servers[0].cwd: unknown key"
    ]
    assert fail("[[mcp.servers]]\ncommand = 'x'\n") == ["CFG:1: mcp.servers[0]: name is required"]
    assert fail("[[mcp.servers]]\nname = 'a'\ntransport = 'ws'\n") == [
        'CFG:3: mcp.servers[0].transport: invalid value "ws" (expected one of stdio, http, sse)'
    ]


@pytest.mark.req("CFG-PERIPH-01", "CFG-PERIPH-02")
def test_peripherals_defaults(load: Loader) -> None:
    peripherals = load("").peripherals
    assert peripherals.enabled is False and peripherals.boards == ()
    assert peripherals.allowed_path_prefixes == (
        "/dev/ttyACM", "/dev/ttyUSB", "/dev/tty.usbmodem", "/dev/cu.usbmodem",
        "/dev/tty.usbserial", "/dev/cu.usbserial", "COM",
    )  # fmt: skip


@pytest.mark.req("CFG-PERIPH-01", "CFG-PERIPH-02")
def test_peripheral_boards_and_prefixes_are_read(load: Loader) -> None:
    peripherals = load(
        "[peripherals]\nenabled = true\nallowed_path_prefixes = ['/dev/pts/']\n"
        "[[peripherals.boards]]\nboard = 'nucleo'\n"
        "[[peripherals.boards]]\nboard = 'b'\ntransport = 'native'\npath = '/dev/ttyACM0'\n"
        "baud = 4000000\n"
    ).peripherals
    assert peripherals.enabled is True
    assert peripherals.allowed_path_prefixes == ("/dev/pts/",)
    first, second = peripherals.boards
    assert (first.board, first.transport, first.path, first.baud) == (
        "nucleo", "serial", None, 115200,
    )  # fmt: skip
    assert (second.board, second.transport, second.path, second.baud) == (
        "b", "native", "/dev/ttyACM0", 4000000,
    )  # fmt: skip


@pytest.mark.req("CFG-PERIPH-01")
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "[[peripherals.boards]]\ntransport = 'serial'\n",
            ["CFG:1: peripherals.boards[0]: board is required"],
        ),
        (
            "[[peripherals.boards]]\nboard = 'b'\nbaud = 0\n",
            ["CFG:3: peripherals.boards[0].baud: 0 is out of range (1..4000000)"],
        ),
        (
            "[[peripherals.boards]]\nboard = 'b'\nbaud = 4000001\n",
            ["CFG:3: peripherals.boards[0].baud: 4000001 is out of range (1..4000000)"],
        ),
        (
            "[[peripherals.boards]]\nboard = ' '\n",
            ["peripherals.boards[0].board must not be empty"],
        ),
        (
            "[peripherals]\nenabled = 'yes'\n",
            ["CFG:2: peripherals.enabled: expected boolean, found string"],
        ),
    ],
)
def test_peripheral_board_errors(fail: Failer, text: str, expected: list[str]) -> None:
    assert fail(text) == expected


@pytest.mark.req("CFG-SCHED-01", "CFG-SECRETS-01")
def test_scheduler_and_secrets_accept_their_keys(load: Loader, fail: Failer) -> None:
    snapshot = load("[scheduler]\nenabled = false\ntick_secs = 3600\n[secrets]\nencrypt = false\n")
    assert (snapshot.scheduler.enabled, snapshot.scheduler.tick_secs) == (False, 3600)
    assert snapshot.secrets.encrypt is False
    assert load("[scheduler]\ntick_secs = 1\n").scheduler.tick_secs == 1
    for bad in (0, 3601):
        lines = fail(f"[scheduler]\ntick_secs = {bad}\n")
        assert len(lines) == 1 and "scheduler.tick_secs" in lines[0]


@pytest.mark.req("CFG-BUNDLE-01")
def test_a_bundle_accepts_servers_and_exclude_defaulting_to_empty(load: Loader) -> None:
    snapshot = load(
        "[[mcp.servers]]\nname = 'a'\ncommand = 'x'\n"
        "[mcp_bundles.full]\nservers = ['a']\nexclude = ['a']\n[mcp_bundles.bare]\n"
    )
    full, bare = snapshot.mcp_bundles["full"], snapshot.mcp_bundles["bare"]
    assert (full.servers, full.exclude) == (("a",), ("a",))
    assert (bare.servers, bare.exclude) == ((), ())


@pytest.mark.req("CFG-RUNTIME-02")
def test_a_tool_filter_group_has_mode_tools_and_keywords(load: Loader, fail: Failer) -> None:
    snapshot = load(
        "[[runtime_profiles.r.tool_filter_groups]]\ntools = ['fs__*']\nkeywords = ['file']\n"
        "[[runtime_profiles.r.tool_filter_groups]]\nmode = 'always'\ntools = ['web__get']\n"
    )
    first, second = snapshot.runtime_profiles["r"].tool_filter_groups
    assert (first.mode, first.tools, first.keywords) == ("dynamic", ("fs__*",), ("file",))
    assert (second.mode, second.tools, second.keywords) == ("always", ("web__get",), ())
    lines = fail("[[runtime_profiles.r.tool_filter_groups]]\nmode = 'sometimes'\ntools = ['x']\n")
    assert len(lines) == 1 and "runtime_profiles.r.tool_filter_groups[0].mode" in lines[0]
