"""Calls from several sessions of one server: no call holds up another it need not wait for.

Each test talks to a real server in memory over several ``mcp.Client``
sessions. The checks compare the order in which handlers entered and left,
or whether a call finished while another was still running; the only clock
is a generous bound that a failing test hits instead of hanging.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from agent_presets import ToolAdapter, bootstrap, hookimpl
from agent_presets.server.mcp import PresetServer, build_server
from agent_presets_general import SpaceHost

pytestmark = pytest.mark.anyio

WAIT = 15.0  # seconds; only a failing test waits this long

PRESETS_YAML = """
presets:
  - name: ledger-tools
    default_state: auto
    risk: filesystem-read
    contexts: [{surface: any}]
    tool_ids: [ledger.write, ledger.read, other.write, other.read]
"""

LABELLED = {
    "type": "object",
    "properties": {"label": {"type": "string"}, "hold": {"type": "boolean"}},
    "required": ["label"],
    "additionalProperties": False,
}


class Journal:
    """Every runtime's enter/exit events, in the order they happened on any thread."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.entered: dict[str, threading.Event] = {}
        self.released: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    def expect(self, *labels: str) -> None:
        for label in labels:
            self.entered[label] = threading.Event()
            self.released[label] = threading.Event()

    def call(self, arguments: dict[str, Any]) -> str:
        """Log ``label+``, wait for ``release(label)`` when ``hold``, log ``label-``."""
        label = arguments["label"]
        with self._lock:
            self.events.append(f"{label}+")
        self.entered[label].set()
        if arguments.get("hold"):
            assert self.released[label].wait(WAIT), f"{label} was never released"
        with self._lock:
            self.events.append(f"{label}-")
        return str(label)

    def release(self, label: str) -> None:
        self.released[label].set()


