"""Tool calls with the console open on a long event log, against the same calls without it.

Run: uv run python bench/console.py [--rounds N] [--blocks B] [--log-mib M] [--quick] [--json]

Two servers (the bench plugin of ``bench/server.py``: 20 no-op tools, every
call appended to the event log) run as stdio subprocesses of this script,
each on its own event log filled beforehand to ``--log-mib`` MiB (50 by
default) in rotated files, as a long session leaves it. One serves the
console and has a page open on it the whole run: its stream
(``/api/stream``) read on a thread as a browser reads it, so the console
sends a snapshot each time the log moved. The other serves the console too,
but its page was closed after the first snapshot, so the two processes hold
the same (the console's numbers of the whole log) and differ only in the
open page. The client is the SDK's ``mcp.Client`` in the legacy era, one per
server, both connected throughout. Calls go in blocks of ``BLOCK`` that
alternate between the two servers (which goes first alternating too), and
each pair of blocks gives a ratio (open / closed) with the shared machine's
load alike for both. The consoles' first reading of the whole log is done
before any block is timed: a page opened once has paid it.

Target: the median of the per-pair ratios <= 1.20. Before the console
followed the log (it read every file again whenever a line was written),
calls with a 54 MiB log fell from 482/s to 77/s.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

TARGET = 1.20
BLOCK = 250
"""Calls per block: about half a second, two of the console's ticks (0.25 s)."""
TOOLS = 20
KINDS = ("open", "closed")


# ------------------------------------------------------------------- server


def serve(state: str) -> None:
    """The bench server on STATE's log, and its console (its URL in STATE/console.url)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from server import bench_presets

    from agent_presets.server.console.app import ConsoleOptions
    from agent_presets.server.mcp import serve as run
    from agent_presets.server.policy import ToolPolicy

    presets, _ = bench_presets(TOOLS)
    policy = ToolPolicy(event_log=Path(state) / "events.jsonl")
    url_file = Path(state) / "console.url"

    def announce(line: str) -> None:
        url_file.write_text(line.removeprefix("console: "))

    run(presets, policy=policy, console=ConsoleOptions(port=0, announce=announce))


def fill_log(state: Path, mib: int) -> int:
    """Write ``mib`` MiB of call lines as the server's log and its rotated files; the lines."""
    from agent_presets.server.eventlog import DEFAULT_MAX_BYTES, encode
    from agent_presets.server.events import Call

    lines = 0
    left = mib * 1024 * 1024
    files = [state / "events.jsonl"] + [state / f"events.jsonl.{n}" for n in range(1, 6)]
    for path in files:
        if left <= 0:
            break
        # The newest file is left room to grow before it rotates.
        size = min(left, DEFAULT_MAX_BYTES - (1024 * 1024 if path.name == "events.jsonl" else 0))
        chunk = []
        written = 0
        while written < size:
            n = lines
            line = encode(
                Call(
                    tool=f"space_noop_{n % TOOLS:03d}",
                    preset="bench-tools",
                    ok=n % 50 != 0,
                    latency_ms=round(0.05 + (n % 97) / 100, 3),
                )
            )
            chunk.append(line)
            written += len(line)
            lines += 1
        path.write_bytes(b"".join(chunk))
        path.chmod(0o600)
        left -= written
    return lines


# ------------------------------------------------------------------- client


