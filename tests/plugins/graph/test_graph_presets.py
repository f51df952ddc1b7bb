"""The graph presets: the spec's Graph table, offered in the graph context."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

import agent_presets_graph
from agent_presets import MissingRuntimeError
from agent_presets.lib.boot import bootstrap
from agent_presets.testing import (
    PresetTable,
    mcp_name,
    plugin_adapters,
    plugin_presets,
    read_only_tools,
)
from agent_presets_general import SPACE_DEFAULTS, SpaceApp

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

SPACE = SPACE_DEFAULTS.namespace  # the Space app's, which these tools are served in


TABLE = PresetTable(SPEC)


def test_preset_file_defines_exactly_the_spec_table() -> None:
    assert PresetTable.of(agent_presets_graph, SPACE) == TABLE
    assert list(PresetTable.of(agent_presets_graph, SPACE)) == list(TABLE)
    for preset in plugin_presets(agent_presets_graph):
        assert preset.group == "graph"
        assert [dict(c) for c in preset.contexts] == [CONTEXT]
        assert preset.system_prompt and len(preset.system_prompt) > 80


def test_every_adapter_belongs_to_a_preset_and_is_named_for_its_id() -> None:
    adapters = plugin_adapters(agent_presets_graph).values()
    assert {mcp_name(a, SPACE) for a in adapters} == TABLE.tools(include_off=True)
    for adapter in adapters:
        slug = adapter.id.removeprefix("graph.")
        assert adapter.name == "graph_" + slug.replace("-", "_")
        assert adapter.input_schema.get("additionalProperties") is False


def test_only_reading_tools_are_marked_read_only() -> None:
    assert read_only_tools(agent_presets_graph, SPACE) == {
        "space_graph_search_nodes",
        "space_graph_get_state",
    }


def test_graph_context_offers_the_auto_presets_only(make_app: Callable[..., Any]) -> None:
    app = make_app(enable_off=False)
    assert set(app.tools()) == TABLE.tools(include_off=False)
    active = {a.name for a in app.presets.manager.get_active_presets()}
    assert active == TABLE.auto_presets()


def test_deleting_tools_come_only_with_an_override(make_app: Callable[..., Any]) -> None:
    app = make_app(enable_off=False)
    assert "space_graph_remove_nodes" not in app.tools()
    app.presets.manager.set_override("graph-node-map-tools", "on")
    assert "space_graph_remove_nodes" in app.tools()
    assert "space_graph_restore_state" not in app.tools()
    app.presets.manager.set_override("graph-state-tools", "on")
    assert set(app.tools()) == TABLE.tools(include_off=True)
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
    assert set(app.presets.tool_registry.names()) == TABLE.tools(include_off=False)
    app.host.shell.set_activity("drawing")
    assert app.presets.tool_registry.names() == []
    app.host.shell.set_activity("graph")
    assert set(app.presets.tool_registry.names()) == TABLE.tools(include_off=False)


def test_an_app_without_a_graph_runtime_gets_an_error_naming_it() -> None:
    presets = bootstrap(
        SimpleNamespace(),
        plugins=[SpaceApp(), agent_presets_graph],
        context={**CONTEXT, "canvas_visible": True},
    )
    tools = {t.name: t for t in presets.manager.get_tool_defs()}
    with pytest.raises(MissingRuntimeError, match=r"space_graph_add_node requires app\.graph"):
        tools["space_graph_add_node"].run({"label": "x"})
