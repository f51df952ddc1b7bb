from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import agent_presets_general
from agent_presets.testing import ContextValues, PresetsHost

DANGEROUS = (
    "general-world-tools",
    "general-file-read-tools",
    "general-file-write-tools",
    "general-shell-tools",
)


class GeneralApp(PresetsHost):
    """A headless host running only the general plugin, with helpers to call its tools."""

    def __init__(self, tmp_path: Path, plugins: list[object] | None = None) -> None:
        self.tmp_path = tmp_path
        # the activities the other built-ins declare, so the shell can switch to them
        others = ContextValues(activity=["drawing", "graph"])
        super().__init__(
            [agent_presets_general, others, *(plugins or [])],
            tmp_path / "state",
            root=tmp_path / "files",
        )

    def call(self, tool: str, /, **arguments: Any) -> Any:
        """Run ``tool`` as an MCP client would: found in the manager's current tool defs."""
        return self.call_tool(tool, **arguments)


@pytest.fixture
def make_general_app(tmp_path: Path) -> Iterator[Callable[..., GeneralApp]]:
    made: list[GeneralApp] = []

    def make(plugins: list[object] | None = None) -> GeneralApp:
        made.append(GeneralApp(tmp_path, plugins))
        return made[-1]

    yield make
    for app in made:
        app.close()


@pytest.fixture
def general_app(make_general_app: Callable[..., GeneralApp]) -> GeneralApp:
    return make_general_app()


@pytest.fixture
def files_app(general_app: GeneralApp) -> GeneralApp:
    """The general plugin with every off-by-default preset but the shell turned on."""
    general_app.enable(*(name for name in DANGEROUS if name != "general-shell-tools"))
    return general_app


@pytest.fixture
def powered_app(shell_sandbox: None, files_app: GeneralApp) -> GeneralApp:
    """The general plugin with every off-by-default preset turned on, the shell included."""
    files_app.enable("general-shell-tools")
    return files_app
