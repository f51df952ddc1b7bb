"""Upstream MCP servers through the server, for real.

The npm reference servers (server-filesystem, server-everything) come from
tests/upstreams/node_modules and the PyPI ones (mcp-server-git,
mcp-server-time) from uv's cache, both put there by tests/upstreams/install.sh,
which .ci/run calls; tests/upstreams/fake_upstream.py plays the upstream
that crashes, hangs, logs and changes its tools on cue. Each test serves a
plugins folder holding one preset file, through the headless host and the
MCP server, to an in-memory client, except the SIGKILL test, which runs
``presets serve`` as a process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from host_processes import processes_with
from mcp import Client

from agent_presets.lib.plugins import load_plugins
from agent_presets.server import ServeConfig
from agent_presets.server.mcp import build_server
from agent_presets.server.policy import ToolPolicy
from agent_presets_general import SpaceHost

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def first_lists_wait_for_upstreams(monkeypatch: pytest.MonkeyPatch) -> None:
    """Requests wait up to 120 s for an upstream's first start, not READY_WAIT's 5 s.

    These tests read upstream tools in their first list; on a loaded machine the
    fake upstream alone takes more than 5 s to start (a client hears
    tools/list_changed when they come instead).
    """
    from agent_presets.server.mcp import upstream as running

    monkeypatch.setattr(running, "READY_WAIT", 120.0)


HERE = Path(__file__).resolve().parents[1] / "upstreams"
BIN = HERE / "node_modules" / ".bin"
FAKE = [sys.executable, str(HERE / "fake_upstream.py")]
VERSIONS = {
    line.split("==")[0]: line.strip()
    for line in (HERE / "versions.txt").read_text().splitlines()
    if line.strip() and not line.startswith("#")
}


def _installed() -> None:
    missing = [
        n for n in ("mcp-server-filesystem", "mcp-server-everything") if not (BIN / n).exists()
    ]
    if missing:
        pytest.fail(f"{', '.join(missing)} not installed: run tests/upstreams/install.sh")


def yaml_list(items: list[str]) -> str:
    return "[" + ", ".join(json.dumps(i) for i in items) + "]"


def preset_file(folder: Path, upstreams: str, presets: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "upstream.yaml"
    path.write_text(f"upstreams:\n{upstreams}\npresets:\n{presets}", encoding="utf-8")
    return path


def preset(name: str, tool_ids: list[str], risk: str = "normal", state: str = "auto") -> str:
    return (
        f"  - name: {name}\n    default_state: {state}\n    risk: {risk}\n"
        f"    contexts: [{{surface: any}}]\n    tool_ids: {yaml_list(tool_ids)}\n"
    )


@asynccontextmanager
async def served(
    tmp_path: Path,
    upstreams: str,
    presets: str,
    *,
    policy: ToolPolicy | None = None,
    client: Callable[[Any], Client] | None = None,
    **client_options: Any,
) -> AsyncIterator[tuple[Client, Any, SpaceHost]]:
    """A client of the server of a plugins folder holding one preset file of upstreams."""
    folder = tmp_path / "plugins"
    preset_file(folder, upstreams, presets)
    with SpaceHost(tmp_path / "state") as host:
        plugin_set = load_plugins([], plugins_dir=folder)
        presets_ = host.start(plugin_set)
        assert presets_.problems == []
        make = policy if policy is not None else None
        server = build_server(presets_, ServeConfig(policy=make))
        try:
            async with Client(server, mode="legacy", **client_options) as connected:
                yield connected, server, host
        finally:
            server.close()


def names(listing: Any) -> list[str]:
    return [tool.name for tool in listing.tools]


# ------------------------------------------------------------------- real servers


async def test_a_filesystem_upstream_starts_on_the_first_list_and_never_sees_the_clients_roots(
    tmp_path: Path,
) -> None:
    _installed()
    tools = ["fs.read_text_file", "fs.list_directory", "fs.list_allowed_directories"]
    upstreams = f'  - name: fs\n    command: [{BIN / "mcp-server-filesystem"}, "{{root}}"]\n'
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    async def roots(context: Any) -> Any:
        import mcp_types as types

        return types.ListRootsResult(roots=[types.Root(uri=elsewhere.as_uri())])  # type: ignore[arg-type]

    async with served(
        tmp_path, upstreams, preset("fs-read", tools, "filesystem-read"), list_roots_callback=roots
    ) as (client, server, host):
        assert server.upstreams.status()["fs"]["running"] is False  # nothing started yet
        (host.root / "hello.txt").write_text("hello from the root")
        listing = await client.list_tools()
        assert server.upstreams.status()["fs"]["running"] is True
        served_tools = {t.name: t for t in listing.tools if t.name.startswith("space_fs_")}
        assert sorted(served_tools) == [
            "space_fs_list_allowed_directories",
            "space_fs_list_directory",
            "space_fs_read_text_file",
        ]
        read = served_tools["space_fs_read_text_file"]
        # The upstream's own description, draft-07 schema and annotations, as it lists them.
        assert "text" in (read.description or "")
        assert read.input_schema["$schema"] == "http://json-schema.org/draft-07/schema#"
        assert read.annotations is not None and read.annotations.read_only_hint is True
        result = await client.call_tool(
            "space_fs_read_text_file", {"path": str(host.root / "hello.txt")}
        )
        assert not result.is_error
        assert result.content[0].text == "hello from the root"  # type: ignore[union-attr]
        assert result.structured_content == {"content": "hello from the root"}
        # Checked against its draft-07 schema here, before the upstream hears of it.
        bad = await client.call_tool("space_fs_read_text_file", {"path": 42})
        assert bad.is_error and "'path'" in bad.content[0].text  # type: ignore[union-attr]
        allowed = await client.call_tool("space_fs_list_allowed_directories", {})
        text = allowed.content[0].text  # type: ignore[union-attr]
        assert str(host.root.resolve()) in text and str(elsewhere) not in text


async def test_server_everything_names_with_hyphens_images_structured_content_and_progress(
    tmp_path: Path,
) -> None:
    _installed()
    tools = [
        "everything.get-tiny-image",
        "everything.get-structured-content",
        "everything.trigger-long-running-operation",
        "everything.echo",
    ]
    upstreams = f"  - name: everything\n    command: [{BIN / 'mcp-server-everything'}]\n"
    async with served(tmp_path, upstreams, preset("everything-tools", tools)) as (
        client,
        server,
        _host,
    ):
        listing = await client.list_tools()
        assert {
            "space_everything_get_tiny_image",
            "space_everything_get_structured_content",
            "space_everything_trigger_long_running_operation",
            "space_everything_echo",
        } <= set(names(listing))
        # What it lists depends on the capabilities declared to it: none here, 13 tools.
        assert server.upstreams.status()["everything"]["tools"] == 13
        image = await client.call_tool("space_everything_get_tiny_image", {})
        assert any(block.type == "image" for block in image.content)
        structured = await client.call_tool(
            "space_everything_get_structured_content", {"location": "New York"}
        )
        assert structured.structured_content is not None
        assert "temperature" in structured.structured_content
        seen: list[float] = []

        async def progress(done: float, total: float | None, message: str | None) -> None:
            seen.append(done)

        long = await client.call_tool(
            "space_everything_trigger_long_running_operation",
            {"duration": 1, "steps": 3},
            progress_callback=progress,
        )
        assert not long.is_error
        assert len(seen) >= 3  # every step's progress reached this client


async def test_mcp_server_git_with_strip_prefix_is_named_git_status_not_git_git_status(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "state" / "files"
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "a.txt").write_text("a")
    upstreams = (
        f"  - name: git\n    command: [uvx, {VERSIONS['mcp-server-git']}, --repository, "
        '"{root}"]\n    strip_prefix: git_\n'
    )
    async with served(tmp_path, upstreams, preset("git-read", ["git.status", "git.log"])) as (
        client,
        _server,
        host,
    ):
        listing = await client.list_tools()
        assert {"space_git_status", "space_git_log"} <= set(names(listing))
        status = await client.call_tool("space_git_status", {"repo_path": str(host.root)})
        assert not status.is_error
        assert "a.txt" in status.content[0].text  # type: ignore[union-attr]


async def test_mcp_server_time_structured_results_pass_through(tmp_path: Path) -> None:
    upstreams = f"  - name: time\n    command: [uvx, {VERSIONS['mcp-server-time']}]\n"
    async with served(tmp_path, upstreams, preset("time-tools", ["time.get_current_time"])) as (
        client,
        _server,
        _host,
    ):
        listing = await client.list_tools()
        tool = next(t for t in listing.tools if t.name == "space_time_get_current_time")
        assert tool.output_schema is not None
        result = await client.call_tool("space_time_get_current_time", {"timezone": "UTC"})
        assert not result.is_error
        assert result.structured_content is not None
        assert result.structured_content["timezone"] == "UTC"


# ------------------------------------------------------------------- the fake upstream


def fake(tmp_path: Path, **options: Any) -> str:
    marks = tmp_path / "marks"
    marks.mkdir(exist_ok=True)
    extra = "".join(f"    {k}: {v}\n" for k, v in options.items())
    return f"  - name: fake\n    command: {yaml_list([*FAKE, '--marks', str(marks)])}\n" + extra


FAKE_TOOLS = [
    "fake.slow",
    "fake.crash",
    "fake.hang",
    "fake.fail",
    "fake.getThing",
    "fake.pid",
    "fake.echo",
    "fake.add_tool",
]


async def test_a_camel_case_name_an_error_result_and_forwarded_log_messages(
    tmp_path: Path,
) -> None:
    logged: list[str] = []

    async def on_log(params: Any) -> None:
        logged.append(str(params.data))

    async with served(
        tmp_path, fake(tmp_path), preset("fake-tools", FAKE_TOOLS), logging_callback=on_log
    ) as (client, _server, _host):
        listing = await client.list_tools()
        assert "space_fake_get_thing" in names(listing)  # getThing, split where its case changes
        thing = await client.call_tool("space_fake_get_thing", {"key": "k"})
        assert thing.content[0].text == "thing k"  # type: ignore[union-attr]
        failed = await client.call_tool("space_fake_fail", {})
        assert failed.is_error
        assert failed.content[0].text == "the fake upstream refused this"  # type: ignore[union-attr]
        await client.set_logging_level("info")
        done = await client.call_tool("space_fake_slow", {"seconds": 0.2})
        assert done.content[0].text == "slow done"  # type: ignore[union-attr]
        assert any("[fake] working on step" in line for line in logged)


async def test_a_forwarded_call_runs_on_the_servers_loop_with_its_progress_and_no_thread(
    tmp_path: Path,
) -> None:
    progress: list[float] = []
    before = {t.name for t in threading.enumerate()}

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(done)

    async with served(tmp_path, fake(tmp_path), preset("fake-tools", FAKE_TOOLS)) as (
        client,
        _server,
        _host,
    ):
        await client.list_tools()
        done = await client.call_tool(
            "space_fake_slow", {"seconds": 0.2}, progress_callback=on_progress
        )
        thing = await client.call_tool("space_fake_get_thing", {"key": "k"})
        started = {t.name for t in threading.enumerate()} - before
    assert done.content[0].text == "slow done"  # type: ignore[union-attr]
    assert thing.content[0].text == "thing k"  # type: ignore[union-attr]
    assert progress and progress == sorted(progress)  # every notice, in order, before the result
    # No worker thread ran the forward, and the upstream's client lives on the server's loop.
    assert not any(name.startswith(("presets-tool", "presets-upstreams")) for name in started)


async def test_a_cancelled_call_is_cancelled_upstream(tmp_path: Path) -> None:
    async with served(tmp_path, fake(tmp_path), preset("fake-tools", FAKE_TOOLS)) as (
        client,
        _server,
        _host,
    ):
        await client.list_tools()
        with anyio.move_on_after(1.5):
            await client.call_tool("space_fake_slow", {"seconds": 30})
        mark = tmp_path / "marks" / "cancelled"
        with anyio.fail_after(10):
            while not mark.exists():
                await anyio.sleep(0.05)
        again = await client.call_tool("space_fake_get_thing", {"key": "after"})
        assert again.content[0].text == "thing after"  # type: ignore[union-attr]


async def test_a_crash_is_a_tool_error_naming_the_upstream_and_the_next_call_restarts_it(
    tmp_path: Path,
) -> None:
    async with served(tmp_path, fake(tmp_path), preset("fake-tools", FAKE_TOOLS)) as (
        client,
        server,
        _host,
    ):
        await client.list_tools()
        first = (await client.call_tool("space_fake_pid", {})).content[0].text  # type: ignore[union-attr]
        crashed = await client.call_tool("space_fake_crash", {})
        assert crashed.is_error
        text = crashed.content[0].text  # type: ignore[union-attr]
        assert "upstream 'fake' stopped while answering 'crash'" in text
        assert "restarts on the next call" in text
        second = (await client.call_tool("space_fake_pid", {})).content[0].text  # type: ignore[union-attr]
        assert second != first
        assert server.upstreams.status()["fake"]["starts"] == 2


async def test_a_hang_is_a_tool_error_and_the_upstream_is_restarted(tmp_path: Path) -> None:
    async with served(
        tmp_path, fake(tmp_path, call_timeout=1), preset("fake-tools", FAKE_TOOLS)
    ) as (client, _server, _host):
        await client.list_tools()
        hung = await client.call_tool("space_fake_hang", {})
        assert hung.is_error
        assert "did not answer 'hang' within 1 s" in hung.content[0].text  # type: ignore[union-attr]
        after = await client.call_tool("space_fake_get_thing", {"key": "x"})
        assert not after.is_error


async def test_an_upstream_that_cannot_start_backs_off(tmp_path: Path) -> None:
    upstreams = (
        "  - name: fake\n    command: "
        + yaml_list(
            [sys.executable, "-c", "import sys; sys.stderr.write('no luck\\n'); sys.exit(2)"]
        )
        + "\n"
    )
    # A snapshot makes the tool known without starting it, so calls are what start it.
    from agent_presets.lib.upstreams import Snapshot, Upstream, UpstreamTool, lock_path, write_lock

    folder = tmp_path / "plugins"
    path = preset_file(folder, upstreams, preset("fake-tools", ["fake.pid"]))
    import yaml

    declared = Upstream.from_dict(yaml.safe_load(path.read_text())["upstreams"][0])
    write_lock(
        lock_path(path),
        [Snapshot("fake", declared.declaration(), (UpstreamTool("pid", "The pid."),))],
    )
    with SpaceHost(tmp_path / "state") as host:
        presets = host.start(load_plugins([], plugins_dir=folder))
        server = build_server(presets)
        try:
            async with Client(server, mode="legacy") as client:
                assert "space_fake_pid" in names(await client.list_tools())
                first = await client.call_tool("space_fake_pid", {})
                assert first.is_error
                first_text = first.content[0].text  # type: ignore[union-attr]
                assert "upstream 'fake' could not be started" in first_text
                assert "it exited with status 2" in first_text
                assert "its last words on stderr: 'no luck'" in first_text
                await client.call_tool("space_fake_pid", {})  # the second try fails too
                third = await client.call_tool("space_fake_pid", {})
                assert "is restarting after it failed" in third.content[0].text  # type: ignore[union-attr]
                assert "try again in" in third.content[0].text  # type: ignore[union-attr]
        finally:
            server.close()


async def test_tools_list_changed_reimports_the_upstreams_tools(tmp_path: Path) -> None:
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        import mcp_types as types

        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with served(
        tmp_path, fake(tmp_path), preset("fake-tools", FAKE_TOOLS), message_handler=on_message
    ) as (client, server, _host):
        before = {t.name: t for t in (await client.list_tools()).tools}
        assert before["space_fake_echo"].description == "Its arguments back, as structured content."
        await client.call_tool("space_fake_add_tool", {})
        with anyio.fail_after(10):
            await changed.wait()
            while True:
                after = {t.name: t for t in (await client.list_tools()).tools}
                if after["space_fake_echo"].description != before["space_fake_echo"].description:
                    break
                await anyio.sleep(0.05)
        assert after["space_fake_echo"].description == "Its arguments back, described anew."
        # Known now, and listed by no preset: never served.
        assert server.presets.tool_adapters.get("fake.extra") is not None
        assert "space_fake_extra" not in after


async def test_upstream_calls_pass_the_allow_list_and_reach_the_event_log(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    folder = tmp_path / "plugins"
    preset_file(folder, fake(tmp_path), preset("fake-tools", FAKE_TOOLS))
    with SpaceHost(tmp_path / "state") as host:
        presets = host.start(load_plugins([], plugins_dir=folder))
        await_list = None
        server = build_server(presets, ServeConfig(policy=ToolPolicy(event_log=log)))
        try:
            async with Client(server, mode="legacy") as client:
                await_list = await client.list_tools()
                assert "space_fake_echo" in names(await_list)
                server.policy.allow = ToolPolicy.allow_list(presets, ["space_fake_echo"])
                refused = await client.call_tool("space_fake_get_thing", {"key": "x"})
                assert refused.is_error
                echoed = await client.call_tool("space_fake_echo", {"text": "hi", "times": 2})
                assert echoed.structured_content == {"text": "hihi", "times": 2}
        finally:
            server.close()
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    calls = [line for line in lines if line.get("tool") == "space_fake_echo"]
    assert calls and calls[-1]["preset"] == "fake-tools"
    assert any(line.get("tool") == "space_fake_get_thing" and line.get("gate") for line in lines)


# ------------------------------------------------------------------- processes


def _rpc(process: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert process.stdin is not None
    process.stdin.write((json.dumps(message) + "\n").encode())
    process.stdin.flush()


def _answer(process: subprocess.Popen[bytes], request_id: int) -> dict[str, Any]:
    assert process.stdout is not None
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        message = json.loads(line)
        if message.get("id") == request_id:
            return dict(message)
    raise AssertionError(f"no answer to request {request_id}")


def test_a_server_killed_with_sigkill_leaves_no_upstream_process_behind(tmp_path: Path) -> None:
    _installed()
    from .conftest import serve_command, server_env

    folder = tmp_path / "plugins"
    marker = str(tmp_path / "state" / "files")
    # Like npx, a shell starts the server as its child; beside it, a helper that ignores
    # stdin closing (as a server with timers does): all of them must end with the server.
    helper = f'"{sys.executable}" -c "import time; time.sleep(600)" "$0" &'
    script = f'{helper} "{BIN / "mcp-server-filesystem"}" "$0"'
    upstreams = f"  - name: fs\n    command: {yaml_list(['sh', '-c', script, '{root}'])}\n"
    preset_file(folder, upstreams, preset("fs-read", ["fs.list_allowed_directories"]))
    command = serve_command("--state-dir", str(tmp_path / "state"), "--plugins-dir", str(folder))
    env = server_env()
    env["PRESETS_LOAD_PLUGINS"] = "plugins"
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    try:
        _rpc(
            process,
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "test", "version": "0"},
                },
            },
        )
        _answer(process, 1)
        _rpc(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _rpc(process, {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
        listed = _answer(process, 2)
        assert "fs_list_allowed_directories" in [t["name"] for t in listed["result"]["tools"]]
        running = processes_with(marker, running=True)
        assert len(running) >= 3  # the guard, the shell, node and the helper, naming the root
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
        deadline = time.monotonic() + 10
        while processes_with(marker, running=True) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert processes_with(marker, running=True) == []
    finally:
        if process.poll() is None:
            process.kill()
        for pid in processes_with(marker, running=True):
            os.kill(pid, signal.SIGKILL)


# ------------------------------------------------------------------- the example packs


async def test_the_example_packs_follow_the_activity_live(tmp_path: Path) -> None:
    """examples/upstreams, with the locally installed servers in place of npx -y."""
    _installed()
    import shutil

    examples = Path(__file__).resolve().parents[2] / "examples" / "upstreams"
    folder = tmp_path / "upstreams"
    shutil.copytree(examples, folder, ignore=shutil.ignore_patterns("*.lock.json", "__pycache__"))
    files = folder / "files.yaml"
    files.write_text(
        files.read_text().replace(
            'npx, -y, "@modelcontextprotocol/server-filesystem@2026.8.31"',
            json.dumps(str(BIN / "mcp-server-filesystem")),
        )
    )
    root = tmp_path / "state" / "files"
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    os.environ["PRESETS_LOAD_PLUGINS"] = "context,upstreams"
    try:
        plugin_set = load_plugins(plugins_dir=folder)
    finally:
        del os.environ["PRESETS_LOAD_PLUGINS"]
    with SpaceHost(tmp_path / "state") as host:
        presets = host.start(plugin_set)
        server = build_server(presets)
        try:
            async with Client(server, mode="legacy") as client:

                async def upstream_tools() -> list[str]:
                    listed = names(await client.list_tools())
                    return [n for n in listed if n.startswith(("space_fs_", "space_git_"))]

                assert await upstream_tools() == []  # no activity yet: none of the 26
                # The host switches the activity (its space_app_set_activity tool does this).
                host.shell.set_activity("files")
                files_tools = await upstream_tools()
                assert len(files_tools) == 9 and all(n.startswith("space_fs_") for n in files_tools)
                host.shell.set_activity("history")
                history = await upstream_tools()
                assert len(history) == 7 and "space_git_status" in history
                status = await client.call_tool("space_git_status", {"repo_path": str(host.root)})
                assert not status.is_error
                assert len(presets.upstreams.tools) == 26
        finally:
            server.close()


async def test_an_upstream_reached_at_a_url_with_headers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _installed()
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "PORT": str(port)}
    process = subprocess.Popen(
        [str(BIN / "mcp-server-everything"), "streamableHttp"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + 30
        while b"listening" not in process.stdout.readline():
            assert time.monotonic() < deadline and process.poll() is None, "it did not start"
        monkeypatch.setenv("UPSTREAM_TOKEN", "s3cret")
        upstreams = (
            f"  - name: remote\n    url: http://127.0.0.1:{port}/mcp\n"
            '    headers: {Authorization: "Bearer ${UPSTREAM_TOKEN}"}\n'
        )
        async with served(tmp_path, upstreams, preset("remote-tools", ["remote.echo"])) as (
            client,
            _server,
            _host,
        ):
            assert "space_remote_echo" in names(await client.list_tools())
            echoed = await client.call_tool("space_remote_echo", {"message": "over http"})
            assert not echoed.is_error
            assert "over http" in echoed.content[0].text  # type: ignore[union-attr]
    finally:
        process.terminate()
        process.wait(timeout=10)
