"""Every client reaches its tools: presets_search, presets_call and --tool-budget, in memory.

The scripted client is the SDK's ``Client`` in the legacy era that never
lists its tools again (it ignores ``tools/list_changed``, as Codex 0.171.0
does): it must still finish tasks whose tools belong to another context.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp_types import Implementation

from agent_presets.lib.budget import Budget, get_tokenizer
from agent_presets.server import ServeConfig
from agent_presets.server.mcp import build_server
from agent_presets.server.mcp.discovery import ALWAYS_LOAD, specificity
from agent_presets.server.policy import ToolPolicy
from agent_presets_general import SpaceHost

pytestmark = pytest.mark.anyio

CODEX = Implementation(name="codex-mcp-client", version="0.171.0")
SEARCH, CALL = "space_presets_search", "space_presets_call"
RISKY = "space_presets_call_risky"


def text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


class Session:
    """A client that lists once, then only searches and calls."""

    def __init__(self, client: Client, server: Any, host: SpaceHost, log: Path) -> None:
        self.client, self.server, self.host, self.log = client, server, host, log
        self.first: list[Any] = []

    async def search(self, query: str, limit: int = 5) -> list[dict[str, Any]]:
        result = await self.client.call_tool(SEARCH, {"query": query, "limit": limit})
        assert not result.is_error, text(result)
        found: list[dict[str, Any]] = result.structured_content["results"]  # type: ignore[index]
        return found

    async def call(self, name: str, arguments: dict[str, Any] | None = None) -> Any:
        return await self.client.call_tool(CALL, {"name": name, "arguments": arguments or {}})

    def events(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]


@pytest.fixture
def serve(tmp_path: Path) -> Callable[..., Any]:
    @asynccontextmanager
    async def serve(
        *,
        client_info: Implementation | None = CODEX,
        allow: list[str] | None = None,
        surface: str = "scene",
        mode: str = "legacy",
        plugins_dir: Path | None = None,
        **config: Any,
    ) -> AsyncIterator[Session]:
        from agent_presets.lib.plugins import load_plugins

        host = SpaceHost(tmp_path / "state")
        presets = host.start(load_plugins(plugins_dir=plugins_dir) if plugins_dir else None)
        host.update_context({"surface": surface, "activity": None})
        log = tmp_path / "events.jsonl"
        policy = ToolPolicy(
            allow=ToolPolicy.allow_list(presets, allow) if allow else None, event_log=log
        )
        server = build_server(presets, ServeConfig(policy=policy, **config))
        try:
            async with Client(server, mode=mode, client_info=client_info) as client:  # type: ignore[arg-type]
                session = Session(client, server, host, log)
                session.first = (await client.list_tools()).tools
                yield session
        finally:
            server.close()
            host.close()

    return serve


def by_name(results: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(r for r in results if r["name"] == name)


# ------------------------------------------------------------------ the proof


async def test_a_client_that_never_relists_draws_and_builds_a_scene_through_search_and_call(
    serve: Callable[..., Any],
) -> None:
    async with serve() as s:  # Codex 0.171.0, --discovery auto: known not to re-list
        first = {t.name for t in s.first}
        assert {SEARCH, CALL} <= first
        assert "space_drawing_insert_shape" not in first  # the scene context's list

        # The drawing task: its tools are another context's.
        [shape, *_] = await s.search("draw an ellipse", limit=3)
        assert shape["name"] == "space_drawing_insert_shape"
        assert shape["active"] is False
        assert "switch to the canvas surface" in shape["enable"]
        assert "activity to drawing" in shape["enable"]
        assert shape["inputSchema"]["type"] == "object"
        found = await s.search("switch to another surface of the app")
        assert by_name(found, "space_app_switch_surface")["active"] is True
        assert not (await s.call("space_app_switch_surface", {"surface": "canvas"})).is_error
        assert not (await s.call("space_app_set_activity", {"activity": "drawing"})).is_error
        [shape] = [r for r in await s.search("draw an ellipse") if r["name"] == shape["name"]]
        assert shape["active"] is True and "enable" not in shape
        drawn = await s.call(
            "space_drawing_insert_shape",
            {"shape": "ellipse", "x": 10, "y": 10, "width": 40, "height": 20},
        )
        assert not drawn.is_error, text(drawn)
        inspected = await s.call("space_drawing_inspect")
        assert "ellipse" in text(inspected)

        # The scene task: back to the scene, whose tools the drawing context lacks.
        [box, *_] = await s.search("add a box to the 3D scene", limit=3)
        assert box["name"] == "space_scene_add_cuboid" and box["active"] is False
        assert "switch to the scene surface" in box["enable"]
        assert not (await s.call("space_app_switch_surface", {"surface": "scene"})).is_error
        added = await s.call("space_scene_add_cuboid", {"position": [0, 1, 0], "size": [1, 1, 1]})
        assert not added.is_error, text(added)
        assert s.host.scene.objects, "the cuboid is in the host's scene"

    # Each presets_call is one event, under the tool it ran, as a direct call's would be.
    ran = [e["tool"] for e in s.events() if e.get("kind") == "call"]
    assert "space_drawing_insert_shape" in ran and "space_scene_add_cuboid" in ran
    assert CALL not in ran
    assert ran.count(SEARCH) == 4


async def test_the_same_tasks_under_a_tool_budget_stay_inside_it(
    serve: Callable[..., Any],
) -> None:
    async with serve(client_info=None, tool_budget=2500) as s:
        budget = Budget(get_tokenizer())  # an unknown client: counted in the default format
        listed = [t.model_dump(by_alias=True, exclude_none=True) for t in s.first]
        assert sum(budget.entry(e) for e in listed) <= 2500
        assert {SEARCH, CALL} <= {t.name for t in s.first}
        assert all((t.meta or {}).get(ALWAYS_LOAD) is True for t in s.first)
        assert not (await s.call("space_app_switch_surface", {"surface": "canvas"})).is_error
        assert not (await s.call("space_app_set_activity", {"activity": "drawing"})).is_error
        drawn = await s.call(
            "space_drawing_insert_shape",
            {"shape": "ellipse", "x": 5, "y": 5, "width": 9, "height": 9},
        )
        assert not drawn.is_error, text(drawn)


@pytest.mark.parametrize(
    ("name", "client"),
    [("claude-code", "claude-code"), ("codex-mcp-client", "codex"), ("opencode", "opencode")],
)
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_tool_budget_counts_each_client_as_it_sends_its_model(
    serve: Callable[..., Any], name: str, client: str, mode: str
) -> None:
    info = Implementation(name=name, version="0.171.0")
    async with serve(client_info=info, tool_budget=2000, surface="canvas", mode=mode) as s:
        listed = [t.model_dump(by_alias=True, exclude_none=True) for t in s.first]
    theirs = sum(Budget(get_tokenizer(), client=client).entry(e) for e in listed)
    entries = sum(Budget(get_tokenizer(), client="wire").entry(e) for e in listed)
    assert theirs <= 2000
    # Counted as tools/list entries, the same list would be far over: the budget buys
    # what the model reads, not what the wire carries.
    assert entries > 2000


# ------------------------------------------------------------------ who gets the two tools


async def test_auto_gives_an_unknown_client_the_list_alone(serve: Callable[..., Any]) -> None:
    async with serve(client_info=None) as s:
        names = {t.name for t in s.first}
        assert SEARCH not in names and CALL not in names
        # Not listed, but not refused either: the same rules as a direct call.
        assert (await s.search("add a box to the scene"))[0]["name"] == "space_scene_add_cuboid"


async def test_a_later_codex_version_is_not_taken_for_0_171(serve: Callable[..., Any]) -> None:
    later = Implementation(name="codex-mcp-client", version="0.172.0")
    # Delivery live: the known-client rule of discovery itself (stable delivery serves
    # every Codex the tools, docs/clients.md).
    async with serve(client_info=later, delivery="live") as s:
        assert SEARCH not in {t.name for t in s.first}


async def test_discovery_list_serves_neither_tool(serve: Callable[..., Any]) -> None:
    async with serve(discovery="list") as s:
        assert SEARCH not in {t.name for t in s.first}
        result = await s.client.call_tool(SEARCH, {"query": "box"})
        assert result.is_error and "no installed plugin provides it" in text(result)


async def test_discovery_search_serves_both_to_every_client_marked_always_load(
    serve: Callable[..., Any],
) -> None:
    async with serve(client_info=None, discovery="search") as s:
        tools = {t.name: t for t in s.first}
        assert tools[SEARCH].meta == {ALWAYS_LOAD: True}
        assert tools[CALL].meta == {ALWAYS_LOAD: True}
        # Without a budget the other tools are as they always were.
        assert tools["space_scene_add_cuboid"].meta is None


def test_a_tool_budget_with_discovery_list_is_refused() -> None:
    from agent_presets.lib.model import PresetError

    with pytest.raises(PresetError, match="discovery 'auto' or 'search'"):
        ServeConfig(tool_budget=1000, discovery="list")


# ------------------------------------------------------------------ the budget's order


async def test_the_budget_lists_whole_presets_in_order_and_the_rest_is_searchable(
    serve: Callable[..., Any],
) -> None:
    async with serve(client_info=None, tool_budget=3000) as s:
        names = [t.name for t in s.first]
        assert names[:4] == ["space_presets_request", SEARCH, CALL, RISKY]
        registry = s.server.presets.registry
        tools = s.server.tool_registry
        context = s.server.presets.manager.get_context()
        listed_presets = list(dict.fromkeys(tools.get(n).preset for n in names[4:]))
        active = [a.name for a in s.server.presets.manager.get_active_presets()]

        # Every preset listed is listed whole, and none of them is less specific than one left out.
        def preset_of(name: str) -> str | None:
            tool = tools.get(name)
            return tool.preset if tool is not None else None

        for name in listed_presets:
            assert {t for t in names if preset_of(t) == name} == {
                t for t in tools.names() if preset_of(t) == name
            }
        left = [p for p in active if p not in listed_presets]
        assert left, "3,000 tokens hold less than the scene's active set"
        lowest = min(specificity(registry.get(p), context) for p in listed_presets)
        assert all(specificity(registry.get(p), context) <= lowest for p in left)
        # What was left out is one search away, active, callable.
        out = next(n for n in tools.names() if tools.get(n).preset in left)
        hit = next(r for r in await s.search(out.removeprefix("space_").replace("_", " ")))
        assert hit["active"] is True


PINNED_PLUGIN = """
from agent_presets import ToolAdapter, hookimpl


