"""The call context and rich results, through the SDK's in-memory client in both eras."""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from agent_presets import ToolAdapter, ToolCall, ToolResult, bootstrap, hookimpl, results
from agent_presets.lib.boot import Presets
from agent_presets.lib.tools import ToolRegistry
from agent_presets.server.mcp import build_server
from agent_presets.server.mcp.server import PresetServer

pytestmark = pytest.mark.anyio

OBJECT = {"type": "object", "properties": {"steps": {"type": "integer"}}}
PNG = b"\x89PNG\r\n\x1a\nfake"
COUNT_SCHEMA = {
    "type": "object",
    "properties": {"count": {"type": "integer"}},
    "required": ["count"],
}


def _slow_progress(app: Any, arguments: dict[str, Any], call: ToolCall) -> str:
    assert call.context is not None
    steps = arguments.get("steps", 3)
    for done in range(1, steps + 1):
        time.sleep(0.001)
        call.context.progress(done, steps, f"step {done}")
    return "done"


def _loud(app: Any, arguments: dict[str, Any], call: ToolCall) -> str:
    assert call.context is not None
    call.context.log("debug", "a detail")
    call.context.log("warning", "careful", tool=call.name)
    return "logged"


ASKED_ON: list[str] = []
"""The thread each run of ``_ask`` ran on."""

HEARD = threading.Event()
"""Set by a client when it hears ``_live_progress``'s first notice."""


def _ask(app: Any, arguments: dict[str, Any], call: ToolCall) -> dict[str, Any]:
    assert call.context is not None
    ASKED_ON.append(threading.current_thread().name)
    answer = call.context.elicit(
        "Name the shape", {"type": "object", "properties": {"name": {"type": "string"}}}
    )
    return {"action": answer.action, "content": dict(answer.content or {})}


def _live_progress(app: Any, arguments: dict[str, Any], call: ToolCall) -> str:
    assert call.context is not None
    call.context.progress(1, 2, "started")
    # Goes on only once the client heard it: a notice held back until the end never comes.
    heard = HEARD.wait(timeout=5)
    call.context.progress(2, 2, "done")
    return "heard while running" if heard else "not heard until the end"


def _progress_then_ask(app: Any, arguments: dict[str, Any], call: ToolCall) -> str:
    assert call.context is not None
    call.context.progress(1, 2, "before asking")
    answer = call.context.elicit(
        "Go on?", {"type": "object", "properties": {"go": {"type": "boolean"}}}
    )
    call.context.progress(2, 2, "after asking")
    return answer.action


def _ask_twice(app: Any, arguments: dict[str, Any], call: ToolCall) -> str:
    assert call.context is not None
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    first = call.context.elicit("first", schema)
    second = call.context.elicit("second", schema)
    return f"{(first.content or {}).get('name')} {(second.content or {}).get('name')}"


def _sample(app: Any, arguments: dict[str, Any], call: ToolCall) -> str:
    assert call.context is not None
    return call.context.sample("Say hi", 20, system_prompt="be brief")


def _caps(app: Any, arguments: dict[str, Any], call: ToolCall) -> dict[str, Any]:
    assert call.context is not None
    return {"caps": sorted(call.context.client_capabilities)}


def _image(app: Any, arguments: dict[str, Any]) -> Any:
    return results.image(PNG, "image/png")


def _mixed(app: Any, arguments: dict[str, Any]) -> ToolResult:
    return ToolResult(
        [
            results.text("three blocks"),
            results.audio(b"RIFF", "audio/wav"),
            results.resource("file:///notes.txt", "hello", mime="text/plain"),
        ]
    )


def _count(app: Any, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"count": 2}


def _bad_count(app: Any, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"count": "two"}


