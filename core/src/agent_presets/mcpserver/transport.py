"""Running the server over stdio or streamable HTTP until told to stop."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import threading
from collections.abc import Callable, Coroutine, Iterator
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

import anyio

from agent_presets.console import allowed_hosts
from agent_presets.control import ControlListener
from agent_presets.mcpserver.auth import TokenAuth, TokenProfiles, check_exposure, is_loopback
from agent_presets.mcpserver.confirm import DEFAULT_TIMEOUT, ConfirmMode, ConfirmVia
from agent_presets.mcpserver.server import TOOLS_PAGE_SIZE, PresetServer, build_server
from agent_presets.model import PresetError
from agent_presets.policy import ToolPolicy

if TYPE_CHECKING:
    from agent_presets.bootstrap import Presets
    from agent_presets.console.app import ConsoleOptions
    from agent_presets.tokens import TokenTable

log = logging.getLogger("agent_presets.server")

DEFAULT_PORT: Final = 8765
HTTP_PATH: Final = "/mcp"

Transport = Literal["stdio", "http"]
Task = Callable[[], Coroutine[Any, Any, None]]
"""Something else the server runs in its task group: the control listener, the console."""


def serve(
    presets: Presets,
    *,
    transport: Transport = "stdio",
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    banner: Callable[[str], None] | None = None,
    policy: ToolPolicy | None = None,
    control_socket: Path | None = None,
    page_size: int = TOOLS_PAGE_SIZE,
    tokens: TokenTable | None = None,
    insecure: bool = False,
    confirm: ConfirmMode = "none",
    confirm_timeout: float = DEFAULT_TIMEOUT,
    confirm_via: ConfirmVia = "operator",
    console: ConsoleOptions | None = None,
    state_dir: Path | None = None,
) -> None:
    """Serve ``presets`` until stdin closes (stdio) or SIGINT/SIGTERM (http).

    With ``tokens`` (HTTP only), every request needs a bearer token of that
    table, and each token's profile narrows what its sessions see and call.
    A non-loopback ``host`` without ``tokens`` is refused unless ``insecure``.

    ``banner`` receives one line once the server is ready (for http it names
    the URL, with the real port when ``port`` is 0); write it to stderr, never
    to stdout, which is the stdio transport's wire. ``page_size`` is the number
    of tools in one ``tools/list`` page; ``confirm``, ``confirm_timeout`` and
    ``confirm_via`` choose which calls wait for a person, and who may answer
    (``mcpserver/confirm.py``). Raises
    ``PresetError`` when the HTTP port cannot be bound. With ``control_socket``
    (bind it only while holding the state lock) the live-control channel
    listens there meanwhile; with ``console`` the browser console
    (``docs/console.md``) does too. ``state_dir`` keeps the key of multi-round
    request states (``rounds.py``).
    """
    if transport not in ("stdio", "http"):
        raise PresetError(f"unknown transport {transport!r}; use stdio or http")
    if tokens is not None:
        if transport != "http":
            raise PresetError("token authentication needs --transport http; stdio has no tokens")
        policy = policy if policy is not None else ToolPolicy()
        policy.profiles = TokenProfiles(presets, tokens)
    if transport == "http":
        check_exposure(host, auth="tokens" if tokens is not None else None, insecure=insecure)
    server = build_server(
        presets,
        policy=policy,
        page_size=page_size,
        confirm=confirm,
        confirm_timeout=confirm_timeout,
        confirm_via=confirm_via,
        state_dir=state_dir,
    )
    listener: ControlListener | None = None
    extra: list[Task] = []
    try:
        if control_socket is not None:
            listener = ControlListener(control_socket)
            extra.append(partial(listener.serve, server.control))
        if console is not None:
            extra.append(_console_task(server, console))
        with _socket_removed_on_sigterm(listener):
            _run(transport, server, host, port, banner, extra, tokens)
    except KeyboardInterrupt:
        pass
    finally:
        if listener is not None:
            listener.close()
        server.close()


def _run(
    transport: Transport,
    server: PresetServer,
    host: str,
    port: int,
    banner: Callable[[str], None] | None,
    extra: list[Task],
    tokens: TokenTable | None = None,
) -> None:
    if transport == "stdio":
        anyio.run(_serve_stdio, server, banner, extra)
    else:
        sock = _bind(host, port)
        anyio.run(_serve_http, server, sock, banner, extra, tokens)


def _console_task(server: PresetServer, options: ConsoleOptions) -> Task:
    """Bind the console's port now (so a taken port fails before serving) and run it later."""
    from agent_presets.console.app import Console, serve_console

    try:
        sock = _bind(options.host, options.port)
    except PresetError as exc:
        raise PresetError(str(exc).replace("--port", "--console [HOST:]PORT")) from None
    console = Console(
        server.control, app=options.app, event_log=server.policy.event_log, host=options.host
    )
    return partial(serve_console, console, sock, options)


