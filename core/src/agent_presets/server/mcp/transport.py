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
from typing import TYPE_CHECKING, Any, Final

import anyio

from agent_presets.lib.model import PresetError
from agent_presets.server.config import ServeConfig, Transport, config_from
from agent_presets.server.console import allowed_hosts
from agent_presets.server.control import ControlListener
from agent_presets.server.mcp.auth import TokenAuth, TokenProfiles, check_exposure, is_loopback
from agent_presets.server.mcp.server import PresetServer, build_server
from agent_presets.server.policy import ToolPolicy

if TYPE_CHECKING:
    from agent_presets.lib.boot import Presets
    from agent_presets.server.console.app import ConsoleOptions
    from agent_presets.server.start.front import StartFront
    from agent_presets.server.tokens import TokenTable

log = logging.getLogger("agent_presets.server")

HTTP_PATH: Final = "/mcp"
STOP_POLL: Final = 0.1
"""Seconds between looks at ``ServeConfig.stop``."""

Task = Callable[[], Coroutine[Any, Any, None]]
"""Something else the server runs in its task group: the control listener, the console."""


def serve(presets: Presets, config: ServeConfig | None = None, /, **legacy: Any) -> None:
    """Serve ``presets`` as ``config`` says, until stdin closes (stdio) or SIGINT/SIGTERM (http).

    ``config`` is a ``ServeConfig`` (every field documented there); the old
    keywords (``transport=``, ``port=`` ...) still work, with a
    ``DeprecationWarning``. Raises ``PresetError`` when the HTTP port cannot
    be bound, or when a non-loopback host is asked for without tokens.
    """
    config = config_from(config, legacy, "serve")
    policy = config.policy
    if config.tokens is not None:
        policy = policy if policy is not None else ToolPolicy()
        policy.profiles = TokenProfiles(presets, config.tokens)
        config = config.replace(policy=policy)
    if config.transport == "http":
        check_exposure(
            config.host,
            auth="tokens" if config.tokens is not None else None,
            insecure=config.insecure,
        )
    server = build_server(presets, config)
    listener: ControlListener | None = None
    extra: list[Task] = []
    removers: list[Callable[[], None]] = []
    try:
        if config.front is not None and config.front.listener is not None:
            listener = config.front.listener  # bound before the SDK loaded
        elif config.control_socket is not None:
            listener = ControlListener(config.control_socket)
        if listener is not None:
            extra.append(partial(listener.serve, server.control))
            removers.append(listener.remove)
        if config.console is not None:
            extra.append(_console_task(server, config.console, removers))
        with _files_removed_on_sigterm(removers):
            _run(
                config.transport,
                server,
                config.host,
                config.port,
                config.banner,
                extra,
                config.tokens,
                config.max_sessions,
                config.replica,
                config.stop,
                config.front,
            )
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
    max_sessions: int | None = None,
    replica: str | None = None,
    stop: threading.Event | None = None,
    front: StartFront | None = None,
) -> None:
    if transport == "stdio":
        anyio.run(_serve_stdio, server, banner, extra, front)
    else:
        sock = _bind(host, port)
        anyio.run(_serve_http, server, sock, banner, extra, tokens, max_sessions, replica, stop)


def _console_task(
    server: PresetServer, options: ConsoleOptions, removers: list[Callable[[], None]]
) -> Task:
    """Bind the console's port now (so a taken port fails before serving) and run it later.

    Its host credential file joins ``removers``, the files SIGTERM removes.
    """
    from agent_presets.server.console.app import Console, serve_console

    try:
        sock = _bind(options.host, options.port)
    except PresetError as exc:
        raise PresetError(str(exc).replace("--port", "--console [HOST:]PORT")) from None
    console = Console(
        server.control,
        app=options.app,
        event_log=server.policy.event_log,
        host=options.host,
        credential=options.credential,
    )
    if console.host_credential is not None:
        removers.append(console.host_credential.withdraw)
    return partial(serve_console, console, sock, options)


