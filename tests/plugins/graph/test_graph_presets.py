"""The graph presets: the spec's Graph table, offered in the graph context."""

from __future__ import annotations

from collections.abc import Callable
from importlib.resources import files
from types import SimpleNamespace
from typing import Any

import pytest

import agent_presets_graph
from agent_presets import MissingRuntimeError, load_preset_file
from agent_presets.bootstrap import bootstrap

CONTEXT = {"surface": "canvas", "activity": "graph"}

# The spec's "Built-In Presets / Graph" table: name -> (default, risk, MCP tools).
# One deliberate difference: graph-node-map-tools deletes data, so it ships off.
SPEC = {
    "graph-node-tools": ("auto", "normal", ["space_graph_add_node", "space_graph_load_node"]),
    "graph-node-map-tools": ("off", "destructive", ["space_graph_remove_nodes"]),
    "graph-edge-tools": ("auto", "normal", ["space_graph_add_edge"]),
    "graph-nav-tools": (
        "auto",
        "normal",
        ["space_graph_focus_node", "space_graph_open_node", "space_graph_search_nodes"],
    ),
    "graph-identity-tools": ("auto", "normal", ["space_graph_create_identity"]),
    "graph-state-tools": (
        "off",
        "destructive",
        ["space_graph_get_state", "space_graph_restore_state"],
    ),
}


def spec_tools(*, include_off: bool) -> set[str]:
    return {
        tool
        for default, _, tools in SPEC.values()
        if include_off or default == "auto"
        for tool in tools
    }


def test_preset_file_defines_exactly_the_spec_table() -> None:
    presets = load_preset_file(files(agent_presets_graph) / "presets.yaml")
    assert [p.name for p in presets] == list(SPEC)
    adapters = {a.id: a for a in agent_presets_graph.presets_tool_adapters()}
    for preset in presets:
        default, risk, tools = SPEC[preset.name]
        assert (preset.default_state, preset.risk, preset.group) == (default, risk, "graph")
        assert [dict(c) for c in preset.contexts] == [CONTEXT]
        assert [adapters[t].mcp_name for t in preset.tool_ids] == tools
        assert preset.system_prompt and len(preset.system_prompt) > 80


def test_every_adapter_belongs_to_a_preset_and_is_named_for_its_id() -> None:
    adapters = agent_presets_graph.presets_tool_adapters()
    assert {a.mcp_name for a in adapters} == spec_tools(include_off=True)
    for adapter in adapters:
        slug = adapter.id.removeprefix("graph.")
        assert adapter.mcp_name == "space_graph_" + slug.replace("-", "_")
        assert adapter.input_schema.get("additionalProperties") is False


def test_only_reading_tools_are_marked_read_only() -> None:
    read_only = {
        a.mcp_name
        for a in agent_presets_graph.presets_tool_adapters()
        if (a.annotations or {}).get("readOnlyHint")
    }
    assert read_only == {"space_graph_search_nodes", "space_graph_get_state"}


def test_graph_context_offers_the_auto_presets_only(make_app: Callable[..., Any]) -> None:
    app = make_app(enable_off=False)
    assert set(app.tools()) == spec_tools(include_off=False)
    active = {a.name for a in app.presets.manager.get_active_presets()}
    assert active == {name for name, (default, _, _) in SPEC.items() if default == "auto"}


def test_deleting_tools_come_only_with_an_override(make_app: Callable[..., Any]) -> None:
    app = make_app(enable_off=False)
    assert "space_graph_remove_nodes" not in app.tools()
    app.presets.manager.set_override("graph-node-map-tools", "on")
    assert "space_graph_remove_nodes" in app.tools()
    assert "space_graph_restore_state" not in app.tools()
    app.presets.manager.set_override("graph-state-tools", "on")
    assert set(app.tools()) == spec_tools(include_off=True)
    app.presets.manager.set_override("graph-node-map-tools", "auto")
    assert "space_graph_remove_nodes" not in app.tools()


@pytest.mark.parametrize(
    ("surface", "activity"), [("canvas", "drawing"), ("canvas", None), ("scene", "graph")]
)
def test_graph_tools_leave_outside_the_graph_context(
    make_app: Callable[..., Any], surface: str, activity: str | None
) -> None:
    app = make_app(enable_off=False)
    app.host.shell.set_surface(surface)
    app.host.shell.set_activity(activity)
    assert app.tools() == {}
    assert app.presets.tool_registry.names() == []


def test_tool_list_follows_the_shell_into_the_registry(make_app: Callable[..., Any]) -> None:
    app = make_app(enable_off=False)
    assert set(app.presets.tool_registry.names()) == spec_tools(include_off=False)
    app.host.shell.set_activity("drawing")
    assert app.presets.tool_registry.names() == []
    app.host.shell.set_activity("graph")
    assert set(app.presets.tool_registry.names()) == spec_tools(include_off=False)


def test_an_app_without_a_graph_runtime_gets_an_error_naming_it() -> None:
    presets = bootstrap(
        SimpleNamespace(),
        plugins=[agent_presets_graph],
        context={**CONTEXT, "canvas_visible": True},
    )
    tools = {t.name: t for t in presets.manager.get_tool_defs()}
    with pytest.raises(MissingRuntimeError, match=r"space_graph_add_node requires app\.graph"):
        tools["space_graph_add_node"].run({"label": "x"})
