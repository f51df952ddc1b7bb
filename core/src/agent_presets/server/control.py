"""Live control of a running server: who may change which presets are on, and how.

A person steers a running ``presets serve`` from the shell (``presets on``,
``presets approve`` ...) and, later, from the browser console; the agent asks
through the MCP tool ``<prefix>presets_request``. All of them go through one
``Controller``, so one rule decides each thing once:

- An override changes only through ``PresetManager.set_override``: the sync and
  the server's fan-out then tell every MCP client (``tools/list_changed``).
  Each change writes a ``change`` event naming who made it.
- Turning a *risky* preset on (``Preset.dangerous``: filesystem-write,
  destructive, shell) needs ``confirmed``: a caller that has not asked its
  person gets ``ConfirmationRequired`` and asks, then sends it again.
- The agent may narrow at once (``off``) but never widen: ``on`` files a
  request in the ``RequestStore`` that only a person approves.

The channel is a Unix socket in the state directory (``control.sock``, mode
0600, bound only by the server that holds the state lock), speaking JSON
lines: one request object per line, one response object per line
(``docs/control.md``). ``ControlListener`` is the server side, run on the MCP
server's event loop; ``control_request`` is the client the CLI uses. Nothing
here imports ``mcp``.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import os
import re
import shutil
import socket
import struct
import tempfile
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, cast

from agent_presets.adapters import check_arguments
from agent_presets.manager import PresetManager
from agent_presets.model import (
    OVERRIDE_STATES,
    PresetError,
    PresetValidationError,
    ToolCallError,
    ToolDef,
    UnknownPresetError,
)
from agent_presets.server.requests import (
    DEFAULT_TTL,
    MAX_REASON,
    DigestMismatchError,
    RequestStore,
    UnknownRequestError,
    iso_utc,
)
from agent_presets.vocabulary import ContextValueError

if TYPE_CHECKING:
    from agent_presets.server.events import Event, State

log = logging.getLogger("agent_presets.server.control")

SOCKET_NAME: Final = "control.sock"
PROTOCOL_VERSION: Final = 1
MAX_LINE: Final = 64 * 1024
"""Longest request line (bytes) the server reads; a longer one is refused."""
IDLE_SECONDS: Final = 30.0
"""A connection that sends nothing for this long is closed."""
SWEEP_SECONDS: Final = 1.0
"""How often the server drops expired requests, so their ``decision`` lines are timely."""
TTL_ENV: Final = "PRESETS_REQUEST_TTL"
"""Seconds a request waits before it expires (default 600); tests shorten it."""
REQUEST_TOOL: Final = "presets_request"
REQUEST_OUTPUT: Final[Mapping[str, Any]] = MappingProxyType(
    {
        "type": "object",
        "properties": {
            "status": {
                "enum": ["applied", "unchanged", "pending"],
                "description": "applied (off, at once), unchanged, or pending (waits for the user)",
            },
            "message": {"type": "string", "description": "What happened and what to do next."},
            "preset": {"type": "string"},
            "state": {"const": "off"},
            "request": {"type": "string", "description": "The pending request's id."},
            "expires": {"type": "string", "description": "When it expires, ISO 8601 UTC."},
        },
        "required": ["status", "message"],
    }
)
"""What ``presets_request`` returns, served as its ``outputSchema``."""
"""The agent's tool, after the host's namespace prefix (``space_presets_request``)."""

BY_RE: Final = re.compile(r"^[a-z][a-z0-9-]{0,31}$")
OPS: Final = ("status", "set", "requests", "approve", "deny", "context")


class ConfirmationRequired(PresetError):
    """Turning on a risky preset needs the person's confirmation first."""

    def __init__(self, preset: str, risk: str) -> None:
        self.preset = preset
        self.risk = risk
        super().__init__(
            f"preset {preset!r} has risk {risk!r}: turning it on needs confirmation "
            "(answer the prompt on a terminal, or pass --yes)"
        )


