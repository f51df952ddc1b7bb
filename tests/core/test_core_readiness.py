"""A preset whose runtime is not ready (the shell without its sandbox) is never turned on."""

from __future__ import annotations

from typing import Any

import pytest

from agent_presets import (
    Preset,
    PresetManager,
    PresetRegistry,
    PresetValidationError,
    ToolAdapter,
    ToolAdapterRegistry,
    object_schema,
)


class Runner:
    def __init__(self, ok: bool) -> None:
        self.ok = ok

    def readiness(self) -> tuple[bool, str]:
        return (True, "ready") if self.ok else (False, "install the 'bubblewrap' package")

    def run(self, args: dict[str, Any]) -> str:
        return "ran"


class App:
    def __init__(self, ok: bool) -> None:
        self.bash = Runner(ok)


def build(app: App, overrides: dict[str, str] | None = None) -> PresetManager:
    adapters = ToolAdapterRegistry(app)
    adapters.register(
        ToolAdapter.for_runtime(
            "app.run-bash",
            "bash",
            lambda runner, args: runner.run(args),
            mcp_name="space_app_run_bash",
            description="Run a command.",
            input_schema=object_schema(),
        )
    )
    registry = PresetRegistry()
    registry.register(
        Preset(
            name="shell-tools",
            default_state="off",
            risk="shell",
            contexts=(),
            tool_ids=("app.run-bash",),
        )
    )
    return PresetManager(
        registry, adapters, app, {"surface": "scene", "canvas_visible": False}, overrides
    )


def test_turning_on_a_preset_whose_runtime_is_not_ready_is_refused_and_changes_nothing() -> None:
    manager = build(App(ok=False))
    heard: list[Any] = []
    manager.add_on_change(heard.append)
    with pytest.raises(PresetValidationError, match="'shell-tools' cannot be turned on: install"):
        manager.set_override("shell-tools", "on")
    assert manager.get_overrides() == {}
    assert manager.get_tool_defs() == [] and heard == []


def test_a_launch_override_for_a_runtime_that_is_not_ready_is_refused() -> None:
    with pytest.raises(PresetValidationError, match="bubblewrap"):
        build(App(ok=False), {"shell-tools": "on"})


def test_a_ready_runtime_turns_on_and_off_needs_no_readiness() -> None:
    manager = build(App(ok=True))
    manager.set_override("shell-tools", "on")
    assert [t.name for t in manager.get_tool_defs()] == ["space_app_run_bash"]
    unready = build(App(ok=False))
    unready.set_override("shell-tools", "off")  # narrowing is always allowed
    assert unready.get_overrides() == {"shell-tools": "off"}
