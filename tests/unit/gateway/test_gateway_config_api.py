"""The gateway configuration API with `requests` (config.md §13.1, §13.2, acp.md ACP-GW-12)."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from tests.unit.gateway.conftest import TOKEN, Running, demo_config
from zeroclaw_ref.gateway.server import UNAUTHORIZED

Start = Callable[..., Running]
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SECRET = "ghp_very_secret_value_42"
SERVERS = """
[[mcp.servers]]
name = "github"
command = "npx"
args = ["-y", "server-github"]

[[mcp.servers]]
name = "docs"
transport = "http"
url = "https://docs.example/mcp"
"""
SERVER_KEYS = {
    "name", "transport", "command", "args", "env", "url", "headers", "tool_timeout_secs",
    "startup_timeout_secs", "pinned_resources", "tls_ca_cert_path", "max_response_bytes", "era",
}  # fmt: skip


class Client:
    """Calls the API of one running gateway, remembering every answer's text."""

    def __init__(self, running: Running) -> None:
        self.running = running
        self.seen: list[str] = []

    @property
    def file(self) -> Path:
        return self.running.config_dir / "config.toml"

    def call(self, verb: str, path: str, **kwargs: object) -> requests.Response:
        kwargs.setdefault("headers", AUTH)
        answer = requests.request(verb, self.running.http(path), timeout=30, **kwargs)  # type: ignore[arg-type]
        self.seen.append(answer.text)
        return answer

    def get(self, key_path: str | None = None) -> requests.Response:
        params = {} if key_path is None else {"path": key_path}
        return self.call("GET", "/api/config", params=params)

    def put(self, key_path: str, value: str) -> requests.Response:
        return self.call("PUT", "/api/config", json={"path": key_path, "value": value})

    def create(self, name: str, path: str = "mcp.servers") -> requests.Response:
        return self.call("POST", "/api/config/map-key", params={"path": path, "key": name})

    def delete(self, path: str, key: str) -> requests.Response:
        return self.call("DELETE", "/api/config/map-key", params={"path": path, "key": key})

    def rename(self, old: str, new: str, path: str = "mcp.servers") -> requests.Response:
        params = {"path": path, "from": old, "to": new}
        return self.call("POST", "/api/config/rename-map-key", params=params)

    def servers(self) -> list[dict[str, object]]:
        document = tomllib.loads(self.file.read_text())
        servers = document.get("mcp", {}).get("servers", [])
        assert isinstance(servers, list)
        return servers


@pytest.fixture
def client(start_gateway: Start) -> Iterator[Client]:
    yield Client(start_gateway(demo_config(more=SERVERS)))


