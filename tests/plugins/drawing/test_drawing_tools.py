"""Every drawing tool, called through the manager's tool defs, including its refusals."""

from __future__ import annotations

import sys
import threading
import xml.etree.ElementTree as ET
from typing import Any

import pytest

from agent_presets import ToolArgumentError

SVG = "{http://www.w3.org/2000/svg}"


# ------------------------------------------------------------------ inspect


def test_a_new_drawing_has_one_empty_active_layer(app: Any) -> None:
    doc = app.call("inspect")
    assert [(lay["id"], lay["name"], lay["objects"]) for lay in doc["layers"]] == [
        ("layer-1", "Layer 1", [])
    ]
    assert doc["active_layer"] == "layer-1"
    assert doc["selection"] == []
    assert doc["tool"] == "select"
    assert doc["defaults"] == {"fill": "none", "stroke": "#000000", "width": 2.0}
    assert (doc["undo_depth"], doc["redo_depth"]) == (0, 0)
    assert "svg" not in doc


def test_inspect_reports_bounds_and_can_include_svg(app: Any) -> None:
    app.rect(10, 20, 30, 40)
    doc = app.call("inspect", include_svg=True)
    (obj,) = doc["layers"][0]["objects"]
    assert obj["bounds"] == {"x": 10.0, "y": 20.0, "width": 30.0, "height": 40.0}
    root = ET.fromstring(doc["svg"])
    assert root.find(f"{SVG}g/{SVG}rect").get("id") == obj["id"]
    assert doc["next_undo"] == f"insert rect {obj['id']} on layer-1"


def test_inspect_rejects_unknown_arguments(app: Any) -> None:
    with pytest.raises(ToolArgumentError, match="'layers' was unexpected"):
        app.call("inspect", layers=True)


# ------------------------------------------------------------------ set_tool


def test_set_tool_switches_the_current_tool(app: Any) -> None:
    assert app.call("set_tool", tool="ellipse") == {"tool": "ellipse", "previous": "select"}
    assert app.call("inspect")["tool"] == "ellipse"


@pytest.mark.parametrize("arguments", [{}, {"tool": "brush"}, {"tool": 3}])
def test_set_tool_rejects_missing_or_unknown_tools(app: Any, arguments: dict[str, Any]) -> None:
    with pytest.raises(ToolArgumentError, match="tool"):
        app.call("set_tool", **arguments)
    assert app.call("inspect")["tool"] == "select"


# -------------------------------------------------------------- insert_shape


def test_insert_rect_uses_the_defaults_and_returns_the_object(app: Any) -> None:
    result = app.call("insert_shape", shape="rect", x=0, y=0, width=10, height=5)
    assert result["layer"] == "layer-1"
    assert result["object"] == {
        "id": result["id"],
        "kind": "rect",
        "x": 0.0,
        "y": 0.0,
        "width": 10.0,
        "height": 5.0,
        "rotation": 0.0,
        "style": {"fill": "none", "stroke": "#000000", "width": 2.0},
    }
    assert app.objects()[result["id"]]["kind"] == "rect"


def test_insert_ellipse_with_style_and_rotation(app: Any) -> None:
    result = app.call(
        "insert_shape",
        shape="ellipse",
        x=0,
        y=0,
        width=40,
        height=20,
        rotation=90,
        style={"fill": "#F00"},
    )
    obj = result["object"]
    assert obj["style"] == {"fill": "#ff0000", "stroke": "#000000", "width": 2.0}
    assert obj["rotation"] == 90.0
    # Turned a quarter, the 40 x 20 ellipse stands 20 wide and 40 tall about the same centre.
    assert result["bounds"] == {"x": 10.0, "y": -10.0, "width": 20.0, "height": 40.0}


