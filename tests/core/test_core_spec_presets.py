"""The spec's test-agent-presets list, one named test (or parametrized family) per item."""

from __future__ import annotations

from typing import Any

import pytest

from agent_presets import (
    DuplicatePresetError,
    DuplicateToolError,
    Preset,
    PresetValidationError,
    PromptFragment,
    UnknownPresetError,
)
from agent_presets.lib.loader import load_preset_text
from agent_presets.lib.matching import matches

SCENE: dict[str, Any] = {"surface": "scene", "activity": None, "canvas_visible": False}
DRAWING: dict[str, Any] = {"surface": "canvas", "activity": "drawing", "canvas_visible": True}
GRAPH: dict[str, Any] = {"surface": "canvas", "activity": "graph", "canvas_visible": True}
HIDDEN_CANVAS: dict[str, Any] = {"surface": "canvas", "activity": None, "canvas_visible": False}

VALID: dict[str, Any] = {
    "name": "drawing-shape-tools",
    "group": "drawing",
    "default_state": "auto",
    "risk": "normal",
    "contexts": [{"surface": "canvas", "activity": "drawing"}],
    "tool_ids": ["drawing.set-tool", "drawing.insert-shape"],
    "system_prompt": "The user is editing vector drawing content.",
}


def active_names(resolution: Any) -> list[str]:
    return [a.name for a in resolution.active_presets]


# ------------------------------------------------------------------ schema + duplicates


def test_schema_accepts_a_complete_preset_and_round_trips_it():
    preset = Preset.from_dict(VALID, source="drawing.yaml")
    assert preset.name == "drawing-shape-tools"
    assert preset.tool_ids == ("drawing.set-tool", "drawing.insert-shape")
    assert preset.source == "drawing.yaml"
    assert preset.to_dict() == VALID


@pytest.mark.parametrize("missing", ["name", "default_state", "risk", "contexts"])
def test_schema_rejects_a_preset_missing_a_required_field(missing):
    data = {k: v for k, v in VALID.items() if k != missing}
    with pytest.raises(PresetValidationError) as info:
        Preset.from_dict(data, source="x.yaml")
    assert f"missing required field {missing!r}" in str(info.value)
    assert str(info.value).startswith("x.yaml: ")


def test_a_preset_without_tool_ids_must_list_prompts_or_resources():
    data = {k: v for k, v in VALID.items() if k != "tool_ids"}
    with pytest.raises(PresetValidationError) as info:
        Preset.from_dict(data, source="x.yaml")
    assert "lists no tool_ids, prompts or resources" in str(info.value)
    preset = Preset.from_dict({**data, "prompts": ["drawing.describe"]})
    assert (preset.tool_ids, preset.prompts) == ((), ("drawing.describe",))
    assert Preset.from_dict(preset.to_dict()) == preset


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("name", "Drawing Tools", "kebab-case"),
        ("group", "Drawing", "kebab-case"),
        ("tool_ids", [], "at least 1"),
        ("tool_ids", ["set-tool"], "dotted"),
        ("tool_ids", ["a.b", "a.b"], "same item twice"),
        ("system_prompt", 42, "expected string"),
        ("colour", "red", "unknown field 'colour'"),
    ],
)
def test_schema_rejects_malformed_fields(field, value, words):
    with pytest.raises(PresetValidationError) as info:
        Preset.from_dict({**VALID, field: value})
    assert words in str(info.value)


def test_registering_two_presets_with_one_name_is_rejected_naming_both_sources(
    make_stack, make_preset
):
    stack = make_stack([make_preset("shared", source="first.yaml")])
    with pytest.raises(DuplicatePresetError) as info:
        stack.registry.register(make_preset("shared", ["other.tool"], source="second.yaml"))
    message = str(info.value)
    assert "'shared'" in message
    assert "first.yaml" in message and "second.yaml" in message
    assert [p.source for p in stack.registry.list()] == ["first.yaml"]


