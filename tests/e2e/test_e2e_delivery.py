"""Stable delivery on the wire: a caller's own calls never change its tool list.

The 2026-07-28 Tools page: the list "MUST NOT vary per-connection or as a side
effect of other requests on the connection". And every change to a tools
array makes a model provider process the whole conversation again. So a
stable caller (every 2026-07-28 client, and opencode, Codex and Claude Code
by name) keeps its list when its own call switches the context; the call's
result tells it what became active, and ``space_presets_call`` runs those
tools through the one call pipeline. Spoken in raw lines and raw HTTP, so the
bytes are what is compared.
"""

from __future__ import annotations

import http.client
import json
import os
import select
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import HttpServer, serve_command, server_env

MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "some-agent", "version": "1.0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
SHAPE = {"shape": "rect", "x": 10, "y": 20, "width": 30, "height": 40}
WITHIN = 60.0


class Lines:
    """A stdio server spoken to in raw JSON lines; answers are kept as the bytes sent."""

    def __init__(self, command: list[str]) -> None:
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=server_env(),
        )
        self._buffer = b""
        self.heard: list[bytes] = []

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def answer(self, id_: Any) -> bytes:
        """The raw line answering ``id_``; every line before it is kept in ``heard``."""
        assert self.process.stdout is not None
        deadline = time.monotonic() + WITHIN
        while True:
            while b"\n" in self._buffer:
                line, self._buffer = self._buffer.split(b"\n", 1)
                if json.loads(line).get("id") == id_:
                    return line
                self.heard.append(line)
            left = deadline - time.monotonic()
            assert left > 0, f"no answer to {id_!r}; heard {self.heard}"
            ready, _, _ = select.select([self.process.stdout], [], [], left)
            chunk = os.read(self.process.stdout.fileno(), 1 << 16) if ready else b""
            assert chunk, f"the server closed or went silent before answering {id_!r}"
            self._buffer += chunk

    def request(self, id_: Any, method: str, params: dict[str, Any]) -> bytes:
        self.send({"jsonrpc": "2.0", "id": id_, "method": method, "params": params})
        return self.answer(id_)

    def stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state"


@pytest.fixture
def lines(state: Path) -> Iterator[Lines]:
    server = Lines(serve_command("--state-dir", str(state)))
    try:
        yield server
    finally:
        server.stop()


