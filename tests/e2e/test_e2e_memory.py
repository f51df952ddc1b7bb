"""The MCP server in memory: ``mcp.Client(build_server(presets))`` in both protocol eras."""

from __future__ import annotations

import json
import logging
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from agent_presets import ToolAdapter, ToolCallError, ToolDef, bootstrap, hookimpl
from agent_presets.lib.boot import Presets
from agent_presets.server.mcp import (
    PROMPT_NAME,
    PROMPT_URI,
    STATUS_URI,
    PresetServer,
    build_server,
)
from agent_presets_general import SpaceHost

pytestmark = pytest.mark.anyio

LIST_CHANGED = "notifications/tools/list_changed"
SCENE = {"surface": "scene", "activity": None, "canvas_visible": False}
NOTES = {"surface": "canvas", "activity": "notes", "canvas_visible": True}

PRESETS_YAML = """
presets:
  - name: notes-tools
    default_state: auto
    risk: normal
    contexts: [{surface: canvas, activity: notes}]
    tool_ids: [notes.add, notes.read]
    system_prompt: "Notes guidance: keep each note short."
  - name: app-tools
    default_state: auto
    risk: normal
    contexts: [{surface: any}]
    tool_ids: [app.switch, app.boom, app.refuse]
    system_prompt: App guidance.
  - name: file-read-tools
    default_state: off
    risk: filesystem-read
    contexts: [{surface: any}]
    tool_ids: [files.read]
  - name: file-write-tools
    default_state: off
    risk: filesystem-write
    contexts: [{surface: any}]
    tool_ids: [files.write]
  - name: shell-tools
    default_state: off
    risk: shell
    contexts: [{surface: any}]
    tool_ids: [shell.run]
"""

OBJECT = {"type": "object"}
TEXT = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
    "additionalProperties": False,
}


class NotesApp:
    """The test host: notes in memory, a context it reports, a log of call intervals."""

    def __init__(self) -> None:
        self.notes: list[str] = []
        self.presets: Presets | None = None
        self.calls: list[tuple[str, float, float]] = []
        self._lock = threading.Lock()

    def context(self) -> dict[str, Any]:
        return dict(SCENE)

    def timed(self, name: str, seconds: float) -> str:
        start = time.monotonic()
        time.sleep(seconds)
        with self._lock:
            self.calls.append((name, start, time.monotonic()))
        return name


def _switch(app: NotesApp, args: dict[str, Any]) -> dict[str, Any]:
    assert app.presets is not None
    context = NOTES if args.get("to") == "notes" else SCENE
    app.presets.manager.set_context(context)
    return dict(context)


def _boom(app: NotesApp, args: dict[str, Any]) -> None:
    raise RuntimeError("secret internals at /srv/app.py line 12")


def _refuse(app: NotesApp, args: dict[str, Any]) -> None:
    raise ToolCallError("nothing to refuse yet; add a note first with space_notes_add")


class NotesPlugin:
    def __init__(self, folder: Path) -> None:
        self.file = folder / "presets.yaml"
        self.file.write_text(PRESETS_YAML)

    @hookimpl
    def presets_preset_files(self) -> list[Path]:
        return [self.file]

    @hookimpl
    def presets_tool_adapters(self) -> list[ToolAdapter]:
        return [
            ToolAdapter(
                "notes.add",
                "space_notes_add",
                "Add a note.",
                TEXT,
                lambda app, a: app.notes.append(a["text"]) or {"count": len(app.notes)},
            ),
            ToolAdapter(
                "notes.read",
                "space_notes_read",
                "Read the notes.",
                OBJECT,
                lambda app, a: list(app.notes),
                annotations={"readOnlyHint": True},
            ),
            ToolAdapter("app.switch", "space_app_switch", "Switch context.", OBJECT, _switch),
            ToolAdapter("app.boom", "space_app_boom", "Always fails.", OBJECT, _boom),
            ToolAdapter("app.refuse", "space_app_refuse", "Refuses.", OBJECT, _refuse),
            ToolAdapter(
                "files.read",
                "space_files_read",
                "Slow read.",
                OBJECT,
                lambda app, a: app.timed("read", float(a.get("seconds", 0.3))),
            ),
            ToolAdapter("files.write", "space_files_write", "Write.", OBJECT, lambda app, a: "ok"),
            ToolAdapter(
                "shell.run",
                "space_shell_run",
                "Run.",
                OBJECT,
                lambda app, a: "ok",
                annotations={"idempotentHint": False},
            ),
        ]