def test_insert_polygon_through_points_on_a_named_layer(app: Any) -> None:
    app.call("add_layer", name="Ink")
    app.call("set_active_layer", layer="layer-1")
    result = app.call(
        "insert_shape", shape="polygon", points=[[0, 0], [10, 0], [5, 8]], layer="Ink"
    )
    assert result["layer"] == "layer-2"
    assert result["object"]["points"] == [[0.0, 0.0], [10.0, 0.0], [5.0, 8.0]]
    assert result["bounds"] == {"x": 0.0, "y": 0.0, "width": 10.0, "height": 8.0}


def test_insert_warns_when_the_new_object_is_invisible(app: Any) -> None:
    result = app.call(
        "insert_shape", shape="rect", x=0, y=0, width=1, height=1, style={"stroke": "none"}
    )
    assert "invisible" in result["warning"]
    assert "warning" not in app.call("insert_shape", shape="rect", x=0, y=0, width=1, height=1)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"shape": "rect", "x": 0, "y": 0, "width": 10}, "'height' is a required property"),
        ({"shape": "ellipse", "x": 0, "y": 0, "width": 0, "height": 1}, "width"),
        ({"shape": "polygon"}, "'points' is a required property"),
        ({"shape": "polygon", "points": [[0, 0], [1, 1]]}, "points"),
        ({"shape": "polygon", "points": [[0, 0, 1], [1, 1], [2, 0]]}, "points"),
        ({"shape": "star", "x": 0, "y": 0, "width": 1, "height": 1}, "shape"),
        ({"x": 0, "y": 0, "width": 1, "height": 1}, "'shape' is a required property"),
        (
            {"shape": "rect", "x": 0, "y": 0, "width": 1, "height": 1, "style": {"fill": "red"}},
            "fill",
        ),
        ({"shape": "rect", "x": 0, "y": 0, "width": 1, "height": 1, "style": {"glow": 1}}, "glow"),
    ],
)
def test_insert_shape_rejects_arguments_the_schema_forbids(
    app: Any, arguments: dict[str, Any], message: str
) -> None:
    with pytest.raises(ToolArgumentError, match=message):
        app.call("insert_shape", **arguments)
    assert app.objects() == {}


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            {"shape": "polygon", "points": [[0, 0], [1, 0], [0, 1]], "x": 3},
            "placed by its points only; drop x",
        ),
        (
            {"shape": "rect", "x": 0, "y": 0, "width": 1, "height": 1, "points": [[0, 0]] * 3},
            "points are only for polygons",
        ),
        (
            {"shape": "rect", "x": 0, "y": 0, "width": 1, "height": 1, "layer": "Nope"},
            "no layer 'Nope'; layers",
        ),
    ],
)
def test_insert_shape_refuses_contradictory_requests(
    app: Any, arguments: dict[str, Any], message: str
) -> None:
    assert message in app.refused("insert_shape", **arguments)


# ------------------------------------------------------------ insert_line/stroke


def test_insert_line_has_a_stroke_and_no_fill(app: Any) -> None:
    app.call("set_defaults", fill="#00ff00")
    result = app.call("insert_line", x1=0, y1=0, x2=30, y2=40, style={"width": 4})
    assert result["object"]["points"] == [[0.0, 0.0], [30.0, 40.0]]
    assert result["object"]["style"] == {"stroke": "#000000", "width": 4.0}


def test_insert_line_refusals(app: Any) -> None:
    with pytest.raises(ToolArgumentError, match="'fill' was unexpected"):
        app.call("insert_line", x1=0, y1=0, x2=1, y2=1, style={"fill": "#000"})
    with pytest.raises(ToolArgumentError, match="'y2' is a required property"):
        app.call("insert_line", x1=0, y1=0, x2=1)
    assert "two different end points" in app.refused("insert_line", x1=1, y1=1, x2=1, y2=1)


def test_insert_stroke_keeps_its_points_in_order(app: Any) -> None:
    points = [[0, 0], [5, 3], [9, -2], [12, 7]]
    result = app.call("insert_stroke", points=points, style={"stroke": "#123456"})
    assert result["object"]["kind"] == "stroke"
    assert result["object"]["points"] == [[float(x), float(y)] for x, y in points]
    assert result["object"]["style"] == {"stroke": "#123456", "width": 2.0}


