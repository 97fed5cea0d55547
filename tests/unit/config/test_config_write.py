"""The one write path of config.toml: edits, refusals, atomic replacement, locking (§12.5, §13)."""

from __future__ import annotations

import os
import threading
import tomllib
from pathlib import Path

import pytest

from tests.helpers.json_at import at, obj_at, objects_at
from zeroclaw_ref.config import write
from zeroclaw_ref.config.edit import EditError, check_settable, parse_path
from zeroclaw_ref.config.load import EMBEDDED_DEFAULT, load_config
from zeroclaw_ref.config.model import ConfigError

SERVERS = """
[providers.demo]
kind = "demo"

[[mcp.servers]]
name = "alpha"
command = "a"

[[mcp.servers]]
name = "beta"
command = "b"

[mcp_bundles.dev]
servers = ["alpha"]
"""


def _doc(cfg: Path) -> dict[str, object]:
    return tomllib.loads((cfg / "config.toml").read_text())


def _write(cfg: Path, text: str) -> Path:
    path = cfg / "config.toml"
    path.write_text(text)
    return path


@pytest.mark.req("CFG-CLI-21", "CFG-DEFAULT-03")
def test_the_first_set_starts_from_the_embedded_default(tmp_path: Path) -> None:
    outcome = write.set_text(tmp_path, "gateway.port", "8080")
    assert outcome.message == "Updated gateway.port"
    expected = tomllib.loads(EMBEDDED_DEFAULT)
    expected["gateway"] = {"port": 8080}
    assert _doc(tmp_path) == expected
    assert ((tmp_path / "config.toml").stat().st_mode & 0o777) == 0o600


@pytest.mark.req("CFG-CLI-22", "CFG-CLI-26")
def test_set_keeps_key_order_appends_new_keys_and_drops_comments(tmp_path: Path) -> None:
    _write(tmp_path, "# mine\n[gateway]\nport = 1\nhost = 'h'\n")
    write.set_text(tmp_path, "gateway.require_pairing", "false")
    assert list(obj_at(_doc(tmp_path), "gateway")) == ["port", "host", "require_pairing"]
    assert "# mine" not in (tmp_path / "config.toml").read_text()


@pytest.mark.req("CFG-CLI-23")
def test_the_file_mode_is_kept_and_no_temporary_file_is_left(tmp_path: Path) -> None:
    path = _write(tmp_path, "")
    path.chmod(0o640)
    write.set_text(tmp_path, "scheduler.tick_secs", "5")
    assert (path.stat().st_mode & 0o777) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == [".config.toml.lock", "config.toml"]


@pytest.mark.req("CFG-CLI-23")
def test_a_failed_replace_leaves_the_file_and_removes_the_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path, "[gateway]\nport = 1\n")

    def refuse(self: Path, target: Path) -> Path:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "replace", refuse)
    with pytest.raises(ConfigError) as info:
        write.set_text(tmp_path, "gateway.port", "2")
    assert info.value.lines == (f"{path}: cannot write: No space left on device",)
    assert path.read_text() == "[gateway]\nport = 1\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".config.toml.lock", "config.toml"]


