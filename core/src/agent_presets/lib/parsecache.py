"""What YAML read of an unchanged preset file, kept so that a restart need not read it again.

A server's start-up parses every installed plugin's preset files, and
PyYAML (its import and its parse) is about 20 ms of that. The files rarely
change between two starts, so ``presets serve`` keeps, in its state
directory, what reading each one gave: its data and the position of each
value (``Composed``). An entry is found by the SHA-256 of the file's text
and of what reads it (this format, the core's version, and the size and
modification time of the YAML reader's module, the preset schema and
PyYAML itself), so an edited file, or a core or PyYAML that reads
differently, is simply read again.

Only a file that read without a single problem is kept: a problem is
reported with the file's text at hand, as before. What an entry gives is
checked again as any read is (the schema, every later rule): an entry
someone altered cannot hold what a file could not. Nor can it hold what the
file does not say: each entry is signed (HMAC-SHA256, over its name and
its bytes) with a key derived from the state directory's (``statekey.py``),
so an edited entry, or one moved in from another file's name, is ignored and
the file is read again (a cache without a key signs with one of its own
process, so entries of another process are not used). An entry that cannot
be read or does not have the expected shape is ignored and rewritten. The folder
holds at most ``MAX_ENTRIES`` entries; the oldest go first. A folder (or its
parent) that is a symlink, or an entry that is one, is not used: the files
are read as if there were no cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass
from functools import cache
from importlib.util import find_spec
from pathlib import Path
from typing import Any, Final

from agent_presets._version import __version__
from agent_presets.lib.atomicfile import private_directory, write_atomic
from agent_presets.lib.schema import SCHEMA_NAME, PathKey
from agent_presets.lib.statekey import derived_key

__all__ = ["FORMAT", "MAX_ENTRIES", "Composed", "ParseCache"]

FORMAT: Final = 2
"""Bumped whenever what an entry holds, or how a file is composed, changes (2: signed)."""

PURPOSE: Final = "parse cache"
"""What the state directory's key is derived for here (``statekey.derived_key``)."""

MAX_ENTRIES: Final = 256

Position = tuple[int, int]


@dataclass(frozen=True)
class Composed:
    """A file's data as YAML reads it, with where each value and key starts.

    ``values`` and ``keys`` map a path (``("presets", 0, "name")``) to its
    ``(line, column)``; ``duplicates`` are keys written twice in one mapping,
    at the second one's position.
    """

    data: Any
    values: dict[PathKey, Position]
    keys: dict[PathKey, Position]
    duplicates: list[tuple[PathKey, int, int]]


@cache
def _reader() -> bytes:
    """What reads a file, as bytes for the key: a change to any of it is another key."""
    here = Path(__file__).parent
    parts = [f"{FORMAT}\0{__version__}"]
    spec = find_spec("yaml")  # found, not imported
    paths = [here / "yamlfile.py", here.parent / "schemas" / SCHEMA_NAME]
    if spec is not None and spec.origin:
        paths.append(Path(spec.origin))
    for path in paths:
        try:
            info = path.stat()
        except OSError:
            parts.append(f"{path.name}:-")
        else:
            parts.append(f"{path.name}:{info.st_size}:{info.st_mtime_ns}")
    return "\0".join(parts).encode()


class ParseCache:
    """The kept reads of preset files, in ``folder`` (made private, 0700, when first written).

    ``key`` signs and checks the entries: the state directory's key
    (``statekey.state_key``); None, a key of this process only.
    """

    def __init__(self, folder: str | os.PathLike[str], key: bytes | None = None) -> None:
        self.folder = Path(folder)
        self._key = derived_key(secrets.token_bytes(32) if key is None else key, PURPOSE)
        self._usable: bool | None = None

    def usable(self) -> bool:
        """Whether the folder may be used: neither it nor its parent is a symlink.

        As for the state files, a link planted in a state directory someone
        else made must not lead reads or writes elsewhere; the files are then
        read as if there were no cache.
        """
        if self._usable is None:
            self._usable = not (self.folder.is_symlink() or self.folder.parent.is_symlink())
        return self._usable

    def _path(self, text: str) -> Path:
        digest = hashlib.sha256(_reader() + b"\0" + text.encode("utf-8", "surrogatepass"))
        return self.folder / f"{digest.hexdigest()}.json"

    def _mac(self, path: Path, payload: bytes) -> bytes:
        """The entry's signature: bound to its name, so it cannot stand for another file."""
        signed = path.name.encode("ascii") + b"\0" + payload
        return hmac.new(self._key, signed, hashlib.sha256).hexdigest().encode("ascii")

    def get(self, text: str) -> Composed | None:
        """What reading ``text`` gave before, or None (never kept, or unreadable)."""
        if not self.usable():
            return None
        path = self._path(text)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            with os.fdopen(fd, "rb") as handle:
                mac, _, payload = handle.read().partition(b"\n")
            if not hmac.compare_digest(mac, self._mac(path, payload)):
                return None  # altered, moved, or signed with another key: read the file
            entry = json.loads(payload)
            if entry.get("format") != FORMAT:
                return None
            return Composed(
                data=entry["data"],
                values={tuple(path): (line, column) for path, line, column in entry["values"]},
                keys={tuple(path): (line, column) for path, line, column in entry["keys"]},
                duplicates=[],
            )
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            return None

    def put(self, text: str, composed: Composed) -> None:
        """Keep what reading ``text`` gave (a file without problems); a failure is not fatal."""
        if not self.usable():
            return
        entry = {
            "format": FORMAT,
            "data": composed.data,
            "values": [[list(p), line, col] for p, (line, col) in composed.values.items()],
            "keys": [[list(p), line, col] for p, (line, col) in composed.keys.items()],
        }
        with contextlib.suppress(OSError, ValueError, TypeError):
            missing = [p for p in (self.folder, *self.folder.parents) if not p.exists()]
            for folder in reversed(missing):  # each level made private, not only the last
                private_directory(folder)
            # Not fsynced: an entry a crash loses or tears is read as absent and written again.
            path = self._path(text)
            payload = json.dumps(entry).encode("utf-8")
            data = self._mac(path, payload) + b"\n" + payload
            write_atomic(path, data, mode=0o600, durable=False)
            self._prune()

    def _prune(self) -> None:
        entries = [e for e in os.scandir(self.folder) if e.name.endswith(".json")]
        if len(entries) <= MAX_ENTRIES:
            return
        entries.sort(key=lambda e: e.stat().st_mtime_ns)
        for old in entries[: len(entries) - MAX_ENTRIES]:
            with contextlib.suppress(OSError):
                os.unlink(old.path)
