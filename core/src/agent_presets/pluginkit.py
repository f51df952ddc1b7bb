"""``PluginHooks``: the hook implementations every plugin package writes the same way.

A plugin's ``__init__.py`` states what is its own (its context fields, its
runtime) and takes the rest from here::

    _hooks = PluginHooks(__name__, context_fields=[{"name": "activity", ...}])
    presets_preset_files = _hooks.presets_preset_files
    presets_context_fields = _hooks.presets_context_fields
    presets_tool_adapters = _hooks.presets_tool_adapters

Each module attribute is named after its hook, so pluggy finds it as it
finds a function, and the plugin keeps every hook name.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from importlib.resources import files
from importlib.resources.abc import Traversable
from importlib.util import resolve_name
from typing import TYPE_CHECKING, Any

from agent_presets.hookspecs import hookimpl

if TYPE_CHECKING:
    from agent_presets.adapters import ToolAdapter


class PluginHooks:
    """The standard hooks of the plugin package ``package``.

    - ``presets_preset_files``: the package's ``preset_files`` (default
      ``presets.yaml``), found with ``importlib.resources`` so they are read
      from an installed wheel as from a checkout.
    - ``presets_context_fields``: the ``context_fields`` declarations, as given.
    - ``presets_tool_adapters``: ``tool_adapters()`` of the module ``adapters``
      (default ``.adapters``, relative to the package), imported when the
      hook is first called, so loading the plugin builds no adapter and checks
      no schema. ``adapters=None``: the plugin has no tools.
    """

    def __init__(
        self,
        package: str,
        *,
        context_fields: Sequence[Mapping[str, Any]] = (),
        preset_files: Sequence[str] = ("presets.yaml",),
        adapters: str | None = ".adapters",
    ) -> None:
        self.package = package
        self.context_fields = [dict(f) for f in context_fields]
        self.preset_files = list(preset_files)
        self.adapters = adapters

    def __repr__(self) -> str:
        return f"PluginHooks({self.package!r})"

    @hookimpl
    def presets_preset_files(self) -> list[Traversable]:
        """The package's preset files."""
        folder = files(self.package)
        return [folder / name for name in self.preset_files]

    @hookimpl
    def presets_context_fields(self) -> list[dict[str, Any]]:
        """The context fields and values the package's presets rely on."""
        return [dict(f) for f in self.context_fields]

    @hookimpl
    def presets_tool_adapters(self) -> list[ToolAdapter]:
        """The package's adapters: ``tool_adapters()`` of its adapters module."""
        if self.adapters is None:
            return []
        name = resolve_name(self.adapters, self.package)
        # __import__, not importlib.import_module: the import statement's path, which
        # `python -X importtime` reports, so import-cost checks see the adapters load.
        __import__(name)
        module = sys.modules[name]
        make = getattr(module, "tool_adapters", None)
        if not callable(make):
            raise AttributeError(
                f"{module.__name__} has no tool_adapters() function; define one returning the "
                f"plugin's adapters, or pass PluginHooks(adapters=...) the module that has it"
            )
        return list(make())
