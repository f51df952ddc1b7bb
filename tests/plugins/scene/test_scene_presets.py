"""The scene presets: the spec's Scene table, offered on the scene surface."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

import agent_presets_scene
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

CONTEXT = {"surface": "scene"}

# The spec's "Built-In Presets / Scene" table: name -> (default, risk, MCP tools).
SPEC = {
    "scene-object-tools": (
        "auto",
        "normal",
        [
            "space_scene_add_cuboid",
            "space_scene_add_physics_body",
            "space_scene_select_object",
        ],
    ),
    "scene-terrain-tools": (
        "auto",
        "normal",
        ["space_scene_add_terrain", "space_scene_raycast_terrain"],
    ),
    "scene-terrain-destructive-tools": ("off", "destructive", ["space_scene_remove_terrain"]),
    "scene-lighting-tools": (
        "auto",
        "normal",
        ["space_scene_add_light", "space_scene_set_light_state"],
    ),
    "scene-skybox-tools": (
        "auto",
        "normal",
        ["space_scene_set_skybox", "space_scene_set_background"],
    ),
    "scene-camera-tools": (
        "auto",
        "normal",
        ["space_scene_set_camera", "space_scene_reset_camera", "space_scene_screen_ray"],
    ),
    "scene-state-tools": (
        "off",
        "destructive",
        ["space_scene_get_state", "space_scene_restore_state"],
    ),
}

SPACE = SPACE_DEFAULTS.namespace  # the Space app's, which these tools are served in


TABLE = PresetTable(SPEC)


def test_preset_file_defines_exactly_the_spec_table() -> None:
    assert PresetTable.of(agent_presets_scene, SPACE) == TABLE
    assert list(PresetTable.of(agent_presets_scene, SPACE)) == list(TABLE)
    for preset in plugin_presets(agent_presets_scene):
        assert preset.group == "scene"
        assert [dict(c) for c in preset.contexts] == [CONTEXT]
        assert preset.system_prompt and len(preset.system_prompt) > 80


def test_every_adapter_belongs_to_a_preset_and_is_named_for_its_id() -> None:
    adapters = plugin_adapters(agent_presets_scene).values()
    assert {mcp_name(a, SPACE) for a in adapters} == TABLE.tools(include_off=True)
    for adapter in adapters:
        slug = adapter.id.removeprefix("scene.")
        assert adapter.name == "scene_" + slug.replace("-", "_")
        assert adapter.input_schema.get("additionalProperties") is False


def test_only_reading_tools_are_marked_read_only() -> None:
    assert read_only_tools(agent_presets_scene, SPACE) == {
        "space_scene_raycast_terrain",
        "space_scene_screen_ray",
        "space_scene_get_state",
    }


def test_scene_surface_offers_the_auto_presets_only(make_app: Callable[..., Any]) -> None:
    app = make_app(enable_off=False)
    assert set(app.tools()) == TABLE.tools(include_off=False)
    active = {a.name for a in app.presets.manager.get_active_presets()}
    assert active == TABLE.auto_presets()


@pytest.mark.parametrize("activity", [None, "drawing", "graph"])
def test_scene_tools_do_not_care_about_the_activity(
    make_app: Callable[..., Any], activity: str | None
) -> None:
    app = make_app(enable_off=False)
    app.host.shell.set_activity(activity)
    assert set(app.tools()) == TABLE.tools(include_off=False)


def test_destructive_tools_come_only_with_an_override(make_app: Callable[..., Any]) -> None:
    app = make_app(enable_off=False)
    assert "space_scene_remove_terrain" not in app.tools()
    app.presets.manager.set_override("scene-terrain-destructive-tools", "on")
    assert "space_scene_remove_terrain" in app.tools()
    assert "space_scene_get_state" not in app.tools()
    app.presets.manager.set_override("scene-state-tools", "on")
    assert set(app.tools()) == TABLE.tools(include_off=True)


def test_scene_tools_leave_for_the_canvas_and_come_back(make_app: Callable[..., Any]) -> None:
    app = make_app(enable_off=False)
    assert set(app.presets.tool_registry.names()) == TABLE.tools(include_off=False)
    app.host.shell.set_surface("canvas")
    assert app.tools() == {}
    assert app.presets.tool_registry.names() == []
    app.host.shell.set_surface("scene")
    assert set(app.presets.tool_registry.names()) == TABLE.tools(include_off=False)


def test_an_app_without_a_scene_runtime_gets_an_error_naming_it() -> None:
    presets = bootstrap(
        SimpleNamespace(),
        plugins=[SpaceApp(), agent_presets_scene],
        context={**CONTEXT, "canvas_visible": False},
    )
    tools = {t.name: t for t in presets.manager.get_tool_defs()}
    with pytest.raises(MissingRuntimeError, match=r"space_scene_reset_camera requires app\.scene"):
        tools["space_scene_reset_camera"].run({})