def test_a_file_defining_one_preset_name_twice_is_rejected():
    text = (
        "presets:\n"
        "  - {name: twin, default_state: off, risk: normal, contexts: [], tool_ids: [a.one]}\n"
        "  - {name: twin, default_state: off, risk: normal, contexts: [], tool_ids: [a.two]}\n"
    )
    with pytest.raises(DuplicatePresetError) as info:
        load_preset_text(text, "twins.yaml")
    assert str(info.value).startswith("twins.yaml:3:")
    assert "'twin' is defined twice" in str(info.value)
    assert "line 2" in str(info.value)


def test_preset_definitions_are_immutable(make_preset):
    pattern = {"surface": "canvas"}
    tool_ids = ["drawing.undo"]
    preset = make_preset("frozen", tool_ids, contexts=[pattern])
    pattern["surface"] = "scene"
    tool_ids.append("drawing.redo")
    assert dict(preset.contexts[0]) == {"surface": "canvas"}
    assert preset.tool_ids == ("drawing.undo",)
    with pytest.raises(AttributeError):
        preset.name = "thawed"  # type: ignore[misc]
    with pytest.raises(TypeError):
        preset.contexts[0]["surface"] = "scene"  # type: ignore[index]


# ------------------------------------------------------------------ field validation


@pytest.mark.parametrize("state", ["on", "enabled", "", None, True])
def test_default_state_must_be_auto_or_off(make_preset, state):
    with pytest.raises(PresetValidationError, match="default_state"):
        make_preset("p", default_state=state)
    with pytest.raises(PresetValidationError, match="default_state"):
        Preset.from_dict({**VALID, "default_state": state})


@pytest.mark.parametrize("risk", ["low", "dangerous", "", None, "Shell"])
def test_risk_must_be_a_known_level(make_preset, risk):
    with pytest.raises(PresetValidationError, match="risk"):
        make_preset("p", risk=risk)
    with pytest.raises(PresetValidationError, match="risk"):
        Preset.from_dict({**VALID, "risk": risk})


@pytest.mark.parametrize("risk", ["filesystem-write", "destructive", "shell"])
def test_dangerous_risk_requires_default_state_off(make_preset, risk):
    with pytest.raises(PresetValidationError) as info:
        make_preset("risky", risk=risk, default_state="auto")
    assert f"risk {risk!r} and must use default_state: off" in str(info.value)
    assert make_preset("risky", risk=risk, default_state="off").dangerous


@pytest.mark.parametrize("risk", ["normal", "filesystem-read"])
def test_safe_risks_may_be_auto(make_preset, risk):
    assert make_preset("safe", risk=risk, default_state="auto").default_state == "auto"


def test_auto_preset_without_contexts_is_rejected(make_preset):
    with pytest.raises(PresetValidationError, match="could never activate"):
        make_preset("lonely", contexts=[], default_state="auto")
    assert make_preset("lonely", contexts=[], default_state="off").contexts == ()


@pytest.mark.parametrize(
    ("pattern", "words"),
    [
        ({}, "empty context pattern"),
        ({"surface": ["canvas", "scene"]}, "must be a string, number, boolean or null"),
        ({"surface": {"is": "canvas"}}, "must be a string, number, boolean or null"),
        ({"Surface": "canvas"}, "snake_case"),
        # canvas_visible: yes is the host's declaration's to refuse (a boolean field),
        # not the schema's, which names no field: test_core_vocabulary.
    ],
)
def test_malformed_context_patterns_are_rejected(make_preset, pattern, words):
    with pytest.raises(PresetValidationError, match=words):
        make_preset("p", contexts=[pattern])


@pytest.mark.parametrize(
    ("pattern", "words"),
    [
        ({}, "empty context pattern"),
        ({"surface": ["canvas"]}, "expected string"),
        ({"Surface": "canvas"}, "'Surface'"),
        ({"selection_kind": {"a": 1}}, "expected string or number or boolean or null"),
    ],
)
def test_schema_rejects_malformed_context_patterns(pattern, words):
    with pytest.raises(PresetValidationError, match=words):
        Preset.from_dict({**VALID, "contexts": [pattern]})


@pytest.mark.parametrize(
    ("contexts", "words"),
    [
        (["canvas"], "a context pattern must be a mapping of fields, not str"),
        ([42], "a context pattern must be a mapping of fields, not int"),
        (None, "contexts must be a list, not NoneType"),
        ({"surface": "canvas"}, "contexts must be a list"),
    ],
)
def test_non_mapping_context_patterns_are_a_validation_error(make_preset, contexts, words):
    with pytest.raises(PresetValidationError, match=words):
        make_preset("p", contexts=contexts)


