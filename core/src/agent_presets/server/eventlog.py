"""The event log's file: where lines go and where they are read back.

Split from ``agent_presets.server.events`` (which re-exports every name here) so a
server opens its log without building the event classes: they load with the
first line written. ``EventLog`` takes any object with ``to_json``; the
classes in ``events`` are the only ones written.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import stat
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii
from pathlib import Path
from typing import Any, Final, NamedTuple, Protocol

DEFAULT_MAX_BYTES = 10 * 1024 * 1024
DEFAULT_BACKUPS = 5

GENESIS: Final = "0" * 32
"""The ``prev`` of the first line a log ever has: no line came before it."""
TAIL_BYTES: Final = 64 * 1024
"""How far back from its end an opened log is read to find its last whole line."""


class Line(Protocol):
    """An event as the file sees it: ``events.Event`` and its kinds."""

    def to_json(self) -> dict[str, Any]: ...


_ENCODER = json.JSONEncoder(separators=(",", ":"))
json_text = _ENCODER.encode
"""The log's JSON for any value: compact, ASCII-only (``encode``)."""
json_string = encode_basestring_ascii
"""The log's JSON for a string, as ``json_text`` writes it (no call through the encoder)."""


def encode(event: Line, prev: str | None = None) -> bytes:
    """One line of the log, newline included; ``prev`` chains it to the line before.

    ASCII-only JSON: an agent-chosen name with a lone surrogate or a control
    character is escaped instead of breaking the line or the encoding. An
    event with ``to_text`` (every kind in ``events``) writes the text of its
    ``to_json`` itself, byte for byte, without the object in between: this
    runs for every call.
    """
    to_text = getattr(event, "to_text", None)
    if to_text is not None:
        text: str = to_text()
        if prev is not None:
            text = f'{text[:-1]},"prev":{json_string(prev)}}}'
        return (text + "\n").encode("ascii")
    line = event.to_json()
    if prev is not None:
        line["prev"] = prev
    return (json_text(line) + "\n").encode("ascii")


def line_hash(raw: bytes) -> str:
    """The chain's link to a line: the first 128 bits of the SHA-256 of its bytes.

    ``raw`` is the line as written, newline included, so any change to it
    (a field, a space, the line's end) changes the hash.
    """
    return hashlib.sha256(raw).hexdigest()[:32]


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

    Tamper evidence: every line carries ``prev``, the ``line_hash`` of the
    line written before it, across rotations too (the first line of a new
    file links to the last line of the one rotated away), so a removed,
    altered or reordered line breaks the chain where it was (``verify_log``).
    A state directory has one server, so one writer: the chain's last link and
    the file's size are kept in memory rather than read back per line (a
    second writer on one file still never interleaves or loses a line, but
    its lines do not chain with the first writer's).
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
        self._size = 0
        self._prev = GENESIS

    def write(self, event: Line) -> None:
        with self._lock:
            fd = self._open()
            line = encode(event, self._prev)
            if self._size and self._size + len(line) > self.max_bytes:
                # The size kept in memory says full; the file decides (another writer).
                self._size = os.fstat(fd).st_size
                if self._size + len(line) > self.max_bytes:
                    fd = self._rotate()
            os.write(fd, line)
            self._size += len(line)
            self._prev = line_hash(line)

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
                    size += 1
                if size:
                    self._prev = _last_link(fd, size, self._prev)
            except BaseException:
                os.close(fd)
                raise
            self._fd = fd
            self._size = size
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


def _last_link(fd: int, size: int, default: str) -> str:
    """The hash of the last whole line of an opened log, so new lines chain on to it.

    A torn last line (a crash mid-write) is not a line: the chain continues
    from the whole line before it, as a reader skips the torn one.
    """
    start = max(0, size - TAIL_BYTES)
    tail = os.pread(fd, size - start, start)
    lines = tail.split(b"\n")[:-1]  # the file ends with a newline here
    if start:
        lines = lines[1:]  # the first piece may be the end of a longer line
    for raw in reversed(lines):
        if _parse(raw + b"\n") is not None:
            return line_hash(raw + b"\n")
    return default


def _parse(raw: bytes) -> dict[str, Any] | None:
    """A line's object if it is an event line (an integer ``v``, a string ``kind``)."""
    try:
        line = json.loads(raw)
    except ValueError:
        return None
    if (
        isinstance(line, dict)
        and isinstance(line.get("v"), int)
        and isinstance(line.get("kind"), str)
    ):
        return line
    return None


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
                line = _parse(raw)
                if line is not None:
                    yield line


# --------------------------------------------------------------------- verifying


class ChainBreak(NamedTuple):
    """Where the hash chain breaks: the first line that does not link to the one before."""

    file: Path
    line: int
    """1-based line number in ``file``."""
    problem: str


class Verified(NamedTuple):
    """What ``verify_log`` found: the lines it checked, and the first break (None: intact)."""

    lines: int
    broken: ChainBreak | None
    unchained: int
    """Lines before the chain began (written before the log had one), not checked."""


