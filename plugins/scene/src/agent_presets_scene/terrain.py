"""A heightmap terrain and an exact ray cast against it.

The grid has ``rows`` x ``cols`` height samples; ``heights[r][c]`` sits at
world ``(origin.x + c * cell_size, origin.y + heights[r][c], origin.z + r *
cell_size)``: columns run along +x, rows along +z, heights along +y. Each
grid cell is two triangles split along its (c, r) -> (c+1, r+1) diagonal, so
the surface is continuous and a plane is represented exactly.

The terrain is solid below its surface: a ray that starts under the surface
(inside the footprint) hits at distance 0 with ``inside: True``, and a ray
that reaches the footprint's edge under the surface hits that side wall
(with a horizontal normal).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from agent_presets_scene.errors import SceneError
from agent_presets_scene.terms import MAX_SAMPLES as MAX_SAMPLES
from agent_presets_scene.terms import MIN_SAMPLES as MIN_SAMPLES
from agent_presets_scene.vectors import Vec3, add, cross, dot, normalize, rounded, scale, sub, vec3

EPS: Final = 1e-9


@dataclass(frozen=True)
class RayHit:
    point: Vec3
    distance: float
    normal: Vec3
    cell: tuple[int, int]
    inside: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "hit": True,
            "point": rounded(self.point),
            "distance": round(self.distance, 9) + 0.0,
            "normal": rounded(self.normal),
            "cell": {"col": self.cell[0], "row": self.cell[1]},
            "inside": self.inside,
        }


@dataclass(frozen=True)
class Heightfield:
    heights: tuple[tuple[float, ...], ...]
    cell_size: float = 1.0
    origin: Vec3 = (0.0, 0.0, 0.0)
    seed: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.cell_size, int | float) or not (
            math.isfinite(self.cell_size) and self.cell_size > 0
        ):
            raise SceneError(f"cell_size must be a positive number, not {self.cell_size!r}")
        object.__setattr__(self, "heights", _grid(self.heights))
        object.__setattr__(self, "origin", vec3(self.origin, "origin"))
        object.__setattr__(self, "cell_size", float(self.cell_size))

    @classmethod
    def generate(
        cls,
        seed: int,
        rows: int = 33,
        cols: int = 33,
        amplitude: float = 4.0,
        cell_size: float = 1.0,
        origin: Vec3 = (0.0, 0.0, 0.0),
    ) -> Heightfield:
        """Rolling hills from value noise; the same seed always gives the same terrain."""
        _check_samples(rows, cols)
        octaves = [(8.0, 1.0), (4.0, 0.5), (2.0, 0.25)]
        rng = random.Random(seed)
        layers = []
        for spacing, weight in octaves:
            lattice = [
                [rng.uniform(-1.0, 1.0) for _ in range(int(cols / spacing) + 2)]
                for _ in range(int(rows / spacing) + 2)
            ]
            layers.append((spacing, weight, lattice))
        total = sum(w for _, w in octaves)
        heights = tuple(
            tuple(
                round(
                    amplitude * sum(w * _noise(lat, c / s, r / s) for s, w, lat in layers) / total,
                    4,
                )
                for c in range(cols)
            )
            for r in range(rows)
        )
        return cls(heights, cell_size, origin, seed)

    @property
    def rows(self) -> int:
        return len(self.heights)

    @property
    def cols(self) -> int:
        return len(self.heights[0])

    def bounds(self) -> tuple[Vec3, Vec3]:
        """The axis-aligned box holding the whole surface."""
        flat = [h for row in self.heights for h in row]
        ox, oy, oz = self.origin
        return (
            (ox, oy + min(flat), oz),
            (
                ox + (self.cols - 1) * self.cell_size,
                oy + max(flat),
                oz + (self.rows - 1) * self.cell_size,
            ),
        )

    def height_at(self, x: float, z: float) -> float | None:
        """World height of the surface above (x, z), or None outside the footprint."""
        located = self._locate(x, z)
        if located is None:
            return None
        c, r, fu, fv = located
        h = self.heights
        h00, h10, h01, h11 = h[r][c], h[r][c + 1], h[r + 1][c], h[r + 1][c + 1]
        if fu >= fv:
            y = h00 + fu * (h10 - h00) + fv * (h11 - h10)
        else:
            y = h00 + fv * (h01 - h00) + fu * (h11 - h01)
        return self.origin[1] + y

    def raycast(
        self, origin: Vec3, direction: Vec3, max_distance: float = math.inf
    ) -> RayHit | None:
        """The first point where the ray meets the surface, or None.

        Walks the cells under the ray's path in order (a 2D DDA over the grid)
        and intersects each cell's two triangles, so the first cell with a hit
        holds the nearest hit.
        """
        d = normalize(direction, "direction")
        surface = self.height_at(origin[0], origin[2])
        if surface is not None and origin[1] < surface - EPS:
            located = self._locate(origin[0], origin[2])
            assert located is not None
            return RayHit(origin, 0.0, (0.0, 1.0, 0.0), (located[0], located[1]), inside=True)
        wall = self._wall_hit(origin, d, max_distance)
        if wall is not None:
            return wall
        span = self._clip(origin, d, max_distance)
        if span is None:
            return None
        t_enter, t_exit = span
        size = self.cell_size
        ox, _, oz = self.origin
        entry = add(origin, scale(d, t_enter))
        u0, v0 = (origin[0] - ox) / size, (origin[2] - oz) / size
        # Components the clip treated as parallel must not step the walk out of the grid.
        du = d[0] / size if abs(d[0]) >= 1e-15 else 0.0
        dv = d[2] / size if abs(d[2]) >= 1e-15 else 0.0
        c = _clamp(math.floor((entry[0] - ox) / size), 0, self.cols - 2)
        r = _clamp(math.floor((entry[2] - oz) / size), 0, self.rows - 2)
        step_c, next_c, delta_c = _dda_axis(u0, du, c)
        step_r, next_r, delta_r = _dda_axis(v0, dv, r)
        while 0 <= c <= self.cols - 2 and 0 <= r <= self.rows - 2:
            hit = self._hit_cell(c, r, origin, d, t_enter - EPS, t_exit + EPS)
            if hit is not None:
                return hit
            if min(next_c, next_r) > t_exit:
                return None
            if next_c < next_r:
                c += step_c
                next_c += delta_c
            else:
                r += step_r
                next_r += delta_r
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "cols": self.cols,
            "cell_size": self.cell_size,
            "origin": list(self.origin),
            "seed": self.seed,
            "heights": [list(row) for row in self.heights],
        }

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Heightfield:
        if not isinstance(raw, Mapping):
            raise SceneError("terrain must be an object")
        unknown = set(raw) - {"rows", "cols", "cell_size", "origin", "seed", "heights"}
        if unknown:
            raise SceneError(f"terrain has unknown field(s) {sorted(unknown)}")
        if "heights" not in raw:
            raise SceneError("terrain lacks heights")
        seed = raw.get("seed")
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
            raise SceneError("terrain seed must be an integer or null")
        field = cls(raw["heights"], raw.get("cell_size", 1.0), raw.get("origin", (0, 0, 0)), seed)
        for key, actual in (("rows", field.rows), ("cols", field.cols)):
            if key in raw and raw[key] != actual:
                raise SceneError(f"terrain {key} is {raw[key]!r} but heights has {actual}")
        return field

    # -- internals -------------------------------------------------------------

    def _locate(self, x: float, z: float) -> tuple[int, int, float, float] | None:
        u = (x - self.origin[0]) / self.cell_size
        v = (z - self.origin[2]) / self.cell_size
        if not (-EPS <= u <= self.cols - 1 + EPS and -EPS <= v <= self.rows - 1 + EPS):
            return None
        c = _clamp(math.floor(u), 0, self.cols - 2)
        r = _clamp(math.floor(v), 0, self.rows - 2)
        return c, r, min(max(u - c, 0.0), 1.0), min(max(v - r, 0.0), 1.0)

    def _wall_hit(self, origin: Vec3, d: Vec3, max_distance: float) -> RayHit | None:
        """A hit on a side of the solid: the ray enters the footprint under the surface."""
        span = self._clip(origin, d, max_distance, axes=(0, 2))
        if span is None or span[0] <= 0:
            return None
        point = add(origin, scale(d, span[0]))
        surface = self.height_at(point[0], point[2])
        if surface is None or point[1] >= surface - EPS:
            return None
        lo, hi = self.bounds()
        normal: Vec3 = (0.0, 0.0, 0.0)
        for axis in (0, 2):
            side = [0.0, 0.0, 0.0]
            if abs(point[axis] - lo[axis]) <= 1e-7 * max(1.0, abs(lo[axis])) and d[axis] > 0:
                side[axis] = -1.0
            elif abs(point[axis] - hi[axis]) <= 1e-7 * max(1.0, abs(hi[axis])) and d[axis] < 0:
                side[axis] = 1.0
            if side[axis]:
                normal = (side[0], side[1], side[2])
                break
        located = self._locate(point[0], point[2])
        assert located is not None
        return RayHit(point, span[0], normal, (located[0], located[1]))

    def _clip(
        self, origin: Vec3, d: Vec3, max_distance: float, axes: tuple[int, ...] = (0, 1, 2)
    ) -> tuple[float, float] | None:
        """The ray's distance interval inside the terrain's bounding box (slab method)."""
        lo, hi = self.bounds()
        t0, t1 = 0.0, max_distance
        for axis in axes:
            if abs(d[axis]) < 1e-15:
                if not lo[axis] - EPS <= origin[axis] <= hi[axis] + EPS:
                    return None
                continue
            a = (lo[axis] - origin[axis]) / d[axis]
            b = (hi[axis] - origin[axis]) / d[axis]
            t0, t1 = max(t0, min(a, b)), min(t1, max(a, b))
        if t0 > t1 + EPS:
            return None
        return t0, t1

    def _vertex(self, c: int, r: int) -> Vec3:
        ox, oy, oz = self.origin
        return (ox + c * self.cell_size, oy + self.heights[r][c], oz + r * self.cell_size)

    def _hit_cell(
        self, c: int, r: int, origin: Vec3, d: Vec3, t_min: float, t_max: float
    ) -> RayHit | None:
        p00, p10 = self._vertex(c, r), self._vertex(c + 1, r)
        p01, p11 = self._vertex(c, r + 1), self._vertex(c + 1, r + 1)
        best: RayHit | None = None
        for a, b, e in ((p00, p10, p11), (p00, p11, p01)):
            t = _intersect_triangle(origin, d, a, b, e)
            if t is None or t < max(t_min, 0.0) or t > t_max:
                continue
            if best is None or t < best.distance:
                normal = cross(sub(e, a), sub(b, a))  # (a, b, e) wind clockwise seen from above
                best = RayHit(add(origin, scale(d, t)), t, normalize(normal), (c, r))
        return best


def _intersect_triangle(origin: Vec3, d: Vec3, a: Vec3, b: Vec3, c: Vec3) -> float | None:
    """Moller-Trumbore, two-sided, with a little tolerance so shared edges never leak."""
    e1, e2 = sub(b, a), sub(c, a)
    p = cross(d, e2)
    det = dot(e1, p)
    if abs(det) < 1e-15:
        return None
    inv = 1.0 / det
    s = sub(origin, a)
    u = dot(s, p) * inv
    if u < -EPS or u > 1 + EPS:
        return None
    q = cross(s, e1)
    v = dot(d, q) * inv
    if v < -EPS or u + v > 1 + EPS:
        return None
    return dot(e2, q) * inv


def _dda_axis(start: float, delta: float, cell: int) -> tuple[int, float, float]:
    """(step, distance to the first boundary, distance between boundaries) on one grid axis."""
    if delta > 0:
        return 1, (cell + 1 - start) / delta, 1 / delta
    if delta < 0:
        return -1, (cell - start) / delta, -1 / delta
    return 0, math.inf, math.inf


def _clamp(value: int, lo: int, hi: int) -> int:
    return max(lo, min(hi, value))


def _noise(lattice: list[list[float]], x: float, y: float) -> float:
    """Smooth value noise: the lattice bilinearly blended with a smoothstep."""
    i, j = int(x), int(y)
    fx, fy = x - i, y - j
    sx, sy = fx * fx * (3 - 2 * fx), fy * fy * (3 - 2 * fy)
    top = lattice[j][i] + sx * (lattice[j][i + 1] - lattice[j][i])
    bottom = lattice[j + 1][i] + sx * (lattice[j + 1][i + 1] - lattice[j + 1][i])
    return top + sy * (bottom - top)


def _check_samples(rows: object, cols: object) -> None:
    for name, n in (("rows", rows), ("cols", cols)):
        if not isinstance(n, int) or isinstance(n, bool) or not MIN_SAMPLES <= n <= MAX_SAMPLES:
            raise SceneError(
                f"terrain {name} must be an integer from {MIN_SAMPLES} to {MAX_SAMPLES}, not {n!r}"
            )


def _grid(heights: object) -> tuple[tuple[float, ...], ...]:
    if not isinstance(heights, Sequence) or isinstance(heights, str) or not heights:
        raise SceneError("heights must be a list of rows, each a list of numbers")
    rows = []
    for r, row in enumerate(heights):
        if not isinstance(row, Sequence) or isinstance(row, str):
            raise SceneError(f"heights[{r}] must be a list of numbers")
        values = []
        for c, h in enumerate(row):
            if not isinstance(h, int | float) or isinstance(h, bool) or not math.isfinite(h):
                raise SceneError(f"heights[{r}][{c}] must be a finite number, not {h!r}")
            values.append(float(h))
        rows.append(tuple(values))
    widths = {len(row) for row in rows}
    if len(widths) != 1:
        raise SceneError(
            f"every row of heights must have the same length; found lengths {sorted(widths)}"
        )
    _check_samples(len(rows), widths.pop())
    return tuple(rows)