def test_insert_stroke_needs_two_points(app: Any) -> None:
    with pytest.raises(ToolArgumentError, match="points"):
        app.call("insert_stroke", points=[[1, 1]])
    assert "no layer" in app.refused("insert_stroke", points=[[0, 0], [1, 1]], layer="x")


def test_object_ids_are_never_reused_even_after_undo(app: Any) -> None:
    first = app.rect(0, 0, 1, 1)
    app.call("undo")
    assert app.rect(0, 0, 1, 1) != first


# ------------------------------------------------------------------ layers


def test_add_layer_goes_above_the_active_layer_and_becomes_active(app: Any) -> None:
    top = app.call("add_layer", name="Top")["layer"]
    app.call("set_active_layer", layer="layer-1")
    middle = app.call("add_layer")
    assert middle["position"] == 1
    doc = app.call("inspect")
    assert [lay["name"] for lay in doc["layers"]] == ["Layer 1", "Layer 3", "Top"]
    assert doc["active_layer"] == middle["layer"]["id"] != top["id"]
    obj = app.rect(0, 0, 1, 1)
    assert app.call("inspect")["layers"][1]["objects"][0]["id"] == obj


def test_layer_names_are_unique(app: Any) -> None:
    app.call("add_layer", name="Ink")
    assert "already taken" in app.refused("add_layer", name="Ink")
    assert "already taken" in app.refused("rename_layer", layer="layer-1", name="Ink")
    assert "already taken" in app.refused("add_layer", name="layer-1")
    with pytest.raises(ToolArgumentError, match="name"):
        app.call("add_layer", name="")


def test_duplicate_layer_copies_objects_with_new_ids(app: Any) -> None:
    a = app.rect(0, 0, 10, 10, style={"fill": "#abcdef"})
    app.call("add_layer", name="Other")
    result = app.call("duplicate_layer", layer="Layer 1")
    copy = result["layer"]
    assert (copy["name"], result["position"], result["source"]) == ("Layer 1 copy", 1, "layer-1")
    (clone,) = copy["objects"]
    assert clone["id"] != a
    assert {k: v for k, v in clone.items() if k != "id"} == {
        k: v for k, v in app.objects()[a].items() if k not in ("id", "bounds")
    }
    doc = app.call("inspect")
    assert [lay["name"] for lay in doc["layers"]] == ["Layer 1", "Layer 1 copy", "Other"]
    assert doc["active_layer"] == copy["id"]
    assert app.call("duplicate_layer", layer="layer-1")["layer"]["name"] == "Layer 1 copy 2"
    assert app.call("duplicate_layer")["layer"]["name"] == "Layer 1 copy 2 copy"
    assert "no layer 'ghost'" in app.refused("duplicate_layer", layer="ghost")


def test_rename_layer_by_id_or_by_name(app: Any) -> None:
    assert app.call("rename_layer", layer="layer-1", name="Sketch") == {
        "layer": {"id": "layer-1", "name": "Sketch"}
    }
    app.call("rename_layer", layer="Sketch", name="Final")
    assert app.call("inspect")["layers"][0]["name"] == "Final"
    assert "no layer 'Sketch'" in app.refused("rename_layer", layer="Sketch", name="X")
    with pytest.raises(ToolArgumentError, match="'name' is a required property"):
        app.call("rename_layer", layer="Final")


def test_set_active_layer_decides_where_objects_go(app: Any) -> None:
    app.call("add_layer", name="Above")
    assert app.call("set_active_layer", layer="Layer 1") == {
        "active_layer": "layer-1",
        "name": "Layer 1",
    }
    obj = app.rect(0, 0, 1, 1)
    assert app.call("inspect")["layers"][0]["objects"][0]["id"] == obj
    assert "no layer 'Below'" in app.refused("set_active_layer", layer="Below")


