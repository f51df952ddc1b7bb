from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import agent_presets_units
from agent_presets import ToolDef
from agent_presets.bootstrap import Presets
from agent_presets.host import HeadlessHost


class UnitsApp:
    """A headless host running only the units plugin; tools are called as a client would."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.host = HeadlessHost(state_dir)
        self.presets: Presets = self.host.start(plugins=[agent_presets_units])
        assert self.presets.problems == []

    @property
    def manager(self) -> Any:
        return self.presets.manager

    @property
    def unit_dir(self) -> Path:
        return self.state_dir / "units"

    def tools(self) -> dict[str, ToolDef]:
        return {t.name: t for t in self.manager.get_tool_defs()}

    def call(self, tool: str, /, **arguments: Any) -> Any:
        tools = self.tools()
        assert tool in tools, f"{tool} is not offered; offered: {sorted(tools)}"
        return tools[tool].run(arguments)

    def enable_all(self) -> None:
        self.manager.set_override("units-edit-tools", "on")
        self.manager.set_override("units-reload-tools", "on")

    def restart(self) -> UnitsApp:
        self.host.close()  # the previous host stops first
        return UnitsApp(self.state_dir)


@pytest.fixture
def units_app(tmp_path: Path) -> UnitsApp:
    return UnitsApp(tmp_path / "state")


@pytest.fixture
def editing_app(units_app: UnitsApp) -> UnitsApp:
    units_app.enable_all()
    return units_app
