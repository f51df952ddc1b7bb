"""A client whose `server/discover` probe timed out falls back to `initialize`, and gets it.

Claude Code 2.1.332 (and the SDK's `Client` in `auto` mode) probe a stdio
server with `server/discover` and, when no answer comes within their wait
(about 2.9 s for Claude Code), send `initialize`. A server still starting on
a busy machine finds both on its stdin; it used to answer the probe, which
settled the connection on 2026-07-28, and then refuse the `initialize` the
client was waiting on with `-32022` (issue 17's remaining Claude Code error).
Spoken in raw lines, in the order Claude Code sent them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import serve_command
from .test_e2e_envelopes import START_WITHIN, RawStdio

MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "claude-code", "version": "2.1.332"},
    "io.modelcontextprotocol/clientCapabilities": {"roots": {"listChanged": True}},
}
PROBE = {
    "jsonrpc": "2.0",
    "id": "server-discover-probe-1",
    "method": "server/discover",
    "params": {"_meta": MODERN_META},
}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"roots": {"listChanged": True}},
        "clientInfo": {"name": "claude-code", "version": "2.1.332"},
    },
}
SWITCH = {
    "jsonrpc": "2.0",
    "id": "switch",
    "method": "tools/call",
    "params": {"name": "space_app_switch_surface", "arguments": {"surface": "canvas"}},
}


@pytest.fixture
def raw(tmp_path: Path) -> Iterator[RawStdio]:
    server = RawStdio(serve_command("--state-dir", str(tmp_path / "state")), handshake=False)
    try:
        yield server
    finally:
        server.stop()


def by_id(messages: list[Any]) -> dict[Any, Any]:
    return {m["id"]: m for m in messages if "id" in m}


def errors(messages: list[Any]) -> list[Any]:
    return [m for m in messages if "error" in m]


def until_answer(raw: RawStdio, id_: Any, within: float = 10) -> list[Any]:
    """Every message up to and including the answer to ``id_``."""
    heard: list[Any] = []
    while id_ not in by_id(heard):
        more = raw.answers(within, count=1)
        assert more, f"no answer to {id_!r} within {within}s; heard {heard}"
        heard += more
    return heard


def assert_served_legacy(raw: RawStdio) -> None:
    """The handshake era from here on: plain requests, answered as a stable client is."""
    raw.send('{"jsonrpc":"2.0","method":"notifications/initialized"}')
    # The handshake may come from the start front, before the SDK has loaded (issue 28):
    # the first request it leaves to the full server waits for the SDK.
    listed = raw.request('{"jsonrpc":"2.0","id":"list","method":"tools/list"}', within=START_WITHIN)
    assert "error" not in listed, listed
    assert "space_app_switch_surface" in [t["name"] for t in listed["result"]["tools"]]
    raw.send(json.dumps(SWITCH))
    heard = until_answer(raw, "switch")
    assert not errors(heard), heard
    result = by_id(heard)["switch"]["result"]
    assert result["isError"] is False
    # Claude Code is served stable (docs/clients.md): its own switch changes no list and
    # sends no list_changed; the result says what changed.
    assert "notifications/tools/list_changed" not in [m.get("method") for m in heard]
    assert result["content"][-1]["text"].startswith("[presets] Context now:")


def test_initialize_queued_behind_a_probe_on_a_starting_server_gets_the_handshake(
    raw: RawStdio,
) -> None:
    # Both written before the server has read anything: it is still importing.
    raw.send(json.dumps(PROBE))
    raw.send(json.dumps(INITIALIZE))
    answers = raw.answers(START_WITHIN, count=2)

    assert not errors(answers), answers
    assert set(by_id(answers)) == {"server-discover-probe-1", 0}
    assert by_id(answers)[0]["result"]["protocolVersion"] == "2025-11-25"
    assert_served_legacy(raw)


def test_initialize_after_a_late_probe_answer_gets_the_handshake(raw: RawStdio) -> None:
    # The probe is answered, but after the client stopped waiting for it.
    raw.send(json.dumps(PROBE))
    assert raw.answers(START_WITHIN, count=1)[0]["id"] == "server-discover-probe-1"
    answer = raw.request(json.dumps(INITIALIZE), within=10)

    assert "error" not in answer, answer
    assert answer["result"]["protocolVersion"] == "2025-11-25"
    assert_served_legacy(raw)


def test_a_modern_request_after_the_probe_settles_the_connection_on_2026(raw: RawStdio) -> None:
    raw.send(json.dumps(PROBE))
    assert raw.answers(START_WITHIN, count=1)[0]["id"] == "server-discover-probe-1"
    modern = {**SWITCH, "id": "modern", "params": {**SWITCH["params"], "_meta": MODERN_META}}
    # Answered by the full server, which may still be loading: the probe came from the front.
    assert raw.request(json.dumps(modern), within=START_WITHIN)["result"]["isError"] is False

    late = raw.request(json.dumps(INITIALIZE), within=10)
    assert late["error"]["code"] == -32022
    assert late["error"]["data"]["supported"] == ["2026-07-28"]
