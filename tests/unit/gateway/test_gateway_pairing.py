"""Pairing end to end, and the config writer it uses (acp.md ACP-GW-11, config.md CFG-GW-02,
CFG-CLI-22, CFG-CLI-23)."""

from __future__ import annotations

import hashlib
import re
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest
import requests

from tests.unit.gateway.conftest import Running, demo_config
from zeroclaw_ref.config.write import append_paired_token
from zeroclaw_ref.gateway.bridge import read_target
from zeroclaw_ref.gateway.pairing import is_loopback

Start = Callable[..., Running]


@pytest.mark.req("ACP-GW-11", "ACP-GW-03", "CFG-GW-02")
def test_pairing_code_becomes_a_token_whose_digest_alone_is_stored(start_gateway: Start) -> None:
    running = start_gateway(demo_config(tokens=()))
    [line] = running.announced
    match = re.search(r"Pairing code: (\d{6})", line)
    assert match, line
    code = match.group(1)
    shown = requests.get(running.http("/pair/code"), timeout=10)
    assert shown.json() == {"pairing_code": code}

    wrong = requests.post(running.http("/pair"), headers={"X-Pairing-Code": "000000x"}, timeout=10)
    assert wrong.status_code == 403
    paired = requests.post(running.http("/pair"), headers={"X-Pairing-Code": code}, timeout=10)
    assert paired.status_code == 200
    token = paired.json()["token"]

    text = (running.config_dir / "config.toml").read_text()
    assert token not in text  # plaintext never stored
    stored = tomllib.loads(text)["gateway"]["paired_tokens"]
    assert stored == [hashlib.sha256(token.encode()).hexdigest()]
    assert tomllib.loads(text)["agents"]["a"]["model_provider"] == "demo"  # the rest kept

    auth = {"Authorization": f"Bearer {token}"}
    assert requests.get(running.http("/api/tools"), headers=auth, timeout=10).status_code == 200
    # the code works once
    again = requests.post(running.http("/pair"), headers={"X-Pairing-Code": code}, timeout=10)
    assert again.status_code == 403
    assert requests.get(running.http("/pair/code"), timeout=10).json() == {"pairing_code": None}


@pytest.mark.req("ACP-GW-11")
def test_no_pairing_code_when_a_token_is_configured(start_gateway: Start) -> None:
    running = start_gateway()
    assert running.announced == []
    assert requests.get(running.http("/pair/code"), timeout=10).json() == {"pairing_code": None}


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("127.8.0.1", True), ("::1", True), ("10.0.0.1", False), ("x", False)],
)
def test_pair_code_is_shown_only_to_loopback_addresses(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


@pytest.mark.req("CFG-CLI-23")
def test_append_keeps_other_settings_mode_and_is_idempotent(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_bytes(b"\xef\xbb\xbf[acp]\nmax_sessions = 3\n[gateway]\nport = 9\n")
    path.chmod(0o640)
    digest = "a" * 64
    append_paired_token(tmp_path, digest)
    append_paired_token(tmp_path, digest)
    document = tomllib.loads(path.read_text())
    assert document == {
        "acp": {"max_sessions": 3},
        "gateway": {"port": 9, "paired_tokens": [digest]},
    }
    assert path.stat().st_mode & 0o777 == 0o640
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]  # none left


def test_append_refuses_anything_but_a_digest(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        append_paired_token(tmp_path, "zc_plaintext")
    assert not (tmp_path / "config.toml").exists()


@pytest.mark.req("ACP-BR-04")
@pytest.mark.parametrize(
    ("gateway", "url"),
    [
        ('host = "::1"\nport = 9000\npath_prefix = "/zc/"', "ws://[::1]:9000/zc/acp"),
        ('host = "10.0.0.5"\nport = 81', "ws://10.0.0.5:81/acp"),
    ],
)
def test_the_bridge_targets_the_gateway_section_only(
    tmp_path: Path, gateway: str, url: str
) -> None:
    text = '[acp]\ndefault_agent = "x"\n[agents.x]\nport = 1\n[gateway]\n' + gateway + "\n"
    (tmp_path / "config.toml").write_text("\ufeff" + text, encoding="utf-8")
    assert read_target(tmp_path).url == url  # never an `?agent=` query
