"""The file root must not reach the server's own files.

File tools may write anywhere beneath the root. If the root held the state
directory, a tool could edit saved overrides or tokens; if it held a plugins
folder, it could drop code that the next start imports outside any sandbox.
A root inside one of them is refused too: there, the tools would work among
the server's files. The one exception is the default root, the state
directory's own ``files`` folder, which the host reserves for it.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Final

from agent_presets.lib.model import PresetError

DEFAULT_ROOT_NAME: Final = "files"
"""The default file root: ``<state dir>/files``."""


class RootOverlapError(PresetError):
    """The file root contains, or lies inside, the state directory or a plugins folder."""


def check_root(
    root: str | Path, *, state_dir: str | Path, plugin_dirs: Iterable[str | Path] = ()
) -> None:
    """Raise ``RootOverlapError`` when ``root`` overlaps a directory the server owns.

    Paths are compared after resolving symlinks, so a link cannot hide an overlap.
    """
    root_path = Path(root).resolve()
    state_path = Path(state_dir).resolve()
    protected = [("the state directory", state_path, "--state-dir or PRESETS_STATE_DIR")]
    protected += [
        ("a plugins folder", Path(p).resolve(), "the plugins folder") for p in plugin_dirs
    ]
    for what, path, option in protected:
        if what == "the state directory" and root_path == path / DEFAULT_ROOT_NAME:
            continue
        if root_path == path or path.is_relative_to(root_path):
            relation = "is" if root_path == path else "contains"
        elif root_path.is_relative_to(path):
            relation = "lies inside"
        else:
            continue
        raise RootOverlapError(
            f"the file root {root_path} {relation} {what} {path}, so file tools could "
            f"change the server's own files; choose a --root outside it, or move {option}"
        )
