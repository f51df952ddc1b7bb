"""What a hostile upstream can cost the server and its other clients (issue 27).

Run: uv run python bench/upstream_bounds.py [--json]

One server (the Space host, in this process) serves the fake upstream
(tests/upstreams/fake_upstream.py) to two in-memory clients, legacy era.
Client A makes the upstream misbehave; client B lists the tools over and
over meanwhile, and the figure for B is its slowest list. RSS is this
process's (``/proc/self/status``), peak and now.

- big: A asks for results whose messages take about 1, 4 and 8 MiB (less
  a little: under the cap), and one of 40 MB (over it): A's time, B's
  slowest list.
- reader: the transport's line reader against the SDK's way (each chunk
  joined to the line so far), on one line of 2, 8 and 32 MiB in 64 KiB
  chunks, without a server.
- flood: A's call logs 20,000 messages: A's time, B's slowest list, RSS, how
  many were dropped. (The fake upstream itself sends about 400 a second here,
  to the SDK's own client too.)
- relists: the upstream says tools/list_changed 20,000 times: how many
  times it was listed again, RSS.
- hung: a second server whose upstream never answers ``initialize``
  (``start_timeout: 5``): 120 lists and calls over about 30 s; how many took
  over 2 s, and the slowest.

Timings are the loaded machine's; compare them with each other, not with
another run.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

HERE = Path(__file__).resolve().parent
FAKE = HERE.parent / "tests" / "upstreams" / "fake_upstream.py"
MIB = 1024 * 1024


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@asynccontextmanager
async def served(folder: Path, *args: str, **options: Any) -> AsyncIterator[tuple[Any, Any, Any]]:
    from mcp import Client

    from agent_presets.lib.plugins import load_plugins
    from agent_presets.server.mcp import build_server
    from agent_presets_general import SpaceHost

    plugins = folder / "plugins"
    plugins.mkdir(parents=True, exist_ok=True)
    command = json.dumps([sys.executable, str(FAKE), *args])
    extra = "".join(f"    {k}: {v}\n" for k, v in options.items())
    tools = json.dumps(["fake.big", "fake.chatty", "fake.flood_changes", "fake.pid"])
    (plugins / "up.yaml").write_text(
        f"upstreams:\n  - name: fake\n    command: {command}\n{extra}"
        "presets:\n  - name: fake-tools\n    default_state: auto\n    risk: normal\n"
        f"    contexts: [{{surface: any}}]\n    tool_ids: {tools}\n",
        encoding="utf-8",
    )
    with SpaceHost(folder / "state") as host:
        server = build_server(host.start(load_plugins([], plugins_dir=plugins)))
        try:
            async with (
                Client(server, mode="legacy", read_timeout_seconds=600) as a,
                Client(server, mode="legacy") as b,
            ):
                yield a, b, server
        finally:
            server.close()


async def while_listing(b: Any, work: Any) -> tuple[float, float]:
    """``work()``'s seconds, and B's slowest list meanwhile."""
    slowest = 0.0
    done = anyio.Event()

    async def lists() -> None:
        nonlocal slowest
        while not done.is_set():
            start = time.perf_counter()
            await b.list_tools()
            slowest = max(slowest, time.perf_counter() - start)
            await anyio.sleep(0.05)

    async with anyio.create_task_group() as tg:
        tg.start_soon(lists)
        start = time.perf_counter()
        await work()
        took = time.perf_counter() - start
        done.set()
    return took, slowest


def reader() -> dict[str, Any]:
    from agent_presets.server.mcp.upstream_stdio import _Lines

    found: dict[str, Any] = {}
    for mib in (2, 8, 32):
        data = b"x" * (mib * MIB) + b"\n"
        chunks = [data[i : i + 65536] for i in range(0, len(data), 65536)]
        start = time.perf_counter()
        lines = _Lines(1 << 30)
        for chunk in chunks:
            lines.feed(chunk)
        ours = time.perf_counter() - start
        start = time.perf_counter()
        buffer = ""
        for chunk in chunks:
            parts = (buffer + chunk.decode()).split("\n")
            buffer = parts.pop()
        found[f"{mib}MiB"] = {
            "ours_s": round(ours, 3),
            "sdk_way_s": round(time.perf_counter() - start, 3),
        }
    return found


async def main(as_json: bool) -> None:
    import tempfile

    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        async with served(Path(tmp) / "one") as (a, b, server):
            with anyio.fail_after(120):  # its first start may take longer than READY_WAIT
                while "space_fake_big" not in [t.name for t in (await a.list_tools()).tools]:
                    await anyio.sleep(0.2)
            await a.set_logging_level("info")
            # A text result is sent twice (its text, and as structured content): a
            # message of about twice the size asked for.
            for label, size in (("1MiB", MIB // 2), ("4MiB", 2 * MIB), ("8MiB", 4 * MIB - 4096)):
                took, slowest = await while_listing(
                    b, lambda size=size: a.call_tool("space_fake_big", {"size": size})
                )
                figures[f"big {label}"] = {"a_s": round(took, 2), "b_slowest_s": round(slowest, 2)}
            result: list[Any] = []

            async def giant() -> None:
                result.append(await a.call_tool("space_fake_big", {"size": 40_000_000}))

            took, slowest = await while_listing(b, giant)
            figures["big 40MB"] = {
                "a_s": round(took, 2),
                "b_slowest_s": round(slowest, 2),
                "error": result[0].is_error,
                "peak_rss_mb": round(peak_mb()),
            }
            with anyio.fail_after(120):  # it restarts on the next call, after its backoff
                while (await a.call_tool("space_fake_pid", {})).is_error:
                    await anyio.sleep(0.5)
            before = rss_mb()
            took, slowest = await while_listing(
                b, lambda: a.call_tool("space_fake_chatty", {"count": 20_000})
            )
            figures["flood 20000"] = {
                "a_s": round(took, 2),
                "b_slowest_s": round(slowest, 2),
                "rss_mb": [round(before), round(rss_mb())],
                "dropped": server.upstreams._connections["fake"].bounds.dropped["log"],
            }
            before = rss_mb()
            lists = server.upstreams.status()["fake"]["lists"]
            await a.call_tool("space_fake_flood_changes", {"count": 20_000})
            await a.call_tool("space_fake_pid", {})
            await anyio.sleep(2)
            figures["relists 20000"] = {
                "relists": server.upstreams.status()["fake"]["lists"] - lists,
                "rss_mb": [round(before), round(rss_mb())],
            }
        async with served(Path(tmp) / "two", "--delay", "3600", start_timeout=5) as (a, b, _s):
            slow: list[float] = []
            deadline = time.monotonic() + 30
            count = 0
            while time.monotonic() < deadline:
                start = time.perf_counter()
                if count % 2:
                    await b.call_tool("space_presets_request", {})
                else:
                    await b.list_tools()
                slow.append(time.perf_counter() - start)
                count += 1
                await anyio.sleep(0.25)
            figures["hung initialize"] = {
                "requests": count,
                "over_2s": sum(s > 2 for s in slow),
                "slowest_s": round(max(slow), 2),
            }
    figures["reader"] = reader()
    if as_json:
        print(json.dumps(figures, indent=2))
    else:
        for name, value in figures.items():
            print(f"{name}: {value}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    anyio.run(main, parser.parse_args().json)
