"""agent-presets: decide which tools an AI agent may use right now.

The public names below are a contract: code outside this repository imports
them from here. They load on first use, so ``import agent_presets`` stays
cheap for the CLI commands that need only part of the core.
"""

from __future__ import annotations

import sys
from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING, Any

from agent_presets._version import __version__


class _Package(ModuleType):
    """The package module, keeping ``agent_presets.bootstrap`` the function.

    The module agent_presets.bootstrap shares its name with the function it
    defines. Importing a submodule sets the package attribute of that name to
    the module; refusing that one assignment keeps ``from agent_presets import
    bootstrap`` the function however the module was first imported, while
    the function itself still loads on first use like every other name here.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "bootstrap" and isinstance(value, ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

_EXPORTS = {
    "hookimpl": "hookspecs",
    "hookspec": "hookspecs",
    "Presets": "bootstrap",
    "bootstrap": "bootstrap",
    "DEFAULT_NAMESPACE": "model",
    "ActivePreset": "model",
    "DuplicatePresetError": "model",
    "DuplicateToolError": "model",
    "MissingRuntimeError": "model",
    "OwnershipError": "model",
    "Preset": "model",
    "PresetError": "model",
    "PresetValidationError": "model",
    "PromptFragment": "model",
    "Resolution": "model",
    "ToolArgumentError": "model",
    "ToolCallError": "model",
    "ToolDef": "model",
    "UnknownPresetError": "model",
    "load_preset_file": "loader",
    "ContentProvider": "bundles",
    "ToolAdapter": "adapters",
    "AdapterKit": "adapters",
    "ToolAdapterRegistry": "adapters",
    "require_runtime": "adapters",
    "object_schema": "adapters",
    "result_schema": "adapters",
    "runtime_handler": "adapters",
    "PresetRegistry": "registry",
    "PresetManager": "manager",
    "ToolRegistry": "tools",
    "PresetMcpSync": "sync",
    "SyncReport": "sync",
    "PluginSet": "plugins",
    "PluginHooks": "pluginkit",
    "load_plugins": "plugins",
    "ContextField": "vocabulary",
    "RowTable": "rows",
    "write_atomic": "atomicfile",
    # Serving MCP from a host app. These import mcp (about a second), on first use only.
    "PresetServer": "mcpserver",
    "build_server": "mcpserver",
    "serve": "mcpserver",
    "CallContext": "callcontext",
    "Elicitation": "callcontext",
    "UnsupportedByClientError": "callcontext",
    "ToolCall": "adapters",
    "ToolResult": "results",
    "ToolResultError": "model",
}

__all__ = [
    "DEFAULT_NAMESPACE",
    "ActivePreset",
    "AdapterKit",
    "CallContext",
    "ContentProvider",
    "ContextField",
    "DuplicatePresetError",
    "DuplicateToolError",
    "Elicitation",
    "MissingRuntimeError",
    "OwnershipError",
    "PluginHooks",
    "PluginSet",
    "Preset",
    "PresetError",
    "PresetManager",
    "PresetMcpSync",
    "PresetRegistry",
    "PresetServer",
    "PresetValidationError",
    "Presets",
    "PromptFragment",
    "Resolution",
    "RowTable",
    "SyncReport",
    "ToolAdapter",
    "ToolAdapterRegistry",
    "ToolArgumentError",
    "ToolCall",
    "ToolCallError",
    "ToolDef",
    "ToolRegistry",
    "ToolResult",
    "ToolResultError",
    "UnknownPresetError",
    "UnsupportedByClientError",
    "__version__",
    "bootstrap",
    "build_server",
    "hookimpl",
    "hookspec",
    "load_plugins",
    "load_preset_file",
    "object_schema",
    "require_runtime",
    "result_schema",
    "runtime_handler",
    "serve",
    "write_atomic",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'agent_presets' has no attribute {name!r}")
    value = getattr(import_module(f"agent_presets.{module}"), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from agent_presets.adapters import (
        AdapterKit,
        ToolAdapter,
        ToolAdapterRegistry,
        ToolCall,
        object_schema,
        require_runtime,
        result_schema,
        runtime_handler,
    )
    from agent_presets.atomicfile import write_atomic
    from agent_presets.bootstrap import Presets, bootstrap
    from agent_presets.bundles import ContentProvider
    from agent_presets.callcontext import CallContext, Elicitation, UnsupportedByClientError
    from agent_presets.hookspecs import hookimpl, hookspec
    from agent_presets.loader import load_preset_file
    from agent_presets.manager import PresetManager
    from agent_presets.mcpserver import PresetServer, build_server, serve
    from agent_presets.model import (
        DEFAULT_NAMESPACE,
        ActivePreset,
        DuplicatePresetError,
        DuplicateToolError,
        MissingRuntimeError,
        OwnershipError,
        Preset,
        PresetError,
        PresetValidationError,
        PromptFragment,
        Resolution,
        ToolArgumentError,
        ToolCallError,
        ToolDef,
        ToolResultError,
        UnknownPresetError,
    )
    from agent_presets.pluginkit import PluginHooks
    from agent_presets.plugins import PluginSet, load_plugins
    from agent_presets.registry import PresetRegistry
    from agent_presets.results import ToolResult
    from agent_presets.rows import RowTable
    from agent_presets.sync import PresetMcpSync, SyncReport
    from agent_presets.tools import ToolRegistry
    from agent_presets.vocabulary import ContextField
