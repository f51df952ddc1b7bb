"""Presets bundle prompts, resources and completions: served in memory, in both protocol eras.

``mcp.Client(server)`` speaks 2026-07-28; ``mode="legacy"`` speaks 2025-11-25.
Every behaviour a client can see is checked in both: listing, getting,
reading, completing, the answer for a member whose preset is not active, the
allow-list and token gates, and the change notices.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import PromptReference, ResourceTemplateReference

from agent_presets import ContentProvider, ToolAdapter, bootstrap, hookimpl, results
from agent_presets.lib.boot import HostDefaults, Presets
from agent_presets.server import ServeConfig
from agent_presets.server.mcp import PROMPT_NAME, PROMPT_URI, STATUS_URI, PresetServer, build_server
from agent_presets.server.policy import Profile, ToolPolicy

pytestmark = pytest.mark.anyio

SCENE = {"surface": "scene", "activity": None}
NOTES = {"surface": "canvas", "activity": "notes"}
PIXEL = base64.b64encode(b"\x89PNG\r\n\x1a\n-not-really-a-png").decode()

PRESETS_YAML = f"""
presets:
  - name: notes-tools
    default_state: auto
    risk: normal
    contexts: [{{surface: canvas, activity: notes}}]
    tool_ids: [notes.add]
    prompts: [notes.summarize]
    resources: [notes.all, notes.note]
  - name: app-tools
    default_state: auto
    risk: normal
    contexts: [{{surface: any}}]
    tool_ids: [app.switch]
    prompts: [app.hello]
  - name: guide
    default_state: "off"
    risk: normal
    contexts: [{{surface: any}}]
    prompts: [guide.tour]
    resources: [guide.map]
prompts:
  - id: notes.summarize
    title: Summarize the notes
    description: Summarize the notes in a style.
    arguments:
      - {{name: style, description: short or long, required: true, values: [short, long, lyrical]}}
      - {{name: audience}}
    messages:
      - role: user
        text: >-
          Summarize the notes, {{{{style}}}}, for {{{{audience}}}};
          add one with {{{{notes.add}}}}.
      - role: assistant
        resource: {{uri: "notes://all", mime_type: text/plain, text: "the notes, {{{{style}}}}"}}
  - id: app.hello
    description: Say hello.
    messages:
      - {{role: user, text: Hello.}}
  - id: guide.tour
    description: A tour, rendered from the app's state.
    arguments: [{{name: stop}}]
resources:
  - id: notes.all
    uri: notes://all
    description: Every note, one a line.
    mime_type: text/plain
  - id: guide.map
    uri: guide://map.png
    description: The map.
    mime_type: image/png
    blob: {PIXEL}
resource_templates:
  - id: notes.note
    uri_template: notes://note/{{index}}
    description: One note by its number.
    mime_type: text/plain