def test_tool_ids_must_be_a_list_not_a_string():
    with pytest.raises(PresetValidationError, match="tool_ids must be a list, not str"):
        Preset(
            name="p",
            default_state="auto",
            risk="normal",
            contexts=({"surface": "any"},),
            tool_ids="drawing.undo",  # type: ignore[arg-type]
        )


@pytest.mark.parametrize("state", ["enabled", "ON", "", None, True, 1])
def test_override_states_other_than_on_off_auto_are_rejected(make_stack, make_preset, state):
    stack = make_stack([make_preset("p")])
    with pytest.raises(PresetValidationError, match="on, off"):
        stack.registry.resolve(SCENE, {"p": state})
    with pytest.raises(PresetValidationError, match="on, off"):
        stack.manager.set_override("p", state)
    assert stack.manager.get_overrides() == {}


def test_override_for_an_unknown_preset_name_is_rejected_with_a_suggestion(make_stack, make_preset):
    stack = make_stack([make_preset("graph-nav-tools")])
    with pytest.raises(UnknownPresetError) as info:
        stack.registry.resolve(SCENE, {"graph-nav-tool": "on"})
    assert "'graph-nav-tool'" in str(info.value)
    assert "did you mean 'graph-nav-tools'" in str(info.value)
    with pytest.raises(UnknownPresetError, match="no preset named 'nope'"):
        stack.manager.set_override("nope", "on")
    assert stack.manager.get_overrides() == {}


# ------------------------------------------------------------------ context matching


def test_a_pattern_matches_when_every_field_matches(make_stack, make_preset):
    stack = make_stack(
        [make_preset("drawing", contexts=[{"surface": "canvas", "activity": "drawing"}])]
    )
    assert active_names(stack.registry.resolve(DRAWING)) == ["drawing"]
    assert active_names(stack.registry.resolve(GRAPH)) == []
    assert active_names(stack.registry.resolve(SCENE)) == []


def test_contexts_are_an_or_of_patterns(make_stack, make_preset):
    stack = make_stack(
        [make_preset("either", contexts=[{"surface": "scene"}, {"activity": "graph"}])]
    )
    assert active_names(stack.registry.resolve(SCENE)) == ["either"]
    assert active_names(stack.registry.resolve(GRAPH)) == ["either"]
    assert active_names(stack.registry.resolve(DRAWING)) == []


@pytest.mark.parametrize("context", [SCENE, DRAWING, GRAPH, HIDDEN_CANVAS])
def test_any_matches_every_value_of_a_field(make_stack, make_preset, context):
    stack = make_stack(
        [
            make_preset("any-surface", contexts=[{"surface": "any"}]),
            make_preset("any-activity", contexts=[{"activity": "any"}]),
            make_preset("any-visibility", contexts=[{"canvas_visible": "any"}]),
        ]
    )
    assert active_names(stack.registry.resolve(context)) == [
        "any-surface",
        "any-activity",
        "any-visibility",
    ]


def test_fields_missing_from_a_pattern_are_wildcards(make_stack, make_preset):
    stack = make_stack([make_preset("canvas", contexts=[{"surface": "canvas"}])])
    for context in (DRAWING, GRAPH, HIDDEN_CANVAS, {**DRAWING, "world_id": "home"}):
        assert active_names(stack.registry.resolve(context)) == ["canvas"]
    assert active_names(stack.registry.resolve(SCENE)) == []


def test_pattern_fields_the_context_lacks_do_not_match_a_value(make_stack, make_preset):
    stack = make_stack([make_preset("home", contexts=[{"world_id": "home"}])])
    assert active_names(stack.registry.resolve(SCENE)) == []
    assert active_names(stack.registry.resolve({**SCENE, "world_id": "home"})) == ["home"]
    assert active_names(stack.registry.resolve({**SCENE, "world_id": "lab"})) == []


