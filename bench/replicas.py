"""Replicas behind nginx: calls per second with 1 and with 2 replicas, and a change's way
from one replica to a listener on another.

Run: uv run python bench/replicas.py [--rounds N] [--seconds S] [--clients C]
     [--switches N] [--figures calls,notice] [--json]

The deployment is the tests' (tests/e2e/replicas.py): a ``redis-server`` with its
append-only file fsynced on every write, replicas ``presets serve --transport http
--store redis://... --replica rN``, and nginx in front with the configuration of
docs/replicas.md. Two deployments run side by side, one with 1 replica and one with
2, each on its own Redis, and the load alternates between them block by block, so
the shared machine's load hits both alike.

Figures:

- calls/s: ``--clients`` connections (default 8), each sending 2026-07-28
  ``tools/call`` requests back to back through nginx, for ``--seconds`` (3) a
  block, ``--rounds`` (5) blocks on each deployment; the median block. The
  load generator is this process: a raw HTTP/1.1 client on asyncio streams
  (keep-alive, no SDK), so that it costs far less CPU than a replica. Both a
  read-only call (``space_unit_list``) and a write (``space_drawing_insert_shape``,
  which changes the shared drawing) are measured.
- the model's inputs, per call and per block: the CPU seconds of each replica, of
  nginx, of Redis and of the load generator (from /proc: utime + stime), and the
  Redis round trips (the data segments the replicas' connections sent to Redis,
  from ``ss -ti``; a pipeline is one) and commands (``INFO commandstats``).
- notice latency: a context switch through replica 1 (the agent's
  ``space_app_switch_surface``) until a ``subscriptions/listen`` stream on replica
  2 hears ``tools/list_changed``: median and p95 over ``--switches`` (40) switches,
  timed from the moment the switch's request is sent.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))

from e2e.replicas import Deployment  # the tests' harness: one place
from eras import children_of  # bench/ is this script's folder on sys.path

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
READ_TOOL = "space_unit_list"
WRITE_TOOL = "space_drawing_insert_shape"
DRAWING = ("--surface", "canvas", "--activity", "drawing")
TICK = os.sysconf("SC_CLK_TCK")


# ------------------------------------------------------------------ measuring processes


def cpu_of(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has used, its ended threads included."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK


def redis_command(port: int, *words: str) -> str:
    done = subprocess.run(
        ["redis-cli", "-p", str(port), *words], capture_output=True, text=True, timeout=30
    )
    return done.stdout


def redis_commands(port: int) -> int:
    """Commands Redis has run (``INFO commandstats``), the INFO commands excluded."""
    total = 0
    for line in redis_command(port, "INFO", "commandstats").splitlines():
        match = re.match(r"cmdstat_(\w+):calls=(\d+)", line)
        if match and match.group(1) != "info":
            total += int(match.group(2))
    return total


def segments_to(port: int) -> int:
    """Data segments sent to ``127.0.0.1:port`` on established connections (``ss -ti``)."""
    done = subprocess.run(
        ["ss", "-tniH", "state", "established", f"( dport = :{port} )"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    return sum(int(n) for n in re.findall(r"data_segs_out:(\d+)", done.stdout))


class Meter:
    """CPU of every process of a deployment, Redis commands and round trips, between marks."""

    def __init__(self, running: Deployment) -> None:
        assert running.redis is not None and running.balancer is not None
        self.running = running
        self.redis = running.redis
        nginx = running.balancer.process.pid
        self.groups: dict[str, list[int]] = {
            **{r.name: [r.process.pid] for r in running.replicas},
            "nginx": [nginx, *sorted(children_of(nginx))],
            "redis": [running.redis.process.pid] if running.redis.process else [],
        }

    def mark(self) -> dict[str, float]:
        marks = {name: sum(cpu_of(p) for p in pids) for name, pids in self.groups.items()}
        marks["client"] = time.process_time()
        marks["commands"] = float(redis_commands(self.redis.port))
        marks["round_trips"] = float(segments_to(self.redis.port))
        return marks


# ------------------------------------------------------------------ the load generator


class Connection:
    """One kept-alive HTTP/1.1 connection to nginx, one request at a time."""

    def __init__(self, port: int, token: str) -> None:
        self.port = port
        self.token = token
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, body: bytes, method: str, name: str) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        assert self.reader is not None
        head = (
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            f"MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: {method}\r\nMcp-Name: {name}\r\n"
            f"Authorization: Bearer {self.token}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        self.writer.write(head + body)
        status_line = await self.reader.readline()
        status = int(status_line.split()[1])
        length, chunked = None, False
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b""):
                break
            key, _, value = line.decode("latin-1").partition(":")
            key = key.strip().lower()
            if key == "content-length":
                length = int(value)
            elif key == "transfer-encoding" and "chunked" in value.lower():
                chunked = True
        if chunked:
            parts = []
            while True:
                size = int((await self.reader.readline()).split(b";")[0], 16)
                if size == 0:
                    await self.reader.readline()
                    break
                parts.append(await self.reader.readexactly(size))
                await self.reader.readline()
            return status, b"".join(parts)
        assert length is not None, "a response without a length"
        return status, await self.reader.readexactly(length)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def call_body(n: int, tool: str) -> bytes:
    arguments: dict[str, Any] = {}
    if tool == WRITE_TOOL:
        arguments = {"shape": "rect", "x": n % 500, "y": n % 300, "width": 5, "height": 5}
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": n,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments, "_meta": META},
        }
    ).encode()


def result_of(status: int, raw: bytes) -> dict[str, Any]:
    """The call's result; an SSE answer's last data line; anything else raises."""
    text = raw.decode()
    if text.startswith(("event:", "data:", "id:", ":")):
        data = [ln[5:] for ln in text.splitlines() if ln.startswith("data:")]
        text = data[-1]
    answer = json.loads(text)
    if status != 200 or "result" not in answer or answer["result"].get("isError"):
        raise RuntimeError(f"call failed: {status} {text[:300]}")
    return dict(answer["result"])


async def load(port: int, token: str, tool: str, clients: int, seconds: float) -> tuple[int, float]:
    """Calls done by ``clients`` connections in ``seconds``; the wall time they took."""
    done = 0
    counter = iter(range(1, 1 << 62))
    deadline = time.monotonic() + seconds

    async def client() -> None:
        nonlocal done
        connection = Connection(port, token)
        try:
            while time.monotonic() < deadline:
                status, raw = await connection.post(
                    call_body(next(counter), tool), "tools/call", tool
                )
                result_of(status, raw)
                done += 1
        finally:
            connection.close()

    started = time.monotonic()
    await asyncio.gather(*(client() for _ in range(clients)))
    return done, time.monotonic() - started


# ------------------------------------------------------------------ notice latency


async def notice_latency(running: Deployment, token: str, switches: int) -> list[float]:
    """Seconds from sending a switch to replica 1 until replica 2's listen stream hears it.

    The principal is a token's (``bench``), whose context the store keeps: the
    ``local`` principal's context is each replica's host's, its own.
    """
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.server.subscriptions import ToolsListChanged

    one, two = running.replicas[:2]
    samples: list[float] = []
    connection = Connection(one.port, token)
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30, read=300)
    )
    async with (
        http,
        Client(streamable_http_client(two.url, http_client=http)) as listener,
        listener.listen(tools_list_changed=True) as sub,
    ):
        events = sub.__aiter__()
        for n in range(switches):
            surface = "scene" if n % 2 == 0 else "canvas"  # it starts on the canvas
            body = json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": n,
                    "method": "tools/call",
                    "params": {
                        "name": "space_app_switch_surface",
                        "arguments": {"surface": surface},
                        "_meta": META,
                    },
                }
            ).encode()
            sent = time.monotonic()
            heard = asyncio.ensure_future(_next_of(events, ToolsListChanged))
            status, raw = await connection.post(body, "tools/call", "space_app_switch_surface")
            result_of(status, raw)
            await asyncio.wait_for(heard, 30)
            samples.append(time.monotonic() - sent)
            await asyncio.sleep(0.05)
    connection.close()
    return samples


async def _next_of(events: Any, kind: type) -> None:
    while True:
        if isinstance(await events.__anext__(), kind):
            return


# ------------------------------------------------------------------ the run


def token_of(running: Deployment) -> str:
    """The ``bench`` principal's token in the deployment's store (made on first use)."""
    if not hasattr(running, "bench_token"):
        done = running.presets("tokens", "create", "bench")
        if done.returncode != 0:
            raise RuntimeError(f"presets tokens create: {done.stderr}")
        running.bench_token = done.stdout.strip()  # type: ignore[attr-defined]
    return str(running.bench_token)  # type: ignore[attr-defined]


def per_call(before: dict[str, float], after: dict[str, float], calls: int) -> dict[str, float]:
    """Each mark's growth per call; ``replicas``: all replicas' CPU together.

    With the calls split evenly (round-robin), that sum is also what one replica
    spends on each call it serves.
    """
    if not calls:
        return {}
    out = {k: (after[k] - before[k]) / calls for k in before}
    out["replicas"] = sum(v for k, v in out.items() if re.fullmatch(r"r\d+", k))
    return out


async def idle_cpu(meter: Meter, seconds: float = 2.0) -> float:
    """The share of a core one replica uses with nothing to serve (its timers, its bus)."""
    before = meter.mark()
    await asyncio.sleep(seconds)
    after = meter.mark()
    names = [k for k in before if re.fullmatch(r"r\d+", k)]
    return sum(after[k] - before[k] for k in names) / len(names) / seconds


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]


async def throughput(
    deployments: dict[int, Deployment], tool: str, args: argparse.Namespace
) -> dict[str, Any]:
    meters = {n: Meter(d) for n, d in deployments.items()}
    tokens = {n: token_of(d) for n, d in deployments.items()}
    blocks: dict[int, list[dict[str, Any]]] = {n: [] for n in deployments}
    idle = {n: await idle_cpu(meters[n]) for n in deployments}
    for n, running in deployments.items():
        assert running.balancer is not None  # warm: connections, imports, caches
        await load(running.balancer.port, tokens[n], tool, args.clients, 0.5)
    for round_ in range(args.rounds):
        order = list(deployments) if round_ % 2 == 0 else list(reversed(deployments))
        for n in order:
            running = deployments[n]
            assert running.balancer is not None
            before = meters[n].mark()
            calls, wall = await load(
                running.balancer.port, tokens[n], tool, args.clients, args.seconds
            )
            after = meters[n].mark()
            blocks[n].append(
                {"calls_per_s": calls / wall, "calls": calls, **per_call(before, after, calls)}
            )
    figures: dict[str, Any] = {}
    for n, rows in blocks.items():
        keys = rows[0].keys()
        figures[f"{n} replica{'s' if n > 1 else ''}"] = {
            **{k: statistics.median(r[k] for r in rows) for k in keys},
            "idle_core_share": idle[n],
        }
    return {"blocks": blocks, "median": figures}


def run(args: argparse.Namespace) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="bench-replicas-"))
    out: dict[str, Any] = {"cores": os.cpu_count(), "clients": args.clients}
    with ExitStack() as stack:
        deployments: dict[int, Deployment] = {}
        for n in (1, 2):
            running = Deployment(root / f"d{n}", n, "--auth", "tokens", *DRAWING)
            stack.callback(running.close)
            deployments[n] = running
        if "calls" in args.figures:
            for tool in (READ_TOOL, WRITE_TOOL):
                out[tool] = asyncio.run(throughput(deployments, tool, args))
        if "notice" in args.figures:
            samples = asyncio.run(
                notice_latency(deployments[2], token_of(deployments[2]), args.switches)
            )
            out["notice_ms"] = {
                "median": statistics.median(samples) * 1e3,
                "p95": percentile(samples, 0.95) * 1e3,
                "samples": len(samples),
            }
    return out


def show(out: dict[str, Any]) -> None:
    print(f"{out['cores']} cores, {out['clients']} client connections")
    for tool in (READ_TOOL, WRITE_TOOL):
        if tool not in out:
            continue
        print(f"\n{tool}")
        medians = out[tool]["median"]
        names = list(medians)
        cols = [
            "calls_per_s", "replicas", "r1", "r2", "nginx", "redis", "client",
            "commands", "round_trips", "idle_core_share",
        ]  # fmt: skip
        print("| " + " | ".join(["what", *names]) + " |")
        print("| " + " | ".join(["---"] * (len(names) + 1)) + " |")
        for col in cols:
            cells = []
            for name in names:
                value = medians[name].get(col)
                if value is None:
                    cells.append("-")
                elif col == "calls_per_s":
                    cells.append(f"{value:.0f}")
                elif col in ("commands", "round_trips"):
                    cells.append(f"{value:.2f}")
                elif col == "idle_core_share":
                    cells.append(f"{value * 100:.1f} %")
                else:
                    cells.append(f"{value * 1e3:.2f} ms")
            label = {
                "calls_per_s": "calls/s",
                "commands": "Redis commands/call",
                "round_trips": "Redis round trips/call",
                "idle_core_share": "idle CPU of a replica (of a core)",
                "replicas": "CPU of all replicas/call",
            }.get(col, f"CPU {col}/call")
            print("| " + " | ".join([label, *cells]) + " |")
    notice = out.get("notice_ms")
    if notice is None:
        return
    print(
        f"\nswitch on r1 -> listen on r2: median {notice['median']:.1f} ms, "
        f"p95 {notice['p95']:.1f} ms ({notice['samples']} switches)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--switches", type=int, default=40)
    parser.add_argument(
        "--figures", type=lambda v: set(v.split(",")), default={"calls", "notice"},
        help="calls,notice (default both)",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    out = run(args)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        show(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
