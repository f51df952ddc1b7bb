"""Upstream MCP servers: what listing and forwarding cost.

Run: uv run python bench/upstreams.py [--rounds N] [--calls N] [--json]

Two figures, medians over the rounds:

- list: ``tools/list`` of a server whose presets narrow five upstreams of 30
  tools each (150 upstream tools, tests/upstreams/fake_upstream.py) to the 30
  the context needs, against the same server with 150 local no-op tools
  narrowed by the same presets. The client is the SDK's, in memory, legacy
  era; the upstreams are running and their lists cached (an upstream's list
  is read again only on its tools/list_changed), so the list never waits on
  them. Target: ratio <= 1.2.
- call: a ``tools/call`` of a no-op upstream tool through the server (client
  in memory -> pipeline -> the upstream over stdio) against the same call
  made by a client of the upstream itself, over its stdio; the figure is the
  median of the per-block differences (and of their ratios). Target: <= 1 ms.

Everything stays connected for the whole run, and blocks alternate between
the two sides of each figure, so the machine's load falls on both alike.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

HERE = Path(__file__).resolve().parent
FAKE = HERE.parent / "tests" / "upstreams" / "fake_upstream.py"
UPSTREAMS = 5
TOOLS = 30
ACTIVE = 6
"""Tools of each upstream an active preset lists: 30 of the 150."""
LIST_TARGET = 1.2
CALL_TARGET_MS = 1.0


def _folder(root: Path, *, upstream: bool) -> Path:
    folder = root / ("up" if upstream else "local")
    folder.mkdir()
    lines = []
    if upstream:
        lines.append("upstreams:")
        for u in range(UPSTREAMS):
            command = [sys.executable, str(FAKE), "--tools", str(TOOLS), "--prefix", "noop_"]
            lines.append(f"  - name: up{u}\n    command: {json.dumps(command)}")
    lines.append("presets:")
    for u in range(UPSTREAMS):
        for half in (0, 1):  # one preset on, one off: the presets narrow the list
            ids = [f"up{u}.noop_{i}" for i in range(half * ACTIVE, (half + 1) * ACTIVE)]
            state = "auto" if half == 0 else "off"
            lines.append(
                f"  - name: up{u}-{half}\n    default_state: {state}\n    risk: normal\n"
                f"    contexts: [{{surface: any}}]\n    tool_ids: {json.dumps(ids)}"
            )
    (folder / "presets.yaml").write_text("\n".join(lines) + "\n")
    if not upstream:
        (folder / "local_tools.py").write_text(
            _LOCAL_PLUGIN.format(upstreams=UPSTREAMS, tools=TOOLS)
        )
    return folder


_LOCAL_PLUGIN = """
import json
from pathlib import Path

from agent_presets import ToolAdapter, hookimpl

TOOLS = json.loads((Path(__file__).parent / "tools.json").read_text())


@hookimpl
def presets_tool_adapters():
    return [
        ToolAdapter(
            f"up{{u}}." + tool["name"],
            description=tool["description"],
            input_schema=tool["inputSchema"],
            output_schema=tool.get("outputSchema"),
            handler=lambda app, arguments: {{"result": "ok"}},
        )
        for u in range({upstreams})
        for tool in TOOLS
    ]
"""


async def _upstream_tools() -> list[dict[str, Any]]:
    """The fake upstream's noop tools as it lists them: the local tools are defined the same."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable, args=[str(FAKE), "--tools", str(TOOLS), "--prefix", "noop_"]
    )
    async with Client(params, mode="legacy") as client:
        listed = (await client.list_tools()).tools
    return [
        t.model_dump(by_alias=True, exclude_none=True, mode="json")
        for t in listed
        if t.name.startswith("noop_")
    ]


@asynccontextmanager
async def _served(folder: Path, stack: AsyncExitStack) -> Any:
    """A client, in memory, of the server of ``folder`` (its upstreams started by a list)."""
    from mcp import Client

    from agent_presets.lib.plugins import load_plugins
    from agent_presets.server.mcp import build_server
    from agent_presets_general import SpaceHost

    state = stack.enter_context(tempfile.TemporaryDirectory())
    host = stack.enter_context(SpaceHost(state))
    presets = host.start(load_plugins([], plugins_dir=folder))
    server = build_server(presets)
    stack.callback(server.close)
    client = await stack.enter_async_context(Client(server, mode="legacy"))
    # A list waits 5 s at most for the upstreams' first starts (READY_WAIT); on a busy
    # machine five take longer, and their tools come after.
    expected = UPSTREAMS * ACTIVE + 1  # and the presets_request tool
    with anyio.fail_after(120):
        while (count := len((await client.list_tools()).tools)) < expected:
            await anyio.sleep(0.2)
    assert count == expected, count
    yield client


