"""HeadlessHost and its Shell. See the package docstring."""

from __future__ import annotations

import contextlib
import re
import shutil
import sqlite3
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar, Final, Protocol, TypeVar, cast

from agent_presets.atomicfile import read_json, write_json_atomic
from agent_presets.host.defaults import HEADLESS_DEFAULTS
from agent_presets.listeners import Listeners
from agent_presets.model import (
    MissingRuntimeError,
    PresetError,
    PresetValidationError,
    ToolCallError,
)
from agent_presets.principal import LOCAL, current_principal
from agent_presets.rows import RowTable
from agent_presets.server.host.roots import DEFAULT_ROOT_NAME, check_root
from agent_presets.server.store.lock import StateLock
from agent_presets.server.store.redisrows import RedisRows, RedisTable
from agent_presets.server.store.statedb import DB_FILE, StateStore, Table

if TYPE_CHECKING:
    from agent_presets.boot import HostDefaults, Presets
    from agent_presets.plugins import PluginSet
    from agent_presets.tools import ToolRegistry

WorldRuntimeFactory = Callable[[dict[str, Any] | None, Callable[[], None]], Any]
"""``factory(saved_state_or_None, changed) -> runtime``: a runtime saved whole.

The runtime must offer ``to_state() -> dict`` (JSON-serialisable) and call
``changed()`` after every mutation; the host then stores the whole state as
one row. Simple, but each change costs the size of the state: a runtime whose
state grows uses ``TableRuntimeFactory`` instead.
"""

TableRuntimeFactory = Callable[[RowTable], Any]
"""``factory(table) -> runtime``: a runtime that persists what changed.

It reads its rows from ``table`` when it starts and, on each change, puts and
deletes the rows it touched inside ``with table.transaction():``.
"""

TableMigration = Callable[[dict[str, Any], RowTable], None]
"""``migrate(saved_state, table)``: write a state saved whole (a JSON file of an
earlier version) into ``table`` as rows."""

T = TypeVar("T")

THEMES: Final = ("light", "dark", "high-contrast")
DEFAULT_WORLD: Final = "home"
WORLD_RE: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
SHELL_FILE: Final = "shell.json"
PARSE_CACHE: Final = "cache/presets"
"""Below the state folder: what YAML read of the preset files (``agent_presets.parsecache``)."""
CONTEXT_FIELDS: Final = ("surface", "activity", "canvas_visible", "world_id")
"""The context the host reports (``HeadlessHost.context``), as ``context_fields`` declares it."""
MIGRATED_SUFFIX: Final = ".migrated"