class RichPlugin:
    """One preset, on everywhere, of tools that use the call context and rich results."""

    __name__ = "rich"

    def __init__(self, folder: Path) -> None:
        self.adapters = [
            ToolAdapter(
                "rich.progress", "", "Counts slowly.", OBJECT, _slow_progress, name="rich_progress"
            ),
            ToolAdapter("rich.log", "", "Logs.", OBJECT, _loud, name="rich_log"),
            ToolAdapter("rich.live", "", "Reports live.", OBJECT, _live_progress, name="rich_live"),
            ToolAdapter("rich.ask", "", "Asks.", OBJECT, _ask, name="rich_ask"),
            ToolAdapter(
                "rich.progress-ask",
                "",
                "Asks midway.",
                OBJECT,
                _progress_then_ask,
                name="rich_progress_ask",
            ),
            ToolAdapter(
                "rich.ask-twice", "", "Asks twice.", OBJECT, _ask_twice, name="rich_ask_twice"
            ),
            ToolAdapter("rich.sample", "", "Samples.", OBJECT, _sample, name="rich_sample"),
            ToolAdapter("rich.caps", "", "Capabilities.", OBJECT, _caps, name="rich_caps"),
            ToolAdapter("rich.image", "", "An image.", OBJECT, _image, name="rich_image"),
            ToolAdapter("rich.mixed", "", "Blocks.", OBJECT, _mixed, name="rich_mixed"),
            ToolAdapter(
                "rich.count",
                "",
                "Counts.",
                OBJECT,
                _count,
                name="rich_count",
                title="Count things",
                output_schema=COUNT_SCHEMA,
            ),
            ToolAdapter(
                "rich.bad-count",
                "",
                "Counts wrongly.",
                OBJECT,
                _bad_count,
                name="rich_bad_count",
                output_schema=COUNT_SCHEMA,
            ),
        ]
        self.preset_file = folder / "rich.yaml"
        ids = ", ".join(a.id for a in self.adapters)
        self.preset_file.write_text(
            "presets:\n  - name: rich-tools\n    default_state: auto\n    risk: normal\n"
            f"    contexts: [{{surface: any}}]\n    tool_ids: [{ids}]\n"
        )

    @hookimpl
    def presets_preset_files(self) -> list[Path]:
        return [self.preset_file]

    @hookimpl
    def presets_tool_adapters(self) -> list[ToolAdapter]:
        return list(self.adapters)


@pytest.fixture
def presets(tmp_path: Path) -> Presets:
    return bootstrap(
        None,
        plugins=[RichPlugin(tmp_path)],
        context={"surface": "scene", "canvas_visible": False},
        tool_registry=ToolRegistry("space_"),  # the namespace these tests name the tools in
    )


@pytest.fixture
async def server(presets: Presets) -> AsyncIterator[PresetServer]:
    built = build_server(presets)
    try:
        yield built
    finally:
        built.close()


MODES = ["legacy", "2026-07-28"]


def _text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


class Progress:
    """A client's progress callback that keeps every notice it hears."""

    def __init__(self) -> None:
        self.notices: list[tuple[float, float | None, str | None]] = []

    async def __call__(self, done: float, total: float | None, message: str | None) -> None:
        self.notices.append((done, total, message))

    @property
    def done(self) -> list[float]:
        return [notice[0] for notice in self.notices]


@pytest.mark.parametrize("mode", MODES)
async def test_progress_reaches_the_client_with_its_token(server: PresetServer, mode: str) -> None:
    on_progress = Progress()

    async with Client(server, mode=mode) as client:  # type: ignore[arg-type]
        result = await client.call_tool(
            "space_rich_progress", {"steps": 3}, progress_callback=on_progress
        )
    assert _text(result) == "done"
    assert on_progress.notices == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


async def test_progress_from_a_worker_thread_arrives_before_the_result(
    server: PresetServer,
) -> None:
    server.calls.slow.add("space_rich_progress")  # run it on the pool
    seen: list[float] = []
    threads: list[str] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        seen.append(done)
        threads.append(threading.current_thread().name)

    async with Client(server, mode="legacy") as client:
        result = await client.call_tool(
            "space_rich_progress", {"steps": 4}, progress_callback=on_progress
        )
    assert _text(result) == "done" and seen == [1, 2, 3, 4]


@pytest.mark.filterwarnings("ignore:The logging capability is deprecated")
async def test_logging_arrives_and_set_level_filters(server: PresetServer) -> None:
    logged: list[types.LoggingMessageNotificationParams] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logged.append(params)

    async with Client(server, mode="legacy", logging_callback=on_log) as client:
        assert client.server_capabilities.logging is not None
        await client.call_tool("space_rich_log", {})
        assert [p.level for p in logged] == ["debug", "warning"]
        assert logged[1].logger == "space_rich_log"
        assert logged[1].data == {"message": "careful", "tool": "space_rich_log"}
        logged.clear()
        await client.set_logging_level("info")
        await client.call_tool("space_rich_log", {})
    assert [p.level for p in logged] == ["warning"]


async def test_logging_in_the_modern_era_follows_the_request_opt_in(server: PresetServer) -> None:
    logged: list[str] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logged.append(params.level)

    async with Client(
        server, mode="2026-07-28", logging_callback=on_log, log_level="info"
    ) as client:
        await client.call_tool("space_rich_log", {})
    assert logged == ["warning"]


