"""Every built-in tool that returns structured content declares it, and follows what it declares.

One headless host runs the five built-ins together, as ``presets serve``
does. A scenario calls every built-in tool with valid arguments, each in the
context that offers it, through the tool definitions the manager serves
(``ToolDef.run``), so the registry's own output check runs on every call.
Then each dict result (what the server sends as ``structuredContent``) must
come from a tool with an output schema, and validate against it. A property
test does the same for arguments drawn at random, where a result's shape
depends on them (optional fields, nulls, hits and misses).
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import math
import os
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agent_presets_drawing
import agent_presets_general
import agent_presets_graph
import agent_presets_scene
import agent_presets_units
from agent_presets import ToolArgumentError, ToolCallError, ToolResultError
from agent_presets.lib.adapters import plain_mapping
from agent_presets.lib.model import ToolDef
from agent_presets.testing import PresetsHost, mcp_name, plugin_adapters, plugin_presets
from agent_presets_general import SPACE_DEFAULTS

SPACE = SPACE_DEFAULTS.namespace  # the Space app's, which these tools are served in

BUILT_INS = (
    agent_presets_drawing,
    agent_presets_general,
    agent_presets_graph,
    agent_presets_scene,
    agent_presets_units,
)
EVERY_TOOL = sorted(mcp_name(a, SPACE) for p in BUILT_INS for a in plugin_adapters(p).values())
OFF_PRESETS = [p.name for m in BUILT_INS for p in plugin_presets(m) if p.default_state == "off"]

DRAWING = {"surface": "canvas", "activity": "drawing"}
GRAPH = {"surface": "canvas", "activity": "graph"}
SCENE = {"surface": "scene", "activity": None}


class RecordingHost(PresetsHost):
    """The built-ins on one host; every call is kept with the tool definition that ran it."""

    def __init__(self, directory: Path) -> None:
        super().__init__(BUILT_INS, directory / "state", root=directory / "files")
        # The shell preset is turned on by the scenario that runs it: only where a sandbox works.
        self.enable(*(name for name in OFF_PRESETS if name != "general-shell-tools"))
        self.calls: list[tuple[ToolDef, Any]] = []
        self.first_calls: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
        """Each tool's first call: the context it was offered in, and its arguments."""

    def call(self, name: str, /, **arguments: Any) -> Any:
        """Call ``space_<name>``, which the current context must offer."""
        context = dict(self.manager.get_context())
        self.first_calls.setdefault(name, (context, copy.deepcopy(arguments)))
        tool = self.tools().get(f"space_{name}")
        result = self.call_tool(f"space_{name}", arguments)  # fails when it is not offered
        assert tool is not None
        self.calls.append((tool, result))
        return result

    def into(self, context: dict[str, Any]) -> None:
        """Drive the shell to ``context``, unless it is there already."""
        current = self.manager.get_context()
        if any(current.get(k) != v for k, v in context.items()):
            self.set_context(**context)


