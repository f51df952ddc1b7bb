"""The hooks a plugin implements. Signatures and docstrings only.

A plugin is a module (or object) registered under the ``agent_presets`` entry
point group, with functions decorated by ``agent_presets.hookimpl``. Every
hook is optional. Built-in plugins use exactly these hooks.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.resources.abc import Traversable
from os import PathLike
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from collections.abc import Mapping

    from agent_presets.hosting import Host, HostDefaults
    from agent_presets.lib.adapters import ToolAdapter
    from agent_presets.lib.bundles import ContentProvider
    from agent_presets.lib.upstreams import Upstream
    from agent_presets.lib.vocabulary import ContextFieldDeclaration

PROJECT_NAME = "agent_presets"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


@hookspec
def presets_preset_files() -> Sequence[str | PathLike[str] | Traversable]:
    """Return the YAML preset files this plugin ships.

    Each item is a filesystem path or an ``importlib.resources`` traversable,
    e.g. ``[files(__package__) / "presets.yaml"]``. Every file holds a
    ``presets:`` list valid against ``schemas/preset.schema.json``.

    Called once per bootstrap, before any adapter is registered; results from
    all plugins are gathered as a list of lists.
    """


@hookspec
def presets_tool_adapters() -> Sequence[ToolAdapter]:
    """Return the ``ToolAdapter`` objects behind this plugin's tool ids.

    Adapters are data plus a ``handler(app, arguments)``; the handler fetches
    runtime objects from ``app`` at call time and never captures them here.

    Called once per bootstrap; results from all plugins are gathered.
    """


@hookspec
def presets_headless_runtime(host: Host) -> None:
    """Attach this plugin's runtimes to the host that ``presets serve`` runs.

    ``host`` is an ``agent_presets.host.Host``. Use ``host.attach(name,
    runtime)`` for state the whole host shares (a folder of files),
    ``host.add_table_runtime(name, factory)`` for state that each partition
    of the app has its own of (a document, a board), and
    ``host.keep_context(keeper)`` when this plugin is the app and owns its
    context (``agent_presets.host.ContextKeeper``). The host calls this
    once, before the presets are bootstrapped; an app that embeds the core
    gives its tools its own runtimes and never calls it.
    """


@hookspec(firstresult=True)
def presets_host_defaults() -> HostDefaults | None:
    """Supply the host's defaults: the namespace, the starting context and the instructions.

    Return an ``agent_presets.host.HostDefaults``, or None. Only the plugin
    that is the app (that declares the context fields the app provides)
    implements it; a second plugin that supplies defaults is a problem
    naming both, and the first is used. Called when a host starts, and by
    the commands that speak the host's context (``resolve``, ``serve``'s
    ``--namespace``). An app that embeds the core may instead give its
    ``defaults`` attribute, which wins.
    """


@hookspec
def presets_context_fields() -> Sequence[ContextFieldDeclaration]:
    """Declare the context fields (and their values) this plugin's presets rely on.

    Return a list of declarations, each a mapping (or an
    ``agent_presets.ContextField``) with ``name`` (snake_case), ``type``
    (``"string"`` or ``"boolean"``), ``values`` (the allowed strings, or None
    for any string; boolean fields leave it out) and ``description``. A host
    declares the fields it provides through the same hook, as a plugin object
    it passes to ``bootstrap(plugins=...)``.

    Called once per bootstrap, before any preset is checked; declarations of
    one field from several plugins merge their values, and two types for one
    field are an error naming both plugins. A preset pattern may only use
    declared fields and values, and ``PresetManager.set_context`` refuses a
    value a declared field does not allow.
    """


@hookspec
def presets_serve_options() -> Any:
    """Add options to ``presets serve`` for this plugin's runtime (as tox's ``tox_add_option``).

    (Typed ``Any`` here only because the served host's layer is above the hook specs.)
    Return an ``agent_presets.host.ServeOptions(build, options)``: ``click.Option``
    objects, and what their values build (a frozen dataclass of the plugin's,
    say), or None. Called once when ``presets serve`` builds its command line,
    before it parses any argument (so ``--help`` lists the options). Once
    parsed, ``build`` is called with each option's value as a keyword named
    after its parameter, and ``presets_headless_runtime`` reads the result
    back, typed, with ``host.serve_options(TheType)``. An option whose flag or
    parameter name the command or another plugin has already is an error
    naming both; that plugin's options are left out.
    """


@hookspec
def presets_upstreams() -> Sequence[Upstream | Mapping[str, Any]]:
    """Declare upstream MCP servers whose tools this plugin's presets list.

    Return ``agent_presets.Upstream`` objects, or mappings shaped like a
    preset file's ``upstreams:`` entries (``name``, and ``command`` or
    ``url``). Each upstream tool becomes tool id ``NAME.TOOL``; give
    ``Upstream(..., lock=path)`` the lock file ``presets upstreams
    snapshot`` writes, so its tools are known without starting it.

    Called once per bootstrap, after the preset files are read and before
    any preset is checked; results from all plugins are gathered, and one
    name declared twice is an error naming both places.
    """


@hookspec
def presets_content_providers() -> Sequence[ContentProvider]:
    """Return the ``ContentProvider`` objects behind this plugin's dynamic prompts and resources.

    A preset file declares prompts (``prompts:``), resources (``resources:``)
    and resource templates (``resource_templates:``); what YAML cannot say
    comes from a provider with the same ``id``: ``read(app, variables)``
    computes a resource's contents when a client reads it, ``render(app,
    arguments)`` a prompt's messages, and ``complete(app, argument, value,
    arguments)`` the values offered for a prompt argument or template
    variable. Like adapters, providers fetch runtime objects from ``app``
    when called, never when made.

    Called once per bootstrap, after the preset files are read; results from
    all plugins are gathered, and a provider for an id nobody declared is a
    problem located where it was made.
    """