@pytest.fixture
def make(tmp_path: Path) -> Iterator[Callable[..., tuple[NotesApp, Presets, PresetServer]]]:
    servers: list[PresetServer] = []

    def make(overrides: Mapping[str, str] | None = None) -> tuple[NotesApp, Presets, PresetServer]:
        app = NotesApp()
        presets = bootstrap(app, plugins=[NotesPlugin(tmp_path)], overrides=overrides)
        assert not presets.problems
        app.presets = presets
        server = build_server(presets)
        servers.append(server)
        return app, presets, server

    yield make
    for server in servers:
        server.close()


class Notices:
    def __init__(self) -> None:
        self.methods: list[str] = []
        self.params: list[Any] = []
        self._events: dict[str, anyio.Event] = {}

    async def __call__(self, message: Any) -> None:
        method = getattr(message, "method", None)
        if isinstance(method, str):
            self.methods.append(method)
            self.params.append(getattr(message, "params", None))
            self._events.setdefault(method, anyio.Event()).set()

    async def wait(self, method: str, timeout: float = 5.0) -> None:
        with anyio.fail_after(timeout):
            await self._events.setdefault(method, anyio.Event()).wait()


def text(result: Any) -> str:
    """The text of a tool result or of a prompt message."""
    content = result.content if isinstance(result.content, list) else [result.content]
    return "".join(getattr(c, "text", "") for c in content)


async def names(client: Client) -> list[str]:
    return [t.name for t in (await client.list_tools()).tools]


# ---------------------------------------------------------------- capabilities


async def test_memory_advertises_list_changed_in_both_eras(make: Callable[..., Any]) -> None:
    _app, _presets, server = make()
    async with Client(server, mode="legacy") as legacy:
        caps = legacy.server_capabilities
        assert caps.tools is not None and caps.tools.list_changed is True
        assert caps.prompts is not None and caps.prompts.list_changed is True
        assert caps.resources is not None and caps.resources.subscribe is True
    async with Client(server) as modern:
        assert modern.protocol_version == "2026-07-28"
        caps = modern.server_capabilities
        assert caps.tools is not None and caps.tools.list_changed is True


async def test_memory_tools_list_is_the_registry_in_stable_order_with_schemas(
    make: Callable[..., Any],
) -> None:
    _app, presets, server = make({"file-write-tools": "on"})
    async with Client(server, mode="legacy") as client:
        tools = (await client.list_tools()).tools
    assert [t.name for t in tools] == presets.tool_registry.names()
    assert [t.name for t in tools] == sorted(t.name for t in tools)
    for tool in tools:
        registered = presets.tool_registry.get(tool.name)
        assert registered is not None
        assert tool.input_schema == dict(registered.input_schema)
        assert tool.description == registered.description


async def test_memory_annotations_follow_the_preset_risk_and_the_adapter_refines_them(
    make: Callable[..., Any],
) -> None:
    on = {"file-read-tools": "on", "file-write-tools": "on", "shell-tools": "on"}
    _app, presets, server = make(on)
    presets.manager.set_context(NOTES)
    async with Client(server, mode="legacy") as client:
        hints = {t.name: t.annotations for t in (await client.list_tools()).tools}

    def of(name: str) -> tuple[Any, ...]:
        h = hints[name]
        assert h is not None
        return (h.read_only_hint, h.destructive_hint, h.open_world_hint, h.idempotent_hint)

    assert of("space_notes_add") == (None, False, False, None)
    assert of("space_notes_read") == (True, False, False, None)  # the adapter says it only reads
    assert of("space_files_read") == (None, False, False, None)
    assert of("space_files_write") == (None, True, False, None)
    assert of("space_shell_run") == (None, True, True, False)


# ------------------------------------------------------------------- changes


async def test_memory_a_change_made_on_another_thread_reaches_a_legacy_client(
    make: Callable[..., Any],
) -> None:
    _app, presets, server = make()
    notices = Notices()
    async with Client(server, mode="legacy", message_handler=notices) as client:
        assert "space_notes_add" not in await names(client)
        thread = threading.Thread(target=presets.manager.set_context, args=(NOTES,))
        thread.start()
        await notices.wait(LIST_CHANGED)
        thread.join()
        assert "space_notes_add" in await names(client)
        await notices.wait("notifications/prompts/list_changed")