class NoServerError(PresetError):
    """No server answers on the state directory's control socket."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        super().__init__(
            f"no server runs for state dir {state_dir}; overrides apply to a running server "
            f"only. Start one with: presets serve --state-dir {state_dir}"
        )


class ControlError(PresetError):
    """The server refused a control request; ``code`` says why, ``detail`` has the rest."""

    def __init__(self, code: str, message: str, detail: Mapping[str, Any] | None = None) -> None:
        self.code = code
        self.detail = dict(detail or {})
        super().__init__(message)


def request_ttl_from_env() -> float:
    """``PRESETS_REQUEST_TTL`` seconds when set to a positive number, else 10 minutes."""
    text = os.environ.get(TTL_ENV, "").strip()
    if not text:
        return DEFAULT_TTL
    try:
        ttl = float(text)
    except ValueError:
        ttl = 0.0
    if not ttl > 0 or ttl == float("inf"):
        raise PresetValidationError(f"{TTL_ENV}={text!r}: give a positive number of seconds")
    return ttl


def socket_path(state_dir: str | Path) -> Path:
    return Path(state_dir) / SOCKET_NAME


# --------------------------------------------------------------------- the controller


class Controller:
    """The changes a person or the agent may make on a running server. Thread-safe.

    ``emit`` receives every event (a server passes ``ToolPolicy.emit``, so the
    changes, requests and decisions share the server's event log). The console
    reads ``status()`` and ``requests.pending()`` and decides through
    ``set_override``, ``approve`` and ``deny``, exactly as the socket does.
    """

    def __init__(
        self,
        manager: PresetManager,
        *,
        emit: Callable[[Event], None] | None = None,
        requests: RequestStore | None = None,
    ) -> None:
        self.manager = manager
        self._emit = emit
        # One change at a time, so each change line names the state it replaced.
        self._lock = threading.RLock()
        self.requests = (
            requests
            if requests is not None
            else RequestStore(ttl=request_ttl_from_env(), emit=emit)
        )

    # -- reading -------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """``{"server": pid, "context": {...}, "presets": [...]}`` (``docs/control.md``)."""
        manager = self.manager
        overrides = manager.get_overrides()
        active = {a.name: a for a in manager.get_active_presets()}
        presets = []
        for preset in manager.registry.list():
            state = overrides.get(preset.name, "auto")
            on = active.get(preset.name)
            reason: str
            if on is not None:
                reason = on.reason
            elif state == "off":
                reason = "override"
            elif preset.default_state == "off":
                reason = "off-by-default"
            else:
                reason = "no-matching-context"
            presets.append(
                {
                    "name": preset.name,
                    "group": preset.group,
                    "state": state,
                    "active": on is not None,
                    "reason": reason,
                    "risk": preset.risk,
                }
            )
        return {
            "server": os.getpid(),
            "context": manager.get_context(),
            "presets": presets,
            "requests": len(self.requests),
        }

    def pending(self) -> list[dict[str, Any]]:
        return [r.to_json() for r in self.requests.pending()]

    # -- a person's changes --------------------------------------------------

    def set_override(
        self, name: str, state: str, *, by: str, confirmed: bool = False
    ) -> dict[str, Any]:
        """Set ``name`` to ``state`` (on/off/auto) for this session; log who did it.

        Raises ``ConfirmationRequired`` for a risky preset turned on without
        ``confirmed``, before anything changes.
        """
        _check_by(by)
        if state not in OVERRIDE_STATES:
            raise PresetValidationError(f"state {state!r} is not one of: on, off, auto")
        preset = self.manager.registry.get(name)
        if preset is None:
            raise UnknownPresetError(self.manager.registry.unknown_message(name))
        with self._lock:
            previous = self.manager.get_overrides().get(name, "auto")
            if state == "on" and previous != "on" and preset.dangerous and not confirmed:
                raise ConfirmationRequired(name, preset.risk)
            self.manager.set_override(name, state)
            changed = previous != state
            if changed:
                # The event classes load with the first line written, not with the server.
                from agent_presets.server.events import Change

                self._write(
                    Change(
                        preset=name,
                        state=cast("State", state),
                        previous=cast("State", previous),
                        by=by,
                    )
                )
        return {
            "preset": name,
            "state": state,
            "previous": previous,
            "changed": changed,
            "active": name in self.manager.resolve().active_names,
        }

    def set_context(self, changes: Mapping[str, Any], *, by: str) -> dict[str, Any]:
        """Change fields of the host's context, as the host app would; log who did it.

        Every key must be a declared field and every value one it allows
        (``Vocabulary.check_change``: the error names the field, the declared
        values and the closest one), else nothing changes. A host whose context
        lives in its own state (the headless host's shell) takes the change
        through its ``update_context(changes)``, so it is saved and reported
        as its own; otherwise the manager's context is changed directly. It is
        a ``context`` event, not a tool call: no agent made it.
        """
        _check_by(by)
        if not changes:
            raise PresetValidationError("give at least one field to set, as KEY=VALUE")
        manager = self.manager
        with self._lock:
            manager.vocabulary.check_change(changes)
            previous = manager.get_context()
            update = getattr(manager.app, "update_context", None)
            if callable(update):
                update(dict(changes))
            else:
                manager.set_context({**previous, **changes})
            now = manager.get_context()
            changed = sorted(k for k in {*previous, *now} if previous.get(k) != now.get(k))
            if changed:
                from agent_presets.server.events import ContextChange

                self._write(ContextChange(fields={k: now.get(k) for k in changed}, by=by))
        return {
            "context": now,
            "previous": previous,
            "changed": changed,
            "active": list(manager.resolve().active_names),
        }

    def approve(
        self, request_id: str, *, by: str, confirmed: bool = False, digest: str | None = None
    ) -> dict[str, Any]:
        """Approve a pending request: an override is set now; a waiting call may run.

        With ``digest`` (what the person was shown), a call is approved only
        if it is that call (``DigestMismatchError`` otherwise, nothing changes).
        """
        _check_by(by)
        with self._lock:
            request = self.requests.get(request_id)
            if digest is not None:
                self.requests.check_digest(request, digest)
            result: dict[str, Any] = {"id": request.id, "kind": request.kind}
            if request.kind == "call":
                result.update(tool=request.tool, digest=request.digest)
            if request.kind == "override":
                assert request.preset is not None and request.state is not None
                preset = self.manager.registry.get(request.preset)
                if preset is not None and preset.dangerous and not confirmed:
                    raise ConfirmationRequired(request.preset, preset.risk)
                # Set first: a preset that cannot be turned on leaves the request pending.
                result["change"] = self.set_override(
                    request.preset, request.state, by="approval", confirmed=True
                )
            self.requests.decide(request.id, "approved", by=by)
        return result

    def deny(self, request_id: str, *, by: str) -> dict[str, Any]:
        _check_by(by)
        with self._lock:
            request = self.requests.decide(request_id, "denied", by=by)
        return {"id": request.id, "kind": request.kind}

    # -- the agent's requests ------------------------------------------------

    def ask(self, preset: str, state: str, reason: str) -> dict[str, Any]:
        """The agent asks for ``preset`` ``on`` or ``off``; the answer is for the model.

        ``off`` only narrows what the agent can do, so it applies at once.
        ``on`` files a request that waits for a person; it never applies here.
        """
        registry = self.manager.registry
        found = registry.get(preset)
        if found is None:
            raise ToolCallError(registry.unknown_message(preset))
        with self._lock:
            return self._ask(preset, state, reason)

    def _ask(self, preset: str, state: str, reason: str) -> dict[str, Any]:
        overrides = self.manager.get_overrides()
        active = preset in self.manager.resolve().active_names
        if state == "off":
            if overrides.get(preset) == "off":
                return {"status": "unchanged", "message": f"Preset {preset!r} is off already."}
            for waiting in self.requests.pending():
                if waiting.kind == "override" and waiting.preset == preset:
                    self.requests.decide(waiting.id, "withdrawn", by="agent")
            self.set_override(preset, "off", by="agent")
            return {
                "status": "applied",
                "preset": preset,
                "state": "off",
                "message": f"Preset {preset!r} is off now; its tools are gone from the list.",
            }
        if state != "on":
            raise ToolCallError(f"state {state!r} is not one of: on, off")
        if active:
            return {
                "status": "unchanged",
                "message": f"Preset {preset!r} is active already; its tools are in the list.",
            }
        # RequestLimitError (a ToolCallError) tells the agent to stop asking.
        request, merged = self.requests.file("override", preset=preset, state="on", reason=reason)
        again = " (you asked before; the reason is updated)" if merged else ""
        return {
            "status": "pending",
            "request": request.id,
            "preset": preset,
            "expires": iso_utc(request.expires),
            "message": (
                f"Request {request.id}{again} waits for the user, who decides it "
                f"(`presets approve {request.id}` or the console); it expires at "
                f"{iso_utc(request.expires)}. Do not ask again: carry on without the preset. "
                "If the user approves, the server announces the new tools (tools/list_changed)."
            ),
        }

    def request_tool(self, prefix: str) -> ToolDef:
        """The agent's ``<prefix>presets_request`` tool, a host tool (no owner, no preset)."""
        name = f"{prefix}{REQUEST_TOOL}"
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {
                "preset": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 200,
                    "description": "The preset's name, e.g. one an unavailable tool's error named.",
                },
                "state": {
                    "type": "string",
                    "enum": ["on", "off"],
                    "description": "on: ask the user to turn it on. off: turn it off now.",
                },
                "reason": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": MAX_REASON,
                    "description": "One sentence for the user: what you need it for.",
                },
            },
            "required": ["preset", "state", "reason"],
            "additionalProperties": False,
        }
        validators: list[Any] = []  # built on the first call: serve starts without jsonschema

        def run(arguments: Mapping[str, Any] | None = None, *, context: Any = None) -> Any:
            args = dict(arguments or {})
            if not validators:
                import jsonschema

                validators.append(jsonschema.Draft202012Validator(schema))
            check_arguments(name, validators[0], args)
            return self.ask(args["preset"], args["state"], args["reason"])

        return ToolDef(
            name=name,
            title="Ask the user to turn a preset on or off",
            description=(
                "Ask the user to turn a preset (a set of tools) on, or turn one off. "
                "state 'off' applies at once. state 'on' never applies by itself: it files a "
                "request that waits for the user's approval and answers at once with its id; "
                "the server announces the new tools (tools/list_changed) if the user approves. "
                "Use it when a tool you need is off (its error names the preset)."
            ),
            input_schema=MappingProxyType(schema),
            output_schema=REQUEST_OUTPUT,
            run=run,
            annotations=MappingProxyType(
                {
                    "readOnlyHint": False,
                    "destructiveHint": False,
                    "idempotentHint": True,
                    "openWorldHint": False,
                }
            ),
        )

    def _write(self, event: Event) -> None:
        if self._emit is not None:
            self._emit(event)


