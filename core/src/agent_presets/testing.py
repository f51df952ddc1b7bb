"""The test kit for plugin authors: a pytest plugin, loaded through ``pytest11``.

Install it with the extra ``agent-presets[testing]``; pytest then loads it by
itself in any environment where agent-presets is installed, and a test asks
for its fixtures by name::

    def test_add_appends_a_note(presets_host):
        host = presets_host(plugins=[my_plugin])
        host.set_context(view="notes")
        assert host.call_tool("notes_add", {"text": "hi"}) == {"count": 1}
        with host.unchanged():          # a refusal must change nothing
            host.refused("notes_add", {"text": ""})

Loading this module costs nothing: pytest loads every ``pytest11`` plugin in
every run, so the host, the schema, YAML and ``mcp`` are imported only when a
fixture or a helper first needs them. ``docs/testing.md`` describes it all.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pytest

from agent_presets.hookspecs import hookimpl

if TYPE_CHECKING:
    from mcp import Client

    from agent_presets.host import ServedHost
    from agent_presets.lib.adapters import ToolAdapter
    from agent_presets.lib.boot import Presets
    from agent_presets.lib.manager import PresetManager
    from agent_presets.lib.model import Preset, ToolDef

__all__ = [
    "ContextValues",
    "PresetRow",
    "PresetTable",
    "PresetsHost",
    "assert_unchanged",
    "mcp_name",
    "plugin_adapters",
    "plugin_presets",
    "presets_host",
    "read_only_tools",
    "result_text",
]

PresetRow = tuple[str, str, list[str]]
"""One preset as a table row: (default state, risk, the MCP names of its tools)."""

_NAMESPACE = ""
"""``agent_presets.DEFAULT_NAMESPACE``, a host's that supplies none, without importing the model."""


def mcp_name(adapter: ToolAdapter, namespace_prefix: str | None = _NAMESPACE) -> str:
    """The name an MCP client sees for ``adapter``: the host's namespace applied.

    An adapter names its tool without the namespace (``name="notes_add"``); a
    host serves it under its namespace (``HostDefaults.namespace``, ``serve
    --namespace``): pass the namespace your host uses to get its name there.
    """
    from agent_presets.lib.adapters import mcp_name_for

    return mcp_name_for(adapter, namespace_prefix)


class ContextValues:
    """A plugin object that only declares context values, for a test host.

    A host refuses a context value nobody declared. A test that runs one
    plugin and switches to a value another plugin declares (to check that
    the plugin's tools leave) passes one beside the plugin::

        presets_host(plugins=[my_plugin, ContextValues(view=["calendar"])])

    Each keyword is a string field with the values it may take.
    """

    __name__ = "test-context-values"

    def __init__(self, **fields: Sequence[str]) -> None:
        self.fields = {name: list(values) for name, values in fields.items()}

    def __repr__(self) -> str:
        return f"ContextValues({', '.join(f'{k}={v!r}' for k, v in self.fields.items())})"

    @hookimpl
    def presets_context_fields(self) -> list[dict[str, Any]]:
        return [
            {"name": name, "type": "string", "values": values}
            for name, values in self.fields.items()
        ]


