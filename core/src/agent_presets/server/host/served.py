"""``ServedHost``: the bare host ``presets serve`` runs. See the package docstring."""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar, cast

from agent_presets.hosting import (
    BARE_DEFAULTS,
    ContextKeeper,
    ContextListener,
    HostDefaults,
    StateRuntimeFactory,
    TableMigration,
    TableRuntimeFactory,
)
from agent_presets.lib.atomicfile import read_json, write_json_atomic
from agent_presets.lib.listeners import Listeners
from agent_presets.lib.model import MissingRuntimeError, PresetError
from agent_presets.lib.principal import LOCAL, current_principal
from agent_presets.lib.rows import RowTable
from agent_presets.server.host.roots import DEFAULT_ROOT_NAME, check_root
from agent_presets.server.store.lock import StateLock
from agent_presets.server.store.redisrows import RedisRows, RedisTable
from agent_presets.server.store.statedb import DB_FILE, StateStore, Table

if TYPE_CHECKING:
    from agent_presets.lib.boot import Presets
    from agent_presets.lib.plugins import PluginSet
    from agent_presets.lib.tools import ToolRegistry

T = TypeVar("T")

CONTEXT_FILE: Final = "context.json"
"""The bare host's saved context (a keeper of an app plugin saves it its own way)."""
DEFAULT_PARTITION: Final = "home"
"""The one partition of a host whose context has none (no keeper says otherwise)."""
PARSE_CACHE: Final = "cache/presets"
"""Below the state folder: what YAML read of the preset files (``agent_presets.lib.parsecache``)."""
MIGRATED_SUFFIX: Final = ".migrated"


class PrincipalContexts(Protocol):
    """What a host needs of a server's principals (``agent_presets.server.principals``)."""

    def context(self, principal: str) -> Mapping[str, Any]: ...

    def set_context(self, principal: str, changes: Mapping[str, Any]) -> Mapping[str, Any]: ...


