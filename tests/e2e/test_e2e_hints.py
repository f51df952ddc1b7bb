"""MCP annotations of the built-in tools come from each tool's effective risk."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from agent_presets.server.mcp import build_server
from agent_presets_general import SpaceHost

pytestmark = pytest.mark.anyio


async def test_a_read_only_tool_in_a_destructive_preset_is_read_only_and_not_destructive(
    tmp_path: Path,
) -> None:
    host = SpaceHost(tmp_path / "state")
    presets = host.start(overrides={"scene-state-tools": "on"})
    host.shell.set_surface("scene")
    server = build_server(presets)
    try:
        async with Client(server, mode="legacy") as client:
            tools = {t.name: t.annotations for t in (await client.list_tools()).tools}
    finally:
        server.close()

    def of(name: str) -> tuple[Any, ...]:
        hints = tools[name]
        assert hints is not None
        return (hints.read_only_hint, hints.destructive_hint, hints.open_world_hint)

    assert of("space_scene_get_state") == (True, False, False)
    assert of("space_scene_restore_state") == (None, True, False)
