"""The served process, put together: what ``presets serve`` runs, from its settings.

The command parses its flags into ``ServeSettings`` and calls ``serve``; all
that stands between the flags and the MCP server is here, in the order the
process needs it: the settings checked together before anything is touched,
the store, the served host started with the plugins, the policy and its
event log, the starting context, the tokens, the console and the banner, then
the server. A refusal is a ``SettingError`` naming the flag to blame, which
the command shows as its usage error; every other error is a ``PresetError``
saying what to do.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agent_presets.lib.model import PresetError, PresetValidationError
from agent_presets.server.config import (
    ConfirmMode,
    ConfirmVia,
    DiscoveryMode,
    ServeConfig,
    Transport,
    check_replica_name,
)
from agent_presets.server.delivery import DeliveryMode

if TYPE_CHECKING:
    from agent_presets.lib.boot import Presets
    from agent_presets.lib.plugins import PluginSet
    from agent_presets.server.console.app import ConsoleOptions
    from agent_presets.server.host.served import ServedHost
    from agent_presets.server.policy import ToolPolicy
    from agent_presets.server.start.front import StartFront
    from agent_presets.server.store import Store
    from agent_presets.server.tokens import TokenTable

Say = Callable[[str], None]
"""Writes one line for the operator, on stderr: stdout may be the stdio transport's wire."""


class SettingError(PresetError):
    """A setting that cannot work, alone or with the others; ``flag`` names the one to blame."""

    def __init__(self, message: str, *, flag: str | None = None) -> None:
        super().__init__(message)
        self.flag = flag


@dataclass(frozen=True, kw_only=True)
class ServeSettings:
    """What ``presets serve`` was asked for: a field per flag, named as the command's parameter.

    Its ``--help`` says what each does, and holds the defaults. ``context``
    is the change of the host's context the flags ask for at start (empty: as
    saved), ``overrides`` the presets forced on or off, ``serve_options``
    what each plugin's own flags built (``server.host.options``).
    """

    transport: Transport
    host: str
    port: int
    state_dir: Path
    store_url: str | None
    root: Path | None
    plugins_dir: Path | None
    allow: tuple[str, ...]
    max_calls: int | None
    max_calls_per_tool: int | None
    event_log: Path | None
    no_event_log: bool
    namespace: str | None
    auth: Literal["tokens"] | None
    insecure: bool
    confirm: ConfirmMode
    confirm_timeout: float
    confirm_via: ConfirmVia
    console_address: str | None
    max_sessions: int | None
    replica: str | None
    upstreams_at_start: bool
    tool_budget: int | None
    discovery: DiscoveryMode
    delivery: DeliveryMode
    context: Mapping[str, Any]
    overrides: Mapping[str, str]
    serve_options: tuple[object, ...]


def serve(settings: ServeSettings, plugins: PluginSet, *, say: Say, warn: Say) -> None:
    """Check ``settings``, start the host with ``plugins``, and serve until the server stops."""
    from agent_presets import _startup
    from agent_presets.server.start import start_front_enabled

    console_at = check_settings(settings, warn=warn)
    store = open_checked_store(settings)
    try:
        presets, config = assemble(
            settings, store, plugins, console_at=console_at, say=say, warn=warn
        )
        if config.transport == "stdio" and start_front_enabled():
            # The first requests are answered from here on, while the SDK loads below.
            config = config.replace(front=start_front(presets, config))
        from agent_presets.server.mcp import serve as run_server  # the SDK: a second or more

        _startup.resume()  # start-up is over (agent_presets._startup)
        run_server(presets, config)
    finally:
        store.close()


