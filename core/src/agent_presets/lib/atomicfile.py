"""Crash-safe files: write a temp file, fsync it, rename it over the old one.

The host's state files and the token file both write this way (the token
file with ``mode=0o600``, set before a byte is written).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any


def write_atomic(path: Path, data: bytes, *, mode: int | None = None, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` so that a reader sees the old or the new bytes, never half.

    ``mode``: the new file's permissions, set on the temp file before writing.
    ``durable=False`` skips the two fsyncs, for a file whose loss in a crash
    costs nothing but its rewriting (a cache): the rename is still atomic.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if durable:
        _fsync_dir(path.parent)


def private_directory(path: Path) -> None:
    """Make ``path`` (and its missing parents) a folder only its owner can enter.

    A new folder is made mode 0700; an existing one loses its group and other
    bits, so a state directory an earlier version made 0755 is tightened on the
    next start. A folder of another owner is left alone: only its owner may
    change its mode, and the files made in it are private on their own.
    """
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    private_file(path)


def private_file(path: Path) -> None:
    """Drop the group and other bits of ``path`` if it exists (0644 becomes 0600).

    A symlink is never followed: its target's mode is not this folder's business.
    """
    try:
        mode = os.stat(path, follow_symlinks=False).st_mode
        if mode & 0o077 and not stat.S_ISLNK(mode):
            os.chmod(path, mode & 0o7700)
    except (FileNotFoundError, PermissionError):
        pass


def write_json_atomic(path: Path, value: Any, *, mode: int | None = None) -> None:
    data = json.dumps(value, indent=1, sort_keys=True).encode("utf-8") + b"\n"
    write_atomic(path, data, mode=mode)


def read_json(path: Path) -> Any:
    """The file's JSON, or None when it does not exist."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    return json.loads(text)


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