def _check_by(by: str) -> None:
    if not isinstance(by, str) or not BY_RE.match(by):
        raise PresetValidationError(
            f"'by' must be a short lowercase name such as cli or console, not {by!r}"
        )


# --------------------------------------------------------------------- the protocol


def respond(controller: Controller, line: bytes) -> dict[str, Any]:
    """The response object for one request line (never raises for bad input)."""
    try:
        message = json.loads(line)
    except ValueError:
        return _error("bad-request", "a request is one JSON object per line")
    if not isinstance(message, dict) or not isinstance(message.get("op"), str):
        return _error("bad-request", f"a request is an object with an 'op': one of {OPS}")
    try:
        result = _dispatch(controller, message)
    except ConfirmationRequired as exc:
        return _error("confirm", str(exc), preset=exc.preset, risk=exc.risk)
    except UnknownPresetError as exc:
        return _error("unknown-preset", str(exc))
    except UnknownRequestError as exc:
        return _error("unknown-request", str(exc))
    except DigestMismatchError as exc:
        return _error("digest-mismatch", str(exc))
    except ContextValueError as exc:
        values = None if exc.values is None else list(exc.values)
        return _error("invalid-context", str(exc), field=exc.field, values=values)
    except PresetError as exc:
        return _error("invalid", str(exc))
    except Exception:
        log.exception("control request %r failed", message.get("op"))
        return _error("internal", "the server failed on this request; its log has the details")
    return {"v": PROTOCOL_VERSION, "ok": True, "result": result}


