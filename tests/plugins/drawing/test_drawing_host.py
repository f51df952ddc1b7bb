"""The drawing runtime in the headless host: one drawing per world, kept across restarts."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_presets import ToolCallError


def test_a_restarted_host_resumes_the_drawing_and_its_history(
    make_app: Callable[..., Any],
) -> None:
    app = make_app()
    a = app.rect(0, 0, 10, 10, style={"fill": "#ff0000"})
    app.call("add_layer", name="Ink")
    b = app.call("insert_line", x1=0, y1=0, x2=5, y2=5)["id"]
    app.call("select", ids=[a, b])
    app.call("set_tool", tool="stroke")
    app.call("undo")
    before = app.call("inspect")

    again = make_app()  # a new host on the same state directory
    assert again.call("inspect") == before
    assert again.call("redo")["redone"] == "set tool stroke"
    again.call("undo")
    again.call("undo")
    assert again.call("inspect")["selection"] == []
    c = again.rect(1, 1, 1, 1)
    assert c not in (a, b)  # the id counter survived too


def test_each_world_has_its_own_drawing(app: Any) -> None:
    shell = app.host.shell
    home_rect = app.rect(0, 0, 10, 10)
    shell.create_world("studio")
    shell.switch_world("studio")
    assert app.objects() == {}
    assert app.call("inspect")["undo_depth"] == 0
    assert "nothing to undo" in app.refused("undo")
    studio_line = app.call("insert_line", x1=0, y1=0, x2=1, y2=1)["id"]
    app.call("rename_layer", layer="layer-1", name="Studio")

    shell.switch_world("home")
    assert list(app.objects()) == [home_rect]
    assert app.call("inspect")["layers"][0]["name"] == "Layer 1"
    app.call("undo")  # undoes home's insert, not the studio's changes
    studio = app.host.partition_runtime("studio", "drawing").inspect()
    assert [o["id"] for o in studio["layers"][0]["objects"]] == [studio_line]
    assert app.host.partition_runtime("home", "drawing").inspect()["layers"][0]["objects"] == []


def test_worlds_stay_apart_across_a_restart(make_app: Callable[..., Any]) -> None:
    app = make_app()
    app.rect(0, 0, 1, 1)
    app.host.shell.create_world("other")
    app.host.shell.switch_world("other")
    app.rect(5, 5, 2, 2)
    app.rect(9, 9, 2, 2)

    again = make_app()
    assert again.host.shell.world == "other"
    assert len(again.objects()) == 2
    assert (
        len(again.host.partition_runtime("home", "drawing").inspect()["layers"][0]["objects"]) == 1
    )


def test_a_deleted_world_takes_its_drawing_with_it(app: Any) -> None:
    shell = app.host.shell
    shell.create_world("scratch")
    shell.switch_world("scratch")
    app.rect(0, 0, 1, 1)
    shell.switch_world("home")
    shell.delete_world("scratch")
    shell.create_world("scratch")
    shell.switch_world("scratch")
    assert app.objects() == {}


def test_every_change_is_on_disk_before_the_tool_returns(app: Any) -> None:
    obj = app.rect(3, 4, 5, 6)
    saved = app.saved_drawing().inspect()
    assert [o["id"] for o in saved["layers"][0]["objects"]] == [obj]
    app.call("undo")
    saved = app.saved_drawing().inspect()
    assert saved["layers"][0]["objects"] == []
    assert saved["redo_depth"] == 1
    assert saved == app.call("inspect")


def test_a_refused_call_writes_nothing(app: Any) -> None:
    app.rect(0, 0, 1, 1)
    wal = app.host.state_dir / "state.db-wal"
    written = wal.stat().st_size, app.saved_rows()
    with pytest.raises(ToolCallError):
        app.call("delete_layer", layer="layer-1")
    app.call("set_tool", tool="select")  # no change either
    assert (wal.stat().st_size, app.saved_rows()) == written


def test_a_change_writes_only_the_rows_it_changed(app: Any) -> None:
    for i in range(30):
        app.rect(i, 0, 1, 1)
    before = app.saved_rows()
    app.call("select", ids=["obj-3"])
    app.call("update_selection_style", fill="#00ff00")
    after = app.saved_rows()
    changed = {k for k in {*before, *after} if before.get(k) != after.get(k)}
    assert changed == {"doc", "object/obj-3", "undo/0000000031", "undo/0000000032"}
    # The undo step holds the one object as it was and as it became, not the document.
    assert set(after["undo/0000000032"]["rows"]) == {"object/obj-3"}


def test_a_saved_drawing_of_another_format_is_refused_clearly(
    tmp_path: Path, make_app: Callable[..., Any]
) -> None:
    path = tmp_path / "state" / "worlds" / "home" / "drawing.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"format": 99}), encoding="utf-8")
    again = make_app()
    with pytest.raises(ToolCallError, match="delete the saved drawing file"):
        again.call("inspect")


def test_history_on_disk_is_bounded_deltas_and_survives_a_restart(
    make_app: Callable[..., Any],
) -> None:
    app = make_app()
    for i in range(130):
        app.rect(i, 0, 1, 1)
    rows = app.saved_rows()
    steps = sorted(k for k in rows if k.startswith("undo/"))
    assert len(steps) == 100 and steps[0] == "undo/0000000031"
    # Each step holds the one object it inserted, not the document.
    assert all(set(rows[k]["rows"]) == {f"object/obj-{int(k[5:])}"} for k in steps)
    app.call("undo")
    app.call("undo")
    rows = app.saved_rows()
    assert sorted(k for k in rows if k.startswith("redo/")) == [
        "redo/0000000129",
        "redo/0000000130",
    ]
    before = app.call("inspect")
    again = make_app()
    assert again.call("inspect") == before
    assert again.call("redo")["redone"] == "insert rect obj-129 on layer-1"
    again.rect(0, 9, 1, 1)  # a new change clears what could be redone, on disk too
    assert not [k for k in again.saved_rows() if k.startswith("redo/")]
    assert again.call("inspect")["undo_depth"] == 100
