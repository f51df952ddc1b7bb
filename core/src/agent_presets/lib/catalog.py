"""Everything the loaded plugins define, checked as a whole.

Shared by ``bootstrap`` and ``serve`` (which register what is valid) and
``presets validate`` (which reports every problem): presets from each
plugin's files, adapters from each plugin, the declared context vocabulary,
and the rules only the whole set can break: two adapters with one id, one
MCP name given by two plugins (or by two adapters of one plugin whose presets
can be active at once), tool ids and prompt placeholders no adapter provides,
duplicate preset names, context fields and values nobody declared. Each is
reported at ``path:line:col`` of the preset file that meets it, or at the
``file:line`` of the code that made the adapter when the adapter is at fault,
naming the other source where two are involved; an adapter refused is one
problem, not one more for each preset that lists it. ``check_preset_files`` applies the file
and whole-set rules to preset files given by path, with no plugin around them.

A preset file is input from whoever wrote the plugin: whatever one file does,
its problems are its own, and every other file and plugin still loads.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from importlib.resources.abc import Traversable
from os import PathLike
from typing import TYPE_CHECKING, Any

from agent_presets.lib.adapters import ToolAdapter, mcp_name_for
from agent_presets.lib.loader import parse_presets, read_preset_source
from agent_presets.lib.model import (
    ANY,
    DEFAULT_NAMESPACE,
    NONE,
    DuplicatePresetError,
    Preset,
    PresetValidationError,
    duplicate_preset_error,
)
from agent_presets.lib.plugins import PluginInfo, PluginSet, display_path
from agent_presets.lib.prompts import placeholders, value_placeholders
from agent_presets.lib.schema import clip, quote
from agent_presets.lib.suggest import closest, did_you_mean
from agent_presets.lib.upstreams import (
    UpstreamSet,
    check_upstream_tool_ids,
    gather_upstreams,
    name_clash,
)
from agent_presets.lib.vocabulary import Vocabulary

if TYPE_CHECKING:
    import yaml

    # Imported when a catalog has members: a tools-only one never loads them.
    from agent_presets.lib.bundles import ContentProvider, PromptSpec, ResourceSpec
    from agent_presets.lib.parsecache import ParseCache


@dataclass
class Catalog:
    presets: list[Preset] = field(default_factory=list)
    adapters: list[ToolAdapter] = field(default_factory=list)
    problems: list[PresetValidationError] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    preset_plugin: dict[str, str] = field(default_factory=dict)
    file_plugin: dict[str, str] = field(default_factory=dict)
    """The plugin that shipped each preset file, by the file's source (``Preset.source``)."""
    adapter_plugin: dict[str, str] = field(default_factory=dict)
    vocabulary: Vocabulary = field(default_factory=Vocabulary)
    texts: dict[str, str] = field(default_factory=dict, repr=False)
    prompts: list[PromptSpec] = field(default_factory=list)
    resources: list[ResourceSpec] = field(default_factory=list)
    """Resources and resource templates."""
    providers: list[ContentProvider] = field(default_factory=list)
    member_plugin: dict[str, str] = field(default_factory=dict)
    """The plugin that declared each prompt and resource, by id."""
    upstreams: UpstreamSet = field(default_factory=UpstreamSet)
    """The upstream MCP servers the files and hooks declare (``agent_presets.lib.upstreams``)."""
    clashes: dict[str, list[PresetValidationError]] = field(default_factory=dict)
    """Each plugin that lost a tool id or an MCP name to another plugin: the problems saying
    which, and which presets were left out with it (``presets plugins`` shows them)."""
    namespace_prefix: str = DEFAULT_NAMESPACE
    """The namespace its tools' MCP names were checked in."""

    def locate(
        self, preset: Preset, path: tuple[str | int, ...] = (), *, key: bool = False
    ) -> Location:
        """``(file, line, column)`` of ``preset``'s field at ``path`` (its key, with ``key``)."""
        return _Locator(self).field(preset, path, key=key)


def context_vocabulary(plugin_set: PluginSet, catalog: Catalog | None = None) -> Vocabulary:
    """The context fields the plugins declare, merged (``presets_context_fields``).

    Each problem (a hook that raised, a bad or conflicting declaration) joins
    ``catalog.problems``; with no catalog they are left for ``collect`` to report.
    """
    catalog = catalog if catalog is not None else Catalog()
    declarations = [
        (info.name, item)
        for info, result in plugin_set.call_each("presets_context_fields", catalog.problems.append)
        for item in _items(info, result, catalog)
    ]
    vocabulary, problems = Vocabulary.merge(declarations)
    catalog.problems.extend(problems)
    return vocabulary


