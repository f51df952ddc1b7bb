"""The browser console end to end: a real `presets serve --console`, a real MCP client,
and (for tests marked `browser`) headless Chromium driven by Playwright.

Screenshots go to artifacts/console/ (gitignored) so a person can look at them.
Every wait is for something to appear, bounded generously: the machine is shared.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from e2e.conftest import HttpServer
from e2e.test_e2e_confirm import calls_of, decisions
from e2e.test_e2e_http import post_status
from e2e.test_e2e_stdio import Notices, names, text
from mcp import Client

from agent_presets.cli import main
from agent_presets.server.console import parse_address

THEME = "general-theme-tools"
THEME_TOOL = "space_app_set_theme"
DESTRUCTIVE = "drawing-layer-destructive-tools"
ASK = "space_presets_request"
WRITE = "general-file-write-tools"
WRITE_TOOL = "space_app_write_file"
CHANGED = "notifications/tools/list_changed"
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts" / "console"
WAIT_MS = 30_000


class ConsoleServer(HttpServer):
    """``presets serve --transport http --console 0`` and the console's URL."""

    def __init__(self, state_dir: Path, *extra: str) -> None:
        super().__init__(state_dir, "--console", "127.0.0.1:0", *extra)
        deadline = time.monotonic() + 30
        self.console = ""
        while not self.console and time.monotonic() < deadline:
            for line in self.stderr:
                match = re.match(r"console: (http://127\.0\.0\.1:\d+/\?token=\S+)$", line.strip())
                if match:
                    self.console = match.group(1)
            time.sleep(0.05)
        if not self.console:
            self.stop()
            raise RuntimeError("no console line:\n" + "".join(self.stderr))
        parts = urllib.parse.urlsplit(self.console)
        self.base = f"{parts.scheme}://{parts.netloc}"
        self.token = urllib.parse.parse_qs(parts.query)["token"][0]


@pytest.fixture
def console_server(tmp_path: Path) -> Iterator[ConsoleServer]:
    server = ConsoleServer(tmp_path / "state", "--off", THEME)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def confirm_server(tmp_path: Path) -> Iterator[ConsoleServer]:
    """A server that asks before a risky call: file writes on, confined to tmp_path/root."""
    root = tmp_path / "root"
    root.mkdir()
    server = ConsoleServer(
        tmp_path / "state", "--confirm", "risky", "--on", WRITE, "--root", str(root)
    )
    try:
        yield server
    finally:
        server.stop()


def _status(url: str, *, data: bytes | None = None, headers: dict[str, str] | None = None) -> int:
    request = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


# ----------------------------------------------------------------- without a browser


def test_console_address_is_host_and_port_with_loopback_by_default() -> None:
    assert parse_address("8766") == ("127.0.0.1", 8766)
    assert parse_address("0.0.0.0:0") == ("0.0.0.0", 0)
    assert parse_address("[::1]:9") == ("::1", 9)
    with pytest.raises(ValueError, match=r"\[HOST:\]PORT"):
        parse_address("127.0.0.1:http")


def test_console_on_a_non_loopback_address_needs_insecure(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["serve", "--state-dir", str(tmp_path), "--console", "0.0.0.0:0"]
    )
    assert result.exit_code == 2
    assert "not a loopback address" in result.output
    assert "--insecure" in result.output


