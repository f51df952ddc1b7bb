"""The start front: ``presets serve`` answers its first requests before the SDK has loaded.

Importing the ``mcp`` SDK takes a second or more, and a client that does
not wait for it (Codex's ``codex exec`` asks its model about a second after
spawning its servers) would get no tool from us. So ``presets serve`` over
stdio starts this front as soon as its plugins, host and flags are ready,
and loads the SDK only then:

- a thread reads stdin from that moment, and answers the requests it can
  prove it answers exactly as the full server would: ``initialize``
  (2025-era clients), ``server/discover`` (2026-07-28), and ``tools/list``,
  ``prompts/list``, ``resources/list`` in either era. The answers are built
  by the functions the full server builds its own with (``lists.py``), from
  the same live objects (plugins, presets, context, policy), so nothing can
  be stale: nothing the front answered from can change before the full
  server runs (no tool call, control socket, console or upstream is served
  yet, and the front answers nothing when any of those could move).
- the first line it cannot prove, and every line after it, waits: the
  front answers nothing more, so nothing is reordered.
- when the full server runs, it takes over the wire (``stdio_transport``
  with ``front=``) and is given every line read so far, in order, the
  answered ones too, so its state (the era, the client's ``initialize``,
  what was listed) is what it would have been; its answers to those are
  compared with what the front sent and dropped (``LineWriter.expect``). A
  difference, which a test rules out, is logged as an error, and a
  2025-era client is told to list again (``list_changed``).
"""

from __future__ import annotations

import json
import logging
import sys
import threading
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any, Final

from agent_presets.lib.toolwire import LEGACY, MODERN, listed
from agent_presets.server.clients import known_not_to_relist
from agent_presets.server.delivery import DeliveryMode, choose
from agent_presets.server.searchtools import discovery_tools, own_entry
from agent_presets.server.start.lists import (
    RESOURCE_FIELDS,
    Listing,
    capabilities,
    server_info,
    server_instructions,
    shaped,
    shaped_prompt,
)
from agent_presets.server.start.wire import (
    MAX_MESSAGE,
    LineReader,
    LineWriter,
    TooLong,
    claim,
)

if TYPE_CHECKING:
    from pathlib import Path

    from agent_presets.lib.boot import Presets
    from agent_presets.lib.model import ToolDef
    from agent_presets.server.control.channel import ControlListener
    from agent_presets.server.policy import ToolPolicy

__all__ = ["HANDSHAKE_VERSIONS", "MODERN_VERSIONS", "Replies", "StartFront"]

log = logging.getLogger("agent_presets.server.start")

HANDSHAKE_VERSIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""The SDK's ``HANDSHAKE_PROTOCOL_VERSIONS`` (a test holds them equal)."""
MODERN_VERSIONS: Final = ("2026-07-28",)
"""The SDK's ``MODERN_PROTOCOL_VERSIONS`` (a test holds them equal)."""
PROTOCOL_KEY: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_INFO_KEY: Final = "io.modelcontextprotocol/clientInfo"
CLIENT_CAPABILITIES_KEY: Final = "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO_KEY: Final = "io.modelcontextprotocol/serverInfo"
NO_CACHE: Final = {"ttlMs": 0, "cacheScope": "private"}
"""The server's cache hint on every list (``server.mcp.server._NO_CACHE``)."""

REPLAY_WAIT: Final = 10.0
"""Seconds the hand-over waits for the full server's answers to the answered requests."""

_LIST_KEYS: Final = {
    "tools/list": "tools",
    "prompts/list": "prompts",
    "resources/list": "resources",
}
_CHANGED: Final = {
    "tools/list": "notifications/tools/list_changed",
    "prompts/list": "notifications/prompts/list_changed",
    "resources/list": "notifications/resources/list_changed",
}

Item = str | TooLong | Exception
"""What the reading thread hands on: a line, an over-long line, or a read error."""