def drawing_scenario(app: RecordingHost) -> None:
    app.into(DRAWING)
    app.call("drawing_inspect")
    app.call("drawing_set_tool", tool="rect")
    app.call("drawing_insert_shape", shape="rect", x=10, y=10, width=100, height=50)
    app.call(
        "drawing_insert_shape",
        shape="ellipse",
        x=200,
        y=40,
        width=80,
        height=40,
        rotation=30,
        style={"fill": "#f80"},
    )
    app.call("drawing_insert_shape", shape="polygon", points=[[0, 300], [50, 300], [25, 340]])
    invisible = app.call(
        "drawing_insert_shape",
        shape="rect",
        x=500,
        y=500,
        width=10,
        height=10,
        style={"width": 0},
    )
    assert "warning" in invisible
    app.call("drawing_insert_line", x1=0, y1=0, x2=300, y2=200, style={"stroke": "#00f"})
    app.call("drawing_insert_stroke", points=[[5, 5], [20, 30], [40, 10]])
    app.call("drawing_add_layer", name="Top")
    app.call("drawing_duplicate_layer", layer="layer-1")
    app.call("drawing_rename_layer", layer="Top", name="Upper")
    app.call("drawing_set_active_layer", layer="layer-1")
    app.call("drawing_set_defaults", fill="#00ff00", width=3)
    everything = app.call("drawing_select", rect={"x": 0, "y": 0, "width": 800, "height": 600})
    assert "bounds" in everything
    restyled = app.call("drawing_update_selection_style", fill="#123456")
    assert "fill_skipped" in restyled
    app.call("drawing_transform_selection", dx=5, sx=2, degrees=15, origin={"x": 0, "y": 0})
    app.call("drawing_sample_color", x=11, y=11)
    app.call("drawing_sample_color", x=799, y=599)
    app.call("drawing_undo")
    app.call("drawing_redo")
    app.call("drawing_select", ids=["obj-1"], extend=False)
    app.call("drawing_delete_selected")
    app.call("drawing_clear_selection")
    nothing = app.call("drawing_select", rect={"x": 790, "y": 0, "width": 1, "height": 1})
    assert "bounds" not in nothing
    app.call("drawing_delete_layer", layer="Upper")
    app.call("drawing_inspect", include_svg=True)


def graph_scenario(app: RecordingHost) -> None:
    app.into(GRAPH)
    ada = app.call("graph_add_node", label="Ada", data={"born": 1815})["id"]
    engine = app.call("graph_add_node", label="Analytical Engine")["id"]
    app.call("graph_load_node", id=ada, data={"field": "mathematics"})
    app.call("graph_load_node", id="note:1", label="A note")
    app.call("graph_add_edge", source=ada, target=engine, label="described")
    app.call("graph_add_edge", source=engine, target=ada)
    app.call("graph_focus_node", id=ada)
    app.call("graph_open_node", id=engine)
    app.call("graph_create_identity", name="Charles Babbage", data={"born": 1791})
    app.call("graph_search_nodes", query="ada")
    app.call("graph_search_nodes", query="1791", kind="identity", limit=5)
    state = app.call("graph_get_state")
    app.call("graph_remove_nodes", ids=["note:1", ada])
    app.call("graph_restore_state", state=state)


def scene_scenario(app: RecordingHost) -> None:
    app.into(SCENE)
    box = app.call("scene_add_cuboid", position=[0, 0.5, 0], size=[1, 1, 1], name="crate")["id"]
    app.call("scene_add_physics_body", object_id=box, kind="dynamic", mass=2)
    app.call("scene_add_physics_body", object_id=box, kind="static")
    app.call("scene_select_object", object_id=box)
    app.call("scene_select_object", object_id=None)
    app.call("scene_add_terrain", seed=7, rows=9, cols=9, amplitude=2)
    app.call("scene_raycast_terrain", origin=[4, 50, 4], direction=[0, -1, 0])
    app.call("scene_raycast_terrain", origin=[4, 50, 4], direction=[0, 1, 0])
    app.call("scene_raycast_terrain", origin=[4, -50, 4], direction=[0, 1, 0])
    app.call("scene_remove_terrain")
    app.call("scene_add_terrain", heights=[[0, 1], [1, 0]], cell_size=2, origin=[-1, 0, -1])
    lamp = app.call("scene_add_light", kind="point", position=[0, 3, 0])["id"]
    app.call("scene_add_light", kind="directional", direction=[1, -1, 0], intensity=0.5)
    app.call("scene_add_light", kind="spot", position=[0, 5, 0], angle=20, name="spot")
    app.call("scene_set_light_state", light_id=lamp, on=False)
    app.call("scene_set_skybox", name="sunset")
    app.call("scene_set_background", color="#123")
    app.call("scene_set_camera", position=[3, 3, 3], target=[0, 0, 0], fov=50)
    app.call("scene_screen_ray", x=10, y=20, width=640, height=480)
    app.call("scene_reset_camera")
    state = app.call("scene_get_state")
    app.call("scene_restore_state", state=state)


