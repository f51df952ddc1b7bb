"""Plane geometry for drawing objects: bounds, hit-testing and affine transforms.

Coordinates follow SVG: x grows to the right, y grows downwards, so a positive
rotation turns clockwise on screen. Rectangles and ellipses are boxes
(``x, y, width, height``) turned by ``rotation`` degrees about their own
centre; polygons, lines and strokes are lists of points.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

Point = tuple[float, float]
Matrix = tuple[float, float, float, float, float, float]
"""An affine map in SVG order: ``x' = a x + c y + e``, ``y' = b x + d y + f``."""

IDENTITY: Matrix = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)
PRECISION = 6
"""Stored coordinates are rounded to this many decimals so repeated transforms stay readable."""


@dataclass(frozen=True)
class Box:
    """An axis-aligned bounding box."""

    x: float
    y: float
    width: float
    height: float

    @property
    def right(self) -> float:
        return self.x + self.width

    @property
    def bottom(self) -> float:
        return self.y + self.height

    @property
    def centre(self) -> Point:
        return (self.x + self.width / 2, self.y + self.height / 2)

    def intersects(self, other: Box) -> bool:
        """True when the boxes share at least one point (touching edges count)."""
        return (
            self.x <= other.right
            and other.x <= self.right
            and self.y <= other.bottom
            and other.y <= self.bottom
        )

    def contains(self, other: Box) -> bool:
        return (
            self.x <= other.x
            and self.y <= other.y
            and other.right <= self.right
            and other.bottom <= self.bottom
        )

    def to_dict(self) -> dict[str, float]:
        return {
            "x": tidy(self.x),
            "y": tidy(self.y),
            "width": tidy(self.width),
            "height": tidy(self.height),
        }

    @staticmethod
    def around(points: Sequence[Point]) -> Box:
        xs = [p[0] for p in points]
        ys = [p[1] for p in points]
        return Box(min(xs), min(ys), max(xs) - min(xs), max(ys) - min(ys))

    @staticmethod
    def union(boxes: Sequence[Box]) -> Box:
        x = min(b.x for b in boxes)
        y = min(b.y for b in boxes)
        return Box(x, y, max(b.right for b in boxes) - x, max(b.bottom for b in boxes) - y)


def tidy(value: float) -> float:
    """Round to the stored precision; turn -0.0 into 0.0 and whole floats stay floats."""
    rounded = round(float(value), PRECISION)
    return 0.0 if rounded == 0 else rounded


# ------------------------------------------------------------------ matrices


def multiply(m: Matrix, n: Matrix) -> Matrix:
    """``m`` after ``n``: applying the result equals applying ``n`` then ``m``."""
    a, b, c, d, e, f = m
    a2, b2, c2, d2, e2, f2 = n
    return (
        a * a2 + c * b2,
        b * a2 + d * b2,
        a * c2 + c * d2,
        b * c2 + d * d2,
        a * e2 + c * f2 + e,
        b * e2 + d * f2 + f,
    )


def translation(dx: float, dy: float) -> Matrix:
    return (1.0, 0.0, 0.0, 1.0, dx, dy)


def scaling(sx: float, sy: float, origin: Point) -> Matrix:
    ox, oy = origin
    return (sx, 0.0, 0.0, sy, ox - sx * ox, oy - sy * oy)


def rotation(degrees: float, origin: Point) -> Matrix:
    t = math.radians(degrees)
    cos, sin = math.cos(t), math.sin(t)
    ox, oy = origin
    return (cos, sin, -sin, cos, ox - cos * ox + sin * oy, oy - sin * ox - cos * oy)


def apply(m: Matrix, p: Point) -> Point:
    a, b, c, d, e, f = m
    x, y = p
    return (a * x + c * y + e, b * x + d * y + f)


# ------------------------------------------------------------- object shapes


def points_of(obj: dict[str, Any]) -> list[Point]:
    return [(float(x), float(y)) for x, y in obj["points"]]


def box_frame(obj: dict[str, Any]) -> tuple[Point, float, float, float]:
    """Centre, half width, half height and rotation (radians) of a rect or ellipse."""
    hw, hh = obj["width"] / 2, obj["height"] / 2
    centre = (obj["x"] + hw, obj["y"] + hh)
    return centre, hw, hh, math.radians(obj.get("rotation", 0.0))


def to_local(obj: dict[str, Any], p: Point) -> Point:
    """``p`` relative to a box shape's centre, with the shape's rotation undone."""
    (cx, cy), _, _, t = box_frame(obj)
    dx, dy = p[0] - cx, p[1] - cy
    cos, sin = math.cos(t), math.sin(t)
    return (dx * cos + dy * sin, -dx * sin + dy * cos)


def rect_corners(obj: dict[str, Any]) -> list[Point]:
    (cx, cy), hw, hh, t = box_frame(obj)
    cos, sin = math.cos(t), math.sin(t)
    corners = [(-hw, -hh), (hw, -hh), (hw, hh), (-hw, hh)]
    return [(cx + x * cos - y * sin, cy + x * sin + y * cos) for x, y in corners]


def bounds(obj: dict[str, Any]) -> Box:
    """The object's geometric bounding box (stroke width not included)."""
    kind = obj["kind"]
    if kind == "rect":
        return Box.around(rect_corners(obj))
    if kind == "ellipse":
        (cx, cy), a, b, t = box_frame(obj)
        cos, sin = math.cos(t), math.sin(t)
        ex = math.hypot(a * cos, b * sin)
        ey = math.hypot(a * sin, b * cos)
        return Box(cx - ex, cy - ey, 2 * ex, 2 * ey)
    return Box.around(points_of(obj))