class PresetsHost:
    """A served host (``agent_presets.host.ServedHost``) running chosen plugins in a state
    directory of its own.

    The host is the bare one ``presets serve`` runs: an app plugin among the
    plugins makes it that app (its fields, its namespace, its context).
    Tools are called as an MCP client calls them: looked up among the tools
    the current context offers, so a test cannot call a tool the agent would
    not see. ``tool_prefix`` shortens the names a test writes: a name the
    context does not offer is tried with the prefix in front
    (``tool_prefix="notes_"`` lets a test call ``"add"``).

    Subclass it to give a plugin's tests their own helpers; ``snapshot`` is
    what ``unchanged`` and ``refused`` compare, so a subclass can widen it.
    """

    def __init__(
        self,
        plugins: Sequence[object],
        state_dir: str | Path,
        *,
        root: str | Path | None = None,
        overrides: Mapping[str, str] | None = None,
        tool_prefix: str = "",
        allow_problems: bool = False,
    ) -> None:
        self.plugins = list(plugins)
        self.state_dir = Path(state_dir)
        self.root = Path(root) if root is not None else None
        self.tool_prefix = tool_prefix
        self._overrides = dict(overrides or {})
        self._allow_problems = allow_problems
        self.host, self.presets = self._start()

    def _start(self) -> tuple[ServedHost, Presets]:
        from agent_presets.host import ServedHost

        host = ServedHost(self.state_dir, root=self.root)
        presets = host.start(plugins=self.plugins, overrides=self._overrides or None)
        if self._allow_problems:
            return host, presets
        raised = _hook_error([*presets.plugins.problems, *presets.problems])
        if raised is not None:
            # The hook's own exception, not what its absence causes later (a tool that
            # finds no runtime): the test fails where the plugin's code went wrong.
            _close_host(host)
            raise raised
        if presets.problems:
            _close_host(host)
            problems = "\n".join(str(p) for p in presets.problems)
            raise AssertionError(f"the plugins have definition problems:\n{problems}")
        return host, presets

    # -- what the test drives ----------------------------------------------

    @property
    def manager(self) -> PresetManager:
        """The preset manager: overrides, active presets, the current tool defs."""
        return self.presets.manager

    def set_context(self, **fields: Any) -> dict[str, Any]:
        """Change the host's context, as its app would (``presets context set`` does the same).

        The fields change as one, through the host (``update_context``), so
        the host, its saved state and the manager agree, and a bad value
        fails here as it would for the app. A field no plugin declares is a
        ``TypeError`` naming those that are (when any is). Returns the
        context the manager now resolves against.
        """
        declared = self.presets.vocabulary.fields
        unknown = sorted(f for f in fields if declared and f not in declared)
        if unknown:
            raise TypeError(
                f"the host sets no context field {', '.join(map(repr, unknown))}: no plugin "
                f"declares it; set one of: {', '.join(declared)}"
            )
        self.host.update_context(fields)
        return dict(self.manager.get_context())

    def enable(self, *presets: str) -> None:
        """Turn presets on for this session (an ``on`` override each)."""
        for name in presets:
            self.manager.set_override(name, "on")

    def tools(self) -> dict[str, ToolDef]:
        """The tools the current context offers, by MCP name."""
        return {tool.name: tool for tool in self.manager.get_tool_defs()}

    def tool_name(self, name: str, offered: Mapping[str, object] | None = None) -> str:
        """``name`` if the context offers it, else ``name`` with ``tool_prefix`` in front."""
        offered = self.tools() if offered is None else offered
        return name if name in offered or not self.tool_prefix else self.tool_prefix + name

    def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None = None, /, **kwargs: Any
    ) -> Any:
        """Run a tool the current context offers; return its result.

        Arguments come as a mapping, as keywords, or both. A refusal raises
        the tool's ``ToolCallError`` (the message the model would read); a
        tool the context does not offer fails the test, naming what is
        offered.
        """
        tools = self.tools()
        name = self.tool_name(name, tools)
        if name not in tools:
            raise AssertionError(
                f"{name} is not offered in context {dict(self.manager.get_context())}; "
                f"offered: {', '.join(sorted(tools)) or 'nothing'}"
            )
        return tools[name].run({**(arguments or {}), **kwargs})

    def refused(
        self, name: str, arguments: Mapping[str, Any] | None = None, /, **kwargs: Any
    ) -> str:
        """Call a tool that must refuse; check that it changed nothing; return its message."""
        from agent_presets.lib.model import ToolCallError

        with self.unchanged(), pytest.raises(ToolCallError) as refusal:
            self.call_tool(name, arguments, **kwargs)
        return str(refusal.value)

    @contextmanager
    def unchanged(self) -> Iterator[None]:
        """Fail if the block changes what ``snapshot`` observes."""
        with assert_unchanged(self):
            yield

    # -- what a refusal must leave alone -----------------------------------

    def snapshot(self) -> dict[str, Any]:
        """What a refused call must leave unchanged, as plain data.

        The context, the overrides, the tools offered, what each runtime has
        saved in the host's state database (every partition), each runtime's
        ``to_state()`` where it offers one, and the files under the host's
        file root. Widen it in a subclass for state kept anywhere else.
        """
        runtimes: dict[str, Any] = {}
        for name in self.host.runtime_names():
            to_state = getattr(self.host.runtime(name), "to_state", None)
            if callable(to_state):
                runtimes[name] = to_state()
        return {
            "context": self.host.context(),
            "overrides": self.manager.get_overrides(),
            "tools": sorted(self.tools()),
            "saved": self._saved_rows(),
            "runtimes": runtimes,
            "files": _tree(self.host.root),
        }

    def committed_rows(self, runtime: str, partition: str = "home") -> dict[str, Any]:
        """``runtime``'s rows in ``partition`` as committed to the state database.

        Read through a second connection: what a restart would find, so a
        change held only in memory is not here.
        """
        from agent_presets.server.store.statedb import DB_FILE, StateStore

        store = StateStore(self.host.state_dir / DB_FILE)
        try:
            return dict(store.table(runtime, partition).items())
        finally:
            store.close()

    def _saved_rows(self) -> dict[str, Any]:
        store = getattr(self.host, "store", None)
        if store is None:
            return {}
        saved: dict[str, Any] = {}
        for partition in self.host.partitions():
            for name in self.host.runtime_names():
                rows = store.table(name, partition).items()
                if rows:
                    saved[f"{partition}/{name}"] = rows
        return saved

    # -- the MCP side --------------------------------------------------------

    @asynccontextmanager
    async def mcp_client(self, **options: Any) -> AsyncIterator[Client]:
        """An ``mcp.Client`` connected in memory to an MCP server over this host.

        ``options`` go to ``mcp.Client`` (``mode="legacy"`` speaks the
        session era that opencode uses). The server stops when the block ends.
        """
        from mcp import Client

        from agent_presets.server.mcp import build_server

        server = build_server(self.presets)
        try:
            async with Client(server, **options) as client:
                yield client
        finally:
            server.close()

    # -- life cycle ----------------------------------------------------------

    def restart(self) -> PresetsHost:
        """Stop this host and start it again on the same state directory, as a server does."""
        self.close()
        self.host, self.presets = self._start()
        return self

    def close(self) -> None:
        """Stop the host (where it can stop), so another may open its state directory."""
        _close_host(self.host)