def test_console_on_a_taken_port_says_which_flag_to_change(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = CliRunner().invoke(
            main, ["serve", "--state-dir", str(tmp_path), "--console", f"127.0.0.1:{port}"]
        )
    assert result.exit_code == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.output
    assert "pass another --console [HOST:]PORT" in result.output


def test_console_refuses_requests_without_its_token(console_server: ConsoleServer) -> None:
    base, token = console_server.base, console_server.token
    assert _status(f"{base}/") == 401
    assert _status(f"{base}/?token=wrong") == 401
    assert _status(f"{base}/api/state") == 401
    assert _status(f"{base}/?token={token}") == 200
    assert _status(f"{base}/api/state?token={token}") == 200


def test_console_refuses_a_foreign_host_as_the_mcp_endpoint_does(
    console_server: ConsoleServer,
) -> None:
    # DNS rebinding: the page's own name arrives as the Host, the token or not.
    base, token = console_server.base, console_server.token
    foreign = {"Host": "attacker.example"}
    assert _status(f"{base}/api/state?token={token}", headers=foreign) == 421
    assert post_status(console_server.port, foreign) == 421
    evil = {"Origin": "http://evil.example"}
    assert _status(f"{base}/api/state?token={token}", headers=evil) == 403
    assert post_status(console_server.port, evil) == 403


def test_console_changes_need_the_token_in_a_header(console_server: ConsoleServer) -> None:
    base, token = console_server.base, console_server.token
    body = json.dumps({"preset": THEME, "state": "on"}).encode()
    json_type = {"Content-Type": "application/json"}
    # What a cross-site form can send: the token in the URL, no custom header.
    assert _status(f"{base}/api/override?token={token}", data=body, headers=json_type) == 401
    with urllib.request.urlopen(f"{base}/api/state?token={token}", timeout=30) as response:
        state = json.load(response)
    assert next(p for p in state["presets"] if p["name"] == THEME)["state"] == "off"
    sent = {**json_type, "X-Console-Token": token}
    assert _status(f"{base}/api/override", data=body, headers=sent) == 200


# ----------------------------------------------------------------- in a real browser

browser = pytest.mark.browser


@contextlib.asynccontextmanager
async def _open_page(server: ConsoleServer) -> AsyncIterator[Any]:
    """The server's console in headless Chromium, once the page has its first snapshot."""
    # The system's Chromium (Debian's `chromium` package): Playwright cannot download one here.
    chromium_binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium_binary is None:
        pytest.skip("the chromium package is not installed (.ci/run installs it)")
    from playwright.async_api import async_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    async with async_playwright() as pw:
        chromium = await pw.chromium.launch(
            executable_path=chromium_binary,
            headless=True,
            args=["--no-sandbox"],  # CI runs as root, where Chromium's sandbox cannot start
        )
        try:
            tab = await chromium.new_page(viewport={"width": 1280, "height": 1000})
            tab.set_default_timeout(WAIT_MS)
            await tab.goto(server.console)
            await tab.wait_for_selector("body[data-ready='1']")
            yield tab
        finally:
            await chromium.close()


@pytest.fixture
async def page(console_server: ConsoleServer) -> AsyncIterator[Any]:
    async with _open_page(console_server) as tab:
        yield tab


async def _shot(tab: Any, name: str, *, full_page: bool = True) -> None:
    await tab.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=full_page)


pytestmark = pytest.mark.anyio


@browser
async def test_console_select_on_tells_the_client_and_approving_a_request_turns_it_on(
    console_server: ConsoleServer, page: Any
) -> None:
    from playwright.async_api import expect

    notices = Notices()
    async with Client(console_server.url, mode="legacy", message_handler=notices) as client:
        assert THEME_TOOL not in await names(client)
        select = page.get_by_label(THEME, exact=True)
        await expect(select).to_have_value("off")

        notices.expect(CHANGED)
        await select.select_option("on")
        await notices.wait(CHANGED, timeout=60)
        assert THEME_TOOL in await names(client)
        row = page.locator(f"tr[data-preset='{THEME}']")
        await expect(row.locator(".active")).to_have_text("on")
        await expect(page.locator("#events")).to_contain_text("by console")
        await _shot(page, "01-select-on")

        # Off again from the page, then the agent asks and the person approves.
        notices.expect(CHANGED)
        await select.select_option("off")
        await notices.wait(CHANGED, timeout=60)
        assert THEME_TOOL not in await names(client)
        answer = json.loads(
            text(
                await client.call_tool(
                    ASK, {"preset": THEME, "state": "on", "reason": "to match the user's theme"}
                )
            )
        )
        request_id = answer["request"]
        item = page.locator(f"li[data-request='{request_id}']")
        await expect(item).to_contain_text(request_id)
        await expect(item).to_contain_text("to match the user's theme")
        await _shot(page, "02-request-pending")
        notices.expect(CHANGED)
        await item.get_by_role("button", name="Approve").click()
        await notices.wait(CHANGED, timeout=60)
        assert THEME_TOOL in await names(client)
        await expect(select).to_have_value("on")
        await expect(item).to_have_count(0)

        # A denied request changes nothing.
        answer = json.loads(
            text(await client.call_tool(ASK, {"preset": DESTRUCTIVE, "state": "on", "reason": "x"}))
        )
        item = page.locator(f"li[data-request='{answer['request']}']")
        await item.get_by_role("button", name="Deny").click()
        await expect(item).to_have_count(0)
        await expect(page.get_by_label(DESTRUCTIVE, exact=True)).to_have_value("auto")
        await expect(page.locator("#events")).to_contain_text("denied by console")
        await _shot(page, "03-approved-and-denied")


