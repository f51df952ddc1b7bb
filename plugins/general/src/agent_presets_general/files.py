"""A file root the agent may read and write, and nothing outside it.

Every path is taken relative to the root and resolved (following symlinks,
including symlinked parent folders) before use; whatever resolves outside the
root is refused. That one check covers ``..``, absolute paths and symlinks
pointing out, because they all end up as a resolved path that is not under
the root.
"""

from __future__ import annotations

import stat
from pathlib import Path, PurePosixPath
from typing import Any, Final

from agent_presets import ToolCallError
from agent_presets.host.store import write_atomic

MiB: Final = 1024 * 1024
MAX_READ_BYTES: Final = MiB
MAX_WRITE_BYTES: Final = MiB
MAX_LIST_ENTRIES: Final = 1000


class FileRoot:
    """The sandboxed folder behind ``space_app_list_files``/``read_file``/``write_file``."""

    def __init__(
        self,
        root: str | Path,
        *,
        max_read_bytes: int = MAX_READ_BYTES,
        max_write_bytes: int = MAX_WRITE_BYTES,
        max_list_entries: int = MAX_LIST_ENTRIES,
    ) -> None:
        self.root = Path(root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self.max_read_bytes = max_read_bytes
        self.max_write_bytes = max_write_bytes
        self.max_list_entries = max_list_entries

    # -- paths -------------------------------------------------------------

    def resolve(self, path: str) -> Path:
        """The real location of ``path`` under the root, or a ToolCallError.

        The result has every symlink resolved, so the caller acts on exactly
        the file that was checked.
        """
        if "\x00" in path:
            raise ToolCallError(f"path {path!r} contains a NUL character; use a plain path")
        posix = PurePosixPath(path)
        if posix.is_absolute() or Path(path).is_absolute():
            raise ToolCallError(
                f"path {path!r} is absolute; give a path relative to the file root, "
                "like 'notes/todo.md'"
            )
        try:
            resolved = (self.root / path).resolve()
        except (OSError, RuntimeError) as exc:  # symlink loops
            raise ToolCallError(
                f"path {path!r} cannot be resolved ({exc}); use another path"
            ) from None
        if not resolved.is_relative_to(self.root):
            raise ToolCallError(
                f"path {path!r} leads outside the file root (through '..' or a symlink); "
                "only files under the root can be used"
            )
        return resolved

    def relative(self, resolved: Path) -> str:
        rel = resolved.relative_to(self.root).as_posix()
        return "." if rel in ("", ".") else rel

    # -- operations ----------------------------------------------------------

    def list(self, path: str = ".") -> dict[str, Any]:
        """Entries of a folder under the root, sorted by name, with type and size."""
        folder = self.resolve(path or ".")
        if not folder.exists():
            raise ToolCallError(f"folder {path!r} does not exist; list '.' to see what is there")
        if not folder.is_dir():
            raise ToolCallError(f"{path!r} is a file, not a folder; read it instead")
        try:
            children = sorted(folder.iterdir(), key=lambda p: p.name)
        except OSError as exc:
            raise ToolCallError(f"folder {path!r} cannot be listed: {exc.strerror}") from None
        entries = [_entry(child) for child in children[: self.max_list_entries]]
        return {
            "path": self.relative(folder),
            "entries": entries,
            "truncated": len(children) > self.max_list_entries,
            "total": len(children),
        }

    def read(self, path: str) -> dict[str, Any]:
        """A UTF-8 text file's content (at most ``max_read_bytes``)."""
        target = self.resolve(path)
        if not target.exists():
            raise ToolCallError(f"file {path!r} does not exist; list its folder to see the names")
        if target.is_dir():
            raise ToolCallError(f"{path!r} is a folder; list it instead of reading it")
        if not target.is_file():
            raise ToolCallError(f"{path!r} is not a regular file and cannot be read")
        size = target.stat().st_size
        if size > self.max_read_bytes:
            raise ToolCallError(
                f"file {path!r} is {size} bytes, over the {self.max_read_bytes}-byte read limit; "
                "read a smaller file"
            )
        try:
            with target.open("rb") as handle:
                data = handle.read(self.max_read_bytes + 1)
        except OSError as exc:
            raise ToolCallError(f"file {path!r} cannot be read: {exc.strerror}") from None
        if len(data) > self.max_read_bytes:
            raise ToolCallError(
                f"file {path!r} is over the {self.max_read_bytes}-byte read limit; "
                "read a smaller file"
            )
        if b"\x00" in data:
            raise ToolCallError(
                f"file {path!r} is binary (it contains NUL bytes); only text files can be read"
            )
        try:
            content = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ToolCallError(
                f"file {path!r} is not UTF-8 text (invalid byte at offset {exc.start}); "
                "only UTF-8 text files can be read"
            ) from None
        return {"path": self.relative(target), "size": len(data), "content": content}

    def write(self, path: str, content: str) -> dict[str, Any]:
        """Create or replace a text file atomically; missing parent folders are created."""
        target = self.resolve(path)
        if target == self.root or target.is_dir():
            raise ToolCallError(f"{path!r} is a folder; give a file path such as '{path}/name.txt'")
        data = content.encode("utf-8")
        if len(data) > self.max_write_bytes:
            raise ToolCallError(
                f"content is {len(data)} bytes, over the {self.max_write_bytes}-byte write limit; "
                "write a smaller file"
            )
        for parent in target.relative_to(self.root).parents:
            folder = self.root / parent
            if folder.exists() and not folder.is_dir():
                raise ToolCallError(
                    f"cannot write {path!r}: {self.relative(folder)!r} is a file, not a folder"
                )
        existed = target.exists()
        if existed and not target.is_file():
            raise ToolCallError(f"{path!r} is not a regular file and cannot be replaced")
        try:
            write_atomic(target, data)
        except OSError as exc:
            raise ToolCallError(f"file {path!r} cannot be written: {exc.strerror}") from None
        return {"path": self.relative(target), "size": len(data), "created": not existed}


def _entry(child: Path) -> dict[str, Any]:
    try:
        info = child.lstat()
    except OSError:
        return {"name": child.name, "type": "unknown", "size": None}
    if stat.S_ISLNK(info.st_mode):
        kind = "symlink"
    elif stat.S_ISDIR(info.st_mode):
        kind = "directory"
    elif stat.S_ISREG(info.st_mode):
        kind = "file"
    else:
        kind = "other"
    return {"name": child.name, "type": kind, "size": info.st_size if kind == "file" else None}
