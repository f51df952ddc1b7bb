"""A file root the agent may read and write, and nothing outside it.

A path is never handed to the kernel whole. ``.`` and ``..`` are applied to
the text first (a ``..`` above the root is refused), then the folders are
opened one name at a time from a descriptor of the root, each with
``O_NOFOLLOW``, and the last name is read, written or listed through the
descriptor of its folder. So a symlink anywhere in the path is refused rather
than followed, and a folder swapped for a symlink after it was opened cannot
redirect the call: the call goes on in the folder it opened. Files with more
than one hard link are refused, since another link may lie outside the root.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path, PurePosixPath
from typing import Any, Final, Literal

from agent_presets import ToolCallError

MiB: Final = 1024 * 1024
MAX_READ_BYTES: Final = MiB
MAX_WRITE_BYTES: Final = MiB
MAX_LIST_ENTRIES: Final = 1000

_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO swapped in after the type check must not hang the read.
_READ_FLAGS: Final = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY
_TEMP_FLAGS: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC

Verb = Literal["read", "write", "list"]


class FileRoot:
    """The sandboxed folder behind ``space_app_list_files``/``read_file``/``write_file``.

    Invariant: every call acts on descriptors reached from the root's
    descriptor without following a symlink, never on a path opened again by
    name, so what was checked is what is used.
    """

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

    def parts(self, path: str) -> tuple[str, ...]:
        """The names leading from the root to ``path``, or a ToolCallError.

        ``..`` is applied to the text, not looked up: the walk below never
        follows a symlink, so the text is the whole truth about where it goes.
        """
        if "\x00" in path:
            raise ToolCallError(f"path {path!r} contains a NUL character; use a plain path")
        if PurePosixPath(path).is_absolute() or Path(path).is_absolute():
            raise ToolCallError(
                f"path {path!r} is absolute; give a path relative to the file root, "
                "like 'notes/todo.md'"
            )
        names: list[str] = []
        for name in path.split("/"):
            if name in ("", "."):
                continue
            if name != "..":
                names.append(name)
            elif names:
                names.pop()
            else:
                raise ToolCallError(
                    f"path {path!r} leads outside the file root (through '..'); "
                    "only files under the root can be used"
                )
        return tuple(names)

    @contextlib.contextmanager
    def _folder(
        self, path: str, names: Sequence[str], verb: Verb, *, create: bool = False
    ) -> Iterator[int]:
        """A descriptor of the folder ``names``, opened one name at a time without symlinks.

        With ``create``, missing folders are made on the way, each inside the
        descriptor of its parent and then opened like any other.
        """
        try:
            fd = os.open(self.root, _DIR_FLAGS)
        except OSError as exc:
            raise ToolCallError(
                f"the file root cannot be opened ({exc.strerror}); ask the operator to check it"
            ) from None
        try:
            for depth, name in enumerate(names):
                try:
                    child = _open_folder(fd, name, create=create)
                except OSError as exc:
                    last = verb == "list" and depth == len(names) - 1
                    raise _refusal(path, names[: depth + 1], fd, exc, verb, last=last) from None
                os.close(fd)
                fd = child
            yield fd
        finally:
            os.close(fd)

    # -- operations ----------------------------------------------------------

    def list(self, path: str = ".") -> dict[str, Any]:
        """Entries of a folder under the root, sorted by name, with type and size."""
        names = self.parts(path or ".")
        with self._folder(path, names, "list") as folder:
            try:
                children = sorted(os.listdir(folder))
            except OSError as exc:
                raise ToolCallError(f"folder {path!r} cannot be listed: {exc.strerror}") from None
            entries = [_entry(folder, name) for name in children[: self.max_list_entries]]
        return {
            "path": _relative(names),
            "entries": entries,
            "truncated": len(children) > self.max_list_entries,
            "total": len(children),
        }

    def read(self, path: str) -> dict[str, Any]:
        """A UTF-8 text file's content (at most ``max_read_bytes``)."""
        names = self.parts(path)
        if not names:
            raise ToolCallError(f"{path!r} is a folder; list it instead of reading it")
        with self._folder(path, names[:-1], "read") as folder:
            # The lstat keeps devices and FIFOs from being opened at all; the
            # fstat after opening is the check that counts.
            _check_file(path, names, _lstat(path, folder, names[-1]), "read")
            try:
                fd = os.open(names[-1], _READ_FLAGS, dir_fd=folder)
            except OSError as exc:
                raise _refusal(path, names, folder, exc, "read", last=True) from None
        try:
            info = os.fstat(fd)
            _check_file(path, names, info, "read")
            if info.st_size > self.max_read_bytes:
                raise ToolCallError(
                    f"file {path!r} is {info.st_size} bytes, over the "
                    f"{self.max_read_bytes}-byte read limit; read a smaller file"
                )
            data = _read_at_most(fd, self.max_read_bytes + 1)
        except OSError as exc:
            raise ToolCallError(f"file {path!r} cannot be read: {exc.strerror}") from None
        finally:
            os.close(fd)
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
        return {"path": _relative(names), "size": len(data), "content": content}

    def write(self, path: str, content: str) -> dict[str, Any]:
        """Create or replace a text file atomically; missing parent folders are created."""
        names = self.parts(path)
        if not names:
            raise ToolCallError(f"{path!r} is a folder; give a file path such as '{path}/name.txt'")
        data = content.encode("utf-8")
        if len(data) > self.max_write_bytes:
            raise ToolCallError(
                f"content is {len(data)} bytes, over the {self.max_write_bytes}-byte write limit; "
                "write a smaller file"
            )
        with self._folder(path, names[:-1], "write", create=True) as folder:
            old = _lstat(path, folder, names[-1])
            _check_file(path, names, old, "write")
            try:
                _replace(folder, names[-1], data, None if old is None else old.st_mode)
            except OSError as exc:
                raise ToolCallError(f"file {path!r} cannot be written: {exc.strerror}") from None
        return {"path": _relative(names), "size": len(data), "created": old is None}


