"""`presets serve` as users run it, in both protocol eras, against a bare ``mcp`` server.

Run: uv run python bench/eras.py [--rounds N] [--transports stdio,http]
     [--eras legacy,2026-07-28] [--figures first-list,list,call] [--quick] [--json]
     [--ablate PARTS]

What is measured is the real command: ``python -m agent_presets serve`` with
the built-in plugins, the Space host on a state folder, the event log on
and every other option at its default (``--transport http --port 0`` for
HTTP). The baseline is an idiomatic low-level ``mcp`` server that serves the
same ``tools/list`` and answers the call with the same result: before timing,
the script asks ``presets serve`` once, in each era, for its tool list and for
the result of one read-only built-in tool (``space_unit_list``, active in the
default context; ``--tool`` and ``--arguments`` choose another), and the bare
server replays exactly those (with the same server name, version and cache
hints). The script checks that both servers' answers read the same to the
client before it times anything.

The client is the SDK's ``mcp.Client``: ``mode="legacy"`` (the 2025-11-25
handshake) or ``mode="2026-07-28"``; over HTTP it is made with the SDK's
streamable HTTP client, over stdio from ``StdioServerParameters``. Figures,
each one for every transport and era:

- first-list: spawn -> (initialize) -> first ``tools/list`` answer, three
  spawns of each server a round, alternating; a spawn of ``presets serve``
  resumes the saved state of the run's state folder, as a restart does;
- list: a ``tools/list`` over a connection in use;
- call: a ``tools/call`` of the read-only tool over a connection in use.

For list and call both servers are connected at once and the requests go in
blocks of ``--block`` (20) that alternate between them, so a change in the
shared machine's load hits both alike; a round is ``--blocks`` (10) blocks of
each. Reported: the median time of one request over all blocks, and the
median of the per-block ratios (presets / bare), the figure judged. Targets
(ratio to bare): call and first-list <= 1.10, list <= 1.00.

What a part costs: ``--ablate PARTS`` (a comma list of ``priming``,
``event-store``, ``envelope``, ``event-log``) starts ``presets serve``
without those parts (``bench/ablate.py``), e.g. ``--transports http
--figures call --ablate priming`` for the 2025-11-25 priming event's share
of a call as a client sees it; every part is a guarantee users have, so the
figures of such a run are not the ones judged.

``--bare-event-store`` gives the bare HTTP server the SDK example's event
store (``BareEventStore``): its 2025-11-25 streams are then resumable like
ours, a priming event first and an id on every event, so the ratio leaves
out what resumable streams cost, for a server built with them.

Profiling: ``--profile FILE`` runs the servers (both transports) under
cProfile, writing one profile per spawned server as FILE.KIND.N (KIND is
presets or bare; read them with ``python -m pstats``); ``--wrap PREFIX`` puts
a command before them instead, ``{n}`` in it standing for KIND.N, e.g. a
sampling profiler:
``--wrap "py-spy record -r 997 -f raw -o spy.{n} --"``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

from ablate import PARTS as ABLATE_PARTS  # bench/ is on sys.path

ERAS = ("legacy", "2026-07-28")
TRANSPORTS = ("stdio", "http")
FIGURES = ("first-list", "list", "call")
TARGETS = {"first-list": 1.10, "list": 1.00, "call": 1.10}
TOOL = "space_unit_list"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"


# ------------------------------------------------------------------ the bare server


class _NoRequest:
    """What the ``tools/call`` handler reads of the SDK's request context: no request."""

    request = None
    meta = None


async def handler_call(server: Any, params: Any, repeat: int) -> float:
    """Seconds of one ``tools/call`` through ``server``'s own handler (no SDK, no wire),
    the mean of ``repeat`` calls; each must succeed."""
    start = time.perf_counter()
    for _ in range(repeat):
        result = await server._call_tool(_NoRequest(), params)
    assert not result.get("isError"), result
    return (time.perf_counter() - start) / repeat


