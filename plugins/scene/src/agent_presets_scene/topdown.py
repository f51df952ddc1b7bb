"""The scene seen from above, as SVG, for the browser console.

x runs right and z runs down; the terrain is shaded by height (darker is
lower), objects are their footprints in their colour, lights are small
yellow dots. The frame fits everything, with a margin.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import Protocol

from agent_presets import svg_safe
from agent_presets_scene.terrain import Heightfield
from agent_presets_scene.vectors import Vec3


class Cuboid(Protocol):
    """What the picture reads of a box (``model.Cuboid`` is one): a protocol, so the
    picture needs nothing of the model and the model may draw itself with it."""

    @property
    def name(self) -> str: ...

    @property
    def position(self) -> Vec3: ...

    @property
    def size(self) -> Vec3: ...

    @property
    def color(self) -> str: ...


class Light(Protocol):
    """What the picture reads of a light (``model.Light`` is one)."""

    @property
    def position(self) -> Vec3 | None: ...

    @property
    def on(self) -> bool: ...


SIZE = 400.0
MARGIN = 1.0


def top_down_svg(
    terrain: Heightfield | None, objects: Sequence[Cuboid], lights: Sequence[Light]
) -> str:
    xs: list[float] = []
    zs: list[float] = []
    if terrain is not None:
        low, high = terrain.bounds()
        xs += [low[0], high[0]]
        zs += [low[2], high[2]]
    for obj in objects:
        x, _, z = obj.position
        w, _, d = obj.size
        xs += [x - w / 2, x + w / 2]
        zs += [z - d / 2, z + d / 2]
    for light in lights:
        if light.position is not None:
            xs.append(light.position[0])
            zs.append(light.position[2])
    if not xs:
        xs, zs = [-5.0, 5.0], [-5.0, 5.0]
    x0, z0 = min(xs) - MARGIN, min(zs) - MARGIN
    span = max(max(xs) + MARGIN - x0, max(zs) + MARGIN - z0)
    scale = SIZE / span

    def at(x: float, z: float) -> tuple[str, str]:
        return f"{(x - x0) * scale:.1f}", f"{(z - z0) * scale:.1f}"

    root = ET.Element(
        "svg",
        {
            "xmlns": "http://www.w3.org/2000/svg",
            "viewBox": f"0 0 {SIZE:g} {SIZE:g}",
            "width": f"{SIZE:g}",
            "height": f"{SIZE:g}",
            "font-family": "sans-serif",
        },
    )
    ET.SubElement(root, "rect", {"width": f"{SIZE:g}", "height": f"{SIZE:g}", "fill": "#eef1f6"})
    if terrain is not None:
        flat = [h for row in terrain.heights for h in row]
        low_h, high_h = min(flat), max(flat)
        cell = terrain.cell_size * scale
        ox, _, oz = terrain.origin
        for r, row in enumerate(terrain.heights):
            for c, h in enumerate(row):
                shade = 0.5 if high_h == low_h else (h - low_h) / (high_h - low_h)
                green = int(90 + 120 * shade)
                px, py = at(ox + (c - 0.5) * terrain.cell_size, oz + (r - 0.5) * terrain.cell_size)
                ET.SubElement(
                    root,
                    "rect",
                    {
                        "x": px,
                        "y": py,
                        "width": f"{cell + 0.5:.1f}",
                        "height": f"{cell + 0.5:.1f}",
                        "fill": f"rgb({int(green * 0.55)},{green},{int(green * 0.45)})",
                    },
                )
    for obj in objects:
        x, _, z = obj.position
        w, _, d = obj.size
        left, top = at(x - w / 2, z - d / 2)
        ET.SubElement(
            root,
            "rect",
            {
                "x": left,
                "y": top,
                "width": f"{w * scale:.1f}",
                "height": f"{d * scale:.1f}",
                "fill": obj.color,
                "stroke": "#1d2330",
                "stroke-width": "1",
            },
        )
        cx, cy = at(x, z)
        label = ET.SubElement(
            root, "text", {"x": cx, "y": cy, "text-anchor": "middle", "font-size": "14"}
        )
        label.text = obj.name[:20]
    for light in lights:
        if light.position is None:
            continue
        cx, cy = at(light.position[0], light.position[2])
        ET.SubElement(
            root,
            "circle",
            {
                "cx": cx,
                "cy": cy,
                "r": "5",
                "fill": "#f5c518" if light.on else "#999999",
                "stroke": "#1d2330",
            },
        )
    if terrain is None and not objects and not lights:
        empty = ET.SubElement(
            root, "text", {"x": f"{SIZE / 2:g}", "y": f"{SIZE / 2:g}", "text-anchor": "middle"}
        )
        empty.set("fill", "#687083")
        empty.text = "nothing in the scene yet"
    return svg_safe(ET.tostring(root, encoding="unicode"))
