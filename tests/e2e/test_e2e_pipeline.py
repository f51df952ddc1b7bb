"""The call pipeline: every outcome of a call is one event-log line and one span, alike.

A call is run through the real server's pipeline (``PresetServer.run_call``,
what ``tools/call`` does) with a token where the case needs one, inside a
recording parent span, as the SDK's request span is; the in-memory exporter
and the event log then show what each outcome left behind. Two cases go
through a real MCP client in both eras, to show the transport adds nothing.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from e2e import test_e2e_otel as otel
from mcp import Client
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent_presets.server.events import read_events
from agent_presets.server.mcp.pipeline import CallRefused, Next, PendingCall, Result, Stage
from agent_presets.server.mcp.server import PresetServer
from agent_presets.server.policy import Allowed, Profile, ToolPolicy
from agent_presets.server.store import StoreUnavailableError
from agent_presets_general import SpaceHost

pytestmark = pytest.mark.anyio

THEME = "space_app_set_theme"
WRITE = "space_app_write_file"
# The span exporter (the process's global tracer provider, set once) is test_e2e_otel's:
# its `exporter` and `spans` fixtures serve both modules.
exporter = otel.exporter
spans = otel.spans


PROFILES = {
    "alice": Profile("alice"),
    "narrow": Profile("narrow", Allowed(frozenset({THEME}), (THEME,))),
    "small": Profile("small", None, 1, None),
}


@asynccontextmanager
async def served(
    tmp_path: Path, *, on: tuple[str, ...] = (), stages: tuple[Stage, ...] = (), **policy: Any
) -> AsyncIterator[PresetServer]:
    host = SpaceHost(tmp_path / "state", root=tmp_path / "files")
    presets = host.start()
    for name in on:
        presets.manager.set_override(name, "on")
    log = tmp_path / "events.jsonl"
    server = PresetServer(
        presets,
        policy=ToolPolicy(event_log=log, profiles=PROFILES.get, **policy),
        confirm="risky",
        confirm_timeout=2.0,
        stages=stages,
    )
    try:
        yield server
    finally:
        server.close()
        host.close()


def lines(tmp_path: Path) -> list[dict[str, Any]]:
    return [e for e in read_events(tmp_path / "events.jsonl") if e["kind"] in ("call", "refusal")]


async def run(server: PresetServer, name: str, arguments: dict[str, Any], token: str | None = None):
    tracer = trace.get_tracer("test")
    with tracer.start_as_current_span("request"):  # the SDK's request span
        return await server.run_call(PendingCall(name, arguments, token))


def call_spans(spans: InMemorySpanExporter) -> list[Any]:
    return [s for s in spans.get_finished_spans() if s.name.startswith("presets.tool_call")]


def one_line_one_span(tmp_path: Path, spans: InMemorySpanExporter) -> tuple[dict[str, Any], Any]:
    [line] = lines(tmp_path)
    [span] = call_spans(spans)
    outcome = "refused" if line["kind"] == "refusal" else line["outcome"]
    assert span.attributes["presets.outcome"] == outcome
    assert span.attributes["presets.principal"] == line["principal"]
    if line["kind"] == "refusal":
        assert span.attributes["presets.gate"] == line["gate"]
    return line, span


def approve_when_asked(server: PresetServer, outcome: str) -> threading.Thread:
    """Decide the first pending request as a person would, from another thread."""

    def decide() -> None:
        for _ in range(400):
            pending = server.control.requests.pending()
            if pending:
                server.control.requests.decide(pending[0].id, outcome, by="cli")  # type: ignore[arg-type]
                return
            threading.Event().wait(0.01)

    thread = threading.Thread(target=decide)
    thread.start()
    return thread


async def test_ok(tmp_path: Path, spans: InMemorySpanExporter) -> None:
    async with served(tmp_path) as server:
        result = await run(server, THEME, {"theme": "dark"})
    assert not result.get("isError")
    line, span = one_line_one_span(tmp_path, spans)
    assert (line["kind"], line["outcome"], line["principal"]) == ("call", "ok", "local")
    assert line["reason"] == "context" and line["preset"] == "general-theme-tools"
    assert span.attributes["presets.reason"] == "context"


async def test_tool_error(tmp_path: Path, spans: InMemorySpanExporter) -> None:
    async with served(tmp_path) as server:
        result = await run(server, "space_scene_select_object", {"object_id": "nothing-here"})
    assert result["isError"]
    line, _ = one_line_one_span(tmp_path, spans)
    assert (line["kind"], line["outcome"], line["ok"]) == ("call", "error", False)


async def test_bad_arguments(tmp_path: Path, spans: InMemorySpanExporter) -> None:
    async with served(tmp_path) as server:
        result = await run(server, THEME, {"theme": "plaid"})
    assert result["isError"] and "theme" in result["content"][0]["text"]
    line, _ = one_line_one_span(tmp_path, spans)
    assert (line["outcome"], line["error"], line["arg"]) == (
        "bad-arguments",
        "ToolArgumentError",
        "theme",
    )


async def test_inactive(tmp_path: Path, spans: InMemorySpanExporter) -> None:
    async with served(tmp_path) as server:
        result = await run(server, "space_drawing_insert_shape", {})
    assert result["isError"]
    line, _ = one_line_one_span(tmp_path, spans)
    assert (line["kind"], line["gate"]) == ("refusal", "preset")


async def test_allow_list(tmp_path: Path, spans: InMemorySpanExporter) -> None:
    async with served(tmp_path, allow=Allowed(frozenset({THEME}), (THEME,))) as server:
        result = await run(server, "space_app_set_activity", {"activity": "drawing"})
    assert result["isError"]
    line, _ = one_line_one_span(tmp_path, spans)
    assert (line["kind"], line["gate"], line["principal"]) == ("refusal", "allow-list", "local")


async def test_token_profile(tmp_path: Path, spans: InMemorySpanExporter) -> None:
    async with served(tmp_path) as server:
        result = await run(server, "space_app_set_activity", {"activity": "drawing"}, "narrow")
    assert result["isError"] and "token 'narrow'" in result["content"][0]["text"]
    line, span = one_line_one_span(tmp_path, spans)
    assert (line["gate"], line["principal"], line["token"]) == ("allow-list", "narrow", "narrow")
    assert span.attributes["presets.token"] == "narrow"


async def test_revoked_token(tmp_path: Path, spans: InMemorySpanExporter) -> None:
    async with served(tmp_path) as server:
        await run(server, THEME, {"theme": "dark"}, "gone")
    line, _ = one_line_one_span(tmp_path, spans)
    assert (line["gate"], line["principal"]) == ("token", "gone")


@pytest.mark.parametrize(
    ("policy", "token"),
    [({"max_calls": 1}, None), ({"max_calls_per_tool": 1}, None), ({}, "small")],
    ids=["server", "per-tool", "token"],
)
async def test_each_budget(
    tmp_path: Path, spans: InMemorySpanExporter, policy: dict[str, int], token: str | None
) -> None:
    async with served(tmp_path, **policy) as server:
        await run(server, THEME, {"theme": "dark"}, token)
        spans.clear()
        result = await run(server, THEME, {"theme": "light"}, token)
    assert result["isError"] and "budget" in result["content"][0]["text"]
    first, second = lines(tmp_path)
    assert first["outcome"] == "ok"
    [span] = call_spans(spans)
    assert (second["kind"], second["gate"]) == ("refusal", "budget")
    assert span.attributes["presets.gate"] == "budget"
    assert span.attributes["presets.principal"] == second["principal"] == (token or "local")


@pytest.mark.parametrize(
    ("decision", "outcome", "confirm"),
    [("approved", "ok", "approved"), ("denied", "refused", "denied"), (None, "refused", "expired")],
    ids=["approved", "denied", "timed-out"],
)
async def test_confirm(
    tmp_path: Path,
    spans: InMemorySpanExporter,
    decision: str | None,
    outcome: str,
    confirm: str,
) -> None:
    async with served(tmp_path, on=("general-file-write-tools",)) as server:
        person = approve_when_asked(server, decision) if decision else None
        result = await run(server, WRITE, {"path": "a.txt", "content": "hi"})
        if person is not None:
            person.join()
    assert bool(result.get("isError")) == (outcome != "ok")
    line, span = one_line_one_span(tmp_path, spans)
    assert line["confirm"] == confirm and span.attributes["presets.confirm"] == confirm
    assert (tmp_path / "files" / "a.txt").exists() == (decision == "approved")
    if outcome == "refused":
        assert line["gate"] == "confirm"


async def test_cancelled(tmp_path: Path, spans: InMemorySpanExporter) -> None:
    async with served(tmp_path, on=("general-file-write-tools",)) as server:
        task = asyncio.ensure_future(run(server, WRITE, {"path": "a.txt", "content": "hi"}))
        while not server.control.requests.pending():
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    line, _ = one_line_one_span(tmp_path, spans)
    assert (line["kind"], line["outcome"], line["confirm"]) == ("call", "cancelled", "withdrawn")
    assert not (tmp_path / "files" / "a.txt").exists()


async def test_an_approval_after_the_preset_was_turned_off_runs_nothing(
    tmp_path: Path, spans: InMemorySpanExporter
) -> None:
    async with served(tmp_path, on=("general-file-write-tools",)) as server:
        task = asyncio.ensure_future(run(server, WRITE, {"path": "a.txt", "content": "hi"}))
        while not server.control.requests.pending():
            await asyncio.sleep(0.01)
        server.presets.manager.set_override("general-file-write-tools", "off")
        server.control.requests.decide(
            server.control.requests.pending()[0].id, "approved", by="cli"
        )
        result = await task
    assert result["isError"]
    assert not (tmp_path / "files" / "a.txt").exists()
    line, _ = one_line_one_span(tmp_path, spans)
    assert (line["gate"], line["confirm"]) == ("preset", "approved")


class RateLimit:
    """A host's own stage: at most ``limit`` calls per principal, then a refusal."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.seen: dict[str, int] = {}

    async def handle(self, call: PendingCall, call_next: Next) -> Result:
        count = self.seen[call.principal] = self.seen.get(call.principal, 0) + 1
        if count > self.limit:
            raise CallRefused("rate-limit", f"Slow down: {self.limit} calls at most; wait a bit.")
        return await call_next(call)


