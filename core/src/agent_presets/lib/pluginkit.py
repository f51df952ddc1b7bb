"""``PluginHooks``: the hook implementations every plugin package writes the same way.

A plugin's ``__init__.py`` states what is its own (its context fields, its
tools, its runtime) and takes the rest from here::

    _hooks = PluginHooks(
        __name__,
        context_fields=[{"name": "activity", "values": ["notes"]}],
        runtimes={"notes": ".notebook:Notebook"},
    )
    presets_preset_files = _hooks.presets_preset_files
    presets_context_fields = _hooks.presets_context_fields
    presets_tool_adapters = _hooks.presets_tool_adapters
    presets_headless_runtime = _hooks.presets_headless_runtime

Each module attribute is named after its hook, so pluggy finds it as it
finds a function, and the plugin keeps every hook name.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from importlib.resources import files
from importlib.resources.abc import Traversable
from importlib.util import resolve_name
from typing import TYPE_CHECKING, Any

from agent_presets.hookspecs import hookimpl

if TYPE_CHECKING:
    from agent_presets.lib.adapters import ToolAdapter
    from agent_presets.lib.rows import RowTable

RuntimeClass = type[Any] | str
"""A table runtime's class (``from_table(table)``, ``migrate(saved, table)``, as
``agent_presets.TableRuntime`` has them), or where it is: ``"module:Class"``, the
module relative to the package, imported when a world first uses the runtime."""


class PluginHooks:
    """The standard hooks of the plugin package ``package``.

    - ``presets_preset_files``: the package's ``preset_files`` (default
      ``presets.yaml``), found with ``importlib.resources`` so they are read
      from an installed wheel as from a checkout.
    - ``presets_context_fields``: the ``context_fields`` declarations, as given.
    - ``presets_tool_adapters``: what ``adapters`` gives. A module name
      (default ``.adapters``, relative to the package) is imported when the
      hook is first called and its ``tool_adapters()`` called, so loading the
      plugin builds no adapter and checks no schema; a function is called as
      it is (a plugin of one module passes its own ``tool_adapters``);
      ``None``: the plugin has no tools.
    - ``presets_headless_runtime``: each of ``runtimes`` (name -> class) as
      a table runtime of the headless host, one per world, made with the
      class's ``from_table`` and converted from a state an earlier version
      saved whole with its ``migrate``.
    - ``module_getattr``: a module ``__getattr__`` that gives each runtime
      class named ``"module:Class"`` as the package's ``Class``, loaded then.
    """

    def __init__(
        self,
        package: str,
        *,
        context_fields: Sequence[Mapping[str, Any]] = (),
        preset_files: Sequence[str] = ("presets.yaml",),
        adapters: str | Callable[[], Sequence[ToolAdapter]] | None = ".adapters",
        runtimes: Mapping[str, RuntimeClass] | None = None,
    ) -> None:
        self.package = package
        self.context_fields = [dict(f) for f in context_fields]
        self.preset_files = list(preset_files)
        self.adapters = adapters
        self.runtimes = dict(runtimes or {})
        for name, runtime in self.runtimes.items():
            if isinstance(runtime, str) and not all(runtime.partition(":")[::2]):
                raise ValueError(
                    f"PluginHooks({package!r}): runtime {name!r} is {runtime!r}; give the class, "
                    "or where it is as 'module:Class' (the module relative to the package)"
                )

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
        """The package's adapters: ``tool_adapters()`` of its adapters module, or the function."""
        if self.adapters is None:
            return []
        if callable(self.adapters):
            return list(self.adapters())
        module = self._module(self.adapters)
        make = getattr(module, "tool_adapters", None)
        if not callable(make):
            raise AttributeError(
                f"{module.__name__} has no tool_adapters() function; define one returning the "
                f"plugin's adapters, or pass PluginHooks(adapters=...) the module that has it"
            )
        return list(make())

    @hookimpl
    def presets_headless_runtime(self, host: Any) -> None:
        """Each of ``runtimes`` as a per-world table runtime of ``host``."""
        for name, runtime in self.runtimes.items():
            host.add_table_runtime(
                name,
                partial(self._from_table, runtime),
                migrate=partial(self._migrate, runtime),
            )

    def module_getattr(self, name: str) -> Any:
        """The package's ``__getattr__`` (PEP 562): a runtime class, by its name, on first use."""
        for runtime in self.runtimes.values():
            if isinstance(runtime, str) and runtime.partition(":")[2] == name:
                return self._runtime_class(runtime)
        raise AttributeError(f"module {self.package!r} has no attribute {name!r}")

    def _from_table(self, runtime: RuntimeClass, table: RowTable) -> Any:
        return self._runtime_class(runtime).from_table(table)

    def _migrate(self, runtime: RuntimeClass, saved: Any, table: RowTable) -> None:
        self._runtime_class(runtime).migrate(saved, table)

    def _runtime_class(self, runtime: RuntimeClass) -> Any:
        if not isinstance(runtime, str):
            return runtime
        module, _, attribute = runtime.partition(":")
        return getattr(self._module(module), attribute)

    def _module(self, name: str) -> Any:
        absolute = resolve_name(name, self.package)
        # __import__, not importlib.import_module: the import statement's path, which
        # `python -X importtime` reports, so import-cost checks see the module load.
        __import__(absolute)
        return sys.modules[absolute]
