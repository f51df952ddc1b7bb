"""How a 2026-07-28 client hears of changes: its open `subscriptions/listen` streams.

That revision has no session and no server-initiated notices outside a
listen stream, so a default SDK client (``mcp.Client``, mode auto) hears a
change only while it listens. Every open stream hears every change, made in
a request (a tool call) or outside one: `presets on|off` from another shell,
the host switching context from its own thread.
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.server.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ToolsListChanged,
)

from agent_presets.server.mcp import build_server
from agent_presets_general import SpaceHost

from .conftest import HttpServer, serve_command, server_env, terminate
from .test_e2e_control import cli, server

pytestmark = pytest.mark.anyio

THEME = "general-theme-tools"
STATUS = "presets://active/status"


async def heard(sub: Any, *kinds: type, timeout: float = 30) -> set[type]:
    """The event kinds of ``kinds`` that arrive on ``sub`` (all of them, or fail)."""
    wanted, got = set(kinds), set()
    with anyio.fail_after(timeout):
        async for event in sub:
            if type(event) in wanted:
                got.add(type(event))
            if got == wanted:
                break
    return got


def listening(client: Client) -> Any:
    return client.listen(
        tools_list_changed=True, prompts_list_changed=True, resource_subscriptions=[STATUS]
    )


async def test_presets_off_from_another_shell_reaches_two_listen_streams_over_http(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    http = HttpServer(state)
    try:
        async with Client(http.url) as one, Client(http.url) as two:
            assert one.protocol_version == "2026-07-28"
            async with listening(one) as first, listening(two) as second:
                done = await cli(state, "off", THEME)
                assert done.returncode == 0, done.stderr
                kinds = (ToolsListChanged, PromptsListChanged, ResourceUpdated)
                assert await heard(first, *kinds) == set(kinds)
                assert await heard(second, *kinds) == set(kinds)
            names = {t.name for t in (await one.list_tools()).tools}
            assert "space_app_set_theme" not in names
    finally:
        http.stop()


async def test_presets_on_from_another_shell_reaches_a_listen_stream_over_stdio(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    async with Client(server(state, "--off", THEME)) as client:
        assert client.protocol_version == "2026-07-28"
        async with listening(client) as sub:
            done = await cli(state, "on", THEME)
            assert done.returncode == 0, done.stderr
            assert await heard(sub, ToolsListChanged) == {ToolsListChanged}
        assert "space_app_set_theme" in {t.name for t in (await client.list_tools()).tools}


async def test_a_host_context_switch_on_its_own_thread_reaches_a_listen_stream(
    tmp_path: Path,
) -> None:
    host = SpaceHost(tmp_path / "state")
    presets = host.start()
    mcp_server = build_server(presets)
    try:
        async with Client(mcp_server) as client, listening(client) as sub:
            switch = threading.Thread(target=host.shell.set_surface, args=("canvas",))
            switch.start()
            switch.join()
            assert await heard(sub, ToolsListChanged, PromptsListChanged) == {
                ToolsListChanged,
                PromptsListChanged,
            }
    finally:
        mcp_server.close()
        presets.sync.stop()


async def test_a_resource_list_change_reaches_listen_streams_that_asked_for_it(
    tmp_path: Path,
) -> None:
    presets = SpaceHost(tmp_path / "state").start()
    mcp_server = build_server(presets)
    try:
        async with (
            Client(mcp_server) as client,
            client.listen(resources_list_changed=True) as sub,
        ):
            # What a server whose resources come and go does when they do.
            mcp_server.fanout.changed("resources")
            assert await heard(sub, ResourcesListChanged) == {ResourcesListChanged}
    finally:
        mcp_server.close()
        presets.sync.stop()


async def test_a_legacy_client_hears_a_resource_list_change_as_a_notification(
    tmp_path: Path,
) -> None:
    presets = SpaceHost(tmp_path / "state").start()
    mcp_server = build_server(presets)
    got = anyio.Event()

    async def on_message(message: Any) -> None:
        if getattr(message, "method", None) == "notifications/resources/list_changed":
            got.set()

    try:
        async with Client(mcp_server, mode="legacy", message_handler=on_message) as client:
            resources = client.server_capabilities.resources
            assert resources is not None and resources.list_changed
            await client.list_tools()  # the handshake is done: it hears its channel
            mcp_server.fanout.changed("resources")
            with anyio.fail_after(30):
                await got.wait()
    finally:
        mcp_server.close()
        presets.sync.stop()


def listen_then_end(
    tmp_path: Path,
    listen: dict[str, Any],
    end: Callable[[subprocess.Popen[str]], object],
    timeout: float,
) -> tuple[list[dict[str, Any]], int]:
    """Open ``listen`` on a stdio ``presets serve``, then ``end`` its input.

    Returns what the server wrote after the stream's acknowledgement, and
    its exit code once it stopped (within ``timeout`` seconds).
    """
    process = subprocess.Popen(
        serve_command("--state-dir", str(tmp_path / "state")),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=server_env(),
        text=True,
    )
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps(listen) + "\n")
        process.stdin.flush()
        first = json.loads(process.stdout.readline())
        assert first["method"] == "notifications/subscriptions/acknowledged", first
        end(process)
        code = process.wait(timeout=timeout)
        rest = [json.loads(line) for line in process.stdout.read().splitlines() if line.strip()]
    finally:
        terminate(process)
    return rest, code


def test_a_listen_stream_open_when_stdin_closes_ends_with_its_result_not_an_error(
    tmp_path: Path,
) -> None:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    listen = {
        "jsonrpc": "2.0",
        "id": "listen:0",
        "method": "subscriptions/listen",
        "params": {"_meta": meta, "notifications": {"toolsListChanged": True}},
    }

    def close_stdin(process: subprocess.Popen[str]) -> None:
        assert process.stdin is not None
        process.stdin.close()  # what a client does when it is done (Claude Code, at exit)

    rest, _ = listen_then_end(tmp_path, listen, close_stdin, timeout=30)
    answers = [m for m in rest if m.get("id") == "listen:0"]
    assert len(answers) == 1 and "result" in answers[0], rest


async def test_listen_streams_past_the_bounds_are_refused_and_the_open_ones_go_on(
    tmp_path: Path,
) -> None:
    """Issue 27: one client opened 19,499 listen streams; now a bound holds, per principal."""
    from contextlib import AsyncExitStack

    from mcp.shared.exceptions import MCPError

    from agent_presets.server.mcp.listenlimit import (
        MAX_LISTEN_PER_PRINCIPAL,
        MAX_LISTEN_STREAMS,
    )

    assert (MAX_LISTEN_PER_PRINCIPAL, MAX_LISTEN_STREAMS) == (50, 500)  # docs/security.md
    host = SpaceHost(tmp_path / "state")
    presets = host.start()
    mcp_server = build_server(presets)
    mcp_server.listen_limit.per_principal = 3
    try:
        async with Client(mcp_server) as client, AsyncExitStack() as streams:
            subs = [await streams.enter_async_context(listening(client)) for _ in range(3)]
            with pytest.raises(MCPError) as refused:
                async with listening(client):
                    pass
            assert refused.value.error.code == -32600
            assert "3 listen streams of this caller are open already" in refused.value.error.message
            assert len(mcp_server.listen_limit) == 3
            switch = threading.Thread(target=host.shell.set_surface, args=("canvas",))
            switch.start()
            switch.join()
            for sub in subs:  # the open streams still hear every change
                assert await heard(sub, ToolsListChanged) == {ToolsListChanged}
        with anyio.fail_after(10):
            while len(mcp_server.listen_limit):
                await anyio.sleep(0.05)
        mcp_server.listen_limit.total = 1
        async with Client(mcp_server) as client, listening(client):
            with pytest.raises(MCPError, match="the most this server keeps"):
                async with listening(client):
                    pass
    finally:
        mcp_server.close()
        presets.sync.stop()