@contextlib.contextmanager
def _files_removed_on_sigterm(removers: list[Callable[[], None]]) -> Iterator[None]:
    """Remove the control socket (and the host credential) on SIGTERM, then die of it as before.

    SIGTERM ends the process at once (uvicorn handles it while it serves and
    then raises it again), skipping every ``finally``; the socket would stay
    behind until the next server replaces it. Only the file is removed here:
    anything more in a signal handler could hang a server that must stop.
    """
    if not removers or threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum: int, frame: object) -> None:
        for remove in removers:
            remove()
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
    front: StartFront | None = None,
) -> None:
    from agent_presets.server.mcp.probe import serve_stdio_connection
    from agent_presets.server.mcp.stdio import stdio_transport

    def on_eof() -> None:  # on a worker thread: the loop ends the listen streams
        anyio.from_thread.run(server.end_listen_streams)

    async with (
        stdio_transport(on_eof=on_eof, front=front) as (read_stream, write_stream),
        anyio.create_task_group() as tg,
    ):
        for task in extra or []:
            tg.start_soon(task)
        if banner is not None:
            answered = "" if front is None else front.note()
            banner("serving MCP on stdio" + (f", {answered}" if answered else ""))
        await serve_stdio_connection(
            server, read_stream, write_stream, server.create_initialization_options()
        )
        tg.cancel_scope.cancel()


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not the default 0: accepted connections inherit the
    # protocol number, and asyncio turns Nagle's algorithm off (TCP_NODELAY)
    # only on a connection whose number says TCP. With Nagle on, a response
    # written as headers then body waits for the client's delayed ACK of the
    # headers, about 40 ms for each 2026-07-28 request on a kept-alive connection.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
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
    max_sessions: int | None = None,
    replica: str | None = None,
    stop: threading.Event | None = None,
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
    from agent_presets.server.mcp.eventstore import MemoryEventStore
    from agent_presets.server.mcp.http import EnvelopeCheck
    from agent_presets.server.mcp.sessionlimit import MAX_SESSIONS, SessionLimit
    from agent_presets.server.mcp.sessions import HttpSessions

    # A client that reconnects with Last-Event-ID gets what it missed.
    store = MemoryEventStore()
    limit = max_sessions if max_sessions is not None else MAX_SESSIONS
    # Invalid JSON-RPC bodies get their -32700/-32600 answer here, before the SDK.
    checked = EnvelopeCheck(
        server.streamable_http_app(
            streamable_http_path=HTTP_PATH,
            host=host,
            transport_security=security,
            event_store=store,
            max_sessions=limit,
        ),
        path=HTTP_PATH,
        # MCP's path goes straight to the session manager, past Starlette's router.
        endpoint=server.session_manager.handle_request,
    )
    # Outermost of ours: each session's events are its own, and the fan-out
    # learns which sessions have their GET stream open.
    server.fanout.tracks_streams = True
    app: Any = HttpSessions(checked, store=store, listener=server.fanout)
    # Around it: a flood of initializes ends idle sessions instead of locking clients out.
    app = SessionLimit(app, max_sessions=limit)
    if tokens is not None:
        # Outermost: nothing, not even a body check, answers a caller without a token.
        app = TokenAuth(app, tokens)
    if replica is not None:
        from agent_presets.server.mcp.replica import ReplicaSessionIds

        # At the wire's edge: a balancer routes a session by the name its id starts with.
        app = ReplicaSessionIds(app, replica)
        server.tasks.behind(replica)  # a task would live in one replica only (tasks.py)
    from agent_presets.server.httptimeout import TimedH11

    config = uvicorn.Config(
        app,
        log_level="warning",
        lifespan="on",
        access_log=False,
        timeout_graceful_shutdown=3,
        http=TimedH11,  # a request head that has not arrived in 10 s closes its connection
    )
    uv_server = uvicorn.Server(config)

    async def run_http() -> None:
        await uv_server.serve(sockets=[sock])
        tg.cancel_scope.cancel()  # the control listener and console stop with the server

    async def stop_when_asked(event: threading.Event) -> None:
        # Polled, not waited on in a worker thread: nothing is left blocked when the
        # server ends another way. uvicorn then shuts down as on SIGINT.
        while not event.is_set():
            await anyio.sleep(STOP_POLL)
        uv_server.should_exit = True

    async with anyio.create_task_group() as tg:
        tg.start_soon(run_http)
        if stop is not None:
            tg.start_soon(stop_when_asked, stop)
        for task in extra or []:
            tg.start_soon(task)
        # The banner means "ready": uvicorn has started and handles SIGINT/SIGTERM.
        while not uv_server.started:
            if uv_server.should_exit:
                return
            await anyio.sleep(0.01)
        if banner is not None:
            banner(f"serving MCP on http://{shown}:{port}{HTTP_PATH}")