def general_scenario(app: RecordingHost) -> None:
    app.call("app_set_theme", theme="dark")
    app.call("app_switch_surface", surface="canvas")
    app.call("app_set_activity", activity="drawing")
    app.call("app_set_activity", activity=None)
    app.call("app_set_canvas_visible", visible=False)
    app.call("app_switch_surface", surface="scene")
    app.call("app_create_world", name="mars")
    app.call("app_switch_world", name="mars")
    app.call("app_switch_world", name="home")
    app.call("app_delete_world", name="mars")
    app.call("app_write_file", path="notes/todo.md", content="# To do\n")
    app.call("app_write_file", path="notes/todo.md", content="# To do\n- write\n")
    app.call("app_read_file", path="notes/todo.md")
    app.call("app_list_files")
    app.call("app_list_files", path="notes")
    app.enable("general-shell-tools")
    app.call("app_run_bash", command="echo out; echo err >&2; exit 3", timeout_seconds=10)


def units_scenario(app: RecordingHost) -> None:
    app.call("unit_list")
    source = (
        '"""Colours."""\n\n\ndef mix(a: str, b: str) -> str:\n    """Mix two."""\n'
        "    return a + b\n\n\nclass Palette(dict):\n    def add(self, name):\n"
        "        self[name] = 1\n"
    )
    app.call("unit_create", name="colours", source=source)
    app.call("unit_inspect", name="colours")
    app.call("unit_reload", name="colours")
    app.call("unit_edit", name="colours", source=source + "\nDEPTH = 8\n")
    app.call("unit_list")  # loaded, and stale since the edit
    patch = '@@ -1,1 +1,1 @@\n-"""Colours."""\n+"""Colours and paints."""\n'
    app.call("unit_apply_patch", name="colours", patch=patch)
    app.call("unit_create", name="broken", source="def f(:\n", check_syntax=False)
    app.call("unit_inspect", name="broken")
    app.call("unit_reload", name="broken")
    app.call("unit_create", name="raises", source="import sys\nraise RuntimeError('no')\n")
    app.call("unit_reload", name="raises")
    app.call("unit_list")


SCENARIOS = (drawing_scenario, graph_scenario, scene_scenario, general_scenario, units_scenario)


_validators: dict[str, jsonschema.Draft202012Validator] = {}


def _validator(tool: ToolDef) -> jsonschema.Draft202012Validator:
    """The tool's output schema, checked to be a valid 2020-12 schema, as a validator."""
    validator = _validators.get(tool.name)
    if validator is None:
        schema = dict(tool.output_schema or {})
        jsonschema.Draft202012Validator.check_schema(schema)
        validator = _validators[tool.name] = jsonschema.Draft202012Validator(schema)
    return validator


def problems(calls: list[tuple[ToolDef, Any]]) -> list[str]:
    """What is wrong with the recorded calls: a dict with no schema, or one that breaks it."""
    found = []
    for tool, result in calls:
        if not isinstance(result, dict):
            continue
        if tool.output_schema is None:
            found.append(f"{tool.name} returned structured content but declares no output schema")
            continue
        for error in _validator(tool).iter_errors(result):
            path = ".".join(map(str, error.absolute_path)) or "(the result)"
            found.append(f"{tool.name}: {path}: {error.message}")
    return found


@pytest.fixture
def app(tmp_path: Path) -> Iterator[RecordingHost]:
    host = RecordingHost(tmp_path)
    yield host
    host.close()


def test_every_built_in_tool_returns_what_its_output_schema_declares(
    shell_sandbox: None, app: RecordingHost
) -> None:
    for scenario in SCENARIOS:
        scenario(app)
    called = sorted({tool.name for tool, _ in app.calls})
    assert called == EVERY_TOOL, (
        f"the scenario misses {sorted(set(EVERY_TOOL) - set(called))}: call each new tool in it"
    )
    assert problems(app.calls) == []


def test_a_dict_result_without_an_output_schema_is_reported(app: RecordingHost) -> None:
    app.into(DRAWING)
    tool = app.tools()["space_drawing_inspect"]
    undeclared = replace(tool, output_schema=None)
    assert problems([(undeclared, tool.run({}))]) == [
        "space_drawing_inspect returned structured content but declares no output schema"
    ]
    assert problems([(tool, {"width": "wide"})]) != []


