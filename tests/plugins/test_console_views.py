"""Each world runtime's ``console_view()``: one SVG the browser console shows as an image."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from agent_presets_drawing.document import Drawing
from agent_presets_graph.model import Graph
from agent_presets_scene.model import Scene
from agent_presets_scene.terrain import Heightfield

SVG = "{http://www.w3.org/2000/svg}"


def _svg(view: dict[str, object]) -> ET.Element:
    assert view["kind"] == "svg"
    root = ET.fromstring(str(view["svg"]))
    assert root.tag == f"{SVG}svg"
    return root


def test_drawing_view_is_its_svg_rendering() -> None:
    drawing = Drawing()
    drawing.insert_shape("rect", 10, 20, 30, 40)
    root = _svg(drawing.console_view())
    assert root.findall(f".//{SVG}rect")
    assert drawing.console_view()["svg"] == drawing.to_svg()


def test_graph_view_is_a_node_link_picture() -> None:
    graph = Graph()
    a, b = graph.add_node("Ada"), graph.add_node("<Babbage & co>")
    graph.add_edge(a.id, b.id)
    root = _svg(graph.console_view())
    assert len(root.findall(f"{SVG}circle")) == 2
    assert len(root.findall(f"{SVG}line")) == 1
    # Labels are text, escaped: a label cannot add markup.
    assert [t.text for t in root.findall(f"{SVG}text")] == ["Ada", "<Babbage & co>"]


def test_empty_graph_and_scene_say_so() -> None:
    assert "no nodes yet" in str(Graph().console_view()["svg"])
    assert "nothing in the scene yet" in str(Scene().console_view()["svg"])


def test_scene_view_is_a_top_down_picture_of_terrain_and_objects() -> None:
    scene = Scene()
    scene.add_terrain(Heightfield(((0.0, 1.0), (2.0, 3.0))))
    scene.add_cuboid((0.5, 0.0, 0.5), (0.5, 1.0, 0.5), name="shed", color="#c0392b")
    root = _svg(scene.console_view())
    fills = [r.get("fill") for r in root.findall(f"{SVG}rect")]
    assert "#c0392b" in fills
    assert sum(1 for f in fills if f and f.startswith("rgb(")) == 4  # one per terrain sample
    assert "shed" in [t.text for t in root.findall(f"{SVG}text")]


# Every character XML 1.0 forbids (C0 controls but tab and newlines, lone surrogates,
# U+FFFE/U+FFFF), and C1 controls, which it allows but no picture should show.
HOSTILE = "a\x01b\x1b[31m\x00\x08\x0b\x0c\x0e\x1f\x7f\x85\x9f\ud800\udfff\ufffe\uffffz"


def _texts(root: ET.Element) -> list[str]:
    return [t.text or "" for t in root.iter() if t.tag in (f"{SVG}text", f"{SVG}title")]


def _clean(text: str) -> bool:
    return not any(
        ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F or 0xD800 <= ord(c) < 0xE000 for c in text
    )


def test_views_of_names_with_control_characters_stay_well_formed_xml() -> None:
    drawing = Drawing()
    layer = drawing.add_layer(HOSTILE)
    drawing.insert_shape("rect", 0, 0, 10, 10, layer=layer["layer"]["id"])
    graph = Graph()
    graph.add_edge(graph.add_node(HOSTILE).id, graph.add_node("plain").id)
    scene = Scene()
    scene.add_cuboid((0.0, 0.0, 0.0), (1.0, 1.0, 1.0), name=HOSTILE)
    scene.add_light("point", position=(1.0, 2.0, 1.0), name="lamp\x1b]0;x\x07")
    for view in (drawing.console_view(), graph.console_view(), scene.console_view()):
        root = _svg(view)  # parses: every character is one XML allows
        names = [t for t in _texts(root) if t.startswith("a")]
        assert names and all(map(_clean, names)), names
    assert _svg({"kind": "svg", "svg": drawing.to_svg()}) is not None  # what inspect returns
