"""PresetManager: cached resolution, change notifications that mean something, defensive copies."""

from __future__ import annotations

from typing import Any

import pytest

from agent_presets import PresetValidationError, Resolution

SCENE: dict[str, Any] = {"surface": "scene", "activity": None, "canvas_visible": False}
DRAWING: dict[str, Any] = {"surface": "canvas", "activity": "drawing", "canvas_visible": True}
GRAPH: dict[str, Any] = {"surface": "canvas", "activity": "graph", "canvas_visible": True}


@pytest.fixture
def stack(make_stack, make_preset):
    return make_stack(
        [
            make_preset(
                "scene-tools", ["scene.add"], contexts=[{"surface": "scene"}], prompt="3D."
            ),
            make_preset("drawing-tools", ["drawing.shape"], contexts=[{"activity": "drawing"}]),
            make_preset("canvas-tools", ["canvas.pan"], contexts=[{"surface": "canvas"}]),
            make_preset("general", ["app.theme"], prompt="General."),
            make_preset("shell", ["app.bash"], default_state="off", risk="shell"),
        ]
    )


# ------------------------------------------------------------------ caching


def test_resolve_returns_the_same_object_until_something_changes(stack):
    first = stack.manager.resolve()
    assert stack.manager.resolve() is first
    stack.manager.set_context({**SCENE, "world_id": "lab"})
    assert stack.manager.resolve() is first
    stack.manager.set_context(DRAWING)
    second = stack.manager.resolve()
    assert second is not first
    assert second.active_names == ("drawing-tools", "canvas-tools", "general")
    assert stack.manager.resolve() is second


def test_the_cached_resolution_equals_a_fresh_registry_resolution(stack):
    for context, overrides in [
        (DRAWING, {}),
        (GRAPH, {"shell": "on"}),
        (SCENE, {"general": "off"}),
    ]:
        stack.manager.set_context(context)
        for name in ("shell", "general"):
            stack.manager.set_override(name, overrides.get(name, "auto"))
        assert stack.manager.resolve() == stack.registry.resolve(context, overrides)


def test_get_tool_defs_is_cached_until_the_tool_ids_change(stack):
    first = stack.manager.get_tool_defs()
    second = stack.manager.get_tool_defs()
    assert first == second
    assert all(a is b for a, b in zip(first, second, strict=True))
    stack.manager.set_context(DRAWING)
    assert [t.name for t in stack.manager.get_tool_defs()] == [
        "space_drawing_shape",
        "space_canvas_pan",
        "space_app_theme",
    ]


# ------------------------------------------------------------------ on_change


def test_on_change_fires_when_the_active_presets_change(stack):
    stack.manager.set_context(DRAWING)
    assert len(stack.changes) == 1
    assert isinstance(stack.changes[0], Resolution)
    assert stack.changes[0] is stack.manager.resolve()


def test_on_change_never_fires_for_a_context_field_no_pattern_mentions(stack):
    for world in ("lab", "home", "attic"):
        stack.manager.set_context({**SCENE, "world_id": world, "selection_kind": world})
    assert stack.changes == []
    assert stack.manager.get_context()["world_id"] == "attic"


def test_on_change_never_fires_for_a_mentioned_field_that_does_not_change_the_result(stack):
    # canvas_visible is in every context but no pattern looks at it.
    stack.manager.set_context({**SCENE, "canvas_visible": True})
    assert stack.changes == []


def test_on_change_fires_for_a_context_field_a_pattern_mentions(make_stack, make_preset):
    stack = make_stack([make_preset("lab-tools", contexts=[{"world_id": "lab"}])])
    stack.manager.set_context({**SCENE, "world_id": "home"})
    assert stack.changes == []
    stack.manager.set_context({**SCENE, "world_id": "lab"})
    assert [r.active_names for r in stack.changes] == [("lab-tools",)]