def collect(
    plugin_set: PluginSet,
    *,
    namespace_prefix: str | None = None,
    max_file_size: int | None = None,
    parse_cache: ParseCache | None = None,
) -> Catalog:
    """Every plugin's presets and adapters, checked; ``max_file_size`` bounds each preset file.

    MCP names are checked in ``namespace_prefix``; None: the host's, as the
    app plugin among ``plugin_set`` gives it (``PluginSet.namespace``).
    ``parse_cache`` keeps what YAML read of each file without problems, for
    the next collect of the same text (``agent_presets.lib.parsecache``).
    """
    if namespace_prefix is None:
        namespace_prefix = plugin_set.namespace()
    catalog = Catalog(namespace_prefix=namespace_prefix)
    hook_failed = catalog.problems.append
    for info, result in plugin_set.call_each("presets_preset_files", hook_failed):
        for item in _items(info, result, catalog):
            _load_file(info, item, catalog, max_file_size, parse_cache)
    catalog.vocabulary = context_vocabulary(plugin_set, catalog)
    adapters: dict[str, ToolAdapter] = {}
    misnamed: list[ToolAdapter] = []  # an older mcp_name without the host's prefix
    builtins = {p.name for p in plugin_set.plugins if p.builtin}
    for info, result in plugin_set.call_each("presets_tool_adapters", hook_failed):
        for adapter in _items(info, result, catalog):
            if not isinstance(adapter, ToolAdapter):
                catalog.problems.append(
                    PresetValidationError(
                        f"plugin {quote(info.name)}: presets_tool_adapters returned "
                        f"{type(adapter).__name__}, expected ToolAdapter",
                        source=info.name,
                    )
                )
                continue
            adapter = replace(adapter, source=adapter.source or info.name)
            first = adapters.get(adapter.id)
            if first is not None:
                first_plugin = catalog.adapter_plugin[adapter.id]
                kept, kept_by, lost, lost_by = first, first_plugin, adapter, info.name
                if info.name in builtins and first_plugin not in builtins:
                    # A built-in keeps its tool ids, whichever plugin loaded first.
                    kept, kept_by, lost, lost_by = adapter, info.name, first, first_plugin
                    adapters[adapter.id] = adapter
                    catalog.adapter_plugin[adapter.id] = info.name
                _lost(catalog, lost_by, _twice(lost, kept, lost_by, kept_by))
                continue
            legacy = adapter.name is None
            if legacy and namespace_prefix and not adapter.mcp_name.startswith(namespace_prefix):
                misnamed.append(adapter)
                continue
            adapters[adapter.id] = adapter
            catalog.adapter_plugin[adapter.id] = info.name
    _add_upstreams(catalog, plugin_set, adapters, namespace_prefix)
    presets = _unique(catalog, catalog.presets, builtins)
    refused = _check_mcp_names(catalog, adapters, presets, namespace_prefix, misnamed, builtins)
    for tool_id in refused:
        adapters.pop(tool_id, None)
    catalog.adapters = list(adapters.values())
    _check_members(catalog, plugin_set, adapters, namespace_prefix)
    # A plugin that did not load takes its tool ids with it: the ids its presets (given to
    # `validate --installed`, say) list are missing because of it, not on their own.
    failed = tuple(sorted({p.plugin for p in plugin_set.problems if not p.hook}))
    catalog.presets = _check_presets(catalog, presets, adapters, refused, failed)
    return catalog


def _twice(
    adapter: ToolAdapter, first: ToolAdapter, plugin: str, first_plugin: str
) -> PresetValidationError:
    """The problem of ``adapter`` (of ``plugin``), refused: ``first`` has its tool id."""
    first_at = _describe_made_at(first)
    if plugin == first_plugin:
        message = (
            f"tool adapter {quote(adapter.id)} is made twice by plugin {plugin}"
            f"{f' (first at {first_at})' if first_at else ''}; give each tool its own id"
        )
    else:
        message = (
            f"tool adapter {quote(adapter.id)} is provided twice: by {first.source} and by "
            f"{adapter.source}{f' (the first made at {first_at})' if first_at else ''}; "
            f"plugin {first_plugin} keeps it: "
            f"rename the id in plugin {plugin}, or leave one of the plugins out "
            "(PRESETS_LOAD_PLUGINS, a comma list of the plugins to load)"
        )
    return PresetValidationError(message, **_made_at(adapter))


def _lost(catalog: Catalog, plugin: str, problem: PresetValidationError) -> None:
    """``plugin`` lost a name to another plugin: a problem, and a clash of that plugin's."""
    catalog.problems.append(problem)
    catalog.clashes.setdefault(plugin, []).append(problem)