class Shell:
    """The host's shell state and the operations the general tools drive.

    Every change is validated first (bad input changes nothing), persisted,
    and then reported to the host's context listeners.
    """

    def __init__(self, host: HeadlessHost, saved: dict[str, Any] | None) -> None:
        self._host = host
        # What was never saved starts as the host's default context says.
        saved = {**host.defaults.context, **(saved or {})}
        self.surface: str = saved["surface"]
        self.activity: str | None = saved["activity"]
        self.canvas_visible: bool = saved["canvas_visible"]
        self.theme: str = saved.get("theme", "light")
        self.worlds: list[str] = list(saved.get("worlds", [DEFAULT_WORLD]))
        self.world: str = saved.get("world", self.worlds[0] if self.worlds else DEFAULT_WORLD)
        self._saved = self.state()

    @staticmethod
    def saved_state_problem(saved: object) -> str | None:
        """Why a saved shell state cannot be used, or None when it can."""
        if not isinstance(saved, dict):
            return f"expected a JSON object, found {type(saved).__name__}"
        checks: list[tuple[str, Callable[[Any], bool], str]] = [
            # Which surfaces and activities exist is declared (the vocabulary), and
            # plugins add to it: a saved one is checked by name here, by value later.
            ("surface", _is_name, "a surface name"),
            ("activity", lambda v: v is None or _is_name(v), "null or an activity name"),
            ("canvas_visible", lambda v: isinstance(v, bool), "true or false"),
            ("theme", lambda v: v in THEMES, f"one of {', '.join(THEMES)}"),
            (
                "worlds",
                lambda v: (
                    isinstance(v, list)
                    and bool(v)
                    and len(set(map(str, v))) == len(v)
                    and all(isinstance(w, str) and WORLD_RE.match(w) for w in v)
                ),
                "a non-empty list of distinct world names",
            ),
        ]
        for key, ok, expected in checks:
            if key in saved and not ok(saved[key]):
                return f"{key!r} is {saved[key]!r}; expected {expected}"
        if "world" in saved and saved["world"] not in saved.get("worlds", [DEFAULT_WORLD]):
            return f"'world' is {saved['world']!r}, which is not in 'worlds'"
        return None

    def state(self) -> dict[str, Any]:
        return {
            "surface": self.surface,
            "activity": self.activity,
            "canvas_visible": self.canvas_visible,
            "theme": self.theme,
            "world": self.world,
            "worlds": list(self.worlds),
        }

    # -- changes -----------------------------------------------------------

    # Surfaces and activities are checked by the manager against the declared
    # vocabulary (the host's surfaces and what plugins add): here only their shape.

    def set_surface(self, surface: str) -> dict[str, Any]:
        if not _is_name(surface):
            raise ToolCallError(f"surface {surface!r} must be a name, such as 'canvas'")
        with self._host._lock:
            self.surface = surface
            if surface == "canvas":
                self.canvas_visible = True
            return self._commit()

    def set_activity(self, activity: str | None) -> dict[str, Any]:
        if activity is not None and not _is_name(activity):
            raise ToolCallError(
                f"activity {activity!r} must be a name (one the plugins declare), or null to "
                "clear it"
            )
        with self._host._lock:
            self.activity = activity
            return self._commit()

    def set_canvas_visible(self, visible: bool) -> dict[str, Any]:
        if not isinstance(visible, bool):
            raise ToolCallError(f"visible must be true or false, not {visible!r}")
        with self._host._lock:
            self.canvas_visible = visible
            return self._commit()

    def update(self, changes: Mapping[str, Any]) -> dict[str, Any]:
        """Set several context fields in one change (``presets context set``), checked whole.

        The fields are the host's context (``CONTEXT_FIELDS``); ``world_id``
        switches to an existing world. A refused change restores them all.
        """
        unknown = sorted(set(changes) - set(CONTEXT_FIELDS))
        if unknown:
            raise PresetValidationError(
                f"the headless host's context has no field {unknown[0]!r}; it holds "
                f"{', '.join(CONTEXT_FIELDS)}"
            )
        with self._host._lock:
            try:
                for key, value in changes.items():
                    self._apply(key, value, explicit=changes)
            except PresetError:
                self._restore(self._saved)
                raise
            return self._commit()

    def _apply(self, key: str, value: Any, *, explicit: Mapping[str, Any]) -> None:
        if key == "surface":
            if not _is_name(value):
                raise ToolCallError(f"surface {value!r} must be a name, such as 'canvas'")
            self.surface = value
            if value == "canvas" and "canvas_visible" not in explicit:
                self.canvas_visible = True  # as switching to it does
        elif key == "activity":
            if value is not None and not _is_name(value):
                raise ToolCallError(f"activity {value!r} must be a name, or null to clear it")
            self.activity = value
        elif key == "canvas_visible":
            if not isinstance(value, bool):
                raise ToolCallError(f"canvas_visible must be true or false, not {value!r}")
            self.canvas_visible = value
        else:  # world_id
            self._require_world(value)
            self.world = value

    def set_theme(self, theme: str) -> dict[str, Any]:
        if theme not in THEMES:
            raise ToolCallError(f"unknown theme {theme!r}; use one of: {', '.join(THEMES)}")
        with self._host._lock:
            self.theme = theme
            return self._commit()

    def create_world(self, name: str) -> dict[str, Any]:
        self._check_world_name(name)
        with self._host._lock:
            if name in self.worlds:
                raise ToolCallError(f"world {name!r} already exists; switch to it instead")
            self.worlds.append(name)
            return self._commit()

    def switch_world(self, name: str) -> dict[str, Any]:
        with self._host._lock:
            self._require_world(name)
            self.world = name
            return self._commit()

    def delete_world(self, name: str) -> dict[str, Any]:
        with self._host._lock:
            self._require_world(name)
            if name == self.world:
                raise ToolCallError(
                    f"world {name!r} is the current world; switch to another world before "
                    "deleting it"
                )
            self.worlds.remove(name)
            self._commit()
            self._host._drop_world(name)
            return self.state()

    # -- helpers -----------------------------------------------------------

    def _check_world_name(self, name: object) -> None:
        if not isinstance(name, str) or not WORLD_RE.match(name):
            raise ToolCallError(
                f"world name {name!r} must be 1-64 letters, digits, '-' or '_', "
                "starting with a letter or digit"
            )

    def _require_world(self, name: str) -> None:
        if name not in self.worlds:
            raise ToolCallError(
                f"no world named {name!r}; existing worlds: {', '.join(self.worlds)}"
            )

    def _commit(self) -> dict[str, Any]:
        # The manager first: a change it refuses (a tool collision, an undeclared
        # value) is undone here and never saved, so a restart resumes a good state.
        try:
            self._host._context_changed()
        except Exception:
            self._restore(self._saved)
            raise
        self._host._save_shell()
        self._saved = self.state()
        return self._saved

    def _restore(self, state: dict[str, Any]) -> None:
        self.surface, self.activity = state["surface"], state["activity"]
        self.canvas_visible, self.theme = state["canvas_visible"], state["theme"]
        self.world, self.worlds = state["world"], list(state["worlds"])


