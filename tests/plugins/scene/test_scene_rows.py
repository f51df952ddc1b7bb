"""The scene persists the rows a change touched: a camera move never rewrites the terrain."""

from __future__ import annotations

from typing import Any


def changed_rows(app: Any, call: str, **arguments: Any) -> set[str]:
    before = app.saved_rows()
    app.call(call, **arguments)
    after = app.saved_rows()
    return {k for k in {*before, *after} if before.get(k) != after.get(k)}


def test_each_change_writes_only_its_own_rows(app: Any) -> None:
    app.call("add_terrain", seed=3, rows=65, cols=65)
    box = app.cuboid()
    assert changed_rows(app, "set_camera", position=[1, 2, 3], target=[0, 0, 0]) == {"camera"}
    assert changed_rows(app, "reset_camera") == {"camera"}
    assert changed_rows(app, "add_physics_body", object_id=box, kind="static") == {f"object/{box}"}
    assert changed_rows(app, "set_skybox", name="night") == {"scene"}
    assert changed_rows(app, "remove_terrain") == {"terrain"}


def test_the_rows_load_back_as_the_same_scene(make_app: Any) -> None:
    app = make_app()
    app.call("add_terrain", seed=3, rows=9, cols=9)
    for _ in range(11):  # cuboid-10 sorts before cuboid-2: the order is kept apart
        app.cuboid()
    app.call("add_light", kind="point", position=[0, 3, 0])
    app.call("set_camera", position=[4, 5, 6], target=[0, 1, 0], fov=50)
    before = app.call("get_state")
    assert make_app().call("get_state") == before
