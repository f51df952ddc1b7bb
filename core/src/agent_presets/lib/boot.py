"""bootstrap(): the spec's App Bootstrap in one call."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

# HostDefaults and host_defaults were defined here first: still importable from here.
from agent_presets.hosting import HostDefaults as HostDefaults
from agent_presets.hosting import host_defaults as host_defaults
from agent_presets.lib.adapters import ToolAdapterRegistry
from agent_presets.lib.catalog import Catalog, collect
from agent_presets.lib.manager import PresetManager
from agent_presets.lib.model import DEFAULT_NAMESPACE, PresetValidationError
from agent_presets.lib.plugins import PluginSet, env_flag, load_plugins
from agent_presets.lib.registry import PresetRegistry
from agent_presets.lib.sync import PresetMcpSync
from agent_presets.lib.tools import ToolRegistry
from agent_presets.lib.upstreams import UpstreamSet
from agent_presets.lib.vocabulary import Vocabulary

if TYPE_CHECKING:
    from agent_presets.lib.bundles import Members
    from agent_presets.lib.parsecache import ParseCache

log = logging.getLogger("agent_presets")

DEFAULT_CONTEXT: Mapping[str, Any] = {}
"""The context of an app that reports none: no field set. The core names no field itself."""


@dataclass
class Presets:
    """Everything ``bootstrap`` wired together."""

    manager: PresetManager
    registry: PresetRegistry
    tool_adapters: ToolAdapterRegistry
    tool_registry: ToolRegistry
    sync: PresetMcpSync
    plugins: PluginSet
    problems: list[PresetValidationError] = field(default_factory=list)
    preset_plugin: dict[str, str] = field(default_factory=dict)
    vocabulary: Vocabulary = field(default_factory=Vocabulary)
    adapter_plugin: dict[str, str] = field(default_factory=dict)
    """The plugin (as ``presets plugins`` names it) that provided each tool adapter, by id."""
    upstreams: UpstreamSet = field(default_factory=UpstreamSet)
    """The declared upstream servers; the MCP server starts them (``mcpserver.upstream``)."""
    members: Members | None = None
    """The prompts, resources and resource templates presets may list, and their providers;
    None when no plugin declares any (``agent_presets.lib.bundles`` is then never imported)."""


def bootstrap(
    app: Any,
    *,
    tool_registry: ToolRegistry | None = None,
    context: Mapping[str, Any] | None = None,
    owner: str = "agent-presets",
    plugins: PluginSet | Iterable[object] | None = None,
    overrides: Mapping[str, str] | None = None,
    strict: bool | None = None,
    parse_cache: ParseCache | None = None,
) -> Presets:
    """Discover plugins, load their presets and adapters, build manager and sync, start sync.

    ``plugins`` is a loaded ``PluginSet``, or plugin objects to register
    instead of discovering entry points. Definition problems (a bad preset
    file, a collision, a tool id no adapter provides) skip the offending
    preset and are kept in ``Presets.problems``; ``strict=True`` makes them
    (and plugin load problems) fatal. The context fields that the plugins
    (and a host, as a plugin object) declare are ``Presets.vocabulary``.
    ``strict=None`` reads ``PRESETS_STRICT`` for callers written before the
    parameter; a command line passes
    ``strict=env_flag("PRESETS_STRICT")`` itself. ``context`` defaults to
    ``app.context()`` when the app has one, else to its ``HostDefaults``
    context; ``tool_registry`` to a registry in its ``HostDefaults`` namespace.
    An app that has no ``defaults`` of its own gets the host plugin's
    (``presets_host_defaults``), else none (``DEFAULT_NAMESPACE``, no field
    set). ``parse_cache``
    keeps what YAML read of the preset files, so that the next start with the
    same files need not read them again (``agent_presets.lib.parsecache``).
    """
    if strict is None:
        strict = env_flag("PRESETS_STRICT")
    plugin_set = plugins if isinstance(plugins, PluginSet) else load_plugins(plugins, strict=strict)
    defaults = host_defaults(app) or plugin_set.host_defaults()
    if tool_registry is None:
        tool_registry = ToolRegistry(DEFAULT_NAMESPACE if defaults is None else defaults.namespace)
    catalog = collect(
        plugin_set, namespace_prefix=tool_registry.namespace_prefix, parse_cache=parse_cache
    )
    if catalog.problems and strict:
        raise PresetValidationError(
            "preset definitions have problems (PRESETS_STRICT=1 makes them fatal):\n"
            + "\n".join(str(p) for p in catalog.problems),
            problems=catalog.problems,
        )
    for problem in catalog.problems:
        log.warning("skipped: %s", problem)

    adapters = ToolAdapterRegistry(app, namespace_prefix=tool_registry.namespace_prefix)
    for adapter in catalog.adapters:
        adapters.register(adapter)
    registry = PresetRegistry()
    for preset in catalog.presets:
        registry.register(preset)
    if context is None:
        if callable(getattr(app, "context", None)):
            context = app.context()
        else:
            context = DEFAULT_CONTEXT if defaults is None else defaults.context
    manager = PresetManager(
        registry, adapters, app, context, overrides, owner=owner, vocabulary=catalog.vocabulary
    )
    sync = PresetMcpSync(manager, tool_registry, owner=owner)
    sync.start()
    return Presets(
        manager=manager,
        registry=registry,
        tool_adapters=adapters,
        tool_registry=tool_registry,
        sync=sync,
        plugins=plugin_set,
        problems=list(catalog.problems),
        preset_plugin=dict(catalog.preset_plugin),
        vocabulary=catalog.vocabulary,
        adapter_plugin=dict(catalog.adapter_plugin),
        upstreams=catalog.upstreams,
        members=_members(catalog, tool_registry.namespace_prefix),
    )


def _members(catalog: Catalog, namespace_prefix: str | None) -> Members | None:
    if not catalog.prompts and not catalog.resources:
        return None
    from agent_presets.lib.bundles import Members

    return Members(
        {p.id: p for p in catalog.prompts},
        {r.id: r for r in catalog.resources},
        {p.id: p for p in catalog.providers},
        namespace_prefix,
    )