def _elicitation_answer() -> Callable[..., Any]:
    async def answer(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert params.message == "Name the shape"
        return types.ElicitResult(action="accept", content={"name": "star"})

    return answer


@pytest.mark.parametrize("mode", MODES)
async def test_elicitation_round_trips(server: PresetServer, mode: str) -> None:
    ASKED_ON.clear()
    async with Client(server, mode=mode, elicitation_callback=_elicitation_answer()) as client:  # type: ignore[arg-type]
        result = await client.call_tool("space_rich_ask", {})
    assert not result.is_error, _text(result)
    assert result.structured_content == {"action": "accept", "content": {"name": "star"}}
    if mode == "legacy":  # asked once, from a worker thread: the handler ran once
        assert len(ASKED_ON) == 1 and ASKED_ON[0] != threading.main_thread().name


async def test_progress_queued_on_the_loop_before_an_elicitation_is_not_sent_twice(
    server: PresetServer,
) -> None:
    on_progress = Progress()

    async def answer(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    async with Client(server, mode="legacy", elicitation_callback=answer) as client:
        result = await client.call_tool(
            "space_rich_progress_ask", {}, progress_callback=on_progress
        )
    assert _text(result) == "decline"
    assert on_progress.done == [1, 2]


@pytest.mark.parametrize("mode", MODES)
async def test_two_questions_get_their_own_answers(server: PresetServer, mode: str) -> None:
    asked: list[str] = []

    async def answer(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"name": params.message.upper()})

    async with Client(server, mode=mode, elicitation_callback=answer) as client:  # type: ignore[arg-type]
        result = await client.call_tool("space_rich_ask_twice", {})
    assert _text(result) == "FIRST SECOND"
    assert asked == ["first", "second"]  # each question asked once, in both eras


async def test_a_client_error_answer_is_a_clear_tool_error(server: PresetServer) -> None:
    async def refuse(context: Any, params: types.ElicitRequestParams) -> types.ErrorData:
        return types.ErrorData(code=types.INVALID_REQUEST, message="no forms today")

    async with Client(server, mode="legacy", elicitation_callback=refuse) as client:
        result = await client.call_tool("space_rich_ask", {})
    assert result.is_error
    assert "did not answer the elicitation request" in _text(result)
    assert "no forms today" in _text(result)


async def test_elicitation_without_client_support_is_a_clear_error_before_2026(
    server: PresetServer,
) -> None:
    async with Client(server, mode="legacy") as client:
        result = await client.call_tool("space_rich_ask", {})
    assert result.is_error
    assert "the client does not support elicitation" in _text(result)


@pytest.mark.parametrize(("tool", "capability"), [("ask", "elicitation"), ("sample", "sampling")])
async def test_a_2026_client_without_the_capability_is_refused_with_32021(
    server: PresetServer, tool: str, capability: str
) -> None:
    async with Client(server, mode="2026-07-28") as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool(f"space_rich_{tool}", {})
    error = refused.value.error
    assert error.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY
    assert isinstance(error.data, dict) and capability in error.data["requiredCapabilities"]
    assert f"space_rich_{tool} needs the client's {capability} capability" in error.message


@pytest.mark.parametrize("mode", MODES)
async def test_sampling_returns_the_client_models_text(server: PresetServer, mode: str) -> None:
    async def sample(context: Any, params: types.CreateMessageRequestParams) -> Any:
        assert params.system_prompt == "be brief"
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="hi!"), model="test"
        )

    async with Client(server, mode=mode, sampling_callback=sample) as client:  # type: ignore[arg-type]
        result = await client.call_tool("space_rich_sample", {})
        assert _text(result) == "hi!"
    if mode == "legacy":  # the 2026-07-28 era answers -32021 (the test above)
        async with Client(server, mode=mode) as client:
            result = await client.call_tool("space_rich_sample", {})
        assert result.is_error and "does not support sampling" in _text(result)


async def test_client_capabilities_are_readable(server: PresetServer) -> None:
    async with Client(server, mode="legacy", elicitation_callback=_elicitation_answer()) as client:
        result = await client.call_tool("space_rich_caps", {})
    assert "elicitation" in (result.structured_content or {})["caps"]


