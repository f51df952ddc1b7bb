"""SIGINT stops a stdio server whose client keeps stdin open, ending its listen streams cleanly.

Claude Code 2.1.332 stops its MCP server with SIGINT (SIGTERM 100 ms later)
while stdin is open and its `subscriptions/listen` request is pending. The
server did not stop on SIGINT (its stdin read could not be interrupted), and
the SIGTERM that killed it left the listen request answered `-32000
Connection closed`: the last MCP error of that client's drive (issue 17).
Ctrl-C on `presets serve` in a terminal did nothing either.
"""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

from .conftest import serve_command, server_env, terminate

LISTEN = {
    "jsonrpc": "2.0",
    "id": "listen:0",
    "method": "subscriptions/listen",
    "params": {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "claude-code", "version": "2.1.332"},
            "io.modelcontextprotocol/clientCapabilities": {},
        },
        "notifications": {"toolsListChanged": True},
    },
}


def test_sigint_ends_an_open_listen_stream_with_its_result_and_the_server_exits(
    tmp_path: Path,
) -> None:
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
        process.stdin.write(json.dumps(LISTEN) + "\n")
        process.stdin.flush()
        first = json.loads(process.stdout.readline())
        assert first["method"] == "notifications/subscriptions/acknowledged", first
        process.send_signal(signal.SIGINT)  # stdin stays open, as Claude Code's does
        code = process.wait(timeout=20)
        rest = [json.loads(line) for line in process.stdout.read().splitlines() if line.strip()]
    finally:
        terminate(process)
    answers = [m for m in rest if m.get("id") == "listen:0"]
    assert len(answers) == 1 and "result" in answers[0], rest
    assert code == 0