async def test_a_host_adds_its_own_rate_limiter_stage(
    tmp_path: Path, spans: InMemorySpanExporter
) -> None:
    limiter = RateLimit(2)
    assert isinstance(limiter, Stage)
    async with served(tmp_path, stages=(limiter,)) as server:
        results = [await run(server, THEME, {"theme": t}) for t in ("dark", "light", "dark")]
        other = await run(server, THEME, {"theme": "dark"}, "alice")  # alice has her own count
    assert [bool(r.get("isError")) for r in results] == [False, False, True]
    assert "Slow down" in results[2]["content"][0]["text"] and not other.get("isError")
    assert [(e["kind"], e.get("gate")) for e in lines(tmp_path)] == [
        ("call", None),
        ("call", None),
        ("refusal", "rate-limit"),
        ("call", None),
    ]
    assert [s.attributes.get("presets.gate") for s in call_spans(spans)] == [
        None,
        None,
        "rate-limit",
        None,
    ]


class StoreDown:
    """A stage that reads the store, on a server whose Redis has gone away."""

    async def handle(self, call: PendingCall, call_next: Next) -> Result:
        raise StoreUnavailableError("the store at redis://127.0.0.1:1/0 is unavailable")


async def test_a_store_down_under_a_stage_is_a_tool_error_in_words(
    tmp_path: Path, spans: InMemorySpanExporter
) -> None:
    # Redis down while the budget counts the call: the model reads why, not -32603.
    async with served(tmp_path, stages=(StoreDown(),)) as server:
        result = await run(server, THEME, {"theme": "dark"})
    assert result["isError"] and "is unavailable" in result["content"][0]["text"]
    line, _ = one_line_one_span(tmp_path, spans)
    assert (line["kind"], line["outcome"], line["ok"]) == ("call", "error", False)


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_over_mcp_each_call_is_one_line_in_both_eras(tmp_path: Path, mode: str) -> None:
    async with served(tmp_path) as server, Client(server, mode=mode) as client:  # type: ignore[arg-type]
        ok = await client.call_tool(THEME, {"theme": "dark"})
        refused = await client.call_tool("space_drawing_insert_shape", {})
    assert not ok.is_error and refused.is_error
    assert [(e["kind"], e.get("outcome"), e.get("gate")) for e in lines(tmp_path)] == [
        ("call", "ok", None),
        ("refusal", "refused", "preset"),
    ]
    assert json.dumps(lines(tmp_path))  # plain JSON lines


