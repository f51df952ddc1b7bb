"""bootstrap(): plugins in; a manager, sync and tool registry holding the active tools out."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from agent_presets import (
    PresetManager,
    PresetMcpSync,
    PresetRegistry,
    ToolAdapter,
    ToolAdapterRegistry,
    ToolRegistry,
    bootstrap,
    hookimpl,
)
from agent_presets.lib.model import ToolDef

SCENE: dict[str, Any] = {"surface": "scene", "activity": None, "canvas_visible": False}
DRAWING: dict[str, Any] = {"surface": "canvas", "activity": "drawing", "canvas_visible": True}

PRESETS_YAML = """\
presets:
  - name: scene-tools
    group: scene
    default_state: auto
    risk: normal
    contexts: [{surface: scene}]
    tool_ids: [scene.add-cube, scene.set-light]
    system_prompt: The user is building a 3D scene.
  - name: drawing-tools
    group: drawing
    default_state: auto
    risk: normal
    contexts: [{surface: canvas, activity: drawing}]
    tool_ids: [drawing.insert-shape]
  - name: general-tools
    default_state: auto
    risk: normal
    contexts: [{surface: any}]
    tool_ids: [app.set-theme]
  - name: shell-tools
    default_state: off
    risk: shell
    contexts: [{surface: any}]
    tool_ids: [app.run-bash]
"""

TOOL_IDS = [
    "scene.add-cube",
    "scene.set-light",
    "drawing.insert-shape",
    "app.set-theme",
    "app.run-bash",
]


def make_adapter(tool_id: str) -> ToolAdapter:
    name = "space_" + tool_id.replace(".", "_").replace("-", "_")
    return ToolAdapter(
        tool_id, name, f"Tool {tool_id}.", {"type": "object"}, lambda app, a: (tool_id, app)
    )


class PresetFiles:
    """A plugin that ships only YAML."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @hookimpl
    def presets_preset_files(self) -> list[Path]:
        return [self.path]


class Adapters:
    """A plugin that ships only adapters."""

    def __init__(self, tool_ids: list[str]) -> None:
        self.tool_ids = tool_ids

    @hookimpl
    def presets_tool_adapters(self) -> list[ToolAdapter]:
        return [make_adapter(t) for t in self.tool_ids]


@pytest.fixture
def plugins(tmp_path: Path) -> list[object]:
    path = tmp_path / "presets.yaml"
    path.write_text(PRESETS_YAML, encoding="utf-8")
    return [PresetFiles(path), Adapters(TOOL_IDS)]


def test_bootstrap_wires_manager_sync_and_tool_registry(plugins):
    app = SimpleNamespace()
    presets = bootstrap(app, plugins=plugins)

    assert isinstance(presets.manager, PresetManager)
    assert isinstance(presets.registry, PresetRegistry)
    assert isinstance(presets.tool_adapters, ToolAdapterRegistry)
    assert isinstance(presets.tool_registry, ToolRegistry)
    assert isinstance(presets.sync, PresetMcpSync)
    assert presets.manager.registry is presets.registry
    assert presets.manager.tool_adapters is presets.tool_adapters
    assert presets.manager.app is app
    assert presets.sync.manager is presets.manager
    assert presets.sync.tool_registry is presets.tool_registry
    assert presets.sync.status()["started"] is True
    assert [p.name for p in presets.plugins.plugins] == ["PresetFiles", "Adapters"]
    assert presets.problems == []
    assert presets.registry.names() == [
        "scene-tools",
        "drawing-tools",
        "general-tools",
        "shell-tools",
    ]
    assert sorted(a.id for a in presets.tool_adapters.list()) == sorted(TOOL_IDS)


def test_the_tool_registry_holds_exactly_the_active_tools(plugins):
    presets = bootstrap(SimpleNamespace(), plugins=plugins, context=SCENE)
    active = sorted(t.name for t in presets.manager.get_tool_defs())
    assert active == ["space_app_set_theme", "space_scene_add_cube", "space_scene_set_light"]
    assert presets.tool_registry.names() == active


def test_an_app_without_a_context_starts_from_an_empty_one(plugins):
    # The core names no context field, so it invents none: only 'any' patterns match.
    presets = bootstrap(SimpleNamespace(), plugins=plugins)
    assert presets.manager.get_context() == {}


def test_the_tool_registry_follows_context_and_overrides(plugins):
    presets = bootstrap(SimpleNamespace(), plugins=plugins)
    presets.manager.set_context(DRAWING)
    assert presets.tool_registry.names() == ["space_app_set_theme", "space_drawing_insert_shape"]
    presets.manager.set_override("shell-tools", "on")
    assert presets.tool_registry.names() == [
        "space_app_run_bash",
        "space_app_set_theme",
        "space_drawing_insert_shape",
    ]
    assert presets.tool_registry.names() == sorted(t.name for t in presets.manager.get_tool_defs())