def test_setting_the_same_context_again_does_not_notify(stack):
    stack.manager.set_context(DRAWING)
    stack.manager.set_context(dict(DRAWING))
    stack.manager.set_context({"surface": "canvas", "activity": "drawing", "canvas_visible": True})
    assert len(stack.changes) == 1


def test_on_change_fires_when_only_the_reason_changes(stack):
    stack.manager.set_override("general", "on")  # active by context before, by override now
    [resolution] = stack.changes
    assert resolution.active_names == stack.registry.resolve(SCENE).active_names
    assert [a.reason for a in resolution.active_presets] == ["context", "override"]


def test_on_change_fires_when_only_the_overrides_change(stack):
    stack.manager.set_override("drawing-tools", "off")  # inactive in this context anyway
    assert len(stack.changes) == 1
    assert stack.manager.get_overrides() == {"drawing-tools": "off"}
    stack.manager.set_override("drawing-tools", "off")  # the same again: nothing new
    assert len(stack.changes) == 1
    stack.manager.set_override("drawing-tools", "auto")
    assert len(stack.changes) == 2


def test_auto_for_a_preset_without_override_changes_nothing(stack):
    stack.manager.set_override("general", "auto")
    assert stack.changes == []
    assert stack.manager.get_overrides() == {}


def test_on_change_fires_when_a_prompt_fragment_changes(stack, make_preset):
    stack.manager.unregister("general")
    stack.changes.clear()
    stack.manager.register(make_preset("general", ["app.theme"], prompt="Different words."))
    [resolution] = stack.changes
    assert resolution.prompt_fragments[-1].prompt == "Different words."


def test_on_change_carries_new_tool_ids_and_the_tool_registry_follows(
    stack, make_preset, make_adapter
):
    stack.adapters.register(make_adapter("app.font"))
    stack.manager.unregister("general")
    stack.manager.register(make_preset("general", ["app.theme", "app.font"], prompt="General."))
    assert stack.changes[-1].tool_ids == ("scene.add", "app.theme", "app.font")
    assert stack.tools.names() == ["space_app_font", "space_app_theme", "space_scene_add"]


def test_registering_an_inactive_preset_does_not_notify(stack, make_preset, make_adapter):
    stack.adapters.register(make_adapter("graph.node"))
    stack.manager.register(
        make_preset("graph-tools", ["graph.node"], contexts=[{"activity": "graph"}])
    )
    assert stack.changes == []
    stack.manager.set_context(GRAPH)
    assert "graph-tools" in stack.manager.resolve().active_names


def test_registering_an_active_preset_notifies_and_syncs(stack, make_preset, make_adapter):
    stack.adapters.register(make_adapter("late.tool"))
    stack.manager.register(make_preset("late-tools", ["late.tool"]))
    assert [r.active_names[-1] for r in stack.changes] == ["late-tools"]
    assert "space_late_tool" in stack.tools


def test_unregistering_a_preset_drops_its_override_and_notifies(stack):
    stack.manager.set_override("shell", "on")
    assert "space_app_bash" in stack.tools
    stack.changes.clear()
    stack.manager.unregister("shell")
    assert stack.manager.get_overrides() == {}
    assert len(stack.changes) == 1
    assert "space_app_bash" not in stack.tools


def test_remove_on_change_stops_notifications(stack):
    heard: list[Resolution] = []
    stack.manager.add_on_change(heard.append)
    stack.manager.set_context(DRAWING)
    stack.manager.remove_on_change(heard.append)
    stack.manager.set_context(GRAPH)
    assert len(heard) == 1
    stack.manager.remove_on_change(heard.append)  # removing twice is harmless


def test_every_listener_hears_each_change_once(stack):
    first: list[Resolution] = []
    second: list[Resolution] = []
    stack.manager.add_on_change(first.append)
    stack.manager.add_on_change(second.append)
    stack.manager.set_context(DRAWING)
    stack.manager.set_override("shell", "on")
    assert len(first) == len(second) == 2


# ------------------------------------------------------------------ copies


