"""One ``tools/call`` as the server pays for it: raw JSON-RPC on the wire, no SDK client.

Run: uv run python bench/wire.py [--rounds N] [--calls N] [--cases stdio,http,http-2026]
     uv run python bench/wire.py --interleaved [--against OTHER/core/src] [--cases http,http-2026]
     uv run python bench/wire.py --instructions [--ablate PARTS] [--cases http,http-2026]

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

``--interleaved`` (HTTP cases) measures with less noise: each round starts
every server at once (each ``presets serve`` on a state folder of its own),
then times blocks of ``--block`` (200) calls, one block of each server in
turn, ``--blocks`` (12) times; the ratio is the median of the per-block
ratios to the bare server's block beside it, so a slow stretch of the
machine weighs on both sides. ``--against SRC`` adds a ``presets serve``
whose core is imported from another checkout's ``core/src`` (a ``git
worktree`` of the commit before a change), for a before/after in one run;
both ``presets serve`` then get the same one-entry ``PYTHONPATH``.

``--instructions`` (HTTP cases) counts instead of timing: each server runs
under valgrind's callgrind with counting off; after 30 calls to warm it, the
script turns counting on (``callgrind_control``), makes ``--calls`` (300)
calls, turns it off and stops the server. The figure is the instructions the
server's process (all threads) executed per call, and its ratio to the bare
server's. A count does not move with the machine's load: two runs agree to
about 0.3%, where timed ratios here move by a tenth. It leaves out the
kernel's share (system calls) and what the CPU's caches make of the code,
so it is the work a call asks of the server, not its time. ``--ablate
PARTS`` adds one ``presets serve`` per part with that part taken away
(``bench/ablate.py``; ``event-log`` is ``--no-event-log``), so each part's
cost is the difference to ``presets serve`` whole.

``--bare-event-store`` (any mode) gives the bare server an event store, the
SDK example's (``eras.BareEventStore``), so that its 2025-11-25 streams are
resumable like ours: a priming event and an id on every event.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from eras import (  # bench/ is on sys.path
    ABLATABLE,
    TOOL,
    Servers,
    _pool_threads,
    ablation,
    capture,
    cpu_seconds,
    spawn_http,
)

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
    _succeeded(answer)
    return statistics.median(took), cpu / calls


def _succeeded(answer: bytes) -> None:
    """Stop the bench if the last answer was not a successful result."""
    if b'"result"' not in answer or b'"isError":true' in answer:
        raise SystemExit(f"the call did not succeed: {answer[:300]!r}")


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
    server = _Http(command, era)
    try:
        return _timed(lambda n: server.post(_call(n, era))[1], server.process.pid, calls)
    finally:
        server.close()


class _Http:
    """One HTTP server, spawned and connected (kept alive), past the handshake in ``era``."""

    def __init__(self, command: list[str], era: str, env: dict[str, str] | None = None) -> None:
        self.process, url = spawn_http(command, env)
        self.port = int(url.rsplit(":", 1)[1].split("/")[0])
        self.era = era
        self.connection = http.client.HTTPConnection("127.0.0.1", self.port)
        self.headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        if era == LEGACY:
            response, _ = self.post(_INITIALIZE)
            self.headers["mcp-session-id"] = response.getheader("mcp-session-id") or ""
            self.headers["mcp-protocol-version"] = LEGACY
            self.post(_INITIALIZED)
        else:
            self.headers.update(
                {"mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": TOOL}
            )

    def post(self, message: dict[str, Any]) -> tuple[http.client.HTTPResponse, bytes]:
        try:
            self.connection.request("POST", "/mcp", json.dumps(message), self.headers)
        except (BrokenPipeError, ConnectionResetError, http.client.HTTPException):
            # An idle kept-alive connection (uvicorn's 5 s) closed while others ran.
            self.connection.close()
            self.connection.request("POST", "/mcp", json.dumps(message), self.headers)
        response = self.connection.getresponse()
        return response, response.read()

    def block(self, calls: int) -> tuple[float, float]:
        """(seconds of wall time, CPU seconds) per call of one block of ``calls`` calls."""
        cpu = cpu_seconds(self.process.pid)
        start = time.perf_counter()
        for n in range(calls):
            answer = self.post(_call(1000 + n, self.era))[1]
        wall = time.perf_counter() - start
        _succeeded(answer)
        return wall / calls, (cpu_seconds(self.process.pid) - cpu) / calls

    def close(self) -> None:
        self.connection.close()
        self.process.terminate()
        self.process.wait(timeout=30)


def interleaved(
    servers: Servers, case: str, args: argparse.Namespace
) -> dict[str, dict[str, list[float]]]:
    """Per server, its per-block ratios to the bare server's (``wall``/``cpu``) and times."""
    era = MODERN if case == "http-2026" else LEGACY
    kinds = ["bare", "presets", *(["against"] if args.against else [])]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    ours = str(Path(__file__).resolve().parents[1] / "core" / "src")
    paths = {"presets": ours, "against": str(Path(args.against or ".").resolve())}
    seen: dict[str, dict[str, list[float]]] = {k: {} for k in kinds}
    for _ in range(args.rounds):
        running: dict[str, _Http] = {}
        try:
            for kind in kinds:
                fixture = "legacy" if era == LEGACY else MODERN  # eras.py names the fixtures so
                command = servers.command("bare" if kind == "bare" else "presets", "http", fixture)
                server_env = env
                if kind != "bare":
                    at = command.index("--state-dir") + 1
                    command[at] = f"{command[at]}-{kind}"  # one writer per state folder
                    if args.against:  # the same one-entry path on both sides
                        server_env = {**env, "PYTHONPATH": paths[kind]}
                running[kind] = _Http(command, era, server_env)
            time.sleep(2.1)  # the units plugin's racy window for a fresh folder (eras.py)
            for server in running.values():
                server.block(100)  # warm
            for b in range(args.blocks):
                order = kinds if b % 2 == 0 else kinds[::-1]
                got = {kind: running[kind].block(args.block) for kind in order}
                for kind in kinds:
                    for i, figure in enumerate(("wall", "cpu")):
                        seen[kind].setdefault(figure, []).append(got[kind][i])
                        seen[kind].setdefault(f"{figure}-ratio", []).append(
                            got[kind][i] / got["bare"][i]
                        )
        finally:
            for server in running.values():
                server.close()
    return seen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument(
        "--calls", type=int, default=None, help="timed calls a round [1500; 300 counted]"
    )
    parser.add_argument(
        "--cases", default=",".join(CASES), help="comma list of " + ", ".join(CASES)
    )
    parser.add_argument("--json", action="store_true", help="the figures as JSON")
    parser.add_argument(
        "--interleaved",
        action="store_true",
        help="HTTP cases: all servers up at once, blocks of calls in turn (less noise)",
    )
    parser.add_argument("--block", type=int, default=200, help="calls per block [200]")
    parser.add_argument("--blocks", type=int, default=12, help="blocks per round [12]")
    parser.add_argument(
        "--against",
        metavar="SRC",
        help="with --interleaved: also a presets serve whose core is SRC (another core/src)",
    )
    parser.add_argument(
        "--bare-event-store",
        action="store_true",
        help="the bare server keeps an event store, resumable as ours (bench/eras.py)",
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="HTTP cases: count each server's instructions per call (valgrind), not time",
    )
    parser.add_argument(
        "--ablate",
        default="",
        metavar="PARTS",
        help=f"with --instructions: also presets serve without each of {', '.join(ABLATABLE)}",
    )
    args = parser.parse_args(argv)
    cases = [c for c in args.cases.split(",") if c]
    unknown = sorted(set(cases) - set(CASES))
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; choose from {', '.join(CASES)}")
    if args.instructions:
        parts = _instructions_options(parser, args, cases)
    elif args.ablate:
        parser.error("--ablate needs --instructions (bench/eras.py --ablate times the client)")
    if args.against and not args.interleaved:
        parser.error("--against needs --interleaved")
    if args.interleaved and not any(c != "stdio" for c in cases):
        parser.error("--interleaved measures the HTTP cases: give --cases http or http-2026")
    if args.against and not (Path(args.against) / "agent_presets").is_dir():
        parser.error(f"--against {args.against}: no agent_presets package there")
    servers = Servers(None)
    servers.bare_event_store = args.bare_event_store
    for era in ("legacy", MODERN):
        asyncio.run(capture(servers, era, TOOL, {}))
    if args.instructions:
        http_cases = [c for c in cases if c != "stdio"]
        return _report_instructions(servers, http_cases, args.calls or 300, parts, args)
    if args.interleaved:
        return _report_interleaved(servers, [c for c in cases if c != "stdio"], args)
    args.calls = args.calls or 1500
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