class PrincipalContexts(Protocol):
    """What a host needs of a server's principals (``agent_presets.server.principals``)."""

    def context(self, principal: str) -> Mapping[str, Any]: ...

    def set_context(self, principal: str, changes: Mapping[str, Any]) -> Mapping[str, Any]: ...


class PrincipalShell(Shell):
    """One principal's view of the shell: its own context, the host's worlds and theme.

    Made for each call from the principal's context (kept by the server's
    principals, in its store), so it is never stale and costs nothing between
    calls. A change is the principal's: the server checks and keeps it.
    """

    def __init__(self, host: HeadlessHost, principal: str, principals: PrincipalContexts) -> None:
        shared = host._shell
        context = principals.context(principal)
        super().__init__(
            host,
            {
                **shared.state(),
                "surface": context.get("surface", shared.surface),
                "activity": context.get("activity", shared.activity),
                "canvas_visible": context.get("canvas_visible", shared.canvas_visible),
                "world": context.get("world_id", shared.world),
            },
        )
        self.worlds = shared.worlds  # one list: a world made by anyone is everyone's
        self.principal = principal
        self._principals = principals

    def set_theme(self, theme: str) -> dict[str, Any]:
        """The theme is the app's, not a principal's."""
        return self._host._shell.set_theme(theme)

    def _commit(self) -> dict[str, Any]:
        # The principal's context first: a change the server refuses changes nothing.
        self._principals.set_context(
            self.principal,
            {
                "surface": self.surface,
                "activity": self.activity,
                "canvas_visible": self.canvas_visible,
                "world_id": self.world,
            },
        )
        self._host._save_shell()  # the worlds are shared, and may have changed
        self._saved = self.state()
        return self._saved


