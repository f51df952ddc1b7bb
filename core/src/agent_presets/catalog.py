"""Everything the loaded plugins define, checked as a whole.

Shared by ``bootstrap`` and ``serve`` (which register what is valid) and
``presets validate`` (which reports every problem): presets from each
plugin's files, adapters from each plugin, cross-plugin collisions named with
both sources, tool ids that no adapter provides, MCP names without the
registry prefix. ``check_preset_files`` applies the same file and whole-set
rules to preset files given by path, with no plugin around them.

A preset file is input from whoever wrote the plugin: whatever one file does,
its problems are its own, and every other file and plugin still loads.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from importlib.resources.abc import Traversable
from os import PathLike
from typing import Any

from agent_presets.adapters import ToolAdapter
from agent_presets.loader import parse_presets, read_preset_source
from agent_presets.model import (
    DEFAULT_NAMESPACE,
    Preset,
    PresetValidationError,
    duplicate_preset_error,
)
from agent_presets.plugins import PluginInfo, PluginSet
from agent_presets.schema import clip, quote


@dataclass
class Catalog:
    presets: list[Preset] = field(default_factory=list)
    adapters: list[ToolAdapter] = field(default_factory=list)
    problems: list[PresetValidationError] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    preset_plugin: dict[str, str] = field(default_factory=dict)
    adapter_plugin: dict[str, str] = field(default_factory=dict)


def collect(
    plugin_set: PluginSet,
    *,
    namespace_prefix: str | None = DEFAULT_NAMESPACE,
    max_file_size: int | None = None,
) -> Catalog:
    """Every plugin's presets and adapters, checked; ``max_file_size`` bounds each preset file."""
    catalog = Catalog()
    hook_failed = catalog.problems.append
    for info, result in plugin_set.call_each("presets_preset_files", hook_failed):
        for item in _items(info, result, catalog):
            _load_file(info, item, catalog, max_file_size)
    adapters: dict[str, ToolAdapter] = {}
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
                catalog.problems.append(
                    PresetValidationError(
                        f"tool adapter {quote(adapter.id)} is provided twice: by {first.source} "
                        f"and by {adapter.source}; uninstall or disable one of them",
                        source=adapter.source,
                    )
                )
                continue
            if namespace_prefix and not adapter.mcp_name.startswith(namespace_prefix):
                catalog.problems.append(
                    PresetValidationError(
                        f"tool adapter {quote(adapter.id)}: MCP name {quote(adapter.mcp_name)} "
                        f"must start with {namespace_prefix!r}",
                        source=adapter.source,
                    )
                )
                continue
            adapters[adapter.id] = adapter
            catalog.adapter_plugin[adapter.id] = info.name
    catalog.adapters = list(adapters.values())
    catalog.presets = _check_presets(catalog, adapters)
    return catalog


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
    return catalog


def _read_and_parse(
    path: str | PathLike[str] | Traversable, catalog: Catalog, max_file_size: int | None
) -> list[Preset]:
    """One file's presets, its problems added to ``catalog``; raises PresetValidationError only.

    The loader reports bad content as problems by design; anything else it
    raises is a bug, and a bug met in one file must not cost the other files.
    """
    try:
        source, text = read_preset_source(path, max_size=max_file_size)
        catalog.files.append(source)
        presets, problems = parse_presets(text, source)
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


def _load_file(info: PluginInfo, item: Any, catalog: Catalog, max_file_size: int | None) -> None:
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
        presets = _read_and_parse(item, catalog, max_file_size)
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


def _unique(catalog: Catalog, presets: Iterable[Preset]) -> list[Preset]:
    """The presets whose name is not taken by an earlier one; the others are problems."""
    first: dict[str, Preset] = {}
    for preset in presets:
        earlier = first.get(preset.name)
        if earlier is not None:
            catalog.problems.append(
                duplicate_preset_error(
                    preset.name, first_source=earlier.source, source=preset.source
                )
            )
            continue
        first[preset.name] = preset
    return list(first.values())


def _check_presets(catalog: Catalog, adapters: dict[str, ToolAdapter]) -> list[Preset]:
    valid: list[Preset] = []
    for preset in _unique(catalog, catalog.presets):
        missing = [t for t in preset.tool_ids if t not in adapters]
        if missing:
            catalog.problems.append(
                PresetValidationError(
                    f"preset {quote(preset.name)}: no installed plugin provides tool id(s) "
                    f"{', '.join(map(quote, missing[:10]))}"
                    f"{f' and {len(missing) - 10} more' if len(missing) > 10 else ''}; "
                    "install the plugin that does or fix the id",
                    source=preset.source,
                )
            )
            continue
        valid.append(preset)
    return valid
