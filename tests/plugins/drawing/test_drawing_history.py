"""Undo and redo round trips over random sequences of tool calls."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from agent_presets import ToolCallError
from agent_presets_drawing.document import HISTORY_LIMIT

coord = st.integers(-50, 150).map(float) | st.floats(-50, 150)
size = st.floats(0.5, 80)
color = st.sampled_from(["#ff0000", "#00ff00", "#0000ff", "#000", "none"])
width = st.sampled_from([0, 1, 2.5, 6])
point = st.tuples(coord, coord).map(list)
layer_ref = st.integers(0, 5).map(lambda i: ("$layer", i))
object_ref = st.integers(0, 30).map(lambda i: ("$object", i))
style = st.fixed_dictionaries({}, optional={"fill": color, "stroke": color, "width": width})
line_style = st.fixed_dictionaries({}, optional={"stroke": color, "width": width})
layer_name = st.text("abcXYZ 12", min_size=1, max_size=8).filter(str.strip)


def op(tool: str, /, **arguments: Any) -> Any:
    return st.fixed_dictionaries(arguments).map(lambda a: (tool, a))


MUTATIONS = [
    op(
        "insert_shape",
        shape=st.sampled_from(["rect", "ellipse"]),
        x=coord,
        y=coord,
        width=size,
        height=size,
        rotation=st.sampled_from([0, 30, 90, 200]),
        style=style,
    ),
    op("insert_shape", shape=st.just("polygon"), points=st.lists(point, min_size=3, max_size=6)),
    op("insert_line", x1=coord, y1=coord, x2=coord, y2=coord, style=line_style),
    op("insert_stroke", points=st.lists(point, min_size=2, max_size=6), style=line_style),
    op("set_tool", tool=st.sampled_from(["select", "rect", "ellipse", "stroke"])),
    op("set_defaults", fill=color, width=width),
    op("add_layer"),
    op("duplicate_layer"),
    op("rename_layer", layer=layer_ref, name=layer_name),
    op("set_active_layer", layer=layer_ref),
    op("delete_layer", layer=layer_ref),
    op("select", ids=st.lists(object_ref, min_size=1, max_size=3)),
    op(
        "select",
        rect=st.fixed_dictionaries({"x": coord, "y": coord, "width": size, "height": size}),
        match=st.sampled_from(["intersects", "inside"]),
        extend=st.booleans(),
    ),
    op("transform_selection", dx=coord, dy=coord),
    op("transform_selection", sx=st.sampled_from([0.5, 2, -1]), sy=st.sampled_from([1, 3])),
    op("transform_selection", degrees=st.sampled_from([15, 90, -45, 180])),
    op("update_selection_style", stroke=color, fill=color),
    op("clear_selection"),
    op("delete_selected"),
]
INSERTS = MUTATIONS[:4]
MUTATIONS += INSERTS  # weigh drawing above the rest, so that there is something to edit
HISTORY = [op("undo"), op("redo")]


class Worlds:
    """One drawing app for the whole module; each example draws in a fresh world."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.names = (f"h{n}" for n in itertools.count())

    def fresh(self) -> Any:
        name = next(self.names)
        self.app.host.shell.create_world(name)
        self.app.host.shell.switch_world(name)
        return self.app


@pytest.fixture(scope="module")
def worlds(shared_app: Any) -> Worlds:
    return Worlds(shared_app)


def resolve(app: Any, value: Any) -> Any:
    """Turn ("$layer", i) and ("$object", i) into ids that exist now (or a missing one)."""
    if isinstance(value, tuple) and value and value[0] in ("$layer", "$object"):
        doc = app.call("inspect")
        if value[0] == "$layer":
            ids = [layer["id"] for layer in doc["layers"]]
        else:
            ids = [obj["id"] for layer in doc["layers"] for obj in layer["objects"]]
        return ids[value[1] % len(ids)] if ids and value[1] < 2 * len(ids) else "missing-id"
    if isinstance(value, dict):
        return {k: resolve(app, v) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(app, v) for v in value]
    return value


def run(app: Any, steps: list[tuple[str, dict[str, Any]]]) -> int:
    """Run the steps; every refused step must leave the drawing exactly as it was."""
    refused = 0
    for name, arguments in steps:
        before = app.call("inspect")
        try:
            app.call(name, **resolve(app, arguments))
        except ToolCallError:
            refused += 1
            assert app.call("inspect") == before, f"refused {name} changed the drawing"
    return refused


def undo_all(app: Any) -> int:
    count = 0
    while True:
        try:
            app.call("undo")
        except ToolCallError as exc:
            assert "nothing to undo" in str(exc)
            return count
        count += 1


def redo_all(app: Any) -> int:
    count = 0
    while True:
        try:
            app.call("redo")
        except ToolCallError as exc:
            assert "nothing to redo" in str(exc)
            return count
        count += 1


@pytest.mark.slow
@settings(max_examples=50, deadline=None)
@given(steps=st.lists(st.one_of(MUTATIONS), min_size=8, max_size=30))
def test_undo_all_restores_the_start_and_redo_all_the_end(
    worlds: Worlds, steps: list[tuple[str, dict[str, Any]]]
) -> None:
    app = worlds.fresh()
    start = app.document()
    refused = run(app, steps)
    end = app.document()
    depth = app.call("inspect")["undo_depth"]
    event(f"undo depth {depth // 5 * 5}+")
    event(f"refused {refused * 4 // max(len(steps), 1) * 25}%+")
    assert depth <= len(steps)
    assert undo_all(app) == depth
    assert app.document() == start
    assert redo_all(app) == depth
    assert app.document() == end


@pytest.mark.slow
@settings(max_examples=50, deadline=None)
@given(steps=st.lists(st.one_of(MUTATIONS + HISTORY), min_size=8, max_size=30))
def test_undo_all_restores_the_start_even_with_undo_and_redo_mixed_in(
    worlds: Worlds, steps: list[tuple[str, dict[str, Any]]]
) -> None:
    app = worlds.fresh()
    start = app.document()
    run(app, steps)
    undo_all(app)
    assert app.document() == start


def test_history_keeps_the_last_changes_only(worlds: Worlds) -> None:
    app = worlds.fresh()
    for i in range(HISTORY_LIMIT + 5):
        app.rect(i, 0, 1, 1)
    assert app.call("inspect")["undo_depth"] == HISTORY_LIMIT
    assert undo_all(app) == HISTORY_LIMIT
    assert len(app.objects()) == 5
