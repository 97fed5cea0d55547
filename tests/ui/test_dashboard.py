"""The dashboard at `<prefix>/config` driven in headless Chromium (config.md §13.3).

Each step is done through the page as a user would (typing, clicking) and then checked in
`config.toml`; the secret must end up encrypted there and never appear in the page.
"""

from __future__ import annotations

import shutil
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import requests

from tests.conftest import require_peer
from tests.unit.gateway.conftest import TOKEN, demo_config
from zeroclaw_ref.cli.agent import choose_agent
from zeroclaw_ref.config.store import ConfigStore
from zeroclaw_ref.core.clock import SystemClock
from zeroclaw_ref.core.ids import RandomIds
from zeroclaw_ref.gateway.request import GatewayDeps
from zeroclaw_ref.gateway.server import Gateway

if TYPE_CHECKING:  # selenium is a test peer, imported once require_peer found it
    from selenium.webdriver.remote.webdriver import WebDriver

SECRET = "hdr_secret_value_7f3a"
SCREENSHOT = Path("/tmp/zeroclaw_dashboard.png")
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1100,1400",
)
WAIT_SECS = 20.0


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[tuple[Gateway, Path]]:
    config_dir = tmp_path / "cfg"
    config_dir.mkdir()
    (config_dir / "config.toml").write_text(demo_config(gateway='path_prefix = "/zc"'))
    store = ConfigStore(config_dir, config_dir / "data", {})
    deps = GatewayDeps(store, RandomIds(), SystemClock(), choose_agent, lambda line: None)
    running = Gateway(deps, "127.0.0.1", 0)
    running.start()
    try:
        yield running, config_dir
    finally:
        running.close()


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[WebDriver]:
    chromium = require_peer("chromium")
    assert isinstance(chromium, str)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"):
        options.add_argument(flag)
    service = Service(executable_path=shutil.which("chromedriver"))
    driver = webdriver.Chrome(options=options, service=service)
    driver.set_page_load_timeout(WAIT_SECS)
    try:
        yield driver
    finally:
        driver.quit()


class Page:
    """The dashboard in one browser: find, type, click, and wait for the page to settle."""

    def __init__(self, driver: WebDriver, config_dir: Path) -> None:
        from selenium.webdriver.support.ui import WebDriverWait

        self.driver = driver
        self.file = config_dir / "config.toml"
        self.waiter = WebDriverWait(driver, WAIT_SECS)

    def find(self, css: str, within: object | None = None) -> object:
        from selenium.webdriver.common.by import By

        scope = self.driver if within is None else within
        return scope.find_element(By.CSS_SELECTOR, css)  # type: ignore[attr-defined]

    def exists(self, css: str) -> bool:
        from selenium.webdriver.common.by import By

        return bool(self.driver.find_elements(By.CSS_SELECTOR, css))

    def settled(self, status: str) -> None:
        """Wait until no request is in flight and `#status` starts with `status`."""

        def done(driver: object) -> bool:
            body = self.driver.execute_script("return document.body.dataset.busy")
            text = self.driver.execute_script(
                "return document.getElementById('status').textContent"
            )
            return body == "false" and str(text).startswith(status)

        self.waiter.until(done, f"status {status!r}")

    def status(self) -> str:
        return str(
            self.driver.execute_script("return document.getElementById('status').textContent")
        )

    def type_into(self, css: str, text: str, within: object | None = None) -> None:
        element = self.find(css, within)
        element.clear()  # type: ignore[attr-defined]
        element.send_keys(text)  # type: ignore[attr-defined]

    def click(self, css: str, within: object | None = None) -> None:
        self.find(css, within).click()  # type: ignore[attr-defined]

    def form(self, name: str) -> object:
        return self.find(f'form[data-server="{name}"]')

    def servers(self) -> list[dict[str, object]]:
        servers = tomllib.loads(self.file.read_text()).get("mcp", {}).get("servers", [])
        assert isinstance(servers, list)
        return servers

    def assert_no_secret(self) -> None:
        source = self.driver.page_source
        values = self.driver.execute_script(
            "return Array.from(document.querySelectorAll('input')).map(i => i.value).join('\\n')"
        )
        assert SECRET not in source and SECRET not in str(values)
        for server in self.servers():
            for table in (server.get("headers"), server.get("env")):
                for cipher in (table or {}).values():  # type: ignore[union-attr]
                    assert str(cipher)[5:40] not in source


