"""What a host is to the core and to its plugins: ``HostDefaults``, ``Host`` and ``ContextKeeper``.

A host is the app the tools act on. It reports the context the presets are
resolved against, and holds the runtimes the plugins' tools fetch when they
are called. The core names none of its context fields: an app brings its
own, declared with ``presets_context_fields`` like any plugin's.

``presets serve`` runs a bare host (``agent_presets.host.ServedHost``): a
state directory, a store, runtime slots and a saved context of whatever
fields are set on it. A host plugin makes it an app: it declares the fields,
supplies the defaults (``presets_host_defaults``) and, through
``presets_headless_runtime(host)``, may give the host a ``ContextKeeper`` of
its own and attach the runtimes its tools drive. Plugins and hosts import
these names from ``agent_presets.host``; they live here, in the library, so
that the hook specs and ``bootstrap`` can name them without the server.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    from agent_presets.lib.rows import RowTable

T = TypeVar("T")


@dataclass(frozen=True)
class HostDefaults:
    """What a host supplies and the core has no opinion of.

    A host plugin returns them from ``presets_host_defaults``; an embedding
    app may instead offer them as its ``defaults`` attribute. ``bootstrap``,
    the CLI and the MCP server read them where the caller gives nothing more
    specific.

    ``namespace`` prefixes every tool's MCP name (``ToolRegistry``); ``context``
    is the context before the host reports one; ``instructions`` are the MCP
    server's instructions to the agent (None: the server's own, which name no
    host's fields). ``implied``: what setting a field to a value also sets,
    unless the same change sets it itself, as ``{"panel": {"board": {"sidebar":
    True}}}`` (opening the board shows the sidebar); every way the context
    changes (the host, ``presets context set``, the command-line flags) applies it.
    """

    namespace: str = ""
    context: Mapping[str, Any] = field(default_factory=dict)
    instructions: str | None = None
    implied: Mapping[str, Mapping[Any, Mapping[str, Any]]] = field(default_factory=dict)

    def with_implied(self, changes: Mapping[str, Any]) -> dict[str, Any]:
        """``changes`` and what they imply (``implied``), the changes' own values winning."""
        result = dict(changes)
        for name, value in changes.items():
            try:
                implies = self.implied.get(name, {}).get(value, {})
            except TypeError:  # an unhashable value implies nothing
                continue
            for other, implied_value in implies.items():
                result.setdefault(other, implied_value)
        return result


BARE_DEFAULTS: Final = HostDefaults()
"""A host that supplies nothing: no namespace, an empty context, the server's instructions."""


def host_defaults(app: Any) -> HostDefaults | None:
    """``app.defaults`` when the app supplies them, else None."""
    defaults = getattr(app, "defaults", None)
    return defaults if isinstance(defaults, HostDefaults) else None


StateRuntimeFactory = Callable[[dict[str, Any] | None, Callable[[], None]], Any]
"""``factory(saved_state_or_None, changed) -> runtime``: a runtime saved whole.

The runtime must offer ``to_state() -> dict`` (JSON-serialisable) and call
``changed()`` after every mutation; the host then stores the whole state as
one row. Simple, but each change costs the size of the state: a runtime whose
state grows uses ``TableRuntimeFactory`` instead.
"""

TableRuntimeFactory = Callable[["RowTable"], Any]
"""``factory(table) -> runtime``: a runtime that persists what changed.

It reads its rows from ``table`` when it starts and, on each change, puts and
deletes the rows it touched inside ``with table.transaction():``.
"""

TableMigration = Callable[[dict[str, Any], "RowTable"], None]
"""``migrate(saved_state, table)``: write a state saved whole (a JSON file of an
earlier version) into ``table`` as rows."""

ContextListener = Callable[[dict[str, Any]], None]


