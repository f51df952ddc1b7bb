"""One ``tools/call`` as the server pays for it: raw JSON-RPC on the wire, no SDK client.

Run: uv run python bench/wire.py [--rounds N] [--calls N] [--cases stdio,http,http-2026]

``bench/eras.py`` drives both servers with the SDK's ``mcp.Client``, which
spends about a millisecond of its own on every request: a server-side cost
shows there diluted by that much. This script sends the same
``tools/call`` of ``space_unit_list`` as bare bytes (a JSON line on stdio;
``http.client`` on one kept-alive connection over HTTP, in the 2025-11-25
handshake era with its session, or as a 2026-07-28 request without one) to
``presets serve`` (built-in plugins, event log on, default options) and to
the bare ``mcp`` server of ``bench/eras.py`` replaying the same answers.

Per case and server, each round spawns a fresh server, makes 100 calls to
warm it and then ``--calls`` (1,500) timed ones; servers alternate round by
round. Reported: the median wall time of one call over the rounds' medians,
and the server's CPU per call (all its threads, ``/proc/PID/task``), each
also as a ratio to the bare server's. The CPU figure is the one to read on a
shared machine: it does not count time the server spent waiting its turn.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import statistics
import subprocess
import time
from collections.abc import Callable
from typing import Any

from eras import TOOL, Servers, capture, cpu_seconds, spawn_http  # bench/ is on sys.path

CASES = ("stdio", "http", "http-2026")
MODERN = "2026-07-28"
LEGACY = "2025-11-25"


def _call(n: int, era: str) -> dict[str, Any]:
    params: dict[str, Any] = {"name": TOOL, "arguments": {}}
    if era == MODERN:
        params["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientInfo": {"name": "bench-wire", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    return {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params}


_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": LEGACY,
        "capabilities": {},
        "clientInfo": {"name": "bench-wire", "version": "1"},
    },
}
_INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def _timed(call: Callable[[int], bytes], pid: int, calls: int) -> tuple[float, float]:
    """(median seconds of one call, server CPU seconds per call) after 100 warm-up calls."""
    for n in range(1, 101):
        call(n)
    took = []
    cpu = cpu_seconds(pid)
    for n in range(1000, 1000 + calls):
        start = time.perf_counter()
        answer = call(n)
        took.append(time.perf_counter() - start)
    cpu = cpu_seconds(pid) - cpu
    if b'"result"' not in answer or b'"isError":true' in answer:
        raise SystemExit(f"the call did not succeed: {answer[:300]!r}")
    return statistics.median(took), cpu / calls


def run_stdio(command: list[str], calls: int) -> tuple[float, float]:
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert process.stdin is not None and process.stdout is not None
    wire_in, wire_out = process.stdin, process.stdout

    def send(message: dict[str, Any], answered: bool = True) -> bytes:
        wire_in.write(json.dumps(message).encode() + b"\n")
        wire_in.flush()
        return wire_out.readline() if answered else b""

    try:
        send(_INITIALIZE)
        send(_INITIALIZED, answered=False)
        return _timed(lambda n: send(_call(n, LEGACY)), process.pid, calls)
    finally:
        wire_in.close()
        process.wait(timeout=30)


def run_http(command: list[str], era: str, calls: int) -> tuple[float, float]:
    process, url = spawn_http(command)
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    connection = http.client.HTTPConnection("127.0.0.1", port)
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}

    def post(message: dict[str, Any]) -> tuple[http.client.HTTPResponse, bytes]:
        connection.request("POST", "/mcp", json.dumps(message), headers)
        response = connection.getresponse()
        return response, response.read()

    try:
        if era == LEGACY:
            response, _ = post(_INITIALIZE)
            headers["mcp-session-id"] = response.getheader("mcp-session-id") or ""
            headers["mcp-protocol-version"] = LEGACY
            post(_INITIALIZED)
        else:
            headers.update(
                {"mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": TOOL}
            )
        return _timed(lambda n: post(_call(n, era))[1], process.pid, calls)
    finally:
        connection.close()
        process.terminate()
        process.wait(timeout=30)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--calls", type=int, default=1500)
    parser.add_argument(
        "--cases", default=",".join(CASES), help="comma list of " + ", ".join(CASES)
    )
    parser.add_argument("--json", action="store_true", help="the figures as JSON")
    args = parser.parse_args(argv)
    cases = [c for c in args.cases.split(",") if c]
    unknown = sorted(set(cases) - set(CASES))
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; choose from {', '.join(CASES)}")
    servers = Servers(None)
    for era in ("legacy", MODERN):
        asyncio.run(capture(servers, era, TOOL, {}))
    figures: dict[str, dict[str, dict[str, list[float]]]] = {}
    for case in cases:
        transport = "stdio" if case == "stdio" else "http"
        era = MODERN if case == "http-2026" else "legacy"
        seen: dict[str, dict[str, list[float]]] = {"bare": {}, "presets": {}}
        for _ in range(args.rounds):
            for kind in ("bare", "presets"):
                command = servers.command(kind, transport, era)
                if transport == "stdio":
                    wall, cpu = run_stdio(command, args.calls)
                else:
                    wall, cpu = run_http(command, MODERN if era == MODERN else LEGACY, args.calls)
                seen[kind].setdefault("wall", []).append(wall)
                seen[kind].setdefault("cpu", []).append(cpu)
        figures[case] = seen
    if args.json:
        print(json.dumps(figures))
        return 0
    print(f"tools/call {TOOL} on the wire, {args.rounds} rounds x {args.calls} calls")
    print(f"  {'case':10s} {'bare wall':>10s} {'presets':>10s} {'ratio':>6s}"
          f" {'bare CPU':>10s} {'presets':>10s} {'ratio':>6s}")  # fmt: skip
    for case, seen in figures.items():
        row = [case]
        for figure in ("wall", "cpu"):
            bare = statistics.median(seen["bare"][figure])
            ours = statistics.median(seen["presets"][figure])
            row += [f"{bare * 1e6:8.0f}us", f"{ours * 1e6:8.0f}us", f"{ours / bare:5.2f}x"]
        print(f"  {row[0]:10s} {row[1]:>10s} {row[2]:>10s} {row[3]:>6s}"
              f" {row[4]:>10s} {row[5]:>10s} {row[6]:>6s}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
