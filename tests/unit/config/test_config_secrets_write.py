"""Secrets on the write path: encryption, the key file's creation, `op://` resolution (§11)."""

from __future__ import annotations

import os
import stat
import tomllib
from pathlib import Path

import pytest

from tests.helpers.json_at import at, obj_at, text_at
from zeroclaw_ref.config import secrets, write
from zeroclaw_ref.config.edit import EditError
from zeroclaw_ref.config.load import load_config
from zeroclaw_ref.config.model import MASK, ConfigError
from zeroclaw_ref.config.view import get_leaf, read_view, render_json, render_text

KEY = bytes(range(32))
TOKEN = "mcp.servers.gh.env.GITHUB_TOKEN"


def _doc(cfg: Path) -> dict[str, object]:
    return tomllib.loads((cfg / "config.toml").read_text())


def _token(cfg: Path) -> str:
    return text_at(_doc(cfg), "mcp", "servers", 0, "env", "GITHUB_TOKEN")


def _key(cfg: Path) -> bytes:
    key = secrets.read_key(cfg / ".secret_key")
    assert key is not None
    return key


@pytest.mark.req("CFG-SECRETS-03", "CFG-SECRETS-11", "CFG-CLI-11", "CFG-SECRETS-09")
def test_a_secret_is_stored_encrypted_under_a_new_0600_key(tmp_path: Path) -> None:
    write.set_text(tmp_path, TOKEN, "ghp_123")
    stored = _token(tmp_path)
    assert stored.startswith("enc2:") and "ghp_123" not in (tmp_path / "config.toml").read_text()
    assert stored == stored.lower() and len(bytes.fromhex(stored[5:])) == 12 + 7 + 16
    key_path = tmp_path / ".secret_key"
    assert stat.S_IMODE(key_path.stat().st_mode) == 0o600
    assert len(key_path.read_text()) == 65 and key_path.read_text().endswith("\n")
    assert secrets.decrypt(TOKEN, stored, _key(tmp_path)) == "ghp_123"
    # A second secret reuses the key; the earlier ciphertext is copied unchanged.
    before = key_path.read_bytes()
    write.set_text(tmp_path, "providers.demo.api_key", "sk")
    assert key_path.read_bytes() == before and _token(tmp_path) == stored
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.req("CFG-SECRETS-11")
def test_no_key_file_is_created_without_a_secret_to_encrypt(tmp_path: Path) -> None:
    write.set_text(tmp_path, "gateway.port", "1234")
    write.set_text(tmp_path, "providers.demo.api_key", "op://vault/item/field")
    assert not (tmp_path / ".secret_key").exists()
    assert at(_doc(tmp_path), "providers", "demo", "api_key") == "op://vault/item/field"


@pytest.mark.req("CFG-SECRETS-13", "CFG-SECRETS-09")
def test_an_existing_key_file_is_used_and_never_rewritten(tmp_path: Path) -> None:
    key_path = tmp_path / ".secret_key"
    key_path.write_text("  " + KEY.hex().upper() + "  \n")
    key_path.chmod(0o644)
    write.set_text(tmp_path, TOKEN, "v")
    assert secrets.decrypt(TOKEN, _token(tmp_path), KEY) == "v"
    assert key_path.read_text() == "  " + KEY.hex().upper() + "  \n"
    assert stat.S_IMODE(key_path.stat().st_mode) == 0o644