@runtime_checkable
class ContextKeeper(Protocol):
    """Who keeps a host's context for it, when an app plugin owns the context.

    The bare host saves the context it is given as it is. An app that has its
    own rules, or its own saved state, gives the host a keeper
    (``host.keep_context(keeper)`` in ``presets_headless_runtime``): the host
    then asks it what the context starts as, what a change makes of it, and
    where to save it. The host still holds the context, tells its listeners
    (the preset manager) and, when one refuses a change, keeps the old one.

    Partitions: the runtimes added with ``add_table_runtime`` or
    ``add_state_runtime`` have state of their own in each partition of the
    app (its documents, projects, rooms, ...); the keeper says which partition
    a context is in, and which partitions exist.
    """

    def load(self) -> Mapping[str, Any]:
        """The context to start from: what was saved, or the app's defaults."""
        ...

    def change(self, context: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
        """The whole context ``changes`` make of ``context``; raise ``PresetError`` to refuse.

        Called for the host's own context and for a principal's; it must
        change nothing itself (the host commits, or keeps the old context).
        """
        ...

    def save(self, context: Mapping[str, Any]) -> None:
        """Keep the host's own context, once its listeners accepted it."""
        ...

    def partition(self, context: Mapping[str, Any]) -> str:
        """The partition whose runtimes a caller in ``context`` reaches."""
        ...

    def partitions(self) -> Sequence[str]:
        """The partitions that exist now."""
        ...


class Host(Protocol):
    """What ``bootstrap``, the hooks and a plugin may rely on of the host that runs them.

    ``agent_presets.host.ServedHost`` (what ``presets serve`` runs) is one; an
    app that embeds the core may be another, or offer only part of it
    (``bootstrap`` needs nothing of the app; a tool's handler fetches only the
    runtimes it uses).
    """

    @property
    def defaults(self) -> HostDefaults:
        """The namespace, starting context and instructions the host supplies."""
        ...

    @property
    def state_dir(self) -> Path:
        """The folder the host keeps its state in."""
        ...

    @property
    def root(self) -> Path:
        """The folder file tools are confined to."""
        ...

    def context(self) -> dict[str, Any]:
        """The context of whoever the running call acts for (the host's own outside a call)."""
        ...

    def update_context(self, changes: Mapping[str, Any]) -> dict[str, Any]:
        """Change fields of that context, as the app's user would; refused whole or made whole."""
        ...

    def add_context_listener(self, callback: ContextListener) -> None:
        """``callback(context)`` after each change of the host's own context; it may refuse it."""
        ...

    def remove_context_listener(self, callback: ContextListener) -> None: ...

    def keep_context(self, keeper: ContextKeeper) -> None:
        """Let ``keeper`` start, check, save and partition the host's context from now on."""
        ...

    def attach(self, name: str, runtime: Any, *, exclusive: bool = False) -> None:
        """A runtime the whole host shares, reachable as ``host.<name>``.

        ``exclusive`` (here and for the partition runtimes): a call to this
        runtime changes what others are, so the server runs it alone.
        """
        ...

    def add_table_runtime(
        self,
        name: str,
        factory: TableRuntimeFactory,
        *,
        migrate: TableMigration | None = None,
        exclusive: bool = False,
    ) -> None:
        """Give every partition its own runtime ``name``, keeping its rows in a table."""
        ...

    def add_state_runtime(
        self, name: str, factory: StateRuntimeFactory, *, exclusive: bool = False
    ) -> None:
        """Give every partition its own runtime ``name``, saved whole."""
        ...

    def runtime(self, name: str) -> Any:
        """The runtime ``name`` (the caller's partition's, for a partition runtime)."""
        ...

    def runtime_names(self) -> list[str]: ...

    def drop_partition(self, partition: str) -> None:
        """Forget every runtime's state in ``partition`` (the app deleted it)."""
        ...

    def serve_options(self, kind: type[T]) -> T:
        """What a plugin's ``presets serve`` options built, typed (``kind()`` when none)."""
        ...