class Replies:
    """What the front may answer, and how: the full server's answers, built the same way.

    ``tools/list`` is answered only where the full server's list is the
    listing of the registry's tools and the request tool, whoever asks (no
    upstream to wait for, one page, and no discovery tools a client could be
    given by what it says of itself); otherwise it is left to the full server.
    """

    def __init__(
        self,
        presets: Presets,
        *,
        policy: ToolPolicy | None,
        page_size: int,
        tool_budget: int | None,
        discovery: str,
        store: object | None,
        delivery: DeliveryMode = "auto",
    ) -> None:
        """The serving options as ``ServeConfig`` names them, for the server it starts."""
        from agent_presets.server.control.controller import request_tool
        from agent_presets.server.policy import ToolPolicy
        from agent_presets.server.store.embedded import EmbeddedStore

        self.presets = presets
        self.policy = policy if policy is not None else ToolPolicy()
        self.page_size = page_size
        self.tool_budget = tool_budget
        self.discovery = discovery
        self.delivery: DeliveryMode = delivery
        self.members = presets.members
        self.instructions = server_instructions(presets.manager.app)
        prefix = presets.tool_registry.namespace_prefix
        self.request_tool = request_tool(prefix, _unserved)
        self.own_entries = [own_entry(t) for t in discovery_tools(prefix)]
        # An upstream's tools come only once it has started, and a shared store's state
        # can move from another replica: then the lists are the full server's to answer.
        self.lists = not presets.upstreams and (store is None or isinstance(store, EmbeddedStore))

    def initialize(self, protocol: str) -> dict[str, Any]:
        return {
            "capabilities": capabilities(self.members, modern=False),
            "instructions": self.instructions,
            "protocolVersion": protocol,
            "serverInfo": server_info(),
        }

    def discover(self) -> dict[str, Any]:
        return _modern(
            {
                "cacheScope": NO_CACHE["cacheScope"],
                "capabilities": capabilities(self.members, modern=True),
                "instructions": self.instructions,
                "resultType": "complete",
                "supportedVersions": list(MODERN_VERSIONS),
                "ttlMs": NO_CACHE["ttlMs"],
            }
        )

    def listing(self, method: str, protocol: str, client: tuple[str, str | None] | None) -> Any:
        """The result of a list ``method`` for a client of ``protocol``; None: not the front's."""
        listing = Listing(self.presets, self.policy)
        key = _LIST_KEYS[method]
        if method == "tools/list":
            entries = self.tool_entries(listing, protocol, client)
            if entries is None:
                return None
            shape = LEGACY if protocol not in MODERN_VERSIONS else MODERN
            items = [listed(e, shape) for e in entries]
        elif method == "prompts/list":
            items = [shaped_prompt(e) for e in listing.prompts(None)]
        else:
            items = [shaped(e, RESOURCE_FIELDS) for e in listing.resources(None)]
        if protocol not in MODERN_VERSIONS:
            return {key: items}
        # The result model's fields are in alphabetical order.
        fields = {**NO_CACHE, "resultType": "complete", key: items}
        return _modern(dict(sorted(fields.items())))

    def tool_entries(
        self, listing: Listing, protocol: str, client: tuple[str, str | None] | None
    ) -> list[dict[str, Any]] | None:
        """What ``tools/list`` lists, as the full server lists it; None: not the front's.

        A ``stable`` caller's listing is, at the start, the tools active now (its
        first listing is taken when it first lists); ``Discovery.listed`` then adds
        the discovery tools for it, for ``search``, and under ``auto`` for a client
        known not to re-list (or seen not to, which at the start none has been).
        Under a tool budget the list is cut by token counts, with a tokenizer the
        front does not load: the full server's to answer.
        """
        if not self.lists or self.tool_budget is not None:
            return None
        tools = self.served_tools()
        if tools is None:
            return None
        entries = listing.tool_entries(tools)
        name = client[0] if client is not None else None
        stable = choose(self.delivery, modern=protocol in MODERN_VERSIONS, client=name)
        if (
            stable == "stable"
            or self.discovery == "search"
            or (self.discovery == "auto" and known_not_to_relist(client) is not None)
        ):
            taken = {e["name"] for e in entries}
            entries += [e for e in self.own_entries if e["name"] not in taken]
        return entries if len(entries) <= self.page_size else None

    def served_tools(self) -> list[ToolDef] | None:
        """The registry's tools with the server's request tool, as the full server holds them."""
        registry = self.presets.tool_registry
        tools = {t.name: t for t in registry.list()}
        held = tools.get(self.request_tool.name)
        if held is not None and held.managed_owner is not None:
            return None  # the full server would refuse to start: its error, not ours
        tools[self.request_tool.name] = self.request_tool
        return [tools[name] for name in sorted(tools)]