# -- numbers at the far ends of a float ------------------------------------------------

TOO_LARGE = (10**400, -(10**400), 2**1024)
"""Valid JSON integers past a float's range: refused by name before any tool computes."""
FAR_ENDS = (sys.float_info.max, -sys.float_info.max, 10**308, -(10**308), 5e-324, -0.0)
"""Numbers a tool must compute with: each gets an answer or a refusal, never a crash."""


def numeric_paths(schema: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    """Every place a number goes in arguments of ``schema``; ``('points', 0, 0)`` in a pair list."""
    if schema.get("type") in ("number", "integer"):
        yield path
    items = schema.get("items")
    if isinstance(items, dict):
        yield from numeric_paths(items, (*path, 0))
    for name, inner in schema.get("properties", {}).items():
        yield from numeric_paths(inner, (*path, name))


def smallest(schema: Any) -> Any:
    """A value of ``schema``'s shape to put a number into: its required parts only."""
    kind = schema.get("type")
    if kind == "array":
        return [smallest(schema.get("items", {})) for _ in range(max(1, schema.get("minItems", 1)))]
    if kind == "object":
        return {k: smallest(schema["properties"][k]) for k in schema.get("required", [])}
    if "enum" in schema:
        return schema["enum"][0]
    return "a" if kind == "string" else 1


def with_number(
    arguments: dict[str, Any], schema: Any, path: tuple[str | int, ...], number: Any
) -> dict[str, Any]:
    """``arguments`` with ``number`` at ``path``; a container they lack is made up."""
    result = copy.deepcopy(arguments)
    holder: Any = result
    for key in path[:-1]:
        schema = schema["properties"][key] if isinstance(key, str) else schema["items"]
        if isinstance(key, str) and not isinstance(holder.get(key), list | dict):
            holder[key] = smallest(schema)
        holder = holder[key]
    holder[path[-1]] = number
    return result


def test_every_numeric_argument_refuses_an_integer_past_a_float_by_name(
    shell_sandbox: None,
    app: RecordingHost,
) -> None:
    for scenario in SCENARIOS:
        scenario(app)
    numeric_tools = {
        name.removeprefix("space_")
        for p in BUILT_INS
        for a in plugin_adapters(p).values()
        if any(numeric_paths(plain_mapping(a.input_schema)))
        for name in [mcp_name(a, SPACE)]
    }
    assert numeric_tools <= app.first_calls.keys()
    places = 0
    for name in sorted(numeric_tools):
        context, arguments = app.first_calls[name]
        app.into({key: context.get(key) for key in ("surface", "activity")})
        schema = plain_mapping(app.tools()[f"space_{name}"].input_schema)
        for path in numeric_paths(schema):
            places += 1
            where = ".".join(map(str, path))
            for number in TOO_LARGE:
                with pytest.raises(ToolArgumentError) as refused:
                    app.call_tool(f"space_{name}", with_number(arguments, schema, path, number))
                message = str(refused.value)
                exponent = math.floor(math.log10(abs(number)))
                assert f"argument '{where}': an integer of about " in message
                assert f"10**{exponent} is out of range; give a number between" in message
            for number in FAR_ENDS:
                # A refusal the model can read is fine; anything else fails the test.
                with contextlib.suppress(ToolCallError):
                    app.call_tool(f"space_{name}", with_number(arguments, schema, path, number))
    assert places >= 43  # the numeric arguments of the built-ins when this test was written


# -- arguments drawn at random ---------------------------------------------------------

COORD = st.integers(-50, 850)
SIZE = st.integers(1, 300)
PAINT = st.sampled_from(["none", "#000", "#ff8800", "#ABCDEF"])
STYLE = st.fixed_dictionaries({}, optional={"fill": PAINT, "stroke": PAINT, "width": SIZE})
OPEN_STYLE = st.fixed_dictionaries({}, optional={"stroke": PAINT, "width": st.integers(0, 5)})
POINT = st.lists(COORD, min_size=2, max_size=2)
OBJECT_ID = st.sampled_from([f"obj-{i}" for i in range(1, 6)])
VEC = st.lists(st.integers(-20, 20), min_size=3, max_size=3)
NON_ZERO = VEC.filter(any)
ABOVE_TERRAIN = st.tuples(st.floats(-1, 6), st.floats(-3, 8), st.floats(-1, 5)).map(list)
Step = tuple[dict[str, Any], str, dict[str, Any]]


def _step(context: dict[str, Any], tool: str, **arguments: Any) -> st.SearchStrategy[Step]:
    return st.tuples(st.just(context), st.just(tool), st.fixed_dictionaries(arguments))


DRAWING_STEPS = [
    _step(
        DRAWING,
        "drawing_insert_shape",
        shape=st.sampled_from(["rect", "ellipse"]),
        x=COORD,
        y=COORD,
        width=SIZE,
        height=SIZE,
        rotation=st.integers(-360, 360),
        style=STYLE,
    ),
    _step(
        DRAWING,
        "drawing_insert_shape",
        shape=st.just("polygon"),
        points=st.lists(POINT, min_size=3, max_size=6),
    ),
    _step(DRAWING, "drawing_insert_line", x1=COORD, y1=COORD, x2=COORD, y2=COORD, style=OPEN_STYLE),
    _step(
        DRAWING,
        "drawing_insert_stroke",
        points=st.lists(POINT, min_size=2, max_size=5),
        style=OPEN_STYLE,
    ),
    _step(
        DRAWING,
        "drawing_select",
        rect=st.fixed_dictionaries({"x": COORD, "y": COORD, "width": SIZE, "height": SIZE}),
        match=st.sampled_from(["intersects", "inside"]),
        extend=st.booleans(),
    ),
    _step(DRAWING, "drawing_select", ids=st.lists(OBJECT_ID, min_size=1, max_size=3)),
    _step(DRAWING, "drawing_update_selection_style", fill=PAINT),
    _step(DRAWING, "drawing_transform_selection", dx=COORD, sx=st.sampled_from([-1, 0.5, 2])),
    _step(DRAWING, "drawing_transform_selection", degrees=st.integers(1, 359)),
    _step(DRAWING, "drawing_sample_color", x=COORD, y=COORD),
    _step(DRAWING, "drawing_add_layer"),
    _step(DRAWING, "drawing_duplicate_layer"),
    _step(DRAWING, "drawing_delete_layer", layer=st.sampled_from(["layer-1", "layer-2"])),
    _step(DRAWING, "drawing_delete_selected"),
    _step(DRAWING, "drawing_undo"),
    _step(DRAWING, "drawing_redo"),
    _step(DRAWING, "drawing_inspect"),
]
NODE_ID = st.sampled_from(["n1", "n2", "n3", "e4", "x:1"])
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=6,
)
GRAPH_STEPS = [
    _step(GRAPH, "graph_add_node", label=st.sampled_from(["Ada", "ada lab", "Bob"])),
    _step(
        GRAPH,
        "graph_load_node",
        id=NODE_ID,
        label=st.just("Loaded"),
        data=st.dictionaries(st.text(min_size=1, max_size=4), JSON, max_size=3),
        merge=st.booleans(),
    ),
    _step(GRAPH, "graph_add_edge", source=NODE_ID, target=NODE_ID, label=st.just("knows")),
    _step(GRAPH, "graph_focus_node", id=NODE_ID),
    _step(GRAPH, "graph_open_node", id=NODE_ID),
    _step(GRAPH, "graph_search_nodes", query=st.sampled_from(["a", "ada", "true", "1"])),
    _step(GRAPH, "graph_remove_nodes", ids=st.lists(NODE_ID, min_size=1, max_size=2, unique=True)),
    _step(GRAPH, "graph_get_state"),
]
SCENE_STEPS = [
    _step(SCENE, "scene_add_cuboid", position=VEC, size=st.just([1, 2, 3])),
    _step(
        SCENE,
        "scene_select_object",
        object_id=st.sampled_from([None, "cuboid-1", "cuboid-2"]),
    ),
    _step(SCENE, "scene_add_terrain", seed=st.integers(0, 9), rows=st.just(5), cols=st.just(6)),
    _step(SCENE, "scene_remove_terrain"),
    _step(SCENE, "scene_raycast_terrain", origin=ABOVE_TERRAIN, direction=NON_ZERO),
    _step(SCENE, "scene_add_light", kind=st.just("point"), position=VEC),
    _step(SCENE, "scene_add_light", kind=st.just("directional"), direction=NON_ZERO),
    _step(SCENE, "scene_add_light", kind=st.just("spot"), position=VEC, direction=NON_ZERO),
    _step(
        SCENE,
        "scene_screen_ray",
        x=st.integers(0, 64),
        y=st.integers(0, 48),
        width=st.just(64),
        height=st.just(48),
    ),
    _step(SCENE, "scene_get_state"),
]
UNIT_SOURCE = st.sampled_from(
    ["X = 1\n", "def f(:\n", "raise ValueError('x')\n", "class A:\n    '''Doc.'''\n", ""]
)
UNIT_STEPS = [
    _step({}, "unit_create", name=st.just("u"), source=UNIT_SOURCE, check_syntax=st.just(False)),
    _step({}, "unit_edit", name=st.just("u"), source=UNIT_SOURCE, check_syntax=st.just(False)),
    _step({}, "unit_inspect", name=st.just("u")),
    _step({}, "unit_reload", name=st.just("u")),
    _step({}, "unit_list"),
]


