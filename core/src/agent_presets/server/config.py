"""``ServeConfig``: every option of a served ``presets serve``, in one frozen object.

``presets serve`` builds one from its flags; a host app builds one in code and
hands it to ``serve(presets, config)`` or ``build_server(presets, config)``.
Nothing here imports ``mcp``: the types the fields name are imported for type
checking only, so a config costs nothing to build before the server starts.
"""

from __future__ import annotations

import dataclasses
import re
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from agent_presets.lib.model import PresetError
from agent_presets.server.delivery import DELIVERY_MODES, DeliveryMode

if TYPE_CHECKING:
    from agent_presets.server.console.app import ConsoleOptions
    from agent_presets.server.policy import ToolPolicy
    from agent_presets.server.stage import Stage
    from agent_presets.server.start.front import StartFront
    from agent_presets.server.store import Store
    from agent_presets.server.telemetry import Telemetry
    from agent_presets.server.tokens import TokenTable

Transport = Literal["stdio", "http"]
ConfirmMode = Literal["none", "risky", "destructive"]
ConfirmVia = Literal["operator", "client"]
DiscoveryMode = Literal["auto", "list", "search"]
DISCOVERY_MODES: Final = ("auto", "list", "search")

DEFAULT_PORT: Final = 8765
REPLICA_NAME_RE: Final = re.compile(r"[A-Za-z0-9_-]{1,32}\Z")
"""A replica's name: what starts its session ids, and a balancer's pattern matches unescaped."""
TOOLS_PAGE_SIZE: Final = 100
"""Tools per ``tools/list`` page; a longer list carries a ``nextCursor``."""
CONFIRM_TIMEOUT: Final = 50.0
"""Seconds a call waits for a person: below the 60 s request timeout of the
TypeScript MCP SDK (opencode), so the model reads our refusal, not a timeout."""