def _unserved(preset: str, state: str, reason: str) -> Any:
    raise RuntimeError("the start front lists the request tool; the full server runs it")


def _modern(result: dict[str, Any]) -> dict[str, Any]:
    """A 2026-07-28 result with the SDK's ``serverInfo`` stamp (its ``_meta``, last)."""
    result["_meta"] = {SERVER_INFO_KEY: server_info()}
    return result


class _Session:
    """What the front knows of the connection: its era, protocol and client, as the SDK would."""

    def __init__(self) -> None:
        self.era: str | None = None
        """None until settled: only ``server/discover`` probes so far (``probe.py``)."""
        self.protocol = LEGACY
        self.client: tuple[str, str | None] | None = None
        self.answered: set[str] = set()


class StartFront:
    """Reads the stdio wire from now on, answers what it can prove, keeps every line in order.

    Claims fd 0 and 1 as the SDK's transport does (``wire.claim``), so a
    stray ``print`` during start-up misses the wire. ``hand_over`` gives the
    wire to the full server (``stdio_transport(front=...)``); ``close``
    gives fd 0 and 1 back.
    """

    def __init__(
        self,
        replies: Replies,
        *,
        max_line: int = MAX_MESSAGE,
        control_socket: Path | None = None,
    ) -> None:
        """``control_socket``: where the control channel will listen, bound now (its
        ``ControlListener``, served by the full server), so that once a client has its
        handshake the operator's commands reach this server, as they did before the front:
        they wait in the socket's backlog until the full server answers them."""
        self.replies = replies
        self.max_line = max_line
        self.listener: ControlListener | None = None
        if control_socket is not None:
            from agent_presets.server.control.channel import ControlListener

            self.listener = ControlListener(control_socket)
        self._stack = ExitStack()
        self.wire_in = self._stack.enter_context(claim(0, sys.stdin, "rb"))
        self.out = LineWriter(self._stack.enter_context(claim(1, sys.stdout, "wb")))
        self.out.on_mismatch = self._mismatch
        self._reader = LineReader(self.wire_in, max_line)
        self._lock = threading.Lock()
        self._backlog: list[tuple[Item, bool]] = []
        self._deliver: Callable[[Item], bool] | None = None
        self._handed = threading.Event()
        self._waiting = False
        self._session = _Session()
        self._methods: dict[str, str] = {}
        self.answered: list[str] = []
        """The methods answered before the SDK loaded, in order (for the log and tests)."""
        self._thread = threading.Thread(target=self._run, name="presets-stdin", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Give fd 0 and 1 back (the reading thread is a daemon, left to its read); the
        control listener is the full server's to close."""
        self._stack.close()

    # -- the reading thread --------------------------------------------------

    def _run(self) -> None:
        while True:
            item: Item
            try:
                item = self._reader.read_item()
            except Exception as exc:  # handed on as the SDK's reader would raise it
                item = exc
            with self._lock:
                deliver = self._deliver
                if deliver is None:
                    self._backlog.append((item, self._answer(item)))
            if deliver is not None:
                self._handed.wait()  # the lines read before go first
                if not deliver(item):
                    return
            if isinstance(item, Exception) or item == "":
                return

    def _answer(self, item: Item) -> bool:
        """Answer ``item`` if the full server's answer is certain; whether it was handled."""
        if self._waiting or not isinstance(item, str) or not item:
            self._waiting = True
            return False
        message = _parse(item)
        reply = None if message is None else self._reply(message)
        if reply is None:
            self._waiting = True
            log.debug("left to the full server from here: %.200s", item)
            return False
        if isinstance(reply, tuple):
            request_id, line, method = reply
            self.out.send(line + "\n")
            self.out.expect(request_id, line)
            self._session.answered.add(request_id)
            self._methods[request_id] = method
            self.answered.append(method)
        return True

    def _reply(self, message: dict[str, Any]) -> tuple[str, str, str] | bool | None:
        """``(id, line, method)`` to send; True: handled, nothing to send; None: not ours."""
        session = self._session
        method = message["method"]
        params = message.get("params")
        if "id" not in message:
            if method == "notifications/initialized" and session.era == "legacy" and not params:
                return True
            return None
        request_id = json.dumps(message["id"])
        if request_id in session.answered:
            return None  # an id used twice: which answer the full server drops is unclear
        meta = _modern_meta(params)
        result: dict[str, Any] | None = None
        if method == "initialize":
            init = None if session.era is not None or meta is not None else _initialize(params)
            if init is None:
                return None
            session.era, session.protocol, session.client = "legacy", init[0], init[1]
            result = self.replies.initialize(init[0])
        elif method == "server/discover":
            if session.era == "legacy" or meta is None or set(params or {}) != {"_meta"}:
                return None
            result = self.replies.discover()
        elif method in _LIST_KEYS:
            if not self.replies.lists:
                return None
            if meta is not None and session.era in (None, "modern"):
                session.era, session.protocol, session.client = "modern", MODERN, meta
                if set(params or {}) != {"_meta"}:
                    return None
            elif meta is None and session.era == "legacy":
                if params and not _progress_only(params):  # a cursor...
                    return None
            else:
                return None
            result = self.replies.listing(method, session.protocol, session.client)
        if result is None:
            return None
        line = _response(message["id"], result)
        return None if line is None else (request_id, line, method)

    # -- the hand-over ------------------------------------------------------

    def hand_over(self, deliver: Callable[[Item], bool]) -> None:
        """From now on every line goes to ``deliver`` (on a thread): those read so far first.

        ``deliver(item)`` returns False when nothing more is to be read. The
        answered lines go first, then, once the full server has answered them
        (its answers dropped), the first line the front left, and on.
        """
        with self._lock:
            backlog, self._backlog = self._backlog, []
            self._deliver = deliver
        threading.Thread(
            target=self._replay, args=(backlog, deliver), name="presets-handover", daemon=True
        ).start()

    def note(self) -> str:
        """What the front answered, for the banner ("" when nothing)."""
        with self._lock:
            if not self.answered:
                return ""
            return f"answered {', '.join(self.answered)} before the SDK loaded"

    def _replay(self, backlog: list[tuple[Item, bool]], deliver: Callable[[Item], bool]) -> None:
        try:
            for item, answered in backlog:
                if not answered:
                    self._wait_for_answers()
                if not deliver(item):
                    return
            self._wait_for_answers()
        finally:
            self._handed.set()

    def _wait_for_answers(self) -> None:
        if not self.out.wait_expected(REPLAY_WAIT):
            log.warning(
                "the full server did not answer again, within %.0f s, the requests answered "
                "before it loaded; going on",
                REPLAY_WAIT,
            )

    def _mismatch(self, request_id: str, sent: str, full: str) -> None:
        """The client has an answer the full server would not give: for a 2025-era list, say
        that it changed, so the client lists again (2026-07-28 has no stream to say it on yet)."""
        method = self._methods.get(request_id)
        if method in _CHANGED and self._session.era == "legacy":
            self.out.send(json.dumps({"jsonrpc": "2.0", "method": _CHANGED[method]}) + "\n")


# ------------------------------------------------------------------ reading a request


class _Duplicate(ValueError):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise _Duplicate("a key given twice")
    return result


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _parse(line: str) -> dict[str, Any] | None:
    """A request or notification in the plainest form, or None for anything else.

    Stricter than the SDK on purpose: an escaped character, a key given twice,
    a batch, an id that is not an integer or a string: all left to the SDK.
    """
    if "\\u" in line:
        return None
    try:
        value = json.loads(line, object_pairs_hook=_pairs, parse_constant=_constant)
    except ValueError:
        return None
    if not isinstance(value, dict) or not set(value) <= {"jsonrpc", "id", "method", "params"}:
        return None
    if value.get("jsonrpc") != "2.0" or not isinstance(value.get("method"), str):
        return None
    if "id" in value and (isinstance(value["id"], bool) or not isinstance(value["id"], int | str)):
        return None
    if "params" in value and not isinstance(value["params"], dict):
        return None
    return value


def _strings(value: Any, required: tuple[str, ...], optional: tuple[str, ...]) -> bool:
    """Whether ``value`` is an object of strings: every ``required`` field, some ``optional``."""
    return (
        isinstance(value, dict)
        and set(required) <= set(value) <= {*required, *optional}
        and all(isinstance(v, str) for v in value.values())
    )


def _client(info: Any) -> tuple[str, str | None] | None:
    if not _strings(info, ("name", "version"), ("title", "description", "websiteUrl")):
        return None
    return info["name"], info["version"]


def _objects(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(v, dict) for v in value.values())


_CAPABILITY_CHECKS: Final[Mapping[str, Callable[[Any], bool]]] = {
    "roots": lambda v: (
        isinstance(v, dict)
        and set(v) <= {"listChanged"}
        and all(isinstance(x, bool) for x in v.values())
    ),
    "sampling": lambda v: _objects(v) and set(v) <= {"context", "tools"},
    "elicitation": lambda v: _objects(v) and set(v) <= {"form", "url"},
    "experimental": _objects,
}


def _capabilities(value: Any) -> bool:
    """Whether a client's capabilities are of the plainest kind (others are the SDK's to judge)."""
    return isinstance(value, dict) and all(
        key in _CAPABILITY_CHECKS and _CAPABILITY_CHECKS[key](v) for key, v in value.items()
    )


_INITIALIZE_KEYS: Final = frozenset({"protocolVersion", "capabilities", "clientInfo"})
_ENVELOPE_KEYS: Final = frozenset({PROTOCOL_KEY, CLIENT_INFO_KEY, CLIENT_CAPABILITIES_KEY})


def _initialize(params: Any) -> tuple[str, tuple[str, str | None]] | None:
    """``(negotiated protocol, client)`` of a plain ``initialize``, or None."""
    if not isinstance(params, dict) or set(params) != _INITIALIZE_KEYS:
        return None
    requested = params["protocolVersion"]
    client = _client(params["clientInfo"])
    if (
        not isinstance(requested, str)
        or client is None
        or not _capabilities(params["capabilities"])
    ):
        return None
    # As the SDK negotiates: the client's version if it speaks it, else its newest.
    return (requested if requested in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]), client


