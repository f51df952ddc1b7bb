"""Small 3-vector arithmetic on tuples: enough for rays, cameras and triangles."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Final

from agent_presets_scene.errors import SceneError

Vec3 = tuple[float, float, float]

HEX_COLOR_RE: Final = re.compile(r"^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")
HEX_COLOR_PATTERN: Final = HEX_COLOR_RE.pattern


def vec3(value: object, name: str) -> Vec3:
    """``value`` as a vector of three finite numbers, or a ``SceneError`` naming ``name``."""
    if (
        not isinstance(value, Sequence)
        or isinstance(value, str)
        or len(value) != 3
        or not all(_finite(c) for c in value)
    ):
        raise SceneError(f"{name} must be three finite numbers [x, y, z], not {value!r}")
    return (float(value[0]), float(value[1]), float(value[2]))


def _finite(c: object) -> bool:
    return isinstance(c, int | float) and not isinstance(c, bool) and math.isfinite(c)


def add(a: Vec3, b: Vec3) -> Vec3:
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


def sub(a: Vec3, b: Vec3) -> Vec3:
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


def scale(a: Vec3, k: float) -> Vec3:
    return (a[0] * k, a[1] * k, a[2] * k)


def dot(a: Vec3, b: Vec3) -> float:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def cross(a: Vec3, b: Vec3) -> Vec3:
    return (
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    )


def length(a: Vec3) -> float:
    return math.sqrt(dot(a, a))


def normalize(a: Vec3, name: str = "vector") -> Vec3:
    n = length(a)
    if n < 1e-12 or not math.isfinite(n):
        raise SceneError(f"{name} must not be the zero vector")
    return scale(a, 1.0 / n)


def hex_color(value: object, name: str = "color") -> str:
    """A CSS hex color, normalised to lowercase ``#rrggbb``."""
    if not isinstance(value, str) or not HEX_COLOR_RE.match(value):
        raise SceneError(f"{name} must be a hex color like '#ff8800' or '#f80', not {value!r}")
    digits = value[1:].lower()
    if len(digits) == 3:
        digits = "".join(c * 2 for c in digits)
    return "#" + digits


def rounded(a: Vec3, places: int = 9) -> list[float]:
    """A JSON-friendly copy with float noise (1e-17) rounded away."""
    return [round(c, places) + 0.0 for c in a]
