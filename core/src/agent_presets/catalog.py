"""Everything the loaded plugins define, checked as a whole.

Shared by ``bootstrap`` and ``serve`` (which register what is valid) and
``presets validate`` (which reports every problem): presets from each
plugin's files, adapters from each plugin, cross-plugin collisions named with
both sources, tool ids that no adapter provides, MCP names without the
registry prefix. ``check_preset_files`` applies the same file and whole-set
rules to preset files given by path, with no plugin around them.
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


@dataclass
class Catalog:
    presets: list[Preset] = field(default_factory=list)
    adapters: list[ToolAdapter] = field(default_factory=list)
    problems: list[PresetValidationError] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    preset_plugin: dict[str, str] = field(default_factory=dict)
    adapter_plugin: dict[str, str] = field(default_factory=dict)


def collect(plugin_set: PluginSet, *, namespace_prefix: str | None = DEFAULT_NAMESPACE) -> Catalog:
    catalog = Catalog()
    hook_failed = catalog.problems.append
    for info, result in plugin_set.call_each("presets_preset_files", hook_failed):
        for item in _items(info, result, catalog):
            _load_file(info, item, catalog)
    adapters: dict[str, ToolAdapter] = {}
    for info, result in plugin_set.call_each("presets_tool_adapters", hook_failed):
        for adapter in _items(info, result, catalog):
            if not isinstance(adapter, ToolAdapter):
                catalog.problems.append(
                    PresetValidationError(
                        f"plugin {info.name!r}: presets_tool_adapters returned "
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
                        f"tool adapter {adapter.id!r} is provided twice: by {first.source} and by "
                        f"{adapter.source}; uninstall or disable one of them",
                        source=adapter.source,
                    )
                )
                continue
            if namespace_prefix and not adapter.mcp_name.startswith(namespace_prefix):
                catalog.problems.append(
                    PresetValidationError(
                        f"tool adapter {adapter.id!r}: MCP name {adapter.mcp_name!r} must start "
                        f"with {namespace_prefix!r}",
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
    if isinstance(result, str | bytes | PathLike) or not isinstance(result, Iterable):
        catalog.problems.append(
            PresetValidationError(
                f"plugin {info.name!r}: a hook returned {type(result).__name__}; return a list",
                source=info.name,
            )
        )
        return ()
    return list(result)


def check_preset_files(paths: Iterable[str | PathLike[str] | Traversable]) -> Catalog:
    """Check preset files as one set: each file, then preset names across all of them.

    What ``presets validate PATH...`` reports. Tool ids are not checked against
    adapters here: files given by path are checked alone, without plugins.
    ``Catalog.presets`` holds each valid preset once, first definition first.
    """
    catalog = Catalog()
    for path in paths:
        try:
            source, text = read_preset_source(path)
        except PresetValidationError as exc:
            catalog.problems.append(exc)
            continue
        _parse(source, text, catalog)
    catalog.presets = _unique(catalog, catalog.presets)
    return catalog


def _parse(source: str, text: str, catalog: Catalog) -> list[Preset]:
    catalog.files.append(source)
    presets, problems = parse_presets(text, source)
    catalog.problems.extend(problems)
    catalog.presets.extend(presets)
    return presets


def _load_file(info: PluginInfo, item: Any, catalog: Catalog) -> None:
    if not isinstance(item, str | PathLike | Traversable):
        catalog.problems.append(
            PresetValidationError(
                f"plugin {info.name!r}: presets_preset_files returned {type(item).__name__}; "
                "return paths or importlib.resources traversables",
                source=info.name,
            )
        )
        return
    try:
        source, text = read_preset_source(item)
    except PresetValidationError as exc:
        catalog.problems.append(
            PresetValidationError(f"plugin {info.name!r}: {exc.message}", source=exc.source)
        )
        return
    for p in _parse(source, text, catalog):
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
                    f"preset {preset.name!r}: no installed plugin provides tool id(s) "
                    f"{', '.join(map(repr, missing))}; install the plugin that does or fix the id",
                    source=preset.source,
                )
            )
            continue
        valid.append(preset)
    return valid
