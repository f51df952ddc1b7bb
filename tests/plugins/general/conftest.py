from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pluginkit import OtherActivities

import agent_presets_general
from agent_presets import ToolDef
from agent_presets.bootstrap import Presets
from agent_presets.host import HeadlessHost

DANGEROUS = (
    "general-world-tools",
    "general-file-read-tools",
    "general-file-write-tools",
    "general-shell-tools",
)


class GeneralApp:
    """A headless host running only the general plugin, with helpers to call its tools."""

    def __init__(self, tmp_path: Path, plugins: list[object] | None = None) -> None:
        self.tmp_path = tmp_path
        self.state_dir = tmp_path / "state"
        self.root = tmp_path / "files"
        self.host = HeadlessHost(self.state_dir, root=self.root)
        self.presets: Presets = self.host.start(
            plugins=[agent_presets_general, OtherActivities(), *(plugins or [])]
        )
        assert self.presets.problems == []

    @property
    def manager(self) -> Any:
        return self.presets.manager

    def tools(self) -> dict[str, ToolDef]:
        return {t.name: t for t in self.manager.get_tool_defs()}

    def call(self, tool: str, /, **arguments: Any) -> Any:
        """Run ``tool`` as an MCP client would: found in the manager's current tool defs."""
        tools = self.tools()
        assert tool in tools, f"{tool} is not offered; offered: {sorted(tools)}"
        return tools[tool].run(arguments)

    def enable(self, *names: str) -> None:
        for name in names:
            self.manager.set_override(name, "on")


@pytest.fixture
def general_app(tmp_path: Path) -> Iterator[GeneralApp]:
    yield GeneralApp(tmp_path)


@pytest.fixture
def make_general_app(tmp_path: Path) -> Callable[..., GeneralApp]:
    def make(plugins: list[object] | None = None) -> GeneralApp:
        return GeneralApp(tmp_path, plugins)

    return make


@pytest.fixture
def powered_app(general_app: GeneralApp) -> GeneralApp:
    """The general plugin with every off-by-default preset turned on."""
    general_app.enable(*DANGEROUS)
    return general_app
