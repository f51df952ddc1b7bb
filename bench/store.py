"""A read-only call with the embedded store and with the Redis store, side by side in one run.

Run: uv run python bench/store.py [--rounds N] [--repeat N] [--calls N] [--skip-http] [--json]

Needs ``redis-server`` (Debian's package); the script starts one on a free
loopback port with ``--appendonly yes --appendfsync always`` in a temporary
folder, and stops it by its PID at the end.

Two figures, each alternating the servers round by round so a change in the
shared machine's load hits them alike:

- in process: the server's ``tools/call`` handler awaited in a loop (no SDK,
  no wire), for servers built as ``presets serve`` builds one (the Space
  host, installed plugins, the event log on): embedded; Redis; and Redis with
  a call budget (``--max-calls``), whose check is the one round trip a call
  waits for, against a Redis that fsyncs every write (``appendfsync always``)
  and one that fsyncs once a second (``everysec``);
- over HTTP: real ``presets serve --transport http`` processes, embedded and
  ``--store redis://...``, each called by the SDK's ``mcp.Client`` (legacy
  era) in blocks of 20 calls that alternate between them.

The tool is ``space_unit_list`` (read-only, active in the default context).
Reported: the median time of one call and the ratio to embedded (target:
Redis <= 1.3x).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TOOL = "space_unit_list"
TARGET = 1.3


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_redis(folder: Path, fsync: str = "always") -> tuple[subprocess.Popen[bytes], str]:
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is not installed (apt-get install redis-server)")
    port = free_port()
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder),
         "--appendonly", "yes", "--appendfsync", fsync, "--save", ""],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                if sock.recv(16).startswith(b"+PONG"):
                    return process, f"redis://127.0.0.1:{port}/0"
        except OSError:
            time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    raise SystemExit("redis-server did not answer PING")


def stop(process: subprocess.Popen[Any]) -> None:
    if process.poll() is None:
        os.kill(process.pid, signal.SIGTERM)
        process.wait(10)


# ------------------------------------------------------------------ in process


def build(store_url: str | None, max_calls: int | None) -> Any:
    """A server built as ``presets serve`` builds one, on the given store."""
    from agent_presets.cli.options import installed_plugins
    from agent_presets.lib.tools import ToolRegistry
    from agent_presets.server import ServeConfig
    from agent_presets.server.mcp.server import build_server
    from agent_presets.server.policy import ToolPolicy
    from agent_presets.server.store import open_store
    from agent_presets_general import SpaceHost

    state = Path(tempfile.mkdtemp(prefix="presets-bench-store-"))
    app = SpaceHost(state, None)
    presets = app.start(installed_plugins(), tool_registry=ToolRegistry("space_"))
    store = open_store(store_url, state)
    shared_log = getattr(store, "event_log", None)
    policy = ToolPolicy(
        max_calls=max_calls,
        event_log=None if shared_log is not None else state / "events.jsonl",
        events=shared_log() if shared_log is not None else None,
        store=store,
    )
    return build_server(presets, ServeConfig(policy=policy, store=store, state_dir=state))


def in_process(url: str, everysec: str, rounds: int, repeat: int) -> dict[str, float]:
    import anyio
    import mcp_types as types

    servers = {
        "embedded": build(None, None),
        "redis": build(url, None),
        "redis, --max-calls (appendfsync always)": build(url, 10**9),
        "redis, --max-calls (appendfsync everysec)": build(everysec, 10**9),
    }
    params = types.CallToolRequestParams(name=TOOL, arguments={})

    from eras import handler_call  # bench/ is this script's folder on sys.path

    async def handler(server: Any) -> float:
        return await handler_call(server, params, repeat)

    times: dict[str, list[float]] = {name: [] for name in servers}
    try:
        for r in range(rounds + 1):
            for name, server in servers.items():
                took = anyio.run(handler, server)
                if r:  # the first round warms up
                    times[name].append(took)
    finally:
        for server in servers.values():
            server.policy.close()
            server.close()
            server.store.close()
    return {name: statistics.median(values) for name, values in times.items()}


# ------------------------------------------------------------------ over HTTP


BUDGET = ["--max-calls", str(10**9)]
"""A call budget no run spends: every call is checked and counted."""


def spawn(command: list[str]) -> tuple[subprocess.Popen[bytes], str]:
    """An HTTP server and its MCP URL, started as the eras bench starts its own."""
    from eras import spawn_http  # bench/ is this script's folder on sys.path

    return spawn_http(command)


def over_http(url: str, everysec: str, rounds: int, calls: int) -> dict[str, float]:
    import anyio
    from mcp import Client

    base = [sys.executable, "-m", "agent_presets", "serve", "--transport", "http", "--port", "0"]
    folder = Path(tempfile.mkdtemp(prefix="presets-bench-http-"))
    processes = {
        "embedded": spawn([*base, "--state-dir", str(folder / "one")]),
        "redis": spawn([*base, "--state-dir", str(folder / "two"), "--store", url]),
        # A budget: its check is the one round trip a call waits for.
        "redis, --max-calls (appendfsync always)": spawn(
            [*base, "--state-dir", str(folder / "three"), "--store", url, *BUDGET]
        ),
        "redis, --max-calls (appendfsync everysec)": spawn(
            [*base, "--state-dir", str(folder / "four"), "--store", everysec, *BUDGET]
        ),
    }
    times: dict[str, list[float]] = {name: [] for name in processes}

    async def main() -> None:
        async with contextlib.AsyncExitStack() as stack:
            clients = {
                name: await stack.enter_async_context(Client(url, mode="legacy"))
                for name, (_process, url) in processes.items()
            }
            for r in range(rounds + 1):
                for name, client in clients.items():
                    start = time.perf_counter()
                    for _ in range(calls):
                        result = await client.call_tool(TOOL, {})
                        assert not result.is_error
                    if r:
                        times[name].append((time.perf_counter() - start) / calls)

    try:
        anyio.run(main)
    finally:
        for process, _ in processes.values():
            stop(process)
        shutil.rmtree(folder, ignore_errors=True)
    return {name: statistics.median(values) for name, values in times.items()}


def table(title: str, figures: dict[str, float]) -> list[str]:
    base = figures["embedded"]
    lines = [f"{title}", "| store | one call | ratio to embedded |", "|---|---:|---:|"]
    for name, value in figures.items():
        lines.append(f"| {name} | {value * 1e6:.1f} µs | {value / base:.2f}x |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=1000, help="calls a round, in process")
    parser.add_argument("--calls", type=int, default=20, help="calls a block, over HTTP")
    parser.add_argument("--skip-http", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="presets-bench-redis-"))
    (folder / "always").mkdir()
    (folder / "everysec").mkdir()
    redis, url = start_redis(folder / "always")
    relaxed, everysec = start_redis(folder / "everysec", "everysec")
    try:
        figures = {"in process": in_process(url, everysec, args.rounds, args.repeat)}
        if not args.skip_http:
            figures["over HTTP"] = over_http(url, everysec, args.rounds * 3, args.calls)
    finally:
        stop(redis)
        stop(relaxed)
        shutil.rmtree(folder, ignore_errors=True)
    if args.json:
        print(json.dumps(figures, indent=1))
        return 0
    for title, values in figures.items():
        print("\n".join(table(title, values)))
        print()
    for title, values in figures.items():
        worst = max(v / values["embedded"] for k, v in values.items() if k != "embedded")
        print(f"{title}: worst Redis ratio {worst:.2f}x (target <= {TARGET}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