@pytest.mark.req("CFG-SECRETS-10", "CFG-SECRETS-16")
def test_a_symlinked_key_file_refuses_the_write(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.write_text(KEY.hex())
    (tmp_path / ".secret_key").symlink_to(real)
    (tmp_path / "config.toml").write_text("")
    with pytest.raises(EditError) as info:
        write.set_text(tmp_path, TOKEN, "v")
    assert info.value.lines == ("refusing to use a symlinked or non-regular secret key file",)
    assert (tmp_path / "config.toml").read_text() == ""


@pytest.mark.req("CFG-SECRETS-12")
def test_losing_the_creation_race_uses_the_winners_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_link = os.link

    def race(src: Path, dst: Path) -> None:
        Path(dst).write_text(KEY.hex() + "\n")  # another process published first
        real_link(src, dst)

    monkeypatch.setattr(os, "link", race)  # the os module secrets.py links with
    write.set_text(tmp_path, TOKEN, "v")
    assert secrets.decrypt(TOKEN, _token(tmp_path), KEY) == "v"
    assert (tmp_path / ".secret_key").read_text() == KEY.hex() + "\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.req("CFG-SECRETS-12", "CFG-SECRETS-16")
def test_a_failed_creation_aborts_the_write_and_cleans_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(src: Path, dst: Path) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", refuse)
    (tmp_path / "config.toml").write_text("[gateway]\nport = 1\n")
    with pytest.raises(EditError) as info:
        write.set_text(tmp_path, TOKEN, "v")
    assert info.value.lines == ("cannot create secret key file: Operation not permitted",)
    assert (tmp_path / "config.toml").read_text() == "[gateway]\nport = 1\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".config.toml.lock", "config.toml"]


@pytest.mark.req("CFG-SECRETS-04")
def test_every_write_encrypts_hand_written_plain_secrets_and_keeps_the_rest(
    tmp_path: Path,
) -> None:
    (tmp_path / "config.toml").write_text(
        "[providers.p]\nkind = 'openai'\nmodel = 'm'\napi_key = 'plain'\n"
        "extra_headers = { A = 'op://v/i/f', B = '', C = 'enc:legacy' }\n"
    )
    write.set_text(tmp_path, "gateway.port", "2")
    provider = obj_at(_doc(tmp_path), "providers", "p")
    assert secrets.decrypt("k", text_at(provider, "api_key"), _key(tmp_path)) == "plain"
    assert provider["extra_headers"] == {"A": "op://v/i/f", "B": "", "C": "enc:legacy"}


@pytest.mark.req("CFG-SECRETS-08")
def test_with_encryption_off_new_secrets_stay_plain_and_old_ones_encrypted(
    tmp_path: Path,
) -> None:
    write.set_text(tmp_path, "mcp.servers.gh.command", "npx")
    write.set_text(tmp_path, TOKEN, "first")
    write.set_text(tmp_path, "secrets.encrypt", "false")
    write.set_text(tmp_path, "mcp.servers.gh.env.OTHER", "second")
    env = obj_at(_doc(tmp_path), "mcp", "servers", 0, "env")
    assert env["OTHER"] == "second" and text_at(env, "GITHUB_TOKEN").startswith("enc2:")
    snapshot = load_config(tmp_path, tmp_path / "data", {})
    assert dict(snapshot.mcp.servers[0].env) == {"GITHUB_TOKEN": "first", "OTHER": "second"}


@pytest.mark.req("CFG-SECRETS-15", "CFG-CLI-12")
def test_masked_keeps_the_stored_value_and_empty_removes_it(tmp_path: Path) -> None:
    write.set_text(tmp_path, TOKEN, "v")
    write.set_text(tmp_path, "providers.demo.api_key", "k")
    before = (tmp_path / "config.toml").read_bytes()
    assert write.set_text(tmp_path, TOKEN, "***MASKED***").message == f"Updated {TOKEN}"
    assert (tmp_path / "config.toml").read_bytes() == before
    assert write.set_text(tmp_path, TOKEN, "").message == f"Removed {TOKEN}"
    assert write.set_text(tmp_path, "providers.demo.api_key", "").changed
    doc = _doc(tmp_path)
    assert at(doc, "mcp", "servers", 0, "env") == {}
    assert "api_key" not in obj_at(doc, "providers", "demo")
    write.set_text(tmp_path, "agents.default.system_prompt", "")
    assert obj_at(doc, "agents", "default").get("system_prompt") is None
    assert at(_doc(tmp_path), "agents", "default", "system_prompt") == ""


@pytest.mark.req("CFG-VALUE-04", "CFG-SECRETS-15")
def test_a_replaced_server_list_encrypts_its_maps_and_keeps_masked_values(tmp_path: Path) -> None:
    write.set_text(tmp_path, TOKEN, "v")
    stored = _token(tmp_path)
    write.set_text(
        tmp_path,
        "mcp.servers",
        '[{"name": "gh", "command": "npx", "env": {"GITHUB_TOKEN": "***MASKED***", "N": "new"},'
        ' "headers": {"Gone": "***MASKED***"}}]',
    )
    server = obj_at(_doc(tmp_path), "mcp", "servers", 0)
    assert at(server, "env", "GITHUB_TOKEN") == stored
    assert secrets.decrypt("k", text_at(server, "env", "N"), _key(tmp_path)) == "new"
    assert server["headers"] == {}


def _fake_op(tmp_path: Path, body: str) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    op = bin_dir / "op"
    op.write_text("#!/bin/sh\n" + body)
    op.chmod(0o755)
    return {"PATH": f"{bin_dir}:/usr/bin:/bin"}


def _op_config(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        "[providers.p]\nkind = 'openai'\nmodel = 'm'\napi_key = 'op://vault/item/field'\n"
    )


@pytest.mark.req("CFG-SECRETS-07", "CFG-SECRETS-05")
def test_op_references_are_read_with_op_and_never_stored(tmp_path: Path) -> None:
    env = _fake_op(tmp_path, 'test "$1 $2" = "read op://vault/item/field" || exit 3\necho " s3 "\n')
    _op_config(tmp_path)
    snapshot = load_config(tmp_path, tmp_path / "data", env)
    assert snapshot.providers["p"].api_key == "s3"
    write.set_text(tmp_path, "gateway.port", "2")
    assert at(_doc(tmp_path), "providers", "p", "api_key") == "op://vault/item/field"


@pytest.mark.req("CFG-SECRETS-07", "CFG-SECRETS-16")
def test_op_failures_are_load_errors_naming_the_key_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prefix = "providers.p.api_key: could not resolve 1Password reference: "
    _op_config(tmp_path)
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, tmp_path / "data", {"PATH": str(tmp_path / "nowhere")})
    assert info.value.lines == (prefix + "op executable not found",)
    env = _fake_op(tmp_path, "echo leaked-secret\nexit 4\n")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, tmp_path / "data", env)
    assert info.value.lines == (prefix + "op read exited with status 4",)