def test_tools_run_their_handler_with_the_app(plugins):
    app = SimpleNamespace(name="the app")
    presets = bootstrap(app, plugins=plugins)
    assert presets.tool_registry.get("space_app_set_theme").run({}) == ("app.set-theme", app)


def test_bootstrap_keeps_the_hosts_own_tools_in_a_given_registry(plugins):
    tools = ToolRegistry("space_")
    ping = ToolDef("space_ping", "ping", {"type": "object"}, lambda a: "pong")
    tools.register(ping)
    presets = bootstrap(SimpleNamespace(), plugins=plugins, tool_registry=tools)
    assert presets.tool_registry is tools
    assert "space_ping" in tools and tools.get("space_ping") is ping
    presets.sync.stop()
    assert tools.names() == ["space_ping"]


def test_bootstrap_takes_the_context_from_the_app_when_it_has_one(plugins):
    app = SimpleNamespace(context=lambda: dict(DRAWING))
    presets = bootstrap(app, plugins=plugins)
    assert presets.manager.get_context() == DRAWING
    assert "space_drawing_insert_shape" in presets.tool_registry


def test_an_explicit_context_overrides_and_owner_are_used(plugins):
    presets = bootstrap(
        SimpleNamespace(context=lambda: dict(SCENE)),
        plugins=plugins,
        context=DRAWING,
        overrides={"shell-tools": "on"},
        owner="my-app",
    )
    assert presets.manager.get_context() == DRAWING
    assert presets.manager.get_overrides() == {"shell-tools": "on"}
    assert {presets.tool_registry.owner_of(n) for n in presets.tool_registry.names()} == {"my-app"}
    assert "space_app_run_bash" in presets.tool_registry


class MoreFiles(PresetFiles):
    """A second YAML-only plugin (plugin objects are named by their class)."""


def test_bootstrap_skips_an_invalid_preset_and_keeps_the_rest(tmp_path, plugins):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "presets:\n"
        "  - {name: risky, default_state: auto, risk: shell, contexts: [{surface: any}],"
        " tool_ids: [app.run-bash]}\n",
        encoding="utf-8",
    )
    presets = bootstrap(SimpleNamespace(), plugins=[*plugins, MoreFiles(bad)])
    [problem] = presets.problems
    assert "'risky' has risk 'shell' and must use default_state: off" in str(problem)
    assert str(problem).startswith(f"{bad}:2:")
    assert "risky" not in presets.registry
    assert len(presets.registry) == 4


# ------------------------------------------------------------------ the hooks, one test each


def test_hook_presets_preset_files_supplies_yaml_from_each_plugin(tmp_path):
    first = tmp_path / "first.yaml"
    first.write_text(
        "presets:\n  - {name: first-tools, default_state: off, risk: normal, contexts: [],"
        " tool_ids: [first.tool]}\n",
        encoding="utf-8",
    )
    second = tmp_path / "second.yaml"
    second.write_text(
        "presets:\n  - {name: second-tools, default_state: off, risk: normal, contexts: [],"
        " tool_ids: [second.tool]}\n",
        encoding="utf-8",
    )

    presets = bootstrap(
        SimpleNamespace(),
        plugins=[PresetFiles(first), MoreFiles(second), Adapters(["first.tool", "second.tool"])],
    )
    assert presets.registry.names() == ["first-tools", "second-tools"]
    assert presets.preset_plugin == {"first-tools": "PresetFiles", "second-tools": "MoreFiles"}
    assert presets.registry.get("second-tools").source.endswith("second.yaml")


def test_hook_presets_tool_adapters_supplies_the_runtime_half(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(
        "presets:\n  - {name: p-tools, default_state: auto, risk: normal,"
        " contexts: [{surface: any}], tool_ids: [p.one, p.two]}\n",
        encoding="utf-8",
    )

    class One:
        @hookimpl
        def presets_tool_adapters(self) -> list[ToolAdapter]:
            return [make_adapter("p.one")]

    class Two:
        @hookimpl
        def presets_tool_adapters(self) -> tuple[ToolAdapter, ...]:
            return (make_adapter("p.two"),)

    presets = bootstrap(SimpleNamespace(), plugins=[PresetFiles(path), One(), Two()])
    assert presets.problems == []
    assert presets.tool_adapters.get("p.one").source == "One"
    assert presets.tool_adapters.get("p.two").source == "Two"
    assert presets.tool_registry.names() == ["space_p_one", "space_p_two"]


def test_bootstrap_with_no_plugins_serves_nothing():
    presets = bootstrap(SimpleNamespace(), plugins=[])
    assert presets.tool_registry.names() == []
    assert presets.manager.resolve().active_presets == ()