@dataclass(frozen=True, kw_only=True)
class ServeConfig:
    """How to serve: the transport, who may call, what waits for a person, what else runs.

    - ``transport``, ``host``, ``port``: stdio, or streamable HTTP on
      ``host:port`` (``port=0`` picks a free one). A non-loopback ``host``
      without ``tokens`` is refused unless ``insecure``.
    - ``banner``: receives one line once the server is ready (for HTTP its
      URL); write it to stderr, never to stdout, the stdio transport's wire.
    - ``policy``: allow-lists, budgets and the event log; ``tokens`` (HTTP
      only): every request needs a bearer token of that table, and each
      token's profile narrows what its sessions see and call.
    - ``confirm``, ``confirm_timeout``, ``confirm_via``: which calls wait for
      a person, how long, and who may answer (``operator``: only ``presets
      approve`` and the console; ``client``: the client's elicitation too).
    - ``control_socket``: where the live-control channel listens (bind it
      only while holding the state lock); ``console``: the browser console.
    - ``stages``: the host's own call-pipeline stages, run after the budgets
      (``docs/embedding.md``); ``telemetry``: tracer and meter providers.
    - ``page_size``: tools in one ``tools/list`` page; ``max_sessions``: legacy-era
      HTTP sessions open at once; ``replica``: this replica's name, which starts
      every legacy session id so a balancer can route a session back to it
      (docs/replicas.md).
    - ``stop`` (HTTP): a ``threading.Event``; setting it, from any thread, ends
      ``serve`` as SIGINT would, so an app that runs ``serve`` in a thread of its
      own can stop it. A stdio server ends when its input closes.
    - ``tool_budget``: the most tokens a caller's ``tools/list`` may take (the rest
      is reached through ``presets_search`` and ``presets_call``); ``discovery``:
      which clients get those two tools (``docs/budget.md``, "Serving under a budget").
    - ``delivery``: how callers are served their tools: ``live`` (the list follows
      the context), ``stable`` (it follows only changes made outside the caller's own
      calls; its results say what changed) or ``auto`` (by era and client:
      ``agent_presets.server.delivery``, docs/clients.md).
    """

    transport: Transport = "stdio"
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    banner: Callable[[str], None] | None = None
    policy: ToolPolicy | None = None
    tokens: TokenTable | None = None
    insecure: bool = False
    confirm: ConfirmMode = "none"
    confirm_timeout: float = CONFIRM_TIMEOUT
    confirm_via: ConfirmVia = "operator"
    control_socket: Path | None = None
    console: ConsoleOptions | None = None
    stages: Sequence[Stage] = field(default=())
    telemetry: Telemetry | None = None
    page_size: int = TOOLS_PAGE_SIZE
    max_sessions: int | None = None
    """HTTP sessions open at once (None: the server's default); at the limit an idle
    session makes way for a new one."""
    replica: str | None = None
    state_dir: Path | None = None
    """Where the server keeps what outlives it: the key that seals 2026-07-28 request
    state, so a restarted server continues a round trip it started."""
    store: Store | None = None
    """What the server keeps, shared between replicas (``agent_presets.server.store``);
    None: the embedded store, in this process and its state directory."""
    tool_budget: int | None = None
    discovery: DiscoveryMode = "auto"
    delivery: DeliveryMode = "auto"
    stop: threading.Event | None = None
    """Set it to end an HTTP ``serve``, from any thread."""
    front: StartFront | None = None
    """stdio only: the start front that has read the wire since start-up
    (``agent_presets.server.start``); the transport takes the wire over from it."""

    def __post_init__(self) -> None:
        if self.transport not in ("stdio", "http"):
            raise PresetError(f"unknown transport {self.transport!r}; use stdio or http")
        if self.stop is not None and self.transport != "http":
            raise PresetError(
                "stop= ends an HTTP server; a stdio server ends when its input closes "
                "(close the pipe to its stdin)"
            )
        if self.confirm not in ("none", "risky", "destructive"):
            raise PresetError(
                f"confirm mode {self.confirm!r} is not one of: none, risky, destructive"
            )
        if self.confirm_via not in ("operator", "client"):
            raise PresetError(f"--confirm-via {self.confirm_via!r} is not one of: operator, client")
        if not self.confirm_timeout > 0:
            raise PresetError(
                f"the confirmation timeout must be positive, got {self.confirm_timeout}"
            )
        if self.page_size < 1:
            raise PresetError(f"page_size must be at least 1, not {self.page_size}")
        if self.max_sessions is not None and self.max_sessions < 1:
            raise PresetError(f"max_sessions must be at least 1, not {self.max_sessions}")
        if self.replica is not None:
            if self.transport != "http":
                raise PresetError("a replica name needs --transport http; stdio has no sessions")
            check_replica_name(self.replica)
        if self.discovery not in DISCOVERY_MODES:
            raise PresetError(
                f"discovery {self.discovery!r} is not one of: {', '.join(DISCOVERY_MODES)}"
            )
        if self.delivery not in DELIVERY_MODES:
            raise PresetError(
                f"delivery {self.delivery!r} is not one of: {', '.join(DELIVERY_MODES)}"
            )
        if self.delivery == "stable" and self.discovery == "list":
            raise PresetError(
                "delivery 'stable' reaches the tools a context change activates through "
                "presets_call, and discovery 'list' serves no presets_call; use discovery "
                "'auto' or 'search', or delivery 'live'"
            )
        if self.tool_budget is not None:
            if self.tool_budget < 1:
                raise PresetError(f"tool_budget must be at least 1 token, not {self.tool_budget}")
            if self.discovery == "list":
                raise PresetError(
                    "a tool budget needs presets_search and presets_call to reach the tools "
                    "it leaves out of the list, and discovery 'list' serves neither; use "
                    "discovery 'auto' or 'search', or no tool budget"
                )
        if self.front is not None and self.transport != "stdio":
            raise PresetError("a start front reads stdio; it cannot serve --transport http")
        if self.tokens is not None and self.transport != "http":
            raise PresetError("token authentication needs --transport http; stdio has no tokens")
        object.__setattr__(self, "stages", tuple(self.stages))

    def replace(self, **changes: Any) -> ServeConfig:
        """A copy with ``changes``, checked like a new one."""
        return dataclasses.replace(self, **changes)


def check_replica_name(name: str) -> str:
    """``name`` if it can start a session id; else ``PresetError`` saying what can."""
    if not REPLICA_NAME_RE.match(name):
        raise PresetError(
            f"replica name {name!r} cannot start a session id: use 1 to 32 letters, digits, "
            "'_' or '-', like r1"
        )
    return name


FIELDS: Final = frozenset(f.name for f in dataclasses.fields(ServeConfig))


def config_from(
    config: ServeConfig | None, legacy: Mapping[str, Any], where: str, *, stacklevel: int = 3
) -> ServeConfig:
    """``config``, or one built from the old keyword arguments with a ``DeprecationWarning``.

    The keywords ``serve`` and ``build_server`` took before ``ServeConfig``
    still work for one release; mixing them with a config is an error, since
    one of the two would be silently ignored.
    """
    if not legacy:
        return config if config is not None else ServeConfig()
    unknown = sorted(set(legacy) - FIELDS)
    if unknown:
        raise TypeError(f"{where}() got unexpected keyword arguments: {', '.join(unknown)}")
    if config is not None:
        raise TypeError(
            f"{where}() takes a ServeConfig or the old keywords ({', '.join(sorted(legacy))}), "
            "not both: put them in the config"
        )
    warnings.warn(
        f"{where}(presets, {', '.join(f'{k}=...' for k in sorted(legacy))}) is deprecated; "
        f"pass {where}(presets, ServeConfig(...)) instead (agent_presets.server.ServeConfig)",
        DeprecationWarning,
        stacklevel=stacklevel,
    )
    return ServeConfig(**legacy)
