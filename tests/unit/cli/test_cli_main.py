"""The start-up contract of every command that needs the configuration, seen from outside:
real processes, their real exit status and standard error (config.md §2, acp.md ACP-TR-05).

Unit tests of the loader read the in-memory warning and error lists; these tests pin what a
user (or a supervisor parsing stderr) actually sees: `warning: <text>` lines that do not stop
the command (CFG-LOAD-08), and `ERROR: <text>` lines with exit status 1, never a traceback
(CFG-LOAD-09), for several kinds of broken configuration.
"""

from __future__ import annotations

import os
import queue
import select
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

AGENT = (
    '[providers.demo]\nkind = "demo"\n[risk_profiles.r]\n[runtime_profiles.d]\n'
    '[agents.main]\nmodel_provider = "demo"\nrisk_profile = "r"\nruntime_profile = "d"\n'
)

# Each command line after `--config-dir DIR`, with the standard input it reads; all of them
# load the configuration before doing anything else.
COMMANDS: dict[str, tuple[list[str], str]] = {
    "acp": (["acp"], ""),
    "agent": (["agent", "-m", "hi"], ""),
    "cron": (["cron", "list"], ""),
    "mcp": (["mcp", "tools"], ""),
    "gateway": (["gateway", "--host", "127.0.0.1", "--port", "0"], ""),
}

# Kinds of broken configuration: (config.toml text, extra environment, a fragment of the one
# error the loader reports).
BROKEN: dict[str, tuple[str, dict[str, str], str]] = {
    "invalid-toml": ("[acp\nmax_sessions = 2\n", {}, "config.toml"),
    "unknown-key": (AGENT + "[acp]\nmax_session = 2\n", {}, "acp.max_session"),
    "wrong-type": (AGENT + '[acp]\nmax_sessions = "two"\n', {}, "acp.max_sessions"),
    "validation": (
        AGENT + '[[mcp.servers]]\nname = "a"\ntransport = "stdio"\n',
        {},
        "requires non-empty command",
    ),
    "env-override": (AGENT, {"ZEROCLAW_acp__no_such_key": "1"}, "ZEROCLAW_acp__no_such_key"),
}


def _run(
    cfg: Path, argv: list[str], stdin: str = "", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ZEROCLAW")}
    clean.update({"HOME": str(cfg.parent), **(env or {})})
    return subprocess.run(
        [sys.executable, "-m", "zeroclaw_ref", "--config-dir", str(cfg), *argv],
        input=stdin,
        capture_output=True,
        text=True,
        env=clean,
        cwd=cfg.parent,
        timeout=60,  # a safety net: a command that starts instead of refusing would hang here
        check=False,
    )


def _config(tmp_path: Path, text: str) -> Path:
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "config.toml").write_text(text)
    return cfg


@pytest.mark.req("CFG-LOAD-09", "ACP-TR-05")
@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_a_broken_configuration_is_refused_with_error_lines_and_status_one(
    tmp_path: Path, command: str, kind: str
) -> None:
    text, env, fragment = BROKEN[kind]
    argv, stdin = COMMANDS[command]
    done = _run(_config(tmp_path, text), argv, stdin, env)
    assert (done.returncode, done.stdout) == (1, ""), done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert lines, "the refusal is explained"
    assert all(line.startswith("ERROR: ") for line in lines), done.stderr
    assert any(fragment in line for line in lines), done.stderr


@pytest.mark.req("ACP-TR-05", "ACP-CFG-09")
def test_an_invalid_acp_option_is_refused_the_same_way(tmp_path: Path) -> None:
    done = _run(_config(tmp_path, AGENT), ["acp", "--max-sessions", "0"])
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == "ERROR: invalid value for --max-sessions: 0\n"


# Commands that finish on their own with this input; each must print the warning and go on.
RUNNING: dict[str, tuple[list[str], str, int]] = {
    "acp": (["acp"], "", 0),  # end of input at once: a clean exit (ACP-TR-03)
    "agent": (["agent", "-m", "hi"], "", 0),
    "cron": (["cron", "list"], "", 0),
    "mcp": (["mcp", "tools"], "", 0),
}


