"""The spec's test-agent-presets-mcp list: PresetMcpSync against a ToolRegistry."""

from __future__ import annotations

from typing import Any

import pytest

from agent_presets import OwnershipError, PresetMcpSync, SyncReport
from agent_presets.lib.tools import ToolRegistryChange

SCENE: dict[str, Any] = {"surface": "scene", "activity": None, "canvas_visible": False}
DRAWING: dict[str, Any] = {"surface": "canvas", "activity": "drawing", "canvas_visible": True}
GRAPH: dict[str, Any] = {"surface": "canvas", "activity": "graph", "canvas_visible": True}


@pytest.fixture
def surfaces(make_stack, make_preset, make_host_tool):
    """Scene, drawing and graph presets, an off preset, and two foreign tools."""
    return make_stack(
        [
            make_preset(
                "scene-tools", ["scene.add", "scene.light"], contexts=[{"surface": "scene"}]
            ),
            make_preset("drawing-tools", ["drawing.shape"], contexts=[{"activity": "drawing"}]),
            make_preset("graph-tools", ["graph.node"], contexts=[{"activity": "graph"}]),
            make_preset("shell-tools", ["app.bash"], default_state="off", risk="shell"),
        ],
        foreign=[make_host_tool("space_ping"), make_host_tool("space_other", owner="other-sync")],
    )


def test_sync_registers_only_resolved_preset_tools(surfaces):
    assert surfaces.managed_names() == ["space_scene_add", "space_scene_light"]
    assert [t.name for t in surfaces.manager.get_tool_defs()] == [
        "space_scene_add",
        "space_scene_light",
    ]
    assert "space_app_bash" not in surfaces.tools
    assert "space_drawing_shape" not in surfaces.tools
    assert surfaces.sync.managed() == {
        "space_scene_add": "scene.add",
        "space_scene_light": "scene.light",
    }


def test_registered_preset_tools_carry_owner_and_source(surfaces):
    tool = surfaces.tools.get("space_scene_add")
    assert tool is not None
    assert tool.managed_owner == "agent-presets"
    assert tool.managed_source == "scene.add"
    assert surfaces.tools.owner_of("space_scene_add") == "agent-presets"


def test_start_reports_what_it_added(make_stack, make_preset):
    stack = make_stack([make_preset("scene-tools", ["scene.add"])], start=False)
    assert stack.tools.names() == []
    report = stack.sync.start()
    assert report == SyncReport(added=("space_scene_add",))
    assert report.changed


def test_sync_unregisters_only_previously_managed_tools(surfaces):
    surfaces.manager.set_context(DRAWING)
    assert surfaces.sync.last_report == SyncReport(
        added=("space_drawing_shape",), removed=("space_scene_add", "space_scene_light")
    )
    assert surfaces.tools.names() == ["space_drawing_shape", "space_other", "space_ping"]
    assert surfaces.sync.managed() == {"space_drawing_shape": "drawing.shape"}


def test_sync_does_not_unregister_a_stale_name_someone_else_took_over(surfaces, make_host_tool):
    surfaces.tools.register(make_host_tool("space_scene_light"), replace=True)
    surfaces.manager.set_context(DRAWING)
    assert surfaces.tools.owner_of("space_scene_light") is None
    assert "space_scene_light" not in surfaces.sync.last_report.removed
    assert "space_scene_light" not in surfaces.sync.managed()


@pytest.mark.parametrize("steps", [[DRAWING], [DRAWING, GRAPH], [GRAPH, SCENE, DRAWING]])
def test_sync_preserves_unrelated_tools(surfaces, steps):
    ping = surfaces.tools.get("space_ping")
    other = surfaces.tools.get("space_other")
    for context in steps:
        surfaces.manager.set_context(context)
        surfaces.manager.set_override("shell-tools", "on")
        surfaces.manager.set_override("shell-tools", "auto")
        assert surfaces.tools.get("space_ping") is ping
        assert surfaces.tools.get("space_other") is other
    surfaces.sync.stop()
    assert surfaces.tools.names() == ["space_other", "space_ping"]
    assert surfaces.tools.owner_of("space_ping") is None
    assert surfaces.tools.owner_of("space_other") == "other-sync"


def test_sync_reregisters_when_the_source_tool_id_changes_for_the_same_mcp_name(
    make_stack, make_preset, make_adapter
):
    calls = []
    stack = make_stack(
        [
            make_preset("drawing-undo", ["drawing.undo"], contexts=[{"activity": "drawing"}]),
            make_preset("graph-undo", ["graph.undo"], contexts=[{"activity": "graph"}]),
        ],
        [
            make_adapter("drawing.undo", "space_undo", handler=lambda app, a: calls.append("d")),
            make_adapter("graph.undo", "space_undo", handler=lambda app, a: calls.append("g")),
        ],
        context=DRAWING,
    )
    before = stack.tools.get("space_undo")
    assert before is not None and before.managed_source == "drawing.undo"
    before.run({})

    stack.manager.set_context(GRAPH)

    assert stack.sync.last_report == SyncReport(replaced=("space_undo",))
    after = stack.tools.get("space_undo")
    assert after is not None and after is not before
    assert after.managed_source == "graph.undo"
    assert stack.sync.managed() == {"space_undo": "graph.undo"}
    after.run({})
    assert calls == ["d", "g"]
    assert stack.notifications == [ToolRegistryChange(replaced=("space_undo",))]


