"""The client snippets of README.md, docs/clients.md and docs/embedding.md work as printed.

Each page shows, for each protocol era, how a client hears of a change
(``follow``: 2026-07-28, a listen stream; ``follow_legacy``: a session's
notices). This runs every such snippet, as printed, against `presets serve`
over stdio and HTTP and against ``build_server`` in memory: it must print the
tool list, then print it again without the theme tool once `presets off
general-theme-tools` (or the manager, in memory) turns that preset off.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.stdio import StdioServerParameters

from agent_presets.server.mcp import build_server
from agent_presets_general import SpaceHost

from .conftest import HttpServer
from .test_e2e_control import cli, server

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", REPO / "docs" / "clients.md", REPO / "docs" / "embedding.md"]
THEME_TOOL = "space_app_set_theme"
THEME = "general-theme-tools"


def snippets(page: Path) -> dict[str, str]:
    """The page's client snippets, by the function they define."""
    found: dict[str, str] = {}
    for block in re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S):
        match = re.search(r"^async def (follow\w*)\(", block, re.M)
        if match:
            found[match.group(1)] = block
    return found


ALL = {(page.name, name): code for page in PAGES for name, code in snippets(page).items()}


def test_every_page_shows_both_eras() -> None:
    for page in PAGES:
        assert set(snippets(page)) == {"follow", "follow_legacy"}, page


async def run_snippet(code: str, name: str, target: Any, change: Callable[[], Awaitable[None]]):
    printed: list[Any] = []
    namespace: dict[str, Any] = {"__name__": "snippet", "print": printed.append}
    exec(compile(code, f"<{name} snippet>", "exec"), namespace)
    follow = namespace[name]
    async with anyio.create_task_group() as tg:
        tg.start_soon(follow, target)
        with anyio.fail_after(60):
            while not printed:
                await anyio.sleep(0.05)
            assert THEME_TOOL in printed[0], printed
            await change()
            while THEME_TOOL in printed[-1]:
                await anyio.sleep(0.05)
        tg.cancel_scope.cancel()
    return printed


@pytest.mark.parametrize(("page", "name"), sorted(ALL))
async def test_a_snippet_hears_a_change_over_http(tmp_path: Path, page: str, name: str) -> None:
    state = tmp_path / "state"
    http = HttpServer(state)

    async def change() -> None:
        assert (await cli(state, "off", THEME)).returncode == 0

    try:
        await run_snippet(ALL[page, name], name, http.url, change)
    finally:
        http.stop()


@pytest.mark.parametrize(("page", "name"), sorted(ALL))
async def test_a_snippet_hears_a_change_over_stdio(tmp_path: Path, page: str, name: str) -> None:
    state = tmp_path / "state"
    target: StdioServerParameters = server(state)

    async def change() -> None:
        assert (await cli(state, "off", THEME)).returncode == 0

    await run_snippet(ALL[page, name], name, target, change)


@pytest.mark.parametrize(("page", "name"), sorted(ALL))
async def test_a_snippet_hears_a_change_in_memory(tmp_path: Path, page: str, name: str) -> None:
    presets = SpaceHost(tmp_path / "state").start()
    mcp_server = build_server(presets)

    async def change() -> None:
        presets.manager.set_override(THEME, "off")

    try:
        await run_snippet(ALL[page, name], name, mcp_server, change)
    finally:
        mcp_server.close()
        presets.sync.stop()