@pytest.mark.req("CFG-CLI-20")
@pytest.mark.parametrize(
    "raw",
    [b"[gateway\n", b"\xff\xfe", b"[gateway]\nbogus = 1\n"],
    ids=["toml", "utf8", "schema"],
)
def test_a_file_that_does_not_load_is_refused_byte_for_byte(tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "config.toml"
    path.write_bytes(raw)
    with pytest.raises(ConfigError):
        write.set_text(tmp_path, "gateway.port", "2")
    with pytest.raises(ConfigError):
        write.unset(tmp_path, "gateway")
    assert path.read_bytes() == raw


@pytest.mark.req("CFG-CLI-22")
def test_a_schema_failure_of_the_edited_document_refuses_the_write(tmp_path: Path) -> None:
    path = _write(tmp_path, SERVERS)
    before = path.read_bytes()
    with pytest.raises(EditError) as info:
        write.set_text(tmp_path, "providers.fresh.model", "m")
    assert info.value.lines == ("providers.fresh: kind is required",)
    with pytest.raises(EditError) as info:
        write.set_text(tmp_path, "schema_version", "2")
    assert info.value.lines == (
        "invalid value for schema_version: unsupported schema_version 2 (expected 1)",
    )
    with pytest.raises(EditError) as info:
        write.set_text(tmp_path, "agents.Bad.enabled", "true")
    assert info.value.lines[0].startswith("agents.Bad: invalid alias 'Bad': ")
    assert path.read_bytes() == before


@pytest.mark.req("CFG-CLI-16", "CFG-CLI-14", "CFG-VALUE-01", "CFG-VALUE-02")
def test_set_creates_missing_entries_and_converts_values(tmp_path: Path) -> None:
    _write(tmp_path, SERVERS)
    write.set_text(tmp_path, "agents.coder.risk_profile", "strict")
    write.set_text(tmp_path, "risk_profiles.strict.allowed_commands", "git, ls ,,")
    write.set_text(tmp_path, "risk_profiles.strict.excluded_tools", '["shell"]')
    write.set_text(tmp_path, "runtime_profiles.r.temperature", "0.5")
    write.set_text(tmp_path, "mcp.servers.gamma.url", "https://x.example/mcp")
    doc = _doc(tmp_path)
    assert doc["agents"] == {"coder": {"risk_profile": "strict"}}
    assert doc["risk_profiles"] == {
        "strict": {"allowed_commands": ["git", "ls"], "excluded_tools": ["shell"]}
    }
    assert doc["runtime_profiles"] == {"r": {"temperature": 0.5}}
    servers = objects_at(doc, "mcp", "servers")
    assert [s["name"] for s in servers] == ["alpha", "beta", "gamma"]
    assert servers[2] == {"name": "gamma", "url": "https://x.example/mcp"}


@pytest.mark.req("CFG-CLI-08", "CFG-VALUE-03", "CFG-CLI-13", "CFG-CLI-15", "CFG-GW-02")
@pytest.mark.parametrize(
    ("path", "text", "message"),
    [
        ("gateway.port", "x", "invalid value for gateway.port: expected an integer"),
        ("gateway.port", "0", "invalid value for gateway.port: 0 is out of range (1..65535)"),
        ("mcp.enabled", "yes", "invalid value for mcp.enabled: expected true or false"),
        ("runtime_profiles.r.temperature", "nan", "invalid value for "
         "runtime_profiles.r.temperature: expected a number"),
        ("autonomy.allowed_tools", "[1]", "invalid value for autonomy.allowed_tools: "
         "expected a list of strings"),
        ("gateway", "x", "gateway is a table; set one of its keys"),
        ("agents.a", "x", "agents.a is a table; set one of its keys"),
        ("mcp.servers.alpha", "x", "mcp.servers.alpha is a table; set one of its keys"),
        ("peripherals.boards", "[]", "peripherals.boards is a list of tables; edit config.toml "
         "directly"),
        ("runtime_profiles.r.tool_filter_groups", "[]", "runtime_profiles.r.tool_filter_groups "
         "is a list of tables; edit config.toml directly"),
        ("mcp.servers.alpha.env", "x", "mcp.servers.alpha.env is a map; set one entry with "
         "mcp.servers.alpha.env.<KEY>"),
        ("providers.p.extra_headers", "x", "providers.p.extra_headers is a map; set one entry "
         "with providers.p.extra_headers.<KEY>"),
        ("mcp.servers.alpha.name", "x", "mcp.servers.alpha.name is the server's key and cannot "
         "be set; rename the server with 'zeroclaw_ref config rename mcp.servers.alpha <new "
         "name>'"),
        ("gateway.paired_tokens", "[]", "gateway.paired_tokens is managed by the gateway"),
        ("gateway.nope", "x", "unknown config path: gateway.nope"),
        ("peripherals.boards.0.board", "x", "unknown config path: peripherals.boards.0.board"),
        ("gateway..port", "x", "unknown config path: gateway..port"),
        ("mcp.servers.bad__name.command", "x", "mcp.servers[2].name 'bad__name' must be 1-63 "
         "letters, digits, '_' or '-', start with a letter or digit, and not contain '__'"),
    ],
)  # fmt: skip
def test_refused_values_name_the_reason_and_leave_the_file_alone(
    tmp_path: Path, path: str, text: str, message: str
) -> None:
    file = _write(tmp_path, SERVERS)
    before = file.read_bytes()
    with pytest.raises(EditError) as info:
        write.set_text(tmp_path, path, text)
    assert info.value.lines == (message,)
    assert file.read_bytes() == before


@pytest.mark.req("CFG-CLI-02")
def test_secret_map_entries_take_the_rest_of_the_path_as_their_key() -> None:
    target = parse_path("providers.p.extra_headers.X.Custom")
    assert (target.steps[-1].name, target.secret) == ("X.Custom", True)
    assert check_settable("mcp.servers.s.headers.Authorization").secret


@pytest.mark.req("CFG-VALUE-04")
def test_the_server_list_is_replaced_from_a_json_array(tmp_path: Path) -> None:
    _write(tmp_path, SERVERS)
    outcome = write.set_text(
        tmp_path, "mcp.servers", '[{"name": "one", "command": "c", "args": ["-y"]}]'
    )
    assert outcome.message == "Updated mcp.servers"
    assert _doc(tmp_path)["mcp"] == {"servers": [{"name": "one", "command": "c", "args": ["-y"]}]}


@pytest.mark.req("CFG-VALUE-04", "CFG-MCP-05")
@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ("{}", ["invalid value for mcp.servers: expected a JSON array of server tables"]),
        ("[1]", ["invalid value for mcp.servers: expected a JSON array of server tables"]),
        ('[{"name": "a", "transport": "ftp", "x": 1}]', [
            'invalid value for mcp.servers[0].transport: invalid value "ftp" (expected one of '
            "stdio, http, sse)",
            "invalid value for mcp.servers[0].x: unknown key",
        ]),
        ('[{"command": "c"}]', ["invalid value for mcp.servers[0]: name is required"]),
        ('[{"name": "a.b"}]', ["mcp.servers[0].name 'a.b' must be 1-63 letters, digits, '_' or "
                               "'-', start with a letter or digit, and not contain '__'"]),
    ],
)  # fmt: skip
def test_a_bad_server_list_is_refused(tmp_path: Path, text: str, lines: list[str]) -> None:
    file = _write(tmp_path, SERVERS)
    before = file.read_bytes()
    with pytest.raises(EditError) as info:
        write.set_text(tmp_path, "mcp.servers", text)
    assert sorted(info.value.lines) == sorted(lines)
    assert file.read_bytes() == before


