"""Shared fixtures for the core tests: small factories and a wired preset stack.

Test plugins are plugin objects registered per test (``bootstrap(app,
plugins=[...])``); nothing here patches the core.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from agent_presets import (
    PresetManager,
    PresetMcpSync,
    PresetRegistry,
    ToolAdapter,
    ToolAdapterRegistry,
    ToolRegistry,
)
from agent_presets.lib.model import Preset, ToolDef
from agent_presets.lib.tools import ToolRegistryChange

SCENE: dict[str, Any] = {"surface": "scene", "activity": None, "canvas_visible": False}


@pytest.fixture(autouse=True)
def _clean_plugin_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's or CI's own PRESETS_* settings must not change what a test sees."""
    for name in ("PRESETS_LOAD_PLUGINS", "PRESETS_STRICT", "PRESETS_TRACE_PLUGINS"):
        monkeypatch.delenv(name, raising=False)


def build_preset(
    name: str,
    tool_ids: Iterable[str] | None = None,
    *,
    contexts: Iterable[Mapping[str, Any]] = ({"surface": "any"},),
    default_state: str = "auto",
    risk: str = "normal",
    group: str | None = None,
    prompt: str | None = None,
    source: str | None = None,
) -> Preset:
    return Preset(
        name=name,
        group=group,
        default_state=default_state,  # type: ignore[arg-type]
        risk=risk,  # type: ignore[arg-type]
        contexts=contexts,  # type: ignore[arg-type]
        tool_ids=tuple(tool_ids if tool_ids is not None else [f"{name.replace('-', '_')}.tool"]),
        system_prompt=prompt,
        source=source,
    )


def echo_handler(tool_id: str) -> Callable[[Any, dict[str, Any]], Any]:
    def handler(app: Any, arguments: dict[str, Any]) -> Any:
        return {"tool": tool_id, "app": app, "arguments": arguments}

    return handler


def build_adapter(
    tool_id: str,
    mcp_name: str | None = None,
    *,
    handler: Callable[[Any, dict[str, Any]], Any] | None = None,
    input_schema: Mapping[str, Any] | None = None,
    source: str | None = None,
) -> ToolAdapter:
    name = mcp_name or "space_" + tool_id.replace(".", "_").replace("-", "_")
    return ToolAdapter(
        id=tool_id,
        mcp_name=name,
        description=f"Test tool {tool_id}.",
        input_schema=input_schema or {"type": "object"},
        handler=handler or echo_handler(tool_id),
        source=source,
    )


def host_tool(name: str, owner: str | None = None) -> ToolDef:
    """A tool registered by someone other than the preset sync (owner None: the host)."""
    return ToolDef(
        name=name,
        description=f"foreign tool {name}",
        input_schema={"type": "object"},
        run=lambda arguments: "pong",
        managed_owner=owner,
    )


@dataclass
class Stack:
    """Registry, adapters, manager, tool registry and sync wired as bootstrap does."""

    registry: PresetRegistry
    adapters: ToolAdapterRegistry
    manager: PresetManager
    tools: ToolRegistry
    sync: PresetMcpSync
    notifications: list[ToolRegistryChange] = field(default_factory=list)
    changes: list[Any] = field(default_factory=list)

    def managed_names(self) -> list[str]:
        return [n for n in self.tools.names() if self.tools.owner_of(n) == self.sync.owner]


def build_stack(
    presets: Iterable[Preset],
    adapters: Iterable[ToolAdapter] = (),
    *,
    context: Mapping[str, Any] = SCENE,
    foreign: Iterable[ToolDef] = (),
    app: Any = None,
    start: bool = True,
    auto_adapters: bool = True,
) -> Stack:
    """A started stack. With ``auto_adapters`` every tool id without an adapter gets one."""
    presets = list(presets)
    adapter_registry = ToolAdapterRegistry(app)
    for adapter in adapters:
        adapter_registry.register(adapter)
    if auto_adapters:
        for preset in presets:
            for tool_id in preset.tool_ids:
                if tool_id not in adapter_registry:
                    adapter_registry.register(build_adapter(tool_id))
    registry = PresetRegistry()
    for preset in presets:
        registry.register(preset)
    tools = ToolRegistry("space_")
    for tool in foreign:
        tools.register(tool)
    manager = PresetManager(registry, adapter_registry, app, context)
    sync = PresetMcpSync(manager, tools, owner="agent-presets")
    stack = Stack(registry, adapter_registry, manager, tools, sync)
    tools.add_on_change(stack.notifications.append)
    manager.add_on_change(stack.changes.append)
    if start:
        sync.start()
        stack.notifications.clear()
    return stack


@pytest.fixture
def make_preset() -> Callable[..., Preset]:
    return build_preset


@pytest.fixture
def make_adapter() -> Callable[..., ToolAdapter]:
    return build_adapter


@pytest.fixture
def make_host_tool() -> Callable[..., ToolDef]:
    return host_tool


@pytest.fixture
def make_stack() -> Callable[..., Stack]:
    return build_stack
