# ruff: noqa: E501 - exact error texts are kept on one line so they can be compared with the spec
"""Secrets at rest on load: decryption, the key file and the error texts (config.md §11)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

from zeroclaw_ref.config.model import ConfigSnapshot
from zeroclaw_ref.config.secrets import encrypt

Loader = Callable[..., ConfigSnapshot]
Failer = Callable[..., list[str]]
KEY = bytes(range(32))


def _enc(value: bytes, key: bytes = KEY) -> str:
    nonce = os.urandom(12)
    return "enc2:" + (nonce + ChaCha20Poly1305(key).encrypt(nonce, value, None)).hex()


def _write_key(tmp_path: Path, text: str | None = None) -> None:
    (tmp_path / ".secret_key").write_text(KEY.hex() + "\n" if text is None else text)


def _config(api_key: str, header: str = "plain") -> str:
    return (
        f"[providers.p]\nkind = 'openai'\nmodel = 'm'\napi_key = '{api_key}'\n"
        f"[[mcp.servers]]\nname = 'gh'\ncommand = 'npx'\nenv = {{ TOKEN = '{header}' }}\n"
        "[mcp_bundles.b]\nservers = ['gh']\n"
    )


@pytest.mark.req("CFG-SECRETS-02", "CFG-SECRETS-03", "CFG-SECRETS-05", "CFG-SECRETS-09")
@pytest.mark.req("CFG-DIR-07", "CFG-PROV-03", "CFG-MCP-04")
def test_enc2_values_decrypt_round_trip(load: Loader, tmp_path: Path) -> None:
    _write_key(tmp_path, "  " + KEY.hex().upper() + "  \n")
    snapshot = load(_config(_enc("sk-élan".encode()), encrypt("tok", KEY)))
    assert snapshot.providers["p"].api_key == "sk-élan"
    assert snapshot.mcp.servers[0].env == {"TOKEN": "tok"}
    assert "sk-" not in repr(snapshot) and "tok" not in repr(snapshot.mcp)


@pytest.mark.req("CFG-SECRETS-05")
def test_plain_values_are_used_as_written_without_a_key_file(load: Loader) -> None:
    snapshot = load(_config("sk-plain"))
    assert snapshot.providers["p"].api_key == "sk-plain"


SECRET_ERRORS = [
    ("CFG-SECRETS-06", True, "enc2:zz", ["providers.p.api_key: encrypted secret is corrupt"]),
    (
        "CFG-SECRETS-06",
        True,
        "enc2:" + "00" * 27,
        ["providers.p.api_key: encrypted secret is corrupt"],
    ),
    (
        "CFG-SECRETS-06",
        True,
        _enc(b"x", bytes(32)),
        ["providers.p.api_key: enc2: decryption failed (wrong key or tampered ciphertext)"],
    ),
    (
        "CFG-SECRETS-06",
        True,
        _enc(b"\xff\xfe"),
        ["providers.p.api_key: decrypted secret is not valid UTF-8"],
    ),
    (
        "CFG-SECRETS-06",
        False,
        _enc(b"x"),
        ["providers.p.api_key: encrypted secret found but the secret key file is missing"],
    ),
    (
        "CFG-SECRETS-07",
        False,
        "enc:abcd",
        [
            "providers.p.api_key: unsupported secret format 'enc:'; set the value again with 'zeroclaw_ref config set providers.p.api_key'"
        ],
    ),
    (
        "CFG-SECRETS-07",
        False,
        "op://vault/item/field",
        ["providers.p.api_key: could not resolve 1Password reference: op executable not found"],
    ),
]


@pytest.mark.parametrize(
    ("with_key", "value", "expected"),
    [
        pytest.param(k, v, e, marks=pytest.mark.req(r, "CFG-SECRETS-16"), id=f"{r}-{i}")
        for i, (r, k, v, e) in enumerate(SECRET_ERRORS)
    ],
)
def test_secret_errors_name_only_the_key_path(
    fail: Failer, tmp_path: Path, with_key: bool, value: str, expected: list[str]
) -> None:
    if with_key:
        _write_key(tmp_path)
    assert fail(_config(value)) == expected


@pytest.mark.req("CFG-SECRETS-06", "CFG-SECRETS-02", "CFG-PROV-03", "CFG-MCP-04")
def test_every_secret_map_value_is_decrypted_and_errors_are_collected(fail: Failer) -> None:
    text = (
        f"[providers.p]\nkind = 'demo'\nextra_headers = {{ X = '{_enc(b'a')}' }}\n"
        f"[[mcp.servers]]\nname = 'h'\ntransport = 'http'\nurl = 'https://x'\nheaders = {{ A = '{_enc(b'b')}' }}\n"
    )
    assert fail(text) == [
        "mcp.servers.h.headers.A: encrypted secret found but the secret key file is missing",
        "providers.p.extra_headers.X: encrypted secret found but the secret key file is missing",
    ]


@pytest.mark.req("CFG-SECRETS-09")
@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("not hex\n", "Secret key file is corrupt"),
        ("abc\n", "Secret key file is corrupt"),
        ("00" * 16 + "\n", "Key file must contain exactly 32 bytes (got 16)"),
    ],
)
def test_key_file_contents_are_checked(
    fail: Failer, tmp_path: Path, content: str, expected: str
) -> None:
    _write_key(tmp_path, content)
    assert fail(_config(_enc(b"x"))) == [expected]


@pytest.mark.req("CFG-SECRETS-10")
def test_a_symlinked_key_file_is_refused(fail: Failer, tmp_path: Path) -> None:
    real = tmp_path / "real_key"
    real.write_text(KEY.hex() + "\n")
    (tmp_path / ".secret_key").symlink_to(real)
    assert fail(_config(_enc(b"x"))) == [
        "refusing to use a symlinked or non-regular secret key file"
    ]


@pytest.mark.req("CFG-SECRETS-10")
def test_a_non_regular_key_file_is_refused(fail: Failer, tmp_path: Path) -> None:
    (tmp_path / ".secret_key").mkdir()
    assert fail(_config(_enc(b"x"))) == [
        "refusing to use a symlinked or non-regular secret key file"
    ]


@pytest.mark.req("CFG-SECRETS-09")
def test_the_key_file_is_not_read_when_no_value_is_encrypted(load: Loader, tmp_path: Path) -> None:
    _write_key(tmp_path, "garbage")
    assert load(_config("plain")).providers["p"].api_key == "plain"
