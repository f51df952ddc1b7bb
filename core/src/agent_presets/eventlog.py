"""The event log's file: where lines go and where they are read back.

Split from ``agent_presets.events`` (which re-exports every name here) so a
server opens its log without building the event classes: they load with the
first line written. ``EventLog`` takes any object with ``to_json``; the
classes in ``events`` are the only ones written.
"""

from __future__ import annotations

import json
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

DEFAULT_MAX_BYTES = 10 * 1024 * 1024
DEFAULT_BACKUPS = 5


class Line(Protocol):
    """An event as the file sees it: ``events.Event`` and its kinds."""

    def to_json(self) -> dict[str, Any]: ...


_ENCODER = json.JSONEncoder(separators=(",", ":"))


def encode(event: Line) -> bytes:
    """One line of the log, newline included.

    ASCII-only JSON: an agent-chosen name with a lone surrogate or a control
    character is escaped instead of breaking the line or the encoding.
    """
    return (_ENCODER.encode(event.to_json()) + "\n").encode("ascii")


# --------------------------------------------------------------------- the file


def rotated_paths(path: str | Path) -> list[Path]:
    """The log's files that exist, oldest first: ``events.jsonl.N`` ... ``.1``, ``events.jsonl``.

    Found by listing the folder, not from a configured count, so a reader
    reads every file whatever ``backups`` the writer used.
    """
    path = Path(path)
    numbered: list[tuple[int, Path]] = []
    try:
        entries = list(path.parent.iterdir())
    except FileNotFoundError:
        return []
    prefix = path.name + "."
    for entry in entries:
        suffix = entry.name.removeprefix(prefix)
        if entry.name.startswith(prefix) and suffix.isascii() and suffix.isdigit():
            numbered.append((int(suffix), entry))
    files = [p for _, p in sorted(numbered, reverse=True)]
    return [*files, path] if path.exists() else files


class EventLog:
    """An append-only JSON-lines file, rotated by size, readable by its owner only.

    Each line goes out in one ``os.write`` on an ``O_APPEND`` descriptor, so
    lines from threads (or a second process) never interleave, and a crash
    loses at most the line being written. The file opens on the first write:
    a server that records nothing creates nothing.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        backups: int = DEFAULT_BACKUPS,
    ) -> None:
        if max_bytes < 1024:
            raise ValueError(f"max_bytes must be at least 1024, got {max_bytes}")
        if backups < 0:
            raise ValueError(f"backups must be 0 or more, got {backups}")
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.backups = backups
        self._lock = threading.Lock()
        self._fd: int | None = None

    def write(self, event: Line) -> None:
        line = encode(event)
        with self._lock:
            fd = self._open()
            size = os.fstat(fd).st_size
            if size and size + len(line) > self.max_bytes:
                fd = self._rotate()
            os.write(fd, line)

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def _open(self) -> int:
        if self._fd is None:
            if not self.path.parent.exists():
                self.path.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
            flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
            fd = os.open(self.path, flags, 0o600)
            try:
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode):
                    raise OSError(f"{self.path} is not a regular file; not logging to it")
                # A file made by an older version (or by hand) may be 0644.
                os.fchmod(fd, 0o600)
                size = info.st_size
                # A line torn by a crash must not swallow the next one.
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    os.write(fd, b"\n")
            except BaseException:
                os.close(fd)
                raise
            self._fd = fd
        return self._fd

    def _rotate(self) -> int:
        assert self._fd is not None
        ours = os.fstat(self._fd).st_ino
        os.close(self._fd)
        self._fd = None
        try:
            current = os.stat(self.path, follow_symlinks=False).st_ino
        except FileNotFoundError:
            current = None
        # Another writer on this file may have rotated it already: then the
        # path names a fresh file, and rotating again would drop a backup.
        if current == ours:
            name = self.path.name
            for file in rotated_paths(self.path):
                n = 0 if file == self.path else int(file.name.removeprefix(name + "."))
                if n >= self.backups:
                    file.unlink(missing_ok=True)
                else:
                    file.rename(self.path.with_name(f"{name}.{n + 1}"))
        return self._open()


def read_events(path: str | Path) -> Iterator[dict[str, Any]]:
    """Every event in the log and its rotated files, oldest first.

    Lines that are not JSON objects with an integer ``v`` and a string
    ``kind`` are skipped: a line torn by a crash, or a line from before the
    schema had a version. Lines of another version or kind are yielded, so a
    reader decides what it understands (``check_event`` says).
    """
    for file in rotated_paths(path):
        try:
            handle = file.open("rb")
        except FileNotFoundError:  # rotated away since it was listed
            continue
        with handle:
            for raw in handle:
                try:
                    line = json.loads(raw)
                except ValueError:
                    continue
                if (
                    isinstance(line, dict)
                    and isinstance(line.get("v"), int)
                    and isinstance(line.get("kind"), str)
                ):
                    yield line
