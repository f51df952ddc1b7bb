"""The MCP server class: serves the live ToolRegistry to MCP clients such as opencode.

``build_server(presets)`` returns a low-level ``mcp`` server (usable in memory
with ``mcp.Client(server)``) that serves ``presets.tool_registry`` itself, not
a copy: ``tools/list`` reads the registry, ``tools/call`` runs the registry's
``ToolDef``, and every change to the registry reaches every connected client
in both protocol eras. ``transport.serve`` runs it over stdio or HTTP.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Collection, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import anyio
import mcp_types as types
from mcp.server.caching import CacheHint
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from agent_presets._version import __version__
from agent_presets.lib.model import Resolution, ToolDef
from agent_presets.lib.principal import LOCAL
from agent_presets.lib.tools import ToolRegistryChange
from agent_presets.server.config import (
    TOOLS_PAGE_SIZE,
    ConfirmMode,
    ConfirmVia,
    DiscoveryMode,
    ServeConfig,
    config_from,
)
from agent_presets.server.control import Controller, request_ttl_from_env
from agent_presets.server.delivery import (
    Delivery,
    DeliveryMode,
    Listed,
    Listings,
    choose,
    make_notice,
    notice_text,
)
from agent_presets.server.mcp.auth import principal_of, token_of
from agent_presets.server.mcp.calls import ToolCalls
from agent_presets.server.mcp.catalog import ServedMembers
from agent_presets.server.mcp.confirm import DEFAULT_TIMEOUT, CallConfirmation
from agent_presets.server.mcp.context import set_level_handler
from agent_presets.server.mcp.discovery import Discovery, client_of
from agent_presets.server.mcp.fanout import ChangeFanout
from agent_presets.server.mcp.invalid_params import name_invalid_params
from agent_presets.server.mcp.listenlimit import ListenLimit
from agent_presets.server.mcp.pipeline import PendingCall, Stage, arguments_of, standard_stages
from agent_presets.server.mcp.rounds import state_boundary
from agent_presets.server.mcp.serving import Serving
from agent_presets.server.mcp.tasks import Tasks
from agent_presets.server.mcp.wire import (
    PROMPT_URI,
    STATUS_URI,
    page_cursor,
    plain,
    read_cursor,
)
from agent_presets.server.policy import ToolPolicy
from agent_presets.server.principals import Audience, Principals
from agent_presets.server.start.lists import (
    SERVER_NAME,
    SERVER_TITLE,
    Listing,
    server_instructions,
)
from agent_presets.server.store.embedded import EmbeddedStore
from agent_presets.server.telemetry import Telemetry

if TYPE_CHECKING:
    from agent_presets.lib.boot import Presets
    from agent_presets.server.mcp.upstream import UpstreamHub
    from agent_presets.server.store import Store

log = logging.getLogger("agent_presets.server")

PRINCIPAL_LISTS: Final = 256
"""Tool lists of principals with a resolution of their own kept at once (one per resolution)."""


_NOTIFY_ALL: Final = NotificationOptions(
    prompts_changed=True, resources_changed=True, tools_changed=True
)
_NO_CACHE: Final = CacheHint(ttl_ms=0, scope="private")
"""Every cacheable result (each list, ``resources/read``, ``server/discover``): stale at once,
and private, since what a caller sees depends on its token; changes come on listen streams."""


NOTICE_KEY: Final = "presets_notice"
"""The key of a stable caller's notice in a result's structured content (``delivery.py``)."""


def _open(schema: Mapping[str, Any] | None) -> bool:
    """Whether an object ``schema`` takes a key it does not name (a notice's)."""
    if schema is None:
        return True
    return schema.get("additionalProperties", True) is not False and (
        schema.get("unevaluatedProperties", True) is not False
    )


class PresetServer(Server[Any]):
    """A low-level MCP server over one ``Presets`` (its tool registry, manager and catalog)."""

    def __init__(
        self,
        presets: Presets,
        *,
        name: str = SERVER_NAME,
        policy: ToolPolicy | None = None,
        control: Controller | None = None,
        page_size: int = TOOLS_PAGE_SIZE,
        telemetry: Telemetry | None = None,
        confirm: ConfirmMode = "none",
        confirm_timeout: float = DEFAULT_TIMEOUT,
        stages: Sequence[Stage] = (),
        confirm_via: ConfirmVia = "operator",
        instructions: str | None = None,
        exclusive_runtimes: Collection[str] | None = None,
        tool_budget: int | None = None,
        discovery: DiscoveryMode = "auto",
        state_dir: Path | None = None,
        store: Store | None = None,
        delivery: DeliveryMode = "auto",
    ) -> None:
        """``instructions`` and ``exclusive_runtimes`` default to the app's own (its
        ``HostDefaults`` and its ``exclusive_runtimes``), else the server's generic
        instructions and no exclusive runtime. ``tool_budget`` and ``discovery``:
        ``ServeConfig``'s (``discovery.py``); ``delivery``: how callers are served
        their tools, ``live``, ``stable`` or ``auto`` (``agent_presets.server.delivery``)."""
        if page_size < 1:
            raise ValueError(f"page_size must be at least 1, not {page_size}")
        self.presets = presets
        self.page_size = page_size
        self.tool_registry = presets.tool_registry
        # What the server keeps, shared with its replicas when it is Redis.
        self.store: Store = store if store is not None else EmbeddedStore(state_dir)
        self.policy = policy if policy is not None else ToolPolicy()
        if self.policy.own_store:  # its budgets count in the server's store (every replica's)
            self.policy.store = self.store
        # Live control (the CLI, the console) and the agent's presets_request tool.
        shared = getattr(self.store, "request_store", None)  # one queue for every replica
        self.control = (
            control
            if control is not None
            else Controller(
                presets.manager,
                emit=self.policy.emit,
                requests=shared(self.policy.emit, request_ttl_from_env())
                if shared is not None
                else None,
            )
        )
        self._request_tool = self.control.request_tool(self.tool_registry.namespace_prefix)
        # Risky calls wait for a person (--confirm), as requests in the controller's store.
        self.confirmation = CallConfirmation(
            self.control.requests, confirm, confirm_timeout, confirm_via
        )
        self._listen_streams = 0
        self._no_listen_streams: anyio.Event | None = None
        self.listen_limit = ListenLimit()
        self.fanout = ChangeFanout((PROMPT_URI, STATUS_URI))
        # Each principal's context and overrides, over the server's (principals.py).
        self.principals = Principals(presets.manager, self.store)
        self.principals.add_on_change(self._principals_changed)
        if self.control.principals is None:
            self.control.principals = self.principals
        if self.control.allows is None:  # status says what a principal may be served
            self.control.allows = self.policy.allows
        attach = getattr(presets.manager.app, "attach_principals", None)
        if callable(attach):  # a host that keeps a context per principal (the headless one)
            attach(self.principals)
        app = presets.manager.app
        if exclusive_runtimes is None:
            exclusive_runtimes = getattr(app, "exclusive_runtimes", None) or ()
        self.calls = ToolCalls(exclusive=exclusive_runtimes)
        self.telemetry = telemetry if telemetry is not None else Telemetry()
        self._resolution: Resolution | None = presets.manager.resolve()
        # What a call uses of this server, and all of it: the pipeline, presets_call and
        # tasks get this, never the server (serving.py); `stages` are the host's own.
        self.serving = Serving(
            presets,
            self.principals,
            policy=self.policy,
            telemetry=self.telemetry,
            confirmation=self.confirmation,
            calls=self.calls,
            fanout=self.fanout,
            request_tool=self._request_tool.name,
            chain=lambda serving: standard_stages(serving, stages),
        )
        self._tools_key: int | None = None
        self._tools_cache: list[dict[str, Any]] = []
        self._principal_lists: dict[int, tuple[Any, int, list[dict[str, Any]], int]] = {}
        # How each caller is served its tools: a stable caller's list changes only from
        # outside its own calls, and its calls' results tell it what changed (delivery.py).
        self.delivery: DeliveryMode = delivery
        self.listings = Listings(self._current_for)
        self._stable_lists: dict[str, tuple[Listed, int, list[dict[str, Any]], int]] = {}
        # Upstream MCP servers, the app's `upstreams` runtime (None when none is declared).
        self.upstreams: UpstreamHub | None = None
        if presets.upstreams:  # the forwarding machinery is imported only for them
            from agent_presets.server.mcp.upstream import UpstreamHub

            self.upstreams = UpstreamHub.attach(presets)
            # An upstream's calls touch its own process: the shell's never wait for them.
            self.calls.detached = frozenset(presets.upstreams.runtimes)
        # The tool budget, presets_search and presets_call (discovery.py).
        self.discovery = Discovery(self.serving, discovery, tool_budget)
        self.fanout.stable_of = lambda ctx: self.delivery_for(ctx) == "stable"
        self.fanout.stable_principal = self._stable_listener
        # A stable caller's listing is fixed when it connects (its listen stream, or its
        # first request after the handshake), so a change from outside before its first
        # tools/list is still news to it.
        self.fanout.tools_version = lambda principal: self.listings.listed(principal).version
        # Long calls as tasks, for clients of the tasks extension (tasks.py).
        self.tasks = Tasks(self.serving)
        super().__init__(
            name,
            version=__version__,
            title=SERVER_TITLE,
            instructions=instructions or server_instructions(app),
            lifespan=_lifespan,
            # The lists follow the active presets, which change at any moment.
            cache_hints={
                "tools/list": _NO_CACHE,
                "prompts/list": _NO_CACHE,
                "resources/list": _NO_CACHE,
                "resources/templates/list": _NO_CACHE,
                # 2026-07-28 requires the hint on a read; without it the SDK drops contents.
                "resources/read": _NO_CACHE,
            },
            get_tool_input_schema=self._input_schema,
            on_subscriptions_listen=self._listen,
        )
        # Registered here rather than as on_* arguments: these return wire dicts,
        # which the SDK validates like models but without building them first.
        add = self.add_request_handler
        add("tools/list", types.PaginatedRequestParams, self._list_tools)
        add("tools/call", types.CallToolRequestParams, self._call_tool)
        # prompts/*, resources/* (but subscriptions) and completion/complete: catalog.py.
        self.members = ServedMembers(presets, self.calls, lambda: self.listing, self.status)
        self.members.register(add)
        add("resources/subscribe", types.SubscribeRequestParams, self._subscribe)
        add("resources/unsubscribe", types.UnsubscribeRequestParams, self._unsubscribe)
        # Legacy-era clients set the floor for the call context's log messages.
        add("logging/setLevel", types.SetLevelRequestParams, set_level_handler())
        self.tasks.register(add, self.extensions)
        self.middleware.append(self.fanout.track)
        # A -32602 names the field that was wrong, not only "Invalid request parameters".
        self.middleware.append(name_invalid_params)
        self.middleware.append(self.discovery.track)
        # Multi-round calls (2026-07-28): every requestState sealed going out and checked
        # coming in, under the state directory's key (rounds.py).
        self.middleware.append(state_boundary(state_dir, name, self.store))
        self.tool_registry.add_on_change(self._tools_changed)
        presets.manager.add_on_change(self._context_changed)
        held = self.tool_registry.get(self._request_tool.name)
        # Another server over the same presets registered its own: ours takes over.
        self.tool_registry.register(
            self._request_tool, replace=held is not None and held.managed_owner is None
        )

    def close(self) -> None:
        """Stop following the registry and manager; end listen streams; stop the thread pool."""
        self.tool_registry.remove_on_change(self._tools_changed)
        self.discovery.close()
        self.tasks.close()
        if self.tool_registry.get(self._request_tool.name) is self._request_tool:
            self.tool_registry.unregister(self._request_tool.name)
        self.presets.manager.remove_on_change(self._context_changed)
        self.principals.close()
        self.fanout.close_listen_streams()
        self.calls.close()
        self.policy.close()
        if self.upstreams is not None:
            self.upstreams.close()

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        # The SDK advertises listChanged: false unless told; every transport
        # (and mcp.Client in memory) asks here without options.
        return super().create_initialization_options(
            notification_options or _NOTIFY_ALL, experimental_capabilities, extensions
        )

    # -- listen streams (2026-07-28) -------------------------------------------

    async def _listen(
        self, ctx: ServerRequestContext[Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        principal = principal_of(ctx)
        self._listen_streams += 1
        try:
            with self.listen_limit.admit(principal):  # bounded per principal and in all
                handler = self.fanout.listen_handler(principal)
                return await handler(ctx, params)
        finally:
            self._listen_streams -= 1
            if self._listen_streams == 0 and self._no_listen_streams is not None:
                self._no_listen_streams.set()

    async def end_listen_streams(self, timeout: float = 1.0) -> None:
        """End every open listen stream with its result, as the client stops reading us.

        Called when stdin closes: left open, each stream's request would be
        answered with the dispatcher's ``-32000 Connection closed`` error instead
        of the graceful end the spec gives a stream the server closes.
        """
        if self._listen_streams == 0:
            return
        self._no_listen_streams = anyio.Event()
        self.fanout.close_listen_streams()
        with anyio.move_on_after(timeout):
            await self._no_listen_streams.wait()

    # -- change listeners (any thread) --------------------------------------

    def _tools_changed(self, _change: ToolRegistryChange) -> None:
        self.listings.refresh()
        self.fanout.changed("tools")

    def _principals_changed(self, audience: Audience) -> None:
        """What some principals are served changed (their own state, or the server's)."""
        self.listings.refresh()
        if audience.only is not None:  # the server's own changes are told below
            self.fanout.changed("tools", audience)
            self.fanout.changed("context", audience)
            self.fanout.changed("resources", audience)

    def _context_changed(self, resolution: Resolution) -> None:
        # The listings were refreshed by _principals_changed: Principals hears every
        # change of the manager's and tells its listeners.
        self.telemetry.context_switch(self._resolution, resolution)
        before = self._resolution
        self._resolution = resolution
        self.fanout.changed("context")
        if before is None or before.resource_ids != resolution.resource_ids:
            self.fanout.changed("resources")

    # -- tools -------------------------------------------------------------

    def tool_entries(self) -> list[dict[str, Any]]:
        """The wire form of ``tools/list``, rebuilt only when the tool registry changes.

        Everything an entry shows (hints included) is on the registry's ``ToolDef``.
        """
        key = self.tool_registry.version
        if key != self._tools_key:
            self._tools_cache = self._entries(self.tool_registry.list())
            self._tools_key = key
        return self._tools_cache

    @property
    def listing(self) -> Listing:
        """What this server lists (``start.lists``: the start front lists the same way)."""
        return Listing(self.presets, self.policy, self.principals)

    def _entries(self, tools: Iterable[ToolDef]) -> list[dict[str, Any]]:
        """The wire entries of ``tools`` that the allow-list leaves in."""
        return self.listing.tool_entries(tools)

    def entries_for(self, principal: str) -> tuple[list[dict[str, Any]], int]:
        """``principal``'s ``tools/list`` entries and the list's version (for cursors).

        A principal that follows the server gets ``tool_entries()`` itself;
        one with its own context or overrides gets the registry's tools with
        the preset tools replaced by its own, cached per resolution (two
        principals in one context share one list).
        """
        defs = None if principal == LOCAL else self.principals.tool_defs(principal)
        if defs is None:
            entries = self.tool_entries()
            assert self._tools_key is not None
            return entries, self._tools_key
        version = self.tool_registry.version
        cached = self._principal_lists.get(id(defs))
        if cached is None or cached[0] is not defs or cached[1] != version:
            entries = self._entries(self._tools_with(defs))
            cached = (defs, version, entries, hash((version, tuple(e["name"] for e in entries))))
            self._principal_lists[id(defs)] = cached
            while len(self._principal_lists) > PRINCIPAL_LISTS:
                self._principal_lists.pop(next(iter(self._principal_lists)))
        return cached[2], cached[3] & 0x7FFFFFFF

    def stable_entries(self, principal: str) -> tuple[list[dict[str, Any]], int]:
        """A stable ``principal``'s entries and version: its listed preset tools, and the
        registry's other tools (the server's own, a host's), cached per listing."""
        listed = self.listings.listed(principal)
        version = self.tool_registry.version
        cached = self._stable_lists.get(principal)
        if cached is None or cached[0] is not listed or cached[1] != version:
            entries = self._entries(self._tools_with(listed.defs))
            key = hash(("stable", principal, tuple(e["name"] for e in entries)))
            cached = (listed, version, entries, key & 0x7FFFFFFF)
            self._stable_lists[principal] = cached
            while len(self._stable_lists) > PRINCIPAL_LISTS:
                self._stable_lists.pop(next(iter(self._stable_lists)))
        return cached[2], cached[3]

    def _current_for(
        self, principal: str
    ) -> tuple[Resolution, tuple[ToolDef, ...], Mapping[str, Any]]:
        """``principal``'s resolution, preset tool defs and context now (``Listings``)."""
        defs = None if principal == LOCAL else self.principals.tool_defs(principal)
        context = self.principals.context(principal)
        if defs is None:
            manager = self.presets.manager
            return manager.resolve(), tuple(manager.get_tool_defs()), context
        return self.principals.resolution(principal), defs, context

    def delivery_for(self, ctx: ServerRequestContext[Any]) -> Delivery:
        """How the caller of ``ctx`` is served: its token's delivery, else the server's,
        ``auto`` deciding by era and client name (``delivery.choose``)."""
        client = client_of(ctx)
        modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        name = client[0] if client is not None else None
        return choose(self._mode_of(token_of(ctx.request)), modern=modern, client=name)

    def _mode_of(self, token: str | None) -> DeliveryMode:
        """The delivery mode for a caller of ``token``: its own, else the server's."""
        mode = self.delivery
        if token is not None:
            profile = self.policy.profile(token)
            if profile is not None and profile.delivery is not None:
                mode = profile.delivery  # type: ignore[assignment]
        if mode == "auto" and self.discovery.mode == "list":
            return "live"  # --discovery list serves no presets_call, which stable needs
        return mode

    def _stable_listener(self, principal: str) -> bool:
        """Whether ``principal``'s listen streams (2026-07-28) are served stable."""
        token = None if principal == LOCAL else principal
        return choose(self._mode_of(token), modern=True, client=None) == "stable"

    def _tools_with(self, defs: Sequence[ToolDef]) -> list[ToolDef]:
        """The registry's tools, its preset tools replaced by ``defs``, in name order."""
        return self.listing.tools_with(defs)

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams
    ) -> dict[str, Any]:
        if self.upstreams is not None:
            await self.upstreams.ready()  # starts upstreams whose tools presets wait for
        principal = principal_of(ctx)
        stable = self.delivery_for(ctx) == "stable"
        listed, key = self.stable_entries(principal) if stable else self.entries_for(principal)
        entries = self._visible(listed, token_of(ctx.request))
        entries = self.discovery.listed(
            entries, ctx, self.listings.listed(principal) if stable else None
        )
        size = self.page_size
        if params.cursor is None:
            if len(entries) <= size:  # the common case: the cached list itself, no copy
                return {"tools": entries, "resultType": "complete"}
            start = 0
        else:
            start = self._page_start(params.cursor, len(entries), key)
        result: dict[str, Any] = {"tools": entries[start : start + size], "resultType": "complete"}
        if start + size < len(entries):
            result["nextCursor"] = page_cursor(start + size, key)
        return result

    def _page_start(self, cursor: str, count: int, key: int) -> int:
        """Where the page of ``cursor`` starts; ``-32602`` for a cursor that is not valid now.

        The cursor carries the tool list's version: after a change the pages
        would no longer fit together, so the client is told to start again.
        """
        read = read_cursor(cursor)
        if read is None:
            problem = "not a cursor this server gave out"
        elif read[1] != key:
            problem = "the tool list has changed since this cursor was given out"
        elif not 0 < read[0] < count:
            problem = "not a cursor this server gave out"
        else:
            return read[0]
        raise MCPError(
            code=types.INVALID_PARAMS,
            message=(
                f"Invalid params for tools/list: params.cursor: {problem}; "
                "list the tools again from the start (no cursor)"
            ),
            data={
                "method": "tools/list",
                "fields": [{"field": "params.cursor", "problem": problem}],
            },
        )

    def _visible(self, entries: list[dict[str, Any]], token: str | None) -> list[dict[str, Any]]:
        """The entries a session authenticated with ``token`` may see (all without one)."""
        if token is None:
            return entries
        return [e for e in entries if self.policy.allows(e["name"], token)]

    def _input_schema(self, name: str) -> Mapping[str, Any] | None:
        tool = self.tool_registry.get(name)
        return plain(tool.input_schema) if tool is not None else None

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> dict[str, Any]:
        if self.upstreams is not None:
            await self.upstreams.ready()
        stable = self.delivery_for(ctx) == "stable"
        name, arguments, token = params.name, arguments_of(params), token_of(ctx.request)
        discovery = self.discovery
        if name in discovery.names and (discovery.enabled or stable):
            # A discovery tool is the server's own; presets_call opens the call it names.
            own = discovery.tools[name]
            call = PendingCall(name, arguments, token, ctx, params, own, stable=stable)
            result, call = await discovery.call(call)
        else:
            call = self.serving.open(name, arguments, token, ctx, params, stable=stable)
            if self.tasks.takes(call):  # it runs through the pipeline too, as a task
                return await self.tasks.call(call)
            result = await self.serving.run(call)
        if stable:
            self._tell(call, result)
        return result

    def _tell(self, call: PendingCall, result: dict[str, Any]) -> None:
        """Append the notice of what changed to a stable caller's result (``delivery.py``).

        ``call`` is the call that ran: through ``presets_call``, the named tool's.
        """
        content = result.get("content")
        if not isinstance(content, list) or result.get("resultType") == "input_required":
            return
        news = self.listings.news(call.principal)
        if news is None:
            return
        told, now, defs = news
        listed = self.listings.listed(call.principal)
        notice = make_notice(
            told,
            now,
            defs,
            [d.name for d in listed.defs],
            self.principals.context(call.principal),
            lambda name: self.policy.allows(name, call.token),
            self.presets.tool_adapters.mcp_name_of,
            self.listings.shown(call.principal),
        )
        if notice is None:
            return
        self.listings.mark_shown(call.principal, [t.name for t in notice.added])
        text = notice_text(notice, self.discovery.call_name, self.discovery.risky_name)
        content.append({"type": "text", "text": text})
        # Claude Code and Codex send the model a result's structured content instead of its
        # text when it has some: the notice goes there too, where the output schema lets it.
        structured = result.get("structuredContent")
        schema = call.tool.output_schema if call.tool is not None else None
        if isinstance(structured, dict) and _open(schema):
            structured[NOTICE_KEY] = text

    async def run_call(self, call: PendingCall) -> dict[str, Any]:
        """Open ``call`` and run it through the pipeline, in its span: what ``tools/call`` does.

        Public for a host that receives calls another way (and for tests):
        ``PendingCall(name, arguments, token)`` is all it needs. A call without
        an MCP request (``call.request`` None) cannot ask the client anything,
        so a confirmation waits for ``presets approve``.
        """
        serving = self.serving
        opened = serving.open(call.name, call.arguments, call.token, call.request, call.params)
        return await serving.run(opened)

    # -- prompt and resources ------------------------------------------------

    def resolution_for(self, token: str | None) -> Resolution:
        """What the principal of ``token`` (``local`` without one) is served now."""
        return self.listing.resolution(token)

    def served_tools(self, token: str | None) -> list[ToolDef]:
        """The tools the principal of ``token`` is served now, the allow-lists not applied."""
        return self.listing.served_tools(token)

    async def _subscribe(
        self, ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams
    ) -> dict[str, Any]:
        self.fanout.subscribe(ctx, str(params.uri), True)
        return {}

    async def _unsubscribe(
        self, ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams
    ) -> dict[str, Any]:
        self.fanout.subscribe(ctx, str(params.uri), False)
        return {}

    def status(self, token: str | None = None) -> dict[str, Any]:
        """The status resource for a session of ``token`` (``docs/security.md``).

        It is the principal's own: its context, the overrides in force for it
        and what it is served. A session narrowed by ``--allow`` or by a token
        sees the active presets behind its tools (``Listing.presets_seen``) and the
        overrides of presets that hold one of its tools (an ``off`` one too,
        which hides them); the policy part is ``ToolPolicy.status``, which
        shows a token only its own.
        """
        principal = LOCAL if token is None else token
        narrowed = self.policy.allow is not None or token is not None
        seen = self.listing.presets_seen(token) if narrowed else None
        overrides = self.principals.overrides(principal)
        if narrowed:
            overrides = {n: v for n, v in overrides.items() if self._holds_allowed(n, token)}
        return {
            "context": self.principals.context(principal),
            "overrides": overrides,
            "active_presets": [
                {"name": a.name, "reason": a.reason, "risk": a.risk}
                for a in self.resolution_for(token).active_presets
                if seen is None or a.name in seen
            ],
            "tools": [
                t.name for t in self.served_tools(token) if self.policy.allows(t.name, token)
            ],
            "policy": self.policy.status(token),
        }

    def _holds_allowed(self, preset_name: str, token: str | None) -> bool:
        """Whether the preset, active or not, holds a tool the allow-lists let this session use."""
        preset = self.presets.registry.get(preset_name)
        adapters = self.presets.tool_adapters
        return preset is not None and any(
            (name := adapters.mcp_name_of(tool_id)) is not None and self.policy.allows(name, token)
            for tool_id in preset.tool_ids
        )


@asynccontextmanager
async def _lifespan(server: Server[Any]) -> AsyncIterator[dict[str, Any]]:
    # Entered once per stdio/in-memory connection and once per HTTP app: it
    # binds change delivery to the loop that serves.
    assert isinstance(server, PresetServer)
    server.fanout.attach_loop()
    try:
        yield {}
    finally:
        server.fanout.detach_loop()


def build_server(
    presets: Presets, config: ServeConfig | None = None, /, **legacy: Any
) -> PresetServer:
    """The MCP server for ``presets``; ``mcp.Client(build_server(p))`` talks to it in memory.

    ``config`` says how (``ServeConfig``; only its call-handling fields
    matter here: the policy, confirmation, stages, telemetry, page size).
    The old keywords (``policy=``, ``confirm=`` ...) still work, with a
    ``DeprecationWarning``; ``control=`` is still taken as it was.
    """
    control = legacy.pop("control", None)
    config = config_from(config, legacy, "build_server")
    return PresetServer(
        presets,
        policy=config.policy,
        control=control,
        page_size=config.page_size,
        telemetry=config.telemetry,
        confirm=config.confirm,
        confirm_timeout=config.confirm_timeout,
        confirm_via=config.confirm_via,
        stages=config.stages,
        tool_budget=config.tool_budget,
        discovery=config.discovery,
        state_dir=config.state_dir,
        store=config.store,
        delivery=config.delivery,
    )