# ---------------------------------------------------------------- hit-testing


def distance_to_segment(p: Point, a: Point, b: Point) -> float:
    ax, ay = a
    bx, by = b
    px, py = p
    vx, vy = bx - ax, by - ay
    length2 = vx * vx + vy * vy
    if length2 == 0:
        return math.hypot(px - ax, py - ay)
    t = max(0.0, min(1.0, ((px - ax) * vx + (py - ay) * vy) / length2))
    return math.hypot(px - (ax + t * vx), py - (ay + t * vy))


def distance_to_polyline(p: Point, points: Sequence[Point], closed: bool = False) -> float:
    if len(points) == 1:
        return math.hypot(p[0] - points[0][0], p[1] - points[0][1])
    pairs = list(itertools.pairwise(points))
    if closed:
        pairs.append((points[-1], points[0]))
    return min(distance_to_segment(p, a, b) for a, b in pairs)


def point_in_polygon(p: Point, points: Sequence[Point]) -> bool:
    """Even-odd rule (SVG's ``fill-rule: evenodd``), by ray casting."""
    x, y = p
    inside = False
    n = len(points)
    for i in range(n):
        x1, y1 = points[i]
        x2, y2 = points[(i + 1) % n]
        if (y1 > y) != (y2 > y):
            cross_x = x1 + (y - y1) * (x2 - x1) / (y2 - y1)
            if x < cross_x:
                inside = not inside
    return inside


def point_in_ellipse(local: Point, a: float, b: float) -> bool:
    # hypot, not squares: a far point (x near 1e308) overflows ``**`` but not hypot.
    return math.hypot(local[0] / a, local[1] / b) <= 1.0


def distance_to_ellipse(local: Point, a: float, b: float) -> float:
    """Distance from ``local`` (ellipse-centred, unrotated) to the ellipse outline.

    Finds the closest outline point by bisection on the standard root
    function (Eberly, "Distance from a Point to an Ellipse"), working in the
    first quadrant by symmetry.
    """
    x, y = abs(local[0]), abs(local[1])
    if a < b:  # the method wants the major axis first
        a, b, x, y = b, a, y, x
    # Components this close to an axis would send the bisection to a division by
    # zero; treating them as on the axis moves the answer by far less than that.
    tiny = 1e-9 * a
    x = 0.0 if x < tiny else x
    y = 0.0 if y < tiny else y
    if y > 0:
        if x > 0:
            z0, z1 = x / a, y / b
            g = z0 * z0 + z1 * z1 - 1
            if g == 0:
                return 0.0
            r0 = (a / b) ** 2
            n0 = r0 * z0
            s0, s1 = z1 - 1, (math.hypot(n0, z1) - 1 if g > 0 else 0.0)
            s = 0.0
            for _ in range(200):
                s = (s0 + s1) / 2
                if s in (s0, s1):
                    break
                ratio0, ratio1 = n0 / (s + r0), z1 / (s + 1)
                value = ratio0 * ratio0 + ratio1 * ratio1 - 1
                if value > 0:
                    s0 = s
                elif value < 0:
                    s1 = s
                else:
                    break
            cx = r0 * x / (s + r0)
            cy = y / (s + 1)
            return math.hypot(x - cx, y - cy)
        return abs(y - b)
    # On the major axis.
    numer, denom = a * x, a * a - b * b
    if numer < denom:
        xde = numer / denom
        cx = a * xde
        cy = b * math.sqrt(max(0.0, 1 - xde * xde))
        return math.hypot(x - cx, cy)
    return abs(x - a)


