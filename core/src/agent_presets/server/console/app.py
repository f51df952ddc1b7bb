"""The console's web app: one page, a live stream of state, and three actions.

Everything a person may change goes through the server's ``Controller``
(``by="console"``), exactly as ``presets on`` and ``presets approve`` do, so
the console has no rule of its own. What it guards itself is the door:

- Every request must carry the console's token (a random secret printed
  once on stderr): in the query string (``?token=``) for the page and its
  stream, in the ``X-Console-Token`` header for a change. A request without
  it gets 401. A cross-site form cannot set a header (and a cross-site
  script that tries is stopped by CORS: the app answers no preflight), so no
  other page can change anything, even one that learned the URL.
- The app binds loopback unless the person passes ``--insecure``
  (``agent_presets.server.console.is_loopback``; the CLI decides).
- A request must name the console's own address as its Host (and Origin),
  as the MCP endpoint requires (``agent_presets.server.console.allowed_hosts``): a
  page that rebinds its own name to this address gets 421 (403 for a foreign
  Origin) and no data, token or not.
- One path takes another secret: ``POST /api/context``, where the host app
  reports its context, needs the host credential (``credential``) and
  nothing else; the console's token does not open it, nor does an agent's.

The page is live through Server-Sent Events: the manager's and the request
store's ``on_change`` listeners bump a version, the event log is watched by
size, and each stream sends a fresh snapshot when either moved. The log is
followed (``eventlog.LogFollower``): each snapshot reads only the lines
written since the last one, so a long log costs its length once. The views
of what the agent works on come from the host's runtimes, generically: a
runtime that has a ``console_view()`` method returning
``{"kind": "svg", "svg": "<svg ...>"}`` is drawn (``docs/console.md``).
"""

from __future__ import annotations

import collections
import contextlib
import json
import logging
import secrets
import socket
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Final

import anyio
import anyio.to_thread
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from agent_presets.lib.model import PresetError
from agent_presets.lib.principal import LOCAL
from agent_presets.lib.safetext import svg_safe
from agent_presets.server.console import allowed_hosts, foreign_request
from agent_presets.server.console.credential import HOST_PATH, HostCredential
from agent_presets.server.control import MAX_LINE, ConfirmationRequired, Controller
from agent_presets.server.control.protocol import answer, decode, error_response
from agent_presets.server.eventlog import LogFollower
from agent_presets.server.events import rotated_paths
from agent_presets.server.httptimeout import TimedH11
from agent_presets.server.requests import shown_request
from agent_presets.server.stats import Stats

log = logging.getLogger("agent_presets.server.console")

TOKEN_HEADER: Final = "X-Console-Token"
TICK_SECONDS: Final = 0.25
"""How often a stream checks whether anything moved."""
VIEW_SECONDS: Final = 1.0
"""How often a stream re-renders the runtimes' views when nothing else moved."""
TAIL: Final = 100
"""Events the page shows, newest last."""


def _static(name: str) -> str:
    return resources.files(__package__).joinpath("static", name).read_text("utf-8")


MAX_PRINCIPALS_SHOWN: Final = 200
"""Principals the page lists (and shows the state of); a larger deployment filters by CLI."""