@pytest.mark.parametrize("mode", MODES)
async def test_image_audio_and_resources_arrive_as_content_blocks(
    server: PresetServer, mode: str
) -> None:
    async with Client(server, mode=mode) as client:  # type: ignore[arg-type]
        image = await client.call_tool("space_rich_image", {})
        mixed = await client.call_tool("space_rich_mixed", {})
    block = image.content[0]
    assert isinstance(block, types.ImageContent) and block.mime_type == "image/png"
    assert [type(b).__name__ for b in mixed.content] == [
        "TextContent",
        "AudioContent",
        "EmbeddedResource",
    ]
    embedded = mixed.content[2]
    assert isinstance(embedded, types.EmbeddedResource)
    assert isinstance(embedded.resource, types.TextResourceContents)
    assert embedded.resource.text == "hello"


async def test_structured_content_is_checked_against_the_output_schema(
    server: PresetServer,
) -> None:
    async with Client(server, mode="legacy") as client:
        good = await client.call_tool("space_rich_count", {})
        bad = await client.call_tool("space_rich_bad_count", {})
    assert good.structured_content == {"count": 2} and not good.is_error
    assert bad.is_error
    assert "does not match its output schema" in _text(bad)
    assert "'count'" in _text(bad)


async def test_titles_and_output_schemas_are_listed(server: PresetServer) -> None:
    async with Client(server, mode="legacy") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert tools["space_rich_count"].title == "Count things"
    assert tools["space_rich_count"].output_schema == COUNT_SCHEMA
    assert tools["space_rich_log"].output_schema is None
    assert tools["space_rich_log"].title is None


# -- the built-ins ------------------------------------------------------------


@pytest.fixture
async def host_server(tmp_path: Path) -> AsyncIterator[PresetServer]:
    from agent_presets_general import SpaceHost

    root = tmp_path / "root"
    root.mkdir()
    host = SpaceHost(tmp_path / "state", root=root)
    presets = host.start(overrides={"general-shell-tools": "on", "general-file-read-tools": "on"})
    host.shell.set_surface("canvas")
    host.shell.set_activity("drawing")
    built = build_server(presets)
    try:
        yield built
    finally:
        built.close()


async def test_a_bash_call_with_a_progress_token_hears_progress_while_it_waits(
    host_server: PresetServer,
) -> None:
    on_progress = Progress()

    async with Client(host_server, mode="legacy") as client:
        result = await client.call_tool(
            "space_app_run_bash", {"command": "sleep 2.5"}, progress_callback=on_progress
        )
    assert not result.is_error, _text(result)
    assert (result.structured_content or {})["exit_code"] == 0
    assert len(on_progress.notices) >= 2
    assert all(total == 30 for _, total, _ in on_progress.notices)
    assert on_progress.done == sorted(on_progress.done)
    assert on_progress.notices[0][2] is not None and on_progress.notices[0][2].startswith(
        "running for"
    )


async def test_every_built_in_tool_has_a_title_and_an_output_schema(
    host_server: PresetServer,
) -> None:
    tools = {tool.name: tool for tool in host_server.tool_registry.list()}
    presets = host_server.presets
    every = [presets.tool_adapters.mcp_name(a) for a in presets.tool_adapters.list()]
    untitled = [a.id for a in presets.tool_adapters.list() if a.title is None]
    assert untitled == []
    # Every built-in returns a dict (structuredContent); tests/plugins checks each against it.
    unschemed = [a.id for a in presets.tool_adapters.list() if a.output_schema is None]
    assert unschemed == []
    assert len(every) == 61
    async with Client(host_server, mode="legacy") as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        inspect = await client.call_tool("space_drawing_inspect", {})
        shape = await client.call_tool(
            "space_drawing_insert_shape",
            {"shape": "rect", "x": 1, "y": 2, "width": 3, "height": 4},
        )
    assert set(listed) <= set(tools)
    assert [n for n in every if n in listed and listed[n].output_schema is None] == []
    assert listed["space_drawing_inspect"].title == "Inspect the drawing"
    assert listed["space_drawing_inspect"].output_schema is not None
    assert inspect.structured_content is not None and not inspect.is_error
    assert not shape.is_error, _text(shape)
    assert (shape.structured_content or {})["bounds"] == {"x": 1, "y": 2, "width": 3, "height": 4}
    assert listed["space_app_read_file"].annotations is not None
    assert listed["space_app_read_file"].annotations.read_only_hint is True
    assert listed["space_app_read_file"].annotations.destructive_hint is False


# -- the documented example -------------------------------------------------