def hit(obj: dict[str, Any], p: Point) -> str | None:
    """Which painted part of ``obj`` covers ``p``: ``"stroke"``, ``"fill"`` or None.

    The stroke is painted over the fill, centred on the outline, so a point
    within ``width / 2`` of the outline shows the stroke colour. Parts painted
    ``none`` (or a zero width) are transparent and let lower objects show.
    """
    style = obj["style"]
    half = style.get("width", 0) / 2
    has_stroke = style.get("stroke", "none") != "none" and half > 0
    has_fill = style.get("fill", "none") != "none"
    kind = obj["kind"]
    if kind in ("line", "stroke"):
        if has_stroke and distance_to_polyline(p, points_of(obj)) <= half:
            return "stroke"
        return None
    if kind == "rect":
        local = to_local(obj, p)
        hw, hh = obj["width"] / 2, obj["height"] / 2
        inside = abs(local[0]) <= hw and abs(local[1]) <= hh
        if has_stroke:
            if inside:
                edge = min(hw - abs(local[0]), hh - abs(local[1]))
            else:
                edge = math.hypot(max(abs(local[0]) - hw, 0.0), max(abs(local[1]) - hh, 0.0))
            if edge <= half:
                return "stroke"
        return "fill" if inside and has_fill else None
    if kind == "ellipse":
        local = to_local(obj, p)
        a, b = obj["width"] / 2, obj["height"] / 2
        if has_stroke and distance_to_ellipse(local, a, b) <= half:
            return "stroke"
        return "fill" if has_fill and point_in_ellipse(local, a, b) else None
    if kind == "polygon":
        points = points_of(obj)
        if has_stroke and distance_to_polyline(p, points, closed=True) <= half:
            return "stroke"
        return "fill" if has_fill and point_in_polygon(p, points) else None
    raise ValueError(f"unknown object kind {kind!r}")


# ------------------------------------------------------------------ transforms


def transform_object(obj: dict[str, Any], m: Matrix) -> dict[str, Any]:
    """A copy of ``obj`` with the affine map ``m`` applied to its geometry.

    Point lists map exactly. A box shape keeps its kind while the result is
    still a (turned) box: any map keeps an ellipse an ellipse, and a rectangle
    stays one unless an uneven scale skews a turned rectangle, when it becomes
    the four-point polygon it now is. Stroke widths are not scaled.
    """
    out = dict(obj)
    if obj["kind"] in ("polygon", "line", "stroke"):
        out["points"] = [[tidy(x), tidy(y)] for x, y in (apply(m, p) for p in points_of(obj))]
        return out
    centre, hw, hh, t = box_frame(obj)
    cos, sin = math.cos(t), math.sin(t)
    a, b, c, d, _, _ = m
    # Columns of the linear part that maps the unit square/circle onto the new shape.
    u = (a * cos * hw + c * sin * hw, b * cos * hw + d * sin * hw)
    v = (-a * sin * hh + c * cos * hh, -b * sin * hh + d * cos * hh)
    cx, cy = apply(m, centre)
    if obj["kind"] == "ellipse":
        angle, rx, ry = _ellipse_axes(u, v)
    else:
        if abs(u[0] * v[0] + u[1] * v[1]) > 1e-9 * max(1.0, math.hypot(*u) * math.hypot(*v)):
            out = {
                k: val
                for k, val in obj.items()
                if k not in ("x", "y", "width", "height", "rotation")
            }
            out["kind"] = "polygon"
            out["points"] = [
                [tidy(x), tidy(y)] for x, y in (apply(m, p) for p in rect_corners(obj))
            ]
            return out
        angle, rx, ry = math.atan2(u[1], u[0]), math.hypot(*u), math.hypot(*v)
    out.update(
        x=tidy(cx - rx),
        y=tidy(cy - ry),
        width=tidy(2 * rx),
        height=tidy(2 * ry),
        rotation=normalise_degrees(math.degrees(angle)),
    )
    return out


def _ellipse_axes(u: Point, v: Point) -> tuple[float, float, float]:
    """Angle (radians) and semi-axes of the ellipse ``{cos(s) u + sin(s) v}``.

    These are the singular values of the matrix ``[u v]``; the angle is the
    direction of the first left singular vector.
    """
    # M M^T = [[p, q], [q, r]]
    p = u[0] * u[0] + v[0] * v[0]
    q = u[0] * u[1] + v[0] * v[1]
    r = u[1] * u[1] + v[1] * v[1]
    mean = (p + r) / 2
    spread = math.hypot((p - r) / 2, q)
    major = math.sqrt(max(mean + spread, 0.0))
    minor = math.sqrt(max(mean - spread, 0.0))
    # A circle has no axis direction; float noise must not give it a random turn.
    angle = 0.0 if spread <= 1e-12 * mean else 0.5 * math.atan2(2 * q, p - r)
    return angle, major, minor


def normalise_degrees(degrees: float) -> float:
    """Degrees in ``[0, 360)``, rounded to the stored precision."""
    value = tidy(degrees % 360.0)
    return 0.0 if value >= 360.0 else value
