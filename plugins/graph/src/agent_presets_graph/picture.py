"""The graph as a node-link SVG picture, for the browser console.

Nodes sit on a circle in their insertion order, so a new node never moves
the old ones far and the picture needs no layout engine.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import Protocol

from agent_presets import svg_safe


class Node(Protocol):
    """What the picture reads of a node (``model.Node`` is one): a protocol, so the
    picture needs nothing of the model and the model may draw itself with it."""

    @property
    def id(self) -> str: ...

    @property
    def label(self) -> str: ...


class Edge(Protocol):
    """What the picture reads of an edge (``model.Edge`` is one)."""

    @property
    def source(self) -> str: ...

    @property
    def target(self) -> str: ...


SIZE = 400
RADIUS = 140
LABEL_CHARS = 18


def node_link_svg(nodes: Sequence[Node], edges: Sequence[Edge], focused: str | None = None) -> str:
    root = ET.Element(
        "svg",
        {
            "xmlns": "http://www.w3.org/2000/svg",
            "viewBox": f"0 0 {SIZE} {SIZE}",
            "width": str(SIZE),
            "height": str(SIZE),
            "font-family": "sans-serif",
        },
    )
    ET.SubElement(root, "rect", {"width": str(SIZE), "height": str(SIZE), "fill": "#ffffff"})
    centre = SIZE / 2
    places: dict[str, tuple[float, float]] = {}
    count = max(len(nodes), 1)
    for i, node in enumerate(nodes):
        angle = 2 * math.pi * i / count - math.pi / 2
        radius = 0 if len(nodes) == 1 else RADIUS
        places[node.id] = (centre + radius * math.cos(angle), centre + radius * math.sin(angle))
    for edge in edges:
        if edge.source not in places or edge.target not in places:
            continue
        (x1, y1), (x2, y2) = places[edge.source], places[edge.target]
        ET.SubElement(
            root,
            "line",
            {
                "x1": f"{x1:.1f}",
                "y1": f"{y1:.1f}",
                "x2": f"{x2:.1f}",
                "y2": f"{y2:.1f}",
                "stroke": "#8792a8",
                "stroke-width": "1.5",
            },
        )
    for node in nodes:
        x, y = places[node.id]
        ET.SubElement(
            root,
            "circle",
            {
                "cx": f"{x:.1f}",
                "cy": f"{y:.1f}",
                "r": "12",
                "fill": "#e8590c" if node.id == focused else "#2f6feb",
            },
        )
        label = (
            node.label if len(node.label) <= LABEL_CHARS else node.label[: LABEL_CHARS - 1] + "…"
        )
        text = ET.SubElement(
            root,
            "text",
            {
                "x": f"{x:.1f}",
                "y": f"{y + 32:.1f}",
                "text-anchor": "middle",
                "font-size": "18",
                "fill": "#1d2330",
            },
        )
        text.text = label
    if not nodes:
        empty = ET.SubElement(
            root,
            "text",
            {"x": str(centre), "y": str(centre), "text-anchor": "middle", "fill": "#687083"},
        )
        empty.text = "no nodes yet"
    return svg_safe(ET.tostring(root, encoding="unicode"))