def verify_log(path: str | Path) -> Verified:
    """Follow the hash chain through the log and its rotated files, oldest first.

    Each line's ``prev`` must be the hash of the line before it. The first
    line that does not link is reported, with what most likely happened:
    lines swapped (its ``prev`` names a line that comes later), lines removed
    further back (it names a line before the one before it), or a line before
    it removed or altered (it names no line of the log: a removed line and an
    altered one leave the same trace). The oldest file's first line links to a
    file rotated away long ago, so the chain is checked from there on. Lines
    that are not event lines (torn by a crash) are not links and are skipped,
    as the writer skips them; lines from before the log had a chain are
    counted apart.
    """
    seen: dict[str, tuple[Path, int]] = {}
    order: list[tuple[Path, int, str, str]] = []  # file, line, hash, prev
    unchained = 0
    last_unchained: str | None = None  # the hash of the last line before the chain
    for file in rotated_paths(path):
        try:
            handle = file.open("rb")
        except FileNotFoundError:
            continue
        first_in_file = True
        with handle:
            for number, raw in enumerate(handle, 1):
                line = _parse(raw)
                if line is None:
                    continue
                starts_file, first_in_file = first_in_file, False
                prev = line.get("prev")
                digest = line_hash(raw if raw.endswith(b"\n") else raw + b"\n")
                # The writer links its first line to the last line it finds in
                # the file, chained or not, or begins afresh in a new file. Any
                # other link after unchained lines means they were written (or
                # their links stripped) later: they would pass unchecked.
                if (
                    isinstance(prev, str)
                    and not order
                    and last_unchained is not None
                    and prev != last_unchained
                    and not (prev == GENESIS and starts_file)
                ):
                    return Verified(
                        0,
                        ChainBreak(
                            file,
                            number,
                            "it does not link to the unchained line(s) before it: lines "
                            "before it were added, altered or stripped of their links",
                        ),
                        unchained,
                    )
                if not isinstance(prev, str):
                    if order:
                        return Verified(
                            len(order),
                            ChainBreak(
                                file, number, "the line has no link (prev) to the one before"
                            ),
                            unchained,
                        )
                    unchained += 1
                    last_unchained = digest
                    continue
                order.append((file, number, digest, prev))
                seen.setdefault(digest, (file, number))
    for index in range(1, len(order)):
        file, number, _digest, prev = order[index]
        expected = order[index - 1][2]
        if prev == expected:
            continue
        target = seen.get(prev)
        position = {d: i for i, (_f, _n, d, _p) in enumerate(order)}.get(prev)
        if position is not None and position < index - 1:
            problem = f"{index - 1 - position} line(s) before it were removed"
        elif position is not None and position > index - 1:
            assert target is not None
            problem = f"lines were reordered: it follows {target[0].name}:{target[1]}"
        else:
            problem = "a line before it was removed or altered (or this line's link was)"
        return Verified(index + 1, ChainBreak(file, number, problem), unchained)
    return Verified(len(order), None, unchained)


_CHUNK = 1 << 20
"""Bytes a follower reads at a time: a long log is never held whole."""


class LogFollower:
    """The log and its rotated files, read as they grow: each ``read`` gives what is new.

    A reader that shows a live log (the console) would otherwise read every
    file again on every line written: with a 54 MiB log, that took a server
    from 482 calls/s to 77. A follower keeps each file it has read open, and
    where it stopped in it, so a rotation (which renames) is followed: a file
    read up to some offset as ``events.jsonl`` is read on from there as
    ``events.jsonl.1``. Holding the file open also keeps its inode from being
    given to a new file while the follower still knows it. A line is taken
    only once its newline is written. A file that left the log (rotated out,
    deleted) or shrank (truncated by hand) is reported ``gone`` by its key; a
    truncated file is then read again from its start, under a new key.
    ``close`` lets the files go.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._keys = itertools.count(1)
        self._files: dict[tuple[int, int], _Followed] = {}  # by (device, inode)

    def read(self) -> tuple[list[int], Iterator[tuple[int, dict[str, Any]]]]:
        """``(gone, events)``: keys of files that left the log, and the new events.

        ``events`` yields ``(key, event)``, oldest first, each event with the
        key of the file it is in; iterate it to the end before the next ``read``.
        """
        order: list[_Followed] = []
        seen: dict[tuple[int, int], _Followed] = {}
        gone: list[int] = []
        for file in rotated_paths(self.path):
            try:
                fd = os.open(file, os.O_RDONLY | os.O_CLOEXEC)
            except FileNotFoundError:  # rotated away since it was listed
                continue
            info = os.fstat(fd)
            ident = (info.st_dev, info.st_ino)
            followed = self._files.get(ident) or seen.get(ident)
            if followed is not None:
                os.close(fd)  # the one held since it was first read serves
            else:
                followed = _Followed(fd, next(self._keys))
            if ident in seen:  # listed twice across a rotation: read once
                continue
            if info.st_size < followed.offset:  # truncated: what was read is gone
                gone.append(followed.key)
                followed.key, followed.offset = next(self._keys), 0
            seen[ident] = followed
            order.append(followed)
        for ident, followed in self._files.items():
            if ident not in seen:
                gone.append(followed.key)
                os.close(followed.fd)
        self._files = seen
        return gone, self._events(order)

    def close(self) -> None:
        for followed in self._files.values():
            os.close(followed.fd)
        self._files = {}

    def _events(self, order: list[_Followed]) -> Iterator[tuple[int, dict[str, Any]]]:
        for file in order:
            rest = b""
            while chunk := os.pread(file.fd, _CHUNK, file.offset + len(rest)):
                lines = (rest + chunk).split(b"\n")
                rest = lines.pop()  # after the last newline: not a whole line yet
                for raw in lines:
                    file.offset += len(raw) + 1
                    event = _parse(raw)
                    if event is not None:
                        yield file.key, event


@dataclass(eq=False)
class _Followed:
    """A log file a follower holds open, the key it gave it, and how far it has read."""

    fd: int
    key: int
    offset: int = 0
