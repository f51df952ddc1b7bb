"""An upstream MCP server is code someone else runs: it never decides our policy nor takes the
server down (issue 27).

Each test serves a plugins folder whose preset file declares the small fake upstream
(tests/upstreams/fake_upstream.py), or a tiny hostile one written here, through the headless
host and the MCP server to an in-memory client.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from e2e.test_e2e_upstreams import (  # the fixture: a first list waits for a first start
    FAKE,
    first_lists_wait_for_upstreams,  # noqa: F401
    preset,
    preset_file,
    yaml_list,
)
from mcp import Client

from agent_presets.lib.plugins import load_plugins
from agent_presets.server.config import ServeConfig
from agent_presets.server.mcp import build_server
from agent_presets_general import SpaceHost

pytestmark = pytest.mark.anyio


def upstream(tmp_path: Path, *args: str, name: str = "fake", **options: Any) -> str:
    """The fake upstream's declaration, with command-line ``args`` and YAML ``options``."""
    marks = tmp_path / "marks"
    marks.mkdir(exist_ok=True)
    command = [*FAKE, "--marks", str(marks), *args]
    extra = "".join(f"    {k}: {v}\n" for k, v in options.items())
    return f"  - name: {name}\n    command: {yaml_list(command)}\n" + extra


@asynccontextmanager
async def served(
    tmp_path: Path,
    upstreams: str,
    presets: str,
    config: ServeConfig | None = None,
    *,
    plugins: list[object] | None = None,
    **client: Any,
) -> AsyncIterator[tuple[Client, Any]]:
    folder = tmp_path / "plugins"
    preset_file(folder, upstreams, presets)
    with SpaceHost(tmp_path / "state") as host:
        presets_ = host.start(load_plugins(plugins or [], plugins_dir=folder))
        assert presets_.problems == []
        server = build_server(presets_, config or ServeConfig())
        try:
            async with Client(server, mode="legacy", **client) as connected:
                yield connected, server
        finally:
            server.close()


def text(result: Any) -> str:
    return str(result.content[0].text)


def notes(tmp_path: Path) -> list[str]:
    path = tmp_path / "marks" / "note.txt"
    return path.read_text().splitlines() if path.exists() else []


def decide_when_asked(server: Any, outcome: str) -> threading.Thread:
    """Decide the first pending request as a person would, from another thread."""

    def decide() -> None:
        for _ in range(3000):
            pending = server.control.requests.pending()
            if pending:
                server.control.requests.decide(pending[0].id, outcome, by="cli")
                return
            threading.Event().wait(0.01)

    thread = threading.Thread(target=decide)
    thread.start()
    return thread


def writes_on(server: Any) -> None:
    server.presets.manager.set_override("fake-writes", "on")


# ------------------------------------------------------------------- items 2 and 3: hints


async def test_an_upstream_that_says_read_only_still_waits_for_confirm_risky(
    tmp_path: Path,
) -> None:
    config = ServeConfig(confirm="risky", confirm_timeout=1.0)
    presets = preset("fake-writes", ["fake.note"], "filesystem-write", "off")
    async with served(tmp_path, upstream(tmp_path, "--lie"), presets, config) as (client, server):
        await client.list_tools()  # the upstream lists its tools: its presets are registered
        writes_on(server)
        listing = {t.name: t for t in (await client.list_tools()).tools}
        note = listing["space_fake_note"]
        assert note.annotations is not None and not note.annotations.read_only_hint
        assert note.annotations.destructive_hint is True
        refused = await client.call_tool("space_fake_note", {"text": "unasked"})
        assert refused.is_error, text(refused)
    assert notes(tmp_path) == []  # nobody approved: it never ran


async def test_an_upstream_that_relists_a_tool_as_read_only_after_approval_is_asked_again(
    tmp_path: Path,
) -> None:
    config = ServeConfig(confirm="risky", confirm_timeout=1.0)
    presets = preset("fake-writes", ["fake.note"], "filesystem-write", "off") + preset(
        "fake-calm", ["fake.calm"]
    )
    changed = anyio.Event()

    def relisted_read_only(server: Any) -> bool:
        tool = server.upstreams.set.tools.get("fake.note")
        return tool is not None and tool.annotations.get("readOnlyHint") is True

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with served(
        tmp_path, upstream(tmp_path), presets, config, message_handler=on_message
    ) as (client, server):
        await client.list_tools()
        writes_on(server)
        approving = decide_when_asked(server, "approved")
        first = await client.call_tool("space_fake_note", {"text": "approved"})
        approving.join()
        assert not first.is_error, text(first)
        await client.call_tool("space_fake_calm", {})
        with anyio.fail_after(20):
            await changed.wait()
            while not relisted_read_only(server):
                await anyio.sleep(0.05)
        second = await client.call_tool("space_fake_note", {"text": "unasked"})
        assert second.is_error, text(second)
    assert notes(tmp_path) == ["approved"]


