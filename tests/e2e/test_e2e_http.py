"""`presets serve --transport http` on a real 127.0.0.1 socket, several clients at once."""

from __future__ import annotations

import http.client
import json
import logging
from collections.abc import Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from .conftest import HttpServer

pytestmark = pytest.mark.anyio

LIST_CHANGED = "notifications/tools/list_changed"


class Notices:
    def __init__(self) -> None:
        self.methods: list[str] = []
        self.tools_changed = anyio.Event()

    async def __call__(self, message: Any) -> None:
        method = getattr(message, "method", None)
        if isinstance(method, str):
            self.methods.append(method)
            if method == LIST_CHANGED:
                self.tools_changed.set()


class _GetStreams(logging.Handler):
    """Counts the SDK client's "GET SSE connection established" debug lines.

    A legacy HTTP client hears server-initiated notices on a GET stream it
    opens in the background after the handshake; a change made before that
    stream is up has nowhere to go. Waiting for the streams makes the test
    deterministic.
    """

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "GET SSE connection established" in record.getMessage():
            self.count += 1


@pytest.fixture
def get_streams() -> Iterator[_GetStreams]:
    handler = _GetStreams()
    logger = logging.getLogger("mcp.client.streamable_http")
    previous = logger.level
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)


async def wait_for_streams(streams: _GetStreams, count: int) -> None:
    with anyio.fail_after(10):
        while streams.count < count:
            await anyio.sleep(0.02)


def text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def switch_to_drawing(client: Client) -> None:
    for name, args in (
        ("space_app_switch_surface", {"surface": "canvas"}),
        ("space_app_set_activity", {"activity": "drawing"}),
    ):
        result = await client.call_tool(name, args)
        assert not result.is_error, text(result)


async def test_http_three_clients_all_hear_a_change_one_of_them_makes(
    http_server: Any, get_streams: _GetStreams, expected_tool_names: dict[str, list[str]]
) -> None:
    notices = [Notices() for _ in range(3)]
    async with AsyncExitStack() as stack:
        clients = [
            await stack.enter_async_context(
                Client(http_server.url, mode="legacy", message_handler=n)
            )
            for n in notices
        ]
        await wait_for_streams(get_streams, 3)
        for client in clients:
            assert [t.name for t in (await client.list_tools()).tools] == expected_tool_names[
                "scene"
            ]
        await switch_to_drawing(clients[0])
        with anyio.fail_after(10):
            for n in notices:
                await n.tools_changed.wait()
        for client in clients:
            names = [t.name for t in (await client.list_tools()).tools]
            assert names == expected_tool_names["drawing"]
        # A drawing call from another client edits the one shared document.
        result = await clients[2].call_tool(
            "space_drawing_insert_shape",
            {"shape": "ellipse", "x": 1, "y": 1, "width": 5, "height": 5},
        )
        assert not result.is_error, text(result)
        created = json.loads(text(result))["id"]
        inspect = json.loads(text(await clients[1].call_tool("space_drawing_inspect", {})))
        assert created in [o["id"] for layer in inspect["layers"] for o in layer["objects"]]


async def test_http_modern_client_hears_a_legacy_clients_change_on_its_subscription(
    tmp_path: Path,
) -> None:
    # --delivery live: both clients are `local`, so under stable delivery (the default) the
    # legacy client's switch is that principal's own and changes no list of its.
    http_server = HttpServer(tmp_path / "state", "--delivery", "live")
    try:
        async with (
            Client(http_server.url) as modern,
            Client(http_server.url, mode="legacy") as legacy,
        ):
            assert modern.protocol_version == "2026-07-28"
            assert legacy.protocol_version == "2025-11-25"
            async with modern.listen(tools_list_changed=True, prompts_list_changed=True) as sub:
                await switch_to_drawing(legacy)
                seen: set[str] = set()
                with anyio.fail_after(10):
                    async for event in sub:
                        seen.add(type(event).__name__)
                        if {"ToolsListChanged", "PromptsListChanged"} <= seen:
                            break
                # The stream may also end early; hearing both changes is what this test is about.
                assert {"ToolsListChanged", "PromptsListChanged"} <= seen, seen
            names = [t.name for t in (await modern.list_tools()).tools]
            assert "space_drawing_insert_shape" in names
    finally:
        http_server.stop()


async def test_http_inactive_tool_is_an_explained_tool_error(http_server: Any) -> None:
    async with Client(http_server.url, mode="legacy") as client:
        result = await client.call_tool("space_drawing_undo", {})
    assert result.is_error
    assert "drawing-history-tools" in text(result)
    assert "canvas" in text(result)


def post_status(port: int, headers: dict[str, str]) -> int:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "rebind", "version": "0"},
        },
    }
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request(
            "POST",
            "/mcp",
            body=json.dumps(body),
            headers={
                "Accept": "application/json, text/event-stream",
                "Content-Type": "application/json",
                **headers,
            },
        )
        return connection.getresponse().status
    finally:
        connection.close()


def test_http_dns_rebinding_protection_rejects_foreign_host_and_origin(http_server: Any) -> None:
    assert post_status(http_server.port, {"Host": "attacker.example"}) in (403, 421)
    own = f"127.0.0.1:{http_server.port}"
    assert post_status(http_server.port, {"Host": own, "Origin": "http://evil.example"}) == 403
    assert post_status(http_server.port, {"Host": own}) == 200


def test_http_server_stops_on_sigterm(http_server: Any) -> None:
    http_server.stop()
    # uvicorn shuts down gracefully, then re-raises the signal it caught.
    assert http_server.process.returncode in (0, -15)
    assert "Traceback" not in "".join(http_server.stderr)