class Console:
    """The state a console shows, and the Starlette app that shows it.

    ``app`` is the host (anything with ``runtime_names()`` and
    ``runtime(name)``); ``event_log`` is the server's log, or None;
    ``host`` the address the console listens on, which decides the Host
    names it answers; ``credential`` where the host credential is written
    (``credential.py``), or None for a console without the host endpoint.
    """

    def __init__(
        self,
        controller: Controller,
        *,
        app: Any = None,
        event_log: Path | None = None,
        token: str | None = None,
        host: str = "127.0.0.1",
        credential: Path | None = None,
    ) -> None:
        self.controller = controller
        self.host_credential = HostCredential(credential) if credential is not None else None
        self.hosts = allowed_hosts(host, token=True)
        self.host_app = app
        self.event_log = event_log
        self.token = token or secrets.token_urlsafe(24)
        self._version = 0
        self._version_lock = threading.Lock()
        self._hears_principals = False
        self._log_lock = threading.Lock()
        self._log_cache: tuple[tuple[tuple[int, int, int], ...], dict[str, Any]] | None = None
        # What the log says so far: in all, by file (to take back a file that
        # leaves the log), and its newest events with their file's key.
        self._follower = LogFollower(event_log) if event_log is not None else None
        self._stats = Stats()
        self._stats_by_file: dict[int, Stats] = {}
        self._tail: collections.deque[tuple[int, dict[str, Any]]] = collections.deque(maxlen=TAIL)
        controller.manager.add_on_change(self._bump)
        controller.requests.add_on_change(self._bump)

    def close(self) -> None:
        self.controller.manager.remove_on_change(self._bump)
        self.controller.requests.remove_on_change(self._bump)
        if self._hears_principals and self.controller.principals is not None:
            self.controller.principals.remove_on_change(self._bump)
        if self._follower is not None:
            with self._log_lock:
                self._follower.close()

    def _bump(self, *_args: Any) -> None:
        with self._version_lock:
            self._version += 1

    @property
    def version(self) -> int:
        return self._version

    # -- what the page shows ---------------------------------------------------

    def log_mark(self) -> tuple[tuple[int, int, int], ...]:
        """Each log file's inode, size and change time: moves when a line is written or
        the log rotates (a rotation may leave a file of the very size the last one had)."""
        if self.event_log is None:
            return ()
        marks = []
        for path in rotated_paths(self.event_log):
            try:
                info = path.stat()
            except FileNotFoundError:
                continue
            marks.append((info.st_ino, info.st_size, info.st_mtime_ns))
        return tuple(marks)

    def log_snapshot(self) -> dict[str, Any]:
        """The stats and the newest events; the log is read on only when it moved.

        Every open page asks after each change; they share one reading, and
        a reading takes only the lines written since the last one.
        """
        mark = self.log_mark()
        with self._log_lock:
            if self._log_cache is not None and self._log_cache[0] == mark:
                return self._log_cache[1]
            if self._follower is not None:
                self._follow(self._follower)
            snapshot = {
                "stats": self._stats.to_json(),
                "events": [event for _key, event in self._tail],
                "event_log": self.event_log is not None,
            }
            self._log_cache = (mark, snapshot)
            return snapshot

    def _follow(self, follower: LogFollower) -> None:
        """Count the log's new lines, and take back the files that left it."""
        gone, events = follower.read()
        for key, event in events:
            self._stats.add(event)
            part = self._stats_by_file.get(key)
            if part is None:
                part = self._stats_by_file[key] = Stats()
            part.add(event)
            self._tail.append((key, event))
        for key in gone:
            part = self._stats_by_file.pop(key, None)
            if part is not None:
                self._stats.remove(part)
        if gone:
            # Files leave oldest first: an event of one that left is in the tail only
            # if every newer event is too, so what stays is still the newest of the log.
            self._tail = collections.deque(
                ((key, event) for key, event in self._tail if key not in gone), maxlen=TAIL
            )

    def control_snapshot(self) -> dict[str, Any]:
        status = self.controller.status()
        principals = self.controller.principals
        names: list[str] = status.get("principals", [LOCAL])
        # Each principal with state of its own, as it is served (the rest follow the server).
        own: dict[str, Any] = {}
        if principals is not None:
            if not self._hears_principals:
                principals.add_on_change(self._bump)
                self._hears_principals = True
            for name in names[:MAX_PRINCIPALS_SHOWN]:
                if name != LOCAL and not principals.follows_server(name):
                    theirs = self.controller.status(name)
                    own[name] = {"context": theirs["context"], "presets": theirs["presets"]}
        return {
            "context": status["context"],
            "presets": status["presets"],
            "principals": names[:MAX_PRINCIPALS_SHOWN],
            "by_principal": own,
            # "shown" is what the page puts on screen: every agent word as safe text.
            "pending": [{**r, "shown": shown_request(r)} for r in self.controller.pending()],
        }

    def views(self) -> list[dict[str, Any]]:
        """Each runtime's ``console_view()``, in name order; a failing one says why."""
        app = self.host_app
        if app is None or not callable(getattr(app, "runtime_names", None)):
            return []
        views = []
        for name in app.runtime_names():
            try:
                runtime = app.runtime(name)
                view = getattr(runtime, "console_view", None)
                if not callable(view):
                    continue
                shown = dict(view())
                if isinstance(shown.get("svg"), str):
                    shown["svg"] = svg_safe(shown["svg"])  # a stray control breaks the image
            except Exception as exc:  # a plugin's bug must not take the console down
                log.warning("console view of runtime %r failed: %s", name, exc)
                shown = {"kind": "error", "error": f"{type(exc).__name__}"}
            # Whose view it is (which part of the app) the context above says.
            views.append({"runtime": name, **shown})
        return views

    # -- the app ---------------------------------------------------------------

    def asgi(self) -> ASGIApp:
        routes = Starlette(
            routes=[
                Route("/", self._page),
                Route("/api/state", self._state),
                Route("/api/stream", self._stream),
                Route("/api/override", self._override, methods=["POST"]),
                Route("/api/approve", self._approve, methods=["POST"]),
                Route("/api/deny", self._deny, methods=["POST"]),
            ]
        )

        async def gate(scope: Scope, receive: Receive, send: Send) -> None:
            # Before routing: without the token, even a wrong path or method is a 401,
            # so nothing about the app shows to someone who does not hold it. Before
            # the token: a foreign Host is a rebinding page, whatever it learned.
            if scope["type"] == "http":
                request = Request(scope)
                headers = request.headers
                status = foreign_request(headers.get("host"), headers.get("origin"), self.hosts)
                if status:
                    await self._misdirected(status)(scope, receive, send)
                    return
                if scope["path"] == HOST_PATH:
                    # The host's door has its own secret: the console's token is not it.
                    host_request = Request(scope, receive)  # it reads the body
                    await (await self._host_context(host_request))(scope, receive, send)
                    return
                if not self._allowed(request):
                    await self._refused()(scope, receive, send)
                    return
            await routes(scope, receive, send)

        return gate

    def _allowed(self, request: Request, *, header_only: bool = False) -> bool:
        given = request.headers.get(TOKEN_HEADER)
        if given is None and not header_only:
            given = request.query_params.get("token")
        # As bytes: compare_digest refuses str with non-ASCII characters.
        return given is not None and secrets.compare_digest(
            given.encode("utf-8", "surrogateescape"), self.token.encode()
        )

    @staticmethod
    def _refused() -> Response:
        return JSONResponse(
            {"error": "unauthorized: open the console URL that presets serve printed"},
            status_code=401,
        )

    @staticmethod
    def _misdirected(status: int) -> Response:
        return JSONResponse(
            {"error": "wrong host: open the console URL that presets serve printed"},
            status_code=status,
        )

    async def _page(self, request: Request) -> Response:
        page = (
            _static("index.html")
            .replace("/*STYLE*/", _static("console.css"))
            .replace("/*SCRIPT*/", _static("console.js"))
        )
        return HTMLResponse(
            page,
            headers={
                # Nothing from elsewhere: no CDN, no frames, no leaking the token.
                "Content-Security-Policy": "default-src 'self'; style-src 'unsafe-inline'; "
                "script-src 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'",
                "Referrer-Policy": "no-referrer",
                "Cache-Control": "no-store",
            },
        )

    async def snapshot(self) -> dict[str, Any]:
        def build() -> dict[str, Any]:
            return {
                **self.control_snapshot(),
                **self.log_snapshot(),
                "views": self.views(),
            }

        return await anyio.to_thread.run_sync(build)

    async def _state(self, request: Request) -> Response:
        return JSONResponse(await self.snapshot())

    async def _stream(self, request: Request) -> Response:
        return StreamingResponse(
            self._events(request),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    async def _events(self, request: Request) -> AsyncIterator[str]:
        sent: tuple[Any, ...] | None = None
        last_views: str | None = None
        since_views = 0.0
        while not await request.is_disconnected():
            mark = (self.version, self.log_mark())
            since_views += TICK_SECONDS
            if mark != sent:
                snapshot = await self.snapshot()
                sent = mark
                last_views = json.dumps(snapshot["views"])
                since_views = 0.0
                yield f"event: state\ndata: {json.dumps(snapshot)}\n\n"
            elif since_views >= VIEW_SECONDS:
                # A runtime may change without an event (no event log): look again.
                since_views = 0.0
                views = await anyio.to_thread.run_sync(self.views)
                text = json.dumps(views)
                if text != last_views:
                    last_views = text
                    yield f"event: views\ndata: {text}\n\n"
            await anyio.sleep(TICK_SECONDS)

    async def _act(self, request: Request, action: Callable[[dict[str, Any]], Any]) -> Response:
        # The gate let the query's token in; a change needs the header, which a
        # cross-site form cannot send.
        if not self._allowed(request, header_only=True):
            return self._refused()
        try:
            body = decode(await request.body())
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return JSONResponse({"error": "send a JSON object"}, status_code=400)
        try:
            result = await anyio.to_thread.run_sync(action, body)
        except ConfirmationRequired as exc:
            return JSONResponse(
                {"error": str(exc), "confirm": True, "preset": exc.preset, "risk": exc.risk},
                status_code=409,
            )
        except (PresetError, KeyError, TypeError) as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        return JSONResponse(result)

    async def _override(self, request: Request) -> Response:
        return await self._act(
            request,
            lambda b: self.controller.set_override(
                str(b["preset"]),
                str(b["state"]),
                by="console",
                confirmed=b.get("confirmed") is True,
                principal=None if b.get("principal") in (None, "") else str(b["principal"]),
            ),
        )

    async def _approve(self, request: Request) -> Response:
        return await self._act(
            request,
            # The page sends the digest of the call it showed: it approves that call or none.
            lambda b: self.controller.approve(
                str(b["id"]),
                by="console",
                confirmed=b.get("confirmed") is True,
                digest=None if b.get("digest") is None else str(b["digest"]),
            ),
        )

    async def _deny(self, request: Request) -> Response:
        return await self._act(request, lambda b: self.controller.deny(str(b["id"]), by="console"))

    # -- the host's door -------------------------------------------------------

    async def _host_context(self, request: Request) -> Response:
        """``POST /api/context`` ``{"set": {...}, "by"?}``: the control socket's ``context`` op.

        The answer is the socket's response object, so a host reads the same
        error either way: 200 when it applied, 400 when it was refused
        (nothing changed), 401 without the host credential.
        """
        credential = self.host_credential
        if credential is None or not credential.matches(request.headers.get("authorization")):
            return _host_answer(
                error_response(
                    "unauthorized",
                    "send the host credential as 'Authorization: Bearer TOKEN': the token in "
                    "STATE/host-credential.json, which the server writes once the console "
                    "listens (the console's token and agents' tokens are not it)",
                ),
                401,
            )
        if request.method != "POST":
            return _host_answer(
                error_response("bad-request", f"{HOST_PATH} takes POST only"),
                405,
                headers={"Allow": "POST"},
            )
        body = await _read_limited(request, MAX_LINE)
        if body is None:
            return _host_answer(
                error_response("bad-request", f"a context change is at most {MAX_LINE} bytes"),
                413,
            )
        try:
            message, why = decode(body), ""
        except ValueError as exc:
            message, why = None, f" ({exc})"
        if not isinstance(message, dict):
            return _host_answer(
                error_response(
                    "bad-request",
                    'send a JSON object: {"set": {"FIELD": VALUE, ...}, "by": "host", '
                    f'"principal": NAME}} ("by" and "principal" are optional){why}',
                ),
                400,
            )
        # The socket's line is taken as it is ("op": "context"), so a host sends one object.
        extra = sorted(
            set(message)
            - {"set", "by", "principal"}
            - ({"op"} if message.get("op") == "context" else set())
        )
        if extra:
            return _host_answer(
                error_response(
                    "bad-request",
                    f"unknown key {extra[0]!r}: a context change has 'set' and, optionally, "
                    "'by' and 'principal' (and 'op': 'context', as on the control socket)",
                ),
                400,
            )
        op = {
            "op": "context",
            "set": message.get("set"),
            "by": message.get("by", "host"),
            "principal": message.get("principal"),
        }
        response = await anyio.to_thread.run_sync(answer, self.controller, op)
        if response["ok"]:
            return _host_answer(response, 200)
        return _host_answer(response, 500 if response["error"]["code"] == "internal" else 400)


def _host_answer(
    response: dict[str, Any], status: int, headers: dict[str, str] | None = None
) -> Response:
    return JSONResponse(
        response, status_code=status, headers={"Cache-Control": "no-store", **(headers or {})}
    )


async def _read_limited(request: Request, limit: int) -> bytes | None:
    """The request's body, or None once it passes ``limit`` bytes (the rest is not read)."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            return None
    return body


class _QuietServer(uvicorn.Server):
    """A uvicorn server that leaves signals alone: the MCP transport owns them."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@dataclass(frozen=True)
class ConsoleOptions:
    """What ``presets serve --console`` asks for: where, for which host, and who hears the URL."""

    host: str = "127.0.0.1"
    port: int = 0
    app: Any = None
    announce: Callable[[str], None] | None = None
    """Receives ``console: http://HOST:PORT/?token=...`` once the app listens."""
    credential: Path | None = None
    """Where to write the host credential (``STATE/host-credential.json``); None: no
    ``POST /api/context`` for hosts."""


async def serve_console(console: Console, sock: socket.socket, options: ConsoleOptions) -> None:
    """Serve ``console`` on ``sock`` until cancelled; announce its URL once it listens."""
    config = uvicorn.Config(
        console.asgi(),
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=1,
        http=TimedH11,  # a request head that has not arrived in 10 s closes its connection
    )
    server = _QuietServer(config)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host

    async def announce() -> None:
        while not server.started:
            if server.should_exit:
                return
            await anyio.sleep(0.01)
        if console.host_credential is not None:
            # Only now: a host that finds the file finds a console that answers.
            console.host_credential.publish(f"http://{shown}:{port}{HOST_PATH}")
        if options.announce is not None:
            options.announce(f"console: http://{shown}:{port}/?token={console.token}")

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(announce)
            await server.serve(sockets=[sock])
    finally:
        if console.host_credential is not None:
            console.host_credential.withdraw()
        console.close()