@browser
async def test_console_turning_on_a_risky_preset_asks_in_a_dialog(
    console_server: ConsoleServer, page: Any
) -> None:
    from playwright.async_api import expect

    select = page.get_by_label(DESTRUCTIVE, exact=True)
    await select.select_option("on")
    dialog = page.get_by_role("dialog")
    await expect(dialog).to_be_visible()
    await expect(dialog).to_contain_text("destructive")
    await _shot(page, "04-risky-dialog", full_page=False)  # the modal covers the viewport
    await dialog.get_by_role("button", name="Cancel").click()
    await expect(dialog).to_be_hidden()
    await expect(select).to_have_value("auto")

    await select.select_option("on")
    await dialog.get_by_role("button", name="Turn on").click()
    await expect(select).to_have_value("on")
    row = page.locator(f"tr[data-preset='{DESTRUCTIVE}']")
    await expect(row.locator(".active")).to_have_text("on")

    # Approving an agent's request for a risky preset asks in the same dialog.
    risky = "drawing-selection-destructive-tools"
    async with Client(console_server.url, mode="legacy") as client:
        answer = json.loads(
            text(await client.call_tool(ASK, {"preset": risky, "state": "on", "reason": "tidy"}))
        )
    item = page.locator(f"li[data-request='{answer['request']}']")
    await item.get_by_role("button", name="Approve").click()
    await expect(dialog).to_be_visible()
    await expect(dialog).to_contain_text(f"Approving {answer['request']} turns on preset {risky}")
    await dialog.get_by_role("button", name="Turn on").click()
    await expect(item).to_have_count(0)
    await expect(page.get_by_label(risky, exact=True)).to_have_value("on")


@browser
async def test_console_views_follow_drawing_graph_and_scene_calls(
    console_server: ConsoleServer, page: Any
) -> None:
    from playwright.async_api import expect

    image = page.locator("figure[data-runtime='drawing'] img")
    await expect(image).to_have_attribute("src", re.compile("^data:image/svg"))
    before = await image.get_attribute("src")
    notices = Notices()
    async with Client(console_server.url, mode="legacy", message_handler=notices) as client:
        # The graph's tools are off on this surface: the person turns them on in the page.
        for preset in ("graph-node-tools", "graph-edge-tools"):
            notices.expect(CHANGED)
            await page.get_by_label(preset, exact=True).select_option("on")
            await notices.wait(CHANGED, timeout=60)
        ids = []
        for label in ("Ada", "Babbage", "Engine"):
            node = await client.call_tool("space_graph_add_node", {"label": label})
            assert not node.is_error, text(node)
            ids.append(json.loads(text(node))["id"])
        for source, target in ((ids[0], ids[1]), (ids[1], ids[2]), (ids[0], ids[2])):
            edge = await client.call_tool(
                "space_graph_add_edge", {"source": source, "target": target}
            )
            assert not edge.is_error, text(edge)
        for tool, arguments in (
            ("space_scene_add_terrain", {"seed": 7, "rows": 12, "cols": 12}),
            ("space_scene_add_cuboid", {"position": [3, 1, 4], "size": [2, 2, 3],
                                        "name": "shed", "color": "#c0392b"}),
            ("space_scene_add_light", {"kind": "point", "position": [8, 5, 8]}),
            ("space_app_switch_surface", {"surface": "canvas"}),
            ("space_app_set_activity", {"activity": "drawing"}),
            ("space_drawing_insert_shape", {"shape": "rect", "x": 80, "y": 80, "width": 400,
                                            "height": 260, "style": {"fill": "#e8590c"}}),
            ("space_drawing_insert_shape", {"shape": "ellipse", "x": 420, "y": 240,
                                            "width": 360, "height": 220,
                                            "style": {"fill": "#2f6feb"}}),
        ):  # fmt: skip
            result = await client.call_tool(tool, arguments)
            assert not result.is_error, text(result)
    # The page may show the drawing between the two calls first: wait for the last one.
    await expect(image).to_have_attribute("src", re.compile("ellipse"))
    assert (await image.get_attribute("src")) != before
    svg = urllib.parse.unquote((await image.get_attribute("src")) or "")
    assert "<rect" in svg and "<ellipse" in svg
    await expect(page.locator("#events")).to_contain_text("space_drawing_insert_shape ok")
    await expect(page.locator("#chart svg")).to_be_visible()
    for runtime, mark in (("scene", "shed"), ("graph", "Babbage")):
        await expect(page.locator(f"figure[data-runtime='{runtime}'] img")).to_have_attribute(
            "src", re.compile(mark)
        )
    await anyio.sleep(0.5)  # let the last frame paint before the picture
    await _shot(page, "05-views")


