"""The scene presets: the spec's Scene table, offered on the scene surface."""

from __future__ import annotations

from collections.abc import Callable
from importlib.resources import files
from types import SimpleNamespace
from typing import Any

import pytest

import agent_presets_scene
from agent_presets import MissingRuntimeError, load_preset_file
from agent_presets.bootstrap import bootstrap

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


def spec_tools(*, include_off: bool) -> set[str]:
    return {
        tool
        for default, _, tools in SPEC.values()
        if include_off or default == "auto"
        for tool in tools
    }


def test_preset_file_defines_exactly_the_spec_table() -> None:
    presets = load_preset_file(files(agent_presets_scene) / "presets.yaml")
    assert [p.name for p in presets] == list(SPEC)
    adapters = {a.id: a for a in agent_presets_scene.presets_tool_adapters()}
    for preset in presets:
        default, risk, tools = SPEC[preset.name]
        assert (preset.default_state, preset.risk, preset.group) == (default, risk, "scene")
        assert [dict(c) for c in preset.contexts] == [CONTEXT]
        assert [adapters[t].mcp_name for t in preset.tool_ids] == tools
        assert preset.system_prompt and len(preset.system_prompt) > 80


def test_every_adapter_belongs_to_a_preset_and_is_named_for_its_id() -> None:
    adapters = agent_presets_scene.presets_tool_adapters()
    assert {a.mcp_name for a in adapters} == spec_tools(include_off=True)
    for adapter in adapters:
        slug = adapter.id.removeprefix("scene.")
        assert adapter.mcp_name == "space_scene_" + slug.replace("-", "_")
        assert adapter.input_schema.get("additionalProperties") is False


def test_only_reading_tools_are_marked_read_only() -> None:
    read_only = {
        a.mcp_name
        for a in agent_presets_scene.presets_tool_adapters()
        if (a.annotations or {}).get("readOnlyHint")
    }
    assert read_only == {
        "space_scene_raycast_terrain",
        "space_scene_screen_ray",
        "space_scene_get_state",
    }


def test_scene_surface_offers_the_auto_presets_only(make_app: Callable[..., Any]) -> None:
    app = make_app(enable_off=False)
    assert set(app.tools()) == spec_tools(include_off=False)
    active = {a.name for a in app.presets.manager.get_active_presets()}
    assert active == {name for name, (default, _, _) in SPEC.items() if default == "auto"}


@pytest.mark.parametrize("activity", [None, "drawing", "graph"])
def test_scene_tools_do_not_care_about_the_activity(
    make_app: Callable[..., Any], activity: str | None
) -> None:
    app = make_app(enable_off=False)
    app.host.shell.set_activity(activity)
    assert set(app.tools()) == spec_tools(include_off=False)


def test_destructive_tools_come_only_with_an_override(make_app: Callable[..., Any]) -> None:
    app = make_app(enable_off=False)
    assert "space_scene_remove_terrain" not in app.tools()
    app.presets.manager.set_override("scene-terrain-destructive-tools", "on")
    assert "space_scene_remove_terrain" in app.tools()
    assert "space_scene_get_state" not in app.tools()
    app.presets.manager.set_override("scene-state-tools", "on")
    assert set(app.tools()) == spec_tools(include_off=True)


def test_scene_tools_leave_for_the_canvas_and_come_back(make_app: Callable[..., Any]) -> None:
    app = make_app(enable_off=False)
    assert set(app.presets.tool_registry.names()) == spec_tools(include_off=False)
    app.host.shell.set_surface("canvas")
    assert app.tools() == {}
    assert app.presets.tool_registry.names() == []
    app.host.shell.set_surface("scene")
    assert set(app.presets.tool_registry.names()) == spec_tools(include_off=False)


def test_an_app_without_a_scene_runtime_gets_an_error_naming_it() -> None:
    presets = bootstrap(
        SimpleNamespace(),
        plugins=[agent_presets_scene],
        context={**CONTEXT, "canvas_visible": False},
    )
    tools = {t.name: t for t in presets.manager.get_tool_defs()}
    with pytest.raises(MissingRuntimeError, match=r"space_scene_reset_camera requires app\.scene"):
        tools["space_scene_reset_camera"].run({})
