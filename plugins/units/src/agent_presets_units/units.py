"""A folder of code units: Python files the agent writes, edits and loads.

Each unit is ``<folder>/<name>.py``. The sources live on disk (written
atomically), so they survive a restart; the load status lives in memory,
because after a restart nothing is loaded until it is reloaded. A unit is
imported from its own file and tracebacks name it, so units stay files rather
than rows of the state database; a change already writes only the one unit
it changed.

Loading never runs a unit's code in this process: each reload runs it in a
fresh Python process of its own, sandboxed where the sandbox works
(``loading``), and keeps only its report. Any exception the unit raises, a
SyntaxError included, becomes the unit's error status; the host keeps running.
So "loaded" means the unit's code ran to its end in that process; nothing of
it stays running, and the server holds none of its objects.
"""

from __future__ import annotations

import ast
import errno
import hashlib
import keyword
import os
import re
import stat as stat_mode
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from agent_presets import ToolCallError, write_atomic
from agent_presets_units.loading import UnitLoader
from agent_presets_units.loadproc import syntax_error as _syntax_error

UNIT_NAME_RE: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
MAX_SOURCE_BYTES: Final = 1024 * 1024

RACY_NS: Final = 2_000_000_000
"""A stat whose mtime or ctime is this close to when it was taken is not cached.

A file system stamps times from a coarse clock (to 2 s on FAT), so a change
made in the same tick as the stat that was cached leaves every field of the
stat as it was; only a stat older than that can vouch for the bytes read
after it (git's "racy" entries, for the same reason)."""

_StatKey = tuple[int, int, int, int, int]  # device, inode, size, mtime_ns, ctime_ns
_NOT_A_FILE: Final = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP})
_now_ns = time.time_ns  # the clock file times are stamped from (a test moves it on)


@dataclass(frozen=True)
class LoadStatus:
    state: str  # "never-loaded" | "loaded" | "error"
    sha256: str | None = None  # of the source that was loaded (or failed to load)
    error: dict[str, Any] | None = None
    loaded_at: str | None = None

    def to_dict(self, current_sha256: str | None) -> dict[str, Any]:
        data: dict[str, Any] = {"state": self.state}
        if self.state != "never-loaded":
            data["at"] = self.loaded_at
            # Stale: the source changed since this load; reload to run the new code.
            data["stale"] = self.sha256 != current_sha256
        if self.error is not None:
            data["error"] = self.error
        return data


NEVER_LOADED: Final = LoadStatus("never-loaded")


