"""Render a drawing document as SVG: one ``<g>`` per layer, bottom layer first.

Built with ElementTree so names and text are always escaped into valid XML.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from agent_presets import svg_safe

SVG_NS = "http://www.w3.org/2000/svg"


def _num(value: float) -> str:
    text = f"{float(value):.6f}".rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def _points(points: list[list[float]]) -> str:
    return " ".join(f"{_num(x)},{_num(y)}" for x, y in points)


def _style_attributes(obj: dict[str, Any]) -> dict[str, str]:
    style = obj["style"]
    attrs = {
        "fill": style.get("fill", "none"),
        "stroke": style["stroke"],
        "stroke-width": _num(style["width"]),
    }
    if obj["kind"] in ("line", "stroke"):
        attrs["stroke-linecap"] = "round"
        attrs["stroke-linejoin"] = "round"
    if obj["kind"] == "polygon":
        attrs["fill-rule"] = "evenodd"  # the rule sample_color's hit-testing uses
    return attrs


def _element(obj: dict[str, Any]) -> ET.Element:
    kind = obj["kind"]
    attrs: dict[str, str] = {"id": obj["id"]}
    if kind in ("rect", "ellipse"):
        x, y, w, h = obj["x"], obj["y"], obj["width"], obj["height"]
        if kind == "rect":
            attrs.update(x=_num(x), y=_num(y), width=_num(w), height=_num(h))
        else:
            attrs.update(cx=_num(x + w / 2), cy=_num(y + h / 2), rx=_num(w / 2), ry=_num(h / 2))
        if obj.get("rotation"):
            attrs["transform"] = (
                f"rotate({_num(obj['rotation'])} {_num(x + w / 2)} {_num(y + h / 2)})"
            )
        tag = kind
    elif kind == "polygon":
        attrs["points"] = _points(obj["points"])
        tag = "polygon"
    elif kind == "line":
        (x1, y1), (x2, y2) = obj["points"]
        attrs.update(x1=_num(x1), y1=_num(y1), x2=_num(x2), y2=_num(y2))
        tag = "line"
    elif kind == "stroke":
        attrs["points"] = _points(obj["points"])
        tag = "polyline"
    else:
        raise ValueError(f"unknown object kind {kind!r}")
    attrs.update(_style_attributes(obj))
    return ET.Element(tag, attrs)


def render(doc: dict[str, Any]) -> str:
    """The document as a standalone SVG string."""
    width, height = doc["width"], doc["height"]
    root = ET.Element(
        "svg",
        {
            "xmlns": SVG_NS,
            "width": _num(width),
            "height": _num(height),
            "viewBox": f"0 0 {_num(width)} {_num(height)}",
        },
    )
    ET.SubElement(
        root,
        "rect",
        {
            "id": "background",
            "x": "0",
            "y": "0",
            "width": "100%",
            "height": "100%",
            "fill": doc["background"],
        },
    )
    for layer in doc["layers"]:
        group = ET.SubElement(root, "g", {"id": layer["id"], "data-name": layer["name"]})
        title = ET.SubElement(group, "title")
        title.text = layer["name"]
        for obj in layer["objects"]:
            group.append(_element(obj))
    ET.indent(root)
    return svg_safe(ET.tostring(root, encoding="unicode"))