@pytest.mark.req("CFG-SECRETS-07")
def test_a_hanging_op_times_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fifo = tmp_path / "never"
    os.mkfifo(fifo)
    # `exec` so that the timeout kills the process holding the output pipe.
    env = _fake_op(tmp_path, f'exec cat "{fifo}"\n')
    monkeypatch.setattr(secrets, "OP_TIMEOUT_SECS", 0.2)
    _op_config(tmp_path)
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, tmp_path / "data", env)
    assert info.value.lines == (
        "providers.p.api_key: could not resolve 1Password reference: op read timed out after 0.2 s",
    )


BUNDLE = "[mcp_bundles.b]\nservers = []\n"


@pytest.mark.req("MCP-CFG-11")
def test_env_and_header_values_are_encrypted_at_rest_and_never_shown(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        "[[mcp.servers]]\nname = 'gh'\ntransport = 'http'\nurl = 'https://h/mcp'\n"
        "[[mcp.servers]]\nname = 'local'\ncommand = 'x'\n" + BUNDLE
    )
    write.set_text(tmp_path, "mcp.servers.gh.headers.Authorization", "Bearer hdr-secret-1")
    write.set_text(tmp_path, "mcp.servers.local.env.API_TOKEN", "env-secret-2")
    text = (tmp_path / "config.toml").read_text()
    assert "hdr-secret-1" not in text and "env-secret-2" not in text
    servers = tomllib.loads(text)["mcp"]["servers"]
    assert servers[0]["headers"]["Authorization"].startswith("enc2:")
    assert servers[1]["env"]["API_TOKEN"].startswith("enc2:")
    snapshot = load_config(tmp_path, tmp_path / "data", {})  # the runtime gets the plain values
    assert snapshot.mcp.servers[0].headers["Authorization"] == "Bearer hdr-secret-1"
    assert snapshot.mcp.servers[1].env["API_TOKEN"] == "env-secret-2"
    leaves = read_view(tmp_path, {})
    shown = {leaf.path: leaf for leaf in leaves if leaf.path.startswith("mcp.servers.")}
    header = shown["mcp.servers.gh.headers.Authorization"]
    env = shown["mcp.servers.local.env.API_TOKEN"]
    for leaf in (header, env):
        assert leaf.secret and render_text(leaf) == MASK
        assert render_json(leaf)["value"] == "***MASKED***"
    rendered = "\n".join(f"{leaf.path} = {render_text(leaf)}" for leaf in leaves)
    assert "secret-1" not in rendered and "secret-2" not in rendered
    assert "enc2:" not in rendered  # not even the ciphertext
    assert render_text(get_leaf(leaves, "mcp.servers.gh.headers.Authorization")) == MASK