def instructions(servers: Servers, case: str, calls: int, parts: list[str]) -> dict[str, float]:
    """Per server (bare, presets, presets without PART), instructions per call (callgrind)."""
    era = MODERN if case == "http-2026" else LEGACY
    fixture = "legacy" if era == LEGACY else MODERN  # eras.py names the fixtures so
    counted: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="presets-bench-callgrind-") as folder:
        for kind in ["bare", "presets", *parts]:
            servers.ablate = [kind] if kind in parts else []
            command = servers.command("bare" if kind == "bare" else "presets", "http", fixture)
            if kind != "bare":
                at = command.index("--state-dir") + 1
                command[at] = f"{command[at]}-{kind}"  # one writer per state folder
            out = Path(folder, f"{kind}.out")
            command = [
                "valgrind", "--tool=callgrind", "--instr-atstart=no",
                f"--callgrind-out-file={out}", *command,
            ]  # fmt: skip
            server = _Http(command, era)
            try:
                server.block(30)  # warm: the first calls pay for what is done once
                pid = str(server.process.pid)
                _callgrind_control("on", pid)
                server.block(calls)
                _callgrind_control("off", pid)
                if _pool_threads(server.process.pid):
                    print(f"note: {kind} ran calls on its tool pool (valgrind is slow)", flush=True)
            finally:
                # SIGINT: the server ends as on Ctrl-C, and callgrind writes its counts.
                server.connection.close()
                server.process.send_signal(signal.SIGINT)
                server.process.wait(timeout=120)
            counted[kind] = _callgrind_total(out) / calls
    servers.ablate = []
    return counted


