"""Dump `presets serve`'s tools/list with every preset on, to compare two versions byte for byte.

Run in each checkout, then compare:
    uv run python bench/tools_list_dump.py > /tmp/new.json   (and the same in the other checkout)
    cmp /tmp/old.json /tmp/new.json

It starts `presets serve` over stdio (the 2025-11-25 era, as opencode speaks it)
with --unsafe-shell and --on for every preset, sends initialize and one
tools/list, and prints the raw answer line.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile


def main() -> int:
    state = tempfile.mkdtemp(prefix="presets-tools-dump-")
    listed = subprocess.run(
        [sys.executable, "-m", "agent_presets", "list", "--json"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    args = [sys.executable, "-m", "agent_presets", "serve", "--state-dir", state, "--unsafe-shell"]
    for preset in json.loads(listed):
        args += ["--on", preset["name"]]
    proc = subprocess.Popen(
        args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    assert proc.stdin is not None and proc.stdout is not None

    def send(message: dict[str, object]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()

    send(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "tools-list-dump", "version": "0"},
            },
        }
    )
    proc.stdout.readline()
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    send({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
    sys.stdout.write(proc.stdout.readline())
    proc.stdin.close()
    proc.wait(10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
