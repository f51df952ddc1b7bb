"""Shared by the built-in plugins' tests: a host running one plugin, and the spec-table checks.

Importable from any test as ``pluginkit`` (pytest puts ``tests/`` on the path).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib.resources import files
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

import pytest

from agent_presets import (
    ToolAdapter,
    ToolAdapterRegistry,
    ToolCallError,
    ToolDef,
    hookimpl,
    load_preset_file,
)
from agent_presets.bootstrap import Presets
from agent_presets.host import HeadlessHost, StateStore


def mcp_name(adapter: ToolAdapter) -> str:
    """The name the headless host (namespace ``space_``) serves ``adapter`` under."""
    return ToolAdapterRegistry().mcp_name(adapter)


class OtherActivities:
    """Declares the activities the other built-ins use, so a test running one plugin can
    switch the shell to another plugin's activity (the host refuses an undeclared one)."""

    __name__ = "other-activities"

    @hookimpl
    def presets_context_fields(self) -> list[dict[str, Any]]:
        return [{"name": "activity", "type": "string", "values": ["drawing", "graph"]}]


SpecRow = tuple[str, str, list[str]]
"""One row of a spec table: (default state, risk, MCP tool names)."""


class PluginApp:
    """A headless host running only one plugin, in that plugin's context.

    ``call`` runs a tool as an MCP client would: looked up in the manager's
    current tool defs, so a tool the context does not offer cannot be called.
    Subclasses name the plugin, the runtime, the tool prefix, the shell steps
    that reach the plugin's context and the ``off`` presets to turn on.
    """

    plugin: ClassVar[ModuleType]
    runtime: ClassVar[str]
    prefix: ClassVar[str]
    shell: ClassVar[Sequence[tuple[Any, ...]]]
    off_presets: ClassVar[Sequence[str]]

    def __init__(self, directory: Path, *, enable_off: bool = True) -> None:
        self.host = HeadlessHost(directory / "state", root=directory / "files")
        self.presets: Presets = self.host.start(plugins=[self.plugin, OtherActivities()])
        assert self.presets.problems == []
        for method, *args in self.shell:
            getattr(self.host.shell, method)(*args)
        if enable_off:
            for name in self.off_presets:
                self.presets.manager.set_override(name, "on")

    def close(self) -> None:
        """Stop this host, as a server stops: the state directory is free for the next."""
        self.host.close()

    def saved_rows(self, world: str = "home") -> dict[str, Any]:
        """The runtime's rows as committed to the state database, read by a second connection."""
        store = StateStore(self.host.state_dir / "state.db")
        try:
            return dict(store.table(self.runtime, world).items())
        finally:
            store.close()

    def tools(self) -> dict[str, ToolDef]:
        return {t.name: t for t in self.presets.manager.get_tool_defs()}

    def call(self, tool: str, /, **arguments: Any) -> Any:
        name = tool if tool.startswith("space_") else self.prefix + tool
        tools = self.tools()
        assert name in tools, f"{name} is not offered; offered: {sorted(tools)}"
        return tools[name].run(arguments)

    def state(self) -> Any:
        """What a refused call must leave unchanged: the runtime's saved state."""
        return self.host.runtime(self.runtime).to_state()

    def refused(self, tool: str, /, **arguments: Any) -> str:
        """Call a tool that must refuse; check it changed nothing; return its message."""
        before = self.state()
        with pytest.raises(ToolCallError) as info:
            self.call(tool, **arguments)
        assert self.state() == before, f"a refused call changed the {self.runtime}"
        return str(info.value)


class SpecTable:
    """A plugin's presets as the spec's table lists them: name -> (default, risk, tools)."""

    def __init__(self, rows: Mapping[str, SpecRow]) -> None:
        self.rows = rows

    def tools(self, *, include_off: bool) -> set[str]:
        return {
            tool
            for default, _, tools in self.rows.values()
            if include_off or default == "auto"
            for tool in tools
        }

    def auto_presets(self) -> set[str]:
        return {name for name, (default, _, _) in self.rows.items() if default == "auto"}

    def check_preset_file(
        self, plugin: ModuleType, *, group: str, context: Mapping[str, Any]
    ) -> None:
        """The shipped presets.yaml defines exactly this table, in order, with prompts."""
        presets = load_preset_file(files(plugin) / "presets.yaml")
        assert [p.name for p in presets] == list(self.rows)
        adapters = {a.id: a for a in plugin.presets_tool_adapters()}
        for preset in presets:
            default, risk, tools = self.rows[preset.name]
            assert (preset.default_state, preset.risk, preset.group) == (default, risk, group)
            assert [dict(c) for c in preset.contexts] == [dict(context)]
            assert [mcp_name(adapters[t]) for t in preset.tool_ids] == tools
            assert preset.system_prompt and len(preset.system_prompt) > 80

    def check_adapters(self, plugin: ModuleType, *, name: str) -> None:
        """Every adapter is in the table, named ``space_<name>_<slug>`` for id ``<name>.<slug>``,
        and refuses unknown arguments."""
        adapters = plugin.presets_tool_adapters()
        assert {mcp_name(a) for a in adapters} == self.tools(include_off=True)
        for adapter in adapters:
            slug = adapter.id.removeprefix(f"{name}.")
            assert adapter.name == f"{name}_" + slug.replace("-", "_")
            assert adapter.input_schema.get("additionalProperties") is False


def read_only_tools(plugin: ModuleType) -> set[str]:
    return {
        mcp_name(a)
        for a in plugin.presets_tool_adapters()
        if (a.annotations or {}).get("readOnlyHint")
    }
