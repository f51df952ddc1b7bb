"""Theme, surface, activity, canvas and worlds, driven through the manager's tool defs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import agent_presets_general
from agent_presets import ToolAdapter, ToolArgumentError, ToolCallError, hookimpl
from agent_presets_general import SpaceHost

if TYPE_CHECKING:
    from conftest import GeneralApp

DRAWING_PRESET = """\
presets:
  - name: test-drawing-tools
    default_state: auto
    risk: normal
    contexts:
      - {surface: canvas, activity: drawing}
    tool_ids: [testdraw.pen]
"""


class DrawingPlugin:
    """A plugin object whose one tool exists only on the canvas while drawing."""

    def __init__(self, directory: Path) -> None:
        self.file = directory / "drawing.yaml"
        self.file.write_text(DRAWING_PRESET)

    @hookimpl
    def presets_preset_files(self) -> Sequence[Path]:
        return [self.file]

    @hookimpl
    def presets_context_fields(self) -> Sequence[dict[str, Any]]:
        return [{"name": "activity", "type": "string", "values": ["drawing"]}]

    @hookimpl
    def presets_tool_adapters(self) -> Sequence[ToolAdapter]:
        return [
            ToolAdapter(
                id="testdraw.pen",
                mcp_name="space_test_pen",
                description="Pick the pen.",
                input_schema={"type": "object", "properties": {}},
                handler=lambda app, arguments: "pen",
            )
        ]


def test_set_theme_changes_the_shell_and_returns_its_state(general_app: GeneralApp) -> None:
    state = general_app.call("space_app_set_theme", theme="dark")
    assert state["theme"] == "dark"
    assert general_app.host.shell.theme == "dark"


def test_unknown_theme_is_refused_by_the_schema(general_app: GeneralApp) -> None:
    with pytest.raises(ToolArgumentError, match="theme"):
        general_app.call("space_app_set_theme", theme="neon")
    with pytest.raises(ToolArgumentError):
        general_app.call("space_app_set_theme", theme="dark", extra=1)
    assert general_app.host.shell.theme == "light"


def test_surface_and_activity_reach_the_manager_context_and_the_tool_list(
    make_general_app: Callable[..., GeneralApp], tmp_path: Path
) -> None:
    app = make_general_app([DrawingPlugin(tmp_path)])
    assert "space_test_pen" not in app.tools()

    app.call("space_app_switch_surface", surface="canvas")
    context = app.manager.get_context()
    assert context["surface"] == "canvas"
    assert context["canvas_visible"] is True
    assert "space_test_pen" not in app.tools()

    app.call("space_app_set_activity", activity="drawing")
    assert app.manager.get_context()["activity"] == "drawing"
    assert "space_test_pen" in app.tools()
    assert "space_test_pen" in app.presets.tool_registry.names()
    assert app.call("space_test_pen") == "pen"

    app.call("space_app_set_activity", activity=None)
    assert app.manager.get_context()["activity"] is None
    assert "space_test_pen" not in app.presets.tool_registry.names()

    app.call("space_app_set_activity", activity="drawing")
    app.call("space_app_switch_surface", surface="scene")
    assert "space_test_pen" not in app.presets.tool_registry.names()


def test_set_canvas_visible_changes_the_context(general_app: GeneralApp) -> None:
    general_app.call("space_app_set_canvas_visible", visible=True)
    assert general_app.manager.get_context()["canvas_visible"] is True
    general_app.call("space_app_set_canvas_visible", visible=False)
    assert general_app.manager.get_context()["canvas_visible"] is False
    with pytest.raises(ToolArgumentError):
        general_app.call("space_app_set_canvas_visible", visible="yes")


def test_bad_surface_and_activity_are_refused_and_change_nothing(general_app: GeneralApp) -> None:
    before = general_app.manager.get_context()
    with pytest.raises(ToolArgumentError, match="surface"):
        general_app.call("space_app_switch_surface", surface="desktop")
    with pytest.raises(ToolArgumentError, match="activity"):
        general_app.call("space_app_set_activity", activity="Drawing Now")
    with pytest.raises(ToolArgumentError):
        general_app.call("space_app_set_activity")
    assert general_app.manager.get_context() == before


def test_shell_state_survives_a_restart(general_app: GeneralApp) -> None:
    general_app.call("space_app_set_theme", theme="high-contrast")
    general_app.call("space_app_switch_surface", surface="canvas")
    general_app.call("space_app_set_activity", activity="graph")

    general_app.host.close()
    again = SpaceHost(general_app.state_dir, root=general_app.root)
    presets = again.start(plugins=[agent_presets_general])
    assert again.shell.theme == "high-contrast"
    context = presets.manager.get_context()
    assert (context["surface"], context["activity"]) == ("canvas", "graph")


def _worlds(app: GeneralApp) -> tuple[str, list[str]]:
    return app.host.shell.world, list(app.host.shell.worlds)


def test_world_tools_create_switch_and_delete(general_app: GeneralApp) -> None:
    general_app.enable("general-world-tools")
    state = general_app.call("space_app_create_world", name="moon")
    assert state["worlds"] == ["home", "moon"]
    assert state["world"] == "home"

    state = general_app.call("space_app_switch_world", name="moon")
    assert state["world"] == "moon"
    assert general_app.manager.get_context()["world_id"] == "moon"

    general_app.call("space_app_delete_world", name="home")
    assert _worlds(general_app) == ("moon", ["moon"])


def test_deleting_the_current_world_is_refused(general_app: GeneralApp) -> None:
    general_app.enable("general-world-tools")
    general_app.call("space_app_create_world", name="moon")
    with pytest.raises(ToolCallError, match="current world; switch to another"):
        general_app.call("space_app_delete_world", name="home")
    assert _worlds(general_app) == ("home", ["home", "moon"])


@pytest.mark.parametrize(
    ("tool", "name", "error"),
    [
        ("space_app_create_world", "home", "already exists"),
        ("space_app_switch_world", "mars", "no world named 'mars'"),
        ("space_app_delete_world", "mars", "no world named 'mars'"),
    ],
)
def test_world_errors_change_nothing(
    general_app: GeneralApp, tool: str, name: str, error: str
) -> None:
    general_app.enable("general-world-tools")
    with pytest.raises(ToolCallError, match=error):
        general_app.call(tool, name=name)
    assert _worlds(general_app) == ("home", ["home"])


def test_bad_world_names_are_refused_by_the_schema(general_app: GeneralApp) -> None:
    general_app.enable("general-world-tools")
    for bad in ("", "../up", "-dash", "x" * 65):
        with pytest.raises(ToolArgumentError):
            general_app.call("space_app_create_world", name=bad)
    assert _worlds(general_app) == ("home", ["home"])


def test_worlds_survive_a_restart(general_app: GeneralApp) -> None:
    general_app.enable("general-world-tools")
    general_app.call("space_app_create_world", name="moon")
    general_app.call("space_app_switch_world", name="moon")
    general_app.host.close()
    again = SpaceHost(general_app.state_dir, root=general_app.root)
    again.start(plugins=[agent_presets_general])
    assert (again.shell.world, again.shell.worlds) == ("moon", ["home", "moon"])


def test_handlers_fetch_the_shell_at_call_time(general_app: GeneralApp) -> None:
    tool = general_app.tools()["space_app_set_theme"]
    # Replace the shell after the tool was resolved: the tool must act on the new one.
    replacement = _RecordingShell()
    general_app.host._attached["shell"] = replacement  # the shell is the host's "shell" runtime
    assert tool.run({"theme": "dark"})["theme"] == "dark"
    assert replacement.calls == [("set_theme", "dark")]


class _RecordingShell:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def set_theme(self, theme: str) -> dict[str, Any]:
        self.calls.append(("set_theme", theme))
        # The whole shell state, as the tool's output schema (and ShellRuntime) asks.
        return {
            "surface": "scene",
            "activity": None,
            "canvas_visible": False,
            "theme": theme,
            "world": "home",
            "worlds": ["home"],
        }
