"""Every scene tool, called through the manager's tool defs, with its error paths."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any

import pytest

from agent_presets import ToolArgumentError

FLAT = [[2.0] * 5 for _ in range(5)]


# -- objects -------------------------------------------------------------------


def test_add_cuboid_returns_the_object(app: Any) -> None:
    box = app.call("add_cuboid", position=[1, 2, 3], size=[2, 1, 0.5], name=" Crate ", color="#F80")
    assert box == {
        "id": box["id"],
        "kind": "cuboid",
        "name": "Crate",
        "position": [1.0, 2.0, 3.0],
        "size": [2.0, 1.0, 0.5],
        "color": "#ff8800",
        "body": None,
    }
    other = app.call("add_cuboid", position=[0, 0, 0], size=[1, 1, 1])
    assert other["id"] != box["id"] and other["name"] == other["id"]
    assert [o["id"] for o in app.state()["objects"]] == [box["id"], other["id"]]


@pytest.mark.parametrize(
    "arguments",
    [
        {"position": [0, 0], "size": [1, 1, 1]},
        {"position": [0, 0, 0], "size": [1, 0, 1]},
        {"position": [0, 0, 0], "size": [1, -1, 1]},
        {"position": [0, 0, 0]},
        {"position": [0, 0, 0], "size": [1, 1, 1], "color": "orange"},
        {"position": [0, 0, 0], "size": [1, 1, 1], "rotation": [0, 0, 0]},
        {"position": ["a", 0, 0], "size": [1, 1, 1]},
    ],
)
def test_add_cuboid_rejects_bad_arguments(app: Any, arguments: dict[str, Any]) -> None:
    with pytest.raises(ToolArgumentError, match="space_scene_add_cuboid"):
        app.call("add_cuboid", **arguments)
    assert app.state()["objects"] == []


def test_add_physics_body_attaches_and_replaces(app: Any) -> None:
    box = app.cuboid()
    body = app.call("add_physics_body", object_id=box, kind="dynamic")
    assert (body["replaced"], body["body"]) == (False, {"kind": "dynamic", "mass": 1.0})
    heavy = app.call("add_physics_body", object_id=box, kind="dynamic", mass=80)
    assert (heavy["replaced"], heavy["body"]) == (True, {"kind": "dynamic", "mass": 80.0})
    floor = app.call("add_physics_body", object_id=app.cuboid(), kind="static")
    assert floor["body"] == {"kind": "static", "mass": 0.0}
    assert app.state()["objects"][0]["body"] == {"kind": "dynamic", "mass": 80.0}


def test_add_physics_body_refuses_an_unknown_object_or_a_massless_dynamic_body(app: Any) -> None:
    box = app.cuboid()
    message = app.refused("add_physics_body", object_id="cuboid-99", kind="dynamic", mass=1)
    assert "'cuboid-99'" in message and "space_scene_add_cuboid" in message
    assert "greater than 0" in app.refused(
        "add_physics_body", object_id=box, kind="dynamic", mass=0
    )
    with pytest.raises(ToolArgumentError):
        app.call("add_physics_body", object_id=box, kind="dynamic", mass=-1)
    with pytest.raises(ToolArgumentError):
        app.call("add_physics_body", object_id=box, kind="floating", mass=1)


def test_select_object_selects_and_clears(app: Any) -> None:
    box = app.cuboid(name="Crate")
    selected = app.call("select_object", object_id=box)
    assert selected["selected"] == box and selected["object"]["name"] == "Crate"
    assert app.state()["selected"] == box
    assert app.call("select_object", object_id=None) == {"selected": None, "object": None}
    assert "'ghost'" in app.refused("select_object", object_id="ghost")
    with pytest.raises(ToolArgumentError):
        app.call("select_object")


# -- terrain -------------------------------------------------------------------


def test_add_terrain_from_heights(app: Any) -> None:
    summary = app.call("add_terrain", heights=FLAT, cell_size=2, origin=[-4, 1, -4])
    assert summary == {
        "rows": 5,
        "cols": 5,
        "cell_size": 2.0,
        "origin": [-4.0, 1.0, -4.0],
        "seed": None,
        "bounds": {"min": [-4.0, 3.0, -4.0], "max": [4.0, 3.0, 4.0]},
    }
    assert app.state()["terrain"]["heights"] == FLAT


def test_add_terrain_from_a_seed_is_repeatable(make_app: Callable[..., Any]) -> None:
    app = make_app()
    summary = app.call("add_terrain", seed=7, rows=9, cols=12, amplitude=3)
    assert (summary["rows"], summary["cols"], summary["seed"]) == (9, 12, 7)
    heights = app.state()["terrain"]["heights"]
    assert max(abs(h) for row in heights for h in row) <= 3
    assert len({h for row in heights for h in row}) > 50, "hills, not a flat plane"
    app.call("remove_terrain")
    app.call("add_terrain", seed=7, rows=9, cols=12, amplitude=3)
    assert app.state()["terrain"]["heights"] == heights
    app.call("remove_terrain")
    app.call("add_terrain", seed=8, rows=9, cols=12, amplitude=3)
    assert app.state()["terrain"]["heights"] != heights
    app.call("remove_terrain")
    app.call("add_terrain", seed=8, rows=3, cols=3, amplitude=0)
    assert app.state()["terrain"]["heights"] == [[0.0] * 3] * 3


def test_add_terrain_refuses_unclear_or_bad_input(app: Any) -> None:
    assert "not both" in app.refused("add_terrain", heights=FLAT, seed=1)
    assert "give 'heights'" in app.refused("add_terrain")
    assert "same length" in app.refused("add_terrain", heights=[[0, 0, 0], [0, 0]])
    with pytest.raises(ToolArgumentError):
        app.call("add_terrain", heights=[[0, 0]])
    with pytest.raises(ToolArgumentError):
        app.call("add_terrain", seed=1, cell_size=0)
    with pytest.raises(ToolArgumentError):
        app.call("add_terrain", seed=1, rows=1000)


def test_a_second_terrain_is_refused_until_the_first_is_removed(app: Any) -> None:
    app.call("add_terrain", heights=FLAT)
    message = app.refused("add_terrain", seed=3)
    assert "space_scene_remove_terrain" in message
    removed = app.call("remove_terrain")
    assert removed["removed"]["rows"] == 5
    assert app.state()["terrain"] is None
    assert "no terrain" in app.refused("remove_terrain")
    app.call("add_terrain", seed=3)


def test_raycast_terrain_hits_flat_ground(app: Any) -> None:
    app.call("add_terrain", heights=FLAT, origin=[0, -1, 0])
    hit = app.call("raycast_terrain", origin=[1.5, 10, 2.5], direction=[0, -3, 0])
    assert hit == {
        "hit": True,
        "point": [1.5, 1.0, 2.5],
        "distance": 9.0,
        "normal": [0.0, 1.0, 0.0],
        "cell": {"col": 1, "row": 2},
        "inside": False,
    }
    assert app.call("raycast_terrain", origin=[1.5, 10, 2.5], direction=[0, 1, 0]) == {"hit": False}
    assert app.call(
        "raycast_terrain", origin=[1.5, 10, 2.5], direction=[0, -1, 0], max_distance=5
    ) == {"hit": False}


def test_raycast_terrain_refuses_without_terrain_or_direction(app: Any) -> None:
    assert "space_scene_add_terrain" in app.refused(
        "raycast_terrain", origin=[0, 5, 0], direction=[0, -1, 0]
    )
    app.call("add_terrain", heights=FLAT)
    assert "zero vector" in app.refused("raycast_terrain", origin=[0, 5, 0], direction=[0, 0, 0])
    with pytest.raises(ToolArgumentError):
        app.call("raycast_terrain", origin=[0, 5, 0], direction=[0, -1])


def test_removed_terrain_can_no_longer_be_hit(app: Any) -> None:
    app.call("add_terrain", heights=FLAT)
    app.call("remove_terrain")
    app.refused("raycast_terrain", origin=[1, 5, 1], direction=[0, -1, 0])


# -- lights and sky ------------------------------------------------------------


def test_add_light_of_each_kind(app: Any) -> None:
    bulb = app.call("add_light", kind="point", position=[0, 3, 0], color="#FFEEDD", intensity=2)
    assert bulb == {
        "id": bulb["id"],
        "kind": "point",
        "name": bulb["id"],
        "position": [0.0, 3.0, 0.0],
        "direction": None,
        "color": "#ffeedd",
        "intensity": 2.0,
        "angle": None,
        "on": True,
    }
    sun = app.call("add_light", kind="directional", direction=[0, -2, 0], name="Sun")
    assert (sun["position"], sun["direction"], sun["name"]) == (None, [0.0, -1.0, 0.0], "Sun")
    spot = app.call("add_light", kind="spot", position=[0, 5, 0])
    assert (spot["direction"], spot["angle"]) == ([0.0, -1.0, 0.0], 30.0)
    assert len({bulb["id"], sun["id"], spot["id"]}) == 3
    assert [light["id"] for light in app.state()["lights"]] == [bulb["id"], sun["id"], spot["id"]]


def test_add_light_refuses_parts_a_kind_does_not_have(app: Any) -> None:
    assert "has no position" in app.refused("add_light", kind="directional", position=[0, 1, 0])
    assert "needs a position" in app.refused("add_light", kind="point")
    assert "needs a position" in app.refused("add_light", kind="spot", direction=[0, -1, 0])
    assert "leave out 'direction'" in app.refused(
        "add_light", kind="point", position=[0, 1, 0], direction=[1, 0, 0]
    )
    assert "only spot lights" in app.refused(
        "add_light", kind="point", position=[0, 1, 0], angle=20
    )
    assert "zero vector" in app.refused("add_light", kind="directional", direction=[0, 0, 0])
    for bad in ({"kind": "laser"}, {"kind": "point", "position": [0, 1, 0], "intensity": -1}):
        with pytest.raises(ToolArgumentError):
            app.call("add_light", **bad)


def test_set_light_state_switches_a_light(app: Any) -> None:
    light = app.call("add_light", kind="point", position=[0, 3, 0])["id"]
    assert app.call("set_light_state", light_id=light, on=False)["on"] is False
    assert app.state()["lights"][0]["on"] is False
    assert app.call("set_light_state", light_id=light, on=True)["on"] is True
    assert "space_scene_add_light" in app.refused("set_light_state", light_id="light-9", on=True)
    with pytest.raises(ToolArgumentError):
        app.call("set_light_state", light_id=light, on="yes")


def test_skybox_and_background(app: Any) -> None:
    assert app.call("set_skybox", name="sunset") == {"skybox": "sunset", "background": "#1e1e1e"}
    assert app.call("set_background", color="#ABC") == {"skybox": "sunset", "background": "#aabbcc"}
    assert (app.state()["skybox"], app.state()["background"]) == ("sunset", "#aabbcc")
    for bad in ("#abcd", "aabbcc", "#gggggg", "red"):
        with pytest.raises(ToolArgumentError, match="'color'"):
            app.call("set_background", color=bad)
    with pytest.raises(ToolArgumentError, match="'name'"):
        app.call("set_skybox", name="mars")
    assert app.state()["background"] == "#aabbcc"


# -- camera --------------------------------------------------------------------


def test_set_camera_and_reset(app: Any) -> None:
    default = app.state()["camera"]
    moved = app.call("set_camera", position=[10, 10, 10], target=[0, 1, 0], fov=45)
    assert moved == {"position": [10.0, 10.0, 10.0], "target": [0.0, 1.0, 0.0], "fov": 45.0}
    kept = app.call("set_camera", position=[0, 2, 5], target=[0, 0, 0])
    assert kept["fov"] == 45.0
    assert app.call("reset_camera") == default == app.state()["camera"]


def test_set_camera_refuses_a_camera_that_cannot_look(app: Any) -> None:
    assert "must differ" in app.refused("set_camera", position=[1, 2, 3], target=[1, 2, 3])
    for fov in (0, 180, -5, 200):
        with pytest.raises(ToolArgumentError, match="'fov'"):
            app.call("set_camera", position=[0, 0, 5], target=[0, 0, 0], fov=fov)


def test_screen_ray_through_the_centre_points_at_the_target(app: Any) -> None:
    app.call("set_camera", position=[3, 4, 5], target=[1, 1, 1], fov=50)
    ray = app.call("screen_ray", x=320, y=240, width=640, height=480)
    expected = [-2 / math.sqrt(29), -3 / math.sqrt(29), -4 / math.sqrt(29)]
    assert ray["origin"] == [3.0, 4.0, 5.0]
    assert ray["direction"] == pytest.approx(expected)


def test_screen_ray_refuses_points_off_the_screen(app: Any) -> None:
    assert "outside" in app.refused("screen_ray", x=641, y=10, width=640, height=480)
    assert "outside" in app.refused("screen_ray", x=10, y=480.5, width=640, height=480)
    with pytest.raises(ToolArgumentError):
        app.call("screen_ray", x=0, y=0, width=0, height=480)
    with pytest.raises(ToolArgumentError):
        app.call("screen_ray", x=-1, y=0, width=10, height=10)


def test_a_clicked_pixel_finds_the_ground_under_it(app: Any) -> None:
    """screen_ray then raycast_terrain: the pixel at the target finds the target."""
    app.call("add_terrain", seed=11, rows=17, cols=17, amplitude=2)
    ground = app.call("raycast_terrain", origin=[6.5, 50, 9.25], direction=[0, -1, 0])["point"]
    app.call("set_camera", position=[0, 12, 0], target=ground, fov=70)
    ray = app.call("screen_ray", x=400, y=300, width=800, height=600)
    hit = app.call("raycast_terrain", origin=ray["origin"], direction=ray["direction"])
    assert hit["point"] == pytest.approx(ground, abs=1e-6)


# -- state ---------------------------------------------------------------------


def _build(app: Any) -> None:
    box = app.cuboid(name="Crate", color="#123456")
    app.call("add_physics_body", object_id=box, kind="dynamic", mass=3)
    app.call("select_object", object_id=box)
    app.call("add_terrain", seed=5, rows=5, cols=6)
    app.call("add_light", kind="spot", position=[0, 4, 0], angle=15)
    app.call("set_skybox", name="night")
    app.call("set_background", color="#000000")
    app.call("set_camera", position=[1, 2, 3], target=[0, 0, 0], fov=75)


def test_state_round_trips_through_restore(app: Any) -> None:
    _build(app)
    snapshot = app.call("get_state")
    app.call("remove_terrain")
    app.cuboid()
    app.call("reset_camera")
    assert app.call("restore_state", state=snapshot) == {
        "objects": 1,
        "lights": 1,
        "terrain": True,
    }
    assert app.call("get_state") == snapshot
    assert app.cuboid() not in {o["id"] for o in snapshot["objects"]}


def _corruptions() -> list[tuple[str, Callable[[dict[str, Any]], None]]]:
    def set_in(path: tuple[Any, ...], value: Any) -> Callable[[dict[str, Any]], None]:
        def corrupt(state: dict[str, Any]) -> None:
            target = state
            for key in path[:-1]:
                target = target[key]
            target[path[-1]] = value

        return corrupt

    return [
        ("not among the objects", set_in(("selected",), "cuboid-77")),
        ("greater than 0", set_in(("objects", 0, "body", "mass"), 0)),
        ("hex color", set_in(("objects", 0, "color"), "blue")),
        ("same length", set_in(("terrain", "heights", 1), [0.0])),
        ("must differ", set_in(("camera", "target"), [1, 2, 3])),
        ("fov", set_in(("camera", "fov"), 180)),
        ("unknown skybox", set_in(("skybox",), "mars")),
        ("unknown field", set_in(("extra",), True)),
        ("appears twice", lambda s: s["lights"].append(dict(s["lights"][0]))),
        ("three finite numbers", set_in(("objects", 0, "position"), [0, 0])),
        ("has no position", set_in(("lights", 0, "kind"), "directional")),
    ]


@pytest.mark.parametrize(("expected", "corrupt"), _corruptions(), ids=lambda v: str(v)[:24])
def test_restore_refuses_an_invalid_state_and_changes_nothing(
    app: Any, expected: str, corrupt: Callable[[dict[str, Any]], None]
) -> None:
    _build(app)
    state = copy.deepcopy(app.call("get_state"))
    corrupt(state)
    message = app.refused("restore_state", state=state)
    assert "invalid scene state" in message and expected in message


def test_scene_survives_a_restart(make_app: Callable[..., Any]) -> None:
    app = make_app()
    _build(app)
    before = app.call("get_state")
    restarted = make_app()
    assert restarted.call("get_state") == before
    hit = restarted.call("raycast_terrain", origin=[2, 30, 2], direction=[0, -1, 0])
    assert hit["hit"] is True


def test_each_world_has_its_own_scene(app: Any) -> None:
    box = app.cuboid()
    app.call("add_terrain", heights=FLAT)
    app.host.shell.create_world("moon")
    app.host.shell.switch_world("moon")
    app.refused("select_object", object_id=box)
    app.refused("raycast_terrain", origin=[1, 5, 1], direction=[0, -1, 0])
    app.call("add_terrain", seed=1)
    app.call("set_skybox", name="starfield")
    app.host.shell.switch_world("home")
    assert app.call("get_state")["skybox"] == "none"
    assert app.call("raycast_terrain", origin=[1, 5, 1], direction=[0, -1, 0])["point"][1] == 2.0
    moon = app.host.partition_runtime("moon", "scene").to_state()
    assert moon["objects"] == [] and moon["terrain"]["seed"] == 1