def _hook_error(problems: Sequence[Exception]) -> BaseException | None:
    """The exception the first failed hook raised, noted with its hook and ``file:line``."""
    from agent_presets.lib.plugins import PluginProblem

    for problem in problems:
        if isinstance(problem, PluginProblem) and problem.error is not None:
            where = ":".join(str(p) for p in (problem.source, problem.line) if p is not None)
            problem.error.add_note(
                f"{where + ': ' if where else ''}raised by hook {problem.hook} of plugin "
                f"{problem.plugin}, while the test host started"
            )
            return problem.error
    return None


def _close_host(host: ServedHost) -> None:
    close = getattr(host, "close", None)
    if callable(close):
        close()


def _tree(root: Path) -> dict[str, bytes]:
    if not root.is_dir():
        return {}
    found: dict[str, bytes] = {}
    for folder, _dirs, names in os.walk(root):
        for name in names:
            path = Path(folder, name)
            if path.is_file() and not path.is_symlink():
                found[path.relative_to(root).as_posix()] = path.read_bytes()
    return found


@contextmanager
def assert_unchanged(
    host: PresetsHost, *, observe: Callable[[], Any] | None = None
) -> Iterator[None]:
    """Fail if the block changes the host's ``snapshot()`` (or what ``observe`` returns).

    Use it around a call that must be refused: a refusal changes nothing,
    saved state included.
    """
    before = host.snapshot(), observe() if observe else None
    yield
    after = host.snapshot(), observe() if observe else None
    if after != before:
        changed = [key for key in before[0] if before[0][key] != after[0].get(key)]
        if before[1] != after[1]:
            changed.append("observed")
        raise AssertionError(f"the block changed the host: {', '.join(changed)}")


# -- checking what a plugin ships, without a host ----------------------------


def plugin_presets(plugin: object) -> list[Preset]:
    """The presets a plugin object (or module) ships, loaded and validated as the core does."""
    from agent_presets.lib.loader import load_preset_file

    files = getattr(plugin, "presets_preset_files", None)
    return [p for f in (files() if files else []) for p in load_preset_file(f)]


