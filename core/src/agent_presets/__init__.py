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
    "DuplicatePresetError": "lib.model",
    "DuplicateToolError": "lib.model",
    "MissingRuntimeError": "lib.model",
    "OwnershipError": "lib.model",
    "PresetError": "lib.model",
    "PresetValidationError": "lib.model",
    "ToolArgumentError": "lib.model",
    "ToolCallError": "lib.model",
    "ToolResultError": "lib.model",
    "UnknownPresetError": "lib.model",
    "ContentProvider": "lib.bundles",
    "AdapterKit": "lib.adapters",
    "ToolAdapter": "lib.adapters",
    "ToolCall": "lib.adapters",
    "object_schema": "lib.adapters",
    "require_runtime": "lib.adapters",
    "result_schema": "lib.adapters",
    "runtime_handler": "lib.adapters",
    "PluginHooks": "lib.pluginkit",
    "ContextField": "lib.vocabulary",
    "RowConflict": "lib.rows",
    "RowTable": "lib.rows",
    "TableRuntime": "lib.rows",
    "TableSync": "lib.rows",
    "synced": "lib.rows",
    "write_atomic": "lib.atomicfile",
    "current_principal": "lib.principal",
    "CallContext": "lib.callcontext",
    "Elicitation": "lib.callcontext",
    "UnsupportedByClientError": "lib.callcontext",
    "ToolResult": "results",
    "Upstream": "lib.upstreams",
}
_UNLISTED = {
    # The embedder's (agent_presets.embed lists them): still loaded from here, as
    # before the split, for code written then, but not in __all__.
    "Presets": "lib.boot",
    "bootstrap": "lib.boot",
    "DEFAULT_NAMESPACE": "lib.model",
    "ActivePreset": "lib.model",
    "Preset": "lib.model",
    "PromptFragment": "lib.model",
    "Resolution": "lib.model",
    "ToolDef": "lib.model",
    "load_preset_file": "lib.loader",
    "ToolAdapterRegistry": "lib.adapters",
    "PresetRegistry": "lib.registry",
    "PresetManager": "lib.manager",
    "ToolRegistry": "lib.tools",
    "PresetMcpSync": "lib.sync",
    "SyncReport": "lib.sync",
    "PluginSet": "lib.plugins",
    "load_plugins": "lib.plugins",
    # Serving MCP from a host app. These import mcp (about a second), on first use only.
    "PresetServer": "server",
    "build_server": "server",
    "serve": "server",
    "ServeConfig": "server",
    # Listed for plugin authors before; the console applies it to every view, so a plugin
    # needs it only for an SVG it serves elsewhere (the built-in drawing's resource).
    "svg_safe": "lib.safetext",
}

__all__ = sorted(["__version__", *_EXPORTS])
"""The plugin author's names. ``agent_presets.embed`` lists the embedder's."""


__getattr__ = lazy_exports(__name__, "agent_presets", {**_EXPORTS, **_UNLISTED}, globals())


if TYPE_CHECKING:
    # Each "X as X": a re-export type checkers and linters see without __all__.
    from agent_presets.hookspecs import hookimpl as hookimpl
    from agent_presets.hookspecs import hookspec as hookspec
    from agent_presets.lib.adapters import AdapterKit as AdapterKit
    from agent_presets.lib.adapters import ToolAdapter as ToolAdapter
    from agent_presets.lib.adapters import ToolAdapterRegistry as ToolAdapterRegistry
    from agent_presets.lib.adapters import ToolCall as ToolCall
    from agent_presets.lib.adapters import object_schema as object_schema
    from agent_presets.lib.adapters import require_runtime as require_runtime
    from agent_presets.lib.adapters import result_schema as result_schema
    from agent_presets.lib.adapters import runtime_handler as runtime_handler
    from agent_presets.lib.atomicfile import write_atomic as write_atomic
    from agent_presets.lib.boot import Presets as Presets
    from agent_presets.lib.boot import bootstrap as bootstrap
    from agent_presets.lib.bundles import ContentProvider as ContentProvider
    from agent_presets.lib.callcontext import CallContext as CallContext
    from agent_presets.lib.callcontext import Elicitation as Elicitation
    from agent_presets.lib.callcontext import UnsupportedByClientError as UnsupportedByClientError
    from agent_presets.lib.loader import load_preset_file as load_preset_file
    from agent_presets.lib.manager import PresetManager as PresetManager
    from agent_presets.lib.model import DEFAULT_NAMESPACE as DEFAULT_NAMESPACE
    from agent_presets.lib.model import ActivePreset as ActivePreset
    from agent_presets.lib.model import DuplicatePresetError as DuplicatePresetError
    from agent_presets.lib.model import DuplicateToolError as DuplicateToolError
    from agent_presets.lib.model import MissingRuntimeError as MissingRuntimeError
    from agent_presets.lib.model import OwnershipError as OwnershipError
    from agent_presets.lib.model import Preset as Preset
    from agent_presets.lib.model import PresetError as PresetError
    from agent_presets.lib.model import PresetValidationError as PresetValidationError
    from agent_presets.lib.model import PromptFragment as PromptFragment
    from agent_presets.lib.model import Resolution as Resolution
    from agent_presets.lib.model import ToolArgumentError as ToolArgumentError
    from agent_presets.lib.model import ToolCallError as ToolCallError
    from agent_presets.lib.model import ToolDef as ToolDef
    from agent_presets.lib.model import ToolResultError as ToolResultError
    from agent_presets.lib.model import UnknownPresetError as UnknownPresetError
    from agent_presets.lib.pluginkit import PluginHooks as PluginHooks
    from agent_presets.lib.plugins import PluginSet as PluginSet
    from agent_presets.lib.plugins import load_plugins as load_plugins
    from agent_presets.lib.principal import current_principal as current_principal
    from agent_presets.lib.registry import PresetRegistry as PresetRegistry
    from agent_presets.lib.rows import RowConflict as RowConflict
    from agent_presets.lib.rows import RowTable as RowTable
    from agent_presets.lib.rows import TableRuntime as TableRuntime
    from agent_presets.lib.rows import TableSync as TableSync
    from agent_presets.lib.rows import synced as synced
    from agent_presets.lib.safetext import svg_safe as svg_safe
    from agent_presets.lib.sync import PresetMcpSync as PresetMcpSync
    from agent_presets.lib.sync import SyncReport as SyncReport
    from agent_presets.lib.tools import ToolRegistry as ToolRegistry
    from agent_presets.lib.upstreams import Upstream as Upstream
    from agent_presets.lib.vocabulary import ContextField as ContextField
    from agent_presets.results import ToolResult as ToolResult
    from agent_presets.server import PresetServer as PresetServer
    from agent_presets.server import ServeConfig as ServeConfig
    from agent_presets.server import build_server as build_server
    from agent_presets.server import serve as serve
