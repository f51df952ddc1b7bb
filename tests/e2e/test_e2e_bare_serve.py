"""`presets serve` with only the core: a bare host whose context is set from outside.

No plugin is loaded (``PRESETS_LOAD_PLUGINS=""``), so nothing declares a context
field: the host takes whatever ``presets context set`` gives it, keeps it in its
state folder, and a restart resumes it. Nothing of the Space app appears.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from .conftest import serve_command, server_env
from .test_e2e_refapp import run_cli

pytestmark = pytest.mark.anyio

ALONE = {"PRESETS_LOAD_PLUGINS": ""}


def bare(tmp_path: Path) -> StdioServerParameters:
    command = serve_command("--state-dir", str(tmp_path / "state"))
    return StdioServerParameters(
        command=command[0], args=command[1:], env={**server_env(), **ALONE}
    )


async def status(client: Client) -> dict[str, Any]:
    read = await client.read_resource("presets://active/status")
    return json.loads(read.contents[0].text)  # type: ignore[union-attr]


async def test_a_server_with_no_plugin_takes_its_context_from_outside_and_resumes_it(
    tmp_path: Path,
) -> None:
    state = str(tmp_path / "state")
    async with Client(bare(tmp_path), mode="legacy") as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
        assert names == ["presets_request"]  # no namespace: the host supplies none
        assert (await status(client))["context"] == {}
        proc = await anyio.to_thread.run_sync(
            lambda: run_cli("context", "set", "board=inbox", "urgent=true", "--state-dir", state)
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == ("context: board=inbox urgent=true (changed: board, urgent)")
        assert (await status(client))["context"] == {"board": "inbox", "urgent": True}
    async with Client(bare(tmp_path), mode="legacy") as again:
        assert (await status(again))["context"] == {"board": "inbox", "urgent": True}
    words = " ".join(p.read_text(encoding="utf-8") for p in Path(state).glob("*.json"))
    for word in ("surface", "canvas", "world", "space_"):
        assert word not in words


def test_with_only_the_core_no_command_names_the_space_app(tmp_path: Path) -> None:
    helped = [
        run_cli(*command, "--help", env=ALONE)
        for command in (
            [],
            ["resolve"],
            ["explain"],
            ["budget"],
            ["serve"],
            ["context", "set"],
            ["opencode"],
            ["tokens"],
        )
    ]
    for proc in helped:
        assert proc.returncode == 0, proc.stderr
        text = proc.stdout.lower()
        for word in ("surface", "canvas", "world", "space_", "headless", "drawing"):
            assert word not in text, (proc.args, word)