def _no_fsync(fd: int) -> None:
    """Stands in for ``os.fsync``: these examples check results, not durability."""


@pytest.fixture(scope="module")
def shared_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RecordingHost]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "fsync", _no_fsync)
        host = RecordingHost(tmp_path_factory.mktemp("schemas"))
        yield host
        host.close()


_worlds = itertools.count(1)

FURNISH: list[Step] = [
    # What each example starts from, so the ids its steps name often exist.
    (
        DRAWING,
        "drawing_insert_shape",
        {"shape": "rect", "x": 100, "y": 100, "width": 200, "height": 100},
    ),
    (DRAWING, "drawing_insert_line", {"x1": 0, "y1": 0, "x2": 300, "y2": 300}),
    (DRAWING, "drawing_select", {"rect": {"x": 0, "y": 0, "width": 800, "height": 600}}),
    (GRAPH, "graph_add_node", {"label": "Ada", "data": {"born": 1815, "tags": ["math"]}}),
    (GRAPH, "graph_add_node", {"label": "Bob"}),
    (SCENE, "scene_add_cuboid", {"position": [1, 0.5, 1], "size": [1, 1, 1]}),
    (SCENE, "scene_add_terrain", {"seed": 1, "rows": 5, "cols": 6}),
    ({}, "unit_create", {"name": "u", "source": "X = 1\n"}),
]


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(
    steps=st.lists(st.one_of(DRAWING_STEPS + GRAPH_STEPS + SCENE_STEPS + UNIT_STEPS), max_size=12)
)
def test_results_follow_the_output_schema_whatever_the_arguments(
    shared_app: RecordingHost, steps: list[Step]
) -> None:
    app = shared_app
    app.calls.clear()
    # Each example starts in a world of its own, so it sees only its own drawing, graph, scene;
    # units are not kept per world, so each example names its own unit.
    number = next(_worlds)
    world, unit = f"example-{number}", f"unit_{number}"
    app.call("app_create_world", name=world)
    app.call("app_switch_world", name=world)
    try:
        for context, tool, arguments in FURNISH + steps:
            app.into(context)
            if tool.startswith("unit_") and "name" in arguments:
                arguments = {**arguments, "name": unit}
            try:
                app.call(tool, **arguments)
            except ToolResultError:
                raise
            except ToolCallError:
                pass  # a refusal (no such id, nothing selected): no result to check
        assert problems(app.calls) == []
    finally:
        app.into(SCENE)
        app.call("app_switch_world", name="home")
        app.call("app_delete_world", name=world)