async def test_memory_a_change_made_on_another_thread_reaches_a_modern_subscription(
    make: Callable[..., Any],
) -> None:
    _app, presets, server = make()
    async with Client(server) as client, client.listen(tools_list_changed=True) as sub:
        threading.Thread(target=presets.manager.set_context, args=(NOTES,)).start()
        with anyio.fail_after(5):
            event = await anext(aiter(sub))
        assert type(event).__name__ == "ToolsListChanged"
        assert "space_notes_add" in await names(client)


async def test_memory_a_host_tool_registered_by_hand_is_served_and_announced(
    make: Callable[..., Any],
) -> None:
    _app, presets, server = make()
    notices = Notices()
    ping = ToolDef(
        name="space_ping",
        description="Answers pong.",
        input_schema={"type": "object"},
        run=lambda arguments: "pong",
    )
    async with Client(server, mode="legacy", message_handler=notices) as client:
        presets.tool_registry.register(ping)
        await notices.wait(LIST_CHANGED)
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert tools["space_ping"].annotations is None  # in no preset: no risk to state
        assert text(await client.call_tool("space_ping", {})) == "pong"
        presets.tool_registry.unregister("space_ping")
        assert "space_ping" not in await names(client)


async def test_memory_list_changed_arrives_before_the_answer_to_the_call_that_caused_it(
    make: Callable[..., Any],
) -> None:
    _app, _presets, server = make()
    notices = Notices()
    async with Client(server, mode="legacy", message_handler=notices) as client:
        result = await client.call_tool("space_app_switch", {"to": "notes"})
        assert not result.is_error, text(result)
        await anyio.sleep(0)
        assert LIST_CHANGED in notices.methods


async def test_memory_closed_clients_leave_the_notice_fanout(make: Callable[..., Any]) -> None:
    _app, presets, server = make()
    async with Client(server, mode="legacy") as one, Client(server, mode="legacy") as two:
        await one.list_tools()
        await two.list_tools()
        assert server.fanout.peer_count == 2
    assert server.fanout.peer_count == 0
    presets.manager.set_context(NOTES)  # nobody to tell: must not fail


# --------------------------------------------------------------------- calls


def _exit_process(arguments: Mapping[str, Any]) -> None:
    raise SystemExit(3)


