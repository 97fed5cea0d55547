"""`zeroclaw_ref config …` as a subprocess: texts, exit statuses, masking (config.md §12, §13.2)."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.helpers.json_at import at, text_at
from zeroclaw_ref.config.secrets import decrypt, read_key

TOKEN = "mcp.servers.github.env.GITHUB_TOKEN"
CONFIG = """
[providers.main]
kind = "openai"
model = "gpt"
api_key = "plain-key"

[risk_profiles.strict]
level = "readonly"

[[mcp.servers]]
name = "github"
command = "npx"

[mcp_bundles.dev]
servers = ["github"]

[gateway]
paired_tokens = ["{digest}"]
""".replace("{digest}", "ab" * 32)


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZEROCLAW")}
    return env | (extra or {})


def _cli(
    cfg: Path, *args: str, stdin: str = "", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zeroclaw_ref", "--config-dir", str(cfg), "config", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=_env(env),
        timeout=60,
        check=False,
    )


@pytest.fixture
def cfg(tmp_path: Path) -> Path:
    (tmp_path / "config.toml").write_text(CONFIG)
    return tmp_path


def _doc(cfg: Path) -> dict[str, object]:
    return tomllib.loads((cfg / "config.toml").read_text())


@pytest.mark.req("CFG-CLI-04", "CFG-CLI-05", "CFG-CLI-03", "CFG-SECRETS-14", "CFG-GW-02")
@pytest.mark.parametrize(
    ("path", "shown"),
    [
        ("providers.main.model", "gpt"),
        ("providers.main.api_key", "****"),
        ("providers.main.base_url", "https://api.openai.com/v1"),
        ("providers.main.temperature", "0.7"),
        ("gateway.port", "42617"),
        ("gateway.require_pairing", "true"),
        ("gateway.path_prefix", "<unset>"),
        ("gateway.paired_tokens", '["****"]'),
        ("risk_profiles.strict.level", "read_only"),
        ("risk_profiles.strict.workspace_only", "<inherit>"),
        ("mcp.servers.github.args", "[]"),
        ("mcp.servers.github.env.MISSING", "<unset>"),
        ("peripherals.boards", "[]"),
        ("agents.ghost.enabled", "true"),
    ],
)
def test_get_prints_the_rendered_value(cfg: Path, path: str, shown: str) -> None:
    done = _cli(cfg, "get", path)
    assert (done.returncode, done.stdout, done.stderr) == (0, shown + "\n", "")


@pytest.mark.req("CFG-CLI-06", "CFG-SECRETS-14")
def test_get_json_names_the_source_and_masks_secrets(cfg: Path) -> None:
    def got(path: str, env: dict[str, str] | None = None) -> object:
        done = _cli(cfg, "get", path, "--json", env=env)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    assert got("providers.main.api_key") == {
        "path": "providers.main.api_key", "value": "***MASKED***", "secret": True, "source": "file"
    }  # fmt: skip
    assert got("gateway.port", {"ZEROCLAW_gateway__port": "9"}) == {
        "path": "gateway.port", "value": 9, "secret": False, "source": "env"
    }  # fmt: skip
    assert got("gateway.host") == {
        "path": "gateway.host", "value": "127.0.0.1", "secret": False, "source": "default"
    }  # fmt: skip
    assert got("mcp.servers.github.headers.X") == {
        "path": "mcp.servers.github.headers.X", "value": None, "secret": True, "source": "default"
    }  # fmt: skip


@pytest.mark.req("CFG-CLI-05", "CFG-CLI-02", "CFG-CLI-01")
@pytest.mark.parametrize(
    ("path", "error"),
    [
        ("gateway", "gateway is a table; use 'zeroclaw_ref config list --filter gateway'"),
        ("mcp.servers.github.env", "mcp.servers.github.env is a table; use 'zeroclaw_ref config "
         "list --filter mcp.servers.github.env'"),
        ("nope.key", "unknown config path: nope.key"),
    ],
)  # fmt: skip
def test_get_refuses_tables_and_unknown_paths(cfg: Path, path: str, error: str) -> None:
    done = _cli(cfg, "get", path)
    assert (done.returncode, done.stdout, done.stderr) == (1, "", f"ERROR: {error}\n")


@pytest.mark.req("CFG-CLI-07", "CFG-SECRETS-14")
def test_list_filters_sorts_and_masks(cfg: Path) -> None:
    _cli(cfg, "set", "--no-interactive", TOKEN, "ghp_secret")
    done = _cli(cfg, "list", "--filter", "mcp.servers")
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert lines == sorted(lines)
    assert f"{TOKEN} = ****" in lines and "mcp.servers.github.command = npx" in lines
    secrets = _cli(cfg, "list", "--secrets").stdout.splitlines()
    assert secrets == [f"{TOKEN} = ****", "providers.main.api_key = ****"]
    listed = json.loads(_cli(cfg, "list", "--secrets", "--json").stdout)
    assert [item["value"] for item in listed] == ["***MASKED***", "***MASKED***"]
    everything = _cli(cfg, "list").stdout
    assert "ghp_secret" not in everything and "plain-key" not in everything
    assert "risk_profiles.strict.allowed_tools = <inherit>\n" in everything
    assert _cli(cfg, "list", "--filter", "gateway.port").stdout == "gateway.port = 42617\n"


@pytest.mark.req("CFG-CLI-18", "CFG-CLI-08", "CFG-CLI-22")
def test_set_scalars_lists_and_enums(cfg: Path) -> None:
    for path, value in [
        ("gateway.port", "8080"),
        ("autonomy.allowed_roots", "~/a, /b"),
        ("risk_profiles.strict.level", "full"),
    ]:
        done = _cli(cfg, "set", path, value)
        assert (done.returncode, done.stdout) == (0, f"Updated {path}\n"), done.stderr
    doc = _doc(cfg)
    assert at(doc, "gateway", "port") == 8080
    assert doc["autonomy"] == {"allowed_roots": ["~/a", "/b"]}
    assert doc["risk_profiles"] == {"strict": {"level": "full"}}


@pytest.mark.req("CFG-CLI-08", "CFG-CLI-20", "CFG-CLI-01")
@pytest.mark.parametrize(
    ("args", "error"),
    [
        (("set", "gateway.port", "x"), "invalid value for gateway.port: expected an integer"),
        (("set", "risk_profiles.strict.level", "root"), 'invalid value for '
         'risk_profiles.strict.level: invalid value "root" (expected one of read_only, '
         'supervised, full)'),
        (("set", "gateway.port"), "Value required. Usage: zeroclaw_ref config set <key path> "
         "<value>"),
        (("set", "mcp.servers.github.env", "x"), "mcp.servers.github.env is a map; set one entry "
         "with mcp.servers.github.env.<KEY>"),
        (("set", "gateway.paired_tokens", "[]"), "gateway.paired_tokens is managed by the gateway"),
        (("set", "--no-interactive", TOKEN), "Value required in --no-interactive mode. Usage: "
         "zeroclaw_ref config set --no-interactive <key path> <value>"),
        (("set", TOKEN, "v"), "Secret input requires a terminal on stdin; use --value-stdin or "
         "--no-interactive"),
        (("unset", "gateway.bogus"), "unknown config path: gateway.bogus"),
        (("rename", "mcp.servers.ghost", "x"), "unknown config path: mcp.servers.ghost"),
    ],
)  # fmt: skip
def test_refusals_exit_1_and_leave_the_file_byte_identical(
    cfg: Path, args: tuple[str, ...], error: str
) -> None:
    before = (cfg / "config.toml").read_bytes()
    done = _cli(cfg, *args)
    assert (done.returncode, done.stdout, done.stderr) == (1, "", f"ERROR: {error}\n")
    assert (cfg / "config.toml").read_bytes() == before


@pytest.mark.req("CFG-CLI-20")
def test_a_broken_file_is_refused_with_the_load_error(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("[gateway]\nprot = 1\n")
    done = _cli(tmp_path, "set", "gateway.port", "2")
    assert done.returncode == 1
    assert done.stderr == f"ERROR: {tmp_path / 'config.toml'}:2: gateway.prot: unknown key\n"
    assert (tmp_path / "config.toml").read_text() == "[gateway]\nprot = 1\n"


@pytest.mark.req("CFG-CLI-01")
def test_usage_errors_exit_2(cfg: Path) -> None:
    assert _cli(cfg, "get").returncode == 2
    assert _cli(cfg, "frobnicate").returncode == 2


@pytest.mark.req("CFG-CLI-10", "CFG-CLI-11", "CFG-CLI-12", "CFG-SECRETS-03", "CFG-SECRETS-11")
def test_secrets_from_stdin_are_encrypted_and_never_printed(cfg: Path) -> None:
    done = _cli(cfg, "set", "--value-stdin", TOKEN, stdin="ghp_abc\r\n")
    assert (done.returncode, done.stdout, done.stderr) == (
        0, f"Updated {TOKEN}\n", "✓ Secret received\n"
    )  # fmt: skip
    stored = text_at(_doc(cfg), "mcp", "servers", 0, "env", "GITHUB_TOKEN")
    key = read_key(cfg / ".secret_key")
    assert key is not None and decrypt(TOKEN, stored, key) == "ghp_abc"
    assert (cfg / ".secret_key").stat().st_mode & 0o777 == 0o600
    # the hand-written plain api_key was encrypted by the same write (CFG-SECRETS-04)
    assert text_at(_doc(cfg), "providers", "main", "api_key").startswith("enc2:")
    assert _cli(cfg, "get", TOKEN).stdout == "****\n"
    removed = _cli(cfg, "set", "--value-stdin", TOKEN, stdin="")
    assert (removed.returncode, removed.stdout, removed.stderr) == (0, f"Removed {TOKEN}\n", "")
    assert _cli(cfg, "get", TOKEN).stdout == "<unset>\n"


@pytest.mark.req("CFG-CLI-09", "CFG-CLI-11")
def test_a_terminal_gets_masked_input_and_the_argument_is_ignored(cfg: Path) -> None:
    argv = [sys.executable, "-m", "zeroclaw_ref", "--config-dir", str(cfg), "config", "set"]
    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the child
        os.execve(sys.executable, [*argv, TOKEN, "from-argv"], _env())
    seen = b""
    typed = False
    while True:
        ready, _, _ = select.select([fd], [], [], 60)
        assert ready, seen  # a guard against a hang, not a timing assertion
        try:
            chunk = os.read(fd, 1024)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
        if not typed and f"Enter value for {TOKEN}: ".encode() in seen:
            os.write(fd, b"typed-secret\n")
            typed = True
    _, status = os.waitpid(pid, 0)
    output = seen.decode()
    assert os.waitstatus_to_exitcode(status) == 0, output
    assert f"⚠ {TOKEN} is an encrypted secret — using masked input." in output
    assert output.index("⚠") < output.index("Enter value for")
    assert "✓ Secret received" in output and f"Updated {TOKEN}" in output
    assert "typed-secret" not in output  # no echo
    stored = text_at(_doc(cfg), "mcp", "servers", 0, "env", "GITHUB_TOKEN")
    key = read_key(cfg / ".secret_key")
    assert key is not None and decrypt(TOKEN, stored, key) == "typed-secret"


@pytest.mark.req("CFG-CLI-10", "CFG-SECRETS-15")
def test_no_interactive_takes_the_argument_and_masked_keeps_the_value(cfg: Path) -> None:
    assert _cli(cfg, "set", "--no-interactive", TOKEN, "one").returncode == 0
    before = (cfg / "config.toml").read_bytes()
    done = _cli(cfg, "set", "--no-interactive", TOKEN, "***MASKED***")
    assert (done.returncode, done.stdout) == (0, f"Updated {TOKEN}\n")
    assert (cfg / "config.toml").read_bytes() == before


@pytest.mark.req("CFG-VALUE-04", "CFG-CLI-25")
def test_the_server_list_is_replaced_and_new_errors_are_warned(cfg: Path) -> None:
    servers = '[{"name": "web", "transport": "http"}]'
    done = _cli(cfg, "set", "mcp.servers", servers)
    assert (done.returncode, done.stdout) == (0, "Updated mcp.servers\n")
    assert done.stderr.splitlines()[-2:] == [
        "warning: mcp.servers[0] with transport=http requires url",
        "warning: the configuration now has errors; run 'zeroclaw_ref config validate'",
    ]
    assert _doc(cfg)["mcp"] == {"servers": [{"name": "web", "transport": "http"}]}


@pytest.mark.req("CFG-CLI-17")
def test_set_under_an_override_still_writes_and_warns(cfg: Path) -> None:
    done = _cli(cfg, "set", "gateway.port", "1", env={"ZEROCLAW_gateway__port": "2"})
    assert done.returncode == 0
    assert done.stderr == (
        "warning: gateway.port is overridden by ZEROCLAW_gateway__port; the file value applies "
        "only without that variable\n"
    )
    assert at(_doc(cfg), "gateway", "port") == 1


@pytest.mark.req("CFG-CLI-19", "CFG-CLI-21")
def test_unset_removes_or_reports_nothing(cfg: Path, tmp_path: Path) -> None:
    done = _cli(cfg, "unset", "mcp.servers.github")
    assert (done.returncode, done.stdout) == (0, "Removed mcp.servers.github\n")
    again = _cli(cfg, "unset", "mcp.servers.github")
    assert (again.returncode, again.stdout) == (0, "Nothing to unset at mcp.servers.github\n")
    fresh = tmp_path / "fresh"
    assert _cli(fresh, "set", "gateway.port", "7").returncode == 0
    default = {"model_provider": "demo", "risk_profile": "default", "runtime_profile": "default"}
    assert _doc(fresh)["agents"] == {"default": default}


@pytest.mark.req("CFG-UI-07", "CFG-VALID-15")
def test_rename_reports_and_leaves_bundles(cfg: Path) -> None:
    done = _cli(cfg, "rename", "mcp.servers.github", "gh")
    assert (done.returncode, done.stdout) == (0, "Renamed mcp.servers.github to mcp.servers.gh\n")
    assert _doc(cfg)["mcp_bundles"] == {"dev": {"servers": ["github"]}}
    clash = _cli(cfg, "rename", "mcp.servers.gh", "x__y")
    assert clash.returncode == 1 and "must be 1-63 letters" in clash.stderr


@pytest.mark.req("CFG-CLI-27")
def test_validate_text(cfg: Path, tmp_path: Path) -> None:
    done = _cli(cfg, "validate")
    assert (done.returncode, done.stdout) == (0, "OK: configuration is valid\n")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "config.toml").write_text("[[mcp.servers]]\nname = 'a'\n[mcp_bundles.b]\n")
    done = _cli(bad, "validate")
    assert done.returncode == 1
    assert done.stderr == (
        "ERROR: mcp.servers[0] with transport=stdio requires non-empty command\n"
        "configuration has 1 error(s)\n"
    )


@pytest.mark.req("CFG-CLI-28")
def test_validate_json(cfg: Path, tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "config.toml").write_text("[gateway]\n\nport = 'x'\n")
    done = _cli(tmp_path / "x", "validate", "--json")
    assert done.returncode == 1
    assert json.loads(done.stdout) == {
        "valid": False,
        "errors": [
            {"path": "gateway.port", "line": 3,
             "message": "gateway.port: expected integer, found string"}
        ],
        "warnings": [],
    }  # fmt: skip
    ok = json.loads(_cli(cfg, "validate", "--json").stdout)
    assert ok == {"valid": True, "errors": [], "warnings": []}


@pytest.mark.req("CFG-CLI-22", "CFG-CLI-23")
def test_two_processes_setting_different_keys_keep_both(cfg: Path) -> None:
    command = [sys.executable, "-m", "zeroclaw_ref", "--config-dir", str(cfg), "config", "set"]
    procs = [
        subprocess.Popen([*command, f"agents.a{i}.system_prompt", f"p{i}"], env=_env())
        for i in range(4)
    ]
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0, 0]
    agents = _doc(cfg)["agents"]
    assert agents == {f"a{i}": {"system_prompt": f"p{i}"} for i in range(4)}