DOC = Path(__file__).parents[2] / "docs" / "plugins.md"


class Notebook:
    def all(self) -> list[str]:
        return ["buy milk", "call mum"]


async def test_the_documented_call_context_example_runs_as_printed(tmp_path: Path) -> None:
    import re
    from types import SimpleNamespace

    text = DOC.read_text(encoding="utf-8")
    section = text.split("## The call context and rich results", 1)[1].split("\n## ", 1)[0]
    [code] = re.findall(r"```python\n(.*?)```", section, re.S)
    namespace: dict[str, Any] = {}
    exec(compile(code, str(DOC), "exec"), namespace)
    adapter = namespace["export_adapter"]

    class Docs:
        __name__ = "docs-example"

        @hookimpl
        def presets_preset_files(self) -> list[Path]:
            path = tmp_path / "docs.yaml"
            path.write_text(
                "presets:\n  - name: notes-export\n    default_state: auto\n    risk: normal\n"
                "    contexts: [{surface: any}]\n    tool_ids: [notes.export]\n"
            )
            return [path]

        @hookimpl
        def presets_tool_adapters(self) -> list[ToolAdapter]:
            return [adapter]

    presets = bootstrap(
        SimpleNamespace(notes=Notebook()),
        plugins=[Docs()],
        context={"surface": "notes", "canvas_visible": False},
        tool_registry=ToolRegistry("space_"),
    )
    server = build_server(presets)
    on_progress = Progress()

    async def confirm(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"confirm": True})

    try:
        for mode in MODES:
            on_progress.notices.clear()
            async with Client(server, mode=mode, elicitation_callback=confirm) as client:  # type: ignore[arg-type]
                listed = {t.name: t for t in (await client.list_tools()).tools}
                result = await client.call_tool(
                    "space_notes_export", {}, progress_callback=on_progress
                )
            assert listed["space_notes_export"].title == "Export the notes"
            assert not result.is_error, _text(result)
            assert result.structured_content == {"count": 2, "first": "buy milk"}
            assert isinstance(result.content[1], types.EmbeddedResource)
            assert on_progress.done == [1, 2]
    finally:
        server.close()


# -- over real transports -----------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_terrain_generation_reports_progress_over_http(http_server: Any, mode: str) -> None:
    on_progress = Progress()

    async with Client(http_server.url, mode=mode) as client:  # type: ignore[arg-type]
        result = await client.call_tool(
            "space_scene_add_terrain",
            {"seed": 7, "rows": 16, "cols": 16},
            progress_callback=on_progress,
        )
        listed = {t.name: t for t in (await client.list_tools()).tools}
    assert not result.is_error, _text(result)
    assert on_progress.done == [0, 1, 2]
    assert listed["space_scene_add_terrain"].title == "Generate terrain"


@pytest.mark.filterwarnings("ignore:The logging capability is deprecated")
async def test_set_level_and_progress_over_stdio(stdio_server_params: Any) -> None:
    on_progress = Progress()

    async with Client(stdio_server_params(), mode="legacy") as client:
        assert client.server_capabilities.logging is not None
        await client.set_logging_level("error")
        result = await client.call_tool(
            "space_scene_add_terrain",
            {"seed": 3, "rows": 8, "cols": 8},
            progress_callback=on_progress,
        )
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert not result.is_error, _text(result)
    assert on_progress.done == [0, 1, 2]
    assert all(tool.title for tool in tools.values())


async def test_cancelling_a_call_frees_the_handler_waiting_for_an_answer(
    server: PresetServer,
) -> None:
    import anyio

    asked = anyio.Event()

    async def never(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async with Client(server, mode="legacy", elicitation_callback=never) as client:
        with anyio.move_on_after(0.5):
            await client.call_tool("space_rich_ask", {})
        assert asked.is_set()  # the form was out, and the call was cancelled while it waited
        # The worker thread is released at once, not after the ten-minute answer timeout.
        with anyio.fail_after(3):
            while server.calls.in_flight:
                await anyio.sleep(0.02)
        # And the server goes on serving this client.
        assert _text(await client.call_tool("space_rich_caps", {})) != ""


async def test_a_context_handlers_progress_reaches_the_client_while_it_runs(
    server: PresetServer,
) -> None:
    HEARD.clear()

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        if message == "started":
            HEARD.set()

    async with Client(server, mode="legacy") as client:
        result = await client.call_tool("space_rich_live", {}, progress_callback=on_progress)
    assert _text(result) == "heard while running"