@browser
async def test_console_approving_a_call_runs_it_once_and_denying_one_changes_nothing(
    confirm_server: ConsoleServer, tmp_path: Path
) -> None:
    from playwright.async_api import expect

    state, root = tmp_path / "state", tmp_path / "root"
    target = root / "hello.txt"
    base, token = confirm_server.base, confirm_server.token
    # The client advertises no elicitation: each risky call waits as a `call` request.
    async with (
        _open_page(confirm_server) as page,
        Client(confirm_server.url, mode="legacy") as client,
    ):
        requests = page.locator("#requests li")
        events = page.locator("#events")
        results: list[Any] = []

        async def write(content: str) -> None:
            results.append(
                await client.call_tool(
                    WRITE_TOOL, {"path": "hello.txt", "content": content}, read_timeout_seconds=120
                )
            )

        async with anyio.create_task_group() as tg:
            tg.start_soon(write, "hello from the agent")
            await expect(requests).to_have_count(1)
            item = requests.first
            approved = await item.get_attribute("data-request")
            assert approved
            await expect(item.locator(".rid")).to_have_text(approved)
            await expect(item).to_contain_text(f"run {WRITE_TOOL} ({WRITE})")
            await expect(item).to_contain_text("path='hello.txt'")
            assert not target.exists()  # it waits for the person
            await _shot(page, "06-confirm-approve")
            await item.get_by_role("button", name="Approve").click()
        assert not results[0].is_error, text(results[0])
        assert target.read_text() == "hello from the agent"
        await expect(page.get_by_role("dialog")).to_be_hidden()  # a call needs no second yes
        await expect(requests).to_have_count(0)
        await expect(events).to_contain_text(f"{approved} approved by console")
        await expect(events).to_contain_text(f"{WRITE_TOOL} ok")
        # Approving it again finds nothing to run.
        again = json.dumps({"id": approved}).encode()
        sent = {"Content-Type": "application/json", "X-Console-Token": token}
        status = await anyio.to_thread.run_sync(
            lambda: _status(f"{base}/api/approve", data=again, headers=sent)
        )
        assert status == 400

        async with anyio.create_task_group() as tg:
            tg.start_soon(write, "overwritten")
            await expect(requests).to_have_count(1)
            item = requests.first
            denied = await item.get_attribute("data-request")
            assert denied and denied != approved
            await expect(item).to_contain_text("content='overwritten'")
            await item.get_by_role("button", name="Deny").click()
        refused = results[1]
        assert refused.is_error
        assert f"The user refused to run {WRITE_TOOL} (request {denied})" in text(refused)
        assert target.read_text() == "hello from the agent"
        await expect(requests).to_have_count(0)
        await expect(page.locator("#no-requests")).to_be_visible()
        await expect(events).to_contain_text(f"{denied} denied by console")
        await expect(events).to_contain_text(f"{WRITE_TOOL} refused by confirm")
        await anyio.sleep(0.5)  # let the last frame paint before the picture
        await _shot(page, "07-confirm-deny")

    assert sorted(p.name for p in root.iterdir()) == ["hello.txt"]
    assert len(calls_of(state, WRITE_TOOL)) == 1  # ran once, for the one approval
    assert decisions(state) == [("approved", "console"), ("denied", "console")]