def test_delete_layer_removes_its_objects_and_moves_the_active_layer(app: Any) -> None:
    keep = app.rect(0, 0, 1, 1)
    app.call("add_layer", name="Scratch")
    gone = app.rect(5, 5, 1, 1)
    app.call("select", ids=[keep, gone])
    result = app.call("delete_layer", layer="Scratch")
    assert result == {"deleted": "layer-2", "objects_deleted": 1, "active_layer": "layer-1"}
    doc = app.call("inspect")
    assert [lay["id"] for lay in doc["layers"]] == ["layer-1"]
    assert doc["selection"] == [keep]


def test_the_last_layer_cannot_be_deleted(app: Any) -> None:
    message = app.refused("delete_layer", layer="layer-1")
    assert "only layer" in message and "add another layer first" in message
    assert "no layer 'layer-9'" in app.refused("delete_layer", layer="layer-9")


# ---------------------------------------------------------- defaults and style


def test_set_defaults_styles_new_objects_only(app: Any) -> None:
    old = app.rect(0, 0, 1, 1)
    result = app.call("set_defaults", fill="#0f0", width=5)
    assert result == {"defaults": {"fill": "#00ff00", "stroke": "#000000", "width": 5.0}}
    new = app.rect(0, 0, 1, 1)
    objects = app.objects()
    assert objects[new]["style"] == {"fill": "#00ff00", "stroke": "#000000", "width": 5.0}
    assert objects[old]["style"]["fill"] == "none"


@pytest.mark.parametrize("arguments", [{}, {"width": -1}, {"stroke": "blue"}, {"opacity": 1}])
def test_set_defaults_rejects_bad_styles(app: Any, arguments: dict[str, Any]) -> None:
    with pytest.raises(ToolArgumentError):
        app.call("set_defaults", **arguments)


def test_update_selection_style_restyles_the_selection(app: Any) -> None:
    box = app.rect(0, 0, 10, 10)
    line = app.call("insert_line", x1=0, y1=0, x2=5, y2=5)["id"]
    untouched = app.rect(50, 50, 10, 10)
    app.call("select", ids=[box, line])
    result = app.call("update_selection_style", fill="#ff0000", stroke="#0000ff")
    assert result["updated"] == [box, line]
    assert result["fill_skipped"] == [line]
    objects = app.objects()
    assert objects[box]["style"] == {"fill": "#ff0000", "stroke": "#0000ff", "width": 2.0}
    assert objects[line]["style"] == {"stroke": "#0000ff", "width": 2.0}
    assert objects[untouched]["style"]["fill"] == "none"


def test_update_selection_style_refusals(app: Any) -> None:
    assert "nothing is selected to restyle" in app.refused("update_selection_style", fill="#000000")
    line = app.call("insert_line", x1=0, y1=0, x2=5, y2=5)["id"]
    app.call("select", ids=[line])
    assert "have no fill" in app.refused("update_selection_style", fill="#000000")
    with pytest.raises(ToolArgumentError):
        app.call("update_selection_style")


def test_sample_color_reads_the_topmost_paint(app: Any) -> None:
    app.rect(0, 0, 100, 100, style={"fill": "#ff0000", "stroke": "#000000", "width": 4})
    app.call("add_layer")
    top = app.call(
        "insert_shape",
        shape="ellipse",
        x=40,
        y=40,
        width=20,
        height=20,
        style={"fill": "#00ff00", "stroke": "none"},
    )["id"]
    assert app.call("sample_color", x=50, y=50) == {
        "color": "#00ff00",
        "part": "fill",
        "object_id": top,
        "layer": "layer-2",
    }
    assert app.call("sample_color", x=20, y=20)["color"] == "#ff0000"
    assert app.call("sample_color", x=1, y=50)["part"] == "stroke"
    assert app.call("sample_color", x=300, y=300) == {
        "color": "#ffffff",
        "part": "background",
        "object_id": None,
        "layer": None,
    }
    with pytest.raises(ToolArgumentError, match="'y' is a required property"):
        app.call("sample_color", x=1)


# ------------------------------------------------------------------ history