def test_mutating_get_context_changes_nothing(stack):
    context = stack.manager.get_context()
    context["surface"] = "canvas"
    context["activity"] = "drawing"
    assert stack.manager.get_context() == SCENE
    assert stack.manager.resolve().active_names == ("scene-tools", "general")


def test_mutating_the_context_passed_in_changes_nothing(stack):
    context = dict(DRAWING)
    stack.manager.set_context(context)
    context["activity"] = "graph"
    assert stack.manager.get_context()["activity"] == "drawing"


def test_mutating_get_overrides_changes_nothing(stack):
    stack.manager.set_override("shell", "on")
    overrides = stack.manager.get_overrides()
    overrides["shell"] = "off"
    overrides["general"] = "off"
    assert stack.manager.get_overrides() == {"shell": "on"}
    assert "shell" in stack.manager.resolve().active_names


def test_mutating_get_tool_defs_changes_nothing(stack):
    defs = stack.manager.get_tool_defs()
    names = [t.name for t in defs]
    defs.clear()
    assert [t.name for t in stack.manager.get_tool_defs()] == names
    tool = stack.manager.get_tool_defs()[0]
    with pytest.raises(AttributeError):
        tool.name = "space_hijacked"  # type: ignore[misc]
    with pytest.raises(TypeError):
        tool.input_schema["type"] = "array"  # type: ignore[index]


def test_mutating_active_presets_and_fragments_changes_nothing(stack):
    active = stack.manager.get_active_presets()
    fragments = stack.manager.get_prompt_fragments()
    active.clear()
    fragments.clear()
    assert [a.name for a in stack.manager.get_active_presets()] == ["scene-tools", "general"]
    assert [f.preset for f in stack.manager.get_prompt_fragments()] == ["scene-tools", "general"]


def test_the_overrides_passed_to_the_constructor_are_copied(make_preset):
    from agent_presets import PresetManager, PresetRegistry, ToolAdapterRegistry

    registry = PresetRegistry()
    registry.register(make_preset("general"))
    overrides = {"general": "off"}
    manager = PresetManager(registry, ToolAdapterRegistry(), None, SCENE, overrides)
    overrides["general"] = "on"
    assert manager.get_overrides() == {"general": "off"}
    assert manager.resolve().active_names == ()


# ------------------------------------------------------------------ tool defs and status


def test_get_tool_defs_stamps_the_owner_and_source_of_each_tool(stack):
    stack.manager.set_context(DRAWING)
    assert [(t.name, t.managed_owner, t.managed_source) for t in stack.manager.get_tool_defs()] == [
        ("space_drawing_shape", "agent-presets", "drawing.shape"),
        ("space_canvas_pan", "agent-presets", "canvas.pan"),
        ("space_app_theme", "agent-presets", "app.theme"),
    ]


def test_a_tool_id_without_adapter_is_a_clear_error(make_stack, make_preset):
    stack = make_stack([make_preset("orphan", ["orphan.tool"])], auto_adapters=False, start=False)
    with pytest.raises(
        PresetValidationError, match=r"no tool adapter provides tool id 'orphan\.tool'"
    ):
        stack.manager.get_tool_defs()


def test_registering_an_active_preset_without_adapters_changes_nothing(stack, make_preset):
    before = stack.manager.resolve()
    with pytest.raises(PresetValidationError, match="no tool adapter provides"):
        stack.manager.register(make_preset("orphan-tools", ["orphan.tool"]))
    assert "orphan-tools" not in stack.registry
    assert stack.manager.resolve() is before
    assert [t.name for t in stack.manager.get_tool_defs()] == ["space_scene_add", "space_app_theme"]


def test_status_summarises_context_overrides_and_active_presets(stack):
    stack.manager.set_override("shell", "on")
    status = stack.manager.status()
    assert status["context"] == SCENE
    assert status["overrides"] == {"shell": "on"}
    assert status["active_presets"] == ["scene-tools", "general", "shell"]
    assert status["tool_ids"] == ["scene.add", "app.theme", "app.bash"]
    assert status["registry"]["presets"] == 5
