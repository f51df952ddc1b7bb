"""Every client reaches its tools: the tool budget, ``presets_search`` and ``presets_call``.

Two problems, one answer. A client that lists tools once and never again
(Codex 0.171.0) keeps the first context's tools after the context moves; and
a large active set fills the model's context before the first message. So
the server can serve two tools of its own:

- ``<prefix>presets_search`` ranks every installed tool the caller may see
  (BM25, ``agent_presets.lib.toolsearch``) for a task in words, and says of each
  whether it is active now and, if not, what would turn it on;
- ``<prefix>presets_call`` runs one of them through the same call pipeline
  as a direct ``tools/call`` (``Serving.open`` and ``Serving.run``): the same
  gates, confirmation, budgets and event record, the same refusals.

``--tool-budget N`` keeps each caller's ``tools/list`` at N tokens or fewer
(``narrow``): the server's own tools first, then whole presets in order
(pinned ones, then the more specific context pattern, then registration
order) until the next one would not fit. It always serves the two tools,
since what it leaves out is reachable only through them.

``--discovery`` says who else gets them: ``list`` nobody, ``search``
everybody, ``auto`` (the default) the clients known not to re-list
(``KNOWN_CLIENTS``, by the client's name and version) and those seen not to
(``Relisting``: no ``tools/list`` within ``SEEN_WINDOW`` seconds of a
change, judged at the client's next request). See docs/budget.md.
"""

from __future__ import annotations

import bisect
import json
import logging
import threading
import time
import weakref
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp_types import CLIENT_INFO_META_KEY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from agent_presets.lib.model import ANY, DANGEROUS_RISKS, ToolArgumentError
from agent_presets.lib.schema import quote
from agent_presets.lib.toolformats import DEFAULT_CLIENT, client_format
from agent_presets.lib.toolwire import LEGACY, MODERN
from agent_presets.server.clients import known_not_to_relist
from agent_presets.server.mcp.auth import principal_of
from agent_presets.server.mcp.pipeline import (
    Arguments,
    Budgets,
    Next,
    PendingCall,
    Pipeline,
    Record,
    Result,
)
from agent_presets.server.mcp.wire import error_result, success_result
from agent_presets.server.policy import LOCAL
from agent_presets.server.searchtools import (
    ALWAYS_LOAD,
    CALL_TOOL,
    DEFAULT_LIMIT,
    RISKY_CALL_TOOL,
    SEARCH_TOOL,
    discovery_tools,
    own_entry,
)

if TYPE_CHECKING:
    from agent_presets.lib.budget import Budget
    from agent_presets.lib.model import Preset
    from agent_presets.lib.tools import ToolRegistryChange
    from agent_presets.lib.toolsearch import SearchDoc, ToolIndex
    from agent_presets.server.config import DiscoveryMode
    from agent_presets.server.delivery import Listed
    from agent_presets.server.mcp.serving import Serving

log = logging.getLogger("agent_presets.server")

SEEN_WINDOW: Final = 3.0
"""Seconds after a tools/list_changed within which a re-listing client lists again."""
_CHANGES_KEPT: Final = 64


# ------------------------------------------------------------------ known clients


def client_of(ctx: ServerRequestContext[Any, Any]) -> tuple[str, str | None] | None:
    """``(name, version)`` of the client behind ``ctx``: its ``initialize`` (legacy), or
    the request's ``_meta`` client info (2026-07-28); None when it gave none."""
    params = getattr(ctx.session, "client_params", None)
    info: Any = getattr(params, "client_info", None)
    if info is not None:
        return str(info.name), getattr(info, "version", None)
    meta = ctx.meta
    raw = meta.get(CLIENT_INFO_META_KEY) if isinstance(meta, Mapping) else None
    if isinstance(raw, Mapping) and isinstance(raw.get("name"), str):
        version = raw.get("version")
        return raw["name"], version if isinstance(version, str) else None
    return None


# ------------------------------------------------------------------ seen not to re-list