def _dispatch(controller: Controller, message: dict[str, Any]) -> Any:
    op = message["op"]
    by = message.get("by", "cli")
    confirmed = message.get("confirmed") is True
    if op == "status":
        return controller.status()
    if op == "requests":
        return controller.pending()
    if op == "set":
        return controller.set_override(
            _text(message, "preset"), _text(message, "state"), by=by, confirmed=confirmed
        )
    if op == "approve":
        digest = message.get("digest")
        return controller.approve(
            _text(message, "id"),
            by=by,
            confirmed=confirmed,
            digest=None if digest is None else _text(message, "digest"),
        )
    if op == "deny":
        return controller.deny(_text(message, "id"), by=by)
    if op == "context":
        changes = message.get("set")
        if not isinstance(changes, dict) or not all(isinstance(k, str) for k in changes):
            raise PresetValidationError("'set' must be an object of field names to values")
        return controller.set_context(changes, by=by)
    raise PresetValidationError(f"unknown op {op!r}; use one of: {', '.join(OPS)}")


def _text(message: Mapping[str, Any], key: str) -> str:
    value = message.get(key)
    if not isinstance(value, str):
        raise PresetValidationError(f"'{key}' must be a string")
    return value


def _error(code: str, message: str, **detail: Any) -> dict[str, Any]:
    return {
        "v": PROTOCOL_VERSION,
        "ok": False,
        "error": {"code": code, "message": message, **detail},
    }


# --------------------------------------------------------------------- the server side