@hookimpl
def presets_tool_adapters():
    return [
        ToolAdapter(
            "pinned.ping",
            description="Answer pong.",
            input_schema={"type": "object"},
            handler=lambda app, arguments: "pong",
        )
    ]
"""


@pytest.mark.parametrize("pin", [False, True])
async def test_a_pinned_preset_is_listed_before_more_specific_ones(
    serve: Callable[..., Any], tmp_path: Path, pin: bool
) -> None:
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "pinned.py").write_text(PINNED_PLUGIN)
    (folder / "pinned.yaml").write_text(
        "presets:\n  - name: pinned-tools\n    default_state: auto\n    risk: normal\n"
        "    contexts: [{surface: any}]\n    tool_ids: [pinned.ping]\n"
        f"    pin: {str(pin).lower()}\n"
    )
    async with serve(client_info=None, tool_budget=2000, plugins_dir=folder) as s:
        names = [t.name for t in s.first]
        own = ["space_presets_request", SEARCH, CALL, RISKY]
        if pin:  # first after the server's own, though {surface: any} is the least specific
            assert names[: len(own) + 1] == [*own, "space_pinned_ping"]
        else:  # the scene's presets come first; the budget is spent before this one
            assert "space_pinned_ping" not in names
            assert names[len(own)].startswith("space_scene_")


# ------------------------------------------------------------------ gates


async def test_search_never_shows_what_the_allow_list_hides_and_call_refuses_it_alike(
    serve: Callable[..., Any],
) -> None:
    async with serve(allow=["scene-object-tools"], tool_budget=4000) as s:
        names = {t.name for t in s.first}
        assert {SEARCH, CALL} <= names  # served under --allow, not removed by it
        for query in ("draw an ellipse", "switch surface", "add a light to the scene"):
            for hit in await s.search(query, limit=20):
                assert hit["name"].startswith("space_scene_"), hit
        direct = await s.client.call_tool("space_app_switch_surface", {"surface": "canvas"})
        through = await s.call("space_app_switch_surface", {"surface": "canvas"})
        assert direct.is_error and through.is_error
        assert text(through) == text(direct)
        assert "not allowed on this server" in text(through)


async def test_a_risky_preset_stays_off_and_its_results_say_only_a_person_turns_it_on(
    serve: Callable[..., Any],
) -> None:
    async with serve() as s:
        hit = by_name(await s.search("run a bash command in the shell"), "space_app_run_bash")
        assert hit["active"] is False and hit["risk"] == "shell"
        assert "only the user can turn preset 'general-shell-tools' on" in hit["enable"]
        assert "space_presets_request" in hit["enable"]
        direct = await s.client.call_tool("space_app_run_bash", {"command": "true"})
        through = await s.call("space_app_run_bash", {"command": "true"})
        assert through.is_error and text(through) == text(direct)
        assert "Only the user can set an override" in text(through)
        assert "general-shell-tools" not in {
            a.name for a in s.server.presets.manager.get_active_presets()
        }


async def test_presets_call_refuses_itself_and_bad_arguments_clearly(
    serve: Callable[..., Any],
) -> None:
    async with serve() as s:
        nested = await s.call(CALL, {"name": "space_app_set_theme"})
        assert nested.is_error and "call it directly" in text(nested)
        bad = await s.client.call_tool(CALL, {"name": "space_app_set_theme", "arguments": [1]})
        assert bad.is_error and "'arguments' must be an object" in text(bad)
        empty = await s.client.call_tool(SEARCH, {"query": ""})
        assert empty.is_error and "query" in text(empty)
        unknown = await s.call("space_no_such_tool")
        assert unknown.is_error and "no installed plugin provides it" in text(unknown)


async def test_a_malformed_presets_call_writes_one_line_as_a_direct_bad_call_does(
    serve: Callable[..., Any],
) -> None:
    async with serve() as s:
        direct = await s.client.call_tool("space_app_set_theme", {"theme": 5})
        assert direct.is_error
        malformed = [
            {"name": "space_app_set_theme", "arguments": [1]},
            {"name": "space_app_set_theme", "arguments": {}, "extra": 1},
            {"name": ""},
            {"name": SEARCH, "arguments": {"query": "box"}},
        ]
        for outer in malformed:
            result = await s.client.call_tool(CALL, outer)
            assert result.is_error and f"Invalid arguments for {CALL}" in text(result)
    calls = [e for e in s.events() if e.get("kind") == "call"]
    assert [(e["tool"], e["outcome"]) for e in calls] == [
        ("space_app_set_theme", "bad-arguments"),
        *[(CALL, "bad-arguments")] * len(malformed),
    ]
    assert all(e["error"] == "ToolArgumentError" for e in calls)


async def test_a_call_budget_counts_a_tool_run_through_presets_call_once(
    serve: Callable[..., Any],
) -> None:
    async with serve(client_info=CODEX) as s:
        s.server.policy.max_calls = 2
        assert not (await s.call("space_app_set_theme", {"theme": "dark"})).is_error
        assert not (await s.call("space_app_set_theme", {"theme": "light"})).is_error
        spent = await s.call("space_app_set_theme", {"theme": "dark"})
        assert spent.is_error and "call budget of this server (2 tool calls)" in text(spent)


# ------------------------------------------------------------------ seen not to re-list


async def test_a_client_seen_not_to_relist_gets_the_tools_on_its_next_list(
    serve: Callable[..., Any],
) -> None:
    async with serve(client_info=None) as s:
        s.server.discovery.relisting.window = 0.05
        assert SEARCH not in {t.name for t in s.first}
        # A context change: the client hears list_changed and does not list again ...
        assert not (await s.client.call_tool("space_app_set_theme", {"theme": "dark"})).is_error
        s.host.update_context({"surface": "canvas", "activity": "drawing"})
        import anyio

        await anyio.sleep(0.1)
        # ... and its next request, past the window, shows it: its next list has both tools.
        await s.client.call_tool("space_app_set_theme", {"theme": "light"})
        assert "local" in s.server.discovery.relisting.principals
        again = {t.name for t in (await s.client.list_tools()).tools}
        assert {SEARCH, CALL} <= again


async def test_a_client_that_relists_in_time_is_not_marked(serve: Callable[..., Any]) -> None:
    async with serve(client_info=None) as s:
        s.server.discovery.relisting.window = 0.5
        s.host.update_context({"surface": "canvas", "activity": "drawing"})
        await s.client.list_tools()  # at once, as opencode and Claude Code do
        import anyio

        await anyio.sleep(0.6)
        await s.client.call_tool("space_app_set_theme", {"theme": "light"})
        assert not s.server.discovery.relisting.principals
        assert SEARCH not in {t.name for t in (await s.client.list_tools()).tools}


async def test_2026_07_28_lists_alike_for_every_request_of_a_principal(
    serve: Callable[..., Any],
) -> None:
    # Delivery live: the seen rule itself (a stable caller always has both tools).
    async with serve(client_info=None, mode="2026-07-28", delivery="live") as s:
        assert SEARCH not in {t.name for t in s.first}
        s.server.discovery.relisting.principals.add("local")  # seen, by principal
        again = {t.name for t in (await s.client.list_tools()).tools}
        assert {SEARCH, CALL} <= again


# ------------------------------------------------------------------ a large catalog


def _bench() -> Any:
    import importlib.util
    import sys

    path = Path(__file__).parents[2] / "bench" / "toolsearch.py"
    spec = importlib.util.spec_from_file_location("bench_toolsearch", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_a_thousand_tools_stay_under_the_budget_and_search_finds_nine_in_ten() -> None:
    figures = _bench().measure(rounds=1, budget=4000)
    assert figures["tools"] == 1000 and figures["presets"] == 100
    assert figures["list_tools_no_budget"] == 1001
    assert figures["list_tokens_budget"] <= 4000 < figures["list_tokens_no_budget"]
    assert figures["top5"] >= 0.90, figures["misses"]
    # The 5 ms target is the bench's (docs/performance.md); a busy test machine gets slack.
    assert figures["search_ms_median"] < 50