class HeadlessHost:
    """An app with no window: shell state, a file root, and plugin runtimes.

    The host is the one writer of its state directory: it holds the
    directory's lock (``StateLock``) from construction to ``close()``, so a
    second host on the same directory is refused at once. The file root may
    not overlap the state directory or a plugins folder (``check_root``).

    ``defaults`` (``HEADLESS_DEFAULTS``) are what the host supplies to the
    core: its namespace, its starting context and its server instructions.
    """

    defaults: ClassVar[HostDefaults] = HEADLESS_DEFAULTS

    def __init__(
        self,
        state_dir: str | Path,
        root: str | Path | None = None,
        *,
        plugin_dirs: Iterable[str | Path] = (),
        serve_options: Iterable[object] = (),
        tables: str | None = None,
    ) -> None:
        """``serve_options``: what ``presets serve`` parsed for plugins (``serve_options()``).

        ``tables``: where the runtimes' tables are kept. None (or ``embedded``):
        the state directory's database; ``redis://HOST:PORT/DB`` (``presets serve
        --store``): that Redis, shared with every replica on it, so the worlds'
        drawings, graphs and scenes are one for all of them (``server.store.redisrows``).
        """
        self.state_dir = Path(state_dir).resolve()
        self.root = (
            Path(root) if root is not None else self.state_dir / DEFAULT_ROOT_NAME
        ).resolve()
        check_root(self.root, state_dir=self.state_dir, plugin_dirs=plugin_dirs)
        self._state_lock = StateLock(self.state_dir).acquire()
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            self._lock = threading.RLock()
            self._world_factories: dict[str, WorldRuntimeFactory] = {}
            self._table_factories: dict[str, tuple[TableRuntimeFactory, TableMigration | None]] = {}
            self._world_runtimes: dict[tuple[str, str], Any] = {}
            self._attached: dict[str, Any] = {}
            # The shell is the host's own: a world switch changes what the world runtimes are.
            self._exclusive: set[str] = {"shell"}
            self._listeners: Listeners[Callable[[dict[str, Any]], None]] = Listeners()
            self.presets: Presets | None = None
            self._serve_options = tuple(serve_options)
            _remove_debris(self.state_dir)
            self.store: StateStore | RedisRows = (
                _open_store(self.state_dir / DB_FILE)
                if tables is None or tables == "embedded"
                else RedisRows(tables)
            )
            self._shell = Shell(self, self._load_shell())
            self._principals: PrincipalContexts | None = None
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Close the state database and release the state directory for another host."""
        store = self.__dict__.pop("store", None)
        if store is not None:
            store.close()
        self._state_lock.release()

    def __enter__(self) -> HeadlessHost:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- runtimes ----------------------------------------------------------

    def add_world_runtime(
        self, name: str, factory: WorldRuntimeFactory, *, exclusive: bool = False
    ) -> None:
        """Give every world its own runtime ``name``, made by ``factory`` on first use.

        ``exclusive`` (here and for ``add_table_runtime`` and ``attach``): a call
        to this runtime changes what others are, so the server runs it alone.
        """
        self._check_slot(name)
        self._world_factories[name] = factory
        self._mark(name, exclusive)

    def add_table_runtime(
        self,
        name: str,
        factory: TableRuntimeFactory,
        *,
        migrate: TableMigration | None = None,
        exclusive: bool = False,
    ) -> None:
        """Give every world its own runtime ``name`` that persists rows in its own table.

        ``factory(table)`` makes the runtime on first use. ``migrate(saved, table)``
        converts a state an earlier version saved whole
        (``worlds/<world>/<name>.json``); it runs once, on the first open of that
        world, after which the old file is moved aside (``.json.migrated``).
        """
        self._check_slot(name)
        self._table_factories[name] = (factory, migrate)
        self._mark(name, exclusive)

    def attach(self, name: str, runtime: Any, *, exclusive: bool = False) -> None:
        """Attach a runtime that the whole host shares, reachable as ``host.<name>``."""
        self._check_slot(name)
        self._attached[name] = runtime
        self._mark(name, exclusive)

    def serve_options(self, kind: type[T]) -> T:
        """The ``kind`` a plugin's ``presets serve`` options built (``server.host.options``).

        ``kind()`` (its defaults) when ``serve`` parsed none: a scratch host, a
        test, a host started from code.
        """
        for value in self._serve_options:
            if type(value) is kind:
                return value
        return kind()

    @property
    def exclusive_runtimes(self) -> frozenset[str]:
        """The runtimes whose calls the server runs one at a time, alone (``server.mcp.calls``).

        Each is declared by whoever owns it: the shell by the host, others by
        the plugin that attaches them with ``exclusive=True``.
        """
        return frozenset(self._exclusive)

    def _mark(self, name: str, exclusive: bool) -> None:
        if exclusive:
            self._exclusive.add(name)

    def runtime(self, name: str) -> Any:
        """The runtime ``name`` (the current world's one for per-world runtimes)."""
        if name in self._attached:
            return self._attached[name]
        if name in self._world_factories or name in self._table_factories:
            return self._world_runtime(self.shell.world, name)  # the caller's world
        raise MissingRuntimeError(
            f"the headless host has no runtime {name!r}; installed runtimes: "
            f"{', '.join(self.runtime_names()) or 'none'}"
        )

    def runtime_readiness(self, name: str) -> tuple[bool, str] | None:
        """``readiness()`` of an attached runtime, or None when it has none.

        The core asks before turning a preset on. World runtimes are never
        loaded for it: their readiness is their saved state loading, which a
        call reports.
        """
        check = getattr(self._attached.get(name), "readiness", None)
        return cast(tuple[bool, str], check()) if callable(check) else None

    def runtime_names(self) -> list[str]:
        return sorted({*self._attached, *self._world_factories, *self._table_factories})

    def world_runtime(self, world: str, name: str) -> Any:
        """The runtime ``name`` of a given world (for tests and tools that compare worlds)."""
        self._shell._require_world(world)
        return self._world_runtime(world, name)

    def __getattr__(self, name: str) -> Any:
        # Only called for attributes that are not set normally: runtime slots.
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self.runtime(name)
        except MissingRuntimeError:
            raise AttributeError(name) from None

    # -- principals ----------------------------------------------------------

    @property
    def shell(self) -> Shell:
        """The shell of the principal the running call acts for (the host's own outside one).

        A server with principals (``attach_principals``) gives each its own
        context: its agent's surface, activity and world switches change only
        its own, and the per-world runtimes it reaches are its world's. The
        worlds, the theme and the app's data are shared.
        """
        principal = current_principal()
        if principal == LOCAL or self._principals is None:
            return self._shell
        return PrincipalShell(self, principal, self._principals)

    def attach_principals(self, principals: PrincipalContexts) -> None:
        """Called by the server that keeps principals (``agent_presets.server.principals``)."""
        self._principals = principals

    # -- context -----------------------------------------------------------

    def context(self) -> dict[str, Any]:
        """The context snapshot the preset manager resolves against."""
        return {
            "surface": self._shell.surface,
            "activity": self._shell.activity,
            "canvas_visible": self._shell.canvas_visible,
            "world_id": self._shell.world,
        }

    def update_context(self, changes: Mapping[str, Any]) -> dict[str, Any]:
        """Change fields of the host's context, as its user would (``presets context set``).

        Goes through the shell, so the change is saved and reported like any
        other; a change the manager refuses changes nothing.
        """
        self._shell.update(changes)
        return self.context()

    def add_context_listener(self, callback: Callable[[dict[str, Any]], None]) -> None:
        self._listeners.add(callback)

    def remove_context_listener(self, callback: Callable[[dict[str, Any]], None]) -> None:
        self._listeners.remove(callback)

    # -- start -------------------------------------------------------------

    def start(
        self,
        plugins: PluginSet | Sequence[object] | None = None,
        *,
        tool_registry: ToolRegistry | None = None,
        overrides: dict[str, str] | None = None,
        owner: str = "agent-presets",
        strict: bool | None = None,
    ) -> Presets:
        """Load plugins, let them attach runtimes, bootstrap presets, follow the shell.

        Without ``tool_registry``, tools are named in the host's namespace
        (``defaults.namespace``). ``strict`` makes plugin and definition
        problems fatal; None reads ``PRESETS_STRICT``.
        """
        from agent_presets.boot import bootstrap
        from agent_presets.host.context_fields import HostContextFields
        from agent_presets.parsecache import ParseCache
        from agent_presets.plugins import PluginSet, env_flag, load_plugins
        from agent_presets.statekey import state_key

        # The host declares the context it provides as any host does: a plugin object.
        plugin_set = plugins if isinstance(plugins, PluginSet) else load_plugins(plugins)
        plugin_set.add(HostContextFields())
        plugin_set.call_each("presets_headless_runtime", host=self)
        if strict is None:
            strict = env_flag("PRESETS_STRICT")
        if plugin_set.problems and strict:
            raise PresetError("\n".join(str(p) for p in plugin_set.problems))
        try:  # the key the parse cache's entries are signed with
            key: bytes | None = state_key(self.state_dir)
        except OSError:  # a state directory it cannot write: entries of this process only
            key = None
        presets = bootstrap(
            self,
            tool_registry=tool_registry,  # None: the namespace of self.defaults
            context=self.context(),
            owner=owner,
            plugins=plugin_set,
            overrides=overrides,
            strict=strict,
            # What YAML read of the preset files, for the next start (parsecache.py).
            parse_cache=ParseCache(self.state_dir / PARSE_CACHE, key=key),
        )
        self.presets = presets
        self.add_context_listener(presets.manager.set_context)
        return presets

    # -- persistence -------------------------------------------------------

    def _world_dir(self, world: str) -> Path:
        return self.state_dir / "worlds" / world

    def _world_runtime(self, world: str, name: str) -> Any:
        key = (world, name)
        with self._lock:
            runtime = self._world_runtimes.get(key)
            if runtime is None:
                table = self.store.table(name, world)
                if name in self._table_factories:
                    factory, migrate = self._table_factories[name]
                    self._migrate(world, name, table, migrate)
                    runtime = factory(table)
                else:
                    runtime = self._whole_state_runtime(world, name, table)
                self._world_runtimes[key] = runtime
            return runtime

    def _whole_state_runtime(self, world: str, name: str, table: Table | RedisTable) -> Any:
        """A ``WorldRuntimeFactory`` runtime: its whole state is the row ``state``."""

        def migrate(saved: dict[str, Any], table: RowTable) -> None:
            table.put("state", saved)

        self._migrate(world, name, table, migrate)
        holder: list[Any] = []

        def changed() -> None:
            with self._lock:
                if world in self._shell.worlds:
                    table.put("state", holder[0].to_state())

        runtime = self._world_factories[name](table.get("state"), changed)
        holder.append(runtime)
        return runtime

    def _migrate(
        self,
        world: str,
        name: str,
        table: Table | RedisTable,
        migrate: TableMigration | None,
    ) -> None:
        """Move a state saved as a JSON file by an earlier version into ``table``, once.

        The rows commit before the file is moved aside; a crash in between
        finds rows already there and only moves the file.
        """
        path = self._world_dir(world) / f"{name}.json"
        if not path.exists():
            return
        if table.is_empty():
            try:
                saved = read_json(path)
            except ValueError as exc:
                raise PresetError(
                    f"{path}: the saved {name} state is not valid JSON ({exc}); "
                    "restore it from a backup or delete the file to start empty"
                ) from None
            if saved is not None and migrate is not None:
                with table.transaction():
                    migrate(saved, table)
        path.replace(path.with_name(path.name + MIGRATED_SUFFIX))

    def _load_shell(self) -> dict[str, Any] | None:
        path = self.state_dir / SHELL_FILE
        try:
            saved = read_json(path)
        except ValueError as exc:
            problem: str | None = f"not valid JSON ({exc})"
        else:
            problem = None if saved is None else Shell.saved_state_problem(saved)
        if problem is not None:
            raise PresetError(
                f"{path}: the saved shell state is unusable: {problem}; fix the file, or "
                "delete it to start with the default shell (worlds are kept)"
            )
        return saved  # type: ignore[no-any-return]

    def _save_shell(self) -> None:
        write_json_atomic(self.state_dir / SHELL_FILE, self._shell.state())

    def _drop_world(self, world: str) -> None:
        for key in [k for k in self._world_runtimes if k[0] == world]:
            del self._world_runtimes[key]
        self.store.drop_world(world)
        shutil.rmtree(self._world_dir(world), ignore_errors=True)

    def _context_changed(self) -> None:
        self._listeners.notify(self.context())

    def _check_slot(self, name: str) -> None:
        if not name.isidentifier() or name.startswith("_"):
            raise PresetError(f"runtime name {name!r} must be a Python identifier")
        taken = name in self._attached or name in self._world_factories
        taken = taken or name in self._table_factories
        if taken or name in self.__dict__ or hasattr(type(self), name):
            raise PresetError(
                f"runtime name {name!r} is already taken on the headless host; "
                "two plugins attach the same runtime"
            )


def _is_name(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip()) and len(value) <= 200


def _open_store(path: Path) -> StateStore:
    try:
        return StateStore(path)
    except sqlite3.DatabaseError as exc:
        raise PresetError(
            f"{path}: the state database cannot be read ({exc}); restore it from a backup, "
            f"or move it aside (with any {path.name}-wal and {path.name}-shm beside it) "
            "to start with an empty state"
        ) from None


def _remove_debris(state_dir: Path) -> None:
    """Delete temp files a killed writer of an earlier version left behind."""
    for pattern in (".*.tmp", "worlds/*/.*.tmp"):
        for path in state_dir.glob(pattern):
            with contextlib.suppress(OSError):
                path.unlink()
