"""agent-presets: decide which tools an AI agent may use right now.

The names in ``__all__`` are what a plugin author needs: the hooks, the
adapter and its schema helpers, the call context and results, the errors,
``ContextField``, the row-table protocol, the atomic writer and ``svg_safe``.
A host app that embeds the core (bootstrap, the manager and registries,
serving and its config, the runtimes' protocols) imports from
``agent_presets.embed``; those names still load from here too, as they did
before the split, but are not listed. Everything loads on first use, so
``import agent_presets`` stays cheap for the CLI commands that need only part
of the core.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_presets._lazy import lazy_exports
from agent_presets._version import __version__

_EXPORTS = {
    "hookimpl": "hookspecs",
    "hookspec": "hookspecs",
    "Presets": "boot",
    "bootstrap": "boot",
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
    "RowConflict": "rows",
    "TableSync": "rows",
    "synced": "rows",
    "write_atomic": "atomicfile",
    "svg_safe": "safetext",
    "current_principal": "principal",
    # Serving MCP from a host app. These import mcp (about a second), on first use only.
    "PresetServer": "server",
    "build_server": "server",
    "serve": "server",
    "ServeConfig": "server",
    "CallContext": "callcontext",
    "Elicitation": "callcontext",
    "UnsupportedByClientError": "callcontext",
    "ToolCall": "adapters",
    "ToolResult": "results",
    "ToolResultError": "model",
    "Upstream": "upstreams",
}

__all__ = [
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
    "PresetError",
    "PresetValidationError",
    "RowConflict",
    "RowTable",
    "TableSync",
    "ToolAdapter",
    "ToolArgumentError",
    "ToolCall",
    "ToolCallError",
    "ToolResult",
    "ToolResultError",
    "UnknownPresetError",
    "UnsupportedByClientError",
    "Upstream",
    "__version__",
    "current_principal",
    "hookimpl",
    "hookspec",
    "object_schema",
    "require_runtime",
    "result_schema",
    "runtime_handler",
    "svg_safe",
    "synced",
    "write_atomic",
]
"""The plugin author's names. ``agent_presets.embed`` lists the embedder's."""


__getattr__ = lazy_exports(__name__, "agent_presets", _EXPORTS, globals())


if TYPE_CHECKING:
    from agent_presets.adapters import (
        AdapterKit,
        ToolAdapter,
        ToolCall,
        object_schema,
        require_runtime,
        result_schema,
        runtime_handler,
    )
    from agent_presets.adapters import (
        ToolAdapterRegistry as ToolAdapterRegistry,
    )
    from agent_presets.atomicfile import (
        write_atomic,
    )
    from agent_presets.boot import (
        Presets as Presets,
    )
    from agent_presets.boot import (
        bootstrap as bootstrap,
    )
    from agent_presets.bundles import ContentProvider
    from agent_presets.callcontext import (
        CallContext,
        Elicitation,
        UnsupportedByClientError,
    )
    from agent_presets.hookspecs import (
        hookimpl,
        hookspec,
    )
    from agent_presets.loader import (
        load_preset_file as load_preset_file,
    )
    from agent_presets.manager import (
        PresetManager as PresetManager,
    )
    from agent_presets.model import (
        DEFAULT_NAMESPACE as DEFAULT_NAMESPACE,
    )
    from agent_presets.model import (
        ActivePreset as ActivePreset,
    )
    from agent_presets.model import (
        DuplicatePresetError,
        DuplicateToolError,
        MissingRuntimeError,
        OwnershipError,
        PresetError,
        PresetValidationError,
        ToolArgumentError,
        ToolCallError,
        ToolResultError,
        UnknownPresetError,
    )
    from agent_presets.model import (
        Preset as Preset,
    )
    from agent_presets.model import (
        PromptFragment as PromptFragment,
    )
    from agent_presets.model import (
        Resolution as Resolution,
    )
    from agent_presets.model import (
        ToolDef as ToolDef,
    )
    from agent_presets.pluginkit import (
        PluginHooks,
    )
    from agent_presets.plugins import (
        PluginSet as PluginSet,
    )
    from agent_presets.plugins import (
        load_plugins as load_plugins,
    )
    from agent_presets.principal import current_principal
    from agent_presets.registry import (
        PresetRegistry as PresetRegistry,
    )
    from agent_presets.results import (
        ToolResult,
    )
    from agent_presets.rows import (
        RowConflict,
        RowTable,
        TableSync,
        synced,
    )
    from agent_presets.safetext import (
        svg_safe,
    )
    from agent_presets.server.mcp import (
        PresetServer as PresetServer,
    )
    from agent_presets.server.mcp import (
        build_server as build_server,
    )
    from agent_presets.server.mcp import (
        serve as serve,
    )
    from agent_presets.sync import (
        PresetMcpSync as PresetMcpSync,
    )
    from agent_presets.sync import (
        SyncReport as SyncReport,
    )
    from agent_presets.tools import (
        ToolRegistry as ToolRegistry,
    )
    from agent_presets.upstreams import Upstream
    from agent_presets.vocabulary import (
        ContextField,
    )
