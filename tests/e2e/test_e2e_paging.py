"""``tools/list`` pages with a cursor; ``resources/templates/list`` answers an empty list."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from agent_presets.server import ServeConfig
from agent_presets.server.mcp import build_server
from agent_presets.server.mcp.server import TOOLS_PAGE_SIZE

from .manytools import many_tools, tool_name

pytestmark = pytest.mark.anyio

# The server's own tool, always served after the presets' tools (the agent's way to ask).
REQUEST_TOOL = "space_presets_request"


async def list_all(client: Client) -> tuple[list[str], int]:
    names: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        result = await client.list_tools(cursor=cursor, cache_mode="refresh")
        pages += 1
        names.extend(t.name for t in result.tools)
        cursor = result.next_cursor
        if cursor is None:
            return names, pages


async def test_tools_list_pages_through_every_tool_once_in_order(tmp_path: Path) -> None:
    server = build_server(many_tools(250, tmp_path))
    try:
        async with Client(server, mode="legacy") as client:
            names, pages = await list_all(client)
    finally:
        server.close()
    assert TOOLS_PAGE_SIZE == 100
    assert pages == 3
    assert names == [*(tool_name(i) for i in range(250)), REQUEST_TOOL]


async def test_a_list_that_fits_one_page_has_no_cursor(tmp_path: Path) -> None:
    server = build_server(many_tools(99, tmp_path))
    try:
        async with Client(server, mode="legacy") as client:
            result = await client.list_tools()
    finally:
        server.close()
    assert len(result.tools) == 100  # 99 preset tools and the request tool
    assert result.next_cursor is None


async def test_page_size_is_configurable(tmp_path: Path) -> None:
    server = build_server(many_tools(7, tmp_path), ServeConfig(page_size=3))
    try:
        async with Client(server, mode="legacy") as client:
            names, pages = await list_all(client)
    finally:
        server.close()
    assert pages == 3  # 8 tools, 3 a page
    assert names == [*(tool_name(i) for i in range(7)), REQUEST_TOOL]


@pytest.mark.parametrize(
    "cursor",
    [
        "not-a-cursor",
        "",
        base64.urlsafe_b64encode(b"tools:0:-1").decode(),
        base64.urlsafe_b64encode(b"prompts:1:3").decode(),
        "%%%",
    ],
)
async def test_an_invalid_cursor_is_invalid_params_naming_cursor(
    tmp_path: Path, cursor: str
) -> None:
    server = build_server(many_tools(5, tmp_path), ServeConfig(page_size=2))
    try:
        async with Client(server, mode="legacy") as client:
            with pytest.raises(MCPError) as caught:
                await client.list_tools(cursor=cursor)
    finally:
        server.close()
    assert caught.value.error.code == -32602
    assert "cursor" in caught.value.error.message
    assert "from the start" in caught.value.error.message


async def test_a_cursor_from_before_a_change_asks_to_list_again(tmp_path: Path) -> None:
    presets = many_tools(5, tmp_path)
    server = build_server(presets, ServeConfig(page_size=2))
    try:
        async with Client(server, mode="legacy") as client:
            first = await client.list_tools()
            assert first.next_cursor is not None
            presets.manager.set_override("many-tools", "off")
            with pytest.raises(MCPError) as caught:
                await client.list_tools(cursor=first.next_cursor)
            assert caught.value.error.code == -32602
            assert "has changed" in caught.value.error.message
            again = await client.list_tools(cache_mode="refresh")
            assert [t.name for t in again.tools] == [REQUEST_TOOL]
            assert again.next_cursor is None
    finally:
        server.close()


async def test_resource_templates_list_is_empty(tmp_path: Path) -> None:
    server = build_server(many_tools(1, tmp_path))
    try:
        async with Client(server, mode="legacy") as client:
            result = await client.list_resource_templates()
    finally:
        server.close()
    assert result.resource_templates == []
