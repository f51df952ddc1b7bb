"""Availability and memory bounds: what one hostile client can make the server hold.

Each test is an attack from the second trust review ("Availability and
memory"), scaled down to test size: an over-long stdio line, a huge unknown
tool name echoed back, a flood of ``initialize``s, half-sent HTTP requests.
Memory is read from ``/proc/PID/status`` (``VmHWM``, the peak resident set).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from agent_presets.server.httptimeout import HEADER_TIMEOUT
from agent_presets.server.mcp.envelope import INVALID_REQUEST
from agent_presets.server.mcp.stdio import MAX_LINE

from .conftest import HttpServer, serve_command, server_env
from .rawhttp import RawSession
from .test_e2e_envelopes import RawStdio

MIB = 1024 * 1024

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads /proc/PID/status"
)


def memory_kib(pid: int, field: str) -> int:
    """``VmHWM`` (peak) or ``VmRSS`` (now) of process ``pid``, in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def call_line(id_: str, name: str, filler: int = 0) -> bytes:
    """A ``tools/call`` line whose argument carries ``filler`` bytes."""
    params = {"name": name, "arguments": {"text": "x" * filler}}
    return json.dumps({"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": params})


def assert_serves(stdio: RawStdio) -> None:
    answer = stdio.request('{"jsonrpc":"2.0","id":"after","method":"tools/list"}', within=10)
    assert answer["id"] == "after" and answer["result"]["tools"]


# ------------------------------------------------------------------- stdio


@pytest.fixture
def stdio(tmp_path: Path) -> Iterator[RawStdio]:
    server = RawStdio(serve_command("--state-dir", str(tmp_path / "state")))
    try:
        yield server
    finally:
        server.stop()


def test_stdio_line_over_the_limit_gets_an_error_naming_it_and_the_server_keeps_serving(
    stdio: RawStdio,
) -> None:
    answer = stdio.request(call_line("big", "space_app_switch_surface", MAX_LINE), within=30)
    assert answer["id"] == "big"
    assert answer["error"]["code"] == INVALID_REQUEST
    assert f"{MAX_LINE:,}" in answer["error"]["message"]
    assert_serves(stdio)
    # A line just within the limit is read whole, as before.
    answer = stdio.request(call_line("fits", "space_app_switch_surface", MAX_LINE - 200), within=30)
    assert answer["id"] == "fits" and "result" in answer


def test_stdio_a_96_mib_line_costs_the_server_a_few_mib_not_its_size(stdio: RawStdio) -> None:
    assert_serves(stdio)
    pid = stdio.process.pid
    before = memory_kib(pid, "VmHWM")
    answer = stdio.request(call_line("huge", "space_app_switch_surface", 96 * MIB), within=60)
    assert answer["error"]["code"] == INVALID_REQUEST
    assert_serves(stdio)
    grown = (memory_kib(pid, "VmHWM") - before) // 1024
    # The line is read a bounded piece at a time: about MAX_LINE (4 MiB) held, never 96.
    assert grown < 32, f"the server's peak grew by {grown} MiB reading one 96 MiB line"


# ------------------------------------------------------------------- echoes


def result_text(answer: dict[str, Any]) -> str:
    return "".join(c.get("text", "") for c in answer["result"]["content"])


def test_a_3_mib_unknown_tool_name_gets_a_short_error_and_the_store_does_not_keep_it(
    http_server: HttpServer,
) -> None:
    session = RawSession(http_server.url)
    session.initialize()
    name = "space_" + "x" * (3 * MIB)
    answer = session.answer("tools/call", {"name": name, "arguments": {}})
    text = result_text(answer)
    assert answer["result"]["isError"] and "Unknown tool" in text
    assert len(text) < 1000 and f"{len(name):,} characters" in text
    pid = http_server.process.pid
    before = memory_kib(pid, "VmRSS")
    for _ in range(40):
        assert result_text(session.answer("tools/call", {"name": name, "arguments": {}})) == text
    grown = (memory_kib(pid, "VmRSS") - before) // 1024
    # 40 answers echoing 3 MiB each, kept for resumption, would be 120 MiB and more.
    assert grown < 40, f"the server grew by {grown} MiB over 40 calls of a 3 MiB name"