@pytest.mark.req("CFG-CLI-19")
@pytest.mark.parametrize(
    ("path", "message", "gone"),
    [
        ("mcp.servers.alpha", "Removed mcp.servers.alpha", ["alpha"]),
        ("mcp.servers.alpha.command", "Removed mcp.servers.alpha.command", []),
        ("mcp_bundles.dev", "Removed mcp_bundles.dev", []),
        ("mcp.servers", "Removed mcp.servers", ["alpha", "beta"]),
        ("gateway", "Nothing to unset at gateway", []),
        ("agents.ghost.enabled", "Nothing to unset at agents.ghost.enabled", []),
        ("mcp.servers.ghost.env.K", "Nothing to unset at mcp.servers.ghost.env.K", []),
    ],
)
def test_unset_removes_what_the_path_names_or_reports_nothing(
    tmp_path: Path, path: str, message: str, gone: list[str]
) -> None:
    file = _write(tmp_path, SERVERS)
    before = file.read_bytes()
    outcome = write.unset(tmp_path, path)
    assert outcome.message == message
    if message.startswith("Nothing"):
        assert file.read_bytes() == before
        return
    mcp = _doc(tmp_path).get("mcp", {})
    assert isinstance(mcp, dict)
    names = [s["name"] for s in objects_at(mcp, "servers")] if "servers" in mcp else []
    assert not set(gone) & set(names)


@pytest.mark.req("CFG-CLI-19", "CFG-CLI-21")
def test_unset_without_a_file_edits_the_default_and_a_no_op_creates_nothing(
    tmp_path: Path,
) -> None:
    assert write.unset(tmp_path, "gateway.port").message == "Nothing to unset at gateway.port"
    assert not (tmp_path / "config.toml").exists()
    write.unset(tmp_path, "agents.default")
    assert _doc(tmp_path)["agents"] == {}
    assert "providers" in _doc(tmp_path)


@pytest.mark.req("CFG-MCP-01")
def test_a_file_using_mcpservers_is_edited_under_that_spelling(tmp_path: Path) -> None:
    _write(tmp_path, "[[mcp.mcpServers]]\nname = 's'\ncommand = 'c'\n")
    write.set_text(tmp_path, "mcp.servers.s.command", "d")
    assert _doc(tmp_path)["mcp"] == {"mcpServers": [{"name": "s", "command": "d"}]}


@pytest.mark.req("CFG-UI-07", "CFG-VALID-15")
def test_rename_changes_the_name_in_place_and_leaves_bundles(tmp_path: Path) -> None:
    _write(tmp_path, SERVERS)
    write.set_text(tmp_path, "mcp.servers.alpha.env.TOKEN", "t0k")
    stored = at(_doc(tmp_path), "mcp", "servers", 0, "env", "TOKEN")
    outcome = write.rename_server(tmp_path, "alpha", "first")
    assert outcome.message == "Renamed mcp.servers.alpha to mcp.servers.first"
    doc = _doc(tmp_path)
    servers = objects_at(doc, "mcp", "servers")
    assert servers[0] == {"name": "first", "command": "a", "env": {"TOKEN": stored}}
    assert [s["name"] for s in servers] == ["first", "beta"]
    assert doc["mcp_bundles"] == {"dev": {"servers": ["alpha"]}}