async def test_memory_a_failing_handler_is_an_error_result_without_internals(
    make: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    _app, presets, server = make()
    with caplog.at_level(logging.ERROR, logger="agent_presets.server"):
        async with Client(server, mode="legacy") as client:
            result = await client.call_tool("space_app_boom", {})
            assert result.is_error
            assert "internal error" in text(result)
            assert "secret" not in text(result) and "Traceback" not in text(result)
            assert not (await client.call_tool("space_app_switch", {})).is_error
            presets.tool_registry.register(
                ToolDef("space_exit", "Exits.", {"type": "object"}, run=_exit_process)
            )
            assert (await client.call_tool("space_exit", {})).is_error
            assert not (await client.call_tool("space_app_switch", {})).is_error
    assert any("secret internals" in r.getMessage() or r.exc_info for r in caplog.records)


async def test_memory_a_tool_call_error_reaches_the_model_verbatim(
    make: Callable[..., Any],
) -> None:
    _app, _presets, server = make()
    async with Client(server) as client:
        result = await client.call_tool("space_app_refuse", {})
    assert result.is_error
    assert text(result) == "nothing to refuse yet; add a note first with space_notes_add"


async def test_memory_bad_arguments_name_the_argument(make: Callable[..., Any]) -> None:
    _app, presets, server = make()
    presets.manager.set_context(NOTES)
    async with Client(server, mode="legacy") as client:
        result = await client.call_tool("space_notes_add", {"text": 5})
    assert result.is_error
    assert "'text'" in text(result)


async def test_memory_inactive_tool_explains_the_context_and_unknown_suggests_a_name(
    make: Callable[..., Any],
) -> None:
    _app, _presets, server = make()
    async with Client(server, mode="legacy") as client:
        inactive = await client.call_tool("space_notes_add", {"text": "x"})
        off = await client.call_tool("space_shell_run", {})
        unknown = await client.call_tool("space_notes_ad", {})
    assert inactive.is_error and "notes-tools" in text(inactive)
    assert "switch to the canvas surface" in text(inactive) and "notes" in text(inactive)
    assert off.is_error and "shell-tools" in text(off) and "off by default" in text(off)
    assert unknown.is_error and "did you mean 'space_notes_add'?" in text(unknown)


async def test_memory_structured_results_carry_the_value(make: Callable[..., Any]) -> None:
    app, presets, server = make()
    presets.manager.set_context(NOTES)
    async with Client(server, mode="legacy") as client:
        result = await client.call_tool("space_notes_add", {"text": "hello"})
        listed = await client.call_tool("space_notes_read", {})
    assert json.loads(text(result)) == {"count": 1}
    assert result.structured_content == {"count": 1}
    assert json.loads(text(listed)) == ["hello"]
    assert app.notes == ["hello"]


async def test_memory_slow_io_tool_runs_off_the_loop_and_calls_never_overlap(
    make: Callable[..., Any],
) -> None:
    app, _presets, server = make({"file-read-tools": "on"})
    async with Client(server, mode="legacy") as client:
        finished: dict[str, float] = {}

        async def call(label: str) -> None:
            result = await client.call_tool("space_files_read", {"seconds": 0.3})
            assert not result.is_error, text(result)
            finished[label] = time.monotonic()

        async def list_meanwhile() -> None:
            await anyio.sleep(0.05)
            await client.list_tools()
            finished["list"] = time.monotonic()

        async with anyio.create_task_group() as tg:
            tg.start_soon(call, "first")
            tg.start_soon(call, "second")
            tg.start_soon(list_meanwhile)
    assert finished["list"] < finished["first"]  # the loop kept serving
    (_, _, first_end), (_, second_start, _) = sorted(app.calls, key=lambda c: c[1])
    assert first_end <= second_start  # one call at a time


# ------------------------------------------------------- prompt and resources


async def test_memory_prompt_and_resources_follow_the_active_presets(
    make: Callable[..., Any],
) -> None:
    _app, presets, server = make()
    notices = Notices()
    async with Client(server, mode="legacy", message_handler=notices) as client:
        prompts = (await client.list_prompts()).prompts
        assert [p.name for p in prompts] == [PROMPT_NAME]
        before = text((await client.get_prompt(PROMPT_NAME)).messages[0])
        assert "App guidance." in before and "Notes guidance" not in before
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await client.subscribe_resource(PROMPT_URI)  # legacy-era subscription
        await client.call_tool("space_app_switch", {"to": "notes"})
        await notices.wait("notifications/prompts/list_changed")
        await notices.wait("notifications/resources/updated")
        updated = [
            p.uri for m, p in zip(notices.methods, notices.params, strict=True) if "updated" in m
        ]
        assert [str(u) for u in updated] == [PROMPT_URI]
        after = (await client.get_prompt(PROMPT_NAME)).messages[0]
        assert "Notes guidance" in text(after)
        resource = (await client.read_resource(PROMPT_URI)).contents[0]
        assert "Notes guidance" in getattr(resource, "text", "")
        status = json.loads((await client.read_resource(STATUS_URI)).contents[0].text)
    assert [a["name"] for a in status["active_presets"]] == ["notes-tools", "app-tools"]
    assert status["context"]["surface"] == "canvas"
    assert "space_notes_add" in status["tools"]
    assert presets.manager.get_context()["activity"] == "notes"


async def test_memory_modern_subscription_hears_prompt_and_resource_changes(
    make: Callable[..., Any],
) -> None:
    _app, _presets, server = make()
    async with (
        Client(server) as client,
        client.listen(prompts_list_changed=True, resource_subscriptions=[PROMPT_URI]) as sub,
    ):
        await client.call_tool("space_app_switch", {"to": "notes"})
        wanted = {"PromptsListChanged", f"ResourceUpdated {PROMPT_URI}"}
        seen: set[str] = set()
        with anyio.move_on_after(5):
            async for event in sub:
                seen.add(f"{type(event).__name__} {getattr(event, 'uri', '')}".strip())
                if wanted <= seen:
                    break
        assert wanted <= seen, f"in 5 s the subscription heard only {sorted(seen)}"


# ------------------------------------------------------------ the real host


async def test_memory_headless_host_with_all_plugins_switches_to_drawing(
    tmp_path: Path, expected_tool_names: dict[str, list[str]]
) -> None:
    presets = SpaceHost(tmp_path / "state").start()
    server = build_server(presets)
    notices = Notices()
    try:
        async with Client(server, mode="legacy", message_handler=notices) as client:
            assert await names(client) == expected_tool_names["scene"]
            await client.call_tool("space_app_switch_surface", {"surface": "canvas"})
            await client.call_tool("space_app_set_activity", {"activity": "drawing"})
            await notices.wait(LIST_CHANGED)
            assert await names(client) == expected_tool_names["drawing"]
            prompt = text((await client.get_prompt(PROMPT_NAME)).messages[0])
            assert "drawing-shape-tools" in prompt
    finally:
        server.close()