def check_settings(settings: ServeSettings, *, warn: Say) -> tuple[str, int] | None:
    """Refuse settings that cannot work, before anything is touched; the console's address."""
    from agent_presets.lib.adapters import MCP_NAME_RE

    if settings.namespace and not MCP_NAME_RE.match(settings.namespace):
        raise SettingError(
            "use lowercase letters, digits and '_', starting with a letter, like myapp_",
            flag="--namespace",
        )
    console_at = None if settings.console_address is None else _console_address(settings, warn)
    if settings.event_log is not None and settings.no_event_log:
        raise SettingError("--event-log and --no-event-log contradict each other")
    if settings.auth is not None and settings.transport != "http":
        raise SettingError("--auth tokens needs --transport http")
    if settings.max_sessions is not None and settings.transport != "http":
        raise SettingError("--max-sessions needs --transport http")
    if settings.transport == "http":
        from agent_presets.server.mcp.auth import check_exposure

        check_exposure(settings.host, auth=settings.auth, insecure=settings.insecure)
    if settings.replica is not None:
        if settings.transport != "http":
            raise SettingError("--replica needs --transport http: stdio has no sessions to route")
        try:
            check_replica_name(settings.replica)
        except PresetError as exc:
            raise SettingError(str(exc), flag="--replica") from None
    if settings.delivery == "stable" and settings.discovery == "list":
        raise SettingError(
            "--delivery stable reaches what a context change activates through presets_call, "
            "and --discovery list serves none; use --discovery auto or search, or "
            "--delivery live"
        )
    if settings.tool_budget is not None and settings.discovery == "list":
        raise SettingError(
            "--tool-budget needs presets_search and presets_call to reach the tools it leaves "
            "out, and --discovery list serves neither; use --discovery auto or search"
        )
    return console_at


def _console_address(settings: ServeSettings, warn: Say) -> tuple[str, int]:
    from agent_presets.server.console import is_loopback, parse_address

    try:
        console_at = parse_address(str(settings.console_address))
    except ValueError as exc:
        raise SettingError(str(exc), flag="--console") from None
    if not is_loopback(console_at[0]):
        if not settings.insecure:
            raise SettingError(
                f"{console_at[0]} is not a loopback address: anyone who reaches it could "
                "turn presets on; use 127.0.0.1, or pass --insecure",
                flag="--console",
            )
        warn(f"the console listens on {console_at[0]}: anyone with its URL may turn presets on")
    return console_at


def open_checked_store(settings: ServeSettings) -> Store:
    """The store ``--store`` names, checked to answer now."""
    from agent_presets.server.store import open_store

    try:
        return open_store(settings.store_url, settings.state_dir, check=True)
    except ValueError as exc:
        raise SettingError(str(exc), flag="--store") from None


def assemble(
    settings: ServeSettings,
    store: Store,
    plugins: PluginSet,
    *,
    console_at: tuple[str, int] | None,
    say: Say,
    warn: Say,
) -> tuple[Presets, ServeConfig]:
    """The started host's presets, and the config that serves them with ``store``."""
    from agent_presets.server.control import SOCKET_NAME

    app, presets = start_host(settings, plugins, warn=warn)
    policy = tool_policy(settings, presets, store, app.state_dir)
    set_start_context(app, presets, settings.context)
    tokens = token_table(app.state_dir, store, warn=warn) if settings.auth == "tokens" else None
    return presets, ServeConfig(
        transport=settings.transport,
        host=settings.host,
        port=settings.port,
        banner=banner(presets, policy, tokens, app.state_dir, say=say),
        policy=policy,
        control_socket=app.state_dir / SOCKET_NAME,
        tokens=tokens,
        insecure=settings.insecure,
        confirm=settings.confirm,
        confirm_timeout=settings.confirm_timeout,
        confirm_via=settings.confirm_via,
        console=None if console_at is None else console_options(console_at, app, say=say),
        max_sessions=settings.max_sessions,
        replica=settings.replica,
        tool_budget=settings.tool_budget,
        discovery=settings.discovery,
        delivery=settings.delivery,
        state_dir=app.state_dir,
        store=store,
    )


def start_host(
    settings: ServeSettings, plugins: PluginSet, *, warn: Say
) -> tuple[ServedHost, Presets]:
    """The served host, started with ``plugins`` (those of the plugins folder among them).

    The host is bare: the app plugin among ``plugins`` makes it the app.
    """
    from agent_presets.lib.tools import ToolRegistry
    from agent_presets.server.host.served import ServedHost

    folder = settings.plugins_dir
    # The file tools must not reach code that the next start imports.
    app = ServedHost(
        settings.state_dir,
        settings.root,
        plugin_dirs=[folder] if folder is not None else [],
        serve_options=settings.serve_options,
        # The runtimes' tables (the drawing, the graph ...) are shared on the same Redis.
        tables=settings.store_url,
    )
    for problem in plugins.problems:  # loaded as the command line was read: said now
        warn(str(problem))
    loaded = len(plugins.problems)  # already reported
    presets = app.start(
        plugins,
        overrides=dict(settings.overrides),
        # None: the host's namespace (the app plugin's).
        tool_registry=None if settings.namespace is None else ToolRegistry(settings.namespace),
    )
    # A runtime hook that raised: said now, not when its first tool call fails. (The
    # catalog's problems, presets.problems, bootstrap has already logged once.)
    for problem in plugins.problems[loaded:]:
        warn(f"skipped: {problem}")
    presets.upstreams.start_at_once = settings.upstreams_at_start
    return app, presets