class ControlListener:
    """The listening socket ``STATE/control.sock``; bound now, served on the event loop.

    Bind only while holding the state lock: then any socket file already there
    is a dead server's, and is replaced. The socket is made in a fresh 0700
    folder, set to 0600 and renamed into place, so it is never reachable with
    wider permissions, not even for an instant. ``close()`` removes it if it
    is still ours.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.sock = _bind(self.path)
        self._inode = os.stat(self.path).st_ino

    async def serve(self, controller: Controller) -> None:
        """Answer requests until cancelled; drop expired requests meanwhile."""
        server = await asyncio.start_unix_server(
            lambda r, w: _connection(controller, r, w), sock=self.sock, limit=MAX_LINE
        )
        async with server:
            await server.start_serving()
            while True:
                await asyncio.sleep(SWEEP_SECONDS)
                try:
                    controller.requests.expire()
                except Exception:  # a failing event log must not stop the channel
                    log.exception("expiring requests failed")

    def close(self) -> None:
        self.sock.close()
        self.remove()

    def remove(self) -> None:
        """Remove the socket file if it is still ours (safe in a signal handler)."""
        with contextlib.suppress(OSError):
            if os.stat(self.path).st_ino == self._inode:
                self.path.unlink()


def _bind(path: Path) -> socket.socket:
    path.parent.mkdir(parents=True, exist_ok=True)
    for debris in path.parent.glob(".control-*"):  # a killed server's half-made socket
        shutil.rmtree(debris, ignore_errors=True)
    folder = tempfile.mkdtemp(prefix=".control-", dir=path.parent)  # mode 0700
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        made = Path(folder) / "s"
        with _short(made) as address:
            sock.bind(address)
        os.chmod(made, 0o600)
        os.replace(made, path)  # replaces a dead server's socket file
        sock.listen(16)
        sock.setblocking(False)
    except OSError as exc:
        sock.close()
        raise PresetError(
            f"{path}: cannot create the control socket: {exc.strerror or exc}"
        ) from None
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return sock


@contextlib.contextmanager
def _short(path: Path) -> Any:
    """An address for ``path`` that fits a Unix socket's 108 bytes.

    A long path is reached through its folder's descriptor (``/proc/self/fd/N``).
    """
    if len(os.fsencode(path)) < 100 or not os.path.isdir("/proc/self/fd"):
        yield str(path)
        return
    fd = os.open(path.parent, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        yield f"/proc/self/fd/{fd}/{path.name}"
    finally:
        os.close(fd)


async def _connection(
    controller: Controller, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    try:
        if not _same_user(writer):
            writer.write(_encode(_error("forbidden", "only the server's own user may connect")))
            return
        while True:
            try:
                line = await asyncio.wait_for(reader.readline(), IDLE_SECONDS)
            except ValueError:  # longer than MAX_LINE
                writer.write(
                    _encode(_error("bad-request", f"a request line is at most {MAX_LINE} bytes"))
                )
                return
            if not line:
                return
            writer.write(_encode(respond(controller, line)))
            await writer.drain()
    except (ConnectionError, TimeoutError):
        pass
    finally:
        with contextlib.suppress(ConnectionError):
            writer.close()


def _same_user(writer: asyncio.StreamWriter) -> bool:
    """Whether the peer runs as this process's user (the 0600 mode says so already)."""
    sock = writer.get_extra_info("socket")
    peercred = getattr(socket, "SO_PEERCRED", None)
    if sock is None or peercred is None:
        return True
    try:
        _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, peercred, 12))
    except OSError:
        return True
    return bool(uid == os.getuid())


def _encode(response: Mapping[str, Any]) -> bytes:
    return (json.dumps(response, ensure_ascii=True, default=str) + "\n").encode("ascii")


# --------------------------------------------------------------------- the client side


def control_request(
    state_dir: str | Path, message: Mapping[str, Any], *, timeout: float = 30.0
) -> Any:
    """Send one request to the server of ``state_dir``; return its ``result``.

    Raises ``NoServerError`` when no server answers there (no socket, or a
    dead server's), ``ControlError`` when the server refuses the request.
    """
    state_dir = Path(state_dir)
    path = socket_path(state_dir)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        try:
            with _short(path) as address:
                sock.connect(address)
        except FileNotFoundError:
            raise NoServerError(state_dir) from None
        except OSError as exc:
            if exc.errno in (errno.ECONNREFUSED, errno.ENOENT, errno.ENOTSOCK):
                raise NoServerError(state_dir) from None
            raise
        sock.sendall(_encode(message))
        data = b""
        while not data.endswith(b"\n"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    finally:
        sock.close()
    try:
        response = json.loads(data)
    except ValueError:
        raise PresetError(f"{path}: the server sent no valid answer") from None
    if not isinstance(response, dict):
        raise PresetError(f"{path}: the server sent no valid answer")
    if not response.get("ok"):
        error = response.get("error") or {}
        detail = {k: v for k, v in error.items() if k not in ("code", "message")}
        raise ControlError(
            str(error.get("code", "error")), str(error.get("message", "refused")), detail
        )
    return response.get("result")
