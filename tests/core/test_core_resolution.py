"""PresetRegistry: pure, deterministic resolution and the errors that leave everything unchanged."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from agent_presets import (
    ActivePreset,
    PresetRegistry,
    PresetValidationError,
    PromptFragment,
    Resolution,
    UnknownPresetError,
)
from agent_presets.lib.matching import validate_context
from agent_presets.lib.vocabulary import Vocabulary
from agent_presets_general import SPACE_FIELDS

SCENE: dict[str, Any] = {"surface": "scene", "activity": None, "canvas_visible": False}
DRAWING: dict[str, Any] = {"surface": "canvas", "activity": "drawing", "canvas_visible": True}

MALFORMED_CONTEXTS = [
    pytest.param({**SCENE, "world_id": ["home"]}, "'world_id' must be a string", id="list-value"),
    pytest.param({**SCENE, "world_id": {"id": 1}}, "'world_id' must be a string", id="dict-value"),
    pytest.param({**SCENE, "World-Id": "home"}, "snake_case", id="bad-key"),
    pytest.param({**SCENE, 3: "x"}, "snake_case", id="int-key"),
    pytest.param(["surface", "scene"], "must be a mapping", id="not-a-mapping"),
    pytest.param(None, "must be a mapping", id="none"),
]

# Values the headless host's vocabulary (and a plugin declaring 'drawing') refuses.
UNDECLARED_CONTEXTS = [
    pytest.param({**SCENE, "surface": ""}, "no declared value ''", id="empty-surface"),
    pytest.param({**SCENE, "surface": 3}, "takes a string", id="int-surface"),
    pytest.param({**SCENE, "surface": "any"}, "reserved", id="surface-any"),
    pytest.param({**SCENE, "surface": "canvs"}, "did you mean 'canvas'", id="typo-surface"),
    pytest.param({**SCENE, "canvas_visible": 1}, "true or false", id="int-visible"),
    pytest.param({**SCENE, "canvas_visible": "yes"}, "true or false", id="str-visible"),
    pytest.param({**SCENE, "activity": ""}, "'activity'", id="empty-activity"),
    pytest.param({**SCENE, "activity": 7}, "'activity'", id="int-activity"),
    pytest.param({**SCENE, "activity": "none"}, "use None", id="activity-none-word"),
    pytest.param({**SCENE, "activity": "drawng"}, "did you mean 'drawing'", id="typo-activity"),
]


def host_vocabulary() -> Vocabulary:
    declared = [("headless-host", f) for f in SPACE_FIELDS]
    declared.append(("test", {"name": "activity", "type": "string", "values": ["drawing"]}))
    vocabulary, problems = Vocabulary.merge(declared)
    assert problems == []
    return vocabulary


@pytest.fixture
def registry(make_preset):
    registry = PresetRegistry()
    registry.register(make_preset("scene-tools", ["scene.add"], contexts=[{"surface": "scene"}]))
    registry.register(
        make_preset(
            "drawing-tools",
            ["drawing.shape", "drawing.undo"],
            contexts=[{"surface": "canvas", "activity": "drawing"}],
            prompt="Draw.",
            group="drawing",
        )
    )
    registry.register(make_preset("general", ["app.theme"], prompt="General.", group="general"))
    registry.register(
        make_preset("shell", ["app.bash"], default_state="off", risk="shell", group="general")
    )
    return registry


def test_resolution_reports_presets_reasons_risks_tools_and_fragments(registry):
    assert registry.resolve(DRAWING, {"shell": "on"}) == Resolution(
        active_presets=(
            ActivePreset("drawing-tools", "context", "normal"),
            ActivePreset("general", "context", "normal"),
            ActivePreset("shell", "override", "shell"),
        ),
        tool_ids=("drawing.shape", "drawing.undo", "app.theme", "app.bash"),
        prompt_fragments=(
            PromptFragment("drawing-tools", "Draw."),
            PromptFragment("general", "General."),
        ),
    )


def test_resolution_is_pure_it_changes_neither_inputs_nor_registry(registry):
    context = {**DRAWING, "world_id": "home"}
    overrides = {"shell": "on", "general": "auto"}
    context_before, overrides_before = copy.deepcopy(context), copy.deepcopy(overrides)
    version, names = registry.version, registry.names()

    first = registry.resolve(context, overrides)

    assert context == context_before and overrides == overrides_before
    assert (registry.version, registry.names()) == (version, names)
    assert registry.resolve(context, overrides) == first
    assert registry.resolve(SCENE) != first


def test_resolution_is_frozen(registry):
    resolution = registry.resolve(SCENE)
    with pytest.raises(AttributeError):
        resolution.tool_ids = ()  # type: ignore[misc]
    assert isinstance(resolution.active_presets, tuple)
    assert isinstance(resolution.tool_ids, tuple)
    assert isinstance(resolution.prompt_fragments, tuple)


def test_resolution_is_deterministic_across_registries_built_in_the_same_order(registry):
    rebuilt = PresetRegistry()
    for preset in registry.list():
        rebuilt.register(preset)
    for context in (SCENE, DRAWING, {**DRAWING, "canvas_visible": False}):
        for overrides in ({}, {"shell": "on"}, {"general": "off", "scene-tools": "on"}):
            assert rebuilt.resolve(context, overrides) == registry.resolve(context, overrides)


def test_resolution_follows_registration_order_not_names(make_preset):
    registry = PresetRegistry()
    for name in ("zulu", "alpha", "mike"):
        registry.register(make_preset(name))
    assert registry.resolve(SCENE).active_names == ("zulu", "alpha", "mike")


def test_resolution_to_dict_is_plain_data(registry):
    assert registry.resolve(SCENE).to_dict() == {
        "active_presets": [
            {"name": "scene-tools", "reason": "context", "risk": "normal"},
            {"name": "general", "reason": "context", "risk": "normal"},
        ],
        "tool_ids": ["scene.add", "app.theme"],
        "prompt_fragments": [{"preset": "general", "prompt": "General."}],
        "prompt_ids": [],
        "resource_ids": [],
    }


def test_an_empty_registry_resolves_to_nothing():
    assert PresetRegistry().resolve(SCENE) == Resolution()


# ------------------------------------------------------------------ malformed input


@pytest.mark.parametrize(("context", "words"), MALFORMED_CONTEXTS)
def test_malformed_contexts_are_rejected_with_a_clear_error(registry, context, words):
    with pytest.raises(PresetValidationError) as info:
        registry.resolve(context)
    assert words in str(info.value)


@pytest.mark.parametrize(("context", "words"), MALFORMED_CONTEXTS)
def test_a_malformed_context_changes_nothing_in_the_manager(
    make_stack, make_preset, context, words
):
    stack = make_stack([make_preset("scene-tools", ["scene.add"], contexts=[{"surface": "scene"}])])
    before = stack.manager.resolve()
    with pytest.raises(PresetValidationError, match=words):
        stack.manager.set_context(context)
    assert stack.manager.get_context() == SCENE
    assert stack.manager.resolve() is before
    assert stack.changes == []
    assert stack.tools.names() == ["space_scene_add"]


@pytest.mark.parametrize(("context", "words"), UNDECLARED_CONTEXTS)
def test_set_context_refuses_a_value_the_vocabulary_does_not_declare_and_changes_nothing(
    make_stack, make_preset, context, words
):
    stack = make_stack([make_preset("scene-tools", ["scene.add"], contexts=[{"surface": "scene"}])])
    stack.manager.vocabulary = host_vocabulary()
    before = stack.manager.resolve()
    with pytest.raises(PresetValidationError, match=words):
        stack.manager.set_context(context)
    assert stack.manager.get_context() == SCENE
    assert stack.manager.resolve() is before
    assert stack.changes == []


def test_the_core_requires_no_context_field(make_preset):
    registry = PresetRegistry()
    registry.register(make_preset("anywhere", contexts=[{"surface": "any"}]))
    registry.register(make_preset("no-activity", contexts=[{"activity": "none"}]))
    assert registry.resolve({}).active_names == ("anywhere", "no-activity")


@pytest.mark.parametrize(
    ("overrides", "error", "words"),
    [
        ({"nope": "on"}, UnknownPresetError, "no preset named 'nope'"),
        ({"shel": "off"}, UnknownPresetError, "did you mean 'shell'"),
        ({"shell": "yes"}, PresetValidationError, "use on, off or auto"),
        ({"shell": True}, PresetValidationError, "use on, off or auto"),
        ({"shell": None}, PresetValidationError, "use on, off or auto"),
        (["shell"], PresetValidationError, "overrides must map preset names"),
    ],
)
def test_bad_overrides_are_rejected_by_resolve(registry, overrides, error, words):
    with pytest.raises(error, match=words):
        registry.resolve(SCENE, overrides)


@pytest.mark.parametrize(
    ("name", "state", "error"),
    [
        ("nope", "on", UnknownPresetError),
        ("shell", "enable", PresetValidationError),
        ("shell", "", PresetValidationError),
        ("nope", "bogus", PresetValidationError),
    ],
)
def test_bad_overrides_change_nothing_in_the_manager(make_stack, make_preset, name, state, error):
    stack = make_stack(
        [
            make_preset("general"),
            make_preset("shell", ["app.bash"], default_state="off", risk="shell"),
        ]
    )
    stack.manager.set_override("general", "off")
    stack.changes.clear()
    before = stack.manager.resolve()
    with pytest.raises(error):
        stack.manager.set_override(name, state)
    assert stack.manager.get_overrides() == {"general": "off"}
    assert stack.manager.resolve() is before
    assert stack.changes == []


def test_a_manager_cannot_start_from_a_malformed_context_or_override(make_stack, make_preset):
    from agent_presets import PresetManager, ToolAdapterRegistry

    registry = PresetRegistry()
    registry.register(make_preset("general"))
    with pytest.raises(PresetValidationError):
        PresetManager(registry, ToolAdapterRegistry(), None, {"Surface": "scene"})
    with pytest.raises(UnknownPresetError):
        PresetManager(registry, ToolAdapterRegistry(), None, SCENE, {"generl": "on"})


def test_validate_context_copies_and_adds_no_field():
    context = {"surface": "scene", "canvas_visible": False, "world_id": "home"}
    validated = validate_context(context)
    assert validated == context
    validated["surface"] = "canvas"
    assert context["surface"] == "scene"


def test_context_values_may_be_any_scalar(make_preset):
    registry = PresetRegistry()
    registry.register(make_preset("zoomed", contexts=[{"zoom": 2, "ratio": 0.5, "pinned": True}]))
    context = {**SCENE, "zoom": 2, "ratio": 0.5, "pinned": True, "note": None}
    assert registry.resolve(context).active_names == ("zoomed",)
    assert registry.resolve({**context, "zoom": 3}).active_names == ()


def test_a_pattern_null_or_none_field_matches_only_an_absent_or_none_fact(make_preset):
    registry = PresetRegistry()
    registry.register(make_preset("nothing-selected", contexts=[{"selection_kind": "none"}]))
    registry.register(make_preset("null-selected", ["n.t"], contexts=[{"selection_kind": None}]))
    both = ("nothing-selected", "null-selected")
    assert registry.resolve(SCENE).active_names == both
    assert registry.resolve({**SCENE, "selection_kind": None}).active_names == both
    assert registry.resolve({**SCENE, "selection_kind": "shape"}).active_names == ()


def test_a_null_activity_pattern_matches_like_none(make_preset):
    registry = PresetRegistry()
    registry.register(make_preset("idle", contexts=[{"activity": None}]))
    assert registry.resolve(SCENE).active_names == ("idle",)
    assert registry.resolve(DRAWING).active_names == ()


# ------------------------------------------------------------------ registry bookkeeping


def test_registry_lists_gets_and_groups(registry):
    assert registry.names() == ["scene-tools", "drawing-tools", "general", "shell"]
    assert [p.name for p in registry.list()] == registry.names()
    assert [p.name for p in registry.list_by_group("general")] == ["general", "shell"]
    assert registry.list_by_group("nothing") == []
    assert registry.get("shell").risk == "shell"
    assert registry.get("missing") is None
    assert "shell" in registry and "missing" not in registry
    assert len(registry) == 4


def test_registry_status_counts_states_and_dangerous_presets(registry):
    assert registry.status() == {
        "presets": 4,
        "auto": 3,
        "off": 1,
        "dangerous": ["shell"],
        "groups": {"": 1, "drawing": 1, "general": 2},
    }


def test_registry_register_refuses_non_presets(registry):
    with pytest.raises(PresetValidationError, match="expected a Preset"):
        registry.register({"name": "dict-preset"})  # type: ignore[arg-type]


def test_unregister_removes_and_returns_the_preset(registry):
    removed = registry.unregister("general")
    assert removed.name == "general"
    assert "general" not in registry
    assert registry.resolve(SCENE).active_names == ("scene-tools",)
    with pytest.raises(UnknownPresetError):
        registry.unregister("general")


def test_registry_listeners_hear_register_and_unregister(registry, make_preset):
    events: list[tuple[str, str]] = []

    def listener(event, preset):
        events.append((event, preset.name))

    registry.add_on_change(listener)
    registry.register(make_preset("extra"))
    registry.unregister("extra")
    registry.remove_on_change(listener)
    registry.register(make_preset("unheard"))
    assert events == [("register", "extra"), ("unregister", "extra")]