def test_undo_and_redo_step_through_changes(app: Any) -> None:
    a = app.rect(0, 0, 1, 1)
    app.call("set_tool", tool="rect")
    assert app.call("undo") == {"undone": "set tool rect", "undo_depth": 1, "redo_depth": 1}
    assert app.call("inspect")["tool"] == "select"
    assert app.call("undo")["undone"] == f"insert rect {a} on layer-1"
    assert app.objects() == {}
    assert app.call("redo") == {
        "redone": f"insert rect {a} on layer-1",
        "undo_depth": 1,
        "redo_depth": 1,
    }
    assert list(app.objects()) == [a]


def test_nothing_to_undo_or_redo_is_refused(app: Any) -> None:
    assert "nothing to undo" in app.refused("undo")
    assert "nothing to redo" in app.refused("redo")
    app.rect(0, 0, 1, 1)
    app.call("undo")
    app.call("set_defaults", width=3)
    assert "any new change clears" in app.refused("redo")


def test_a_refused_or_idle_call_records_no_history(app: Any) -> None:
    app.call("set_tool", tool="select")  # already the tool
    app.refused("select", ids=["obj-404"])
    assert app.call("inspect")["undo_depth"] == 0


# ------------------------------------------------------------------ selection


def test_select_by_ids_in_the_order_given(app: Any) -> None:
    a, b = app.rect(0, 0, 1, 1), app.rect(5, 5, 1, 1)
    result = app.call("select", ids=[b, a, b])
    assert result["selection"] == [b, a]
    assert result["bounds"] == {"x": 0.0, "y": 0.0, "width": 6.0, "height": 6.0}
    assert app.call("inspect")["selection"] == [b, a]


def test_select_by_rectangle_intersecting_or_inside(app: Any) -> None:
    inside = app.rect(10, 10, 10, 10)
    crossing = app.rect(25, 10, 10, 10)
    away = app.rect(100, 100, 5, 5)
    area = {"x": 0, "y": 0, "width": 30, "height": 30}
    assert app.call("select", rect=area)["selection"] == [inside, crossing]
    assert app.call("select", rect=area, match="inside")["selection"] == [inside]
    touching = {"x": 105, "y": 105, "width": 0, "height": 0}
    assert app.call("select", rect=touching, extend=True)["selection"] == [inside, away]


def test_select_by_rectangle_on_one_layer(app: Any) -> None:
    below = app.rect(0, 0, 10, 10)
    app.call("add_layer", name="Top")
    above = app.rect(0, 0, 10, 10)
    area = {"x": 0, "y": 0, "width": 10, "height": 10}
    assert app.call("select", rect=area)["selection"] == [below, above]
    assert app.call("select", rect=area, layer="Top")["selection"] == [above]


def test_select_refusals(app: Any) -> None:
    a = app.rect(0, 0, 1, 1)
    assert "no object 'obj-99'" in app.refused("select", ids=[a, "obj-99"])
    area = {"x": 0, "y": 0, "width": 1, "height": 1}
    assert "either ids or rect" in app.refused("select", ids=[a], rect=area)
    assert "either ids or rect" in app.refused("select")
    assert "layer only narrows" in app.refused("select", ids=[a], layer="layer-1")
    with pytest.raises(ToolArgumentError, match="ids"):
        app.call("select", ids=[])
    with pytest.raises(ToolArgumentError, match="match"):
        app.call("select", rect=area, match="touching")


def test_clear_selection(app: Any) -> None:
    a = app.rect(0, 0, 1, 1)
    app.call("select", ids=[a])
    assert app.call("clear_selection") == {"selection": [], "cleared": [a]}
    assert app.call("inspect")["selection"] == []


# ------------------------------------------------------------------ transforms


