"""`presets serve` over stdio, driven by the SDK's client as opencode would drive it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

pytestmark = pytest.mark.anyio

SHAPE = {"shape": "rect", "x": 10, "y": 20, "width": 30, "height": 40}


class Notices:
    """A message handler that remembers which notifications arrived."""

    def __init__(self) -> None:
        self.methods: list[str] = []
        self._events: dict[str, anyio.Event] = {}

    async def __call__(self, message: Any) -> None:
        method = getattr(message, "method", None)
        if isinstance(method, str):
            self.methods.append(method)
            self._events.setdefault(method, anyio.Event()).set()

    def expect(self, method: str) -> None:
        """Forget earlier ``method`` notices; ``wait`` then waits for a new one."""
        self._events[method] = anyio.Event()

    async def wait(self, method: str, timeout: float = 10.0) -> None:
        with anyio.fail_after(timeout):
            await self._events.setdefault(method, anyio.Event()).wait()


def text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def names(client: Client) -> list[str]:
    return [t.name for t in (await client.list_tools()).tools]


async def test_stdio_switch_to_drawing_changes_the_list_and_a_drawing_call_edits_the_document(
    stdio_server_params: Callable[..., Any],
    expected_tool_names: dict[str, list[str]],
    tmp_path: Path,
) -> None:
    notices = Notices()
    async with Client(stdio_server_params(), mode="legacy", message_handler=notices) as client:
        assert client.server_capabilities.tools is not None
        assert client.server_capabilities.tools.list_changed is True
        first = await names(client)
        assert first == expected_tool_names["scene"]
        assert "space_app_switch_surface" in first
        assert not any(n.startswith("space_drawing_") for n in first)

        notices.expect("notifications/tools/list_changed")
        result = await client.call_tool("space_app_switch_surface", {"surface": "canvas"})
        assert not result.is_error, text(result)
        result = await client.call_tool("space_app_set_activity", {"activity": "drawing"})
        assert not result.is_error, text(result)
        await notices.wait("notifications/tools/list_changed")

        now = await names(client)
        assert now == expected_tool_names["drawing"]
        assert "space_drawing_insert_shape" in now
        assert not any(n.startswith("space_scene_") for n in now)

        result = await client.call_tool("space_drawing_insert_shape", SHAPE)
        assert not result.is_error, text(result)
        created = json.loads(text(result))["id"]
        inspect = json.loads(text(await client.call_tool("space_drawing_inspect", {})))
        objects = [o["id"] for layer in inspect["layers"] for o in layer["objects"]]
        assert created in objects

    # The host persisted the edit: the state directory's database holds the drawing.
    from agent_presets.host import StateStore

    store = StateStore(tmp_path / "state" / "state.db")
    try:
        saved = store.table("drawing", "home").get(f"object/{created}")
    finally:
        store.close()
    assert saved is not None and saved["object"]["id"] == created


async def test_stdio_inactive_tool_names_its_preset_and_the_context_it_needs(
    stdio_server_params: Callable[..., Any],
) -> None:
    async with Client(stdio_server_params(), mode="legacy") as client:
        result = await client.call_tool("space_drawing_insert_shape", SHAPE)
    assert result.is_error
    message = text(result)
    assert "drawing-shape-tools" in message
    assert "canvas" in message and "drawing" in message
    assert "unknown" not in message.lower()


async def test_stdio_off_preset_tool_names_the_override_that_enables_it(
    stdio_server_params: Callable[..., Any],
) -> None:
    async with Client(stdio_server_params(), mode="legacy") as client:
        result = await client.call_tool("space_drawing_delete_layer", {"layer": "layer-1"})
    assert result.is_error
    message = text(result)
    assert "drawing-layer-destructive-tools" in message
    assert "override" in message and "off by default" in message


async def test_stdio_override_on_the_command_line_serves_an_off_preset(
    stdio_server_params: Callable[..., Any],
) -> None:
    params = stdio_server_params(
        "--surface", "canvas", "--activity", "drawing", "--on", "drawing-layer-destructive-tools"
    )
    async with Client(params, mode="legacy") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    delete = tools["space_drawing_delete_layer"]
    assert delete.annotations is not None
    assert delete.annotations.destructive_hint is True
    insert = tools["space_drawing_insert_shape"].annotations
    assert insert is not None and insert.destructive_hint is False


async def test_stdio_bad_arguments_are_a_tool_error_and_the_server_keeps_serving(
    stdio_server_params: Callable[..., Any],
) -> None:
    async with Client(stdio_server_params(), mode="legacy") as client:
        result = await client.call_tool("space_app_switch_surface", {"surface": "moon"})
        assert result.is_error
        assert "surface" in text(result)
        assert "Traceback" not in text(result)
        result = await client.call_tool("space_app_switch_surface", {"surface": "canvas"})
        assert not result.is_error, text(result)


async def test_stdio_modern_client_hears_the_change_on_its_subscription(
    stdio_server_params: Callable[..., Any],
) -> None:
    # Delivery live: the list follows the client's own switch (stable delivery, the
    # default for this era, keeps it: tests/e2e/test_e2e_delivery.py).
    async with Client(stdio_server_params("--delivery", "live")) as client:
        assert client.protocol_version == "2026-07-28"
        async with client.listen(tools_list_changed=True) as subscription:
            for name, args in (
                ("space_app_switch_surface", {"surface": "canvas"}),
                ("space_app_set_activity", {"activity": "drawing"}),
            ):
                result = await client.call_tool(name, args)
                assert not result.is_error, text(result)
            with anyio.fail_after(10):
                event = await anext(aiter(subscription))
        assert type(event).__name__ == "ToolsListChanged"
        assert "space_drawing_insert_shape" in await names(client)


async def test_stdio_serve_namespace_prefixes_every_tool_and_prompt(
    stdio_server_params: Callable[..., Any],
) -> None:
    params = stdio_server_params(
        "--namespace", "myapp_", "--surface", "canvas", "--activity", "drawing"
    )
    async with Client(params, mode="legacy") as client:
        listed = await names(client)
        result = await client.call_tool("myapp_drawing_insert_shape", SHAPE)
    assert listed and all(n.startswith("myapp_") for n in listed)
    assert not result.is_error, text(result)
