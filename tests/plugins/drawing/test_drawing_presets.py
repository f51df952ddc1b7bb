"""The drawing presets: exactly the spec's Drawing table, offered in the drawing context."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

import agent_presets_drawing
from agent_presets import MissingRuntimeError, bootstrap
from agent_presets.testing import (
    PresetTable,
    mcp_name,
    plugin_adapters,
    plugin_presets,
    read_only_tools,
)
from agent_presets_general import SPACE_DEFAULTS, SpaceApp

CONTEXT = {"surface": "canvas", "activity": "drawing"}

# The spec's "Built-In Presets / Drawing" table: name -> (default, risk, MCP tools).
SPEC = {
    "drawing-shape-tools": (
        "auto",
        "normal",
        [
            "space_drawing_inspect",
            "space_drawing_set_tool",
            "space_drawing_insert_shape",
            "space_drawing_insert_line",
            "space_drawing_insert_stroke",
        ],
    ),
    "drawing-layer-tools": (
        "auto",
        "normal",
        [
            "space_drawing_add_layer",
            "space_drawing_duplicate_layer",
            "space_drawing_rename_layer",
            "space_drawing_set_active_layer",
        ],
    ),
    "drawing-layer-destructive-tools": ("off", "destructive", ["space_drawing_delete_layer"]),
    "drawing-color-tools": (
        "auto",
        "normal",
        [
            "space_drawing_set_defaults",
            "space_drawing_update_selection_style",
            "space_drawing_sample_color",
        ],
    ),
    "drawing-history-tools": ("auto", "normal", ["space_drawing_undo", "space_drawing_redo"]),
    "drawing-selection-tools": (
        "auto",
        "normal",
        [
            "space_drawing_select",
            "space_drawing_transform_selection",
            "space_drawing_clear_selection",
        ],
    ),
    "drawing-selection-destructive-tools": (
        "off",
        "destructive",
        ["space_drawing_delete_selected"],
    ),
}

SPACE = SPACE_DEFAULTS.namespace  # the Space app's, which these tools are served in


TABLE = PresetTable(SPEC)


def test_preset_file_defines_exactly_the_spec_table() -> None:
    assert PresetTable.of(agent_presets_drawing, SPACE) == TABLE
    assert list(PresetTable.of(agent_presets_drawing, SPACE)) == list(TABLE)
    for preset in plugin_presets(agent_presets_drawing):
        assert preset.group == "drawing"
        assert [dict(c) for c in preset.contexts] == [CONTEXT]
        assert preset.system_prompt and len(preset.system_prompt) > 80


def test_every_adapter_belongs_to_a_preset_and_is_named_for_its_id() -> None:
    adapters = plugin_adapters(agent_presets_drawing).values()
    assert {mcp_name(a, SPACE) for a in adapters} == TABLE.tools(include_off=True)
    for adapter in adapters:
        slug = adapter.id.removeprefix("drawing.")
        assert adapter.name == "drawing_" + slug.replace("-", "_")
        assert adapter.input_schema.get("additionalProperties") is False


def test_only_reading_tools_are_marked_read_only() -> None:
    assert read_only_tools(agent_presets_drawing, SPACE) == {
        "space_drawing_inspect",
        "space_drawing_sample_color",
    }


def test_drawing_context_offers_the_auto_presets_only(make_app: Callable[..., Any]) -> None:
    app = make_app(destructive=False)
    assert set(app.tools()) == TABLE.tools(include_off=False)
    active = {a.name for a in app.presets.manager.get_active_presets()}
    assert active == TABLE.auto_presets()


def test_destructive_tools_come_only_with_an_override(make_app: Callable[..., Any]) -> None:
    app = make_app(destructive=False)
    assert "space_drawing_delete_layer" not in app.tools()
    app.presets.manager.set_override("drawing-layer-destructive-tools", "on")
    assert "space_drawing_delete_layer" in app.tools()
    assert "space_drawing_delete_selected" not in app.tools()
    app.presets.manager.set_override("drawing-selection-destructive-tools", "on")
    assert set(app.tools()) == TABLE.tools(include_off=True)


@pytest.mark.parametrize(
    ("surface", "activity"), [("canvas", "graph"), ("canvas", None), ("scene", "drawing")]
)
def test_drawing_tools_leave_outside_the_drawing_context(
    make_app: Callable[..., Any], surface: str, activity: str | None
) -> None:
    app = make_app(destructive=False)
    app.host.shell.set_surface(surface)
    app.host.shell.set_activity(activity)
    assert app.tools() == {}
    assert app.presets.tool_registry.names() == []


def test_tool_list_follows_the_shell_into_the_registry(make_app: Callable[..., Any]) -> None:
    app = make_app(destructive=False)
    assert set(app.presets.tool_registry.names()) == TABLE.tools(include_off=False)
    app.host.shell.set_activity("graph")
    assert app.presets.tool_registry.names() == []
    app.host.shell.set_activity("drawing")
    assert set(app.presets.tool_registry.names()) == TABLE.tools(include_off=False)


def test_an_app_without_a_drawing_runtime_gets_an_error_naming_it() -> None:
    presets = bootstrap(
        SimpleNamespace(),
        plugins=[SpaceApp(), agent_presets_drawing],
        context={**CONTEXT, "canvas_visible": True},
    )
    tools = {t.name: t for t in presets.manager.get_tool_defs()}
    with pytest.raises(MissingRuntimeError, match=r"space_drawing_inspect requires app\.drawing"):
        tools["space_drawing_inspect"].run({})
