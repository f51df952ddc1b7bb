"""Fixtures for the end-to-end tests: `presets serve` as a real subprocess.

The server runs the headless host with every installed plugin, in a fresh
state directory per test. HTTP servers bind 127.0.0.1 on a port the OS picks
(``--port 0``); the test reads the URL from the banner line on stderr. Every
server process is stopped by the fixture that started it (SIGTERM, then kill).
"""

from __future__ import annotations

import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e.redisserver import redis_server  # noqa: F401 (a fixture for the store's tests)

BANNER_TIMEOUT = 30.0


@pytest.fixture
def anyio_backend() -> str:
    # The server delivers change notices through asyncio's thread-safe calls.
    return "asyncio"


@pytest.fixture(autouse=True)
def _clean_server_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "PRESETS_LOAD_PLUGINS",
        "PRESETS_PLUGINS_DIR",
        "PRESETS_STRICT",
        "PRESETS_TRACE_PLUGINS",
    ):
        monkeypatch.delenv(name, raising=False)


def serve_command(*args: str) -> list[str]:
    """``presets serve ARGS``: the installed console script, else the CLI module."""
    script = Path(sys.executable).with_name("presets")
    if script.exists():
        return [str(script), "serve", *args]
    found = shutil.which("presets")
    if found:
        return [found, "serve", *args]
    return [sys.executable, "-m", "agent_presets.cli", "serve", *args]


def server_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRESETS_")}
    env["PYTHONUNBUFFERED"] = "1"
    return env


@pytest.fixture
def stdio_server_params(tmp_path: Path) -> Callable[..., Any]:
    """``StdioServerParameters`` for ``presets serve`` (stdio) on a fresh state dir."""
    from mcp.client.stdio import StdioServerParameters

    def make(*extra: str) -> StdioServerParameters:
        command = serve_command("--state-dir", str(tmp_path / "state"), *extra)
        return StdioServerParameters(command=command[0], args=command[1:], env=server_env())

    return make


class HttpServer:
    """A ``presets serve --transport http`` subprocess and its URL."""

    def __init__(self, state_dir: Path, *extra: str) -> None:
        command = serve_command(
            "--transport", "http", "--host", "127.0.0.1", "--port", "0",
            "--state-dir", str(state_dir), *extra,
        )  # fmt: skip
        self.process, self.url, self.stderr = spawn_http(command, BANNER_TIMEOUT)
        self.port = port_of(self.url)

    def stop(self) -> None:
        terminate(self.process)


def spawn_http(command: list[str], timeout: float) -> tuple[subprocess.Popen[str], str, list[str]]:
    """Start an HTTP server and wait for the MCP URL it prints on stderr.

    Returns the process, the URL and its stderr lines (the list keeps growing).
    A server that exits or stays silent past ``timeout`` is stopped, and the
    error quotes what it printed.
    """
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=server_env(),
    )
    stderr: list[str] = []
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            stderr.append(line)
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    deadline = time.monotonic() + timeout
    while True:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            line = None
        if line is None:
            terminate(process)
            raise RuntimeError(f"{command[0]} did not start:\n" + "".join(stderr))
        match = re.search(r"http://127\.0\.0\.1:\d+/mcp", line)
        if match:
            return process, match.group(0), stderr


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/", 1)[0])


def terminate(process: subprocess.Popen[Any]) -> None:
    """Stop a server we started: SIGTERM, then SIGKILL if it has not gone in 10 s."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[HttpServer]:
    server = HttpServer(tmp_path / "state")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def expected_tool_names(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """The tool names a server serves on the scene and in canvas drawing, computed in process."""
    from agent_presets.server.control import REQUEST_TOOL
    from agent_presets_general import SpaceHost

    host = SpaceHost(tmp_path_factory.mktemp("expected") / "state")
    presets = host.start()
    # A served list also has the server's own tool: the agent's presets_request.
    ask = [presets.tool_registry.namespace_prefix + REQUEST_TOOL]
    scene = sorted(presets.tool_registry.names() + ask)
    host.shell.set_surface("canvas")
    host.shell.set_activity("drawing")
    drawing = sorted(presets.tool_registry.names() + ask)
    presets.sync.stop()
    return {"scene": scene, "drawing": drawing}
