"""Hit-testing and transforms against geometry worked out by hand."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lanes import examples

from agent_presets_drawing import geometry

RED, GREEN, BLUE, BLACK, WHITE = "#ff0000", "#00ff00", "#0000ff", "#000000", "#ffffff"


def sample(app: Any, x: float, y: float) -> tuple[str, str]:
    result = app.call("sample_color", x=x, y=y)
    return result["part"], result["color"]


# ------------------------------------------------------ sample_color, by shape


@pytest.mark.parametrize(
    ("x", "y", "expected"),
    [
        (50, 25, ("fill", RED)),
        (6, 25, ("fill", RED)),  # 6 from the left edge: past the 5-wide half stroke
        (5, 25, ("stroke", BLACK)),  # exactly width/2 inside the edge
        (-4, 25, ("stroke", BLACK)),  # the stroke also paints outside the edge
        (-6, 25, ("background", WHITE)),
        (-3, -3, ("stroke", BLACK)),  # 4.24 from the corner
        (-4, -4, ("background", WHITE)),  # 5.66 from the corner: rounded away
    ],
)
def test_rect_fill_and_stroke_band(app: Any, x: float, y: float, expected: tuple) -> None:
    app.rect(0, 0, 100, 50, style={"fill": RED, "stroke": BLACK, "width": 10})
    assert sample(app, x, y) == expected


def test_rotated_rect_is_hit_where_it_now_lies(app: Any) -> None:
    # 100 x 20 about centre (50, 10), turned upright: x 40..60, y -40..60.
    app.rect(0, 0, 100, 20, rotation=90, style={"fill": RED, "stroke": "none"})
    assert sample(app, 50, -30) == ("fill", RED)
    assert sample(app, 59, 55) == ("fill", RED)
    assert sample(app, 80, 10) == ("background", WHITE)  # inside the unturned rect only
    assert sample(app, 61, 10) == ("background", WHITE)


@pytest.mark.parametrize(
    ("x", "y", "expected"),
    [
        (50, 50, ("fill", RED)),
        (50, 69, ("fill", RED)),
        (89, 50, ("fill", RED)),
        (50, 71, ("background", WHITE)),
        (91, 50, ("background", WHITE)),
        (80, 35, ("background", WHITE)),  # inside the bounding box, outside the ellipse
        (78, 36, ("fill", RED)),  # (28/40)^2 + (14/20)^2 = 0.98
    ],
)
def test_point_in_ellipse(app: Any, x: float, y: float, expected: tuple) -> None:
    app.call(
        "insert_shape",
        shape="ellipse",
        x=10,
        y=30,
        width=80,
        height=40,
        style={"fill": RED, "stroke": "none"},
    )
    assert sample(app, x, y) == expected


@pytest.mark.parametrize(
    ("x", "y", "part"),
    [
        (50, 72, "stroke"),  # 2 below the bottom of the outline, width 4
        (50, 68, "stroke"),
        (50, 72.5, "background"),
        (50, 67.5, "fill"),
        (92, 50, "stroke"),
        (7.9, 50, "background"),
        (50, 50, "fill"),
    ],
)
def test_ellipse_stroke_band_follows_the_outline(app: Any, x: float, y: float, part: str) -> None:
    app.call(
        "insert_shape",
        shape="ellipse",
        x=10,
        y=30,
        width=80,
        height=40,
        style={"fill": GREEN, "stroke": BLUE, "width": 4},
    )
    assert sample(app, x, y)[0] == part


def test_concave_polygon_leaves_its_notch_empty(app: Any) -> None:
    # A square with a V cut into its bottom edge, down to (50, 50).
    notched = [[0, 0], [100, 0], [100, 100], [50, 50], [0, 100]]
    app.call("insert_shape", shape="polygon", points=notched, style={"fill": RED, "width": 0})
    assert sample(app, 50, 20) == ("fill", RED)
    assert sample(app, 90, 80) == ("fill", RED)
    assert sample(app, 50, 80) == ("background", WHITE)
    assert sample(app, 101, 50) == ("background", WHITE)


def test_self_crossing_polygon_uses_the_even_odd_rule(app: Any) -> None:
    star = [
        [50 + 40 * math.sin(math.radians(144 * i)), 50 - 40 * math.cos(math.radians(144 * i))]
        for i in range(5)
    ]
    app.call("insert_shape", shape="polygon", points=star, style={"fill": RED, "width": 0})
    assert sample(app, 50, 50) == ("background", WHITE)  # the pentagon in the middle
    assert sample(app, 50, 20) == ("fill", RED)  # the top point


@pytest.mark.parametrize(
    ("x", "y", "part"),
    [
        (50, 5, "stroke"),
        (50, 5.1, "background"),
        (104, 0, "stroke"),  # round cap
        (103, 4, "stroke"),  # exactly 5 from the end point
        (104, 4, "background"),
        (-5, 0, "stroke"),
    ],
)
def test_line_is_hit_within_half_its_width(app: Any, x: float, y: float, part: str) -> None:
    app.call("insert_line", x1=0, y1=0, x2=100, y2=0, style={"stroke": BLUE, "width": 10})
    assert sample(app, x, y)[0] == part


def test_freehand_stroke_is_hit_along_every_segment(app: Any) -> None:
    points = [[0, 0], [50, 0], [50, 50], [100, 50]]
    app.call("insert_stroke", points=points, style={"stroke": GREEN, "width": 2})
    assert sample(app, 25, 1) == ("stroke", GREEN)
    assert sample(app, 49, 25) == ("stroke", GREEN)
    assert sample(app, 75, 51) == ("stroke", GREEN)
    assert sample(app, 25, 25) == ("background", WHITE)  # inside the bend: strokes are not filled


def test_topmost_object_wins_and_none_paint_shows_through(app: Any) -> None:
    app.rect(0, 0, 100, 100, style={"fill": RED, "stroke": "none"})
    app.call("add_layer")
    hollow = app.rect(20, 20, 60, 60, style={"fill": "none", "stroke": BLUE, "width": 2})
    app.call("set_active_layer", layer="layer-1")
    app.rect(40, 40, 20, 20, style={"fill": GREEN, "stroke": "none"})  # on top of the red one
    assert sample(app, 50, 50) == ("fill", GREEN)
    assert sample(app, 30, 30) == ("fill", RED)  # through the hollow rect's empty middle
    assert app.call("sample_color", x=20, y=50)["object_id"] == hollow  # the upper layer's stroke


def test_sampled_colour_follows_a_transform(app: Any) -> None:
    a = app.rect(0, 0, 10, 10, style={"fill": RED, "stroke": "none"})
    app.call("select", ids=[a])
    app.call("transform_selection", dx=100)
    assert sample(app, 5, 5) == ("background", WHITE)
    assert sample(app, 105, 5) == ("fill", RED)


# ------------------------------------------------------------------ transforms


def test_uneven_scale_of_a_turned_rect_makes_a_parallelogram(app: Any) -> None:
    a = app.rect(0, 0, 10, 10, rotation=45)
    app.call("select", ids=[a])
    app.call("transform_selection", sx=2)
    obj = app.objects()[a]
    assert obj["kind"] == "polygon"
    assert len(obj["points"]) == 4
    assert obj["bounds"]["width"] == pytest.approx(2 * 10 * math.sqrt(2), abs=1e-5)


def test_quarter_turns_keep_a_rect_a_rect(app: Any) -> None:
    a = app.rect(0, 0, 40, 10)  # centre (20, 5)
    app.call("select", ids=[a])
    app.call("transform_selection", degrees=90)  # now 10 wide, 40 tall
    app.call("transform_selection", sx=3, sy=0.5)  # 30 wide, 20 tall, same centre
    obj = app.objects()[a]
    assert obj["kind"] == "rect"
    assert obj["rotation"] == 90.0
    assert obj["bounds"] == {"x": 5.0, "y": -5.0, "width": 30.0, "height": 20.0}


def test_mirroring_a_polygon_reverses_it_about_the_centre(app: Any) -> None:
    tri = app.call("insert_shape", shape="polygon", points=[[0, 0], [10, 0], [0, 10]])["id"]
    app.call("select", ids=[tri])
    app.call("transform_selection", sx=-1)
    assert app.objects()[tri]["points"] == [[10.0, 0.0], [0.0, 0.0], [10.0, 10.0]]


# -------------------------------------------------------------- properties

sizes = st.floats(min_value=1, max_value=200)
coords = st.floats(min_value=-300, max_value=300)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(a=sizes, b=sizes, x=coords, y=coords)
def test_distance_to_ellipse_matches_dense_sampling(a: float, b: float, x: float, y: float) -> None:
    n = 20000
    sampled = min(
        math.hypot(x - a * math.cos(t), y - b * math.sin(t))
        for t in (2 * math.pi * i / n for i in range(n))
    )
    step = 2 * math.pi * max(a, b) / n
    exact = geometry.distance_to_ellipse((x, y), a, b)
    assert sampled - step <= exact <= sampled + 1e-6


def _box(kind: str, x: float, y: float, w: float, h: float, rot: float) -> dict[str, Any]:
    return {
        "id": "o",
        "kind": kind,
        "x": x,
        "y": y,
        "width": w,
        "height": h,
        "rotation": rot,
        "style": {"fill": RED, "stroke": "none", "width": 0},
    }


ops = st.lists(
    st.one_of(
        st.tuples(st.just("move"), coords, coords),
        st.tuples(
            st.just("scale"),
            st.floats(0.2, 5) | st.floats(-5, -0.2),
            st.floats(0.2, 5) | st.floats(-5, -0.2),
        ),
        st.tuples(st.just("turn"), st.floats(-360, 360), st.just(0.0)),
    ),
    min_size=1,
    max_size=4,
)


@settings(max_examples=examples(300), deadline=None)
@given(
    kind=st.sampled_from(["rect", "ellipse"]),
    box=st.tuples(coords, coords, sizes, sizes, st.floats(0, 360)),
    steps=ops,
    origin=st.tuples(coords, coords),
    probe=st.tuples(st.floats(-1.5, 1.5), st.floats(-1.5, 1.5)),
)
def test_transformed_shapes_cover_exactly_the_mapped_points(
    kind: str,
    box: tuple[float, float, float, float, float],
    steps: list[tuple[str, float, float]],
    origin: tuple[float, float],
    probe: tuple[float, float],
) -> None:
    """A point inside (outside) a shape maps to a point inside (outside) its transform."""
    obj = _box(kind, *box)
    u, v = probe
    radius = max(abs(u), abs(v)) if kind == "rect" else math.hypot(u, v)
    if abs(radius - 1) < 0.05:
        return  # too near the outline to tell after rounding
    (cx, cy), hw, hh, t = geometry.box_frame(obj)
    point = (
        cx + u * hw * math.cos(t) - v * hh * math.sin(t),
        cy + u * hw * math.sin(t) + v * hh * math.cos(t),
    )
    m = geometry.IDENTITY
    for op, p, q in steps:
        if op == "move":
            step = geometry.translation(p, q)
        elif op == "scale":
            step = geometry.scaling(p, q, origin)
        else:
            step = geometry.rotation(p, origin)
        m = geometry.multiply(step, m)
    moved = geometry.transform_object(obj, m)
    expected = "fill" if radius < 1 else None
    assert geometry.hit(obj, point) == expected
    assert geometry.hit(moved, geometry.apply(m, point)) == expected
    assert moved["kind"] in (kind, "polygon")
