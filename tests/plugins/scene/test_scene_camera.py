"""Screen rays from the perspective camera (y up, vertical fov)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lanes import examples

from agent_presets_scene import SceneError
from agent_presets_scene.camera import Camera
from agent_presets_scene.vectors import Vec3, dot, length, sub

POINT = st.tuples(*[st.floats(-50, 50)] * 3)
CAMERAS = st.tuples(
    st.tuples(POINT, POINT).filter(lambda pair: length(sub(pair[1], pair[0])) > 1e-3),
    st.floats(1, 179),
).map(lambda args: Camera(args[0][0], args[0][1], args[1]))


@settings(max_examples=examples(200), deadline=None)
@given(camera=CAMERAS, width=st.integers(1, 4000), height=st.integers(1, 4000))
def test_the_centre_of_the_screen_looks_at_the_target(
    camera: Camera, width: int, height: int
) -> None:
    origin, direction = camera.screen_ray(width / 2, height / 2, width, height)
    to_target = sub(camera.target, camera.position)
    assert origin == camera.position
    assert direction == pytest.approx(tuple(c / length(to_target) for c in to_target), abs=1e-9)


@settings(max_examples=examples(200), deadline=None)
@given(camera=CAMERAS, width=st.integers(1, 4000), height=st.integers(1, 4000))
def test_corners_are_symmetric_about_the_view_axis(camera: Camera, width: int, height: int) -> None:
    forward, right, up = camera.basis()
    top_left = camera.screen_ray(0, 0, width, height)[1]
    top_right = camera.screen_ray(width, 0, width, height)[1]
    bottom_left = camera.screen_ray(0, height, width, height)[1]
    bottom_right = camera.screen_ray(width, height, width, height)[1]
    for ray in (top_left, top_right, bottom_left, bottom_right):
        assert length(ray) == pytest.approx(1.0)
        assert dot(ray, forward) == pytest.approx(dot(top_left, forward))
    assert dot(top_left, right) == pytest.approx(-dot(top_right, right), abs=1e-9)
    assert dot(top_left, up) == pytest.approx(dot(top_right, up), abs=1e-9)
    assert dot(top_left, up) == pytest.approx(-dot(bottom_left, up), abs=1e-9)
    assert dot(top_left, right) < 0 < dot(bottom_right, right)
    assert dot(bottom_right, up) < 0 < dot(top_left, up)


@pytest.mark.parametrize(("width", "height"), [(800, 600), (600, 800), (100, 100)])
@pytest.mark.parametrize("fov", [30.0, 60.0, 90.0, 120.0])
def test_the_screen_edges_lie_at_the_field_of_view(width: int, height: int, fov: float) -> None:
    camera = Camera((0.0, 0.0, 0.0), (0.0, 0.0, -1.0), fov)
    top = camera.screen_ray(width / 2, 0, width, height)[1]
    right = camera.screen_ray(width, height / 2, width, height)[1]
    assert math.degrees(math.acos(-top[2])) == pytest.approx(fov / 2)
    assert top[1] > 0 and top[0] == pytest.approx(0.0)
    horizontal = math.atan(math.tan(math.radians(fov) / 2) * width / height)
    assert math.acos(-right[2]) == pytest.approx(horizontal)
    assert right[0] > 0 and right[1] == pytest.approx(0.0)


def test_the_default_camera_sees_y_up_and_x_to_the_right() -> None:
    camera = Camera()
    forward, right, up = camera.basis()
    assert right == pytest.approx((1.0, 0.0, 0.0))
    assert up[1] > 0 and forward[2] < 0


@pytest.mark.parametrize(("target_y", "screen_up"), [(-10.0, (0, 0, -1)), (10.0, (0, 0, 1))])
def test_looking_straight_down_or_up_still_gives_a_screen(target_y: float, screen_up: Vec3) -> None:
    camera = Camera((2.0, 0.0, 3.0), (2.0, target_y, 3.0), 60)
    forward, right, up = camera.basis()
    assert up == pytest.approx(screen_up)
    assert abs(dot(forward, right)) < 1e-12 and abs(dot(up, right)) < 1e-12
    _, direction = camera.screen_ray(50, 50, 100, 100)
    assert direction == pytest.approx(forward)


def test_a_camera_must_have_somewhere_to_look() -> None:
    with pytest.raises(SceneError, match="must differ"):
        Camera((1.0, 1.0, 1.0), (1.0, 1.0, 1.0), 60)
    for fov in (0, 180, -1, math.nan):
        with pytest.raises(SceneError, match="fov"):
            Camera((0.0, 0.0, 1.0), (0.0, 0.0, 0.0), fov)