@pytest.mark.req("CFG-LOAD-08", "CFG-VALID-16")
@pytest.mark.parametrize("command", sorted(RUNNING))
def test_validation_warnings_reach_stderr_with_their_prefix_and_do_not_stop(
    tmp_path: Path, command: str
) -> None:
    cfg = _config(tmp_path, AGENT + 'mcp_bundles = ["files"]\n')  # a bundle never defined
    argv, stdin, status = RUNNING[command]
    done = _run(cfg, argv, stdin)
    assert done.returncode == status, done.stderr
    warning = (
        "warning: agents.<alias>.mcp_bundles references an undefined [mcp_bundles.<alias>]; "
        "the agent is granted no servers from it (agent: 'main', mcp_bundle: 'files')"
    )
    assert done.stderr.splitlines().count(warning) == 1, done.stderr


@pytest.mark.req("CFG-LOAD-08", "CFG-VALID-16", "ACP-GW-01")
def test_the_gateway_prints_warnings_with_their_prefix_and_keeps_serving(tmp_path: Path) -> None:
    cfg = _config(tmp_path, AGENT + 'mcp_bundles = ["files"]\n')
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ZEROCLAW")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "zeroclaw_ref", "--config-dir", str(cfg), *COMMANDS["gateway"][0]],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**clean, "HOME": str(tmp_path)},
        cwd=tmp_path,
    )
    lines: queue.Queue[str] = queue.Queue()
    stdout = proc.stdout
    assert stdout is not None
    threading.Thread(target=lambda: lines.put(stdout.readline()), daemon=True).start()
    try:
        first = lines.get(timeout=30)  # bounded wait for the start-up signal
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert first.startswith("listening 127.0.0.1:"), err
    assert proc.returncode == 0, err  # SIGTERM after `listening` is a clean stop
    warning = (
        "warning: agents.<alias>.mcp_bundles references an undefined [mcp_bundles.<alias>]; "
        "the agent is granted no servers from it (agent: 'main', mcp_bundle: 'files')"
    )
    assert err.splitlines().count(warning) == 1, err


def _gateway_stopped_right_after_listening(tmp_path: Path, cfg: Path) -> tuple[int, str]:
    """Start the gateway, send SIGTERM the moment `listening` can be read; (status, stderr)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ZEROCLAW")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "zeroclaw_ref", "--config-dir", str(cfg), *COMMANDS["gateway"][0]],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**clean, "HOME": str(tmp_path)},
        cwd=tmp_path,
    )
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    seen = b""
    try:
        # Read the pipe on this thread (no hand-over to another one) so the signal follows
        # the line as closely as possible; every wait is bounded.
        while b"\n" not in seen:
            ready, _, _ = select.select([fd], [], [], 30)
            assert ready, "the gateway printed no `listening` line"
            chunk = os.read(fd, 4096)
            assert chunk, "the gateway closed its standard output before `listening`"
            seen += chunk
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            _, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
            pytest.fail(f"the gateway did not stop on SIGTERM: {err!r}")
    assert seen.startswith(b"listening 127.0.0.1:"), err
    return proc.returncode, err.decode("utf-8", "replace")


@pytest.mark.req("ACP-GW-01")
def test_sigterm_right_after_listening_stops_the_gateway_cleanly(tmp_path: Path) -> None:
    """`listening` means ready, the stop signal included: the handler is installed before the
    line is printed, so a supervisor that stops the gateway at once gets status 0, never -15
    (the default action) or a traceback. Repeated, since the window it guards is short."""
    cfg = _config(tmp_path, AGENT)
    for attempt in range(30):
        status, err = _gateway_stopped_right_after_listening(tmp_path, cfg)
        assert (status, "Traceback" in err) == (0, False), f"attempt {attempt}: {err}"