"""


class NotesApp:
    defaults = HostDefaults(namespace="space_")  # the app's namespace, as its tools are named

    def __init__(self) -> None:
        self.notes = ["buy milk", "call ann", "bake bread"]
        self.presets: Presets | None = None

    def context(self) -> dict[str, Any]:
        return dict(SCENE)


def _switch(app: NotesApp, args: dict[str, Any]) -> dict[str, Any]:
    assert app.presets is not None
    app.presets.manager.set_context(NOTES if args.get("to") == "notes" else SCENE)
    return {"ok": True}


def _note(app: NotesApp, variables: Mapping[str, str]) -> str:
    index = int(variables["index"])  # a bad number is the provider's failure, told plainly
    return app.notes[index]


class BundlePlugin:
    def __init__(self, folder: Path) -> None:
        self.file = folder / "presets.yaml"
        self.file.write_text(PRESETS_YAML)

    @hookimpl
    def presets_preset_files(self) -> list[Path]:
        return [self.file]

    @hookimpl
    def presets_tool_adapters(self) -> list[ToolAdapter]:
        schema = {"type": "object"}
        return [
            ToolAdapter(
                "notes.add", "", "Add a note.", schema, lambda app, a: "ok", name="notes_add"
            ),
            ToolAdapter("app.switch", "", "Switch.", schema, _switch, name="app_switch"),
        ]

    @hookimpl
    def presets_content_providers(self) -> list[ContentProvider]:
        return [
            ContentProvider("notes.all", read=lambda app, _v: "\n".join(app.notes)),
            ContentProvider(
                "notes.note",
                read=_note,
                complete=lambda app, _arg, value, _ctx: [str(i) for i in range(len(app.notes))],
            ),
            ContentProvider(
                "guide.tour",
                render=lambda app, args: [
                    results.text(f"Start at {args.get('stop') or 'the top'}."),
                    ("assistant", results.image(PIXEL, "image/png")),
                ],
                complete=lambda app, _arg, value, _ctx: ["the top", "the pond", "the tower"],
            ),
        ]


Make = Callable[..., tuple[NotesApp, Presets, PresetServer]]


@pytest.fixture
def make(tmp_path: Path) -> Iterator[Make]:
    servers: list[PresetServer] = []

    def make(
        overrides: Mapping[str, str] | None = None, policy: ToolPolicy | None = None
    ) -> tuple[NotesApp, Presets, PresetServer]:
        app = NotesApp()
        presets = bootstrap(app, plugins=[BundlePlugin(tmp_path)], overrides=overrides)
        assert not presets.problems, presets.problems
        app.presets = presets
        server = build_server(presets, ServeConfig(policy=policy))
        servers.append(server)
        return app, presets, server

    yield make
    for server in servers:
        server.close()


ERAS = pytest.mark.parametrize("mode", ["legacy", "modern"])


def client(server: PresetServer, mode: str, **kwargs: Any) -> Client:
    if mode == "legacy":
        return Client(server, mode="legacy", **kwargs)
    return Client(server, **kwargs)


async def prompt_names(c: Client) -> list[str]:
    return [p.name for p in (await c.list_prompts()).prompts]


async def resource_uris(c: Client) -> list[str]:
    return [str(r.uri) for r in (await c.list_resources()).resources]


async def template_uris(c: Client) -> list[str]:
    return [t.uri_template for t in (await c.list_resource_templates()).resource_templates]


def message_text(message: Any) -> str:
    return getattr(message.content, "text", "")


# ---------------------------------------------------------------- listing


@ERAS
async def test_members_are_listed_only_while_their_preset_is_active(make: Make, mode: str) -> None:
    _app, presets, server = make()
    async with client(server, mode) as c:
        assert await prompt_names(c) == [PROMPT_NAME, "space_app_hello"]
        assert await resource_uris(c) == [PROMPT_URI, STATUS_URI]
        assert await template_uris(c) == []
        presets.manager.set_context(NOTES)
        assert await prompt_names(c) == [PROMPT_NAME, "space_notes_summarize", "space_app_hello"]
        assert await resource_uris(c) == [PROMPT_URI, STATUS_URI, "notes://all"]
        assert await template_uris(c) == ["notes://note/{index}"]
        listed = (await c.list_prompts()).prompts[1]
        assert listed.title == "Summarize the notes"
        assert [(a.name, a.required) for a in listed.arguments or []] == [
            ("style", True),
            ("audience", False),
        ]
        presets.manager.set_override("guide", "on")
        assert "space_guide_tour" in await prompt_names(c)
        assert "guide://map.png" in await resource_uris(c)


@ERAS
async def test_completions_are_advertised_only_by_a_server_with_members(
    make: Make, mode: str, tmp_path: Path
) -> None:
    _app, _presets, server = make()
    async with client(server, mode) as c:
        caps = c.server_capabilities
        assert caps is not None and caps.completions is not None
        assert caps.resources is not None and caps.resources.list_changed is True


# ---------------------------------------------------------------- getting and reading


@ERAS
async def test_a_declared_prompt_fills_its_arguments_and_names_its_tools(
    make: Make, mode: str
) -> None:
    _app, presets, server = make()
    presets.manager.set_context(NOTES)
    async with client(server, mode) as c:
        got = await c.get_prompt("space_notes_summarize", {"style": "short"})
    first, second = got.messages
    assert (first.role, message_text(first)) == (
        "user",
        "Summarize the notes, short, for ; add one with space_notes_add.",
    )
    assert second.role == "assistant"
    assert second.content.type == "resource"
    assert str(second.content.resource.uri) == "notes://all"
    assert second.content.resource.text == "the notes, short"


@ERAS
async def test_a_rendered_prompt_comes_from_the_plugins_provider(make: Make, mode: str) -> None:
    _app, _presets, server = make(overrides={"guide": "on"})
    async with client(server, mode) as c:
        got = await c.get_prompt("space_guide_tour", {"stop": "the pond"})
    assert message_text(got.messages[0]) == "Start at the pond."
    image = got.messages[1]
    assert (image.role, image.content.type, image.content.mime_type) == (
        "assistant",
        "image",
        "image/png",
    )


@ERAS
async def test_resources_are_read_as_text_bytes_and_through_templates(
    make: Make, mode: str
) -> None:
    app, presets, server = make(overrides={"guide": "on"})
    presets.manager.set_context(NOTES)
    async with client(server, mode) as c:
        every = (await c.read_resource("notes://all")).contents[0]
        assert (every.mime_type, every.text) == ("text/plain", "buy milk\ncall ann\nbake bread")
        app.notes.append("water plants")  # read when asked, not when listed
        one = (await c.read_resource("notes://note/3")).contents[0]
        assert (str(one.uri), one.text) == ("notes://note/3", "water plants")
        picture = (await c.read_resource("guide://map.png")).contents[0]
        assert (picture.mime_type, picture.blob) == ("image/png", PIXEL)
        # The server's own prompt and status keep working beside them.
        assert "guidance" in (await c.read_resource(PROMPT_URI)).contents[0].text
        assert PROMPT_NAME in await prompt_names(c)


@ERAS
async def test_prompt_arguments_and_template_variables_complete(make: Make, mode: str) -> None:
    _app, presets, server = make(overrides={"guide": "on"})
    presets.manager.set_context(NOTES)
    async with client(server, mode) as c:
        declared = await c.complete(
            PromptReference(name="space_notes_summarize"), {"name": "style", "value": "L"}
        )
        assert declared.completion.values == ["long", "lyrical"]
        assert declared.completion.has_more is False
        provided = await c.complete(
            ResourceTemplateReference(uri="notes://note/{index}"), {"name": "index", "value": ""}
        )
        assert provided.completion.values == ["0", "1", "2"]
        rendered = await c.complete(
            PromptReference(name="space_guide_tour"), {"name": "stop", "value": "the t"}
        )
        assert rendered.completion.values == ["the top", "the tower"]
        with pytest.raises(MCPError, match="has no argument 'colour'; it takes: style, audience"):
            await c.complete(
                PromptReference(name="space_notes_summarize"), {"name": "colour", "value": ""}
            )


# ---------------------------------------------------------------- refusals


@ERAS
async def test_an_inactive_member_answers_which_preset_provides_it(make: Make, mode: str) -> None:
    _app, _presets, server = make()
    async with client(server, mode) as c:
        with pytest.raises(MCPError) as prompt:
            await c.get_prompt("space_notes_summarize", {"style": "short"})
        with pytest.raises(MCPError) as resource:
            await c.read_resource("notes://note/1")
        with pytest.raises(MCPError) as tour:
            await c.get_prompt("space_guide_tour")
        with pytest.raises(MCPError) as completion:
            await c.complete(
                ResourceTemplateReference(uri="notes://note/{index}"),
                {"name": "index", "value": ""},
            )
    for error in (prompt, resource, completion):
        message = str(error.value)
        assert "not available now" in message and "preset 'notes-tools'" in message
        assert "switch to the canvas surface and set the activity to notes" in message
    assert "preset 'guide'" in str(tour.value) and "it is off by default" in str(tour.value)


@ERAS
async def test_bad_requests_say_what_to_send(make: Make, mode: str) -> None:
    _app, presets, server = make()
    presets.manager.set_context(NOTES)
    async with client(server, mode) as c:
        with pytest.raises(MCPError, match=r"needs the argument\(s\) 'style'"):
            await c.get_prompt("space_notes_summarize")
        with pytest.raises(MCPError, match="has no argument 'tone'; it takes: style, audience"):
            await c.get_prompt("space_notes_summarize", {"style": "x", "tone": "y"})
        with pytest.raises(MCPError, match="did you mean 'space_notes_summarize'"):
            await c.get_prompt("space_notes_sumarize")
        with pytest.raises(MCPError, match="no served resource or template matches it"):
            await c.read_resource("notes://nothing")
        # The provider fails (no note 9): a plain message naming it, no traceback.
        with pytest.raises(MCPError) as failed:
            await c.read_resource("notes://note/9")
    assert "content provider of 'notes.note' failed in read: IndexError" in str(failed.value)
    assert "Traceback" not in str(failed.value)


# ---------------------------------------------------------------- gates


@ERAS
async def test_an_allow_list_hides_the_members_of_presets_it_leaves_out(
    make: Make, mode: str
) -> None:
    _app, presets, server = make(overrides={"guide": "on"})
    allowed = ToolPolicy.allow_list(presets, ["app-tools", "guide"])
    server.policy = ToolPolicy(allow=allowed)
    presets.manager.set_context(NOTES)
    async with client(server, mode) as c:
        # notes-tools is active but outside the allow-list; guide has no tool, but is named.
        assert await prompt_names(c) == [PROMPT_NAME, "space_app_hello", "space_guide_tour"]
        assert await resource_uris(c) == [PROMPT_URI, STATUS_URI, "guide://map.png"]
        assert await template_uris(c) == []
        with pytest.raises(MCPError, match=r"not available to this session.*'notes-tools'"):
            await c.read_resource("notes://all")
        with pytest.raises(MCPError, match="not available to this session"):
            await c.complete(
                PromptReference(name="space_notes_summarize"), {"name": "style", "value": ""}
            )


def test_a_tokens_profile_narrows_the_members_as_it_narrows_the_tools(make: Make) -> None:
    _app, presets, server = make(overrides={"guide": "on"})
    profile = Profile("app-only", allow=ToolPolicy.allow_list(presets, ["app-tools"]))
    server.policy = ToolPolicy(profiles=lambda token: profile if token == "t1" else None)
    presets.manager.set_context(NOTES)
    prompts, resources = server.members.visible("t1")
    assert (prompts, resources) == (("app.hello",), ())
    assert server.members.visible("revoked") == ((), ())
    assert server.members.visible(None) == (
        ("notes.summarize", "app.hello", "guide.tour"),
        ("notes.all", "notes.note", "guide.map"),
    )


# ---------------------------------------------------------------- change notices


class Notices:
    def __init__(self) -> None:
        self.methods: list[str] = []
        self._events: dict[str, anyio.Event] = {}

    async def __call__(self, message: Any) -> None:
        method = getattr(message, "method", None)
        if isinstance(method, str):
            self.methods.append(method)
            self._events.setdefault(method, anyio.Event()).set()

    async def wait(self, method: str, timeout: float = 5.0) -> None:
        with anyio.fail_after(timeout):
            await self._events.setdefault(method, anyio.Event()).wait()


async def test_a_legacy_client_hears_the_prompt_and_resource_lists_change(make: Make) -> None:
    _app, _presets, server = make()
    notices = Notices()
    async with Client(server, mode="legacy", message_handler=notices) as c:
        await c.call_tool("space_app_switch", {"to": "notes"})
        await notices.wait("notifications/resources/list_changed")
        await notices.wait("notifications/prompts/list_changed")
        assert "notes://all" in await resource_uris(c)


async def test_a_modern_listener_hears_the_prompt_and_resource_lists_change(make: Make) -> None:
    _app, _presets, server = make()
    async with (
        Client(server) as c,
        c.listen(prompts_list_changed=True, resources_list_changed=True) as sub,
    ):
        await c.call_tool("space_app_switch", {"to": "notes"})
        wanted = {"PromptsListChanged", "ResourcesListChanged"}
        seen: set[str] = set()
        with anyio.move_on_after(5):
            async for event in sub:
                seen.add(type(event).__name__)
                if wanted <= seen:
                    break
        assert wanted <= seen, f"in 5 s the listener heard only {sorted(seen)}"


async def test_a_change_that_keeps_the_resources_sends_no_resource_notice(make: Make) -> None:
    _app, presets, server = make()
    notices = Notices()
    async with Client(server, mode="legacy", message_handler=notices) as c:
        await c.list_tools()
        presets.manager.set_override("app-tools", "off")  # app-tools lists no resource
        await notices.wait("notifications/prompts/list_changed")
        await c.list_prompts()
    assert "notifications/resources/list_changed" not in notices.methods


# ---------------------------------------------------------------- the built-in plugins


@ERAS
async def test_the_built_ins_serve_the_drawing_the_graph_nodes_and_a_unit_review(
    tmp_path: Path, mode: str
) -> None:
    from agent_presets_general import SpaceHost

    host = SpaceHost(tmp_path / "state")
    presets = host.start()
    assert presets.problems == []
    (tmp_path / "state" / "units").mkdir(parents=True, exist_ok=True)
    for name in ("greet", "grow", "tidy"):
        (tmp_path / "state" / "units" / f"{name}.py").write_text("def run():\n    return 1\n")
    server = build_server(presets)
    try:
        async with client(server, mode) as c:
            # Units are inspectable in every context: the review prompt is always served.
            review = await c.complete(
                PromptReference(name="space_units_review"), {"name": "unit", "value": "gr"}
            )
            assert review.completion.values == ["greet", "grow"]
            got = await c.get_prompt("space_units_review", {"unit": "grow"})
            text = message_text(got.messages[0])
            assert "Review the code unit grow." in text
            assert "space_unit_list" in text and "space_unit_inspect" in text
            # The drawing's SVG is served while the user draws, not before.
            with pytest.raises(MCPError, match="preset 'drawing-shape-tools'"):
                await c.read_resource("drawing://current.svg")
            await c.call_tool("space_app_switch_surface", {"surface": "canvas"})
            await c.call_tool("space_app_set_activity", {"activity": "drawing"})
            await c.call_tool(
                "space_drawing_insert_shape",
                {"kind": "rectangle", "x": 1, "y": 2, "width": 30, "height": 20},
            )
            svg = (await c.read_resource("drawing://current.svg")).contents[0]
            assert svg.mime_type == "image/svg+xml"
            assert svg.text.startswith("<svg") and "<rect" in svg.text
            # A resource per graph node, its id completed.
            await c.call_tool("space_app_set_activity", {"activity": "graph"})
            assert "graph://node/{node_id}" in await template_uris(c)
            made = await c.call_tool("space_graph_add_node", {"label": "Paris"})
            node_id = made.structured_content["id"]
            ids = await c.complete(
                ResourceTemplateReference(uri="graph://node/{node_id}"),
                {"name": "node_id", "value": ""},
            )
            assert ids.completion.values == [node_id]
            node = (await c.read_resource(f"graph://node/{node_id}")).contents[0]
            assert '"label": "Paris"' in node.text
    finally:
        server.close()