class SavedContext:
    """The bare host's keeper: any field, saved as it is in ``context.json``; one partition.

    A context never saved is the host's default context (``defaults()``).
    """

    def __init__(self, path: Path, defaults: Callable[[], HostDefaults]) -> None:
        self.path = path
        self.defaults = defaults

    def load(self) -> dict[str, Any]:
        try:
            saved = read_json(self.path)
        except ValueError as exc:
            problem: str | None = f"not valid JSON ({exc})"
        else:
            problem = None
            if saved is not None and not isinstance(saved, dict):
                problem = f"expected a JSON object, found {type(saved).__name__}"
        if problem is not None:
            raise PresetError(
                f"{self.path}: the saved context is unusable: {problem}; fix the file, or "
                "delete it to start with the host's default context"
            )
        return {**self.defaults().context, **(saved or {})}

    def change(self, context: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
        return {**context, **changes}

    def save(self, context: Mapping[str, Any]) -> None:
        write_json_atomic(self.path, dict(context))

    def partition(self, context: Mapping[str, Any]) -> str:
        return DEFAULT_PARTITION

    def partitions(self) -> Sequence[str]:
        return [DEFAULT_PARTITION]


class ServedHost:
    """An app with no window: a context, a file root, and the runtimes plugins attach.

    The bare host names no context field: its context is whatever is set on
    it (``update_context``: ``presets context set``, the control socket,
    ``POST /api/context``), saved in the state directory. An app plugin makes
    it an app through the hooks: it declares the fields, supplies the
    defaults (``presets_host_defaults``) and may keep the context itself
    (``keep_context``), as the general plugin's Space shell does.

    The host is the one writer of its state directory: it holds the
    directory's lock (``StateLock``) from construction to ``close()``, so a
    second host on the same directory is refused at once. The file root may
    not overlap the state directory or a plugins folder (``check_root``).
    """

    @property
    def defaults(self) -> HostDefaults:
        """The namespace, starting context and instructions the host supplies.

        The app plugin's (``presets_host_defaults``), read at ``start``, else
        ``BARE_DEFAULTS``. A subclass may give its own as a class attribute
        ``defaults``, which wins over the plugins'.
        """
        return self._defaults

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
        --store``): that Redis, shared with every replica on it, so each
        partition's runtime state is one for all of them (``server.store.redisrows``).
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
            self._defaults = BARE_DEFAULTS
            self._state_factories: dict[str, StateRuntimeFactory] = {}
            self._table_factories: dict[str, tuple[TableRuntimeFactory, TableMigration | None]] = {}
            self._partition_runtimes: dict[tuple[str, str], Any] = {}
            self._attached: dict[str, Any] = {}
            self._exclusive: set[str] = set()
            self._listeners: Listeners[ContextListener] = Listeners()
            self.presets: Presets | None = None
            self._serve_options = tuple(serve_options)
            _remove_debris(self.state_dir)
            self.store: StateStore | RedisRows = (
                _open_store(self.state_dir / DB_FILE)
                if tables is None or tables == "embedded"
                else RedisRows(tables)
            )
            self._keeper: ContextKeeper = SavedContext(
                self.state_dir / CONTEXT_FILE, lambda: self.defaults
            )
            self._context: dict[str, Any] | None = None  # loaded when first asked for
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

    def __enter__(self) -> ServedHost:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- runtimes ----------------------------------------------------------

    def attach(self, name: str, runtime: Any, *, exclusive: bool = False) -> None:
        """Attach a runtime that the whole host shares, reachable as ``host.<name>``.

        ``exclusive`` (here and for the partition runtimes): a call to this
        runtime changes what others are, so the server runs it alone.
        """
        self._check_slot(name)
        self._attached[name] = runtime
        self._mark(name, exclusive)

    def add_table_runtime(
        self,
        name: str,
        factory: TableRuntimeFactory,
        *,
        migrate: TableMigration | None = None,
        exclusive: bool = False,
    ) -> None:
        """Give every partition its own runtime ``name`` that persists rows in its own table.

        ``factory(table)`` makes the runtime on first use. ``migrate(saved, table)``
        converts a state an earlier version saved whole
        (``worlds/<partition>/<name>.json``); it runs once, on the first open of
        that partition, after which the old file is moved aside (``.json.migrated``).
        """
        self._check_slot(name)
        self._table_factories[name] = (factory, migrate)
        self._mark(name, exclusive)

    def add_state_runtime(
        self, name: str, factory: StateRuntimeFactory, *, exclusive: bool = False
    ) -> None:
        """Give every partition its own runtime ``name``, made by ``factory`` on first use
        and saved whole (``StateRuntimeFactory``)."""
        self._check_slot(name)
        self._state_factories[name] = factory
        self._mark(name, exclusive)

    add_world_runtime = add_state_runtime
    """The name ``add_state_runtime`` had before hosts had partitions (plugins call it still)."""

    def serve_options(self, kind: type[T]) -> T:
        """The ``kind`` a plugin's ``presets serve`` options built (``agent_presets.host.options``).

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

        Each is declared by the plugin that attaches it with ``exclusive=True``.
        """
        return frozenset(self._exclusive)

    def _mark(self, name: str, exclusive: bool) -> None:
        if exclusive:
            self._exclusive.add(name)

    def runtime(self, name: str) -> Any:
        """The runtime ``name`` (the caller's partition's, for a partition runtime)."""
        if name in self._attached:
            return self._attached[name]
        if name in self._state_factories or name in self._table_factories:
            return self._partition_runtime(self.partition(), name)
        raise MissingRuntimeError(
            f"the host has no runtime {name!r}; installed runtimes: "
            f"{', '.join(self.runtime_names()) or 'none'}"
        )

    def runtime_readiness(self, name: str) -> tuple[bool, str] | None:
        """``readiness()`` of an attached runtime, or None when it has none.

        The core asks before turning a preset on. Partition runtimes are never
        loaded for it: their readiness is their saved state loading, which a
        call reports.
        """
        check = getattr(self._attached.get(name), "readiness", None)
        return cast(tuple[bool, str], check()) if callable(check) else None

    def runtime_names(self) -> list[str]:
        return sorted({*self._attached, *self._state_factories, *self._table_factories})

    def partition(self) -> str:
        """The partition the caller's context is in (``ContextKeeper.partition``)."""
        return self._keeper.partition(self.context())

    def partitions(self) -> list[str]:
        """The partitions that exist (``ContextKeeper.partitions``)."""
        return list(self._keeper.partitions())

    def partition_runtime(self, partition: str, name: str) -> Any:
        """The runtime ``name`` of a given partition (for tests and tools that compare them)."""
        if partition not in self._keeper.partitions():
            raise PresetError(
                f"no partition named {partition!r}; existing: {', '.join(self.partitions())}"
            )
        return self._partition_runtime(partition, name)

    def drop_partition(self, partition: str) -> None:
        """Forget every runtime's state in ``partition`` (the app deleted it)."""
        with self._lock:
            for key in [k for k in self._partition_runtimes if k[0] == partition]:
                del self._partition_runtimes[key]
            self.store.drop_world(partition)
            shutil.rmtree(self._partition_dir(partition), ignore_errors=True)

    def __getattr__(self, name: str) -> Any:
        # Only called for attributes that are not set normally: runtime slots.
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self.runtime(name)
        except MissingRuntimeError:
            raise AttributeError(name) from None

    # -- context -----------------------------------------------------------

    def context(self) -> dict[str, Any]:
        """The context of whoever the running call acts for (the host's own outside a call).

        A server with principals (``attach_principals``) gives each its own.
        """
        principal = current_principal()
        if principal != LOCAL and self._principals is not None:
            return dict(self._principals.context(principal))
        return dict(self._own_context())

    def update_context(self, changes: Mapping[str, Any]) -> dict[str, Any]:
        """Change fields of the caller's context, as the app's user would; refused whole.

        What the change implies is added (``HostDefaults.implied``), the keeper
        makes the new context of it (or refuses), and then the listeners (the
        preset manager) hear it; one that refuses leaves the old context, and
        nothing is saved. A principal's change is the server's to check and keep.
        """
        changes = self.defaults.with_implied(changes)
        principal = current_principal()
        with self._lock:
            if principal != LOCAL and self._principals is not None:
                new = self._keeper.change(self._principals.context(principal), changes)
                return dict(self._principals.set_context(principal, new))
            before = self._own_context()
            new = self._keeper.change(before, changes)
            self._context = new
            try:
                self._listeners.notify(dict(new))
            except BaseException:
                self._context = before
                raise
            self._keeper.save(new)
            return dict(new)

    def add_context_listener(self, callback: ContextListener) -> None:
        self._listeners.add(callback)

    def remove_context_listener(self, callback: ContextListener) -> None:
        self._listeners.remove(callback)

    def keep_context(self, keeper: ContextKeeper) -> None:
        """Let ``keeper`` start, check, save and partition the host's context from now on."""
        with self._lock:
            self._keeper = keeper
            self._context = dict(keeper.load())

    def attach_principals(self, principals: PrincipalContexts) -> None:
        """Called by the server that keeps principals (``agent_presets.server.principals``)."""
        self._principals = principals

    def _own_context(self) -> dict[str, Any]:
        if self._context is None:
            self._context = dict(self._keeper.load())
        return self._context

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
        """Load plugins, let them attach runtimes, bootstrap presets, follow the context.

        Without ``tool_registry``, tools are named in the host's namespace
        (``defaults.namespace``). ``strict`` makes plugin and definition
        problems fatal; None reads ``PRESETS_STRICT``.
        """
        from agent_presets.lib.boot import bootstrap
        from agent_presets.lib.parsecache import ParseCache
        from agent_presets.lib.plugins import PluginSet, env_flag, load_plugins
        from agent_presets.lib.statekey import state_key

        plugin_set = plugins if isinstance(plugins, PluginSet) else load_plugins(plugins)
        if isinstance(getattr(type(self), "defaults", None), property):  # none of its own
            self._defaults = plugin_set.host_defaults() or BARE_DEFAULTS
            if isinstance(self._keeper, SavedContext):
                self._context = None  # started again, from the app's defaults
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

    def _partition_dir(self, partition: str) -> Path:
        return self.state_dir / "worlds" / partition

    def _partition_runtime(self, partition: str, name: str) -> Any:
        key = (partition, name)
        with self._lock:
            runtime = self._partition_runtimes.get(key)
            if runtime is None:
                table = self.store.table(name, partition)
                if name in self._table_factories:
                    factory, migrate = self._table_factories[name]
                    self._migrate(partition, name, table, migrate)
                    runtime = factory(table)
                else:
                    runtime = self._whole_state_runtime(partition, name, table)
                self._partition_runtimes[key] = runtime
            return runtime

    def _whole_state_runtime(self, partition: str, name: str, table: Table | RedisTable) -> Any:
        """A ``StateRuntimeFactory`` runtime: its whole state is the row ``state``."""

        def migrate(saved: dict[str, Any], table: RowTable) -> None:
            table.put("state", saved)

        self._migrate(partition, name, table, migrate)
        holder: list[Any] = []

        def changed() -> None:
            with self._lock:
                if partition in self._keeper.partitions():  # not one deleted since
                    table.put("state", holder[0].to_state())

        runtime = self._state_factories[name](table.get("state"), changed)
        holder.append(runtime)
        return runtime

    def _migrate(
        self,
        partition: str,
        name: str,
        table: Table | RedisTable,
        migrate: TableMigration | None,
    ) -> None:
        """Move a state saved as a JSON file by an earlier version into ``table``, once.

        The rows commit before the file is moved aside; a crash in between
        finds rows already there and only moves the file.
        """
        path = self._partition_dir(partition) / f"{name}.json"
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

    def _check_slot(self, name: str) -> None:
        if not name.isidentifier() or name.startswith("_"):
            raise PresetError(f"runtime name {name!r} must be a Python identifier")
        taken = name in self._attached or name in self._state_factories
        taken = taken or name in self._table_factories
        if taken or name in self.__dict__ or hasattr(type(self), name):
            raise PresetError(
                f"runtime name {name!r} is already taken on the host; "
                "two plugins attach the same runtime"
            )


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
