"""Finding and loading plugins: pluggy over the ``agent_presets`` entry point group.

One plugin that fails to import is reported (with its distribution, the
error, and how to leave it out) and the rest load, so a broken plugin never
breaks the command that would uninstall it. ``PRESETS_STRICT=1`` makes any
such problem fatal.

Environment:
- ``PRESETS_LOAD_PLUGINS``: unset loads all; empty loads none; a comma list
  loads only those (entry point names, as ``presets plugins`` prints them).
- ``PRESETS_STRICT=1``: plugin and definition problems are errors.
- ``PRESETS_TRACE_PLUGINS=1``: print every hook call to stderr.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import pluggy

import agent_presets.hookspecs as hookspecs
from agent_presets.model import PresetError, PresetValidationError

if TYPE_CHECKING:
    from importlib.metadata import Distribution, EntryPoint

ENTRY_POINT_GROUP: Final = "agent_presets"
BUILTIN_DISTRIBUTIONS: Final = frozenset(
    f"agent-presets-{n}" for n in ("drawing", "graph", "scene", "general", "units")
)
HOOK_NAMES: Final = tuple(
    name
    for name, value in vars(hookspecs).items()
    if callable(value) and hasattr(value, f"{hookspecs.PROJECT_NAME}_spec")
)
"""Every hook the core declares, read from the hook specs (so a new hook needs no edit here)."""


class PluginLoadError(PresetError):
    """Plugins could not be loaded (raised only in strict mode)."""


@dataclass(frozen=True)
class PluginInfo:
    name: str
    plugin: object = field(repr=False, compare=False)
    distribution: str | None = None
    version: str | None = None
    hooks: tuple[str, ...] = ()

    @property
    def builtin(self) -> bool:
        return self.distribution in BUILTIN_DISTRIBUTIONS

    @property
    def label(self) -> str:
        if self.distribution:
            return f"{self.name} ({self.distribution} {self.version or ''})".replace(" )", ")")
        return self.name


class PluginProblem(PresetValidationError):
    """A plugin that could not be loaded or whose hook failed: the problem type, for plugins.

    ``plugin`` is the plugin's name and ``distribution`` the distribution that
    ships it, where known; ``str()`` is the message alone.
    """

    def __init__(self, plugin: str, message: str, distribution: str | None = None) -> None:
        super().__init__(message)
        self.plugin = plugin
        self.distribution = distribution


def get_plugin_manager() -> pluggy.PluginManager:
    """A fresh plugin manager with the agent-presets hook specs."""
    pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    return pm


def env_flag(name: str, env: Mapping[str, str] | None = None) -> bool:
    value = (os.environ if env is None else env).get(name, "")
    return value.strip().lower() in {"1", "true", "yes", "on"}


class PluginSet:
    """Loaded plugins, the problems met loading them, and their hook caller."""

    def __init__(self, pm: pluggy.PluginManager) -> None:
        self.pm = pm
        self.plugins: list[PluginInfo] = []
        self.problems: list[PluginProblem] = []

    @property
    def hook(self) -> Any:
        return self.pm.hook

    def get(self, name: str) -> PluginInfo | None:
        return next((p for p in self.plugins if p.name == name), None)

    def call_each(
        self,
        hook_name: str,
        on_error: Callable[[PluginInfo, Exception], None] | None = None,
        **kwargs: Any,
    ) -> list[tuple[PluginInfo, Any]]:
        """Call a hook plugin by plugin, so each result is attributed to its plugin.

        A plugin whose hook raises is passed to ``on_error`` (default: recorded
        in ``problems``) and the other plugins still run.
        """
        results = []
        for info in self.plugins:
            if hook_name not in info.hooks:
                continue
            others = [p for p in self.pm.get_plugins() if p is not info.plugin]
            caller = self.pm.subset_hook_caller(hook_name, remove_plugins=others)
            try:
                outcome = caller(**kwargs)
            except Exception as exc:  # one plugin's bug must not stop the others
                if on_error is not None:
                    on_error(info, exc)
                else:
                    self.problems.append(
                        PluginProblem(
                            info.name,
                            f"plugin {info.label}: hook {hook_name} raised "
                            f"{type(exc).__name__}: {exc}; its contribution was skipped",
                            info.distribution,
                        )
                    )
                continue
            for result in outcome:
                results.append((info, result))
        return results


def _entry_points() -> list[tuple[EntryPoint, Distribution]]:
    """Every ``agent_presets`` entry point with its distribution, from one scan of sys.path.

    The one scan is reused for loading (pluggy's ``load_setuptools_entrypoints``
    scans every installed distribution again on each call: once per plugin).
    """
    import importlib.metadata

    found = []
    seen: set[tuple[str, str]] = set()
    for dist in importlib.metadata.distributions():
        for ep in dist.entry_points:
            if ep.group != ENTRY_POINT_GROUP:
                continue
            key = (dist.metadata["name"] or "", ep.name)
            if key in seen:  # the same distribution found twice on sys.path
                continue
            seen.add(key)
            found.append((ep, dist))
    return found


def load_plugins(
    plugins: Iterable[object] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    pm: pluggy.PluginManager | None = None,
    strict: bool | None = None,
) -> PluginSet:
    """Discover plugins from entry points, or register the given plugin objects.

    ``plugins`` (modules or objects with hook implementations) replaces
    discovery: tests and embedding hosts use it to choose exactly what loads.
    ``strict`` makes any problem fatal; None reads ``PRESETS_STRICT`` from ``env``.
    """
    env = os.environ if env is None else env
    pm = pm or get_plugin_manager()
    plugin_set = PluginSet(pm)
    if env_flag("PRESETS_TRACE_PLUGINS", env):
        pm.trace.root.setwriter(sys.stderr.write)
        pm.enable_tracing()
    if plugins is not None:
        taken: set[str] = set()
        for obj in plugins:
            base = getattr(obj, "__name__", None) or type(obj).__name__
            name, n = base, 1
            while name in taken:  # two instances of one class
                n += 1
                name = f"{base}#{n}"
            taken.add(name)

            def register(obj: object = obj, name: str = name) -> None:
                pm.register(obj, name=name)

            _register(plugin_set, name, register, None, None)
    else:
        _discover(plugin_set, env)
    if strict is None:
        strict = env_flag("PRESETS_STRICT", env)
    if plugin_set.problems and strict:
        raise PluginLoadError(
            "plugin problems (PRESETS_STRICT=1 makes them fatal):\n"
            + "\n".join(f"  {p}" for p in plugin_set.problems)
        )
    return plugin_set


def _discover(plugin_set: PluginSet, env: Mapping[str, str]) -> None:
    pm = plugin_set.pm
    entries = _entry_points()
    wanted = env.get("PRESETS_LOAD_PLUGINS")
    allowed: set[str] | None = None
    if wanted is not None:
        allowed = {n.strip() for n in wanted.split(",") if n.strip()}
        installed = {ep.name for ep, _ in entries}
        for name in sorted(allowed - installed):
            plugin_set.problems.append(
                PluginProblem(
                    name,
                    f"PRESETS_LOAD_PLUGINS names {name!r}, which no installed distribution "
                    f"provides; installed plugins: {', '.join(sorted(installed)) or 'none'}",
                )
            )
    by_name: dict[str, str] = {}
    for ep, dist in entries:
        dist_name = dist.metadata["name"]
        if allowed is not None and ep.name not in allowed:
            pm.set_blocked(ep.name)
            continue
        if ep.name in by_name:
            plugin_set.problems.append(
                PluginProblem(
                    ep.name,
                    f"plugin name {ep.name!r} is claimed by two distributions, {by_name[ep.name]} "
                    f"and {dist_name}; only the first was loaded: uninstall one of them",
                    dist_name,
                )
            )
            continue
        by_name[ep.name] = dist_name

        def load(ep: EntryPoint = ep) -> None:
            pm.register(ep.load(), name=ep.name)

        _register(plugin_set, ep.name, load, dist_name, dist.version)


def _register(
    plugin_set: PluginSet,
    name: str,
    load: Callable[[], Any],
    dist_name: str | None,
    version: str | None,
) -> None:
    pm = plugin_set.pm
    before = set(map(id, pm.get_plugins()))
    try:
        load()
        plugin = pm.get_plugin(name)
        if plugin is None:
            return
        pm.check_pending()
    except Exception as exc:  # a plugin's import or validation failure must not stop the rest
        plugin = pm.get_plugin(name)
        if plugin is not None and id(plugin) not in before:
            pm.unregister(plugin)
        what = f"distribution {dist_name} {version}" if dist_name else "plugin object"
        leave_out = (
            f"leave it out with PRESETS_LOAD_PLUGINS (a comma list of the plugins to "
            f"load) or `pip uninstall {dist_name}`"
            if dist_name
            else "fix or remove it"
        )
        plugin_set.problems.append(
            PluginProblem(
                name,
                f"plugin {name!r} ({what}) failed to load: {type(exc).__name__}: {exc}; it was "
                f"skipped; {leave_out}",
                dist_name,
            )
        )
        return
    hooks = tuple(h.name for h in (pm.get_hookcallers(plugin) or []) if h.name in HOOK_NAMES)
    plugin_set.plugins.append(PluginInfo(name, plugin, dist_name, version, hooks))


def plugin_names(plugin_set: PluginSet) -> Sequence[str]:
    return [p.name for p in plugin_set.plugins]