def _modern_meta(params: Any) -> tuple[str, str | None] | None:
    """The client of a plain 2026-07-28 envelope (``params._meta``), or None."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict) or set(meta) != _ENVELOPE_KEYS:
        return None
    if meta[PROTOCOL_KEY] not in MODERN_VERSIONS:
        return None
    if not _capabilities(meta[CLIENT_CAPABILITIES_KEY]):
        return None
    return _client(meta[CLIENT_INFO_KEY])


def _progress_only(params: dict[str, Any]) -> bool:
    """Whether ``params`` is only a progress token (Codex sends one with ``tools/list``),
    which changes nothing in a list's answer."""
    meta = params.get("_meta")
    if set(params) != {"_meta"} or not isinstance(meta, dict) or set(meta) != {"progressToken"}:
        return False
    token = meta["progressToken"]
    return isinstance(token, str) or (isinstance(token, int) and not isinstance(token, bool))


def _plain_numbers(value: Any) -> bool:
    """Whether every number in ``value`` reads the same from ``json`` as from the SDK's encoder.

    Python writes ``1e-07`` where the SDK (serde) writes ``1e-7``: a float in
    exponent form, or not finite, is left to the full server.
    """
    if isinstance(value, float):
        text = repr(value)
        return "e" not in text and "n" not in text
    if isinstance(value, dict):
        return all(_plain_numbers(v) for v in value.values())
    if isinstance(value, list):
        return all(_plain_numbers(v) for v in value)
    return True


def _response(request_id: int | str, result: dict[str, Any]) -> str | None:
    """The JSON-RPC response line the SDK writes for ``result`` (no newline), or None."""
    if not _plain_numbers(result):
        return None
    message = {"jsonrpc": "2.0", "id": request_id, "result": result}
    return json.dumps(message, ensure_ascii=False, separators=(",", ":"))