# ------------------------------------------------------------ where the Run stage runs a handler

PROBE_PLUGIN = """
import asyncio
import threading

from agent_presets import ToolAdapter, hookimpl

SCHEMA = {"type": "object", "properties": {"seconds": {"type": "number"}}}


async def awaited(app, arguments, call):
    call.context.progress(1, 2, "half way")
    await asyncio.sleep(arguments.get("seconds", 0))
    return {"thread": threading.get_ident()}


def inline(app, arguments):
    return {"thread": threading.get_ident()}


@hookimpl
def presets_tool_adapters():
    return [
        ToolAdapter("probe.awaited", description="An async handler.", input_schema=SCHEMA,
                    handler=awaited),
        ToolAdapter("probe.edits", description="A sync handler.", input_schema=SCHEMA,
                    handler=inline),
        ToolAdapter("probe.reads", description="A sync handler that reads files.",
                    input_schema=SCHEMA, handler=inline),
    ]
"""

PROBE_PRESETS = """presets:
  - name: probe-loop
    default_state: auto
    risk: normal
    contexts: [{surface: any}]
    tool_ids: [probe.awaited, probe.edits]
  - name: probe-files
    default_state: auto
    risk: filesystem-read
    contexts: [{surface: any}]
    tool_ids: [probe.reads]
"""