@contextlib.contextmanager
def _socket_removed_on_sigterm(listener: ControlListener | None) -> Iterator[None]:
    """Remove the control socket on SIGTERM, then die of it as before.

    SIGTERM ends the process at once (uvicorn handles it while it serves and
    then raises it again), skipping every ``finally``; the socket would stay
    behind until the next server replaces it. Only the file is removed here:
    anything more in a signal handler could hang a server that must stop.
    """
    if listener is None or threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum: int, frame: object) -> None:
        listener.remove()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


async def _serve_stdio(
    server: PresetServer,
    banner: Callable[[str], None] | None,
    extra: list[Task] | None = None,
) -> None:
    from agent_presets.mcpserver.stdio import stdio_transport

    def on_eof() -> None:  # on the reading thread: the loop ends the listen streams
        anyio.from_thread.run(server.end_listen_streams)

    async with (
        stdio_transport(on_eof) as (read_stream, write_stream),
        anyio.create_task_group() as tg,
    ):
        for task in extra or []:
            tg.start_soon(task)
        if banner is not None:
            banner("serving MCP on stdio")
        await server.run(read_stream, write_stream, server.create_initialization_options())
        tg.cancel_scope.cancel()


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise PresetError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}; pass another --port "
            "(0 picks a free one)"
        ) from None
    return sock


async def _serve_http(
    server: PresetServer,
    sock: socket.socket,
    banner: Callable[[str], None] | None,
    extra: list[Task] | None = None,
    tokens: TokenTable | None = None,
) -> None:
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    # The names a request may give as its Host, decided where the console decides its own.
    names = allowed_hosts(host, token=tokens is not None)
    if names is None:
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    else:
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=[f"{n}:*" for n in names],
            allowed_origins=[f"http://{n}:*" for n in names],
        )
    if tokens is None and not is_loopback(host):
        log.warning(
            "serving MCP on a non-loopback address %s: anyone who can reach it may call tools",
            host,
        )
    from agent_presets.mcpserver.eventstore import MemoryEventStore
    from agent_presets.mcpserver.http import EnvelopeCheck
    from agent_presets.mcpserver.sessions import HttpSessions

    # A client that reconnects with Last-Event-ID gets what it missed.
    store = MemoryEventStore()
    # Invalid JSON-RPC bodies get their -32700/-32600 answer here, before the SDK.
    checked = EnvelopeCheck(
        server.streamable_http_app(
            streamable_http_path=HTTP_PATH,
            host=host,
            transport_security=security,
            event_store=store,
        ),
        path=HTTP_PATH,
    )
    # Outermost of ours: each session's events are its own, and the fan-out
    # learns which sessions have their GET stream open.
    server.fanout.tracks_streams = True
    app: Any = HttpSessions(checked, store=store, listener=server.fanout)
    if tokens is not None:
        # Outermost: nothing, not even a body check, answers a caller without a token.
        app = TokenAuth(app, tokens)
    config = uvicorn.Config(
        app, log_level="warning", lifespan="on", access_log=False, timeout_graceful_shutdown=3
    )
    uv_server = uvicorn.Server(config)

    async def run_http() -> None:
        await uv_server.serve(sockets=[sock])
        tg.cancel_scope.cancel()  # the control listener and console stop with the server

    async with anyio.create_task_group() as tg:
        tg.start_soon(run_http)
        for task in extra or []:
            tg.start_soon(task)
        # The banner means "ready": uvicorn has started and handles SIGINT/SIGTERM.
        while not uv_server.started:
            if uv_server.should_exit:
                return
            await anyio.sleep(0.01)
        if banner is not None:
            banner(f"serving MCP on http://{shown}:{port}{HTTP_PATH}")