@pytest.mark.parametrize(
    "context", [SCENE, HIDDEN_CANVAS, {"surface": "scene", "canvas_visible": True}]
)
def test_activity_none_matches_a_missing_activity(make_stack, make_preset, context):
    stack = make_stack([make_preset("idle", contexts=[{"activity": "none"}])])
    assert active_names(stack.registry.resolve(context)) == ["idle"]


@pytest.mark.parametrize("context", [DRAWING, GRAPH, {**SCENE, "activity": "none-such"}])
def test_activity_none_does_not_match_any_activity(make_stack, make_preset, context):
    stack = make_stack([make_preset("idle", contexts=[{"activity": "none"}])])
    assert active_names(stack.registry.resolve(context)) == []


def test_matches_helper_agrees_with_resolution():
    assert matches({"surface": "canvas", "activity": "drawing"}, DRAWING)
    assert not matches({"surface": "canvas", "activity": "drawing"}, GRAPH)
    assert matches({"activity": "none"}, SCENE)
    assert matches({"surface": "any", "canvas_visible": "any"}, HIDDEN_CANVAS)
    assert matches({"canvas_visible": False}, SCENE)
    assert not matches({"canvas_visible": True}, SCENE)


# ------------------------------------------------------------------ off presets


@pytest.mark.parametrize("context", [SCENE, DRAWING, GRAPH, HIDDEN_CANVAS])
def test_off_presets_never_auto_activate(make_stack, make_preset, context):
    stack = make_stack(
        [
            make_preset("matching-off", contexts=[{"surface": "any"}], default_state="off"),
            make_preset("shell", contexts=[{"surface": "any"}], default_state="off", risk="shell"),
            make_preset("no-contexts", contexts=[], default_state="off"),
        ]
    )
    assert stack.registry.resolve(context).active_presets == ()
    assert stack.manager.resolve().active_presets == ()
    stack.manager.set_context(context)
    assert stack.tools.names() == []


def test_an_auto_override_leaves_an_off_preset_off(make_stack, make_preset):
    stack = make_stack([make_preset("quiet", default_state="off")])
    assert active_names(stack.registry.resolve(SCENE, {"quiet": "auto"})) == []
    stack.manager.set_override("quiet", "auto")
    assert stack.manager.get_active_presets() == []


# ------------------------------------------------------------------ force on / off


def test_force_on_activates_regardless_of_default_and_context(make_stack, make_preset):
    stack = make_stack(
        [
            make_preset("shell", default_state="off", risk="shell"),
            make_preset("drawing", contexts=[{"activity": "drawing"}]),
        ]
    )
    resolution = stack.registry.resolve(SCENE, {"shell": "on", "drawing": "on"})
    assert [(a.name, a.reason, a.risk) for a in resolution.active_presets] == [
        ("shell", "override", "shell"),
        ("drawing", "override", "normal"),
    ]
    stack.manager.set_override("shell", "on")
    assert stack.tools.names() == ["space_shell_tool"]


def test_force_off_deactivates_a_matching_auto_preset(make_stack, make_preset):
    stack = make_stack(
        [make_preset("everywhere"), make_preset("scene", contexts=[{"surface": "scene"}])]
    )
    assert active_names(stack.registry.resolve(SCENE, {"everywhere": "off"})) == ["scene"]
    stack.manager.set_override("everywhere", "off")
    assert [a.name for a in stack.manager.get_active_presets()] == ["scene"]
    assert stack.tools.names() == ["space_scene_tool"]


def test_auto_override_returns_a_preset_to_context_matching(make_stack, make_preset):
    stack = make_stack([make_preset("scene", contexts=[{"surface": "scene"}])])
    stack.manager.set_override("scene", "off")
    assert stack.manager.get_active_presets() == []
    stack.manager.set_override("scene", "auto")
    assert stack.manager.get_overrides() == {}
    assert [(a.name, a.reason) for a in stack.manager.get_active_presets()] == [
        ("scene", "context")
    ]


def test_an_active_preset_forced_on_reports_the_override_reason(make_stack, make_preset):
    stack = make_stack([make_preset("scene", contexts=[{"surface": "scene"}])])
    assert stack.registry.resolve(SCENE).active_presets[0].reason == "context"
    assert stack.registry.resolve(SCENE, {"scene": "on"}).active_presets[0].reason == "override"


# ------------------------------------------------------------------ prompt fragments