class UnitFolder:
    """The runtime behind the ``space_unit_*`` tools.

    ``root`` and ``unsafe`` are the load process's (``UnitLoader``): its only
    writable folder (None: an empty temporary one per load), and whether it may
    run unconfined where the sandbox does not work (``serve --unsafe-shell``).
    """

    def __init__(
        self,
        folder: str | Path,
        *,
        root: str | Path | None = None,
        unsafe: bool = False,
        max_source_bytes: int = MAX_SOURCE_BYTES,
        loader: UnitLoader | None = None,
    ) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        # A writer killed mid-write leaves its temp file; nothing reads those.
        for debris in self.folder.glob(".*.py.*.tmp"):
            debris.unlink(missing_ok=True)
        self.max_source_bytes = max_source_bytes
        self._lock = threading.RLock()
        self._status: dict[str, LoadStatus] = {}
        # What list() read, keyed by stat, so a call on an unchanged folder reads no file:
        # the folder's stat and the names it held; each unit's stat, size and sha256.
        self._listed: tuple[_StatKey, tuple[str, ...]] | None = None
        self._read: dict[str, tuple[_StatKey, int, str]] = {}
        self.loader = loader if loader is not None else UnitLoader(root, unsafe=unsafe)

    # -- reading -------------------------------------------------------------

    def names(self) -> list[str]:
        return sorted(
            p.stem for p in self.folder.glob("*.py") if p.is_file() and _valid_name(p.stem)
        )

    def list(self) -> dict[str, Any]:
        with self._lock:
            units = []
            for name in self._candidates():
                unit = self._size_and_sha(name)
                if unit is not None:
                    size, sha = unit
                    units.append(
                        {"name": name, "size": size, "status": self.status(name).to_dict(sha)}
                    )
            return {"units": units}

    def _candidates(self) -> tuple[str, ...]:
        """The valid names of ``*.py`` entries, files or not, sorted; rescanned on a change.

        Adding, removing or renaming an entry (``write_atomic``'s rename too)
        changes the folder's own stat; a change within the same tick of the
        clock is caught by ``RACY_NS``.
        """
        key, fresh = _stat_key(os.stat(self.folder))
        if self._listed is not None and self._listed[0] == key:
            return self._listed[1]
        names = tuple(sorted(p.stem for p in self.folder.glob("*.py") if _valid_name(p.stem)))
        self._read = {name: read for name, read in self._read.items() if name in names}
        self._listed = (key, names) if fresh else None
        return names

    def _size_and_sha(self, name: str) -> tuple[int, str] | None:
        """A unit's size and sha256, read again only when its stat changed; None: no file."""
        path = self.path(name)
        try:
            found = os.stat(path)
        except OSError as exc:
            if exc.errno in _NOT_A_FILE:  # what Path.is_file() reads as "not a file"
                return None
            raise
        if not stat_mode.S_ISREG(found.st_mode):
            return None
        key, fresh = _stat_key(found)
        cached = self._read.get(name)
        if cached is not None and cached[0] == key:
            return cached[1], cached[2]
        # Read after the stat: bytes changed since it carry a newer stat, seen next time.
        data = path.read_bytes()
        size, sha = len(data), _sha256(data)
        if fresh:
            self._read[name] = (key, size, sha)
        else:
            self._read.pop(name, None)
        return size, sha

    def inspect(self, name: str) -> dict[str, Any]:
        with self._lock:
            path = self._existing(name)
            data = path.read_bytes()
            stat = path.stat()
            sha = _sha256(data)
            result: dict[str, Any] = {
                "name": name,
                "size": len(data),
                "sha256": sha,
                "mtime": datetime.fromtimestamp(stat.st_mtime, UTC).isoformat(),
                "lines": data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1),
                "status": self.status(name).to_dict(sha),
            }
            try:
                source = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                result["source"] = None
                result["syntax_error"] = {
                    "message": f"not UTF-8 text (invalid byte at offset {exc.start})",
                    "line": None,
                }
                return result
            result["source"] = source
            try:
                tree = ast.parse(source, filename=f"{name}.py")
            except SyntaxError as exc:
                result["syntax_error"] = _syntax_error(exc)
            else:
                result.update(_outline(tree))
            return result

    def status(self, name: str) -> LoadStatus:
        return self._status.get(name, NEVER_LOADED)

    def path(self, name: str) -> Path:
        return self.folder / f"{name}.py"

    # -- writing -------------------------------------------------------------

    def create(self, name: str, source: str, *, check_syntax: bool = True) -> dict[str, Any]:
        with self._lock:
            _check_name(name)
            if self.path(name).exists():
                raise ToolCallError(
                    f"unit {name!r} already exists; edit it or patch it instead, or pick "
                    "another name"
                )
            self._write(name, source, check_syntax)
            return self._summary(name, created=True)

    def edit(self, name: str, source: str, *, check_syntax: bool = True) -> dict[str, Any]:
        with self._lock:
            self._existing(name)
            self._write(name, source, check_syntax)
            return self._summary(name)

    def apply_patch(self, name: str, patch: str, *, check_syntax: bool = True) -> dict[str, Any]:
        with self._lock:
            path = self._existing(name)
            if len(patch.encode("utf-8")) > self.max_source_bytes:
                raise ToolCallError(
                    f"the patch is over {self.max_source_bytes} bytes; split it or edit the "
                    "unit with its full source"
                )
            original = _decode(path.read_bytes(), name)
            # Imported at the first patch: a server that never patches does not pay for it.
            from agent_presets_units.patch import PatchError, apply_patch

            try:
                patched, hunks = apply_patch(original, patch)
            except PatchError as exc:
                raise ToolCallError(f"patch for unit {name!r} refused: {exc}") from None
            self._write(name, patched, check_syntax)
            summary = self._summary(name)
            summary["hunks"] = [
                {"hunk": h.number, "line": h.line, "offset": h.offset} for h in hunks
            ]
            return summary

    def reload(self, name: str) -> dict[str, Any]:
        """Run the unit fresh in a load process of its own; its failure becomes its status.

        The unit lock is not held while the process runs, so listing and
        inspecting answer meanwhile; the status records the source that ran.
        """
        with self._lock:
            path = self._existing(name)
            data = path.read_bytes()
        sha = _sha256(data)
        now = datetime.now(UTC).isoformat()
        report = self.loader.load(name, path, data)
        with self._lock:
            status = LoadStatus(report["state"], sha, report.get("error"), now)
            self._status[name] = status
            current = self.path(name)
            current_sha = _sha256(current.read_bytes()) if current.is_file() else None
        result: dict[str, Any] = {"name": name, "status": status.to_dict(current_sha)}
        if "defines" in report:
            result["defines"] = report["defines"]
        return result

    # -- helpers -------------------------------------------------------------

    def _existing(self, name: str) -> Path:
        _check_name(name)
        path = self.path(name)
        if not path.is_file():
            known = ", ".join(self.names()) or "none yet"
            raise ToolCallError(f"no unit named {name!r}; existing units: {known}. Create it first")
        return path

    def _write(self, name: str, source: str, check_syntax: bool) -> None:
        data = source.encode("utf-8")
        if len(data) > self.max_source_bytes:
            raise ToolCallError(
                f"the source is {len(data)} bytes, over the {self.max_source_bytes}-byte limit "
                "for a unit; split it into several units"
            )
        if check_syntax:
            try:
                ast.parse(source, filename=f"{name}.py")
            except SyntaxError as exc:
                err = _syntax_error(exc)
                raise ToolCallError(
                    f"unit {name!r} was not changed: SyntaxError at line {err['line']}: "
                    f"{err['message']}; fix it, or pass check_syntax: false to save it anyway"
                ) from None
        write_atomic(self.path(name), data)

    def _summary(self, name: str, *, created: bool = False) -> dict[str, Any]:
        data = self.path(name).read_bytes()
        sha = _sha256(data)
        summary: dict[str, Any] = {
            "name": name,
            "size": len(data),
            "sha256": sha,
            "status": self.status(name).to_dict(sha),
        }
        if created:
            summary["created"] = True
        return summary