def serve_bare(
    fixture_path: str, transport: str, handler: bool = False, event_store: bool = False
) -> None:
    """The baseline: a low-level server replaying what ``presets serve`` answered.

    ``event_store``: over HTTP, with ``BareEventStore``, so that its
    2025-11-25 streams are resumable as ``presets serve``'s are (a priming
    event, an id on every event).
    """
    import anyio
    import mcp_types as types
    from mcp.server.caching import CacheHint
    from mcp.server.lowlevel import NotificationOptions, Server

    fixture = json.loads(Path(fixture_path).read_text())
    # Prebuilt models, as an idiomatic server keeps them: the pages by cursor, the result.
    pages = {
        page.get("cursor"): types.ListToolsResult.model_validate(page["result"])
        for page in fixture["pages"]
    }
    result = types.CallToolResult.model_validate(fixture["result"])
    tools = [tool for page in fixture["pages"] for tool in page["result"]["tools"]]
    schemas = {tool["name"]: tool["inputSchema"] for tool in tools}

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return pages[params.cursor if params is not None else None]

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return result

    if handler:
        # The ablation: the bare server, but answering calls with presets serve's own
        # tools/call handler (same plugins, host and event log), so what is left
        # between it and presets serve is everything but the handler.
        presets_server = _presets_server()

        async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> Any:  # type: ignore[misc]
            return await presets_server._call_tool(ctx, params)

    no_cache = CacheHint(ttl_ms=0, scope="private")
    server: Server[Any] = Server(
        fixture["server"]["name"],
        version=fixture["server"]["version"],
        title=fixture["server"].get("title"),
        cache_hints={"tools/list": no_cache, "prompts/list": no_cache},
        get_tool_input_schema=schemas.get,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    options = server.create_initialization_options(NotificationOptions(tools_changed=True))

    if transport == "stdio":
        from mcp.server.stdio import stdio_server

        async def main() -> None:
            async with stdio_server() as (read_stream, write_stream):
                await server.run(read_stream, write_stream, options)

        anyio.run(main)
        return

    import uvicorn

    # uvicorn's own bind (host and port), as `uvicorn.run(app, ...)` does it.
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    app = server.streamable_http_app(
        streamable_http_path="/mcp",
        host="127.0.0.1",
        event_store=BareEventStore() if event_store else None,
    )
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", lifespan="on", access_log=False
    )
    uv_server = uvicorn.Server(config)

    async def main_http() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(uv_server.serve)
            while not uv_server.started:
                await anyio.sleep(0.01)
            print(f"serving MCP on http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)

    anyio.run(main_http)


class BareEventStore:
    """The in-memory event store of the SDK's example server, as a bare server would keep one.

    Each stream's last 100 events, ids from ``uuid4``; no bound across
    streams or sessions (the example's own choices, kept).
    """

    def __init__(self, per_stream: int = 100) -> None:
        self.per_stream = per_stream
        self.streams: dict[str, deque[str]] = {}
        self.events: dict[str, tuple[str, Any]] = {}

    async def store_event(self, stream_id: str, message: Any) -> str:
        event_id = str(uuid.uuid4())
        stream = self.streams.get(stream_id)
        if stream is None:
            stream = self.streams[stream_id] = deque(maxlen=self.per_stream)
        if len(stream) == stream.maxlen:
            self.events.pop(stream[0], None)
        stream.append(event_id)
        self.events[event_id] = (stream_id, message)
        return event_id

    async def replay_events_after(self, last_event_id: str, send_callback: Any) -> str | None:
        from mcp.server.streamable_http import EventMessage

        found = self.events.get(last_event_id)
        if found is None:
            return None
        stream_id = found[0]
        after = False
        for event_id in list(self.streams.get(stream_id, ())):
            if after:
                message = self.events[event_id][1]
                if message is not None:
                    await send_callback(EventMessage(message, event_id))
            after = after or event_id == last_event_id
        return stream_id


# ------------------------------------------------------------------ starting servers


class Servers:
    """How to start each server, on one state folder and one fixture per era."""

    def __init__(
        self,
        profile: str | None,
        wrap: str | None = None,
        serve_args: Sequence[str] = (),
        ablate: Sequence[str] = (),
    ) -> None:
        self.serve_args = list(serve_args)
        self.ablate = list(ablate)
        """Parts taken away from ``presets serve`` (``bench/ablate.py``); ``event-log`` too."""
        self.bare_runs_handler = False
        self.bare_event_store = False
        self.folder = Path(tempfile.mkdtemp(prefix="presets-bench-eras-"))
        self.state_dir = self.folder / "state"
        self.profile = profile
        self.wrap = wrap
        self.profiles = 0
        self.last_pid: int | None = None
        """The process of the server the last ``client()`` connected to, where known."""
        self.devnull = open(os.devnull, "w")  # noqa: SIM115 (open for the whole run)

    def fixture(self, era: str) -> Path:
        return self.folder / f"fixture-{era}.json"

    def _python(self, kind: str, transport: str) -> list[str]:
        """The interpreter's command line, under the profiler for a stdio server."""
        command = [sys.executable]
        if self.profile or self.wrap:
            self.profiles += 1
            n = f"{kind}.{self.profiles}"
            if self.wrap:
                command = [*shlex.split(self.wrap.replace("{n}", n)), *command]
            else:
                command += ["-m", "cProfile", "-o", f"{self.profile}.{n}"]
        return command

    def presets_command(self, transport: str) -> list[str]:
        command = self._python("presets", transport)
        patched = [part for part in self.ablate if part != "event-log"]
        if patched:
            command += [str(Path(__file__).with_name("ablate.py")), ",".join(patched)]
        else:
            command += ["-m", "agent_presets"]
        command += ["serve", "--state-dir", str(self.state_dir)]
        if transport == "http":
            command += ["--transport", "http", "--port", "0"]
        if "event-log" in self.ablate:
            command.append("--no-event-log")
        return command + self.serve_args

    def bare_command(self, transport: str, era: str) -> list[str]:
        script = str(Path(__file__).resolve())
        return [
            *self._python("bare", transport),
            script,
            "--serve-bare",
            str(self.fixture(era)),
            "--via",
            transport,
            *(["--bare-runs-handler"] if self.bare_runs_handler else []),
            *(["--bare-event-store"] if self.bare_event_store else []),
        ]

    def command(self, kind: str, transport: str, era: str) -> list[str]:
        if kind == "presets":
            return self.presets_command(transport)
        return self.bare_command(transport, era)

    @asynccontextmanager
    async def client(self, kind: str, transport: str, era: str) -> AsyncIterator[Any]:
        """A connected ``mcp.Client`` to a server spawned for it (stopped on exit)."""
        from mcp import Client
        from mcp.client.stdio import StdioServerParameters, stdio_client

        command = self.command(kind, transport, era)
        if transport == "stdio":
            params = StdioServerParameters(command=command[0], args=command[1:])
            before = _children()
            async with Client(stdio_client(params, errlog=self.devnull), mode=era) as client:
                new = _children() - before
                self.last_pid = new.pop() if len(new) == 1 else None
                yield client
            return
        process, url = spawn_http(command)
        self.last_pid = process.pid
        try:
            async with Client(url, mode=era) as client:
                yield client
        finally:
            # SIGINT lets a profiled server write its profile (it dies of SIGTERM).
            process.send_signal(signal.SIGINT if self.profile or self.wrap else signal.SIGTERM)
            process.wait(timeout=30)


ABLATABLE = (*ABLATE_PARTS, "event-log")
"""What ``--ablate`` can take away: ``bench/ablate.py``'s parts and the event log."""


def ablation(text: str) -> list[str]:
    """``--ablate``'s comma list, checked; SystemExit naming an unknown part."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    unknown = sorted(set(parts) - set(ABLATABLE))
    if unknown:
        raise SystemExit(
            f"--ablate: unknown part {unknown[0]!r}; choose from {', '.join(ABLATABLE)}"
        )
    return parts


def children_of(pid: int) -> set[int]:
    """The processes whose parent is ``pid`` (Linux's /proc)."""
    found = set()
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                stat = Path(entry.path, "stat").read_text()
            except OSError:
                continue
            if int(stat.rpartition(")")[2].split()[1]) == pid:
                found.add(int(entry.name))
    return found


def _children() -> set[int]:
    """The processes whose parent is this one."""
    return children_of(os.getpid())


def cpu_seconds(pid: int | None) -> float:
    """CPU time of process ``pid`` so far, all its threads, in ns steps (0 if unknown).

    The sum of each thread's ``schedstat`` run time; a thread that has ended
    no longer counts, which the servers' long-lived threads make harmless.
    """
    if pid is None:
        return 0.0
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0.0
    for task in tasks:
        try:
            total += int(Path(f"/proc/{pid}/task/{task}/schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return total / 1e9


def _pool_threads(pid: int | None) -> int:
    """How many of the server's threads are its tool pool's (named presets-tool_N)."""
    if pid is None:
        return 0
    found = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for task in tasks:
        try:
            found += Path(f"/proc/{pid}/task/{task}/comm").read_text().startswith("presets-tool")
        except OSError:
            continue
    return found


def spawn_http(
    command: list[str], environ: Mapping[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """Start an HTTP server; return it and the MCP URL of its banner line on stderr.

    ``environ``: the server's environment, this process's by default.
    """
    # As a user's machine runs it: modules compiled once and their bytecode kept (a
    # PYTHONDONTWRITEBYTECODE here would make each spawn compile what has no .pyc yet, the
    # servers' own modules first). A stdio server gets the SDK's default environment,
    # which has no such variable either.
    given = os.environ if environ is None else environ
    env = {k: v for k, v in given.items() if k != "PYTHONDONTWRITEBYTECODE"}
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert process.stderr is not None
    for raw in process.stderr:
        match = re.search(r"http://127\.0\.0\.1:\d+/mcp", raw.decode())
        if match:
            # Nothing reads stderr any more; the servers write nothing more to it.
            return process, match.group(0)
    process.wait()
    raise RuntimeError(f"{command[:4]} did not print its URL (exit code {process.returncode})")


# ------------------------------------------------------------------ the fixture


def _dump(model: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


def _comparable(dumped: dict[str, Any]) -> dict[str, Any]:
    """A result as compared between the servers: the SDK's server-info stamp set aside."""
    meta = {k: v for k, v in dumped.get("_meta", {}).items() if k != SERVER_INFO_KEY}
    out = {k: v for k, v in dumped.items() if k != "_meta"}
    if meta:
        out["_meta"] = meta
    return out


async def answers(client: Any, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Every page of ``tools/list`` and one call's result, as the client reads them."""
    pages = []
    cursor = None
    while True:
        page = await client.list_tools(cursor=cursor)
        pages.append({"cursor": cursor, "result": _comparable(_dump(page))})
        cursor = page.next_cursor
        if cursor is None:
            break
    result = await client.call_tool(tool, arguments)
    return {"pages": pages, "result": _comparable(_dump(result))}


async def capture(servers: Servers, era: str, tool: str, arguments: dict[str, Any]) -> None:
    """Ask ``presets serve`` (stdio) for its answers in ``era``; write the bare server's fixture."""
    async with servers.client("presets", "stdio", era) as client:
        got = await answers(client, tool, arguments)
    if got["result"].get("isError"):
        raise SystemExit(f"{tool} failed on presets serve: {got['result']}")
    names = [t["name"] for page in got["pages"] for t in page["result"]["tools"]]
    if tool not in names:
        raise SystemExit(f"{tool} is not listed by presets serve; pass --tool one of {names}")
    from agent_presets import __version__
    from agent_presets.server.mcp.server import SERVER_NAME

    server = {"name": SERVER_NAME, "version": __version__, "title": "agent-presets"}
    servers.fixture(era).write_text(json.dumps({**got, "server": server}))


async def check_same(
    servers: Servers, transport: str, era: str, tool: str, arguments: dict[str, Any]
) -> None:
    """Both servers answer the same, as the client reads it, or the run stops."""
    seen = {}
    for kind in ("presets", "bare"):
        async with servers.client(kind, transport, era) as client:
            seen[kind] = await answers(client, tool, arguments)
    if seen["presets"] != seen["bare"]:
        raise SystemExit(
            f"the bare server's answers differ from presets serve's ({transport}, {era}):\n"
            f"  presets: {json.dumps(seen['presets'])[:600]}\n"
            f"  bare:    {json.dumps(seen['bare'])[:600]}"
        )


# ------------------------------------------------------------------ measuring


async def first_list(servers: Servers, kind: str, transport: str, era: str) -> float:
    start = time.perf_counter()
    async with servers.client(kind, transport, era) as client:
        await client.list_tools()
        return time.perf_counter() - start


async def blocks(
    servers: Servers,
    transport: str,
    era: str,
    figures: Sequence[str],
    tool: str,
    arguments: dict[str, Any],
    block: int,
    count: int,
    flip: bool,
) -> dict[str, dict[str, list[float]]]:
    """Per figure and server, the time of each block of ``block`` requests (both connected).

    Also, under ``"cpu"``, each server's CPU seconds per request of the figure.
    """
    times: dict[str, dict[str, list[float]]] = {f: {"presets": [], "bare": []} for f in figures}
    cpu: dict[str, dict[str, float]] = {f: {"presets": 0.0, "bare": 0.0} for f in figures}
    async with AsyncExitStack() as stack:
        clients = {}
        pids = {}
        for kind in ("presets", "bare"):
            clients[kind] = await stack.enter_async_context(servers.client(kind, transport, era))
            pids[kind] = servers.last_pid
        requests: dict[str, Callable[[Any], Awaitable[Any]]] = {
            "list": lambda c: c.list_tools(),
            "call": lambda c: c.call_tool(tool, arguments),
        }
        for client in clients.values():
            for _ in range(20):  # warm up: the first call of a tool pays for what is done once
                await client.list_tools()
                await client.call_tool(tool, arguments)
        kinds = ["presets", "bare"] if flip else ["bare", "presets"]
        for b in range(count):
            for figure in figures:
                request = requests[figure]
                for kind in kinds if b % 2 == 0 else reversed(kinds):
                    client = clients[kind]
                    used = cpu_seconds(pids[kind])
                    start = time.perf_counter()
                    for _ in range(block):
                        await request(client)
                    times[figure][kind].append((time.perf_counter() - start) / block)
                    cpu[figure][kind] += cpu_seconds(pids[kind]) - used
        pooled = _pool_threads(pids["presets"])
        if pooled:
            # A call judged slow (the machine's load can do that) sends its tool to the pool.
            print(
                f"note: presets serve ({transport}, {era}) ran calls on {pooled} pool thread(s)",
                file=sys.stderr,
                flush=True,
            )
    for figure in figures:
        times[f"cpu:{figure}"] = {k: [v / (block * count)] for k, v in cpu[figure].items()}
    return times


def run(args: argparse.Namespace) -> dict[str, Any]:
    import anyio

    arguments = json.loads(args.arguments)
    servers = Servers(args.profile, args.wrap, shlex.split(args.serve_args), ablation(args.ablate))
    servers.bare_runs_handler = args.bare_runs_handler
    servers.bare_event_store = args.bare_event_store
    for era in args.eras:
        anyio.run(capture, servers, era, args.tool, arguments)
    for transport in args.transports:
        for era in args.eras:
            anyio.run(check_same, servers, transport, era, args.tool, arguments)
    print("fixtures captured; both servers answer alike", file=sys.stderr, flush=True)

    rows: dict[tuple[str, str, str], dict[str, list[float]]] = {}
    ratios: dict[tuple[str, str, str], list[float]] = {}
    for r in range(args.rounds):
        for transport in args.transports:
            for era in args.eras:
                if "first-list" in args.figures:
                    key = (transport, era, "first-list")
                    row = rows.setdefault(key, {"presets": [], "bare": []})
                    for s in range(3):
                        pair = ("bare", "presets") if (r + s) % 2 == 0 else ("presets", "bare")
                        got = {
                            kind: anyio.run(first_list, servers, kind, transport, era)
                            for kind in pair
                        }
                        for kind, value in got.items():
                            row[kind].append(value)
                        ratios.setdefault(key, []).append(got["presets"] / got["bare"])
                steady = [f for f in ("list", "call") if f in args.figures]
                if steady:
                    times = anyio.run(
                        blocks, servers, transport, era, steady, args.tool, arguments,
                        args.block, args.blocks, r % 2 == 1,
                    )  # fmt: skip
                    for figure, by_kind in times.items():
                        key = (transport, era, figure)
                        row = rows.setdefault(key, {"presets": [], "bare": []})
                        for kind in ("presets", "bare"):
                            row[kind] += by_kind[kind]
                        ratios.setdefault(key, []).extend(
                            p / b for p, b in zip(by_kind["presets"], by_kind["bare"], strict=True)
                        )
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)

    report: dict[str, Any] = {
        "rounds": args.rounds,
        "tool": args.tool,
        "load_average": os.getloadavg(),
        "figures": [],
        "cpu": [],
    }
    for (transport, era, figure), by_kind in rows.items():
        if figure.startswith("cpu:"):
            # Server CPU per request, summed over the run's blocks.
            bare, ours = sum(by_kind["bare"]), sum(by_kind["presets"])
            report["cpu"].append(
                {
                    "transport": transport,
                    "era": era,
                    "figure": figure[4:],
                    "bare_s": bare / args.rounds,
                    "presets_s": ours / args.rounds,
                    "ratio": ours / bare if bare else None,
                }
            )
            continue
        ratio = statistics.median(ratios[(transport, era, figure)])
        report["figures"].append(
            {
                "transport": transport,
                "era": era,
                "figure": figure,
                "bare_s": statistics.median(by_kind["bare"]),
                "presets_s": statistics.median(by_kind["presets"]),
                "median_ratio": ratio,
                "samples": len(ratios[(transport, era, figure)]),
                "target": TARGETS[figure],
                "ok": ratio <= TARGETS[figure],
            }
        )
    return report


def _per_call(fn: Any, repeat: int = 2000) -> float:
    """Median seconds of one ``fn()`` over 7 batches of ``repeat`` calls."""
    samples = []
    for _ in range(7):
        start = time.perf_counter()
        for _ in range(repeat):
            fn()
        samples.append((time.perf_counter() - start) / repeat)
    return statistics.median(samples)


def _presets_server(event_log: bool = True) -> Any:
    """A server built as ``presets serve`` builds it (the Space host, installed plugins)."""
    from agent_presets.cli.options import installed_plugins
    from agent_presets.lib.tools import ToolRegistry
    from agent_presets.server import ServeConfig
    from agent_presets.server.mcp.server import build_server
    from agent_presets.server.policy import ToolPolicy
    from agent_presets_general import SpaceHost

    state = Path(tempfile.mkdtemp(prefix="presets-bench-parts-"))
    app = SpaceHost(state, None)
    presets = app.start(installed_plugins(), tool_registry=ToolRegistry("space_"))
    log = state / "events.jsonl" if event_log else None
    return build_server(presets, ServeConfig(policy=ToolPolicy(event_log=log)))


def _settled() -> None:
    """Wait out the units plugin's racy window for the state folder just made.

    ``space_unit_list`` trusts no stat taken within 2 s of its file's times
    (``agent_presets_units.units.RACY_NS``), so right after the folder is made
    it reads the folder afresh on every call; a user's units folder is older.
    """
    time.sleep(2.1)


def parts(
    tool_name: str, arguments: dict[str, Any], rounds: int = 9, repeat: int = 1000
) -> list[tuple[str, float]]:
    """In process: what one call of ``tool_name`` costs in the server's ``tools/call`` handler.

    Two servers are built as ``presets serve`` builds one (the Space host, the
    installed plugins), one with the event log and one without, and their
    handlers are awaited in a loop (no SDK, no wire), alternating with the
    tool's own ``run`` (argument check, the plugin's handler, result check).
    The parts are differences of these medians, not profiler shares:
    profilers either inflate code of many small calls (cProfile) or, sampled
    from a thread, see the loop only where it lets go of the interpreter.
    """
    import anyio
    import mcp_types as types

    servers = {logged: _presets_server(logged) for logged in (True, False)}
    _settled()
    tool = servers[False].presets.tool_registry.get(tool_name)
    if tool is None:
        raise SystemExit(f"{tool_name} is not active in the default context")
    params = types.CallToolRequestParams(name=tool_name, arguments=dict(arguments))

    async def handler(server: Any) -> float:
        return await handler_call(server, params, repeat)

    def run() -> float:
        start = time.perf_counter()
        for _ in range(repeat):
            tool.run(dict(arguments))
        return (time.perf_counter() - start) / repeat

    times: dict[str, list[float]] = {"logged": [], "unlogged": [], "run": []}
    try:
        for r in range(rounds + 1):
            got = {
                "logged": anyio.run(handler, servers[True]),
                "unlogged": anyio.run(handler, servers[False]),
                "run": run(),
            }
            if r:  # the first round warms up
                for key, value in got.items():
                    times[key].append(value)
    finally:
        for server in servers.values():
            server.close()
    logged, unlogged, own = (statistics.median(times[k]) for k in ("logged", "unlogged", "run"))
    return [
        ("the server's tools/call handler, whole", logged),
        ("  the tool's own run (argument check, handler, result check)", own),
        ("  the event-log line (with the log minus without)", logged - unlogged),
        ("  the rest: pipeline, gates, budgets, telemetry, result dict", unlogged - own),
    ]


def stages(
    tool_name: str, arguments: dict[str, Any], rounds: int = 9, repeat: int = 2000
) -> list[tuple[str, float]]:
    """In process: each stage's share of one call of ``tool_name``, from an instrumented profile.

    The server is built as ``presets serve`` builds one (the Space host, the
    installed plugins, the event log on), and its pipeline rebuilt with every
    stage wrapped in a timer: a stage's own time is its time inclusive minus
    that of the stages after it. Inside ``Record``, the event-log line
    (``ToolPolicy.write``) and telemetry's record are timed apart; inside
    ``Run``, the tool's own run (``ToolCalls.run``: argument check skipped,
    the plugin's handler, result check). "Outside the pipeline" is the rest of
    the handler: the ``PendingCall`` and the telemetry span of ``run_call``.
    A timer costs about 0.1 us a stage, counted in that stage. Each share is
    the median of ``rounds`` rounds of ``repeat`` calls, times the median call.
    """
    import anyio
    import mcp_types as types

    from agent_presets.server.mcp.pipeline import Pipeline

    server = _presets_server(True)
    if server.presets.tool_registry.get(tool_name) is None:
        raise SystemExit(f"{tool_name} is not active in the default context")
    _settled()
    params = types.CallToolRequestParams(name=tool_name, arguments=dict(arguments))
    clock = time.perf_counter
    spent: dict[str, float] = {}

    class Timed:
        def __init__(self, stage: Any) -> None:
            self.stage = stage
            self.name = type(stage).__name__
            spent[self.name] = 0.0

        async def handle(self, call: Any, call_next: Any) -> Any:
            start = clock()
            try:
                return await self.stage.handle(call, call_next)
            finally:
                spent[self.name] += clock() - start

    def timed(owner: Any, attribute: str, label: str, coroutine: bool = False) -> None:
        inner = getattr(owner, attribute)
        spent[label] = 0.0
        if coroutine:

            async def wrapper_async(*a: Any, **k: Any) -> Any:
                start = clock()
                try:
                    return await inner(*a, **k)
                finally:
                    spent[label] += clock() - start

            setattr(owner, attribute, wrapper_async)
            return

        def wrapper(*a: Any, **k: Any) -> Any:
            start = clock()
            try:
                return inner(*a, **k)
            finally:
                spent[label] += clock() - start

        setattr(owner, attribute, wrapper)

    chain = [Timed(stage) for stage in server.serving.pipeline.stages]
    names = [t.name for t in chain]
    server.serving.pipeline = Pipeline(chain)
    timed(server.policy, "write", "log")
    timed(server.telemetry, "record", "telemetry")
    timed(server.calls, "run", "tool", coroutine=True)

    class Ctx:  # what the handler reads of the SDK's request context
        request = None
        meta = None

    async def loop() -> float:
        start = clock()
        for _ in range(repeat):
            result = await server._call_tool(Ctx(), params)
        assert not result.get("isError"), result
        return clock() - start

    rows: dict[str, list[float]] = {}
    try:
        for r in range(rounds + 1):
            for key in spent:
                spent[key] = 0.0
            whole = anyio.run(loop)
            if not r:  # the first round warms up
                continue
            after = [*names[1:], ""]
            own = {
                n: spent[n] - (spent[m] if m else 0.0) for n, m in zip(names, after, strict=True)
            }
            own["Record"] -= spent["log"] + spent["telemetry"]
            own["Run"] -= spent["tool"]
            got = {
                "whole": whole,
                "outside": whole - spent[names[0]],
                **own,
                "log": spent["log"],
                "telemetry": spent["telemetry"],
                "tool": spent["tool"],
            }
            for key, value in got.items():
                rows.setdefault(key, []).append(value / whole)
            rows.setdefault("", []).append(whole / repeat)
    finally:
        server.close()
    # Shares per round, then their medians: the machine's load moves whole rounds.
    per_call = statistics.median(rows.pop(""))
    med = {key: statistics.median(values) * per_call for key, values in rows.items()}
    labels = {
        "whole": "the server's tools/call handler, whole",
        "outside": "  outside the pipeline: PendingCall, run_call's span",
        "Record": "  Record: timing, the CallRecord (its sinks below)",
        "log": "    the event-log line (ToolPolicy.write)",
        "telemetry": "    telemetry's record (no SDK: metrics no-ops)",
        "Run": "  Run: context, result dict (the tool's run below)",
        "tool": "    the tool's own run (ToolCalls.run: handler, result check)",
    }
    order = ["whole", "outside", "Record", "log", "telemetry"]
    order += [n for n in names if n not in ("Record", "Run")] + ["Run", "tool"]
    return [(labels.get(key, f"  {key}"), med[key]) for key in order]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve-bare", metavar="FIXTURE", help=argparse.SUPPRESS)
    parser.add_argument("--via", choices=TRANSPORTS, default="stdio", help=argparse.SUPPRESS)
    parser.add_argument(
        "--bare-runs-handler",
        action="store_true",
        help="ablation: the bare server answers calls with presets serve's own handler",
    )
    parser.add_argument(
        "--bare-event-store",
        action="store_true",
        help="the bare HTTP server keeps an event store (resumable streams, as ours)",
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--transports", default=",".join(TRANSPORTS))
    parser.add_argument("--eras", default=",".join(ERAS))
    parser.add_argument("--figures", default=",".join(FIGURES))
    parser.add_argument("--block", type=int, default=20, help="requests per block [20]")
    parser.add_argument("--blocks", type=int, default=10, help="blocks of each server a round [10]")
    parser.add_argument("--tool", default=TOOL, help=f"the read-only tool to call [{TOOL}]")
    parser.add_argument("--arguments", default="{}", help="its arguments, as JSON [{}]")
    parser.add_argument(
        "--serve-args", default="", help="more options for presets serve (to take parts away)"
    )
    parser.add_argument("--profile", metavar="FILE", help="cProfile the stdio servers")
    parser.add_argument("--wrap", metavar="PREFIX", help="a command before the stdio servers")
    parser.add_argument("--quick", action="store_true", help="1 round of 4 blocks of 10")
    parser.add_argument(
        "--ablate",
        default="",
        metavar="PARTS",
        help=f"take parts away from presets serve to see their cost: {', '.join(ABLATABLE)}",
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--parts", action="store_true", help="time the parts of one call, in process"
    )
    parser.add_argument(
        "--stages", action="store_true", help="each stage's share of one call, in process"
    )
    args = parser.parse_args(argv)
    if args.serve_bare:
        serve_bare(args.serve_bare, args.via, args.bare_runs_handler, args.bare_event_store)
        return 0
    for name, allowed in (("transports", TRANSPORTS), ("eras", ERAS), ("figures", FIGURES)):
        chosen = [v.strip() for v in getattr(args, name).split(",") if v.strip()]
        if not chosen or (unknown := sorted(set(chosen) - set(allowed))):
            what = f"unknown {unknown[0]!r}" if chosen else "nothing chosen"
            parser.error(f"--{name}: {what}; use some of {', '.join(allowed)}")
        setattr(args, name, chosen)
    if args.parts:
        for label, seconds in parts(args.tool, json.loads(args.arguments)):
            print(f"  {label:<64} {seconds * 1e6:7.1f} us")
        return 0
    if args.stages:
        rows = stages(args.tool, json.loads(args.arguments))
        whole = rows[0][1]
        for label, seconds in rows:
            print(f"  {label:<64} {seconds * 1e6:7.2f} us {seconds / whole:6.1%}")
        return 0
    if args.quick:
        args.rounds, args.block, args.blocks = 1, 10, 4
    report = run(args)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"presets serve vs bare mcp server, {args.tool}; {args.rounds} rounds; "
        f"load average at the end {load}"
    )
    print(
        f"  {'transport':<9} {'era':<10} {'figure':<10} {'bare':>10} {'presets':>10}  ratio  target"
    )
    ok = True
    for fig in report["figures"]:
        ok = ok and fig["ok"]
        print(
            f"  {fig['transport']:<9} {fig['era']:<10} {fig['figure']:<10} "
            f"{fig['bare_s'] * 1000:8.2f}ms {fig['presets_s'] * 1000:8.2f}ms  "
            f"{fig['median_ratio']:.2f}x  <= {fig['target']:.2f} {'ok' if fig['ok'] else 'OVER'}"
        )
    print("  server CPU per request (all threads, /proc/PID/task/*/schedstat):")
    for cpu in report["cpu"]:
        ratio = f"{cpu['ratio']:.2f}x" if cpu["ratio"] else "-"
        print(
            f"  {cpu['transport']:<9} {cpu['era']:<10} {cpu['figure']:<10} "
            f"{cpu['bare_s'] * 1e6:8.0f}us {cpu['presets_s'] * 1e6:8.0f}us  {ratio}"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
