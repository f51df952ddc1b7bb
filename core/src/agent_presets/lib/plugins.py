"""Finding and loading plugins: pluggy over the ``agent_presets`` entry point group,
and the one-off plugins of a plugins folder.

One plugin that fails to import is reported (with its distribution or file,
the error, where it was raised, and how to leave it out) and the rest load,
so a broken plugin never breaks the command that would uninstall it. A hook
that raises is reported the same way, naming the plugin, the hook and the
``file:line`` in the plugin's code. ``PRESETS_STRICT=1`` makes any such
problem fatal.

A plugins folder (datasette's ``--plugins-dir``) holds plugins that need no
packaging: each ``*.py`` module is a plugin named after the module, and the
``*.yaml``/``*.yml`` preset files together are a plugin named after the
folder.

Environment:
- ``PRESETS_LOAD_PLUGINS``: unset loads all; empty loads none; a comma list
  loads only those (the names ``presets plugins`` prints, folder plugins
  included).
- ``PRESETS_PLUGINS_DIR``: a plugins folder to load as well.
- ``PRESETS_STRICT=1``: plugin and definition problems are errors.
- ``PRESETS_TRACE_PLUGINS=1``: one line per hook call on stderr.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final

import pluggy

import agent_presets.hookspecs as hookspecs
from agent_presets.hosting import HostDefaults
from agent_presets.lib.model import DEFAULT_NAMESPACE, PresetError, PresetValidationError

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
    path: str | None = None
    """The file or folder a plugins-folder plugin was loaded from."""

    @property
    def builtin(self) -> bool:
        return self.distribution in BUILTIN_DISTRIBUTIONS

    @property
    def label(self) -> str:
        if self.distribution:
            return f"{self.name} ({self.distribution} {self.version or ''})".replace(" )", ")")
        if self.path:
            return f"{self.name} ({self.path})"
        return self.name


class PluginProblem(PresetValidationError):
    """A plugin that could not be loaded or whose hook failed: the problem type, for plugins.

    ``plugin`` is the plugin's name, ``distribution`` the distribution that
    ships it and ``hook`` the hook that raised, where known. ``source`` and
    ``line`` are where in the plugin's code the error was raised, so
    ``str()`` reads ``file:line: message`` like every other diagnostic.
    """

    def __init__(
        self,
        plugin: str,
        message: str,
        distribution: str | None = None,
        *,
        hook: str | None = None,
        source: str | None = None,
        line: int | None = None,
        error: BaseException | None = None,
    ) -> None:
        super().__init__(message, source=source, line=line)
        self.plugin = plugin
        self.distribution = distribution
        self.hook = hook
        self.error = error
        """The exception the hook raised, when it raised one (the test kit re-raises it)."""


class PresetFolder:
    """Preset files as a plugin: the YAML files of a plugins folder, or files given by path."""

    def __init__(self, files: Iterable[Path]) -> None:
        self.files = tuple(files)

    @hookspecs.hookimpl
    def presets_preset_files(self) -> list[Path]:
        return list(self.files)


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
        self._host_defaults: tuple[HostDefaults | None] | None = None

    def host_defaults(self) -> HostDefaults | None:
        """What the app plugin among these supplies (``presets_host_defaults``), or None.

        One plugin supplies a host's defaults. A second one that does is a
        problem in ``problems`` naming both; the first (in load order) is
        used. A result that is not ``HostDefaults`` is a problem too. Asked
        once: the answer is kept until a plugin is added.
        """
        if self._host_defaults is None:
            self._host_defaults = (self._first_host_defaults(),)
        return self._host_defaults[0]

    def namespace(self) -> str:
        """The namespace the app plugin gives its host (``DEFAULT_NAMESPACE`` without one)."""
        defaults = self.host_defaults()
        return DEFAULT_NAMESPACE if defaults is None else defaults.namespace

    def _first_host_defaults(self) -> HostDefaults | None:
        hook = "presets_host_defaults"
        found: list[tuple[PluginInfo, HostDefaults]] = []
        for info, result in self.call_each(hook):
            if result is None:
                continue
            if not isinstance(result, HostDefaults):
                problem = (
                    f"plugin {info.label}: hook {hook} returned {type(result).__name__}; return "
                    "an agent_presets.host.HostDefaults, or None; it was left out"
                )
            elif found:
                problem = (
                    f"plugin {info.label}: hook {hook} supplies the host's defaults, which plugin "
                    f"{found[0][0].label} supplies already; only the first is used: leave one of "
                    "them out (PRESETS_LOAD_PLUGINS)"
                )
            else:
                found.append((info, result))
                continue
            self.problems.append(PluginProblem(info.name, problem, info.distribution, hook=hook))
        return found[0][1] if found else None

    @property
    def hook(self) -> Any:
        """pluggy's hook caller for these plugins (``plugin_set.hook.presets_tool_adapters()``)."""
        return self.pm.hook

    def get(self, name: str) -> PluginInfo | None:
        """The loaded plugin named ``name`` (as ``presets plugins`` prints it), or None."""
        return next((p for p in self.plugins if p.name == name), None)

    def call_each(
        self,
        hook_name: str,
        on_error: Callable[[PluginProblem], None] | None = None,
        **kwargs: Any,
    ) -> list[tuple[PluginInfo, Any]]:
        """Call a hook plugin by plugin, so each result is attributed to its plugin.

        A plugin whose hook raises becomes a ``PluginProblem`` naming the
        plugin, the hook, the exception and where in the plugin it was
        raised; it is passed to ``on_error`` (default: recorded in
        ``problems``) and the other plugins still run.
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
                (on_error or self.problems.append)(hook_problem(info, hook_name, exc))
                continue
            if caller.spec is not None and caller.spec.opts.get("firstresult"):
                outcome = [] if outcome is None else [outcome]  # one value, not a list
            for result in outcome:
                results.append((info, result))
        return results

    def leave_out_hook(self, name: str, hook_name: str) -> None:
        """Stop calling one plugin's hook through ``call_each`` (its other hooks still run).

        ``presets validate --installed`` uses it to put the files it was given
        in place of the installed copy of the same files.
        """
        self.plugins = [
            replace(p, hooks=tuple(h for h in p.hooks if h != hook_name)) if p.name == name else p
            for p in self.plugins
        ]

    def add(self, plugin: object, name: str | None = None, path: str | None = None) -> None:
        """Register one more plugin object after loading (a host declaring its context, say).

        Named ``name``, else after its ``__name__`` or class; a plugin already
        here is left alone. A failure to register is a problem, as in discovery.
        """
        name = name or getattr(plugin, "__name__", None) or type(plugin).__name__
        if self.pm.is_registered(plugin) or self.pm.get_plugin(name) is not None:
            return
        self._host_defaults = None  # asked again: the new plugin may supply them

        def register() -> None:
            self.pm.register(plugin, name=name)

        _register(self, name, register, None, None, path=path, roots=lambda: _code_roots(plugin))


def hook_problem(info: PluginInfo, hook_name: str, exc: BaseException) -> PluginProblem:
    """The problem a raising hook is: plugin, hook, exception, and where in the plugin it raised."""
    where = where_raised(exc, _code_roots(info.plugin))
    return PluginProblem(
        info.name,
        f"plugin {info.label}: hook {hook_name} raised {type(exc).__name__}: {exc}; "
        "what it would have added was skipped",
        info.distribution,
        hook=hook_name,
        source=where[0] if where else None,
        line=where[1] if where else None,
        error=exc,
    )


def where_raised(exc: BaseException, roots: Sequence[Path]) -> tuple[str, int] | None:
    """``(file, line)`` of the last traceback frame inside ``roots`` (the plugin's code).

    The last frame in the plugin, not the last frame overall: an error raised
    deep in a library or in the core is reported where the plugin called it.
    A syntax error is reported where the parser found it. None when no frame
    is in the plugin (a misspelt hook fails in pluggy, before any plugin code).
    """
    if isinstance(exc, SyntaxError) and exc.filename and exc.lineno:
        return display_path(exc.filename), exc.lineno
    inside = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if frame.lineno is not None and _is_under(frame.filename, roots)
    ]
    if not inside:
        return None
    return display_path(inside[-1].filename), inside[-1].lineno or 0


def _is_under(filename: str, roots: Sequence[Path]) -> bool:
    if filename.startswith("<"):
        return False
    path = Path(filename).resolve()
    return any(path == root or root in path.parents for root in roots)


def display_path(filename: str) -> str:
    """A path relative to the working directory when it is inside it (shorter, as editors show).

    A file of an installed copy whose source is in the working directory (a
    plugin's checkout, installed without ``-e`` as its CI may) is shown at the
    source: an editor or a CI annotation can place that file, not site-packages.
    """
    path = Path(filename)
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except (ValueError, OSError):
        source = checkout_source(path)
        return filename if source is None else str(source)


INSTALL_FOLDERS: Final = frozenset({"site-packages", "dist-packages"})


def checkout_source(path: Path) -> Path | None:
    """The working directory's own copy of an installed file, relative to it, or None.

    ``.../site-packages/my_plugin/adapters.py`` is the checkout's
    ``my_plugin/adapters.py`` or ``src/my_plugin/adapters.py`` when that
    file exists.
    """
    parts = path.parts
    found = [i for i, part in enumerate(parts) if part in INSTALL_FOLDERS]
    if not found or found[-1] + 1 >= len(parts):
        return None
    inside = Path(*parts[found[-1] + 1 :])
    cwd = Path.cwd()
    for base in (Path(), Path("src")):
        if (cwd / base / inside).is_file():
            return base / inside
    return None


def in_checkout(roots: Sequence[Path]) -> bool:
    """Whether a plugin's code is the working directory's (an editable or a regular install
    of the checkout its author works in)."""
    cwd = Path.cwd()
    return any(
        root == cwd or cwd in root.parents or checkout_source(root / "__init__.py") is not None
        for root in roots
    )


def _code_roots(plugin: object) -> list[Path]:
    """Where a plugin's code lives: its module's file, or its package's folder."""
    module = plugin if isinstance(plugin, ModuleType) else sys.modules.get(type(plugin).__module__)
    filename = getattr(module, "__file__", None)
    return _file_roots(filename) if filename else []


def _file_roots(filename: str) -> list[Path]:
    path = Path(filename).resolve()
    return [path.parent if path.stem == "__init__" else path]


def _module_roots(module_name: str) -> list[Path]:
    """The code roots of a module named by an entry point, found without importing it."""
    try:
        spec = importlib.util.find_spec(module_name.partition(":")[0].split(".")[0])
    except (ImportError, ValueError):
        return []
    if spec is None:
        return []
    if spec.submodule_search_locations:
        return [Path(p).resolve() for p in spec.submodule_search_locations]
    return _file_roots(spec.origin) if spec.origin else []


@dataclass(frozen=True)
class _Candidate:
    """A plugin found but not yet loaded: an entry point, or a file of a plugins folder."""

    name: str
    register: Callable[[], Any]
    where: str
    """What provides it, for messages: ``distribution X``, ``file F`` or ``folder D``."""
    distribution: str | None = None
    version: str | None = None
    path: str | None = None
    roots: Callable[[], Sequence[Path]] = tuple
    """Where its code lives, asked only when loading fails (to say where)."""


def _entry_points() -> list[tuple[EntryPoint, Distribution]]:
    """Every ``agent_presets`` entry point with its distribution, from one scan of sys.path.

    The one scan is reused for loading (pluggy's ``load_setuptools_entrypoints``
    scans every installed distribution again on each call: once per plugin).
    """
    import importlib.metadata

    found = []
    seen: set[tuple[str, str]] = set()
    for dist in importlib.metadata.distributions():
        # Parsing every distribution's entry points is most of a scan's cost, and
        # few declare ours: a file that does not name the group cannot hold one.
        read = getattr(dist, "read_text", None)  # a Distribution's; a stand-in may lack it
        declared = read("entry_points.txt") if read is not None else ENTRY_POINT_GROUP
        if not declared or ENTRY_POINT_GROUP not in declared:
            continue
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
    plugins_dir: str | os.PathLike[str] | None = None,
) -> PluginSet:
    """Discover plugins from entry points, or register the given plugin objects.

    ``plugins`` (modules or objects with hook implementations) replaces
    discovery: tests and embedding hosts use it to choose exactly what loads.
    ``plugins_dir`` adds the plugins of a plugins folder; when discovering,
    None reads ``PRESETS_PLUGINS_DIR`` from ``env``. ``strict`` makes any
    problem fatal; None reads ``PRESETS_STRICT`` from ``env``.
    """
    env = os.environ if env is None else env
    pm = pm or get_plugin_manager()
    plugin_set = PluginSet(pm)
    if env_flag("PRESETS_TRACE_PLUGINS", env):
        trace_hook_calls(pm, sys.stderr.write)
    if plugins_dir is None and plugins is None:
        plugins_dir = env.get("PRESETS_PLUGINS_DIR") or None
    candidates: list[_Candidate] = []
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

            candidates.append(_Candidate(name, register, "plugin object"))
    else:
        for ep, dist in _entry_points():
            # Loaded from the one scan: pluggy's load_setuptools_entrypoints would scan
            # every installed distribution again, once per plugin.
            def load(ep: EntryPoint = ep) -> None:
                pm.register(ep.load(), name=ep.name)

            dist_name = dist.metadata["name"]
            candidates.append(
                _Candidate(
                    ep.name,
                    load,
                    f"distribution {dist_name}",
                    dist_name,
                    dist.version,
                    roots=partial(_module_roots, ep.value),
                )
            )
    if plugins_dir is not None:
        candidates.extend(_folder_candidates(plugin_set, Path(plugins_dir)))
    allowed = None if plugins is not None else _allowed(plugin_set, candidates, env)
    _load(plugin_set, candidates, allowed)
    if strict is None:
        strict = env_flag("PRESETS_STRICT", env)
    if plugin_set.problems and strict:
        raise PluginLoadError(
            "plugin problems (PRESETS_STRICT=1 makes them fatal):\n"
            + "\n".join(f"  {p}" for p in plugin_set.problems)
        )
    return plugin_set


def _allowed(
    plugin_set: PluginSet, candidates: Sequence[_Candidate], env: Mapping[str, str]
) -> set[str] | None:
    """What ``PRESETS_LOAD_PLUGINS`` lets load (None: all); a name found nowhere is a problem."""
    wanted = env.get("PRESETS_LOAD_PLUGINS")
    if wanted is None:
        return None
    allowed = {n.strip() for n in wanted.split(",") if n.strip()}
    installed = {c.name for c in candidates}
    for name in sorted(allowed - installed):
        plugin_set.problems.append(
            PluginProblem(
                name,
                f"PRESETS_LOAD_PLUGINS names {name!r}, which no installed distribution or "
                f"plugins folder provides; installed plugins: "
                f"{', '.join(sorted(installed)) or 'none'}",
            )
        )
    return allowed


def _load(
    plugin_set: PluginSet, candidates: Sequence[_Candidate], allowed: set[str] | None
) -> None:
    first: dict[str, _Candidate] = {}
    for candidate in candidates:
        if allowed is not None and candidate.name not in allowed:
            plugin_set.pm.set_blocked(candidate.name)
            continue
        earlier = first.get(candidate.name)
        if earlier is not None:
            plugin_set.problems.append(
                PluginProblem(
                    candidate.name,
                    f"plugin name {candidate.name!r} is claimed twice, by {earlier.where} and by "
                    f"{candidate.where}; only the first was loaded: uninstall or rename one of "
                    "them",
                    candidate.distribution,
                    source=candidate.path,
                )
            )
            continue
        first[candidate.name] = candidate
        _register(
            plugin_set,
            candidate.name,
            candidate.register,
            candidate.distribution,
            candidate.version,
            path=candidate.path,
            roots=candidate.roots,
        )


# ------------------------------------------------------------------ the plugins folder


def _folder_candidates(plugin_set: PluginSet, folder: Path) -> list[_Candidate]:
    """A plugin per Python module of the folder, and one for its preset files together."""
    pm = plugin_set.pm
    shown = display_path(str(folder))
    if not folder.is_dir():
        plugin_set.problems.append(
            PluginProblem(
                folder.name,
                f"plugins folder {shown} is not a folder; fix PRESETS_PLUGINS_DIR or --plugins-dir",
            )
        )
        return []
    folder = folder.resolve()
    entries = sorted(folder.iterdir())
    candidates = []
    for path in entries:
        # _name.py (an __init__.py, a helper) is not a plugin, as in a package.
        if path.suffix != ".py" or path.name.startswith(("_", ".")) or not path.is_file():
            continue

        def load(path: Path = path) -> None:
            pm.register(import_file(path), name=path.stem)

        where = display_path(str(path))
        candidates.append(
            _Candidate(path.stem, load, f"file {where}", path=where, roots=partial(tuple, [path]))
        )
    files = [p for p in entries if p.suffix in (".yaml", ".yml") and p.is_file()]
    if files:

        def load_files() -> None:
            pm.register(PresetFolder(files), name=folder.name)

        candidates.append(_Candidate(folder.name, load_files, f"folder {shown}", path=shown))
    return candidates


def import_file(path: Path) -> ModuleType:
    """Import a Python file as a module of its own, under a name no other file gets.

    The name carries a digest of the path, so two folders' ``tools.py`` never
    replace each other in ``sys.modules``.
    """
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
    module_name = f"_agent_presets_plugins_dir_{digest}_{path.stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path} cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    # In sys.modules while it runs, as an import would: dataclasses look it up.
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return module


# ------------------------------------------------------------------ registering, tracing


def _register(
    plugin_set: PluginSet,
    name: str,
    load: Callable[[], Any],
    dist_name: str | None,
    version: str | None,
    *,
    path: str | None = None,
    roots: Callable[[], Sequence[Path]] = tuple,
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
        code_roots = roots()
        if dist_name and in_checkout(code_roots):
            # Its author runs this, in the plugin's own checkout: the fix is in their code.
            what = f"distribution {dist_name} {version}, the plugin of this folder"
            leave_out = "fix the error in its code and run this again"
        elif dist_name:
            what = f"distribution {dist_name} {version}"
            leave_out = (
                "leave it out with PRESETS_LOAD_PLUGINS (a comma list of the plugins to "
                f"load) or `pip uninstall {dist_name}`"
            )
        elif path:
            what = f"file {path}"
            leave_out = (
                "fix it, move it out of the plugins folder, or leave it out with "
                "PRESETS_LOAD_PLUGINS (a comma list of the plugins to load)"
            )
        else:
            what, leave_out = "plugin object", "fix or remove it"
        where = where_raised(exc, code_roots)
        plugin_set.problems.append(
            PluginProblem(
                name,
                f"plugin {name!r} ({what}) failed to load: {type(exc).__name__}: {exc}; it was "
                f"skipped; {leave_out}",
                dist_name,
                source=where[0] if where else None,
                line=where[1] if where else None,
            )
        )
        return
    hooks = tuple(h.name for h in (pm.get_hookcallers(plugin) or []) if h.name in HOOK_NAMES)
    plugin_set.plugins.append(PluginInfo(name, plugin, dist_name, version, hooks, path))


def trace_hook_calls(pm: pluggy.PluginManager, write: Callable[[str], Any]) -> Callable[[], None]:
    """Write one line per hook call: ``hook NAME -> PLUGINS: N results in X ms``.

    A line, not pluggy's own trace: that one prints every argument and result
    in full (kilobytes of adapter reprs per call). Returns the undo function.
    """
    started = threading.local()

    def before(hook_name: str, hook_impls: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
        stack = started.__dict__.setdefault("stack", [])
        stack.append(time.perf_counter())

    def after(
        outcome: Any, hook_name: str, hook_impls: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> None:
        ms = (time.perf_counter() - started.stack.pop()) * 1000
        who = ", ".join(impl.plugin_name for impl in hook_impls) or "no plugin"
        if outcome.exception is not None:
            what = f"raised {type(outcome.exception).__name__}"
        else:
            n = _count(outcome.get_result())
            what = f"{n} result{'' if n == 1 else 's'}"
        write(f"hook {hook_name} -> {who}: {what} in {ms:.1f} ms\n")

    return pm.add_hookcall_monitoring(before, after)


def _count(result: Any) -> int:
    """How many things a hook call returned: the items of each plugin's list, added up."""
    if result is None:
        return 0
    items = result if isinstance(result, list) else [result]
    total = 0
    for item in items:
        if item is None:
            continue
        total += len(item) if isinstance(item, list | tuple | set | frozenset) else 1
    return total


def plugin_names(plugin_set: PluginSet) -> Sequence[str]:
    return [p.name for p in plugin_set.plugins]