def _outline(tree: ast.Module) -> dict[str, Any]:
    functions: list[dict[str, Any]] = []
    classes: list[dict[str, Any]] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            prefix = "async " if isinstance(node, ast.AsyncFunctionDef) else ""
            returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
            functions.append(
                {
                    "name": node.name,
                    "line": node.lineno,
                    "signature": f"{prefix}def {node.name}({ast.unparse(node.args)}){returns}",
                    "doc": _first_doc_line(node),
                }
            )
        elif isinstance(node, ast.ClassDef):
            classes.append(
                {
                    "name": node.name,
                    "line": node.lineno,
                    "bases": [ast.unparse(b) for b in node.bases],
                    "methods": [
                        n.name
                        for n in node.body
                        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
                    ],
                    "doc": _first_doc_line(node),
                }
            )
    return {"doc": _first_doc_line(tree), "functions": functions, "classes": classes}


def _first_doc_line(node: ast.AST) -> str | None:
    if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
        return None
    doc = ast.get_docstring(node)
    return doc.strip().splitlines()[0] if doc and doc.strip() else None


def _valid_name(name: str) -> bool:
    return bool(UNIT_NAME_RE.match(name)) and not keyword.iskeyword(name)


def _check_name(name: str) -> None:
    if not _valid_name(name):
        raise ToolCallError(
            f"unit name {name!r} must be a Python identifier (letters, digits, '_', not "
            "starting with a digit, at most 64 characters) and not a keyword, e.g. 'colour_tools'"
        )


def _decode(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolCallError(
            f"unit {name!r} is not UTF-8 text and cannot be patched; replace it with an edit"
        ) from None


def _stat_key(found: os.stat_result) -> tuple[_StatKey, bool]:
    """What identifies a file's bytes, and whether it is old enough to vouch for them."""
    key = (found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns)
    return key, _now_ns() - max(found.st_mtime_ns, found.st_ctime_ns) >= RACY_NS


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
