"""Serial peripherals against a fake board on a pseudo-terminal (policy.md §9)."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import serial

from tests.conftest import wait_for
from tests.helpers.fake_board import (
    FakeBoard,
    board_cfg,
    config,
    count_opens,
    ctx,
    messages,
    read,
    refuse_opens,
    relink,
    tools_of,
)
from zeroclaw_ref.config.model import PeripheralBoard, PeripheralsConfig
from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.core.jsontypes import JSON
from zeroclaw_ref.tools import peripherals
from zeroclaw_ref.tools.base import Tool, ToolResult

LOGGER = peripherals.__name__
SKIP_LIMIT = "Serial response skip limit exceeded (maximum 16 frames)"
Boards = Callable[[], FakeBoard]


@pytest.fixture(autouse=True)
def _fresh_manager() -> Iterator[None]:
    peripherals.reset_for_tests()
    yield
    peripherals.reset_for_tests()


@pytest.fixture
def boards() -> Iterator[Boards]:
    made: list[FakeBoard] = []

    def make() -> FakeBoard:
        made.append(FakeBoard())
        return made[-1]

    yield make
    peripherals.reset_for_tests()  # release the ports before the ptys go away
    for board in made:
        board.stop()


@pytest.fixture
def opens(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    return count_opens(monkeypatch)


@pytest.fixture
def no_open(monkeypatch: pytest.MonkeyPatch) -> None:
    refuse_opens(monkeypatch)


# -- wire protocol ---------------------------------------------------------------------------


@pytest.mark.req("POL-PERIPH-09", "POL-PERIPH-14", "POL-PERIPH-15")
def test_requests_are_compact_json_lines_numbered_from_zero(boards: Boards) -> None:
    fake = boards()
    tools = tools_of(fake)
    assert tools["gpio_write"].execute({"pin": 13, "value": 1}, ctx()).success
    assert tools["gpio_read"].execute({"pin": 4}, ctx()).success
    assert fake.lines == [
        b'{"id":"0","cmd":"gpio_write","args":{"pin":13,"value":1}}',
        b'{"id":"1","cmd":"gpio_read","args":{"pin":4}}',
    ]


@pytest.mark.req("POL-PERIPH-09")
def test_the_id_counter_is_shared_by_every_port_of_the_process(boards: Boards) -> None:
    first, second = boards(), boards()
    one, two = tools_of(first), tools_of(second)
    for tools in (one, two, one):
        assert read(tools).success
    assert [r["id"] for r in first.requests] == ["0", "2"]
    assert [r["id"] for r in second.requests] == ["1"]


@pytest.mark.req("POL-PERIPH-12")
@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"ok": True, "result": "pin 2 = 1"}, ToolResult(True, "pin 2 = 1", None)),
        ({"ok": True, "result": {"pin": 2, "v": 1}}, ToolResult(True, '{"pin":2,"v":1}', None)),
        ({"ok": True, "result": 1}, ToolResult(True, "1", None)),
        ({"ok": True}, ToolResult(True, "", None)),
        ({"ok": False, "error": "pin busy"}, ToolResult(False, "", "pin busy")),
        ({"ok": False}, ToolResult(False, "", "Device reported failure")),
        ({"ok": False, "error": None}, ToolResult(False, "", "Device reported failure")),
    ],
)
def test_replies_map_to_tool_results(
    boards: Boards, fields: dict[str, JSON], expected: ToolResult
) -> None:
    fake = boards()
    fake.reply = fields
    assert read(tools_of(fake)) == expected


@pytest.mark.req("POL-PERIPH-10")
@pytest.mark.parametrize(
    ("noise", "expected"),
    [(n, ToolResult(True, "gpio_read {'pin': 2}", None)) for n in (0, 1, 15, 16)]
    + [(n, ToolResult.fail(SKIP_LIMIT)) for n in (17, 40)],
)
def test_the_seventeenth_non_matching_frame_ends_the_request(
    boards: Boards, noise: int, expected: ToolResult
) -> None:
    fake = boards()
    fake.noise = noise
    assert read(tools_of(fake)) == expected


# Not JSON, empty, not an object, invalid UTF-8, a numeric id, no id, cut short.
GARBAGE = [b"not json", b"", b"[1, 2]", b'"text"', b"\xff\xfe", b'{"id": 0, "ok": true}']
GARBAGE += [b'{"ok": true}', b"{broken"]


@pytest.mark.req("POL-PERIPH-10")
def test_garbage_lines_count_as_non_matching_frames(boards: Boards) -> None:
    fake = boards()
    fake.garbage = GARBAGE * 2  # 16 frames: still answered
    tools = tools_of(fake)
    assert read(tools).success
    fake.garbage = [*GARBAGE * 2, b"one more"]
    assert read(tools).error == SKIP_LIMIT


@pytest.mark.req("POL-PERIPH-11")
def test_a_board_that_never_answers_times_out(boards: Boards) -> None:
    assert peripherals.manager().deadline_secs == peripherals.REQUEST_DEADLINE_SECS == 5.0
    assert peripherals.timeout_text(5.0) == "Serial request timed out after 5s"
    peripherals.reset_for_tests(deadline_secs=0.3)
    fake = boards()
    fake.silent = True
    fake.noise = 3  # frames that arrive do not extend the single deadline
    tools = tools_of(fake)
    assert read(tools) == ToolResult.fail("Serial request timed out after 0.3s")
    fake.silent, fake.noise = False, 0
    assert read(tools).success  # the port stays usable; the late frames were skipped


# -- connecting boards -----------------------------------------------------------------------


@pytest.mark.req(
    "POL-PERIPH-03", "POL-PERIPH-04", "POL-PERIPH-05", "POL-PERIPH-06", "POL-PERIPH-07"
)
def test_boards_are_processed_in_configuration_order_with_their_log_lines(
    boards: Boards, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    first, second = boards(), boards()
    missing_device = "/dev/pts/987654"
    cfg = config(
        board_cfg("bridge", "/dev/pts/1", transport="native"),
        board_cfg("nopath", None),
        board_cfg("empty", ""),  # Design: an empty path counts as no path
        board_cfg("uno", "/dev/ttyUSB0"),
        board_cfg("gone", missing_device),
        board_cfg("nucleo", first.pts_path),
        board_cfg("pico", second.pts_path),
        prefixes=("/dev/ttyACM", "/dev/pts/"),
    )
    tools = peripherals.peripheral_tools(cfg)
    assert [t.name for t in tools] == ["gpio_read", "gpio_write"]
    logged = messages(caplog)
    assert logged[:4] == [
        "Skipping board bridge: unsupported transport native",
        "Skipping serial board nopath: no path",
        "Skipping serial board empty: no path",
        "Serial path not allowed: /dev/ttyUSB0. Allowed: /dev/ttyACM, /dev/pts/",
    ]
    assert logged[4].startswith(f"Failed to open serial board gone at {missing_device}: [")
    # [POL-PERIPH-07] the first board that opened provides the tools; pico's are skipped
    assert len(logged) == 7
    assert all("gpio_" in line and "pico" in line for line in logged[5:])
    assert read({t.name: t for t in tools}).success
    assert len(first.requests) == 1
    assert second.requests == []


@pytest.mark.req("POL-PERIPH-05")
def test_a_path_outside_the_allow_list_is_never_opened(
    boards: Boards, caplog: pytest.LogCaptureFixture, no_open: None
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    fake = boards()
    cfg = config(board_cfg("b", fake.pts_path), prefixes=("/dev/ttyACM", "COM"))
    assert peripherals.peripheral_tools(cfg) == ()
    assert messages(caplog) == [
        f"Serial path not allowed: {fake.pts_path}. Allowed: /dev/ttyACM, COM"
    ]


@pytest.mark.req("POL-PERIPH-01", "POL-ASSEMBLE-05")
def test_disabled_peripherals_open_and_log_nothing(
    boards: Boards, caplog: pytest.LogCaptureFixture, no_open: None
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    fake = boards()
    cfg = PeripheralsConfig(enabled=False, boards=(board_cfg("b", fake.pts_path),))
    assert peripherals.peripheral_tools(cfg) == ()
    assert peripherals.manager().tools_for(cfg) == ()
    assert messages(caplog) == []


@pytest.mark.req("POL-PERIPH-01")
def test_importing_the_module_does_not_load_pyserial() -> None:
    probe = "import sys, zeroclaw_ref.tools.peripherals; print('serial' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "False"


@pytest.mark.req("POL-PERIPH-06")
def test_the_port_is_opened_exclusively_at_the_configured_baud(
    boards: Boards, opens: list[str]
) -> None:
    fake = boards()
    cfg = config(PeripheralBoard(board="b", path=fake.pts_path, baud=9600))
    (tool, _) = peripherals.peripheral_tools(cfg)
    handle = tool.port.handle  # type: ignore[attr-defined]
    settings = (handle.baudrate, handle.bytesize, handle.parity, handle.stopbits)
    assert settings == (9600, serial.EIGHTBITS, serial.PARITY_NONE, serial.STOPBITS_ONE)
    assert handle.exclusive is True
    with pytest.raises(serial.SerialException):
        serial.Serial(fake.pts_path, exclusive=True)
    assert opens == [fake.pts_path, fake.pts_path]  # ours, then the refused one


# -- sharing, serialising, recovering --------------------------------------------------------


@pytest.mark.req("POL-PERIPH-02", "POL-PATH-05")
def test_two_executions_share_one_open_port(
    boards: Boards, opens: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    fake = boards()
    first, second = tools_of(fake), tools_of(fake)
    assert opens == [fake.pts_path]
    assert messages(caplog) == []  # the second execution did not contend for the port
    assert read(first, 1).success
    assert read(second, 2).success
    assert [r["args"] for r in fake.requests] == [{"pin": 1}, {"pin": 2}]


@pytest.mark.req("POL-PERIPH-02")
def test_concurrent_requests_on_one_port_are_serialised(boards: Boards) -> None:
    fake = boards()
    fake.pace_secs = 0.05
    executions = [tools_of(fake), tools_of(fake)]
    results: list[ToolResult] = []
    lock = threading.Lock()

    def run(tools: dict[str, Tool], pin: int) -> None:
        for _ in range(3):
            result = read(tools, pin)
            with lock:
                results.append(result)

    threads = [threading.Thread(target=run, args=(t, n)) for n, t in enumerate(executions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not any(t.is_alive() for t in threads)
    assert len(results) == 6
    assert all(r.success for r in results)
    assert fake.overlaps == 0
    assert sorted(int(r["id"]) for r in fake.requests) == list(range(6))


@pytest.mark.req("POL-PERIPH-13")
def test_an_io_error_closes_the_port_and_the_next_request_reopens_it(
    boards: Boards, opens: list[str], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    link = tmp_path / "ttyACM0"
    plugged = boards()
    relink(link, plugged)
    cfg = config(board_cfg("nucleo", str(link)), prefixes=(str(tmp_path),))
    tools = {t.name: t for t in peripherals.peripheral_tools(cfg)}
    assert read(tools).success
    plugged.disconnect_on_request = True
    failed = read(tools)
    assert not failed.success
    assert (failed.error or "").startswith("Serial I/O error: ")
    assert tools["gpio_read"].port.handle is None  # type: ignore[attr-defined]
    # Still unplugged: the reopen fails the request the same way and logs the open failure.
    link.unlink()
    assert (read(tools).error or "").startswith("Serial I/O error: ")
    assert messages(caplog)[-1].startswith(f"Failed to open serial board nucleo at {link}: ")
    # Replugged at the same path: a new resolution is not needed.
    replugged = boards()
    relink(link, replugged)
    assert read(tools, 7).success
    assert [r["args"] for r in replugged.requests] == [{"pin": 7}]
    assert opens == [str(link)] * 3


@pytest.mark.req("POL-PERIPH-07")
def test_two_boards_on_one_path_open_it_once(
    boards: Boards, opens: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    fake = boards()
    tools = peripherals.peripheral_tools(
        config(board_cfg("a", fake.pts_path), board_cfg("b", fake.pts_path))
    )
    assert [t.name for t in tools] == ["gpio_read", "gpio_write"]
    assert opens == [fake.pts_path]
    assert len(messages(caplog)) == 2


NO_PIN, NO_VALUE = "Missing 'pin' parameter", "Missing 'value' parameter"
BAD_PINS: list[JSON] = [-1, "3", 3.0, True]
BAD_VALUES: list[JSON] = [2, -1, "1", 1.0, True]


# -- tools -----------------------------------------------------------------------------------


@pytest.mark.req("POL-PERIPH-08", "POL-ASSEMBLE-18")
def test_gpio_read_is_a_read_tool_and_gpio_write_an_act_tool(boards: Boards) -> None:
    tools = peripherals.peripheral_tools(config(board_cfg("b", boards().pts_path)))
    assert [(t.name, t.act) for t in tools] == [("gpio_read", False), ("gpio_write", True)]
    assert [t.parameters["required"] for t in tools] == [["pin"], ["pin", "value"]]
    assert all(t.description for t in tools)
    json.dumps([t.parameters for t in tools])  # plain JSON schemas


@pytest.mark.req("POL-PERIPH-14", "POL-PERIPH-15")
@pytest.mark.parametrize(
    ("tool", "arguments", "error"),
    [("gpio_read", a, NO_PIN) for a in [{}, None, [1], *({"pin": p} for p in BAD_PINS)]]
    + [("gpio_write", {"value": 1}, NO_PIN), ("gpio_write", {"pin": -2, "value": 1}, NO_PIN)]
    + [("gpio_write", {"pin": 3}, NO_VALUE), ("gpio_write", {"pin": 3, "value": None}, NO_VALUE)]
    + [("gpio_write", {"pin": 3, "value": v}, "value must be 0 or 1") for v in BAD_VALUES],
)
def test_bad_arguments_fail_without_reaching_the_board(
    boards: Boards, tool: str, arguments: JSON, error: str
) -> None:
    fake = boards()
    assert tools_of(fake)[tool].execute(arguments, ctx()) == ToolResult.fail(error)
    assert fake.lines == []


@pytest.mark.req("POL-PERIPH-15")
@pytest.mark.parametrize("value", [0, 1])
def test_gpio_write_sends_pin_and_value(boards: Boards, value: int) -> None:
    fake = boards()
    assert tools_of(fake)["gpio_write"].execute({"pin": 0, "value": value}, ctx()).success
    assert fake.requests == [{"id": "0", "cmd": "gpio_write", "args": {"pin": 0, "value": value}}]


def test_a_cancelled_turn_sends_nothing(boards: Boards) -> None:
    fake = boards()
    cancel = CancelToken()
    cancel.fire()
    result = tools_of(fake)["gpio_write"].execute({"pin": 1, "value": 1}, ctx(cancel))
    assert result == ToolResult.fail(peripherals.CANCELLED_TEXT)
    assert fake.lines == []


def test_a_cancel_during_a_request_is_reported_on_return(boards: Boards) -> None:
    fake = boards()
    fake.gate = threading.Event()  # the board answers only after the cancel
    tools = tools_of(fake)
    cancel = CancelToken()
    box: list[ToolResult] = []
    worker = threading.Thread(
        target=lambda: box.append(tools["gpio_read"].execute({"pin": 1}, ctx(cancel)))
    )
    worker.start()
    wait_for(lambda: bool(fake.requests), "the board to receive the request")
    cancel.fire()
    fake.gate.set()
    worker.join(timeout=10)
    assert box == [ToolResult.fail(peripherals.CANCELLED_TEXT)]