@asynccontextmanager
async def probe_served(tmp_path: Path) -> AsyncIterator[Client]:
    from agent_presets.lib.plugins import load_plugins

    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "probe_tools.py").write_text(PROBE_PLUGIN)
    (folder / "probe.yaml").write_text(PROBE_PRESETS)
    with SpaceHost(tmp_path / "state") as host:
        presets = host.start(load_plugins([], plugins_dir=folder))
        assert presets.problems == []
        server = PresetServer(presets, policy=ToolPolicy(event_log=tmp_path / "events.jsonl"))
        try:
            async with Client(server, mode="legacy") as client:
                yield client
        finally:
            server.close()


async def test_an_async_handler_is_awaited_on_the_loop_and_a_file_reading_one_runs_off_it(
    tmp_path: Path, spans: InMemorySpanExporter
) -> None:
    progress: list[str | None] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(message)

    loop_thread = threading.get_ident()
    async with probe_served(tmp_path) as client:
        awaited = await client.call_tool(
            "space_probe_awaited", {"seconds": 0.01}, progress_callback=on_progress
        )
        edits = await client.call_tool("space_probe_edits", {})
        reads = await client.call_tool("space_probe_reads", {})
    ran_on = {
        name: result.structured_content["thread"]  # type: ignore[index]
        for name, result in (("awaited", awaited), ("edits", edits), ("reads", reads))
    }
    assert ran_on["awaited"] == loop_thread  # no worker thread for an async handler
    assert ran_on["edits"] == loop_thread  # a quick sync handler runs inline, as before
    assert ran_on["reads"] != loop_thread  # a preset that reads files: the thread pool
    assert progress == ["half way"]  # the async handler's notice reached the client
    assert [(e["tool"], e["outcome"]) for e in lines(tmp_path)] == [
        ("space_probe_awaited", "ok"),
        ("space_probe_edits", "ok"),
        ("space_probe_reads", "ok"),
    ]
    assert [s.attributes["presets.outcome"] for s in call_spans(spans)] == ["ok"] * 3


async def test_a_cancelled_async_handler_is_one_cancelled_line(
    tmp_path: Path, spans: InMemorySpanExporter
) -> None:
    async with probe_served(tmp_path) as client:
        with anyio.move_on_after(0.5):
            await client.call_tool("space_probe_awaited", {"seconds": 30})
        with anyio.fail_after(10):
            while not lines(tmp_path):
                await anyio.sleep(0.02)
    line, _ = one_line_one_span(tmp_path, spans)
    assert (line["tool"], line["outcome"]) == ("space_probe_awaited", "cancelled")
