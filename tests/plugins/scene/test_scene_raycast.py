"""The terrain ray cast against geometry whose answer is known."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from lanes import examples

from agent_presets_scene.terrain import Heightfield
from agent_presets_scene.vectors import Vec3, normalize


def flat(height: float, rows: int = 6, cols: int = 6, **layout: object) -> Heightfield:
    return Heightfield(tuple((height,) * cols for _ in range(rows)), **layout)  # type: ignore[arg-type]


def plane(a: float, b: float, c: float, rows: int, cols: int, cell: float) -> Heightfield:
    """The plane y = a*x + b*z + c over the grid (origin at 0): represented exactly."""
    return Heightfield(
        tuple(tuple(a * i * cell + b * j * cell + c for i in range(cols)) for j in range(rows)),
        cell_size=cell,
    )


@pytest.mark.parametrize("h", [-3.5, 0.0, 2.0, 17.25])
@pytest.mark.parametrize(("x", "z"), [(2.5, 2.5), (0, 0), (5, 5), (3, 1.5), (2, 4), (0, 5)])
def test_a_ray_straight_down_onto_flat_ground_hits_at_its_height(
    h: float, x: float, z: float
) -> None:
    """Also at grid vertices, shared edges and the far corner of the footprint."""
    hit = flat(h).raycast((x, 100.0, z), (0.0, -1.0, 0.0))
    assert hit is not None and not hit.inside
    assert hit.point == pytest.approx((x, h, z))
    assert hit.distance == pytest.approx(100 - h)
    assert hit.normal == pytest.approx((0, 1, 0))


def test_an_oblique_ray_onto_flat_ground() -> None:
    ground = flat(1.0, rows=11, cols=11, cell_size=2.0, origin=(-10.0, 0.0, -10.0))
    hit = ground.raycast((-8.0, 9.0, 0.0), (1.0, -1.0, 0.0))
    assert hit is not None
    assert hit.point == pytest.approx((0.0, 1.0, 0.0))
    assert hit.distance == pytest.approx(8 * math.sqrt(2))
    assert hit.cell == (5, 5)


def test_a_ray_onto_a_sloped_plane() -> None:
    slope = plane(0.5, 0.0, 1.0, rows=5, cols=9, cell=1.0)  # y = x/2 + 1
    down = slope.raycast((6.0, 20.0, 2.0), (0.0, -1.0, 0.0))
    assert down is not None and down.point == pytest.approx((6.0, 4.0, 2.0))
    n = 1 / math.sqrt(1.25)
    assert down.normal == pytest.approx((-0.5 * n, n, 0.0))
    # Horizontally towards the rising slope: y = 3 is reached at x = 4.
    level = slope.raycast((0.0, 3.0, 1.0), (1.0, 0.0, 0.0))
    assert level is not None and level.point == pytest.approx((4.0, 3.0, 1.0))
    # Horizontally down the slope from above it: never meets it.
    assert slope.raycast((8.0, 6.0, 1.0), (-1.0, 0.0, 0.0)) is None


@pytest.mark.parametrize(
    ("origin", "direction"),
    [
        ((2.0, 5.0, 2.0), (0.0, 1.0, 0.0)),  # pointing up
        ((-5.0, 5.0, 2.0), (0.0, -1.0, 0.0)),  # beside the terrain
        ((-5.0, 5.0, 2.0), (1.0, 0.0, 0.0)),  # level, above the ground
        ((2.0, 5.0, 20.0), (0.0, -1.0, 1.0)),  # away from it
        ((-5.0, 5.0, -5.0), (-1.0, -0.2, -1.0)),
    ],
)
def test_rays_that_miss(origin: Vec3, direction: Vec3) -> None:
    assert flat(1.0).raycast(origin, direction) is None


def test_max_distance_ignores_farther_hits() -> None:
    ground = flat(0.0)
    assert ground.raycast((2.0, 10.0, 2.0), (0.0, -1.0, 0.0), max_distance=9.99) is None
    assert ground.raycast((2.0, 10.0, 2.0), (0.0, -1.0, 0.0), max_distance=10.0) is not None


@pytest.mark.parametrize("direction", [(0.0, -1.0, 0.0), (0.0, 1.0, 0.0), (1.0, 0.2, -0.3)])
def test_a_ray_starting_below_ground_is_inside_at_distance_zero(direction: Vec3) -> None:
    hit = flat(2.0).raycast((1.0, 1.0, 3.0), direction)
    assert hit is not None and hit.inside
    assert (hit.point, hit.distance) == ((1.0, 1.0, 3.0), 0.0)
    assert hit.to_dict()["inside"] is True


def test_a_ray_entering_the_side_below_the_surface_hits_the_side_wall() -> None:
    hit = flat(2.0).raycast((-3.0, 1.0, 2.5), (1.0, 0.0, 0.0))
    assert hit is not None and not hit.inside
    assert hit.point == pytest.approx((0.0, 1.0, 2.5))
    assert hit.normal == (-1.0, 0.0, 0.0)
    far = flat(2.0).raycast((2.5, 0.0, 9.0), (0.0, 0.0, -1.0))
    assert far is not None and far.point == pytest.approx((2.5, 0.0, 5.0))
    assert far.normal == (0.0, 0.0, 1.0)


def test_a_ray_passes_over_a_ridge_to_hit_behind_it() -> None:
    ridge = Heightfield(tuple((0.0, 0.0, 0.0, 5.0, 0.0, 0.0, 0.0) for _ in range(3)))
    # Level at y=6 from the left the ray clears the ridge and never comes down.
    assert ridge.raycast((-1.0, 6.0, 1.0), (1.0, 0.0, 0.0)) is None
    # At y=4 it meets the ridge's rising face where y = 5*(x-2) = 4.
    hit = ridge.raycast((-1.0, 4.0, 1.0), (1.0, 0.0, 0.0))
    assert hit is not None and hit.point == pytest.approx((2.8, 4.0, 1.0))
    # Descending steeply behind the ridge it lands on the far flat part.
    behind = ridge.raycast((3.5, 10.0, 1.0), (1.0, -4.0, 0.0))
    assert behind is not None and behind.point[1] == pytest.approx(0.0)
    assert behind.point[0] == pytest.approx(6.0)


COEFF = st.floats(-1.5, 1.5)


@settings(max_examples=examples(300), deadline=None)
@given(
    a=COEFF,
    b=COEFF,
    c=st.floats(-5, 5),
    cell=st.floats(0.25, 3),
    rows=st.integers(2, 12),
    cols=st.integers(2, 12),
    u=st.floats(0, 1),
    v=st.floats(0, 1),
    above=st.floats(0.01, 30),
    direction=st.tuples(st.floats(-1, 1), st.floats(-1, -0.05), st.floats(-1, 1)),
)
def test_a_ray_meets_a_plane_where_the_algebra_says(
    a: float,
    b: float,
    c: float,
    cell: float,
    rows: int,
    cols: int,
    u: float,
    v: float,
    above: float,
    direction: Vec3,
) -> None:
    terrain = plane(a, b, c, rows, cols, cell)
    x, z = u * (cols - 1) * cell, v * (rows - 1) * cell
    origin = (x, a * x + b * z + c + above, z)
    d = normalize(direction)
    slope_along = a * d[0] + b * d[2]
    assume(d[1] - slope_along < -1e-3)  # the ray approaches the plane
    t = above / (slope_along - d[1])
    expected = (origin[0] + t * d[0], origin[1] + t * d[1], origin[2] + t * d[2])
    lo, hi = terrain.bounds()
    margin = 1e-6 * (1 + t)
    inside = lo[0] + margin < expected[0] < hi[0] - margin
    inside = inside and lo[2] + margin < expected[2] < hi[2] - margin
    outside = not (-margin <= expected[0] <= hi[0] + margin) or not (
        -margin <= expected[2] <= hi[2] + margin
    )
    hit = terrain.raycast(origin, d)
    if inside:
        assert hit is not None, f"missed the plane at {expected}"
        assert hit.distance == pytest.approx(t, rel=1e-6, abs=1e-6)
        assert hit.point == pytest.approx(expected, rel=1e-6, abs=1e-6)
        assert not hit.inside
    elif outside:
        assert hit is None, "the ray left the footprint above the plane"


def _reference(terrain: Heightfield, origin: Vec3, d: Vec3, limit: float) -> float | None:
    """An independent answer: march in small steps, then bisect the crossing."""

    low, high = terrain.bounds()

    def below(t: float) -> bool:
        x, z = origin[0] + t * d[0], origin[2] + t * d[2]
        if not (low[0] <= x <= high[0] and low[2] <= z <= high[2]):
            return False
        y = terrain.height_at(x, z)
        return y is not None and origin[1] + t * d[1] <= y

    step, t = 0.01, 0.0
    while t <= limit:
        if below(t):
            lo, hi = max(0.0, t - step), t
            for _ in range(50):
                mid = (lo + hi) / 2
                lo, hi = (lo, mid) if below(mid) else (mid, hi)
            return hi
        t += step
    return None


@settings(max_examples=examples(60), deadline=None)
@given(
    seed=st.integers(0, 10_000),
    origin=st.tuples(st.floats(-3, 12), st.floats(-1, 8), st.floats(-3, 12)),
    direction=st.tuples(st.floats(-1, 1), st.floats(-1, 0.3), st.floats(-1, 1)),
)
def test_ray_cast_agrees_with_marching_on_generated_hills(
    seed: int, origin: Vec3, direction: Vec3
) -> None:
    terrain = Heightfield.generate(seed, rows=10, cols=10, amplitude=3)
    assume(math.hypot(*direction) > 0.1)
    d = normalize(direction)
    # Far enough to cross the whole box from any start we draw.
    hit = terrain.raycast(origin, d, max_distance=40.0)
    expected = _reference(terrain, origin, d, 40.0)
    if expected is None:
        # Marching can step over a sliver thinner than its step, or a touch of the edge.
        assert hit is None or _grazes(terrain, origin, d, hit.distance)
    else:
        assert hit is not None, f"missed; marching hit at {expected}"
        assert hit.distance == pytest.approx(expected, abs=0.02)


def _grazes(terrain: Heightfield, origin: Vec3, d: Vec3, t: float) -> bool:
    """The hit is a touch: within a hair of the surface or of the footprint's edge."""
    point = (origin[0] + t * d[0], origin[1] + t * d[1], origin[2] + t * d[2])
    lo, hi = terrain.bounds()
    on_edge = min(abs(point[i] - edge) for i in (0, 2) for edge in (lo[i], hi[i])) < 1e-6
    surface = terrain.height_at(point[0], point[2])
    return on_edge or (surface is not None and abs(point[1] - surface) < 1e-6)


def test_height_at_matches_the_samples_and_is_none_outside() -> None:
    terrain = Heightfield(((0.0, 1.0, 2.0), (3.0, 4.0, 5.0)), cell_size=2.0, origin=(1, 10, 1))
    assert terrain.height_at(1.0, 1.0) == 10.0
    assert terrain.height_at(5.0, 3.0) == 15.0
    assert terrain.height_at(2.0, 2.0) == pytest.approx(12.0)  # centre of the left cell
    assert terrain.height_at(3.0, 2.0) == pytest.approx(12.5)  # between samples 1 and 4
    assert terrain.height_at(0.9, 2.0) is None
    assert terrain.height_at(3.0, 3.5) is None