def modern(params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {**(params or {}), "_meta": MODERN_META}


def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def texts(answer: bytes) -> list[str]:
    result = json.loads(answer)["result"]
    return [c["text"] for c in result["content"] if c.get("type") == "text"]


def names(answer: bytes) -> list[str]:
    return [t["name"] for t in json.loads(answer)["result"]["tools"]]


def events(state: Path) -> list[dict[str, Any]]:
    log = state / "events.jsonl"
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def calls_of(state: Path, tool: str) -> list[dict[str, Any]]:
    """The outcome lines of calls of ``tool`` (not the requests and decisions around them)."""
    return [
        e for e in events(state) if e.get("tool") == tool and e.get("kind") in ("call", "refusal")
    ]


def test_a_2026_client_switching_context_itself_gets_the_same_bytes_from_tools_list(
    lines: Lines, state: Path
) -> None:
    before = lines.request(2, "tools/list", modern())
    assert "space_drawing_insert_shape" not in names(before)
    assert {"space_presets_call", "space_presets_call_risky"} <= set(names(before))
    switched = lines.request(
        3, "tools/call", modern(call("space_app_switch_surface", {"surface": "canvas"}))
    )
    assert json.loads(switched)["result"]["isError"] is False
    drawing = lines.request(
        4, "tools/call", modern(call("space_app_set_activity", {"activity": "drawing"}))
    )
    notice = texts(drawing)[-1]
    # The same turn: the result names the tool the new context activates, and how to run it.
    assert "space_drawing_insert_shape(" in notice and "space_presets_call" in notice
    # Also in the structured content, which Claude Code and Codex show their model instead.
    assert json.loads(drawing)["result"]["structuredContent"]["presets_notice"] == notice
    after = lines.request(2, "tools/list", modern())
    assert after == before
    assert not any(b"list_changed" in line for line in lines.heard)
    ran = lines.request(
        5,
        "tools/call",
        modern(
            call("space_presets_call", {"name": "space_drawing_insert_shape", "arguments": SHAPE})
        ),
    )
    assert json.loads(ran)["result"]["isError"] is False, ran
    # One call pipeline: one event-log line, under the tool's own name.
    [line] = calls_of(state, "space_drawing_insert_shape")
    assert line["outcome"] == "ok"
    assert calls_of(state, "space_presets_call") == []


def handshake(lines: Lines, client: str, version: str) -> None:
    """A 2025-11-25 handshake, as the client ``client`` makes it."""
    lines.request(
        1,
        "initialize",
        {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": client, "version": version},
        },
    )
    lines.send({"jsonrpc": "2.0", "method": "notifications/initialized"})


def test_a_legacy_client_named_opencode_is_served_stable_and_hears_no_list_change(
    lines: Lines,
) -> None:
    handshake(lines, "opencode", "1.18.33")
    before = lines.request(2, "tools/list", {})
    lines.request(3, "tools/call", call("space_app_switch_surface", {"surface": "canvas"}))
    drawing = lines.request(
        4, "tools/call", call("space_app_set_activity", {"activity": "drawing"})
    )
    assert "space_drawing_insert_shape(" in texts(drawing)[-1]
    assert lines.request(2, "tools/list", {}) == before
    assert not any(b"notifications/tools/list_changed" in line for line in lines.heard)


def test_a_legacy_client_of_unknown_name_keeps_the_live_list(lines: Lines) -> None:
    handshake(lines, "some-ide", "0.1")
    before = lines.request(2, "tools/list", {})
    lines.request(3, "tools/call", call("space_app_switch_surface", {"surface": "canvas"}))
    drawing = lines.request(
        4, "tools/call", call("space_app_set_activity", {"activity": "drawing"})
    )
    assert len(texts(drawing)) == 1  # no notice: the list itself says it
    after = lines.request(5, "tools/list", {})
    assert "space_drawing_insert_shape" in names(after) and after != before
    assert any(b"notifications/tools/list_changed" in line for line in lines.heard)


def test_delivery_live_serves_a_2026_client_as_before(state: Path) -> None:
    server = Lines(serve_command("--state-dir", str(state), "--delivery", "live"))
    try:
        before = server.request(2, "tools/list", modern())
        server.request(
            3, "tools/call", modern(call("space_app_switch_surface", {"surface": "canvas"}))
        )
        server.request(
            4, "tools/call", modern(call("space_app_set_activity", {"activity": "drawing"}))
        )
        after = server.request(5, "tools/list", modern())
        assert "space_drawing_insert_shape" in names(after)
        assert "space_presets_call" not in names(before)
    finally:
        server.stop()


def test_a_change_from_outside_moves_a_stable_list(lines: Lines, state: Path) -> None:
    before = lines.request(2, "tools/list", modern())
    done = subprocess.run(
        [
            *serve_command()[:-1],
            "context",
            "set",
            "surface=canvas",
            "activity=drawing",
            "--state-dir",
            str(state),
        ],
        capture_output=True,
        text=True,
        env=server_env(),
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    after = lines.request(3, "tools/list", modern())
    assert "space_drawing_insert_shape" in names(after)
    assert "space_drawing_insert_shape" not in names(before)


def test_a_risky_tool_reached_indirectly_is_asked_for_by_its_own_call_tool(state: Path) -> None:
    server = Lines(
        serve_command(
            "--state-dir", str(state), "--on", "general-file-write-tools",
            "--confirm", "risky", "--confirm-timeout", "2",
        )
    )  # fmt: skip
    try:
        args = {"path": "a.txt", "content": "hello"}
        plain = server.request(
            2,
            "tools/call",
            modern(call("space_presets_call", {"name": "space_app_write_file", "arguments": args})),
        )
        assert json.loads(plain)["result"]["isError"] is True
        assert "space_presets_call_risky" in texts(plain)[0]
        risky = server.request(
            3,
            "tools/call",
            modern(
                call(
                    "space_presets_call_risky", {"name": "space_app_write_file", "arguments": args}
                )
            ),
        )
        # --confirm risky: the server asked a person (as for a listed risky tool); none
        # answered within the timeout, so nothing was written.
        assert json.loads(risky)["result"]["isError"] is True, risky
        [line] = calls_of(state, "space_app_write_file")
        assert line["kind"] == "refusal" and line["gate"] == "confirm", line
        assert not (state.parent / "root" / "a.txt").exists()
    finally:
        server.stop()


def post_modern(server: HttpServer, id_: int, method: str, params: dict[str, Any]) -> bytes:
    body = {"jsonrpc": "2.0", "id": id_, "method": method, "params": modern(params)}
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": method,
    }
    if method == "tools/call":
        headers["Mcp-Name"] = params["name"]
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    try:
        conn.request("POST", "/mcp", json.dumps(body), headers)
        response = conn.getresponse()
        raw = response.read()
        assert response.status == 200, raw
        return raw
    finally:
        conn.close()


def test_over_http_a_2026_switch_leaves_tools_list_byte_identical(http_server: HttpServer) -> None:
    before = post_modern(http_server, 2, "tools/list", {})
    post_modern(
        http_server, 3, "tools/call", call("space_app_switch_surface", {"surface": "canvas"})
    )
    post_modern(
        http_server, 4, "tools/call", call("space_app_set_activity", {"activity": "drawing"})
    )
    assert post_modern(http_server, 2, "tools/list", {}) == before