def plugin_adapters(plugin: object) -> dict[str, ToolAdapter]:
    """The tool adapters a plugin object (or module) provides, by tool id."""
    adapters = getattr(plugin, "presets_tool_adapters", None)
    return {a.id: a for a in (adapters() if adapters else [])}


class PresetTable(dict[str, PresetRow]):
    """Presets as a table: name -> (default state, risk, MCP names of its tools).

    ``PresetTable.of(plugin)`` reads a plugin's; compare it with the table
    your plugin is meant to ship (a plain dict compares equal).
    """

    @classmethod
    def of(cls, plugin: object, namespace_prefix: str | None = _NAMESPACE) -> PresetTable:
        """The presets ``plugin`` ships, its tools named as the host serves them."""
        adapters = plugin_adapters(plugin)

        def name_of(preset: Preset, tool_id: str) -> str:
            adapter = adapters.get(tool_id)
            if adapter is None:
                from agent_presets.lib.model import PresetValidationError
                from agent_presets.lib.suggest import did_you_mean

                hint = did_you_mean(
                    tool_id, adapters, "its presets_tool_adapters hook provides no such id"
                )
                raise PresetValidationError(
                    f"preset {preset.name!r} lists tool id {tool_id!r}, which no adapter of "
                    f"{_label(plugin)} provides{hint}",
                    source=preset.source,
                )
            return mcp_name(adapter, namespace_prefix)

        return cls(
            (p.name, (p.default_state, p.risk, [name_of(p, t) for t in p.tool_ids]))
            for p in plugin_presets(plugin)
        )

    def tools(self, *, include_off: bool = True) -> set[str]:
        """The MCP names of the table's tools; ``include_off=False``: of ``auto`` presets only."""
        return {
            tool
            for default, _risk, tools in self.values()
            if include_off or default == "auto"
            for tool in tools
        }

    def auto_presets(self) -> set[str]:
        """The names of the presets that activate by context."""
        return {name for name, (default, _risk, _tools) in self.items() if default == "auto"}


def _label(plugin: object) -> str:
    name = getattr(plugin, "__name__", None)
    return f"plugin {name}" if isinstance(name, str) else f"plugin {type(plugin).__name__}"


def read_only_tools(plugin: object, namespace_prefix: str | None = _NAMESPACE) -> set[str]:
    """The MCP names of a plugin's tools that say they only read (``readOnlyHint``)."""
    return {
        mcp_name(a, namespace_prefix)
        for a in plugin_adapters(plugin).values()
        if (a.annotations or {}).get("readOnlyHint")
    }


def result_text(result: Any) -> str:
    """The text of an MCP tool result (``client.call_tool(...)``) or prompt message."""
    content = result.content if isinstance(result.content, list) else [result.content]
    return "".join(getattr(part, "text", "") for part in content)


# -- the fixtures ----------------------------------------------------------------


@pytest.fixture
def presets_host(tmp_path: Path) -> Iterator[Callable[..., PresetsHost]]:
    """Start a served host with chosen plugins, in this test's temporary folder.

    ``presets_host(plugins=[...], *, root=None, overrides=None, context=None,
    enable=(), tool_prefix="", state_dir=None, allow_problems=False)``.
    Each call gets its own state directory unless ``state_dir`` is given;
    ``context`` is passed to ``set_context`` and ``enable`` turns presets on.
    Every host started here is closed when the test ends.
    """
    started: list[PresetsHost] = []

    def start(
        plugins: Sequence[object | ModuleType] = (),
        *,
        root: str | Path | None = None,
        overrides: Mapping[str, str] | None = None,
        context: Mapping[str, Any] | None = None,
        enable: Sequence[str] = (),
        tool_prefix: str = "",
        state_dir: str | Path | None = None,
        allow_problems: bool = False,
    ) -> PresetsHost:
        suffix = f"-{len(started) + 1}" if started else ""
        host = PresetsHost(
            plugins,
            state_dir if state_dir is not None else tmp_path / f"state{suffix}",
            root=root if root is not None else tmp_path / f"files{suffix}",
            overrides=overrides,
            tool_prefix=tool_prefix,
            allow_problems=allow_problems,
        )
        started.append(host)
        if context:
            host.set_context(**context)
        host.enable(*enable)
        return host

    yield start
    for host in reversed(started):
        host.close()
