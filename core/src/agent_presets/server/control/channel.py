"""The control socket: ``STATE/control.sock``, its listener and its client.

The channel is a Unix socket in the state directory (mode 0600, bound only by
the server that holds the state lock) carrying ``protocol``'s JSON lines.
``ControlListener`` is the server side, run on the MCP server's event loop;
``control_request`` is the client the CLI uses. Nothing here imports ``mcp``.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import os
import shutil
import socket
import struct
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from agent_presets.lib.model import (
    PresetError,
)
from agent_presets.server.store.base import StoreUnavailableError

if TYPE_CHECKING:
    pass


from agent_presets.server.control.controller import Controller
from agent_presets.server.control.protocol import (
    MAX_LINE,
    ControlError,
    encode,
    error_response,
    respond,
)

log = logging.getLogger("agent_presets.server.control")

SOCKET_NAME: Final = "control.sock"


IDLE_SECONDS: Final = 30.0
"""A connection that sends nothing for this long is closed."""


SWEEP_SECONDS: Final = 1.0
"""How often the server drops expired requests, so their ``decision`` lines are timely."""


class NoServerError(PresetError):
    """No server answers on the state directory's control socket."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        super().__init__(
            f"no server runs for state dir {state_dir}; overrides apply to a running server "
            f"only. Start one with: presets serve --state-dir {state_dir}"
        )


def socket_path(state_dir: str | Path) -> Path:
    return Path(state_dir) / SOCKET_NAME


# --------------------------------------------------------------------- the controller


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
                    # Off the loop: a shared store may take up to its timeout to answer.
                    await asyncio.to_thread(controller.requests.expire)
                except StoreUnavailableError as exc:  # Redis away: the next sweep tries again
                    log.warning("expiring requests waits for the store: %s", exc)
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
            writer.write(
                encode(error_response("forbidden", "only the server's own user may connect"))
            )
            return
        while True:
            try:
                line = await asyncio.wait_for(reader.readline(), IDLE_SECONDS)
            except ValueError:  # longer than MAX_LINE
                writer.write(
                    encode(
                        error_response("bad-request", f"a request line is at most {MAX_LINE} bytes")
                    )
                )
                return
            if not line:
                return
            writer.write(encode(respond(controller, line)))
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
        sock.sendall(encode(message))
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