def tool_policy(
    settings: ServeSettings, presets: Presets, store: Store, state_dir: Path
) -> ToolPolicy:
    """The allow-list, the budgets, and the event log, counted and kept in ``store``."""
    from agent_presets.server.policy import ToolPolicy

    try:
        allowed = ToolPolicy.allow_list(presets, settings.allow) if settings.allow else None
    except PresetValidationError as exc:
        raise SettingError(exc.message, flag="--allow") from None
    # On a shared store the log is its stream (every replica's lines, one chain), unless
    # --event-log names a file.
    shared_log = getattr(store, "event_log", None) if settings.event_log is None else None
    policy = ToolPolicy(
        allow=allowed,
        max_calls=settings.max_calls,
        max_calls_per_tool=settings.max_calls_per_tool,
        event_log=None
        if settings.no_event_log or shared_log is not None
        else (settings.event_log or state_dir / "events.jsonl"),
    )
    if shared_log is not None and not settings.no_event_log:
        policy.events = shared_log()
    policy.store = store
    policy.own_store = False
    return policy


def set_start_context(app: ServedHost, presets: Presets, changes: Mapping[str, Any]) -> None:
    """Apply ``changes`` to the host's context as one change, checked whole.

    The fields are of the host's vocabulary, whose values the host and the
    plugins declare, as ``presets context set`` sets them. An undeclared value
    is refused with the declared values and the closest one, naming the
    field's flag, and nothing is saved.
    """
    if not changes:
        return
    from agent_presets.lib.vocabulary import ContextValueError

    try:
        presets.vocabulary.check_change(changes)
        app.update_context(changes)
    except ContextValueError as exc:
        raise SettingError(str(exc), flag=f"--{exc.field.replace('_', '-')}") from None
    except PresetError as exc:
        raise SettingError(str(exc)) from None


def token_table(state_dir: Path, store: Store, *, warn: Say) -> TokenTable:
    """The tokens ``--auth tokens`` accepts: the store's when it shares them, else the state's."""
    from agent_presets.server.tokens import TokenTable  # only where tokens are used

    shared = getattr(store, "token_table", None)
    tokens: TokenTable = shared() if shared is not None else TokenTable(state_dir)
    if not tokens.names():
        how = f" --store {store.url}" if shared is not None else ""
        warn(
            f"no tokens in {tokens.where} yet: every request is refused until one is made "
            f"with `presets tokens create NAME{how}`"
        )
    return tokens


def banner(
    presets: Presets,
    policy: ToolPolicy,
    tokens: TokenTable | None,
    state_dir: Path,
    *,
    say: Say,
) -> Callable[[str], None]:
    """The line said once the server is ready, ``where`` it listens."""

    def announce(where: str) -> None:
        say(
            f"presets serve: {len(presets.plugins.plugins)} plugins, "
            f"{len(presets.registry)} presets, {len(presets.tool_registry)} active tools"
            + (f" ({len(policy.allow.tools)} allowed)" if policy.allow else "")
            + ", "
            f"{where}"
            + (f", {len(tokens.names())} tokens" if tokens is not None else "")
            + f", state in {state_dir}"
        )

    return announce


def console_options(address: tuple[str, int], app: ServedHost, *, say: Say) -> ConsoleOptions:
    """The browser console at ``address``, its URL said to the operator."""
    from agent_presets.server.console.app import ConsoleOptions
    from agent_presets.server.console.credential import CREDENTIAL_FILE

    return ConsoleOptions(
        host=address[0],
        port=address[1],
        app=app,
        announce=say,
        credential=app.state_dir / CREDENTIAL_FILE,
    )


def start_front(presets: Presets, config: ServeConfig) -> StartFront:
    """stdio: what answers the first requests while the SDK loads (``server.start``)."""
    from agent_presets.server.start.front import Replies, StartFront

    replies = Replies(
        presets,
        policy=config.policy,
        page_size=config.page_size,
        tool_budget=config.tool_budget,
        discovery=config.discovery,
        store=config.store,
        delivery=config.delivery,
    )
    return StartFront(replies, control_socket=config.control_socket)
