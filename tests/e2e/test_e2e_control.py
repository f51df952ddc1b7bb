"""Live control end to end: a real `presets serve` (stdio), a real MCP client, and the
`presets on|off|auto|status|requests|approve|deny` commands as separate processes.

Every wait is for an event (a notice, a file), bounded generously: the machine is shared.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from e2e.conftest import serve_command, server_env
from e2e.test_e2e_stdio import Notices, names, text
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from agent_presets.server.control import REQUEST_OUTPUT

pytestmark = pytest.mark.anyio

THEME = "general-theme-tools"
THEME_TOOL = "space_app_set_theme"
DESTRUCTIVE = "drawing-layer-destructive-tools"
ASK = "space_presets_request"
CHANGED = "notifications/tools/list_changed"
SECRET = "SECRET-REASON-d41d8cd9"


def presets(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``presets ARGS --state-dir STATE``, off a terminal (stdin is /dev/null)."""
    command = [*serve_command()[:-1], *args, "--state-dir", str(state)]
    return subprocess.run(
        command,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=server_env(),
        timeout=120,
    )


async def cli(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return await anyio.to_thread.run_sync(lambda: presets(state, *args))


async def cli_json(state: Path, *args: str) -> Any:
    done = await cli(state, *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def server(state: Path, *extra: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    command = serve_command("--state-dir", str(state), *extra)
    return StdioServerParameters(
        command=command[0], args=command[1:], env={**server_env(), **(env or {})}
    )


async def ask(client: Client, preset: str, state: str, reason: str = SECRET) -> dict[str, Any]:
    result = await client.call_tool(ASK, {"preset": preset, "state": state, "reason": reason})
    assert not result.is_error, text(result)
    answer: dict[str, Any] = json.loads(text(result))
    assert result.structured_content == answer
    jsonschema.validate(answer, dict(REQUEST_OUTPUT))  # what the tool's outputSchema says
    return answer


async def wait_gone(path: Path, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while path.exists() and time.monotonic() < deadline:
        await anyio.sleep(0.1)
    return not path.exists()


def events(state: Path) -> list[dict[str, Any]]:
    path = state / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def test_presets_on_mid_session_tells_the_client_and_serves_the_tool(tmp_path: Path) -> None:
    state = tmp_path / "state"
    notices = Notices()
    async with Client(
        server(state, "--off", THEME), mode="legacy", message_handler=notices
    ) as client:
        first = await names(client)
        assert THEME_TOOL not in first
        assert ASK in first  # always served
        sock = state / "control.sock"
        assert stat.S_ISSOCK(os.stat(sock).st_mode)
        assert stat.S_IMODE(os.stat(sock).st_mode) == 0o600

        notices.expect(CHANGED)
        done = await cli(state, "on", THEME)
        assert done.returncode == 0, done.stderr
        assert "active now" in done.stdout
        await notices.wait(CHANGED, timeout=60)
        assert THEME_TOOL in await names(client)
        result = await client.call_tool(THEME_TOOL, {"theme": "dark"})
        assert not result.is_error, text(result)

        status = await cli_json(state, "status")
        assert set(status) >= {"server", "context", "presets"}
        assert isinstance(status["server"], int) and status["server"] > 0
        assert status["context"]["surface"] == "scene"
        entry = next(p for p in status["presets"] if p["name"] == THEME)
        assert set(entry) >= {"name", "state", "active", "reason", "risk"}
        assert (entry["state"], entry["active"], entry["reason"], entry["risk"]) == (
            "on",
            True,
            "override",
            "normal",
        )
        assert all(p["state"] in ("auto", "on", "off") for p in status["presets"])

        notices.expect(CHANGED)
        done = await cli(state, "off", THEME)
        assert done.returncode == 0, done.stderr
        await notices.wait(CHANGED, timeout=60)
        assert THEME_TOOL not in await names(client)
    assert await wait_gone(state / "control.sock"), "the socket outlived its server"
    changes = [e for e in events(state) if e["kind"] == "change"]
    assert [(c["preset"], c["state"], c["previous"], c["by"]) for c in changes] == [
        (THEME, "on", "off", "cli"),
        (THEME, "off", "on", "cli"),
    ]


async def test_with_no_server_the_commands_say_so_and_how_to_start_one(tmp_path: Path) -> None:
    state = tmp_path / "state"
    done = await cli(state, "status")
    assert done.returncode == 0 and "no server runs" in done.stdout
    assert (await cli_json(state, "status"))["server"] is None
    for args in (("on", THEME), ("off", THEME), ("auto", THEME), ("requests",)):
        done = await cli(state, *args)
        assert done.returncode == 1, (args, done.stdout, done.stderr)
        assert "no server runs" in done.stderr
        assert f"presets serve --state-dir {state}" in done.stderr
    assert not state.exists()  # asking changed nothing on disk


async def test_a_risky_preset_needs_yes_off_a_terminal(tmp_path: Path) -> None:
    state = tmp_path / "state"
    notices = Notices()
    async with Client(server(state), mode="legacy", message_handler=notices) as client:
        before = await names(client)
        done = await cli(state, "on", DESTRUCTIVE)
        assert done.returncode == 2, done.stderr
        assert "--yes" in done.stderr and "destructive" in done.stderr
        entry = next(
            p for p in (await cli_json(state, "status"))["presets"] if p["name"] == DESTRUCTIVE
        )
        assert entry["state"] == "auto" and not entry["active"]
        assert await names(client) == before

        notices.expect(CHANGED)
        done = await cli(state, "on", DESTRUCTIVE, "--yes")
        assert done.returncode == 0, done.stderr
        await notices.wait(CHANGED, timeout=60)
        entry = next(
            p for p in (await cli_json(state, "status"))["presets"] if p["name"] == DESTRUCTIVE
        )
        assert (entry["state"], entry["risk"]) == ("on", "destructive")


async def test_the_agent_asks_the_user_approves_or_denies(tmp_path: Path) -> None:
    state = tmp_path / "state"
    notices = Notices()
    async with Client(
        server(state, "--off", THEME), mode="legacy", message_handler=notices
    ) as client:
        before = await names(client)
        answer = await ask(client, THEME, "on")
        assert answer["status"] == "pending"
        request_id = answer["request"]
        assert "waits for the user" in answer["message"]
        assert await names(client) == before  # it never approves itself

        listed = await cli_json(state, "requests")
        assert listed == [
            {
                "id": request_id,
                "kind": "override",
                "principal": "local",
                "preset": THEME,
                "state": "on",
                "reason": SECRET,
                "created": listed[0]["created"],
                "expires": listed[0]["expires"],
            }
        ]
        assert listed[0]["created"].endswith("Z") and listed[0]["expires"] > listed[0]["created"]
        done = await cli(state, "requests")
        assert request_id in done.stdout and THEME in done.stdout

        notices.expect(CHANGED)
        done = await cli(state, "approve", request_id)
        assert done.returncode == 0, done.stderr
        await notices.wait(CHANGED, timeout=60)
        assert THEME_TOOL in await names(client)
        assert await cli_json(state, "requests") == []

        # Denied: nothing changes.
        answer = await ask(client, "graph-node-tools", "on")
        done = await cli(state, "deny", answer["request"])
        assert done.returncode == 0, done.stderr
        assert await cli_json(state, "requests") == []
        status = await cli_json(state, "status")
        entry = next(p for p in status["presets"] if p["name"] == "graph-node-tools")
        assert (entry["state"], entry["active"]) == ("auto", False)
        done = await cli(state, "approve", answer["request"])
        assert done.returncode == 1 and "no pending request" in done.stderr

        # Off applies at once.
        notices.expect(CHANGED)
        answer = await ask(client, THEME, "off")
        assert answer["status"] == "applied"
        await notices.wait(CHANGED, timeout=60)
        assert THEME_TOOL not in await names(client)

        # An unknown preset gets the closest name.
        result = await client.call_tool(
            ASK, {"preset": "general-theme-tool", "state": "on", "reason": "x"}
        )
        assert result.is_error and f"did you mean {THEME!r}" in text(result)

    log = (state / "events.jsonl").read_text()
    assert SECRET not in log
    kinds = [(e["kind"], e.get("outcome"), e.get("by")) for e in events(state)]
    assert ("request", None, None) in kinds
    assert ("decision", "approved", "cli") in kinds
    assert ("decision", "denied", "cli") in kinds
    assert ("change", None, "approval") in kinds
    assert ("change", None, "agent") in kinds


async def test_requests_merge_expire_and_stop_at_twenty(tmp_path: Path) -> None:
    state = tmp_path / "state"
    async with Client(server(state, env={"PRESETS_REQUEST_TTL": "5"}), mode="legacy") as client:
        first = await ask(client, THEME, "on", "one")
        # general-theme-tools is active on the scene: nothing to ask.
        assert first["status"] == "unchanged"
        first = await ask(client, "graph-node-tools", "on", "one")
        again = await ask(client, "graph-node-tools", "on", "two")
        assert again["request"] == first["request"]
        assert "asked before" in again["message"]

        # It expires by itself (the server sweeps; no one has to look).
        deadline = time.monotonic() + 90
        while not any(e.get("outcome") == "expired" for e in events(state)):
            assert time.monotonic() < deadline, "the request never expired"
            await anyio.sleep(0.5)
        assert await cli_json(state, "requests") == []
        decision = next(e for e in events(state) if e["kind"] == "decision")
        assert (decision["id"], decision["by"]) == (first["request"], "timeout")
        later = await ask(client, "graph-node-tools", "on", "three")
        assert later["request"] != first["request"]


async def test_one_principals_sixth_pending_request_is_refused(tmp_path: Path) -> None:
    """At most 5 of one principal's requests wait (of 20 in all: test_core_requests.py)."""
    state = tmp_path / "state"
    async with Client(server(state), mode="legacy") as client:
        status = await cli_json(state, "status")
        inactive = [p["name"] for p in status["presets"] if not p["active"]]
        assert len(inactive) >= 6
        for name in inactive[:5]:
            assert (await ask(client, name, "on", "x"))["status"] == "pending"
        result = await client.call_tool(ASK, {"preset": inactive[5], "state": "on", "reason": "x"})
        assert result.is_error
        assert "5 requests of yours already wait for the user" in text(result)
        # Asking again for one that waits still merges.
        assert (await ask(client, inactive[0], "on", "y"))["status"] == "pending"
        assert len(await cli_json(state, "requests")) == 5


async def test_the_served_tool_list_includes_the_request_tool_with_its_schema(
    stdio_server_params: Callable[..., Any],
) -> None:
    async with Client(stdio_server_params(), mode="legacy") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    tool = tools[ASK]
    assert tool.input_schema["required"] == ["preset", "state", "reason"]
    assert tool.input_schema["properties"]["state"]["enum"] == ["on", "off"]
    assert tool.input_schema["properties"]["reason"]["maxLength"] == 500
    assert tool.output_schema == dict(REQUEST_OUTPUT)


async def test_an_http_server_listens_too_and_removes_its_socket_on_sigterm(
    tmp_path: Path,
) -> None:
    from e2e.conftest import HttpServer

    state = tmp_path / "state"
    http = await anyio.to_thread.run_sync(lambda: HttpServer(state))
    try:
        status = await cli_json(state, "status")
        assert status["server"] == http.process.pid
        done = await cli(state, "on", THEME)
        assert done.returncode == 0, done.stderr
    finally:
        await anyio.to_thread.run_sync(http.stop)
    assert not (state / "control.sock").exists()
    assert (await cli_json(state, "status"))["server"] is None


async def test_a_socket_left_by_a_killed_server_is_replaced(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    import socket

    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(state / "control.sock"))
    dead.close()  # the file stays and nobody listens, as after SIGKILL
    done = await cli(state, "on", THEME)
    assert done.returncode == 1 and "no server runs" in done.stderr
    async with Client(server(state), mode="legacy") as client:
        assert ASK in await names(client)
        assert (await cli_json(state, "status"))["server"] is not None


async def test_the_request_tool_counts_toward_budgets_and_an_allow_list_leaves_it_out(
    tmp_path: Path,
) -> None:
    from agent_presets.server import ServeConfig
    from agent_presets.server.mcp import build_server
    from agent_presets.server.policy import ToolPolicy
    from agent_presets_general import SpaceHost

    host = SpaceHost(tmp_path / "state")
    try:
        presets = host.start()
        server = build_server(presets, ServeConfig(policy=ToolPolicy(max_calls=1)))
        try:
            async with Client(server, mode="legacy") as client:
                await ask(client, "graph-node-tools", "on")
                result = await client.call_tool(
                    ASK, {"preset": "graph-node-tools", "state": "on", "reason": "x"}
                )
                assert result.is_error and "budget" in text(result)
        finally:
            server.close()
        assert ASK not in presets.tool_registry  # the server took its tool with it
        allow = ToolPolicy.allow_list(presets, [THEME])
        server = build_server(presets, ServeConfig(policy=ToolPolicy(allow=allow)))
        try:
            async with Client(server, mode="legacy") as client:
                assert await names(client) == [THEME_TOOL]
        finally:
            server.close()
    finally:
        host.close()


def test_a_stdio_server_stopped_with_sigterm_removes_its_socket(tmp_path: Path) -> None:
    import signal

    state = tmp_path / "state"
    process = subprocess.Popen(
        serve_command("--state-dir", str(state)),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=server_env(),
    )
    try:
        assert process.stderr is not None
        assert "serving MCP on stdio" in process.stderr.readline()
        assert (state / "control.sock").exists()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == -signal.SIGTERM  # it still dies of the signal
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
    assert not (state / "control.sock").exists()