# ------------------------------------------------------------------- item 10: terminal text


def test_upstreams_snapshot_shows_an_upstreams_escape_sequences_instead_of_sending_them(
    tmp_path: Path,
) -> None:
    from click.testing import CliRunner

    from agent_presets.cli import main

    title = "\x1b]0;owned\x07evil\x1b[2K"
    path = preset_file(
        tmp_path / "plugins", upstream(tmp_path, "--name", title), preset("p", ["fake.pid"])
    )
    result = CliRunner().invoke(main, ["upstreams", "snapshot", str(path)])
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output and "\x07" not in result.output
    assert "tools (\\x1b]0;owned\\x07evil\\x1b[2K" in result.output


# ------------------------------------------------------------------- item 11: relists and counts


async def test_a_flood_of_tools_list_changed_runs_one_relist_at_a_time(tmp_path: Path) -> None:
    async with served(
        tmp_path, upstream(tmp_path), preset("fake-tools", ["fake.flood_changes", "fake.pid"])
    ) as (client, server):
        await client.list_tools()
        flooded = await client.call_tool("space_fake_flood_changes", {"count": 2000})
        assert not flooded.is_error, text(flooded)
        # The pid call answers after every notice before it was read.
        assert not (await client.call_tool("space_fake_pid", {})).is_error
        with anyio.fail_after(20):
            while server.upstreams.status()["fake"]["lists"] < 2:
                await anyio.sleep(0.05)
        await anyio.sleep(0.5)
        # One relist at a time, and the notices that come while it runs make one more
        # after it, never one each of the 2,000 (each was a task of its own, all held).
        # Coalesced: a small fraction of one relist per notice (200 to 220 on a loaded
        # machine; one per notice would be 2,000).
        assert 2 <= server.upstreams.status()["fake"]["lists"] <= 500


async def test_an_upstream_that_lists_more_tools_than_it_may_does_not_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_presets.server.mcp import upstream as running

    monkeypatch.setattr(running, "MAX_TOOLS", 5)  # the fake lists 11 (the cap is 1,000)
    async with served(tmp_path, upstream(tmp_path), preset("fake-tools", ["fake.pid"])) as (
        client,
        server,
    ):
        listing = await client.list_tools()
        assert "space_fake_pid" not in [t.name for t in listing.tools]
        status = server.upstreams.status()["fake"]
        assert status["running"] is False
        assert "upstream 'fake' lists more than 5 tools" in status["last_error"]
        assert "space_presets_request" in [t.name for t in listing.tools]  # the rest is served


# ------------------------------------------------------------------- item 8: the shell


async def test_a_hung_upstream_call_does_not_delay_a_surface_switch(tmp_path: Path) -> None:
    import agent_presets_general

    hang = preset("fake-hang", ["fake.hang"])
    async with served(
        tmp_path, upstream(tmp_path, call_timeout=30), hang, plugins=[agent_presets_general]
    ) as (client, _server):
        await client.list_tools()
        order: list[str] = []

        async def hung() -> None:
            await client.call_tool("space_fake_hang", {})
            order.append("hang answered")

        async with anyio.create_task_group() as tg:
            tg.start_soon(hung)
            await anyio.sleep(0.5)  # the hang is in flight (a switch before it proves nothing)
            switched = await client.call_tool("space_app_switch_surface", {"surface": "canvas"})
            order.append("switched")
            assert not switched.is_error, text(switched)
            tg.cancel_scope.cancel()
        assert order == ["switched"]


# ------------------------------------------------------------------- item 4: a hung start