@pytest.mark.peer("chromium")
@pytest.mark.req("CFG-UI-08", "CFG-UI-09", "CFG-UI-10", "CFG-UI-11", "CFG-SECRETS-14")
def test_add_server_secret_header_rename_delete(
    gateway: tuple[Gateway, Path], browser: WebDriver
) -> None:
    running, config_dir = gateway
    page = Page(browser, config_dir)
    port = running.address[1]
    browser.get(f"http://127.0.0.1:{port}/zc/config?token={TOKEN}")
    page.settled("Loaded 0 server(s).")

    # + Add MCP server
    page.type_into('input[name="server-name"]', "github")
    page.click('button[data-action="add-server"]')
    page.settled("Created mcp.servers.github")
    assert page.servers() == [{"name": "github"}]
    form = page.form("github")
    assert page.find('[name="transport"]', form).get_attribute("value") == "stdio"  # type: ignore[attr-defined]

    # A field: a refusal is shown next to it and writes nothing; a good value is saved.
    before = page.file.read_bytes()
    page.type_into('[name="tool_timeout_secs"]', "soon", form)
    page.click('button[data-action="save"]', form)
    expected = "invalid value for mcp.servers.github.tool_timeout_secs: expected an integer"
    page.settled(expected)
    assert page.find('[data-msg="tool_timeout_secs"]', form).text == expected  # type: ignore[attr-defined]
    assert page.file.read_bytes() == before
    page.type_into('[name="tool_timeout_secs"]', "30", form)
    page.type_into('[name="command"]', "npx", form)
    page.click('button[data-action="save"]', form)
    page.settled("Updated mcp.servers.github.tool_timeout_secs")
    assert page.servers() == [{"name": "github", "command": "npx", "tool_timeout_secs": 30}]
    assert page.find('[name="command"]', page.form("github")).get_attribute("value") == "npx"  # type: ignore[attr-defined]

    # Add entry: a secret header, typed into a password field.
    form = page.form("github")
    adder = page.find('[data-add-entry="headers"]', form)
    assert page.find('input[name="entry-value"]', adder).get_attribute("type") == "password"  # type: ignore[attr-defined]
    page.type_into('input[name="entry-name"]', "Authorization", adder)
    page.type_into('input[name="entry-value"]', SECRET, adder)
    page.click('button[data-action="add-entry"]', adder)
    page.settled("Updated mcp.servers.github.headers.Authorization")
    headers = page.servers()[0]["headers"]
    assert isinstance(headers, dict)
    cipher = str(headers["Authorization"])
    assert cipher.startswith("enc2:") and SECRET not in page.file.read_text()
    form = page.form("github")
    assert "Authorization" in page.find('[data-map="headers"]', form).text  # type: ignore[attr-defined]
    row = page.find('[data-entry="headers.Authorization"]', form)
    assert page.find("input[type=password]", row).get_attribute("value") == ""  # type: ignore[attr-defined]
    page.assert_no_secret()
    browser.save_screenshot(str(SCREENSHOT))

    # Rename, refused for a name already used ignoring case, then done.
    page.type_into('input[name="server-name"]', "docs")
    page.click('button[data-action="add-server"]')
    page.settled("Created mcp.servers.docs")
    before = page.file.read_bytes()
    form = page.form("github")
    page.type_into('input[name="new-name"]', "DOCS", form)
    page.click('button[data-action="rename-server"]', form)
    page.settled("mcp.servers contains duplicate name: DOCS")
    assert (
        page.find('[data-msg="server"]', form).text == "mcp.servers contains duplicate name: DOCS"
    )  # type: ignore[attr-defined]
    assert page.file.read_bytes() == before
    page.type_into('input[name="new-name"]', "gh", form)
    page.click('button[data-action="rename-server"]', form)
    page.settled("Renamed mcp.servers.github to mcp.servers.gh")
    assert [s["name"] for s in page.servers()] == ["gh", "docs"]
    assert page.servers()[0]["headers"] == {"Authorization": cipher}  # ciphertext kept
    assert page.exists('form[data-server="gh"]') and not page.exists('form[data-server="github"]')

    # Delete an entry, then a server.
    form = page.form("gh")
    page.click('[data-entry="headers.Authorization"] button[data-action="delete-entry"]', form)
    page.settled("Removed mcp.servers.gh.headers.Authorization")
    assert page.servers()[0].get("headers", {}) == {}
    page.click('button[data-action="delete-server"]', page.form("docs"))
    page.settled("Removed mcp.servers.docs")
    assert [s["name"] for s in page.servers()] == ["gh"]
    assert not page.exists('form[data-server="docs"]')
    page.assert_no_secret()


@pytest.mark.peer("chromium")
@pytest.mark.req("CFG-UI-10", "CFG-UI-11")
def test_a_stale_form_changes_nothing(gateway: tuple[Gateway, Path], browser: WebDriver) -> None:
    running, config_dir = gateway
    page = Page(browser, config_dir)
    base = f"http://127.0.0.1:{running.address[1]}/zc"
    browser.get(f"{base}/config?token={TOKEN}")
    page.settled("Loaded 0 server(s).")
    page.type_into('input[name="server-name"]', "github")
    page.click('button[data-action="add-server"]')
    page.settled("Created mcp.servers.github")
    # Another client renames the server behind the page's back.
    renamed = requests.post(
        f"{base}/api/config/rename-map-key",
        params={"path": "mcp.servers", "from": "github", "to": "gh"},
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=30,
    )
    assert renamed.status_code == 200
    before = page.file.read_bytes()
    form = page.form("github")
    page.type_into('[name="command"]', "npx", form)
    page.click('button[data-action="save"]', form)
    page.settled("unknown config path: mcp.servers.github")
    adder = page.find('[data-add-entry="env"]', form)
    page.type_into('input[name="entry-name"]', "TOKEN", adder)
    page.type_into('input[name="entry-value"]', SECRET, adder)
    page.click('button[data-action="add-entry"]', adder)
    page.settled("unknown config path: mcp.servers.github")
    assert "unknown config path: mcp.servers.github" in page.find('[data-msg="server"]', form).text  # type: ignore[attr-defined]
    assert page.file.read_bytes() == before
    page.assert_no_secret()


@pytest.mark.peer("chromium")
@pytest.mark.req("CFG-UI-08", "ACP-GW-12")
def test_the_page_needs_the_token(gateway: tuple[Gateway, Path], browser: WebDriver) -> None:
    running, _ = gateway
    browser.get(f"http://127.0.0.1:{running.address[1]}/zc/config")
    assert "Unauthorized" in browser.page_source
    assert "data-action" not in browser.page_source