async def _block(action: Any, size: int) -> float:
    start = time.perf_counter()
    for _ in range(size):
        await action()
    return (time.perf_counter() - start) / size


async def main(rounds: int, calls: int) -> dict[str, Any]:
    """Both servers and the direct client connected throughout; blocks alternate between them.

    The machine's load changes while a run lasts; alternating short blocks and
    taking the median of the per-block ratios (or differences) keeps that out
    of the figures.
    """
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        up, local = _folder(root, upstream=True), _folder(root, upstream=False)
        (local / "tools.json").write_text(json.dumps(await _upstream_tools()))
        (local / "local_tools.py").write_text(_LOCAL_PLUGIN.format(upstreams=UPSTREAMS))
        async with AsyncExitStack() as stack:
            up_client = await stack.enter_async_context(_served(up, stack))
            local_client = await stack.enter_async_context(_served(local, stack))
            params = StdioServerParameters(
                command=sys.executable,
                args=[str(FAKE), "--tools", str(TOOLS), "--prefix", "noop_"],
            )
            direct = await stack.enter_async_context(Client(params, mode="legacy"))
            args = {"value": 1}

            def lister(client: Any) -> Any:
                return client.list_tools

            def caller(client: Any, name: str) -> Any:
                return lambda: client.call_tool(name, args)

            forwarded = caller(up_client, "space_up0_noop_0")
            straight = caller(direct, "noop_0")
            for action in (lister(up_client), lister(local_client), forwarded, straight):
                await _block(action, 20)  # warm up
            lists: list[tuple[float, float]] = []
            hops: list[tuple[float, float]] = []
            for r in range(rounds * 10):
                pair = [lister(up_client), lister(local_client)]
                first, second = pair if r % 2 == 0 else pair[::-1]
                a, b = await _block(first, 10), await _block(second, 10)
                lists.append((a, b) if r % 2 == 0 else (b, a))
                pair = [forwarded, straight]
                first, second = pair if r % 2 == 0 else pair[::-1]
                size = max(1, calls // (rounds * 10))
                a, b = await _block(first, size), await _block(second, size)
                hops.append((a, b) if r % 2 == 0 else (b, a))
    list_ratio = statistics.median(u / v for u, v in lists)
    added_ms = statistics.median(f - d for f, d in hops) * 1000
    return {
        "list_upstream_ms": statistics.median(u for u, _ in lists) * 1000,
        "list_local_ms": statistics.median(v for _, v in lists) * 1000,
        "list_ratio": list_ratio,
        "list_ok": list_ratio <= LIST_TARGET,
        "call_forwarded_ms": statistics.median(f for f, _ in hops) * 1000,
        "call_direct_ms": statistics.median(d for _, d in hops) * 1000,
        "call_added_ms": added_ms,
        "call_ratio": statistics.median(f / d for f, d in hops),
        "call_ok": added_ms <= CALL_TARGET_MS,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    figures = anyio.run(main, args.rounds, args.calls)
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print(
            f"tools/list, 30 of 150 upstream tools: {figures['list_upstream_ms']:.2f} ms, "
            f"local: {figures['list_local_ms']:.2f} ms, ratio {figures['list_ratio']:.2f} "
            f"(target <= {LIST_TARGET}) {'ok' if figures['list_ok'] else 'OVER'}"
        )
        print(
            f"tools/call forwarded: {figures['call_forwarded_ms']:.3f} ms, direct: "
            f"{figures['call_direct_ms']:.3f} ms, added {figures['call_added_ms']:.3f} ms, "
            f"ratio {figures['call_ratio']:.2f} "
            f"(target <= {CALL_TARGET_MS} ms added) {'ok' if figures['call_ok'] else 'OVER'}"
        )
    sys.exit(0 if figures["list_ok"] and figures["call_ok"] else 1)