def cli(config_dir: Path, *argv: str) -> tuple[int, str, str]:
    """Run `zeroclaw_ref config …` as a subprocess; returns (status, stdout, stderr)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("ZEROCLAW")}
    done = subprocess.run(
        [sys.executable, "-m", "zeroclaw_ref", "--config-dir", str(config_dir), "config", *argv],
        capture_output=True, text=True, env=environ, timeout=60, check=False,
    )  # fmt: skip
    return done.returncode, done.stdout, done.stderr


def ok(answer: requests.Response, message: str) -> list[str]:
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["message"] == message
    warnings = body["warnings"]
    assert isinstance(warnings, list)
    return warnings


def refused(answer: requests.Response) -> str:
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert isinstance(error, str)
    return error


@pytest.mark.req("CFG-UI-01", "CFG-UI-08", "ACP-GW-12")
@pytest.mark.parametrize(
    ("verb", "path"),
    [
        ("GET", "/api/config?path=mcp.servers"),
        ("PUT", "/api/config"),
        ("POST", "/api/config/map-key?path=mcp.servers&key=x"),
        ("DELETE", "/api/config/map-key?path=mcp.servers&key=github"),
        ("POST", "/api/config/rename-map-key?path=mcp.servers&from=github&to=gh"),
        ("GET", "/config"),
    ],
)
def test_every_route_needs_the_token(client: Client, verb: str, path: str) -> None:
    before = client.file.read_bytes()
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        answer = client.call(verb, path, headers=headers, json={"path": "a", "value": "b"})
        assert answer.status_code == 401
        assert answer.text == UNAUTHORIZED
    assert client.file.read_bytes() == before


@pytest.mark.req("CFG-UI-01", "CFG-UI-08")
def test_routes_live_under_the_path_prefix_and_the_page_takes_a_query_token(
    start_gateway: Start,
) -> None:
    running = start_gateway(demo_config(gateway='path_prefix = "/zc"', more=SERVERS))
    answer = requests.get(running.http(f"/zc/config?token={TOKEN}"), timeout=30)
    assert answer.status_code == 200
    assert answer.headers["Content-Type"].startswith("text/html")
    assert 'data-action="add-server"' in answer.text
    assert "<script src" not in answer.text and "<link" not in answer.text
    listed = requests.get(
        running.http("/zc/api/config"), params={"path": "mcp.servers.github.command"},
        headers=AUTH, timeout=30,
    )  # fmt: skip
    assert listed.json()["value"] == "npx"
    assert requests.get(running.http("/api/config"), headers=AUTH, timeout=30).status_code == 404


@pytest.mark.req("CFG-UI-02", "CFG-SECRETS-14", "CFG-CLI-06")
def test_get_shows_leaves_like_config_get_and_subtrees_masked(client: Client) -> None:
    ok(
        client.put("mcp.servers.github.env.GITHUB_TOKEN", SECRET),
        "Updated mcp.servers.github.env.GITHUB_TOKEN",
    )
    ok(
        client.put("mcp.servers.github.env.A_FIRST", SECRET),
        "Updated mcp.servers.github.env.A_FIRST",
    )
    leaf = client.get("mcp.servers.github.command").json()
    status, out, _ = cli(client.running.config_dir, "get", "mcp.servers.github.command", "--json")
    assert status == 0
    assert leaf == requests.models.complexjson.loads(out)
    assert client.get("mcp.servers.github.env.GITHUB_TOKEN").json() == {
        "path": "mcp.servers.github.env.GITHUB_TOKEN", "value": "***MASKED***",
        "secret": True, "source": "file",
    }  # fmt: skip
    servers = client.get("mcp.servers").json()
    assert servers["path"] == "mcp.servers"
    assert [s["name"] for s in servers["value"]] == ["github", "docs"]  # file order
    github, docs = servers["value"]
    assert set(github) == SERVER_KEYS
    assert github["env"] == ["A_FIRST", "GITHUB_TOKEN"]
    assert github["args"] == ["-y", "server-github"]
    assert github["url"] is None and docs["env"] == [] and docs["transport"] == "http"
    assert client.get("mcp.servers.github.env").json() == {
        "path": "mcp.servers.github.env", "value": ["A_FIRST", "GITHUB_TOKEN"],
    }  # fmt: skip
    whole = client.get().json()
    assert whole["path"] == ""
    assert whole["value"]["mcp"]["servers"][0]["env"] == ["A_FIRST", "GITHUB_TOKEN"]
    assert whole["value"]["agents"]["a"]["model_provider"] == "demo"
    assert client.get("agents.a").json()["value"]["risk_profile"] == "p"
    assert refused(client.get("mcp.nope")) == "unknown config path: mcp.nope"
    assert all(SECRET not in text for text in client.seen)


@pytest.mark.req("CFG-UI-04", "CFG-UI-03", "CFG-CLI-18", "CFG-CLI-08", "CFG-CLI-13", "CFG-CLI-15")
def test_put_uses_the_config_set_texts(client: Client) -> None:
    ok(client.put("mcp.servers.github.command", "uvx"), "Updated mcp.servers.github.command")
    assert client.servers()[0]["command"] == "uvx"
    ok(client.put("mcp.servers.github.args", '["a","b"]'), "Updated mcp.servers.github.args")
    assert client.servers()[0]["args"] == ["a", "b"]
    cases = {
        "mcp.servers.github.tool_timeout_secs": "soon",
        "mcp.servers.github.transport": "carrier-pigeon",
        "mcp.servers.github.env": "x",
        "mcp.servers.github.name": "other",
        "mcp.nope": "1",
    }
    for key_path, value in cases.items():
        before = client.file.read_bytes()
        error = refused(client.put(key_path, value))
        assert client.file.read_bytes() == before  # [CFG-CLI-20] nothing written
        status, _, err = cli(client.running.config_dir, "set", "--no-interactive", key_path, value)
        assert status == 1
        assert err == f"ERROR: {error}\n"  # the very text `config set` prints
    expected = "invalid value for mcp.servers.github.tool_timeout_secs: expected an integer"
    assert refused(client.put("mcp.servers.github.tool_timeout_secs", "soon")) == expected


@pytest.mark.req("CFG-UI-03")
@pytest.mark.parametrize(
    "body", [b"not json", b"[]", b'{"path": "a"}', b'{"path": 1, "value": "x"}', b""]
)
def test_put_refuses_a_body_without_string_path_and_value(client: Client, body: bytes) -> None:
    before = client.file.read_bytes()
    answer = client.call("PUT", "/api/config", data=body, headers=AUTH)
    assert refused(answer) == 'body must be a JSON object with string "path" and "value"'
    assert client.file.read_bytes() == before


@pytest.mark.req("CFG-UI-04", "CFG-CLI-25")
def test_put_reports_the_follow_up_warnings(client: Client) -> None:
    warnings = ok(
        client.put("mcp.servers.docs.transport", "stdio"), "Updated mcp.servers.docs.transport"
    )
    assert warnings[-1] == "the configuration now has errors; run 'zeroclaw_ref config validate'"
    assert not any(w.startswith("warning: ") for w in warnings)
    assert (
        ok(client.put("mcp.servers.docs.command", "run-docs"), "Updated mcp.servers.docs.command")
        == []
    )


@pytest.mark.req("CFG-UI-04", "CFG-CLI-11", "CFG-CLI-12", "CFG-SECRETS-03", "CFG-SECRETS-15")
def test_secrets_are_stored_encrypted_and_never_answered(client: Client) -> None:
    ok(
        client.put("mcp.servers.github.headers.Authorization", SECRET),
        "Updated mcp.servers.github.headers.Authorization",
    )
    stored = client.servers()[0]["headers"]
    assert isinstance(stored, dict)
    cipher = stored["Authorization"]
    assert isinstance(cipher, str) and cipher.startswith("enc2:")
    assert SECRET not in client.file.read_text()
    masked = client.put("mcp.servers.github.headers.Authorization", "***MASKED***")
    ok(masked, "Updated mcp.servers.github.headers.Authorization")
    assert client.servers()[0]["headers"] == {"Authorization": cipher}
    client.get()
    client.get("mcp.servers")
    client.get("mcp.servers.github.headers.Authorization")
    emptied = client.put("mcp.servers.github.headers.Authorization", "")
    ok(emptied, "Removed mcp.servers.github.headers.Authorization")
    assert "headers" not in client.servers()[0] or client.servers()[0]["headers"] == {}
    for text in client.seen:
        assert SECRET not in text and cipher not in text and cipher[5:40] not in text


@pytest.mark.req("CFG-UI-05", "CFG-UI-03", "CFG-VALID-06", "CFG-MCP-05")
def test_create_a_server(client: Client) -> None:
    ok(client.create("fs"), "Created mcp.servers.fs")
    assert client.servers()[-1] == {"name": "fs"}
    before = client.file.read_bytes()
    assert refused(client.create("GitHub")) == "mcp.servers contains duplicate name: GitHub"
    assert refused(client.create("bad name")).startswith("mcp.servers[3].name 'bad name' ")
    assert refused(client.create("x", path="agents")) == "only path=mcp.servers is supported"
    missing = client.call("POST", "/api/config/map-key", params={"path": "mcp.servers"})
    assert refused(missing) == "missing query parameter: key"
    assert client.file.read_bytes() == before


@pytest.mark.req("CFG-UI-06", "CFG-CLI-19")
def test_delete_a_server_or_an_entry_as_config_unset(client: Client) -> None:
    ok(client.put("mcp.servers.github.env.TOKEN", SECRET), "Updated mcp.servers.github.env.TOKEN")
    ok(client.put("mcp.servers.github.env.OTHER", SECRET), "Updated mcp.servers.github.env.OTHER")
    ok(client.delete("mcp.servers.github.env", "TOKEN"), "Removed mcp.servers.github.env.TOKEN")
    env = client.servers()[0]["env"]
    assert isinstance(env, dict) and list(env) == ["OTHER"]
    ok(
        client.delete("mcp.servers.github.env", "TOKEN"),
        "Nothing to unset at mcp.servers.github.env.TOKEN",
    )
    ok(client.delete("mcp.servers", "github"), "Removed mcp.servers.github")
    assert [s["name"] for s in client.servers()] == ["docs"]
    ok(client.delete("agents", "a"), "Removed agents.a")
    assert refused(client.delete("mcp.nope", "x")) == "unknown config path: mcp.nope.x"


@pytest.mark.req("CFG-UI-07")
def test_rename_in_place_keeps_position_and_ciphertexts(client: Client) -> None:
    ok(client.put("mcp.servers.github.env.TOKEN", SECRET), "Updated mcp.servers.github.env.TOKEN")
    before = client.servers()[0]
    ok(client.rename("github", "gh"), "Renamed mcp.servers.github to mcp.servers.gh")
    after = client.servers()
    assert [s["name"] for s in after] == ["gh", "docs"]
    assert {**before, "name": "gh"} == after[0]
    unchanged = client.file.read_bytes()
    assert refused(client.rename("gh", "DOCS")) == "mcp.servers contains duplicate name: DOCS"
    assert refused(client.rename("nope", "x")) == "unknown config path: mcp.servers.nope"
    assert refused(client.rename("gh", "a b")).startswith("mcp.servers[0].name 'a b' ")
    assert refused(client.rename("gh", "x", path="agents")) == "only path=mcp.servers is supported"
    assert client.file.read_bytes() == unchanged
    ok(client.rename("gh", "GH"), "Renamed mcp.servers.gh to mcp.servers.GH")  # its own name
    status, out, _ = cli(client.running.config_dir, "rename", "mcp.servers.GH", "github")
    assert (status, out) == (0, "Renamed mcp.servers.GH to mcp.servers.github\n")


@pytest.mark.req("CFG-UI-04", "CFG-CLI-22")
def test_concurrent_writers_never_lose_an_update(client: Client) -> None:
    names = [f"s{i}" for i in range(12)]

    def write(name: str) -> list[int]:
        return [
            client.create(name).status_code,
            client.put(f"mcp.servers.{name}.command", f"run-{name}").status_code,
            client.put(f"mcp.servers.github.env.{name.upper()}", SECRET).status_code,
        ]

    with ThreadPoolExecutor(max_workers=6) as pool:
        statuses = list(pool.map(write, names))
    assert all(s == [200, 200, 200] for s in statuses)
    servers = {str(s["name"]): s for s in client.servers()}
    for name in names:
        assert servers[name]["command"] == f"run-{name}"
    env = servers["github"]["env"]
    assert isinstance(env, dict)
    assert sorted(env) == sorted(n.upper() for n in names)
    assert all(str(v).startswith("enc2:") for v in env.values())
