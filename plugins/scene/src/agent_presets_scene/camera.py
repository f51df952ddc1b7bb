"""A perspective camera (y up) and the ray through a point of the screen.

Screen coordinates run from the top-left corner: x to the right over
``[0, width]``, y downwards over ``[0, height]``; the centre of pixel
``(px, py)`` is ``(px + 0.5, py + 0.5)``. ``fov`` is the vertical field of
view in degrees. Looking straight up or down, "up" on the screen is -z
(looking down) or +z (looking up), as no other choice is better.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from agent_presets_scene.errors import SceneError
from agent_presets_scene.vectors import (
    Vec3,
    add,
    cross,
    length,
    normalize,
    scale,
    sub,
    vec3,
)

WORLD_UP: Final[Vec3] = (0.0, 1.0, 0.0)


@dataclass(frozen=True)
class Camera:
    position: Vec3 = (0.0, 5.0, 10.0)
    target: Vec3 = (0.0, 0.0, 0.0)
    fov: float = 60.0

    def __post_init__(self) -> None:
        position, target = vec3(self.position, "position"), vec3(self.target, "target")
        if length(sub(target, position)) < 1e-9:
            raise SceneError(
                "the camera position and target must differ; move the target to the point "
                "the camera should look at"
            )
        fov = self.fov
        if not isinstance(fov, int | float) or isinstance(fov, bool) or not 0 < fov < 180:
            raise SceneError(f"fov must be between 0 and 180 degrees (exclusive), not {fov!r}")
        object.__setattr__(self, "position", position)
        object.__setattr__(self, "target", target)
        object.__setattr__(self, "fov", float(fov))

    def basis(self) -> tuple[Vec3, Vec3, Vec3]:
        """(forward, right, up), orthonormal, right-handed."""
        forward = normalize(sub(self.target, self.position), "view direction")
        reference = WORLD_UP
        if length(cross(forward, WORLD_UP)) < 1e-9:
            reference = (0.0, 0.0, -1.0) if forward[1] < 0 else (0.0, 0.0, 1.0)
        right = normalize(cross(forward, reference))
        return forward, right, cross(right, forward)

    def screen_ray(self, x: float, y: float, width: int, height: int) -> tuple[Vec3, Vec3]:
        """(origin, unit direction) of the ray from the camera through screen point (x, y)."""
        if width < 1 or height < 1:
            raise SceneError(f"the screen size must be at least 1x1, not {width}x{height}")
        if not (0 <= x <= width and 0 <= y <= height):
            raise SceneError(
                f"the point ({x}, {y}) lies outside the {width}x{height} screen; x must be in "
                f"[0, {width}] and y in [0, {height}], measured from the top-left corner"
            )
        forward, right, up = self.basis()
        half = math.tan(math.radians(self.fov) / 2)
        ndc_x = 2 * x / width - 1
        ndc_y = 1 - 2 * y / height
        direction = add(
            forward,
            add(scale(right, ndc_x * half * width / height), scale(up, ndc_y * half)),
        )
        return self.position, normalize(direction)

    def to_dict(self) -> dict[str, Any]:
        return {"position": list(self.position), "target": list(self.target), "fov": self.fov}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Camera:
        if not isinstance(raw, Mapping):
            raise SceneError("camera must be an object")
        unknown = set(raw) - {"position", "target", "fov"}
        if unknown:
            raise SceneError(f"camera has unknown field(s) {sorted(unknown)}")
        missing = {"position", "target", "fov"} - set(raw)
        if missing:
            raise SceneError(f"camera lacks {', '.join(sorted(missing))}")
        return cls(raw["position"], raw["target"], raw["fov"])
