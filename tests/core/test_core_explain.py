"""explain_tool: why a tool is or is not active, and what would turn it on."""

from __future__ import annotations

from typing import Any

import pytest

from agent_presets.lib.explain import explain_tool

DRAWING: dict[str, Any] = {"surface": "canvas", "activity": "drawing", "canvas_visible": True}
GRAPH: dict[str, Any] = {"surface": "canvas", "activity": "graph", "canvas_visible": True}


@pytest.fixture
def stack(make_stack, make_preset, make_adapter):
    return make_stack(
        [
            make_preset(
                "drawing-tools",
                ["drawing.undo", "drawing.shape"],
                contexts=[{"surface": "canvas", "activity": "drawing"}],
            ),
            make_preset("graph-tools", ["graph.undo"], contexts=[{"activity": "graph"}]),
            make_preset("shell-tools", ["app.bash"], default_state="off", risk="shell"),
            make_preset("idle-tools", ["app.idle"], contexts=[{"activity": "none"}]),
        ],
        [
            make_adapter("drawing.undo", "space_undo"),
            make_adapter("graph.undo", "space_undo"),
            make_adapter("app.lonely"),
        ],
    )


def test_an_inactive_tool_says_which_context_would_enable_it(stack):
    explanation = explain_tool(stack.manager, "space_drawing_shape")
    assert explanation.known and not explanation.active
    assert explanation.tool_id == "drawing.shape"
    [verdict] = explanation.presets
    assert verdict.preset == "drawing-tools"
    assert verdict.reason == (
        "the current context does not match {surface=canvas, activity=drawing}"
    )
    assert verdict.enable.startswith("switch to the canvas surface and set the activity to drawing")
    assert "turn on preset 'drawing-tools'" in verdict.enable
    assert "To enable it: switch to the canvas surface" in explanation.message()


def test_an_active_tool_names_the_preset_and_why(stack):
    stack.manager.set_context(DRAWING)
    explanation = explain_tool(stack.manager, "drawing.shape")
    assert explanation.active
    assert explanation.message() == (
        "tool 'space_drawing_shape' is active through preset 'drawing-tools': "
        "the current context matches {surface=canvas, activity=drawing}"
    )


def test_an_off_default_tool_says_to_turn_its_preset_on(stack):
    [verdict] = explain_tool(stack.manager, "space_app_bash").presets
    assert verdict.reason == "it is off by default (risk: shell)"
    assert verdict.enable == "turn on preset 'shell-tools' (session override shell-tools=on)"
    stack.manager.set_override("shell-tools", "on")
    [verdict] = explain_tool(stack.manager, "space_app_bash").presets
    assert verdict.active and verdict.reason == "forced on by a session override"


def test_a_tool_forced_off_says_so(stack):
    stack.manager.set_override("idle-tools", "off")
    [verdict] = explain_tool(stack.manager, "space_app_idle").presets
    assert verdict.reason == "forced off by a session override"
    assert verdict.override == "off"


def test_a_shared_mcp_name_explains_the_variant_that_is_active(stack):
    stack.manager.set_context(GRAPH)
    explanation = explain_tool(stack.manager, "space_undo")
    assert explanation.active
    assert explanation.tool_id == "graph.undo"
    assert [(v.preset, v.active) for v in explanation.presets] == [
        ("graph-tools", True),
        ("drawing-tools", False),
    ]


def test_unknown_and_unused_tools_are_explained(stack):
    unknown = explain_tool(stack.manager, "space_nothing")
    assert not unknown.known
    assert unknown.message() == "no installed plugin provides a tool named 'space_nothing'"
    lonely = explain_tool(stack.manager, "app.lonely")
    assert lonely.message() == (
        "tool 'space_app_lonely' exists but no preset includes it, so it is never active"
    )
    assert lonely.to_dict()["presets"] == []