def test_sync_fails_on_an_unmanaged_name_collision_at_start_and_changes_nothing(
    make_stack, make_preset, make_host_tool
):
    stack = make_stack(
        [make_preset("scene-tools", ["scene.add", "scene.ping"])],
        foreign=[make_host_tool("space_scene_ping")],
        start=False,
    )
    with pytest.raises(OwnershipError) as info:
        stack.sync.start()
    assert "'space_scene_ping'" in str(info.value)
    assert "the host" in str(info.value)
    assert stack.tools.names() == ["space_scene_ping"]
    assert stack.tools.owner_of("space_scene_ping") is None
    assert stack.notifications == []
    assert stack.sync.managed() == {}


def test_sync_fails_on_a_collision_with_another_owner_during_a_context_change(
    make_stack, make_preset, make_host_tool
):
    stack = make_stack(
        [
            make_preset("scene-tools", ["scene.add"], contexts=[{"surface": "scene"}]),
            make_preset("drawing-tools", ["drawing.shape"], contexts=[{"activity": "drawing"}]),
        ],
        foreign=[make_host_tool("space_drawing_shape", owner="someone-else")],
    )
    before = {n: stack.tools.get(n) for n in stack.tools.names()}
    with pytest.raises(OwnershipError, match="someone-else"):
        stack.manager.set_context(DRAWING)
    assert {n: stack.tools.get(n) for n in stack.tools.names()} == before
    assert stack.notifications == []
    assert stack.sync.managed() == {"space_scene_add": "scene.add"}


def test_a_collision_with_another_sync_of_the_same_owner_changes_nothing(make_stack, make_preset):
    stack = make_stack(
        [
            make_preset("scene-tools", ["scene.add"], contexts=[{"surface": "scene"}]),
            make_preset("drawing-tools", ["drawing.shape"], contexts=[{"activity": "drawing"}]),
        ]
    )
    rival_stack = make_stack(
        [make_preset("rival-tools", ["drawing.shape"])], context=DRAWING, start=False
    )
    rival = PresetMcpSync(rival_stack.manager, stack.tools, owner="agent-presets")
    rival.start()
    assert stack.tools.get("space_drawing_shape").managed_owner == "agent-presets"
    stack.notifications.clear()
    before = {n: stack.tools.get(n) for n in stack.tools.names()}

    with pytest.raises(OwnershipError):
        stack.manager.set_context(DRAWING)

    assert {n: stack.tools.get(n) for n in stack.tools.names()} == before
    assert stack.notifications == []


def test_each_sync_that_changes_anything_emits_exactly_one_list_changed(surfaces):
    surfaces.manager.set_context(DRAWING)  # two removed, one added: still one notification
    assert surfaces.notifications == [
        ToolRegistryChange(
            added=("space_drawing_shape",), removed=("space_scene_add", "space_scene_light")
        )
    ]
    surfaces.manager.set_override("shell-tools", "on")
    assert len(surfaces.notifications) == 2
    assert surfaces.notifications[-1] == ToolRegistryChange(added=("space_app_bash",))


def test_a_sync_that_changes_nothing_emits_no_list_changed(surfaces):
    assert surfaces.sync.sync() == SyncReport()
    assert not surfaces.sync.last_report.changed
    surfaces.manager.set_context({**SCENE, "world_id": "lab"})  # no pattern mentions it
    surfaces.manager.set_override("graph-tools", "off")  # overrides change, tools do not
    assert surfaces.notifications == []


def test_list_changed_reaches_every_tool_registry_listener_and_stops_when_removed(surfaces):
    heard: list[ToolRegistryChange] = []
    surfaces.tools.add_on_change(heard.append)
    surfaces.manager.set_context(DRAWING)
    surfaces.tools.remove_on_change(heard.append)
    surfaces.manager.set_context(GRAPH)
    assert len(heard) == 1
    assert len(surfaces.notifications) == 2


def test_stop_removes_exactly_what_sync_added(surfaces):
    surfaces.manager.set_override("shell-tools", "on")
    added = set(surfaces.sync.managed())
    assert added == {"space_scene_add", "space_scene_light", "space_app_bash"}
    surfaces.notifications.clear()

    report = surfaces.sync.stop()

    assert set(report.removed) == added
    assert surfaces.tools.names() == ["space_other", "space_ping"]
    assert surfaces.sync.managed() == {}
    assert len(surfaces.notifications) == 1
    # Stopped: later changes no longer reach the tool registry.
    surfaces.manager.set_context(DRAWING)
    assert surfaces.tools.names() == ["space_other", "space_ping"]


def test_stop_leaves_a_managed_name_the_host_took_over(surfaces, make_host_tool):
    host_version = make_host_tool("space_scene_add")
    surfaces.tools.register(host_version, replace=True)
    report = surfaces.sync.stop()
    assert report.removed == ("space_scene_light",)
    assert surfaces.tools.get("space_scene_add") is host_version


def test_restart_after_stop_registers_the_current_tools_again(surfaces):
    surfaces.sync.stop()
    surfaces.manager.set_context(DRAWING)
    report = surfaces.sync.start()
    assert report.added == ("space_drawing_shape",)
    assert surfaces.tools.names() == ["space_drawing_shape", "space_other", "space_ping"]


def test_sync_restores_a_managed_tool_someone_unregistered(surfaces):
    surfaces.tools.unregister("space_scene_add")
    report = surfaces.sync.sync()
    assert report.replaced == ("space_scene_add",)
    assert surfaces.tools.owner_of("space_scene_add") == "agent-presets"


def test_status_reports_owner_and_last_sync(surfaces):
    surfaces.manager.set_context(DRAWING)
    status = surfaces.sync.status()
    assert status["owner"] == "agent-presets"
    assert status["started"] is True
    assert status["managed"] == 1
    assert status["last_sync"]["added"] == ["space_drawing_shape"]