def test_prompt_fragments_are_returned_in_registration_order(make_stack, make_preset):
    stack = make_stack(
        [
            make_preset("zeta", prompt="Z comes first."),
            make_preset("alpha", prompt="A comes second."),
            make_preset("silent"),
            make_preset("mid", prompt="M comes third."),
            make_preset("inactive", prompt="never", default_state="off"),
        ]
    )
    expected = [
        PromptFragment("zeta", "Z comes first."),
        PromptFragment("alpha", "A comes second."),
        PromptFragment("mid", "M comes third."),
    ]
    assert list(stack.registry.resolve(SCENE).prompt_fragments) == expected
    assert stack.manager.get_prompt_fragments() == expected
    stack.manager.set_override("inactive", "on")
    assert stack.manager.get_prompt_fragments()[-1] == PromptFragment("inactive", "never")


def test_tool_ids_are_collected_in_registration_order(make_stack, make_preset):
    stack = make_stack(
        [
            make_preset("b", ["b.two", "b.one"]),
            make_preset("a", ["a.one"]),
            make_preset("c", ["c.x"]),
        ]
    )
    assert stack.registry.resolve(SCENE).tool_ids == ("b.two", "b.one", "a.one", "c.x")


# ------------------------------------------------------------------ duplicates at resolution


def test_duplicate_resolved_mcp_tool_names_are_rejected_by_get_tool_defs(
    make_stack, make_preset, make_adapter
):
    stack = make_stack(
        [
            make_preset("left", ["left.tool"], contexts=[{"surface": "scene"}]),
            make_preset("right", ["right.tool"], contexts=[{"surface": "canvas"}]),
        ],
        [make_adapter("left.tool", "space_same"), make_adapter("right.tool", "space_same")],
    )
    assert [t.name for t in stack.manager.get_tool_defs()] == ["space_same"]
    stack.sync.stop()  # only the manager is under test here
    with pytest.raises(DuplicateToolError) as info:
        stack.manager.set_override("right", "on")
    message = str(info.value)
    assert "'space_same'" in message
    assert "'left.tool'" in message and "'right.tool'" in message


def test_an_override_that_makes_two_mcp_names_collide_changes_nothing(
    make_stack, make_preset, make_adapter
):
    stack = make_stack(
        [
            make_preset("left", ["left.tool"], contexts=[{"surface": "scene"}]),
            make_preset("right", ["right.tool"], contexts=[{"surface": "canvas"}]),
        ],
        [make_adapter("left.tool", "space_same"), make_adapter("right.tool", "space_same")],
    )
    before = stack.manager.resolve()
    with pytest.raises(DuplicateToolError):
        stack.manager.set_override("right", "on")
    assert stack.manager.get_overrides() == {}
    assert stack.manager.resolve() is before
    assert [t.managed_source for t in stack.manager.get_tool_defs()] == ["left.tool"]
    assert stack.changes == []


def test_duplicate_resolved_tool_ids_are_rejected_by_registry_resolve(make_stack, make_preset):
    stack = make_stack(
        [
            make_preset("first", ["shared.tool"], contexts=[{"surface": "scene"}]),
            make_preset("second", ["shared.tool", "second.own"], contexts=[{"surface": "canvas"}]),
        ]
    )
    assert stack.registry.resolve(SCENE).tool_ids == ("shared.tool",)
    with pytest.raises(DuplicateToolError) as info:
        stack.registry.resolve(SCENE, {"second": "on"})
    message = str(info.value)
    assert "'shared.tool'" in message
    assert "'first'" in message and "'second'" in message


def test_a_duplicate_tool_id_override_changes_nothing_in_the_manager(make_stack, make_preset):
    stack = make_stack(
        [
            make_preset("first", ["shared.tool"], contexts=[{"surface": "scene"}]),
            make_preset("second", ["shared.tool"], contexts=[{"surface": "canvas"}]),
        ]
    )
    before = stack.manager.resolve()
    with pytest.raises(DuplicateToolError):
        stack.manager.set_override("second", "on")
    assert stack.manager.get_overrides() == {}
    assert stack.manager.resolve() is before
    assert stack.changes == []
    assert stack.tools.names() == ["space_shared_tool"]
