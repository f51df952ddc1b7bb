"""agent-presets: decide which tools an AI agent may use right now.

The names in ``__all__`` are what a plugin author needs: the hooks and the
plugin kit, the adapter and its schema helpers, the call context and
results, the errors, ``ContextField``, the row table and the runtime kept in
one, and the atomic writer.
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
from agent_presets._version import __version__ as __version__

# Every name this package loads is written once, here, with the module that
# defines it; __all__ is derived, and a test holds the typing imports below to
# exactly these names and modules.
_EXPORTS = {
    # What a plugin author needs: listed in __all__.
    "hookimpl": "hookspecs",
    "hookspec": "hookspecs",
    "DuplicatePresetError": "model",
    "DuplicateToolError": "model",
    "MissingRuntimeError": "model",
    "OwnershipError": "model",
    "PresetError": "model",
    "PresetValidationError": "model",
    "ToolArgumentError": "model",
    "ToolCallError": "model",
    "ToolResultError": "model",
    "UnknownPresetError": "model",
    "ContentProvider": "bundles",
    "AdapterKit": "adapters",
    "ToolAdapter": "adapters",
    "ToolCall": "adapters",
    "object_schema": "adapters",
    "require_runtime": "adapters",
    "result_schema": "adapters",
    "runtime_handler": "adapters",
    "PluginHooks": "pluginkit",
    "ContextField": "vocabulary",
    "RowConflict": "rows",
    "RowTable": "rows",
    "TableRuntime": "rows",
    "TableSync": "rows",
    "synced": "rows",
    "write_atomic": "atomicfile",
    "current_principal": "principal",
    "CallContext": "callcontext",
    "Elicitation": "callcontext",
    "UnsupportedByClientError": "callcontext",
    "ToolResult": "results",
    "Upstream": "upstreams",
}
_UNLISTED = {
    # The embedder's (agent_presets.embed lists them): still loaded from here, as
    # before the split, for code written then, but not in __all__.
    "Presets": "boot",
    "bootstrap": "boot",
    "DEFAULT_NAMESPACE": "model",
    "ActivePreset": "model",
    "Preset": "model",
    "PromptFragment": "model",
    "Resolution": "model",
    "ToolDef": "model",
    "load_preset_file": "loader",
    "ToolAdapterRegistry": "adapters",
    "PresetRegistry": "registry",
    "PresetManager": "manager",
    "ToolRegistry": "tools",
    "PresetMcpSync": "sync",
    "SyncReport": "sync",
    "PluginSet": "plugins",
    "load_plugins": "plugins",
    # Serving MCP from a host app. These import mcp (about a second), on first use only.
    "PresetServer": "server",
    "build_server": "server",
    "serve": "server",
    "ServeConfig": "server",
    # Listed for plugin authors before; the console applies it to every view, so a plugin
    # needs it only for an SVG it serves elsewhere (the built-in drawing's resource).
    "svg_safe": "safetext",
}

__all__ = sorted(["__version__", *_EXPORTS])
"""The plugin author's names. ``agent_presets.embed`` lists the embedder's."""


__getattr__ = lazy_exports(__name__, "agent_presets", {**_EXPORTS, **_UNLISTED}, globals())


if TYPE_CHECKING:
    # Each "X as X": a re-export type checkers and linters see without __all__.
    from agent_presets.adapters import AdapterKit as AdapterKit
    from agent_presets.adapters import ToolAdapter as ToolAdapter
    from agent_presets.adapters import ToolAdapterRegistry as ToolAdapterRegistry
    from agent_presets.adapters import ToolCall as ToolCall
    from agent_presets.adapters import object_schema as object_schema
    from agent_presets.adapters import require_runtime as require_runtime
    from agent_presets.adapters import result_schema as result_schema
    from agent_presets.adapters import runtime_handler as runtime_handler
    from agent_presets.atomicfile import write_atomic as write_atomic
    from agent_presets.boot import Presets as Presets
    from agent_presets.boot import bootstrap as bootstrap
    from agent_presets.bundles import ContentProvider as ContentProvider
    from agent_presets.callcontext import CallContext as CallContext
    from agent_presets.callcontext import Elicitation as Elicitation
    from agent_presets.callcontext import UnsupportedByClientError as UnsupportedByClientError
    from agent_presets.hookspecs import hookimpl as hookimpl
    from agent_presets.hookspecs import hookspec as hookspec
    from agent_presets.loader import load_preset_file as load_preset_file
    from agent_presets.manager import PresetManager as PresetManager
    from agent_presets.model import DEFAULT_NAMESPACE as DEFAULT_NAMESPACE
    from agent_presets.model import ActivePreset as ActivePreset
    from agent_presets.model import DuplicatePresetError as DuplicatePresetError
    from agent_presets.model import DuplicateToolError as DuplicateToolError
    from agent_presets.model import MissingRuntimeError as MissingRuntimeError
    from agent_presets.model import OwnershipError as OwnershipError
    from agent_presets.model import Preset as Preset
    from agent_presets.model import PresetError as PresetError
    from agent_presets.model import PresetValidationError as PresetValidationError
    from agent_presets.model import PromptFragment as PromptFragment
    from agent_presets.model import Resolution as Resolution
    from agent_presets.model import ToolArgumentError as ToolArgumentError
    from agent_presets.model import ToolCallError as ToolCallError
    from agent_presets.model import ToolDef as ToolDef
    from agent_presets.model import ToolResultError as ToolResultError
    from agent_presets.model import UnknownPresetError as UnknownPresetError
    from agent_presets.pluginkit import PluginHooks as PluginHooks
    from agent_presets.plugins import PluginSet as PluginSet
    from agent_presets.plugins import load_plugins as load_plugins
    from agent_presets.principal import current_principal as current_principal
    from agent_presets.registry import PresetRegistry as PresetRegistry
    from agent_presets.results import ToolResult as ToolResult
    from agent_presets.rows import RowConflict as RowConflict
    from agent_presets.rows import RowTable as RowTable
    from agent_presets.rows import TableRuntime as TableRuntime
    from agent_presets.rows import TableSync as TableSync
    from agent_presets.rows import synced as synced
    from agent_presets.safetext import svg_safe as svg_safe
    from agent_presets.server import PresetServer as PresetServer
    from agent_presets.server import ServeConfig as ServeConfig
    from agent_presets.server import build_server as build_server
    from agent_presets.server import serve as serve
    from agent_presets.sync import PresetMcpSync as PresetMcpSync
    from agent_presets.sync import SyncReport as SyncReport
    from agent_presets.tools import ToolRegistry as ToolRegistry
    from agent_presets.upstreams import Upstream as Upstream
    from agent_presets.vocabulary import ContextField as ContextField