class Relisting:
    """Which clients have been seen not to re-list after ``tools/list_changed``.

    A client is judged at each of its requests: if the tool list changed
    more than ``SEEN_WINDOW`` seconds ago, after its last ``tools/list``, and
    it has not listed since, it does not re-list. A legacy-era connection is
    marked, and its principal (the token's name, or ``local``) with it, so a
    reconnect of the same principal gets the two tools from its first list;
    a 2026-07-28 request has no connection, so there the principal alone is
    listed and marked. Marks last as long as the server runs. Thread-safe:
    changes arrive from any thread.
    """

    def __init__(self, window: float = SEEN_WINDOW) -> None:
        self.window = window
        self._lock = threading.Lock()
        self._changes: deque[float] = deque(maxlen=_CHANGES_KEPT)
        self._listed: weakref.WeakKeyDictionary[object, float] = weakref.WeakKeyDictionary()
        self._principal_listed: dict[str, float] = {}
        self._marked: weakref.WeakSet[object] = weakref.WeakSet()
        self.principals: set[str] = set()
        """Principals seen not to re-list."""

    def changed(self, now: float | None = None) -> None:
        with self._lock:
            self._changes.append(time.monotonic() if now is None else now)

    def seen(self, connection: object | None, principal: str) -> bool:
        """Whether this connection (or, without one, this principal) was seen not to re-list."""
        with self._lock:
            if principal in self.principals:
                return True
            return connection is not None and connection in self._marked

    def request(
        self, connection: object | None, principal: str, listing: bool, now: float | None = None
    ) -> None:
        """A request of ``connection`` (None: a 2026-07-28 request) by ``principal``."""
        now = time.monotonic() if now is None else now
        with self._lock:
            last = (
                self._principal_listed.get(principal)
                if connection is None
                else self._listed.get(connection)
            )
            if last is not None and self._missed(last, now):
                self.principals.add(principal)
                if connection is not None:
                    self._marked.add(connection)
            if listing:
                if connection is None:
                    self._principal_listed[principal] = now
                else:
                    self._listed[connection] = now

    def _missed(self, last: float, now: float) -> bool:
        """Whether a change came after ``last`` and more than the window before ``now``."""
        changes = self._changes
        at = bisect.bisect_right(changes, last)
        return at < len(changes) and now - changes[at] > self.window


# ------------------------------------------------------------------ the budget's order


def specificity(preset: Preset, context: Mapping[str, Any]) -> int:
    """The fields of ``preset``'s most specific pattern that matches ``context`` (0: none).

    A field set to ``any`` says nothing about the context, so it does not count.
    """
    from agent_presets.lib.matching import compile_pattern

    items = frozenset(context.items())
    best = 0
    for pattern in preset.contexts:
        if compile_pattern(pattern).matches(items, context):
            best = max(best, sum(1 for v in pattern.values() if v != ANY))
    return best


@dataclass(frozen=True)
class Narrowed:
    """A caller's ``tools/list`` under a budget: what is listed, and what it costs."""

    entries: list[dict[str, Any]]
    tokens: int
    left_out: tuple[str, ...]
    """The tool names of the presets left out, reachable through presets_search."""


# ------------------------------------------------------------------ the tools


