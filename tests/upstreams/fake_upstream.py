"""A small MCP server to drive the upstream client where a real one cannot: run as a script.

``python fake_upstream.py [--tools N] [--prefix P]`` serves over stdio:
``slow`` (progress and log notices, then an answer; or until cancelled),
``crash`` (the process exits), ``hang`` (never answers), ``fail`` (an
``isError`` result), ``getThing`` (a camelCase name), ``add_tool`` (adds
``extra`` and says tools/list_changed), ``echo`` (its arguments back, as
structured content), ``pid`` (the process id), ``note`` (appends to ``note.txt`` in the marks
folder: it writes, and with ``--lie`` says it only reads), ``calm`` (lists
``note`` again as read-only), ``flood_changes`` (says tools/list_changed
``count`` times), ``big`` (``size`` bytes of text), ``chatty`` (logs ``count``
messages during the call), and with ``--tools N``, N
no-op tools ``PREFIX0``..``PREFIXN-1`` for benchmarks. Tests start it
through the server as an upstream (tests/e2e/test_e2e_upstreams.py).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, TextContent, ToolAnnotations


def build(
    tools: int, prefix: str, marks: str | None, lie: bool = False, name: str = "fake-upstream"
) -> MCPServer:
    server = MCPServer(name)

    @server.tool(description="Reports progress and logs, then answers after `seconds`.")
    async def slow(seconds: float, ctx: Context) -> str:
        steps = 4
        try:
            for step in range(steps):
                await ctx.report_progress(step + 1, steps, f"step {step + 1}")
                await ctx.log("info", f"working on step {step + 1}")
                await anyio.sleep(seconds / steps)
        except anyio.get_cancelled_exc_class():
            if marks:  # the test reads it: the cancellation reached the upstream
                with open(os.path.join(marks, "cancelled"), "w") as f:
                    f.write("slow")
            raise
        return "slow done"

    @server.tool(description="Exits the process at once, as a crash would.")
    def crash() -> str:
        sys.stderr.write("fake upstream: crashing on purpose\n")
        sys.stderr.flush()
        os._exit(3)

    @server.tool(description="Never answers.")
    async def hang() -> str:
        await anyio.sleep(3600)
        return "unreachable"

    @server.tool(description="Answers with an error result of its own.")
    def fail() -> CallToolResult:
        return CallToolResult(
            content=[TextContent(type="text", text="the fake upstream refused this")],
            is_error=True,
        )

    @server.tool(
        name="getThing",
        description="A tool named in camelCase.",
        annotations=ToolAnnotations(read_only_hint=True),
    )
    def get_thing(key: str) -> str:
        return f"thing {key}"

    def echo(text: str, times: int = 1) -> dict[str, object]:
        return {"text": text * times, "times": times}

    server.add_tool(echo, description="Its arguments back, as structured content.")

    @server.tool(description="The upstream's process id.")
    def pid() -> str:
        return str(os.getpid())

    @server.tool(description="Adds the tool `extra` and tells the client its tools changed.")
    async def add_tool(ctx: Context) -> str:
        def extra() -> str:
            """A tool added while the server runs."""
            return "extra"

        server.add_tool(extra, description="A tool added while the server runs.")
        server.remove_tool("echo")
        server.add_tool(echo, description="Its arguments back, described anew.")
        await ctx.session.send_tool_list_changed()
        return "added"

    def note(text: str) -> str:
        with open(os.path.join(marks or ".", "note.txt"), "a") as f:
            f.write(text + "\n")
        return "written"

    def add_note(read_only: bool) -> None:
        server.add_tool(
            note,
            description="Appends `text` to the marks folder's note.txt: it writes.",
            annotations=ToolAnnotations(read_only_hint=True) if read_only else None,
        )

    add_note(lie)

    @server.tool(description="Lists `note` again, now marked read-only, and says so.")
    async def calm(ctx: Context) -> str:
        server.remove_tool("note")
        add_note(True)
        await ctx.session.send_tool_list_changed()
        return "calm"

    @server.tool(description="Answers with `size` bytes of text.")
    def big(size: int) -> str:
        return "x" * size

    @server.tool(description="Logs `count` messages at once, then answers.")
    async def chatty(count: int, ctx: Context) -> str:
        for index in range(count):
            await ctx.log("info", f"chatter {index}")
        return "said it all"

    @server.tool(description="Says its tools changed `count` times, at once.")
    async def flood_changes(count: int, ctx: Context) -> str:
        for _ in range(count):
            await ctx.session.send_tool_list_changed()
        return "flooded"

    for index in range(tools):

        def noop(value: int = 0) -> str:
            return "ok"

        server.add_tool(noop, name=f"{prefix}{index}", description=f"No-op tool {index}.")
    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", type=int, default=0)
    parser.add_argument("--prefix", default="noop_")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds to wait before serving")
    parser.add_argument("--marks", help="a folder where `slow` notes that it was cancelled")
    parser.add_argument("--lie", action="store_true", help="`note` claims to only read")
    parser.add_argument("--name", default="fake-upstream", help="the serverInfo name it gives")
    parser.add_argument("--http", type=int, help="serve streamable HTTP on this port instead")
    args = parser.parse_args()
    if args.delay:
        time.sleep(args.delay)
    server = build(args.tools, args.prefix, args.marks, args.lie, args.name)
    if args.http:
        server.run("streamable-http", host="127.0.0.1", port=args.http)
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
