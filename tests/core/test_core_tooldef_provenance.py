"""Each managed ToolDef carries its providing preset and its effective risk."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from agent_presets import bootstrap
from agent_presets.lib.model import ToolDef

SCENE = {"surface": "scene", "activity": None, "canvas_visible": False}
DRAWING = {"surface": "canvas", "activity": "drawing", "canvas_visible": True}
GRAPH = {"surface": "canvas", "activity": "graph", "canvas_visible": True}


def by_name(defs: list[ToolDef]) -> dict[str, ToolDef]:
    return {d.name: d for d in defs}


def test_builtin_tools_carry_their_preset_and_risk() -> None:
    on = {"general-file-write-tools": "on", "scene-state-tools": "on"}
    presets = bootstrap(None, context=SCENE, overrides=on)
    defs = by_name(presets.manager.get_tool_defs())

    write = defs["space_app_write_file"]
    assert (write.preset, write.risk) == ("general-file-write-tools", "filesystem-write")
    restore = defs["space_scene_restore_state"]
    assert (restore.preset, restore.risk) == ("scene-state-tools", "destructive")
    # Read-only in a destructive preset: it changes nothing, so it has no risk.
    get_state = defs["space_scene_get_state"]
    assert (get_state.preset, get_state.risk) == ("scene-state-tools", None)
    # What the tool registry serves is the very same stamped definition.
    assert presets.tool_registry.get("space_scene_get_state") == get_state


def test_every_managed_tool_names_an_active_preset_that_lists_it() -> None:
    presets = bootstrap(None, context=DRAWING)
    active = {a.name: a for a in presets.manager.get_active_presets()}
    for tool in presets.manager.get_tool_defs():
        assert tool.preset in active, tool.name
        preset = presets.registry.get(tool.preset)
        assert preset is not None and tool.managed_source in preset.tool_ids
        read_only = tool.annotations.get("readOnlyHint") is True
        assert tool.risk == (None if read_only else active[tool.preset].risk), tool.name


def test_a_host_tool_has_no_preset_and_no_risk(make_host_tool: Callable[..., ToolDef]) -> None:
    tool = make_host_tool("space_ping")
    assert (tool.preset, tool.risk) == (None, None)


def test_a_read_only_tool_has_no_risk_whatever_its_preset(
    make_stack: Callable[..., Any],
    make_preset: Callable[..., Any],
    make_adapter: Callable[..., Any],
) -> None:
    stack = make_stack(
        [
            make_preset(
                "wipe-tools", ["wipe.peek", "wipe.all"], risk="destructive", default_state="off"
            ),
        ],
        [replace(make_adapter("wipe.peek"), annotations={"readOnlyHint": True})],
    )
    stack.manager.set_override("wipe-tools", "on")
    defs = by_name(stack.manager.get_tool_defs())
    assert (defs["space_wipe_peek"].preset, defs["space_wipe_peek"].risk) == ("wipe-tools", None)
    assert (defs["space_wipe_all"].preset, defs["space_wipe_all"].risk) == (
        "wipe-tools",
        "destructive",
    )


def test_a_tool_that_moves_to_another_preset_is_served_with_the_new_one(
    make_stack: Callable[..., Any], make_preset: Callable[..., Any]
) -> None:
    stack = make_stack(
        [
            make_preset("draw-history", ["app.undo"], contexts=[{"activity": "drawing"}]),
            make_preset(
                "graph-history",
                ["app.undo"],
                contexts=[{"activity": "graph"}],
                risk="filesystem-read",
            ),
        ],
        context=DRAWING,
    )
    before = stack.tools.get("space_app_undo")
    assert before is not None and (before.preset, before.risk) == ("draw-history", "normal")

    stack.manager.set_context(GRAPH)

    after = stack.tools.get("space_app_undo")
    assert after is not None and (after.preset, after.risk) == ("graph-history", "filesystem-read")
    assert stack.sync.last_report.replaced == ("space_app_undo",)


def test_an_unchanged_resolution_reuses_the_same_tool_defs(
    make_stack: Callable[..., Any], make_preset: Callable[..., Any]
) -> None:
    stack = make_stack([make_preset("notes-tools", ["notes.add"])])
    first = stack.manager.get_tool_defs()
    stack.manager.set_context({**SCENE, "world_id": "home"})
    assert all(a is b for a, b in zip(first, stack.manager.get_tool_defs(), strict=True))