async def test_an_upstream_that_never_answers_initialize_stalls_no_list_or_builtin_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import agent_presets_general
    from agent_presets.server.mcp import upstream as running

    monkeypatch.setattr(running, "READY_WAIT", 0.5)  # 5 s: a cold npx -y's start
    mute = upstream(tmp_path, "--delay", "3600", start_timeout=60)
    async with served(
        tmp_path, mute, preset("fake-tools", ["fake.pid"]), plugins=[agent_presets_general]
    ) as (client, server):
        for index in range(10):
            listing = await client.list_tools()
            assert "space_fake_pid" not in [t.name for t in listing.tools]
            assert "space_app_switch_surface" in [t.name for t in listing.tools]
            surface = "canvas" if index % 2 else "scene"
            switched = await client.call_tool("space_app_switch_surface", {"surface": surface})
            assert not switched.is_error, text(switched)
        # All of it was served while the upstream's first start still waited for its answer
        # (start_timeout 60): no request waited for it past READY_WAIT.
        status = server.upstreams.status()["fake"]
        assert (status["starts"], status["failures"], status["running"]) == (1, 0, False)


# ------------------------------------------------------------------- items 5 and 6: size, floods


async def test_a_message_over_the_size_cap_is_a_clear_error_and_the_upstream_restarts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_presets.server.mcp import upstream_stdio

    monkeypatch.setattr(upstream_stdio, "MAX_MESSAGE", 64 * 1024)  # 8 MiB
    async with served(
        tmp_path, upstream(tmp_path), preset("fake-tools", ["fake.big", "fake.pid"])
    ) as (client, server):
        await client.list_tools()
        fits = await client.call_tool("space_fake_big", {"size": 30_000})
        assert not fits.is_error and len(text(fits)) == 30_000
        cut = await client.call_tool("space_fake_big", {"size": 200_000})
        assert cut.is_error
        assert (
            "upstream 'fake' stopped while answering 'big' (it sent a message longer than "
            "65,536 bytes, the most an upstream may send; it was stopped); it restarts on the "
            "next call"
        ) in text(cut)
        again = await client.call_tool("space_fake_pid", {})
        assert not again.is_error, text(again)
        assert server.upstreams.status()["fake"]["starts"] == 2


async def test_a_log_flood_is_cut_to_a_burst_and_a_count(tmp_path: Path) -> None:
    from agent_presets.server.mcp.upstream_stdio import NOTICE_BURST

    logged: list[str] = []

    async def on_log(params: Any) -> None:
        logged.append(str(params.data))

    async with served(
        tmp_path,
        upstream(tmp_path),
        preset("fake-tools", ["fake.chatty", "fake.pid"]),
        logging_callback=on_log,
    ) as (client, server):
        await client.list_tools()
        await client.set_logging_level("info")
        said = await client.call_tool("space_fake_chatty", {"count": 5000})
        assert not said.is_error, text(said)
        assert text(said) == "said it all"
        chatter = [line for line in logged if "chatter" in line]
        # The burst, and what the rate let through while the rest arrived: not 5,000.
        assert NOTICE_BURST <= len(chatter) < 1000
        dropped = server.upstreams._connections["fake"].bounds.dropped["log"]
        assert len(chatter) + dropped == 5000
        assert logged[-1] == (
            f"[fake] {dropped:,} log messages of this call were dropped: an upstream may send "
            f"{NOTICE_BURST} at once and 50 a second after that"
        )


async def test_a_log_flood_over_http_is_cut_to_a_burst_and_a_count(tmp_path: Path) -> None:
    import socket
    import subprocess
    import time

    from agent_presets.server.mcp.upstream_stdio import NOTICE_BURST

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([*FAKE, "--http", str(port)], stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert time.monotonic() < deadline and process.poll() is None, "it did not start"
            await anyio.sleep(0.2)
        logged: list[str] = []

        async def on_log(params: Any) -> None:
            logged.append(str(params.data))

        upstreams = f"  - name: remote\n    url: http://127.0.0.1:{port}/mcp\n"
        async with served(
            tmp_path, upstreams, preset("remote-tools", ["remote.chatty"]), logging_callback=on_log
        ) as (client, server):
            await client.list_tools()
            await client.set_logging_level("info")
            said = await client.call_tool("space_remote_chatty", {"count": 1000})
            assert text(said) == "said it all"
            chatter = [line for line in logged if "chatter" in line]
            assert NOTICE_BURST <= len(chatter) < 1000
            dropped = server.upstreams._connections["remote"].bounds.dropped["log"]
            assert len(chatter) + dropped == 1000
            assert "log messages of this call were dropped" in logged[-1]
    finally:
        process.terminate()
        process.wait(timeout=10)
