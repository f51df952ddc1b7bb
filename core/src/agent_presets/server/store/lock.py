"""One writer per state directory: an advisory lock that dies with its process.

Two servers on one state directory each keep their own copy of the state in
memory and overwrite each other's acknowledged writes. The lock makes the
second one stop at once instead. It is ``flock`` on ``state.lock`` in the
state directory: the kernel drops it when the holder's last descriptor
closes, so a server killed with SIGKILL leaves no stale lock behind. The file
holds the holder's PID only so the refusal can name it; the PID is never
trusted to decide anything.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from pathlib import Path
from types import TracebackType
from typing import Final

from agent_presets.lib.atomicfile import private_directory
from agent_presets.lib.model import PresetError

LOCK_FILE: Final = "state.lock"


def refuse_symlink(path: Path) -> None:
    """Raise ``PresetError`` if ``path`` is a symlink: a state file is written where it is.

    The server often runs as root, and a link planted in its state directory
    would have it truncate, chmod or write any file of the host.
    """
    if os.path.islink(path):
        raise PresetError(
            f"{path} is a symlink, and the server never writes its state through one "
            "(it could point at any file); remove the link, or give the server a state "
            "directory of its own with --state-dir DIR"
        )


class StateLockedError(PresetError):
    """Another process holds the state directory."""

    def __init__(self, state_dir: Path, pid: int | None) -> None:
        self.state_dir = state_dir
        self.pid = pid
        holder = f"server with PID {pid}" if pid is not None else "another process"
        super().__init__(
            f"{state_dir}: the state directory is in use by a running {holder}; stop it, "
            "or give this one a separate state with --state-dir DIR or PRESETS_STATE_DIR"
        )


class StateLock:
    """The exclusive lock on one state directory.

    ``acquire()`` never waits: a held lock raises ``StateLockedError`` naming
    the holder. The descriptor is close-on-exec, so a child process (a shell
    command, say) neither keeps the lock alive after the server dies nor can
    release it. Usable as a context manager.
    """

    def __init__(self, state_dir: str | Path) -> None:
        self.state_dir = Path(state_dir)
        self.path = self.state_dir / LOCK_FILE
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> StateLock:
        if self._fd is not None:
            return self
        private_directory(self.state_dir)
        refuse_symlink(self.path)
        flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW  # and no race either
        try:
            fd = os.open(self.path, flags, 0o600)
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
            refuse_symlink(self.path)  # made since the check: say so
            raise
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _read_pid(fd)
            os.close(fd)
            raise StateLockedError(self.state_dir, pid) from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        os.close(fd)  # closing the last descriptor drops the flock

    def __enter__(self) -> StateLock:
        return self.acquire()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def __del__(self) -> None:
        self.release()


def acquire_state_lock(state_dir: str | Path) -> StateLock:
    """Take the state directory's lock now; release it with ``release()`` or ``with``.

    For commands that write state without a server (creating a token, say):
    ``with acquire_state_lock(state_dir): ...``.
    """
    return StateLock(state_dir).acquire()


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