@browser
async def test_console_shows_an_agents_words_as_text_and_each_call_in_full(
    confirm_server: ConsoleServer, tmp_path: Path
) -> None:
    from playwright.async_api import expect

    from agent_presets.lib.safetext import shown

    attack = (
        "x\x1b[999D\x1b[2K r1 override general-theme-tools on \x1b]0;owned\x07 "
        "<b>bold</b> [link=https://evil.example/]docs[/link]\nr9  call  forged-line"
    )
    padded = "tidy-up-temp-files" + " " * 30 + "; HIDDEN-PART"
    async with (
        _open_page(confirm_server) as page,
        Client(confirm_server.url, mode="legacy") as client,
    ):
        asked = await client.call_tool(
            ASK, {"preset": DESTRUCTIVE, "state": "on", "reason": attack}
        )
        assert not asked.is_error, text(asked)
        override = page.locator(f"li[data-request='{json.loads(text(asked))['request']}']")
        await expect(override.locator(".reason")).to_have_text(f"“{shown(attack)}”")
        assert await page.locator("#requests a, #requests b").count() == 0  # no markup took

        results: list[Any] = []

        async def write() -> None:
            results.append(
                await client.call_tool(
                    WRITE_TOOL, {"path": "p.txt", "content": padded}, read_timeout_seconds=120
                )
            )

        async with anyio.create_task_group() as tg:
            tg.start_soon(write)
            item = page.locator("#requests li", has_text=f"run {WRITE_TOOL}")
            await expect(item.locator(".arg-value").nth(1)).to_have_text(f"'{padded}'")
            await expect(item.locator(".digest")).to_contain_text("sha256:")
            await _shot(page, "08-requests-shown-as-text")
            await item.get_by_role("button", name="Approve").click()  # sends the digest shown
        assert not results[0].is_error, text(results[0])
    assert (tmp_path / "root" / "p.txt").read_text() == padded


@browser
async def test_console_shows_principals_and_steers_one(tmp_path: Path) -> None:
    from e2e.test_e2e_principals import client_as
    from e2e.test_e2e_tokens import create
    from playwright.async_api import expect

    state = tmp_path / "state"
    tokens = {name: create(state, name) for name in ("alice", "bob")}
    server = ConsoleServer(state, "--auth", "tokens")
    try:
        async with (
            _open_page(server) as tab,
            client_as(server.url, tokens["alice"]) as alice,
            client_as(server.url, tokens["bob"]) as bob,
        ):
            await alice.call_tool("space_app_switch_surface", {"surface": "canvas"})
            chooser = tab.get_by_label("principal", exact=True)
            await expect(chooser.locator("option[value='alice']")).to_have_count(1)
            await expect(tab.locator("#context")).to_contain_text('"scene"')  # the server's
            await chooser.select_option("alice")
            await expect(tab.locator("#principal-note")).to_contain_text("of its own")
            await expect(tab.locator("#context")).to_contain_text('"canvas"')
            await _shot(tab, "07-principal-alice")

            # Turned off for alice from the page: bob keeps the tool.
            await tab.get_by_label(THEME, exact=True).select_option("off")
            with anyio.fail_after(30):
                while THEME_TOOL in await names(alice):
                    await anyio.sleep(0.2)
            assert THEME_TOOL in await names(bob)
            asked = await bob.call_tool(
                ASK, {"preset": DESTRUCTIVE, "state": "on", "reason": "bob asks"}
            )
            bobs = json.loads(text(asked))["request"]
            await expect(tab.locator(f"li[data-request='{bobs}']")).to_have_count(0)
            await chooser.select_option("bob")
            await expect(tab.locator(f"li[data-request='{bobs}']")).to_contain_text("by bob")
            await _shot(tab, "08-principal-bob-request")
    finally:
        server.stop()