def _add_upstreams(
    catalog: Catalog,
    plugin_set: PluginSet,
    adapters: dict[str, ToolAdapter],
    namespace_prefix: str | None,
) -> None:
    """The upstreams of the files read and of ``presets_upstreams``, and their tools' adapters.

    An upstream whose tools could take a plugin's tool's name is refused here,
    at its declaration (``upstreams.name_clash``), before anything serves it.
    """
    declared = [
        (info.name, item)
        for info, result in plugin_set.call_each("presets_upstreams", catalog.problems.append)
        for item in _items(info, result, catalog)
    ]
    catalog.upstreams = gather_upstreams(catalog.texts, declared)
    catalog.problems.extend(catalog.upstreams.problems)
    prefix = namespace_prefix or ""
    taken = [
        (mcp_name_for(a, prefix), catalog.adapter_plugin.get(a.id, a.source or "?"))
        for a in adapters.values()
    ]
    for upstream in list(catalog.upstreams.upstreams.values()):
        clash = name_clash(upstream, taken, prefix)
        if clash is not None:
            catalog.problems.append(
                PresetValidationError(clash, source=upstream.source, line=upstream.line)
            )
            catalog.upstreams.drop(upstream.name)
    for adapter in catalog.upstreams.adapters:
        first = adapters.get(adapter.id)
        if first is not None:
            catalog.problems.append(
                PresetValidationError(
                    f"tool id {quote(adapter.id)} is provided by {first.source} and by "
                    f"{adapter.source}; rename the upstream",
                    **_made_at(adapter),
                )
            )
            continue
        adapters[adapter.id] = adapter
        catalog.adapter_plugin[adapter.id] = adapter.source or "upstream"


def _items(info: PluginInfo, result: Any, catalog: Catalog) -> Iterable[Any]:
    if result is None:
        return ()
    problem = f"a hook returned {type(result).__name__}; return a list"
    if not isinstance(result, str | bytes | PathLike) and isinstance(result, Iterable):
        try:
            return list(result)
        except Exception as exc:  # a generator of the plugin's raised: the plugin's problem
            problem = (
                f"iterating what a hook returned raised {type(exc).__name__}: {clip(str(exc))}"
            )
    catalog.problems.append(
        PresetValidationError(f"plugin {quote(info.name)}: {problem}", source=info.name)
    )
    return ()


def check_preset_files(
    paths: Iterable[str | PathLike[str] | Traversable], *, max_file_size: int | None = None
) -> Catalog:
    """Check preset files as one set: each file, then preset names across all of them.

    What ``presets validate PATH...`` reports. Tool ids are not checked against
    adapters here: files given by path are checked alone, without plugins.
    ``Catalog.presets`` holds each valid preset once, first definition first.
    ``max_file_size`` bounds each file (default ``loader.max_file_size()``).
    """
    catalog = Catalog()
    for path in paths:
        try:
            _read_and_parse(path, catalog, max_file_size)
        except PresetValidationError as exc:
            catalog.problems.append(exc)
    catalog.presets = _unique(catalog, catalog.presets)
    # An upstream's tools are known from its snapshot, so its ids are checked even here.
    catalog.upstreams = gather_upstreams(catalog.texts)
    catalog.problems.extend(catalog.upstreams.problems)
    locate = _Locator(catalog)
    for preset in catalog.presets:
        for message, index in check_upstream_tool_ids(catalog.upstreams, preset):
            source, line, column = locate.field(preset, ("tool_ids", index))
            catalog.problems.append(
                PresetValidationError(
                    f"preset {quote(preset.name)}: {message}",
                    source=source,
                    line=line,
                    column=column,
                )
            )
    _unique_members(catalog, None)
    return catalog


def _read_and_parse(
    path: str | PathLike[str] | Traversable,
    catalog: Catalog,
    max_file_size: int | None,
    parse_cache: ParseCache | None = None,
) -> list[Preset]:
    """One file's presets, its problems added to ``catalog``; raises PresetValidationError only.

    The loader reports bad content as problems by design; anything else it
    raises is a bug, and a bug met in one file must not cost the other files.
    """
    try:
        source, text = read_preset_source(path, max_size=max_file_size)
        catalog.files.append(source)
        catalog.texts[source] = text
        presets, problems = parse_presets(text, source, catalog, cache=parse_cache)
    except PresetValidationError:
        raise
    except Exception as exc:
        raise PresetValidationError(
            f"reading this preset file failed with {type(exc).__name__}: {clip(str(exc))}; "
            "its presets were skipped (please report this as a bug of agent-presets)",
            source=clip(str(path), 200),
        ) from exc
    catalog.problems.extend(problems)
    catalog.presets.extend(presets)
    return presets


def _load_file(
    info: PluginInfo,
    item: Any,
    catalog: Catalog,
    max_file_size: int | None,
    parse_cache: ParseCache | None,
) -> None:
    if not isinstance(item, str | PathLike | Traversable):
        catalog.problems.append(
            PresetValidationError(
                f"plugin {quote(info.name)}: presets_preset_files returned "
                f"{type(item).__name__}; return paths or importlib.resources traversables",
                source=info.name,
            )
        )
        return
    try:
        presets = _read_and_parse(item, catalog, max_file_size, parse_cache)
    except PresetValidationError as exc:
        catalog.problems.append(
            PresetValidationError(
                f"plugin {quote(info.name)}: {exc.message}",
                source=exc.source,
                line=exc.line,
                column=exc.column,
            )
        )
        return
    for p in presets:
        catalog.preset_plugin.setdefault(p.name, info.name)
        if p.source is not None:
            catalog.file_plugin.setdefault(p.source, info.name)
    members: list[PromptSpec | ResourceSpec] = [*catalog.prompts, *catalog.resources]
    for member in members:
        catalog.member_plugin.setdefault(member.id, info.name)