class Page:
    """A console page's live stream, read on a thread until ``close``."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.snapshots = 0
        self._connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=60)
        self._connection.request("GET", f"/api/stream?{parts.query}")
        self._response = self._connection.getresponse()
        assert self._response.status == 200, self._response.status
        self._first = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        assert self._first.wait(120), "the console sent no snapshot"

    def _read(self) -> None:
        try:
            for raw in self._response:
                if raw.startswith(b"event: state"):
                    self.snapshots += 1
                    self._first.set()
        except (OSError, ValueError, http.client.HTTPException, AttributeError):
            pass  # closed under the reader

    def close(self) -> None:
        if self._connection.sock is not None:
            self._connection.sock.shutdown(2)  # the reader's blocked recv returns now
        self._connection.close()
        self._thread.join(10)


async def measure(states: dict[str, Path], rounds: int, blocks: int) -> dict[str, Any]:
    """Blocks of calls alternating between the server whose console is open and the other."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    times: dict[str, list[float]] = {kind: [] for kind in states}
    async with AsyncExitStack() as stack:
        quiet = stack.enter_context(open(os.devnull, "w"))  # noqa: SIM115 (closed by the stack)
        clients = {}
        for kind, state in states.items():
            args = [str(Path(__file__).resolve()), "--serve", str(state)]
            params = StdioServerParameters(command=sys.executable, args=args)
            transport = stdio_client(params, errlog=quiet)
            clients[kind] = await stack.enter_async_context(Client(transport, mode="legacy"))
        for client in clients.values():
            for _ in range(50):  # warm up
                await client.call_tool("space_noop_000", {"value": 1})
        pages = {}
        for kind, state in states.items():
            url_file = state / "console.url"
            deadline = time.monotonic() + 60
            while not url_file.exists():
                assert time.monotonic() < deadline, "the console did not start"
                time.sleep(0.05)
            started = time.perf_counter()
            pages[kind] = Page(url_file.read_text())  # waits for the first reading of the log
            first_read = time.perf_counter() - started
        pages.pop("closed").close()
        page = pages["open"]
        try:
            kinds = list(clients)
            for r in range(rounds):
                for block in range(2 * blocks):
                    for kind in kinds if block % 2 == 0 else reversed(kinds):
                        start = time.perf_counter()
                        for _ in range(BLOCK):
                            result = await clients[kind].call_tool("space_noop_001", {"value": 1})
                        times[kind].append(time.perf_counter() - start)
                        assert not result.is_error, result
                print(f"round {r + 1}/{rounds} done", file=sys.stderr, flush=True)
            snapshots = page.snapshots
        finally:
            page.close()
    ratios = [o / c for o, c in zip(times["open"], times["closed"], strict=True)]
    return {
        "calls_per_s_closed": BLOCK / statistics.median(times["closed"]),
        "calls_per_s_open": BLOCK / statistics.median(times["open"]),
        "slowest_block_open_s": max(times["open"]),
        "slowest_block_closed_s": max(times["closed"]),
        "median_pair_ratio": statistics.median(ratios),
        "snapshots": snapshots,
        "first_reading_s": first_read,
        "target": TARGET,
        "ok": statistics.median(ratios) <= TARGET,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", metavar="STATE", help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--blocks", type=int, default=4, help="pairs of blocks per round")
    parser.add_argument("--log-mib", type=int, default=50)
    parser.add_argument("--quick", action="store_true", help="1 round of 2 pairs")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve)
        return 0
    import anyio

    rounds, blocks = (1, 2) if args.quick else (args.rounds, args.blocks)
    states = {kind: Path(tempfile.mkdtemp(prefix=f"presets-bench-{kind}-")) for kind in KINDS}
    lines = {kind: fill_log(state, args.log_mib) for kind, state in states.items()}["open"]
    report = anyio.run(measure, states, rounds, blocks)
    report.update(
        rounds=rounds, block=BLOCK, log_mib=args.log_mib, log_lines=lines,
        load_average=os.getloadavg(),
    )  # fmt: skip
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    load = ", ".join(f"{x:.2f}" for x in report["load_average"])
    print(
        f"tools/call with the console open on a {args.log_mib} MiB event log ({lines:,} lines), "
        f"blocks of {BLOCK} alternating; {rounds} rounds; load average at the end {load}"
    )
    print(
        f"  closed {report['calls_per_s_closed']:7.1f} calls/s   open "
        f"{report['calls_per_s_open']:7.1f} calls/s   median open/closed per pair "
        f"{report['median_pair_ratio']:.3f}  target <= {TARGET}  "
        f"{'ok' if report['ok'] else 'OVER'}"
    )
    print(
        f"  {report['snapshots']} snapshots sent; slowest block open "
        f"{report['slowest_block_open_s'] * 1000:.0f} ms, closed "
        f"{report['slowest_block_closed_s'] * 1000:.0f} ms; the console's first reading of the "
        f"log {report['first_reading_s']:.2f} s"
    )
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