def test_translate_moves_the_selection(app: Any) -> None:
    a = app.rect(0, 0, 10, 10)
    s = app.call("insert_stroke", points=[[0, 0], [4, 4]])["id"]
    other = app.rect(50, 50, 1, 1)
    app.call("select", ids=[a, s])
    result = app.call("transform_selection", dx=5, dy=-2)
    assert result["bounds"] == {"x": 5.0, "y": -2.0, "width": 10.0, "height": 10.0}
    objects = app.objects()
    assert (objects[a]["x"], objects[a]["y"]) == (5.0, -2.0)
    assert objects[s]["points"] == [[5.0, -2.0], [9.0, 2.0]]
    assert (objects[other]["x"], objects[other]["y"]) == (50.0, 50.0)


def test_scale_about_the_selection_centre_by_default(app: Any) -> None:
    a = app.rect(10, 10, 20, 10)
    app.call("select", ids=[a])
    result = app.call("transform_selection", sx=2, sy=3)
    assert result["origin"] == {"x": 20.0, "y": 15.0}
    assert result["bounds"] == {"x": 0.0, "y": 0.0, "width": 40.0, "height": 30.0}


def test_rotate_about_a_given_origin(app: Any) -> None:
    line = app.call("insert_line", x1=10, y1=0, x2=20, y2=0)["id"]
    app.call("select", ids=[line])
    app.call("transform_selection", degrees=90, origin={"x": 0, "y": 0})
    # Clockwise on screen (y down): +x turns into +y.
    assert app.objects()[line]["points"] == [[0.0, 10.0], [0.0, 20.0]]


def test_transform_refusals(app: Any) -> None:
    assert "nothing is selected to transform" in app.refused("transform_selection", dx=1)
    app.call("select", ids=[app.rect(0, 0, 1, 1)])
    assert "say how to transform" in app.refused("transform_selection")
    assert "changes nothing" in app.refused("transform_selection", dx=0, degrees=360)
    assert "must not be 0" in app.refused("transform_selection", sx=0)
    with pytest.raises(ToolArgumentError, match="origin"):
        app.call("transform_selection", dx=1, origin={"x": 1})


# ------------------------------------------------------------------ deleting


def test_delete_selected_removes_the_selected_objects(app: Any) -> None:
    a, b, c = app.rect(0, 0, 1, 1), app.rect(2, 2, 1, 1), app.rect(4, 4, 1, 1)
    app.call("select", ids=[a, c])
    assert app.call("delete_selected") == {"deleted": [a, c], "count": 2}
    doc = app.call("inspect")
    assert list(app.objects()) == [b]
    assert doc["selection"] == []
    app.call("undo")
    assert list(app.objects()) == [a, b, c]
    assert app.call("inspect")["selection"] == [a, c]


def test_delete_selected_refuses_an_empty_selection(app: Any) -> None:
    app.rect(0, 0, 1, 1)
    message = app.refused("delete_selected")
    assert "nothing is selected to delete" in message and "space_drawing_select" in message


# ------------------------------------------------------------------ every tool


def test_every_tool_rejects_an_unknown_argument_and_changes_nothing(app: Any) -> None:
    a = app.rect(0, 0, 1, 1)
    app.call("select", ids=[a])
    tools = app.tools()
    assert len(tools) == 19
    for name, tool in tools.items():
        before = app.call("inspect")
        with pytest.raises(ToolArgumentError, match="'colour' was unexpected"):
            tool.run({"colour": "#000000"})
        assert app.call("inspect") == before, name


def test_concurrent_calls_do_not_interleave(app: Any) -> None:
    # Switch threads as often as possible, so unguarded check-then-change code would interleave.
    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [
            threading.Thread(target=lambda row=row: [app.rect(c, row, 1, 1) for c in range(12)])
            for row in range(6)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(old_interval)
    objects = app.objects()
    assert sorted(int(i.removeprefix("obj-")) for i in objects) == list(range(1, 73))
    saved = app.saved_drawing().inspect()
    assert len(saved["layers"][0]["objects"]) == 72
    # Each undo step takes back exactly one insert: no step swallowed another.
    for remaining in range(71, -1, -1):
        app.call("undo")
        assert len(app.objects()) == remaining