class Runtime:
    """An app runtime whose every call goes to the shared journal."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal


class LedgerApp:
    def __init__(self) -> None:
        self.journal = Journal()
        self.ledger = Runtime(self.journal)
        self.other = Runtime(self.journal)

    def context(self) -> dict[str, Any]:
        return {"surface": "scene", "activity": None, "canvas_visible": False}


class LedgerPlugin:
    """Two runtimes, each with a write and a read-only tool that log to the journal."""

    def __init__(self, folder: Path) -> None:
        self.file = folder / "presets.yaml"
        self.file.write_text(PRESETS_YAML)

    @hookimpl
    def presets_preset_files(self) -> list[Path]:
        return [self.file]

    @hookimpl
    def presets_tool_adapters(self) -> list[ToolAdapter]:
        return [
            ToolAdapter.for_runtime(
                f"{runtime}.{kind}",
                runtime,
                lambda r, a: r.journal.call(a),
                mcp_name=f"space_{runtime}_{kind}",
                description=f"{kind.title()} the {runtime}.",
                input_schema=LABELLED,
                annotations={"readOnlyHint": True} if kind == "read" else None,
            )
            for runtime in ("ledger", "other")
            for kind in ("write", "read")
        ]


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[tuple[LedgerApp, PresetServer]]:
    app = LedgerApp()
    presets = bootstrap(app, plugins=[LedgerPlugin(tmp_path)])
    assert not presets.problems
    server = build_server(presets)
    try:
        yield app, server
    finally:
        server.close()


def text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def until(condition: Callable[[], bool]) -> None:
    with anyio.fail_after(WAIT):
        while not condition():
            await anyio.sleep(0.02)


async def call(client: Client, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, text(result)
    return text(result)


# ------------------------------------------------------------------ one runtime


async def test_writes_to_one_runtime_never_overlap_and_keep_their_order_across_sessions(
    ledger: tuple[LedgerApp, PresetServer],
) -> None:
    app, server = ledger
    journal = app.journal
    journal.expect("w1", "w2", "w3", "o")
    async with (
        Client(server, mode="legacy") as one,
        Client(server, mode="legacy") as two,
        Client(server, mode="legacy") as three,
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(lambda: call(one, "space_ledger_write", label="w1", hold=True))
        await until(journal.entered["w1"].is_set)
        tg.start_soon(lambda: call(two, "space_ledger_write", label="w2"))
        await until(lambda: server.calls.waiting == 1)
        tg.start_soon(lambda: call(one, "space_ledger_write", label="w3"))
        await until(lambda: server.calls.waiting == 2)
        # Another runtime's write is not held up by the queue on this one.
        with anyio.fail_after(WAIT):
            await call(three, "space_other_write", label="o")
        assert not journal.entered["w2"].is_set()
        journal.release("w1")
    assert journal.events == ["w1+", "o+", "o-", "w1-", "w2+", "w2-", "w3+", "w3-"]


async def test_a_read_waits_for_a_write_in_progress_on_its_runtime_but_not_on_another(
    ledger: tuple[LedgerApp, PresetServer],
) -> None:
    app, server = ledger
    journal = app.journal
    journal.expect("w", "r", "o")
    async with (
        Client(server, mode="legacy") as one,
        Client(server, mode="legacy") as two,
        Client(server, mode="legacy") as three,
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(lambda: call(one, "space_ledger_write", label="w", hold=True))
        await until(journal.entered["w"].is_set)
        tg.start_soon(lambda: call(two, "space_ledger_read", label="r"))
        await until(lambda: server.calls.waiting == 1)
        with anyio.fail_after(WAIT):
            await call(three, "space_other_read", label="o")
        assert not journal.entered["r"].is_set()  # it would see half of the write
        journal.release("w")
    assert journal.events == ["w+", "o+", "o-", "w-", "r+", "r-"]


# ------------------------------------------------------------------ the real host


@pytest.fixture
def host_server(tmp_path: Path) -> Iterator[tuple[Path, PresetServer]]:
    from agent_presets_general import sandbox_status

    works, why = sandbox_status()
    if not works:
        pytest.skip(f"the bash sandbox does not work here: {why}")
    root = tmp_path / "root"
    host = SpaceHost(tmp_path / "state", root=root)
    presets = host.start(overrides={"general-shell-tools": "on"})
    host.shell.set_surface("canvas")
    host.shell.set_activity("drawing")
    server = build_server(presets)
    try:
        yield root, server
    finally:
        server.close()


async def test_a_slow_bash_call_in_one_session_does_not_delay_a_drawing_read_in_another(
    host_server: tuple[Path, PresetServer],
) -> None:
    root, server = host_server
    bash_done = anyio.Event()
    outcome: dict[str, Any] = {}

    async def slow_bash(client: Client) -> None:
        outcome["bash"] = json.loads(
            await call(client, "space_app_run_bash", command="touch started && sleep 3")
        )
        bash_done.set()

    async with (
        Client(server, mode="legacy") as one,
        Client(server, mode="legacy") as two,
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(slow_bash, one)
        await until((root / "started").exists)
        with anyio.fail_after(WAIT):
            drawing = json.loads(await call(two, "space_drawing_inspect"))
        # The read is back while the command still sleeps.
        assert not bash_done.is_set()
        assert "layers" in drawing
    assert outcome["bash"]["exit_code"] == 0 and not outcome["bash"]["timed_out"]


def test_a_nan_timeout_sent_as_raw_json_is_refused_and_the_command_never_runs(
    tmp_path: Path,
) -> None:
    # An SDK client turns NaN into null before sending; a hostile one writes the bare token.
    from .conftest import serve_command, server_env

    root = tmp_path / "root"
    root.mkdir()
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    call = (
        '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": '
        '"space_app_run_bash", "arguments": {"command": "touch ran", "timeout_seconds": NaN}}}'
    )
    command = serve_command(
        "--state-dir", str(tmp_path / "state"), "--root", str(root), "--on", "general-shell-tools"
    )
    server = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=server_env(),
    )
    answers: queue.Queue[dict[str, Any]] = queue.Queue()

    def read_answers() -> None:
        assert server.stdout is not None
        for line in server.stdout:
            message = json.loads(line)
            if "id" in message:
                answers.put(message)

    threading.Thread(target=read_answers, daemon=True).start()
    try:
        assert server.stdin is not None
        server.stdin.write("".join(json.dumps(line) + "\n" for line in lines) + call + "\n")
        server.stdin.flush()
        # Read until the call's answer: closing stdin first would end the server before it.
        # NaN is not JSON: the envelope check may answer it as a parse error (id null).
        answer = answers.get(timeout=60)
        while answer["id"] not in (2, None):
            answer = answers.get(timeout=60)
    finally:
        server.kill()
        server.wait()
    if "error" in answer:  # a transport that refuses the bare token outright is fine too
        assert answer["error"]["code"] in (-32700, -32600, -32602), answer
    else:
        result = answer["result"]
        assert result["isError"] is True
        message = "".join(c.get("text", "") for c in result["content"])
        assert "'timeout_seconds': NaN is not a number" in message
    assert not (root / "ran").exists()


def test_every_built_in_tool_carries_the_runtime_it_acts_on(tmp_path: Path) -> None:
    host = SpaceHost(tmp_path / "state")
    presets = host.start(overrides={"general-world-tools": "on", "general-shell-tools": "on"})
    host.shell.set_surface("canvas")
    host.shell.set_activity("drawing")
    tools = {tool.name: tool for tool in presets.tool_registry.list()}
    assert tools["space_app_switch_world"].runtime == "shell"
    assert tools["space_app_run_bash"].runtime == "bash"
    assert tools["space_drawing_inspect"].runtime == "drawing"
    assert tools["space_drawing_inspect"].risk is None  # a read
    assert all(tool.runtime is not None for tool in tools.values()), sorted(
        name for name, tool in tools.items() if tool.runtime is None
    )
