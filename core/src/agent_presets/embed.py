"""Embedding agent-presets in a host app: the names a host uses, in one place.

A host builds the core for its own app (``bootstrap``, or the manager,
registries and sync by hand), serves it over MCP (``serve``,
``build_server``, ``PresetServer`` with a ``ServeConfig``, and its own
call-pipeline ``Stage``), and provides the runtimes the plugins' tools act
on (``RowTable`` is the protocol the built-in plugins' tables follow).
``docs/embedding.md`` walks through a complete host. A plugin author needs
none of this: ``agent_presets`` itself lists theirs.

The serving names import ``mcp`` (about a second) on first use only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_presets._lazy import lazy_exports

_EXPORTS = {
    "bootstrap": "lib.boot",
    "Presets": "lib.boot",
    "HostDefaults": "lib.boot",
    "PresetManager": "lib.manager",
    "PresetRegistry": "lib.registry",
    "ToolAdapterRegistry": "lib.adapters",
    "ToolRegistry": "lib.tools",
    "PresetMcpSync": "lib.sync",
    "SyncReport": "lib.sync",
    "PluginSet": "lib.plugins",
    "load_plugins": "lib.plugins",
    "load_preset_file": "lib.loader",
    "DEFAULT_NAMESPACE": "lib.model",
    "ActivePreset": "lib.model",
    "Preset": "lib.model",
    "PromptFragment": "lib.model",
    "Resolution": "lib.model",
    "ToolDef": "lib.model",
    "RowTable": "lib.rows",
    "ContextField": "lib.vocabulary",
    "serve": "server",
    "build_server": "server",
    "PresetServer": "server",
    "ServeConfig": "server",
    "Stage": "server.stage",
    "PendingCall": "server.stage",
    "CallRefused": "server.stage",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports(__name__, "agent_presets", _EXPORTS, globals())


if TYPE_CHECKING:
    pass