def _unique(
    catalog: Catalog, presets: Iterable[Preset], builtins: set[str] | frozenset[str] = frozenset()
) -> list[Preset]:
    """The presets whose name is not taken by an earlier one; the others are problems.

    A built-in plugin's preset (``builtins``) keeps its name whichever plugin
    loaded first; the other plugin's definition is the problem, and a clash of
    that plugin's. The kept presets stay in load order.
    """
    presets = list(presets)

    def plugin_of(preset: Preset) -> str | None:
        return catalog.file_plugin.get(preset.source or "")

    keeper: dict[str, Preset] = {}
    for preset in presets:
        held = keeper.get(preset.name)
        if held is None or (plugin_of(preset) in builtins and plugin_of(held) not in builtins):
            keeper[preset.name] = preset
    locate = _Locator(catalog)
    for preset in presets:
        kept = keeper[preset.name]
        if preset is kept:
            continue
        _, line, column = locate.field(preset, ("name",))
        problem = duplicate_preset_error(
            preset.name,
            first_source=kept.source,
            source=preset.source,
            line=line,
            column=column,
        )
        lost_by, kept_by = plugin_of(preset), plugin_of(kept)
        if lost_by is None or kept_by is None or lost_by == kept_by:
            catalog.problems.append(problem)
            continue
        catalog.preset_plugin[preset.name] = kept_by
        _lost(
            catalog,
            lost_by,
            DuplicatePresetError(
                f"{problem.message}; {'the built-in ' if kept_by in builtins else ''}plugin "
                f"{kept_by} keeps it, and plugin {lost_by}'s definition is left out",
                source=problem.source,
                line=problem.line,
                column=problem.column,
            ),
        )
    return [p for p in presets if keeper[p.name] is p]


def patterns_meet(first: Mapping[str, Any], second: Mapping[str, Any]) -> bool:
    """Whether some context matches both patterns.

    Fields one pattern leaves out are wildcards; ``any`` meets everything;
    ``none`` meets only ``none``; other values meet only an equal value.
    """
    for key in first.keys() & second.keys():
        a, b = first[key], second[key]
        if a == ANY or b == ANY:
            continue
        a_none, b_none = a is None or a == NONE, b is None or b == NONE
        if a_none or b_none:
            if a_none != b_none:
                return False
            continue
        if a != b:
            return False
    return True


def can_be_active_together(first: Preset, second: Preset) -> bool:
    """Whether both presets can auto-activate in one context (a preset always meets itself)."""
    if first.name == second.name:
        return True
    if first.default_state != "auto" or second.default_state != "auto":
        return False
    return any(patterns_meet(a, b) for a in first.contexts for b in second.contexts)


