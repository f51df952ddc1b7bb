"""The drawing renders itself as valid SVG, one group per layer."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from agent_presets_drawing import Drawing

NS = "{http://www.w3.org/2000/svg}"


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)  # raises on anything that is not well-formed XML
    assert root.tag == f"{NS}svg"
    return root


def test_an_empty_drawing_is_a_valid_svg_with_one_layer_group() -> None:
    root = parse(Drawing().to_svg())
    assert root.get("viewBox") == "0 0 800 600"
    assert root.find(f"{NS}rect").get("fill") == "#ffffff"  # the background
    groups = root.findall(f"{NS}g")
    assert [(g.get("id"), g.get("data-name")) for g in groups] == [("layer-1", "Layer 1")]


def test_layers_render_as_groups_bottom_first_with_their_objects(app: Any) -> None:
    rect = app.rect(10, 20, 30, 40, rotation=30, style={"fill": "#ff0000"})
    app.call("add_layer", name='Ink <&> "quoted"')
    ellipse = app.call("insert_shape", shape="ellipse", x=0, y=0, width=20, height=10)["id"]
    poly = app.call("insert_shape", shape="polygon", points=[[0, 0], [5, 0], [0, 5]])["id"]
    line = app.call("insert_line", x1=1, y1=2, x2=3, y2=4)["id"]
    stroke = app.call("insert_stroke", points=[[0, 0], [1.5, 2], [3, 0]])["id"]

    root = parse(app.host.drawing.to_svg())
    first, second = root.findall(f"{NS}g")
    assert first.get("id") == "layer-1"
    assert second.get("data-name") == 'Ink <&> "quoted"'
    assert second.find(f"{NS}title").text == 'Ink <&> "quoted"'

    (r,) = first.findall(f"{NS}rect")
    assert (r.get("id"), r.get("x"), r.get("y"), r.get("width"), r.get("height")) == (
        rect,
        "10",
        "20",
        "30",
        "40",
    )
    assert r.get("transform") == "rotate(30 25 40)"
    assert (r.get("fill"), r.get("stroke"), r.get("stroke-width")) == ("#ff0000", "#000000", "2")

    tags = [(el.tag.removeprefix(NS), el.get("id")) for el in second if el.get("id")]
    assert tags == [
        ("ellipse", ellipse),
        ("polygon", poly),
        ("line", line),
        ("polyline", stroke),
    ]
    e = second.find(f"{NS}ellipse")
    assert (e.get("cx"), e.get("cy"), e.get("rx"), e.get("ry")) == ("10", "5", "10", "5")
    assert second.find(f"{NS}polygon").get("points") == "0,0 5,0 0,5"
    assert second.find(f"{NS}polyline").get("points") == "0,0 1.5,2 3,0"
    assert second.find(f"{NS}polyline").get("fill") == "none"
    ln = second.find(f"{NS}line")
    assert [ln.get(k) for k in ("x1", "y1", "x2", "y2")] == ["1", "2", "3", "4"]


def test_svg_follows_undo(app: Any) -> None:
    app.rect(0, 0, 5, 5)
    app.call("undo")
    root = parse(app.call("inspect", include_svg=True)["svg"])
    assert root.find(f"{NS}g/{NS}rect") is None