class Discovery:
    """The tool budget and the discovery tools of one server, through its ``Serving``."""

    def __init__(
        self, serving: Serving, mode: DiscoveryMode = "auto", tool_budget: int | None = None
    ) -> None:
        self.serving = serving
        self.mode: DiscoveryMode = mode
        self.tool_budget = tool_budget
        prefix = serving.tool_registry.namespace_prefix
        self.search_name = f"{prefix}{SEARCH_TOOL}"
        self.call_name = f"{prefix}{CALL_TOOL}"
        self.risky_name = f"{prefix}{RISKY_CALL_TOOL}"
        self.names = frozenset({self.search_name, self.call_name, self.risky_name})
        self.relisting = Relisting()
        self.search_tool, self.call_tool, self.risky_tool = discovery_tools(prefix)
        self._own_entries = [
            own_entry(t) for t in (self.search_tool, self.call_tool, self.risky_tool)
        ]
        self.tools = {t.name: t for t in (self.search_tool, self.call_tool, self.risky_tool)}
        """The discovery tools by name: a call of one is opened with it (no lookup)."""
        self._search = Pipeline([Record(serving), Budgets(serving), Arguments(), _Search(self)])
        self._index: ToolIndex | None = None
        self._index_key: object = None
        self._index_lock = threading.Lock()
        self._budgets: dict[tuple[str, str], Budget] = {}
        self._budget_lock = threading.Lock()
        self._narrowed: dict[object, Narrowed] = {}
        self._warned_over = False
        self._warming: threading.Thread | None = None
        serving.tool_registry.add_on_change(self._tools_changed)
        if tool_budget is not None or mode == "search":
            self.warm()

    def warm(self) -> None:
        """Build the index on a thread, once: its first build imports numpy (about a second),
        which the first search would otherwise wait for on the event loop."""
        if self._warming is not None:
            return
        self._warming = threading.Thread(
            target=self._build_quietly, name="presets-search-index", daemon=True
        )
        self._warming.start()

    def _build_quietly(self) -> None:
        try:
            if self.tool_budget is not None:
                # The tokenizer (0.2 to 0.8 s) loads here, so initialize is answered at once.
                with self._budget_lock:
                    self._budget(LEGACY)
            self.index()
        except Exception:  # the first search builds it again, and reports what is wrong
            log.exception("building the tool search index failed")

    def close(self) -> None:
        self.serving.tool_registry.remove_on_change(self._tools_changed)

    def _tools_changed(self, _change: ToolRegistryChange) -> None:
        self.relisting.changed()

    @property
    def enabled(self) -> bool:
        """Whether the two tools exist on this server (for some client, or all)."""
        return self.mode != "list" or self.tool_budget is not None

    # -- tools/list --------------------------------------------------------

    def offered(self, ctx: ServerRequestContext[Any, Any], stable: bool = False) -> bool:
        """Whether the caller of ``ctx`` gets the discovery tools in its list (a stable
        caller always does: its new tools are reached through them)."""
        if stable or self.tool_budget is not None or self.mode == "search":
            return True
        if self.mode == "list":
            return False
        if known_not_to_relist(client_of(ctx)) is not None:
            return True
        return self.relisting.seen(_connection(ctx), principal_of(ctx))

    def listed(
        self,
        entries: list[dict[str, Any]],
        ctx: ServerRequestContext[Any, Any],
        stable: Listed | None = None,
    ) -> list[dict[str, Any]]:
        """The caller's ``tools/list``: ``entries`` (what it may see), narrowed and completed.

        ``stable``: the caller's listing when it is served stable (``delivery.py``): a
        budget then cuts that listing, in the context it was listed in, so the caller's
        own switches change nothing here either."""
        if not self.offered(ctx, stable is not None):
            return entries
        self.warm()
        protocol = MODERN if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS else LEGACY
        own = self._own(entries)
        if self.tool_budget is None:
            return [*entries, *own]
        client = client_of(ctx)
        return self.narrow(
            entries,
            own,
            protocol,
            principal_of(ctx),
            client_format(client and client[0]),
            stable,
        ).entries

    def _own(self, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        taken = {e["name"] for e in entries}
        return [e for e in self._own_entries if e["name"] not in taken]

    def narrow(
        self,
        entries: list[dict[str, Any]],
        own: list[dict[str, Any]],
        protocol: str = LEGACY,
        principal: str = LOCAL,
        client: str = DEFAULT_CLIENT,
        stable: Listed | None = None,
    ) -> Narrowed:
        """``entries`` and the server's ``own`` tools, at most ``tool_budget`` tokens, counted
        as ``client`` sends them to its model (``toolformats``).

        The server's tools (its own two, ``presets_request``, a host's tools
        without a preset) always; then each active preset's tools, whole, in
        order (``pin``, then the more specific matching pattern, then
        registration), until the next preset would not fit. Every listed
        tool carries ``_meta["anthropic/alwaysLoad"]: true``.
        """
        assert self.tool_budget is not None
        # The order follows the principal's context (a preset's specificity in it).
        context = self.serving.principals.context(principal) if stable is None else stable.context
        key = (
            self.serving.tool_registry.version,
            self.tool_budget,
            protocol,
            client,
            tuple(e["name"] for e in entries),
            tuple(sorted(context.items(), key=lambda kv: kv[0])),
        )
        found = self._narrowed.get(key)
        if found is not None:
            return found
        with self._budget_lock:  # the warming thread may be loading the tokenizer
            budget = self._budget(protocol, client)
        loaded = [_always_loaded(e) for e in entries]
        base: list[dict[str, Any]] = []
        groups: dict[str, list[dict[str, Any]]] = {}
        for entry in loaded:
            tool = (
                self.serving.tool_for(entry["name"], principal)
                if stable is None
                else stable.tool(entry["name"])
            )
            preset = tool.preset if tool is not None else None
            if preset is None:
                base.append(entry)
            else:
                groups.setdefault(preset, []).append(entry)
        base.extend(own)
        tokens = sum(budget.entry(e) for e in base)
        if tokens > self.tool_budget and not self._warned_over:
            self._warned_over = True
            log.warning(
                "the server's own tools take %d tokens, over --tool-budget %d: they are "
                "listed anyway, since the others are reached through them",
                tokens,
                self.tool_budget,
            )
        listed = list(base)
        left_out: list[str] = []
        full = False
        for preset in self._order(groups, context):
            group = groups[preset]
            if not full:
                cost = sum(budget.entry(e) for e in group)
                if tokens + cost <= self.tool_budget:
                    tokens += cost
                    listed.extend(group)
                    continue
                full = True
            left_out.extend(e["name"] for e in group)
        narrowed = Narrowed(listed, tokens, tuple(left_out))
        if len(self._narrowed) > 64:
            self._narrowed.clear()
        self._narrowed[key] = narrowed
        return narrowed

    def _order(self, groups: Mapping[str, Any], context: Mapping[str, Any]) -> list[str]:
        presets = self.serving.presets.registry
        order = {name: i for i, name in enumerate(presets.names())}

        def rank(name: str) -> tuple[bool, int, int]:
            preset = presets.get(name)
            if preset is None:
                return (True, 0, len(order))
            return (not preset.pin, -specificity(preset, context), order[name])

        return sorted(groups, key=rank)

    def _budget(self, protocol: str, client: str = DEFAULT_CLIENT) -> Budget:
        budget = self._budgets.get((protocol, client))
        if budget is None:
            from agent_presets.lib.budget import Budget, get_tokenizer

            budget = self._budgets[protocol, client] = Budget(get_tokenizer(), protocol, client)
        return budget

    # -- requests ------------------------------------------------------------

    async def track(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Server middleware: note each request for the ``seen`` rule (``Relisting``)."""
        if self.mode == "auto" and self.tool_budget is None:
            self.relisting.request(_connection(ctx), principal_of(ctx), ctx.method == "tools/list")
        return await call_next(ctx)

    async def call(self, own: PendingCall) -> tuple[Result, PendingCall]:
        """A ``tools/call`` of one of the discovery tools (``own``, opened with its tool from
        ``tools``): its result, and the call that ran (through ``presets_call``, the named
        tool's)."""
        serving = self.serving
        if own.name == self.search_name:
            return await serving.run(own, self._search), own
        inner, problem = self._named(own)
        if inner is None:  # one bad-arguments line, as a direct call's would be
            refusal = ToolArgumentError(f"Invalid arguments for {own.name}: {problem}.")
            return await serving.run(own, Pipeline([Record(serving), _BadArguments(refusal)])), own
        return await serving.run(inner), inner

    def _named(self, outer: PendingCall) -> tuple[PendingCall | None, str]:
        """``presets_call``'s call of the tool it names, opened; or None and what is wrong."""
        args = outer.arguments
        name = args.get("name")
        arguments = args.get("arguments", {})
        if not isinstance(name, str) or not name:
            return None, "'name' must be the tool's name, a non-empty string"
        if not isinstance(arguments, Mapping):
            return None, "'arguments' must be an object: the tool's arguments by name"
        if set(args) - {"name", "arguments"}:
            extra = ", ".join(sorted(set(args) - {"name", "arguments"}))
            return None, f"unexpected argument(s) {extra}; it takes 'name' and 'arguments'"
        if name in self.names:
            return None, f"{quote(name)} is not run through {outer.name}: call it directly"
        inner = self.serving.open(
            name, dict(arguments), outer.token, outer.request, outer.params, stable=outer.stable
        )
        tool = inner.tool
        if outer.name != self.risky_name and tool is not None and tool.risk in DANGEROUS_RISKS:
            return None, (
                f"{name} is a risky tool (risk: {tool.risk}): run it with "
                f"{self.risky_name}, with the same name and arguments; your client may "
                "ask the user first"
            )
        return inner, ""

    # -- the index -----------------------------------------------------------

    def index(self) -> ToolIndex:
        """The index of the installed tools, rebuilt when a plugin's tools or presets change."""
        presets = self.serving.presets
        key = (presets.tool_adapters.version, tuple(map(id, presets.registry.list())))
        with self._index_lock:
            if self._index is None or key != self._index_key:
                from agent_presets.lib.toolsearch import ToolIndex, catalog_docs

                docs = catalog_docs(presets.tool_adapters, presets.registry.list())
                self._index, self._index_key = ToolIndex(docs), key
            return self._index

    def search(self, query: str, limit: int, token: str | None) -> dict[str, Any]:
        """What ``presets_search`` answers: the best tools for ``query`` that the caller may see."""
        serving = self.serving
        policy = serving.policy
        index = self.index()
        found = index.search(query, limit, lambda doc: policy.allows(doc.name, token))
        registry = serving.presets.registry
        manager = serving.presets.manager
        results = []
        principal = token or LOCAL
        for doc, score in found:
            results.append(self._result(doc, score, registry, manager, principal))
        if results:
            message = (
                f"Run a tool with {self.call_name} (name, arguments); an active tool that is in "
                "your tool list may also be called directly. A tool that is not active says "
                "what would turn it on."
            )
        else:
            message = "No tool matches those words. Try other words for the task, or fewer of them."
        return {"query": query, "results": results, "message": message}

    def _result(
        self, doc: SearchDoc, score: float, registry: Any, manager: Any, principal: str = LOCAL
    ) -> dict[str, Any]:
        from agent_presets.lib.explain import preset_verdicts

        served = self.serving.tool_for(doc.name, principal)  # as the caller is served it
        active = served is not None and served.managed_source == doc.tool_id
        holders = [p for name in doc.presets if (p := registry.get(name)) is not None]
        verdicts = preset_verdicts(manager, holders)
        chosen = next((v for v in verdicts if v.active), verdicts[0] if verdicts else None)
        adapters = self.serving.presets.tool_adapters
        adapter = adapters.get(doc.tool_id)
        result: dict[str, Any] = {
            "name": doc.name,
            "title": adapter.title if adapter is not None and adapter.title else None,
            "description": adapters.description(adapter) if adapter is not None else "",
            "preset": chosen.preset if chosen is not None else None,
            "risk": chosen.risk if chosen is not None else None,
            "active": active,
            "score": round(score, 3),
        }
        if chosen is not None:  # which call tool runs it (risky ones have their own name)
            dangerous = chosen.risk in DANGEROUS_RISKS
            result["run_with"] = self.risky_name if dangerous else self.call_name
        if result["title"] is None:
            del result["title"]
        if not active and chosen is not None:
            risky = [v for v in verdicts if v.risk in DANGEROUS_RISKS]
            if risky and len(risky) == len(verdicts):
                v = risky[0]
                result["enable"] = (
                    f"only the user can turn preset {v.preset!r} on (risk: {v.risk}): it stays "
                    f"off until a person does; ask with {self._request_name()} if you need it"
                )
            else:
                v = next(v for v in verdicts if v.risk not in DANGEROUS_RISKS)
                result["preset"], result["risk"] = v.preset, v.risk
                result["enable"] = v.enable
        if adapter is not None:
            schema = served.input_schema if active and served is not None else adapter.input_schema
            result["inputSchema"] = json.loads(json.dumps(schema, default=_plain))
        return result

    def _request_name(self) -> str:
        return self.serving.request_tool


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"not JSON: {type(value).__name__}")


def _always_loaded(entry: dict[str, Any]) -> dict[str, Any]:
    meta = dict(entry.get("_meta") or {})
    meta[ALWAYS_LOAD] = True
    return {**entry, "_meta": meta}


def _connection(ctx: ServerRequestContext[Any, Any]) -> object | None:
    """The legacy-era connection of ``ctx`` (its stable identity), None for 2026-07-28."""
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return None
    session = ctx.session
    connection = getattr(session, "_connection", None)
    return connection if connection is not None else session


class _BadArguments:
    """The last stage of a malformed ``presets_call``: its refusal, recorded as bad arguments."""

    def __init__(self, error: ToolArgumentError) -> None:
        self.error = error

    async def handle(self, call: PendingCall, call_next: Next) -> Result:
        call.ending.outcome, call.ending.error = "bad-arguments", self.error
        return error_result(str(self.error))


class _Search:
    """The search itself: the last stage of ``presets_search``'s pipeline."""

    def __init__(self, discovery: Discovery) -> None:
        self.discovery = discovery

    async def handle(self, call: PendingCall, call_next: Next) -> Result:
        args = call.arguments
        limit = args.get("limit", DEFAULT_LIMIT)
        answer = self.discovery.search(str(args["query"]), int(limit), call.token)
        call.ending.outcome = "ok"
        return success_result(answer)


def entries_tokens(entries: Sequence[Mapping[str, Any]], budget: Budget) -> int:
    """What ``entries`` cost as ``budget``'s client sends them (the sum of their tools)."""
    return sum(budget.entry(e) for e in entries)