def _open_folder(parent: int, name: str, *, create: bool) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            raise
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, dir_fd=parent)
    # Opened like any other name: if a symlink took its place, this refuses it.
    return os.open(name, _DIR_FLAGS, dir_fd=parent)


def _lstat(path: str, folder: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ToolCallError(f"{path!r} cannot be used: {exc.strerror}") from None


def _check_file(
    path: str,
    names: Sequence[str],
    info: os.stat_result | None,
    verb: Verb,
) -> None:
    """Refuse anything but a regular file with one link; nothing at all is fine for a write."""
    if info is None:
        if verb == "write":
            return
        raise ToolCallError(f"file {path!r} does not exist; list its folder to see the names")
    if stat.S_ISLNK(info.st_mode):
        raise _symlink(path, names)
    if stat.S_ISDIR(info.st_mode):
        if verb == "read":
            raise ToolCallError(f"{path!r} is a folder; list it instead of reading it")
        raise ToolCallError(f"{path!r} is a folder; give a file path such as '{path}/name.txt'")
    if not stat.S_ISREG(info.st_mode):
        action = "read" if verb == "read" else "replaced"
        raise ToolCallError(f"{path!r} is not a regular file and cannot be {action}")
    if info.st_nlink > 1:
        raise ToolCallError(
            f"file {path!r} has {info.st_nlink} hard links; the file tools refuse to {verb} "
            "a file with more than one, since another link may lie outside the file root; "
            "work on a copy of it instead"
        )


def _symlink(path: str, names: Sequence[str]) -> ToolCallError:
    return ToolCallError(
        f"path {path!r} cannot be used: {'/'.join(names)!r} is a symlink, and the file tools "
        "never follow symlinks (one could lead outside the file root); "
        "give the path of the real file or folder instead"
    )


def _refusal(
    path: str, names: Sequence[str], folder: int, exc: OSError, verb: Verb, *, last: bool
) -> ToolCallError:
    """The error for ``names[-1]`` that could not be opened in ``folder``.

    ``last`` says the name is the path's own last name, not a folder on the way.
    The lstat here only words the message; the refusal itself was the kernel's.
    """
    where = "/".join(names)
    try:
        info: os.stat_result | None = os.stat(names[-1], dir_fd=folder, follow_symlinks=False)
    except OSError:
        info = None
    if info is not None and stat.S_ISLNK(info.st_mode):
        return _symlink(path, names)
    if isinstance(exc, FileNotFoundError):
        if verb == "list":
            return ToolCallError(f"folder {path!r} does not exist; list '.' to see what is there")
        if verb == "read":
            return ToolCallError(f"file {path!r} does not exist; list its folder to see the names")
    if info is not None and not stat.S_ISDIR(info.st_mode):
        if verb == "write":
            return ToolCallError(f"cannot write {path!r}: {where!r} is a file, not a folder")
        if last and verb == "list":
            return ToolCallError(f"{path!r} is a file, not a folder; read it instead")
        return ToolCallError(f"{path!r} cannot be reached: {where!r} is a file, not a folder")
    return ToolCallError(f"{path!r} cannot be used: opening {where!r} failed ({exc.strerror})")


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        chunk = os.read(fd, min(limit - size, MiB))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _replace(folder: int, name: str, data: bytes, old_mode: int | None) -> None:
    """Replace ``name`` in ``folder`` so a reader sees the old or the new bytes, never half.

    The temporary file is created fresh (``O_EXCL``) in the same folder
    descriptor and renamed over the name there; a replaced file keeps its
    permissions.
    """
    temp = f".{name[:48]}.{secrets.token_hex(8)}.tmp"
    fd = os.open(temp, _TEMP_FLAGS, 0o666 if old_mode is None else 0o600, dir_fd=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if old_mode is not None:
                os.fchmod(handle.fileno(), stat.S_IMODE(old_mode) & 0o777)
            os.fsync(handle.fileno())
        os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=folder)
        raise
    with contextlib.suppress(OSError):
        os.fsync(folder)


def _relative(names: Sequence[str]) -> str:
    return "/".join(names) or "."


def _entry(folder: int, name: str) -> dict[str, Any]:
    try:
        info = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except OSError:
        return {"name": name, "type": "unknown", "size": None}
    if stat.S_ISLNK(info.st_mode):
        kind = "symlink"
    elif stat.S_ISDIR(info.st_mode):
        kind = "directory"
    elif stat.S_ISREG(info.st_mode):
        kind = "file"
    else:
        kind = "other"
    return {"name": name, "type": kind, "size": info.st_size if kind == "file" else None}
