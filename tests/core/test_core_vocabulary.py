"""The declared context vocabulary: the hook, merging, preset validation and set_context."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_presets import (
    ContextField,
    PresetValidationError,
    ToolAdapter,
    bootstrap,
    hookimpl,
    load_plugins,
)
from agent_presets.lib.catalog import collect
from agent_presets.lib.vocabulary import Vocabulary, is_addition, parse_declaration
from agent_presets_general import SpaceApp, SpaceHost


def adapter(tool_id: str) -> ToolAdapter:
    name = tool_id.replace(".", "_").replace("-", "_")
    return ToolAdapter(
        tool_id, "", f"Tool {tool_id}.", {"type": "object"}, lambda app, args: None, name=name
    )


class Plugin:
    """One YAML file, its adapters and its context declarations."""

    def __init__(
        self,
        path: Path | None = None,
        tool_ids: tuple[str, ...] = (),
        fields: list[Any] | None = None,
        name: str = "Plugin",
    ) -> None:
        self.path = path
        self.tool_ids = tool_ids
        self.fields = fields
        self.__name__ = name

    @hookimpl
    def presets_preset_files(self) -> list[Path]:
        return [self.path] if self.path else []

    @hookimpl
    def presets_tool_adapters(self) -> list[ToolAdapter]:
        return [adapter(t) for t in self.tool_ids]

    @hookimpl
    def presets_context_fields(self) -> list[Any] | None:
        return self.fields


SURFACE = {"name": "surface", "type": "string", "values": ["scene", "canvas"]}
ACTIVITY = {"name": "activity", "type": "string", "values": ["drawing"]}
VISIBLE = {"name": "canvas_visible", "type": "boolean", "description": "Canvas shown."}


def presets_file(tmp_path: Path, contexts: str, *, name: str = "p.yaml") -> Path:
    path = tmp_path / name
    path.write_text(
        "presets:\n"
        "  - name: sketch-tools\n"
        "    default_state: auto\n"
        "    risk: normal\n"
        f"    contexts: {contexts}\n"
        "    tool_ids: [sketch.draw]\n",
        encoding="utf-8",
    )
    return path


def test_hook_presets_context_fields_declarations_reach_the_catalog_and_the_manager(tmp_path):
    path = presets_file(tmp_path, "[{surface: canvas, activity: drawing}]")
    plugin = Plugin(path, ("sketch.draw",), [SURFACE, ACTIVITY, VISIBLE])
    presets = bootstrap(SimpleNamespace(), plugins=[plugin], context={"surface": "scene"})
    assert presets.problems == []
    assert set(presets.vocabulary.fields) == {"surface", "activity", "canvas_visible"}
    assert presets.vocabulary.fields["canvas_visible"].type == "boolean"
    presets.manager.set_context({"surface": "canvas", "activity": "drawing"})
    assert presets.manager.resolve().active_names == ("sketch-tools",)


def test_a_typo_in_a_context_key_fails_validation_with_a_did_you_mean(tmp_path):
    path = presets_file(tmp_path, "[{surfce: canvas}]")
    catalog = collect(load_plugins([Plugin(path, ("sketch.draw",), [SURFACE])]))
    [problem] = catalog.problems
    assert str(problem).startswith(f"{path}:5:17: preset 'sketch-tools': context field 'surfce'")
    assert "did you mean 'surface'?" in str(problem)
    assert catalog.presets == []


def test_an_undeclared_context_value_fails_validation_with_a_did_you_mean(tmp_path):
    path = presets_file(tmp_path, "[{surface: canvas, activity: drawng}]")
    catalog = collect(load_plugins([Plugin(path, ("sketch.draw",), [SURFACE, ACTIVITY])]))
    [problem] = catalog.problems
    assert str(problem).startswith(f"{path}:5:44: ")
    assert "no declared value 'drawng'; did you mean 'drawing'?" in str(problem)


def test_a_boolean_field_takes_true_false_or_any_in_a_pattern(tmp_path):
    pinned = {"name": "pinned", "type": "boolean"}
    path = presets_file(tmp_path, "[{pinned: maybe}]")
    catalog = collect(load_plugins([Plugin(path, ("sketch.draw",), [pinned])]))
    [problem] = catalog.problems
    assert "'pinned' is true or false" in str(problem)
    ok = presets_file(tmp_path, "[{pinned: any}, {pinned: true}]", name="ok.yaml")
    assert collect(load_plugins([Plugin(ok, ("sketch.draw",), [pinned])])).problems == []


def test_declarations_of_one_field_merge_their_values(tmp_path):
    path = presets_file(tmp_path, "[{activity: graph}, {activity: drawing}]")
    drawing = Plugin(path, ("sketch.draw",), [ACTIVITY], name="drawing")
    graph = Plugin(fields=[{"name": "activity", "type": "string", "values": ["graph"]}], name="g")
    catalog = collect(load_plugins([drawing, graph]))
    assert catalog.problems == []
    field = catalog.vocabulary.fields["activity"]
    assert field.values == ("drawing", "graph")
    assert field.sources == ("drawing", "g")


def test_one_source_allowing_any_string_opens_the_field():
    vocabulary, problems = Vocabulary.merge(
        [("a", ACTIVITY), ("b", ContextField("activity", "string", None, "anything"))]
    )
    assert problems == []
    assert vocabulary.fields["activity"].values is None
    vocabulary.check_context({"activity": "whatever"})


def test_two_types_for_one_field_are_an_error_naming_both_sources():
    vocabulary, [problem] = Vocabulary.merge(
        [("host", VISIBLE), ("odd-plugin", {"name": "canvas_visible", "type": "string"})]
    )
    assert "declared as boolean by host and as string by odd-plugin" in str(problem)
    assert vocabulary.fields["canvas_visible"].type == "boolean"


@pytest.mark.parametrize(
    ("declaration", "words"),
    [
        ({"name": "Surface"}, "snake_case"),
        ({"name": "x", "type": "number"}, "'string' or 'boolean'"),
        ({"name": "x", "values": "canvas"}, "list of strings"),
        ({"name": "x", "values": ["any"]}, "cannot be declared"),
        ({"name": "x", "type": "boolean", "values": ["yes"]}, "leave values out"),
        ({"name": "x", "colour": "red"}, "unknown key"),
        (42, "returned int"),
    ],
)
def test_a_bad_declaration_is_a_problem_naming_its_plugin(declaration, words):
    _, [problem] = Vocabulary.merge([("p", declaration)])
    assert words in str(problem)
    assert "'p'" in str(problem)


def test_a_host_that_declares_nothing_checks_nothing(tmp_path):
    path = presets_file(tmp_path, "[{anything_goes: yes}]")
    presets = bootstrap(SimpleNamespace(), plugins=[Plugin(path, ("sketch.draw",))])
    assert presets.problems == []
    presets.manager.set_context({"anything_goes": "yes"})
    assert presets.manager.resolve().active_names == ("sketch-tools",)


def test_set_context_refuses_an_undeclared_value_and_changes_nothing(tmp_path):
    path = presets_file(tmp_path, "[{surface: canvas}]")
    presets = bootstrap(
        SimpleNamespace(),
        plugins=[Plugin(path, ("sketch.draw",), [SURFACE])],
        context={"surface": "canvas"},
    )
    with pytest.raises(PresetValidationError, match="did you mean 'scene'"):
        presets.manager.set_context({"surface": "scen"})
    assert presets.manager.get_context() == {"surface": "canvas"}
    # A fact no one declared is the host's business and passes.
    presets.manager.set_context({"surface": "canvas", "zoom": 2})


def test_the_headless_host_declares_its_context_and_a_plugin_adds_an_activity(tmp_path):
    path = presets_file(tmp_path, "[{surface: canvas, activity: sketching}]")
    plugin = Plugin(
        path, ("sketch.draw",), [{"name": "activity", "type": "string", "values": ["sketching"]}]
    )
    host = SpaceHost(tmp_path / "state")
    presets = host.start([plugin])
    assert presets.problems == []
    fields = presets.vocabulary.fields
    assert fields["surface"].values == ("scene", "canvas")
    assert "space" in fields["surface"].sources  # the Space app (SpaceApp), as SpaceHost adds it
    assert fields["activity"].values == ("sketching",)
    host.shell.set_surface("canvas")
    host.shell.set_activity("sketching")
    assert presets.tool_registry.names() == ["space_sketch_draw"]


def test_the_built_in_plugins_validate_in_a_host_that_declares_nothing():
    # Their additions make the fields they use exist, as string fields of the added values.
    catalog = collect(load_plugins())
    assert catalog.problems == []
    assert {"surface", "activity"} <= set(catalog.vocabulary.fields)


def test_a_field_is_declared_once_by_the_host_and_the_built_ins_only_add_values():
    plugin_set = load_plugins()  # the general plugin is the Space app
    declared: dict[str, list[str]] = {}
    for info, items in plugin_set.call_each("presets_context_fields"):
        for item in items:
            if not is_addition(item):
                declared.setdefault(
                    ContextField(**item).name if isinstance(item, dict) else item.name, []
                ).append(info.name)
    assert declared == {
        "surface": ["general"],
        "activity": ["general"],
        "canvas_visible": ["general"],
        "world_id": ["general"],
    }
    vocabulary = collect(plugin_set).vocabulary
    surface = vocabulary.fields["surface"]
    assert surface.description == "The surface the user is on: the 3D scene or the 2D canvas."
    assert surface.required and vocabulary.fields["canvas_visible"].required
    assert not vocabulary.fields["activity"].required
    assert set(vocabulary.fields["activity"].values or ()) == {"drawing", "graph"}


def test_additions_merge_into_the_declaration_whatever_order_the_plugins_load_in():
    declaration = ContextField("mode", "string", ("a",), "The mode.", required=True)
    addition = {"name": "mode", "values": ["b"]}
    for pairs in (
        [("host", declaration), ("p", addition)],
        [("p", addition), ("host", declaration)],
    ):
        vocabulary, problems = Vocabulary.merge(pairs)
        assert problems == []
        mode = vocabulary.fields["mode"]
        assert (mode.values, mode.description, mode.required) == (("a", "b"), "The mode.", True)


def test_values_added_to_a_boolean_field_are_an_error_naming_both_sources():
    vocabulary, [problem] = Vocabulary.merge(
        [("odd-plugin", {"name": "canvas_visible", "values": ["yes"]}), ("host", VISIBLE)]
    )
    assert "plugin 'odd-plugin' adds values to context field 'canvas_visible'" in str(problem)
    assert "which host declares as boolean" in str(problem)
    assert vocabulary.fields["canvas_visible"].values is None


@pytest.mark.parametrize(
    ("addition", "words"),
    [
        ({"name": "mode", "values": ["a"], "description": "x"}, "takes only name and values"),
        ({"name": "mode", "values": None}, "an addition cannot open a field"),
        ({"name": "mode", "required": True}, "takes only name and values"),
    ],
)
def test_an_addition_only_adds_values(addition, words):
    _, [problem] = Vocabulary.merge([("p", addition)])
    assert words in str(problem)


def test_context_field_takes_required_as_a_keyword_and_keeps_its_constructor():
    assert ContextField("x", "string", ("a",), "X.", ("p",)).required is False
    field = ContextField("x", "boolean", required=True)
    assert field.required and field.to_dict()["required"] is True
    assert parse_declaration({"name": "x", "type": "boolean", "required": True}, "p").required
    _, [problem] = Vocabulary.merge([("p", {"name": "x", "type": "string", "required": "yes"})])
    assert "required must be true or false" in str(problem)


def test_set_context_refuses_a_context_missing_a_required_field_and_changes_nothing(tmp_path):
    host = SpaceHost(tmp_path / "state")
    presets = host.start([])
    before = presets.manager.get_context()
    with pytest.raises(PresetValidationError) as refused:
        presets.manager.set_context({"surface": "canvas", "activity": None})
    assert str(refused.value) == (
        "the context has no 'canvas_visible', which space declares required; "
        "give it a value (true or false)"
    )
    with pytest.raises(PresetValidationError, match=r"no 'surface'.*scene, canvas"):
        presets.manager.set_context({"surface": None, "canvas_visible": True})
    assert presets.manager.get_context() == before


def test_canvas_visible_yes_is_refused_by_the_hosts_declaration_where_it_is_written(tmp_path):
    path = presets_file(tmp_path, "[{surface: canvas, canvas_visible: yes}]")
    plugin_set = load_plugins([Plugin(path, ("sketch.draw",))])
    plugin_set.add(SpaceApp())
    [problem] = collect(plugin_set).problems
    assert str(problem).startswith(f"{path}:5:")
    assert "'canvas_visible' is true or false, not 'yes'" in str(problem)


def test_an_undeclared_value_is_refused_with_the_allowed_values_and_a_did_you_mean():
    vocabulary, _ = Vocabulary.merge([("host", SURFACE)])
    with pytest.raises(PresetValidationError) as refused:
        vocabulary.check_context({"surface": "canvs"})
    assert str(refused.value) == (
        "context field 'surface' has no declared value 'canvs'; did you mean 'canvas'? "
        "(declared values: scene, canvas)"
    )
    with pytest.raises(PresetValidationError, match=r"'zzz'; declared values: scene, canvas$"):
        vocabulary.check_context({"surface": "zzz"})


def test_a_saved_context_no_plugin_declares_any_more_still_starts_the_host(tmp_path):
    # Refusing the first context would keep `serve` from starting after an uninstall.
    path = presets_file(tmp_path, "[{surface: canvas}]")
    sketching = {"name": "activity", "type": "string", "values": ["sketching"]}
    host = SpaceHost(tmp_path / "state")
    host.start([Plugin(path, ("sketch.draw",), [sketching])])
    host.shell.set_activity("sketching")
    close = getattr(host, "close", None)
    if close is not None:
        close()
    again = SpaceHost(tmp_path / "state")
    presets = again.start([Plugin(path, ("sketch.draw",))])
    assert presets.manager.get_context()["activity"] == "sketching"
    with pytest.raises(PresetValidationError, match="no declared value 'sketching2'"):
        again.shell.set_activity("sketching2")


def test_a_prompt_names_a_fields_declared_values_as_a_placeholder(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(
        "presets:\n"
        "  - name: sketch-tools\n"
        "    default_state: auto\n"
        "    risk: normal\n"
        "    contexts: [{surface: any}]\n"
        "    tool_ids: [sketch.draw]\n"
        "    system_prompt: 'Activities: {{values:activity}}.\n"
        "      Visible: {{ values:canvas_visible }}.'\n",
        encoding="utf-8",
    )
    painting = Plugin(fields=[{"name": "activity", "values": ["painting"]}], name="painting")
    host = SpaceHost(tmp_path / "state")
    presets = host.start([Plugin(path, ("sketch.draw",)), painting])
    [fragment] = presets.manager.get_prompt_fragments()
    assert fragment.prompt == "Activities: 'painting'. Visible: true, false."


def test_a_placeholder_of_a_field_nobody_declares_is_a_problem(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(
        "presets:\n"
        "  - name: sketch-tools\n"
        "    default_state: auto\n"
        "    risk: normal\n"
        "    contexts: [{surface: any}]\n"
        "    tool_ids: [sketch.draw]\n"
        "    system_prompt: 'Modes: {{values:mode}}.'\n",
        encoding="utf-8",
    )
    [problem] = collect(load_plugins([Plugin(path, ("sketch.draw",), [SURFACE])])).problems
    assert "names {{values:mode}}, but no plugin or host declares that context field" in str(
        problem
    )


@pytest.mark.parametrize(
    ("plugins", "listed"), [("general,drawing", "('drawing')"), ("general", "(none)")]
)
def test_the_general_plugin_tells_the_agent_the_declared_activities(
    tmp_path, monkeypatch, plugins, listed
):
    monkeypatch.setenv("PRESETS_LOAD_PLUGINS", plugins)
    host = SpaceHost(tmp_path / "state")
    presets = host.start()
    [prompt] = [
        f.prompt
        for f in presets.manager.get_prompt_fragments()
        if f.preset == "general-canvas-tools"
    ]
    assert f"one of the activities the installed plugins declare {listed}" in prompt
    assert "graph" not in prompt


@given(st.permutations(range(4)))
def test_one_declaration_and_its_additions_merge_alike_in_any_order(order):
    items = [
        ("host", ContextField("mode", "string", ("a",), "The mode.", required=True)),
        ("p1", {"name": "mode", "values": ["b", "a"]}),
        ("p2", {"name": "mode", "values": []}),
        ("p3", {"name": "mode", "values": ["c"]}),
    ]
    vocabulary, problems = Vocabulary.merge([items[i] for i in order])
    assert problems == []
    mode = vocabulary.fields["mode"]
    assert (mode.type, mode.description, mode.required) == ("string", "The mode.", True)
    assert mode.values is not None and mode.values[0] == "a"  # the declaration's first
    assert set(mode.values) == {"a", "b", "c"} and len(mode.values) == 3
    assert set(mode.sources) == {"host", "p1", "p2", "p3"}