def _check_mcp_names(
    catalog: Catalog,
    adapters: dict[str, ToolAdapter],
    presets: list[Preset],
    namespace_prefix: str | None,
    misnamed: Iterable[ToolAdapter] = (),
    builtins: set[str] | frozenset[str] = frozenset(),
) -> set[str]:
    """Report MCP names that would collide (and ``misnamed``); return the ids refused.

    A name belongs to one plugin. Two adapters of one plugin may share it only
    as variants for contexts that never meet: no two presets listing them can
    auto-activate together. The later adapter of a colliding pair is refused,
    and with it the presets that list it; a built-in plugin (``builtins``)
    comes first, so a third party never takes a built-in's name and its
    preset. Each refusal is reported once, at the code that made the adapter
    refused, naming the presets left out with it.
    """
    locate = _Locator(catalog)
    listed_by: dict[str, list[Preset]] = {}
    for preset in presets:
        for tool_id in preset.tool_ids:
            listed_by.setdefault(tool_id, []).append(preset)

    def left_out(adapter: ToolAdapter) -> str:
        names = sorted({p.name for p in listed_by.get(adapter.id, ())})
        return f"; left out with it: preset(s) {', '.join(map(quote, names))}" if names else ""

    refused: set[str] = set()
    for adapter in misnamed:
        refused.add(adapter.id)
        catalog.problems.append(
            PresetValidationError(
                f"tool adapter {quote(adapter.id)}: MCP name {quote(adapter.mcp_name)} "
                f"must start with {namespace_prefix!r}; give the name without the prefix "
                f"as name= and the host applies its own{left_out(adapter)}",
                **_made_at(adapter),
            )
        )
    by_name: dict[str, list[ToolAdapter]] = {}
    for adapter in adapters.values():
        by_name.setdefault(mcp_name_for(adapter, namespace_prefix), []).append(adapter)

    def plugin_of(adapter: ToolAdapter) -> str:
        return catalog.adapter_plugin.get(adapter.id, adapter.source or "?")

    for name, holders in by_name.items():
        kept: list[ToolAdapter] = []
        # sorted() is stable: load order, except that the built-ins come first.
        for adapter in sorted(holders, key=lambda a: plugin_of(a) not in builtins):
            clash = next((k for k in kept if _clash(k, adapter, listed_by)), None)
            if clash is None:
                kept.append(adapter)
                continue
            refused.add(adapter.id)
            clash_at = _describe_made_at(clash) or clash.source
            if clash.source != adapter.source:
                keeper = plugin_of(clash)
                message = (
                    f"MCP name {name!r} is given by tool adapter {adapter.id!r} of plugin "
                    f"{adapter.source} and by {clash.id!r} of plugin {clash.source} (made at "
                    f"{clash_at}); a name belongs to one plugin, and "
                    f"{'the built-in ' if keeper in builtins else ''}plugin {keeper} keeps it: "
                    f"give {adapter.id!r} another name (name=)"
                )
            else:
                first_at = locate.describe(locate.tool(clash.id, listed_by)) or clash_at
                where = locate.describe(locate.tool(adapter.id, listed_by))
                message = (
                    f"MCP name {name!r} is given by tool adapters {clash.id!r} (listed at "
                    f"{first_at}) and {adapter.id!r}{f' (listed at {where})' if where else ''} "
                    f"of plugin {adapter.source}, whose presets can be active in the same "
                    "context; variants of one tool need contexts that never meet: rename one "
                    "or narrow the presets' contexts"
                )
            _lost(
                catalog,
                plugin_of(adapter),
                PresetValidationError(message + left_out(adapter), **_made_at(adapter)),
            )
    return refused


def variants_turned_on_together(
    catalog: Catalog, namespace_prefix: str | None = None
) -> list[PresetValidationError]:
    """Variants of one tool that turning a preset on would offer under one name at once.

    ``collect`` allows one plugin's adapters to share an MCP name when their
    presets never auto-activate together. An ``off`` preset is turned on by
    hand, in whatever context is current, so its variant meets every other
    preset's: the server refuses that override when someone asks for it.
    ``presets validate`` reports it before, at the ``off`` preset's tool id.
    Names are in ``namespace_prefix`` (None: the catalog's).
    """
    if namespace_prefix is None:
        namespace_prefix = catalog.namespace_prefix
    listed_by: dict[str, list[Preset]] = {}
    for preset in catalog.presets:
        for tool_id in preset.tool_ids:
            listed_by.setdefault(tool_id, []).append(preset)
    by_name: dict[str, list[ToolAdapter]] = {}
    for adapter in catalog.adapters:
        by_name.setdefault(mcp_name_for(adapter, namespace_prefix), []).append(adapter)
    locate = _Locator(catalog)
    problems: list[PresetValidationError] = []
    seen: set[tuple[str, str]] = set()
    for name, holders in by_name.items():
        for index, first in enumerate(holders):
            for second in holders[index + 1 :]:
                for p in listed_by.get(first.id, ()):
                    for q in listed_by.get(second.id, ()):
                        if p.name == q.name or "off" not in (p.default_state, q.default_state):
                            continue
                        off, other = (p, q) if p.default_state == "off" else (q, p)
                        mine, theirs = (first, second) if off is p else (second, first)
                        if (off.name, other.name) in seen:
                            continue
                        seen.add((off.name, other.name))
                        source, line, column = locate.field(
                            off, ("tool_ids", off.tool_ids.index(mine.id))
                        )
                        problems.append(
                            PresetValidationError(
                                f"preset {quote(off.name)}: tool {quote(mine.id)} is served as "
                                f"{name!r}, as {quote(theirs.id)} of preset {quote(other.name)} "
                                f"is; turning {quote(off.name)} on while {quote(other.name)} "
                                "is active would offer that name twice, and the server refuses "
                                "it then: give the two tools their own names (name=), or list "
                                "one tool in both presets",
                                source=source,
                                line=line,
                                column=column,
                            )
                        )
    return problems


def _made_at(adapter: ToolAdapter | ContentProvider) -> dict[str, Any]:
    """``source=`` and ``line=`` for a problem of ``adapter``: the code that made it."""
    if adapter.defined_at is None:
        return {"source": adapter.source}
    path, line = adapter.defined_at
    return {"source": display_path(path), "line": line}


def _describe_made_at(adapter: ToolAdapter) -> str | None:
    if adapter.defined_at is None:
        return None
    path, line = adapter.defined_at
    return f"{display_path(path)}:{line}"


def _clash(first: ToolAdapter, second: ToolAdapter, listed_by: Mapping[str, list[Preset]]) -> bool:
    if first.source != second.source:
        return True
    return any(
        can_be_active_together(p, q)
        for p in listed_by.get(first.id, ())
        for q in listed_by.get(second.id, ())
    )