@pytest.mark.req("CFG-UI-07")
@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("ghost", "x", "unknown config path: mcp.servers.ghost"),
        ("alpha", "BETA", "mcp.servers contains duplicate name: BETA"),
        ("alpha", "no__pe", "mcp.servers[0].name 'no__pe' must be 1-63 letters, digits, '_' or "
         "'-', start with a letter or digit, and not contain '__'"),
    ],
)  # fmt: skip
def test_rename_refusals(tmp_path: Path, old: str, new: str, message: str) -> None:
    file = _write(tmp_path, SERVERS)
    before = file.read_bytes()
    with pytest.raises(EditError) as info:
        write.rename_server(tmp_path, old, new)
    assert info.value.lines == (message,)
    assert file.read_bytes() == before


@pytest.mark.req("CFG-UI-07")
def test_rename_may_change_only_the_case_of_its_own_name(tmp_path: Path) -> None:
    _write(tmp_path, SERVERS)
    write.rename_server(tmp_path, "alpha", "Alpha")
    assert at(_doc(tmp_path), "mcp", "servers", 0, "name") == "Alpha"


@pytest.mark.req("CFG-UI-05")
def test_create_server_appends_a_named_server_and_refuses_duplicates(tmp_path: Path) -> None:
    _write(tmp_path, SERVERS)
    assert write.create_server(tmp_path, "gamma").message == "Created mcp.servers.gamma"
    assert at(_doc(tmp_path), "mcp", "servers", 2) == {"name": "gamma"}
    with pytest.raises(EditError) as info:
        write.create_server(tmp_path, "Alpha")
    assert info.value.lines == ("mcp.servers contains duplicate name: Alpha",)


@pytest.mark.req("CFG-GW-02")
def test_paired_tokens_are_appended_once_through_the_same_path(tmp_path: Path) -> None:
    digest = "ab" * 32
    write.append_paired_token(tmp_path, digest)
    write.append_paired_token(tmp_path, digest)
    doc = _doc(tmp_path)
    assert doc["gateway"] == {"paired_tokens": [digest]}
    assert "agents" in doc  # started from the embedded default
    with pytest.raises(ValueError):
        write.append_paired_token(tmp_path, "nope")


@pytest.mark.req("CFG-CLI-17", "CFG-CLI-25")
def test_follow_up_warnings_report_overrides_and_new_semantic_errors(tmp_path: Path) -> None:
    write.set_text(tmp_path, "mcp.servers.web.transport", "http")
    env = {"ZEROCLAW_gateway__port": "9"}
    warnings = write.follow_up_warnings(tmp_path, tmp_path / "data", "gateway.port", env)
    assert warnings == [
        "gateway.port is overridden by ZEROCLAW_gateway__port; the file value applies only "
        "without that variable",
        "mcp.servers[0] with transport=http requires url",
        "the configuration now has errors; run 'zeroclaw_ref config validate'",
    ]
    write.set_text(tmp_path, "mcp.servers.web.url", "https://x.example/mcp")
    assert write.follow_up_warnings(tmp_path, tmp_path / "data", "mcp.servers.web.url", {}) == []


@pytest.mark.req("CFG-CLI-24")
def test_overrides_and_defaults_never_reach_the_file(tmp_path: Path) -> None:
    _write(tmp_path, "[gateway]\nport = 1\n")
    os.environ.pop("ZEROCLAW_gateway__host", None)
    write.set_text(tmp_path, "gateway.require_pairing", "false")
    assert _doc(tmp_path) == {"gateway": {"port": 1, "require_pairing": False}}
    load_config(tmp_path, tmp_path / "data", {"ZEROCLAW_gateway__host": "0.0.0.0"})
    assert _doc(tmp_path) == {"gateway": {"port": 1, "require_pairing": False}}


@pytest.mark.req("CFG-CLI-22", "CFG-CLI-23")
def test_concurrent_writers_serialise_and_lose_no_update(tmp_path: Path) -> None:
    _write(tmp_path, "")
    keys = [f"agents.a{i}.system_prompt" for i in range(12)]
    barrier = threading.Barrier(len(keys))
    errors: list[BaseException] = []

    def run(key: str) -> None:
        try:
            barrier.wait()
            write.set_text(tmp_path, key, key)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(key,)) for key in keys]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    agents = _doc(tmp_path)["agents"]
    assert agents == {f"a{i}": {"system_prompt": keys[i]} for i in range(12)}