def _callgrind_control(state: str, pid: str) -> None:
    done = subprocess.run(["callgrind_control", "-i", state, pid], capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"callgrind_control -i {state} {pid}: {done.stderr.strip()}")


def _callgrind_total(path: Path) -> int:
    """The instructions a callgrind output file counts: its ``totals:`` line.

    (Its ``summary:`` line, written first, can say 0 when counting started late.)
    """
    for line in path.read_text().splitlines():
        if line.startswith("totals:"):
            return int(line.split()[1])
    raise RuntimeError(f"{path}: no totals line; did callgrind finish writing it?")


def _instructions_options(
    parser: argparse.ArgumentParser, args: argparse.Namespace, cases: list[str]
) -> list[str]:
    """``--instructions``'s options checked (a parser error if not); the parts to ablate."""
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        parser.error("--instructions needs valgrind (Debian: apt-get install -y valgrind)")
    if args.interleaved or args.against:
        parser.error("--instructions counts each server alone: no --interleaved, no --against")
    if not any(c != "stdio" for c in cases):
        parser.error("--instructions counts the HTTP cases: give --cases http,http-2026")
    try:
        return ablation(args.ablate)
    except SystemExit as exc:
        parser.error(str(exc))


def _report_instructions(
    servers: Servers, cases: list[str], calls: int, parts: list[str], args: argparse.Namespace
) -> int:
    figures = {case: instructions(servers, case, calls, parts) for case in cases}
    if args.json:
        print(json.dumps(figures))
        return 0
    store = ", the bare server with an event store" if args.bare_event_store else ""
    print(f"tools/call {TOOL} on the wire: instructions per call (callgrind), {calls} calls{store}")
    for case, counted in figures.items():
        bare, whole = counted["bare"], counted["presets"]
        print(f"  {case:10s} bare     {bare / 1e3:8.0f}k")
        print(f"  {case:10s} presets  {whole / 1e3:8.0f}k  {whole / bare:5.3f}x")
        for part in parts:
            less = counted[part]
            print(
                f"  {case:10s} without {part:<12s} {less / 1e3:8.0f}k  {less / bare:5.3f}x"
                f"   (the part: {(whole - less) / 1e3:5.0f}k, {(whole - less) / bare:.3f}x of bare)"
            )
    return 0


def _report_interleaved(servers: Servers, cases: list[str], args: argparse.Namespace) -> int:
    figures = {case: interleaved(servers, case, args) for case in cases}
    if args.json:
        print(json.dumps(figures))
        return 0
    print(
        f"tools/call {TOOL} on the wire, interleaved: {args.rounds} rounds x {args.blocks} "
        f"blocks of {args.block} calls; ratio = median of per-block ratios to bare"
    )
    for case, seen in figures.items():
        for kind, got in seen.items():
            if kind == "bare":
                continue
            name = "presets" if kind == "presets" else f"against {args.against}"
            wall, cpu = statistics.median(got["wall"]), statistics.median(got["cpu"])
            print(
                f"  {case:10s} {name:10s} wall {wall * 1e6:6.0f}us"
                f" {statistics.median(got['wall-ratio']):5.3f}x"
                f"   CPU {cpu * 1e6:6.0f}us {statistics.median(got['cpu-ratio']):5.3f}x"
                f"   (bare {statistics.median(seen['bare']['wall']) * 1e6:.0f}us wall,"
                f" {statistics.median(seen['bare']['cpu']) * 1e6:.0f}us CPU)"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