def test_a_3_mib_argument_and_method_name_come_back_short(http_server: HttpServer) -> None:
    session = RawSession(http_server.url)
    session.initialize()
    value = "y" * (3 * MIB)
    answer = session.answer(
        "tools/call", {"name": "space_app_switch_surface", "arguments": {"surface": value}}
    )
    text = result_text(answer)
    assert answer["result"]["isError"] and "surface" in text and "is not one of" in text
    assert len(text) < 1000 and f"{len(value):,} characters" in text
    answer = session.answer("z" * (3 * MIB))
    assert answer["error"]["code"] == -32601
    assert len(json.dumps(answer)) < 1000


# ------------------------------------------------------------------- slowloris


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def closed_by_peer(sock: socket.socket) -> bool:
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_half_sent_requests_are_closed_after_the_header_timeout(http_server: HttpServer) -> None:
    pid = http_server.process.pid
    before = open_fds(pid)
    sockets = []
    try:
        for n in range(100):
            sock = socket.create_connection(("127.0.0.1", http_server.port), timeout=5)
            sockets.append(sock)
            # Half a head (no blank line ends it), or nothing at all.
            if n % 2:
                sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: 1\r\n")
        deadline = time.monotonic() + 5
        while open_fds(pid) < before + 100 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert open_fds(pid) >= before + 100, "the server did not accept the connections"
        time.sleep(HEADER_TIMEOUT / 2)
        for sock in sockets[1::2]:
            sock.sendall(b"X-Still-Coming: 1\r\n")  # a trickle does not move the deadline
        time.sleep(HEADER_TIMEOUT / 2 + 3)
        for sock in sockets:
            sock.settimeout(0.5)
        still_open = sum(not closed_by_peer(sock) for sock in sockets)
        assert still_open == 0, f"{still_open} of 100 half-sent connections are still open"
        assert open_fds(pid) <= before + 2
    finally:
        for sock in sockets:
            sock.close()
    # A client that sends its head in time is served as before.
    session = RawSession(http_server.url)
    session.initialize()
    assert session.answer("tools/list")["result"]["tools"]


# ------------------------------------------------------------------- sessions


def initialize_only(url: str) -> int:
    """One ``initialize`` and nothing after it, as a flood sends; the HTTP status."""
    session = RawSession(url)
    status, _, _ = session.post(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "flood", "version": "1"},
            },
        },
        until=0,
    )
    return status


def test_a_flood_of_initializes_does_not_lock_new_clients_out(tmp_path: Path) -> None:
    server = HttpServer(tmp_path / "state", "--max-sessions", "20")
    try:
        # A client that listens (its GET stream open) and one that is idle between calls.
        listening = RawSession(server.url)
        listening.initialize()
        stream = listening.open_get_stream()
        idle = RawSession(server.url)
        idle.initialize()
        assert idle.answer("tools/list")["result"]["tools"]
        with ThreadPoolExecutor(4) as pool:
            statuses = list(pool.map(initialize_only, [server.url] * 100))
        # Every initialize got in: idle flood sessions made way, oldest first.
        assert statuses == [200] * 100
        newcomer = RawSession(server.url)
        newcomer.initialize()
        assert newcomer.answer("tools/list")["result"]["tools"]
        # The clients that were using their sessions still have them.
        assert listening.answer("tools/list")["result"]["tools"]
        assert idle.answer("tools/list")["result"]["tools"]
        stream.close()
    finally:
        server.stop()


class TokenSession(RawSession):
    def __init__(self, url: str, token: str) -> None:
        super().__init__(url)
        self.token = token

    def headers(self, **extra: str) -> dict[str, str]:
        return super().headers(Authorization=f"Bearer {self.token}", **extra)


def test_a_flood_ends_the_flooding_tokens_sessions_not_another_tokens(tmp_path: Path) -> None:
    state = tmp_path / "state"
    tokens = {}
    for name in ("flood", "user"):
        done = subprocess.run(
            [*serve_command()[:-1], "tokens", "create", name, "--state-dir", str(state)],
            capture_output=True, text=True, env=server_env(), timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        tokens[name] = done.stdout.strip()
    server = HttpServer(state, "--auth", "tokens", "--max-sessions", "10")
    try:
        # The oldest session, and one that has not sent anything since its initialize.
        user = TokenSession(server.url, tokens["user"])
        user.initialize(initialized=False)
        for _ in range(30):
            flood = TokenSession(server.url, tokens["flood"])
            flood.initialize(initialized=False)
        user.initialized()
        assert user.answer("tools/list")["result"]["tools"]
    finally:
        server.stop()
