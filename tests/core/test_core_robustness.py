"""Failure paths found in review: one bad part must not take the rest down or leave it stale."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_presets import PresetError, ToolRegistry, bootstrap, hookimpl
from agent_presets.lib.explain import explain_tool
from agent_presets.lib.listeners import call_listeners
from agent_presets.lib.plugins import load_plugins
from agent_presets_general import SpaceHost

from .conftest import SCENE, build_adapter, build_preset


def test_the_package_bootstrap_is_the_function_even_after_the_module_is_imported() -> None:
    import importlib

    importlib.import_module("agent_presets.lib.boot")
    import agent_presets
    from agent_presets import bootstrap

    assert callable(agent_presets.bootstrap) and bootstrap is agent_presets.bootstrap
    assert bootstrap.__name__ == "bootstrap" and bootstrap.__module__ == "agent_presets.lib.boot"


def test_a_failing_listener_does_not_silence_the_others() -> None:
    heard: list[int] = []

    def broken(value: int) -> None:
        raise RuntimeError("listener bug")

    with pytest.raises(RuntimeError, match="listener bug"):
        call_listeners([broken, heard.append, broken], 7)
    assert heard == [7]


def test_tool_registry_listeners_all_hear_a_change_when_one_fails() -> None:
    registry = ToolRegistry("space_")
    heard: list[Any] = []
    registry.add_on_change(lambda change: (_ for _ in ()).throw(RuntimeError("boom")))
    registry.add_on_change(heard.append)
    tool = build_adapter("x.tool")
    from agent_presets import ToolAdapterRegistry

    adapters = ToolAdapterRegistry(None)
    adapters.register(tool)
    with pytest.raises(RuntimeError):
        registry.register(adapters.resolve("x.tool"))
    assert [c.added for c in heard] == [("space_x_tool",)]


class _Plugin:
    def __init__(self, name: str) -> None:
        self.preset = build_preset(name, [f"{name.replace('-', '_')}.tool"])

    @hookimpl
    def presets_tool_adapters(self) -> list[Any]:
        return [build_adapter(self.preset.tool_ids[0])]


def test_two_instances_of_one_plugin_class_both_load() -> None:
    plugin_set = load_plugins([_Plugin("one"), _Plugin("two")])
    assert plugin_set.problems == []
    assert [p.name for p in plugin_set.plugins] == ["_Plugin", "_Plugin#2"]


class _RaisingFiles:
    @hookimpl
    def presets_preset_files(self) -> list[Any]:
        raise OSError("disk on fire")


class _GoodAdapters:
    @hookimpl
    def presets_tool_adapters(self) -> list[Any]:
        return [build_adapter("good.tool")]


def test_a_hook_that_raises_is_reported_and_the_other_plugins_still_load() -> None:
    presets = bootstrap(None, plugins=[_RaisingFiles(), _GoodAdapters()], context=SCENE)
    assert presets.tool_adapters.get("good.tool") is not None
    [problem] = presets.problems
    assert "_RaisingFiles" in str(problem) and "disk on fire" in str(problem)


class _RaisingRuntime:
    @hookimpl
    def presets_headless_runtime(self, host: Any) -> None:
        raise RuntimeError("runtime bug")


def test_a_runtime_hook_that_raises_is_reported_and_the_host_still_starts(tmp_path: Path) -> None:
    host = SpaceHost(tmp_path / "state")
    presets = host.start([_RaisingRuntime(), _GoodAdapters()])
    assert any("runtime bug" in str(p) for p in presets.plugins.problems)


def test_a_runtime_hook_that_raises_is_fatal_in_strict_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRESETS_STRICT", "1")
    with pytest.raises(PresetError, match="runtime bug"):
        SpaceHost(tmp_path / "state").start([_RaisingRuntime()])


@pytest.mark.parametrize(
    ("saved", "fragment"),
    [
        ({"worlds": "abc"}, "'worlds' is 'abc'"),
        ({"surface": ""}, "'surface' is ''"),
        ({"canvas_visible": "yes"}, "'canvas_visible' is 'yes'"),
        ({"world": "mars", "worlds": ["home"]}, "'world' is 'mars'"),
        ([1, 2], "expected a JSON object"),
    ],
)
def test_a_mistyped_shell_file_is_refused_naming_the_file_and_field(
    tmp_path: Path, saved: Any, fragment: str
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "shell.json").write_text(json.dumps(saved))
    with pytest.raises(PresetError) as info:
        SpaceHost(state)
    assert "shell.json" in str(info.value)
    assert fragment in str(info.value)
    assert "delete it" in str(info.value)


class _OffPlugin:
    @hookimpl
    def presets_tool_adapters(self) -> list[Any]:
        return [build_adapter("risky.tool")]


def test_explain_a_forced_off_off_by_default_preset_says_turn_it_on() -> None:
    from agent_presets import PresetManager, PresetRegistry, ToolAdapterRegistry

    registry = PresetRegistry()
    registry.register(build_preset("risky", ["risky.tool"], default_state="off", risk="shell"))
    adapters = ToolAdapterRegistry(None)
    adapters.register(build_adapter("risky.tool"))
    manager = PresetManager(registry, adapters, None, SCENE, {"risky": "off"})
    [verdict] = explain_tool(manager, "risky.tool").presets
    assert verdict.enable == "set preset 'risky' back to on"
