"""A call to a tool that is not active tells the model how to ask for it."""

from __future__ import annotations

from pathlib import Path

import anyio

import agent_presets_drawing
import agent_presets_general
from agent_presets.testing import PresetsHost


def test_an_inactive_tool_points_the_agent_to_the_request_tool(tmp_path: Path) -> None:
    host = PresetsHost(
        [agent_presets_general, agent_presets_drawing], tmp_path / "state", root=tmp_path / "r"
    )

    async def call() -> str:
        async with host.mcp_client() as client:
            result = await client.call_tool("space_app_write_file", {"path": "a", "content": ""})
            assert result.is_error
            return str(result.content[0].text)  # type: ignore[union-attr]

    try:
        text = anyio.run(call)
    finally:
        host.close()
    assert "provided by preset 'general-file-write-tools'" in text
    assert text.endswith(
        "Only the user can set an override; ask for one with space_presets_request "
        '(preset "general-file-write-tools", state "on", and your reason).'
    )