class FollowingProblem(PresetValidationError):
    """A problem that follows from another: ``follows_from`` names the plugins that failed
    to load. Reports put it after its cause and say so."""

    def __init__(
        self,
        message: str,
        follows_from: tuple[str, ...],
        *,
        source: str | None = None,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        super().__init__(message, source=source, line=line, column=column)
        self.follows_from = follows_from


def _check_presets(
    catalog: Catalog,
    presets: list[Preset],
    adapters: Mapping[str, ToolAdapter],
    refused: set[str],
    failed: tuple[str, ...] = (),
) -> list[Preset]:
    """The presets the whole catalog accepts; each one it does not is a problem, at its place.

    While plugins ``failed`` to load, a tool id no adapter provides, and a
    context field or value nobody declared, may be theirs: such a problem is a
    ``FollowingProblem`` that says so, and reports put it after its cause.
    """
    cause = (
        f"; this may follow from plugin(s) {', '.join(map(quote, failed))} failing to load "
        "(reported first): fix that, then check again"
    )
    locate = _Locator(catalog)
    vocabulary = catalog.vocabulary
    prompt_ids = {p.id for p in catalog.prompts}
    resource_ids = {r.id for r in catalog.resources}
    valid: list[Preset] = []
    for preset in presets:
        problems: list[PresetValidationError] = []

        def problem(
            message: str,
            path: tuple[str | int, ...],
            *,
            key: bool = False,
            follows: bool = False,
            preset: Preset = preset,
            problems: list[PresetValidationError] = problems,
        ) -> None:
            source, line, column = locate.field(preset, path, key=key)
            message = f"preset {quote(preset.name)}: {message}"
            if follows and failed:
                problems.append(
                    FollowingProblem(
                        message + cause, failed, source=source, line=line, column=column
                    )
                )
            else:
                problems.append(
                    PresetValidationError(message, source=source, line=line, column=column)
                )

        # A preset listing a refused adapter is left out; the refusal, reported at the
        # adapter, names it, so it is not a problem of its own here.
        lists_refused = any(t in refused for t in preset.tool_ids)
        upstreams = catalog.upstreams
        # Tools of an upstream with no current snapshot are known once the server starts it.
        waits = [t for t in preset.tool_ids if t not in adapters and upstreams.waits_for(t)]
        missing = [
            t for t in preset.tool_ids if t not in adapters and t not in refused and t not in waits
        ]
        if missing:
            more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
            problem(
                f"no loaded plugin provides tool id(s) {', '.join(map(quote, missing[:10]))}{more}"
                if failed
                else f"no installed plugin provides tool id(s) "
                f"{_with_hints(missing[:10], adapters)}{more}; "
                "install the plugin that does or fix the id",
                ("tool_ids", preset.tool_ids.index(missing[0])),
                follows=True,
            )
        for index, tool_id in enumerate(preset.tool_ids):
            risk = upstreams.risk_problem(preset, tool_id)
            if risk is not None:
                problem(risk, ("tool_ids", index))
        for index, pattern in enumerate(preset.contexts):
            for key, on_key, message in vocabulary.pattern_problems(pattern):
                problem(message, ("contexts", index, key), key=on_key, follows=True)
        for key, members in (("prompts", prompt_ids), ("resources", resource_ids)):
            for index, member_id in enumerate(getattr(preset, key)):
                if member_id not in members:
                    kind = "prompt" if key == "prompts" else "resource or resource template"
                    problem(
                        f"no installed plugin declares the {kind} {quote(member_id)}"
                        + did_you_mean(member_id, members, "declare it or fix the id"),
                        (key, index),
                    )
        for tool_id in placeholders(preset.system_prompt or ""):
            # A refused adapter is reported once, at its code, naming this preset.
            if (
                tool_id not in adapters
                and tool_id not in refused
                and not upstreams.waits_for(tool_id)
            ):
                problem(
                    f"the system prompt names {{{{{tool_id}}}}}, but no installed plugin "
                    "provides that tool id"
                    + did_you_mean(tool_id, adapters, "fix the placeholder or install the plugin"),
                    ("system_prompt",),
                    follows=True,
                )
        for name in value_placeholders(preset.system_prompt or ""):
            if vocabulary and name not in vocabulary:
                problem(
                    f"the system prompt names {{{{values:{name}}}}}, but no plugin or host "
                    "declares that context field; fix the placeholder or declare the field",
                    ("system_prompt",),
                )
        if problems:
            catalog.problems.extend(problems)
            continue
        if waits and not lists_refused:
            upstreams.pending.append(preset)
        elif not lists_refused:
            valid.append(preset)
    return valid


def _unique_members(catalog: Catalog, namespace_prefix: str | None) -> None:
    """Keep the first member of each id, prompt name, URI and URI template; report the others.

    Across files and plugins: a client names a prompt by its MCP name and a
    resource by its URI, so two of either could not both be served. The
    prompt names are checked with the host's namespace (none for files
    checked alone, whose names are then compared as declared).
    """
    if not catalog.prompts and not catalog.resources:
        return
    from agent_presets.lib.bundles import PromptSpec, prompt_mcp_name

    seen: dict[tuple[str, str], PromptSpec | ResourceSpec] = {}

    def first(member: PromptSpec | ResourceSpec) -> bool:
        keys: list[tuple[str, str]] = [("id", member.id)]
        if isinstance(member, PromptSpec):
            keys.append(("prompt name", prompt_mcp_name(member, namespace_prefix)))
        elif member.uri is not None:
            keys.append(("URI", member.uri))
        else:
            assert member.uri_template is not None
            keys.append(("URI template", member.uri_template))
        for key in keys:
            earlier = seen.get(key)
            if earlier is None:
                continue
            what, value = key
            at = _where(earlier)
            catalog.problems.append(
                PresetValidationError(
                    f"{_kind(member)} {quote(member.id)}: the {what} {quote(value)} is taken by "
                    f"{_kind(earlier)} {quote(earlier.id)} (declared at {at}); a client could "
                    f"not tell them apart: rename one",
                    source=member.source,
                    line=member.line,
                )
            )
            return False
        for key in keys:
            seen[key] = member
        return True

    catalog.prompts = [p for p in catalog.prompts if first(p)]
    catalog.resources = [r for r in catalog.resources if first(r)]


def _kind(member: PromptSpec | ResourceSpec) -> str:
    return member.kind


def _where(member: PromptSpec | ResourceSpec) -> str:
    return ":".join(str(p) for p in (member.source or "?", member.line) if p is not None)


def _check_members(
    catalog: Catalog,
    plugin_set: PluginSet,
    adapters: Mapping[str, ToolAdapter],
    namespace_prefix: str | None,
) -> None:
    """The plugins' content providers, matched to the members they serve; the rules of both.

    A provider serves one declared member; a prompt without messages needs
    one that renders, a resource without text or blob one that reads, and a
    member's ``{{tool.id}}`` placeholders need a tool some plugin provides.
    A member refused here is left out, and with it every preset that lists it.
    """
    offered = [
        (info, provider)
        for info, result in plugin_set.call_each(
            "presets_content_providers", catalog.problems.append
        )
        for provider in _items(info, result, catalog)
    ]
    if not offered and not catalog.prompts and not catalog.resources:
        return  # a tools-only catalog: nothing to check, and bundles stays unimported
    from agent_presets.lib.bundles import ContentProvider

    _unique_members(catalog, namespace_prefix)
    declared: list[PromptSpec | ResourceSpec] = [*catalog.prompts, *catalog.resources]
    members = {m.id: m for m in declared}
    providers: dict[str, ContentProvider] = {}
    for info, provider in offered:
        if not isinstance(provider, ContentProvider):
            catalog.problems.append(
                PresetValidationError(
                    f"plugin {quote(info.name)}: presets_content_providers returned "
                    f"{type(provider).__name__}, expected ContentProvider",
                    source=info.name,
                )
            )
            continue
        provider = replace(provider, source=provider.source or info.name)
        problem = _provider_problem(provider, members.get(provider.id), providers)
        if problem is not None:
            catalog.problems.append(PresetValidationError(problem, **_made_at(provider)))
            continue
        providers[provider.id] = provider
    refused: set[str] = set()
    for member in members.values():
        problem = _member_problem(member, providers.get(member.id), adapters)
        if problem is not None:
            refused.add(member.id)
            catalog.problems.append(
                PresetValidationError(
                    f"{_kind(member)} {quote(member.id)}: {problem}",
                    source=member.source,
                    line=member.line,
                )
            )
    catalog.prompts = [p for p in catalog.prompts if p.id not in refused]
    catalog.resources = [r for r in catalog.resources if r.id not in refused]
    catalog.providers = [p for i, p in providers.items() if i not in refused]


def _provider_problem(
    provider: ContentProvider,
    member: PromptSpec | ResourceSpec | None,
    providers: Mapping[str, ContentProvider],
) -> str | None:
    from agent_presets.lib.bundles import PromptSpec

    label = f"content provider {quote(provider.id)} of plugin {provider.source}"
    if member is None:
        return (
            f"{label} serves no declared prompt or resource; declare one with that id in a "
            "preset file, or fix the id"
        )
    first = providers.get(provider.id)
    if first is not None:
        return f"{label}: {quote(provider.id)} already has a provider, from {first.source}"
    if isinstance(member, PromptSpec):
        if provider.read is not None:
            return f"{label} gives read, but {quote(provider.id)} is a prompt: give render"
        if provider.render is not None and member.messages is not None:
            return (
                f"{label} renders prompt {quote(provider.id)}, which declares its messages; "
                "leave out one of them"
            )
    else:
        if provider.render is not None:
            return f"{label} gives render, but {quote(provider.id)} is a {member.kind}: give read"
        if provider.read is not None and member.static:
            return (
                f"{label} reads {quote(provider.id)}, which declares its contents; "
                "leave out one of them"
            )
        if provider.complete is not None and member.uri is not None:
            return (
                f"{label} completes {quote(provider.id)}, a resource of one URI with nothing to "
                "complete; complete a prompt or a resource template"
            )
    return None


def _member_problem(
    member: PromptSpec | ResourceSpec,
    provider: ContentProvider | None,
    adapters: Mapping[str, ToolAdapter],
) -> str | None:
    from agent_presets.lib.bundles import PromptSpec, member_placeholders

    texts: list[str] = []
    if isinstance(member, PromptSpec):
        if member.messages is None and (provider is None or provider.render is None):
            return (
                "declares no messages and no plugin renders it; write its messages, or give a "
                "ContentProvider with render for it"
            )
        for message in member.messages or ():
            texts.append(str(message.get("text", "")))
            resource = message.get("resource")
            if isinstance(resource, Mapping):
                texts.extend(str(resource.get(k, "")) for k in ("uri", "text"))
    else:
        if not member.static and (provider is None or provider.read is None):
            return (
                "declares no text or blob and no plugin reads it; write its contents, or give "
                "a ContentProvider with read for it"
            )
        texts.append(member.text or "")
    for text in texts:
        for tool_id in member_placeholders(text):
            if "." in tool_id and tool_id not in adapters:
                return (
                    f"{{{{{tool_id}}}}} names a tool id no installed plugin provides"
                    + did_you_mean(tool_id, adapters, "fix the placeholder or install the plugin")
                )
    return None


def _with_hints(tool_ids: Iterable[str], adapters: Mapping[str, ToolAdapter]) -> str:
    """The ids, quoted, each with the provided id it most likely means."""
    parts = []
    for tool_id in tool_ids:
        close = closest(tool_id, adapters)
        parts.append(quote(tool_id) + (f" (did you mean {close!r}?)" if close else ""))
    return ", ".join(parts)


Location = tuple[str | None, int | None, int | None]


class _Locator:
    """Where a preset's field is written, found by reading its file again when needed.

    Only a problem asks, so a clean catalog never pays for positions.
    """

    def __init__(self, catalog: Catalog) -> None:
        self._texts = catalog.texts
        self._nodes: dict[str, yaml.Node | None] = {}

    def field(self, preset: Preset, path: tuple[str | int, ...], *, key: bool = False) -> Location:
        source = preset.source
        node = self._root(source) if source is not None else None
        if node is None:
            return source, None, None
        found = _preset_node(node, preset.name)
        if found is None:
            return source, None, None
        mark = found.start_mark
        for step in path:
            child = _child(found, step)
            if child is None:
                break
            found, key_mark = child
            mark = key_mark if key and step == path[-1] else found.start_mark
        return source, mark.line + 1, mark.column + 1

    def tool(self, tool_id: str, listed_by: Mapping[str, list[Preset]]) -> Location:
        """Where the first preset listing ``tool_id`` lists it."""
        for preset in listed_by.get(tool_id, ()):
            return self.field(preset, ("tool_ids", preset.tool_ids.index(tool_id)))
        return None, None, None

    @staticmethod
    def describe(location: Location) -> str | None:
        source, line, column = location
        if source is None:
            return None
        return ":".join(str(p) for p in (source, line, column) if p is not None)

    def _root(self, source: str) -> yaml.Node | None:
        import yaml  # a problem's position only: a clean catalog never imports PyYAML

        from agent_presets.lib.yamlfile import PresetYamlLoader

        if source not in self._nodes:
            text = self._texts.get(source)
            node = None
            if text is not None:
                loader = PresetYamlLoader(text)
                try:
                    node = loader.get_single_node()
                except yaml.YAMLError:
                    node = None
                finally:
                    loader.dispose()
            self._nodes[source] = node
        return self._nodes[source]


def _child(node: yaml.Node, step: str | int) -> tuple[yaml.Node, yaml.Mark] | None:
    import yaml

    if isinstance(node, yaml.MappingNode) and isinstance(step, str):
        for key_node, value_node in node.value:
            if key_node.value == step:
                return value_node, key_node.start_mark
    if isinstance(node, yaml.SequenceNode) and isinstance(step, int) and step < len(node.value):
        item = node.value[step]
        return item, item.start_mark
    return None


def _preset_node(root: yaml.Node, name: str) -> yaml.Node | None:
    import yaml

    found = _child(root, "presets")
    if found is None or not isinstance(found[0], yaml.SequenceNode):
        return None
    for item in found[0].value:
        named = _child(item, "name")
        if named is not None and getattr(named[0], "value", None) == name:
            node: yaml.Node = item
            return node
    return None
