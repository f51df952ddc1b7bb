from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import agent_presets_units
from agent_presets.testing import PresetsHost
from agent_presets_general import SpaceApp


class UnitsApp(PresetsHost):
    """A headless host running only the units plugin; tools are called as a client would."""

    def __init__(self, state_dir: Path) -> None:
        super().__init__([SpaceApp(), agent_presets_units], state_dir)

    @property
    def unit_dir(self) -> Path:
        return self.state_dir / "units"

    def call(self, tool: str, /, **arguments: Any) -> Any:
        return self.call_tool(tool, **arguments)

    def enable_all(self) -> None:
        self.enable("units-edit-tools", "units-reload-tools")


@pytest.fixture
def units_app(tmp_path: Path) -> Iterator[UnitsApp]:
    app = UnitsApp(tmp_path / "state")
    yield app
    app.close()


@pytest.fixture
def editing_app(units_app: UnitsApp) -> UnitsApp:
    units_app.enable_all()
    return units_app
