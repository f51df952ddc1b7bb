"""Attacks on the file root: races, symlinks and hard links never reach a file outside it.

The race is the one measured against the old, check-then-open-by-name code: a
second process swaps a folder inside the root with a symlink to an outside
folder (renameat2 with RENAME_EXCHANGE, so one of the two names is always the
real folder and the other the symlink) while reads and writes run.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agent_presets import ToolCallError
from agent_presets_general.files import FileRoot

RENAME_EXCHANGE = 2
SYS_RENAMEAT2 = {"x86_64": 316, "aarch64": 276}
ROUNDS = 10_000 if os.environ.get("CI") or os.environ.get("HYPOTHESIS_PROFILE") == "ci" else 2_000

# Runs in its own process so the swaps truly overlap the tool calls (no GIL to share).
SWAPPER = textwrap.dedent(
    """
    import ctypes, os, signal, sys
    libc = ctypes.CDLL(None, use_errno=True)
    a, b, flags, number = sys.argv[1].encode(), sys.argv[2].encode(), 2, int(sys.argv[3])
    AT_FDCWD = -100
    stop = False
    def handle(signum, frame):
        global stop
        stop = True
    signal.signal(signal.SIGTERM, handle)
    if hasattr(libc, "renameat2"):
        swap = lambda: libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, flags)
    else:
        swap = lambda: libc.syscall(number, AT_FDCWD, a, AT_FDCWD, b, flags)
    swaps = 0
    print("ready", flush=True)
    while not stop:
        if swap() != 0:
            sys.exit(f"renameat2 failed: {os.strerror(ctypes.get_errno())}")
        swaps += 1
    print(swaps, flush=True)
    """
)


def _exchange(a: Path, b: Path) -> None:
    """One RENAME_EXCHANGE in this process, to skip where the kernel or libc cannot do it."""
    libc = ctypes.CDLL(None, use_errno=True)
    at_fdcwd = -100
    if hasattr(libc, "renameat2"):
        result = libc.renameat2(at_fdcwd, bytes(a), at_fdcwd, bytes(b), RENAME_EXCHANGE)
    else:
        number = SYS_RENAMEAT2.get(platform.machine())
        if number is None:
            pytest.skip(f"no renameat2 syscall number known for {platform.machine()}")
        result = libc.syscall(number, at_fdcwd, bytes(a), at_fdcwd, bytes(b), RENAME_EXCHANGE)
    if result != 0:
        code = ctypes.get_errno()
        if code in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
            pytest.skip(f"renameat2(RENAME_EXCHANGE) is not available here: {os.strerror(code)}")
        raise OSError(code, os.strerror(code))


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("OUTSIDE")
    return folder


@pytest.fixture
def root(tmp_path: Path) -> FileRoot:
    return FileRoot(tmp_path / "root")


def _files(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="renameat2 is Linux-only")
def test_swapping_a_folder_for_a_symlink_never_lets_a_read_or_write_escape(
    root: FileRoot, outside: Path
) -> None:
    real = root.root / "d"
    real.mkdir()
    (real / "secret.txt").write_text("inside")
    link = root.root / "swap"
    link.symlink_to(outside, target_is_directory=True)
    _exchange(real, link)  # skips here when the exchange is unsupported
    _exchange(real, link)
    swapper = subprocess.Popen(
        [
            sys.executable,
            "-c",
            SWAPPER,
            str(real),
            str(link),
            str(SYS_RENAMEAT2.get(platform.machine(), -1)),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert swapper.stdout is not None
    assert swapper.stdout.readline().strip() == "ready"
    reads = writes = refused = 0
    leaked: list[str] = []
    try:
        for i in range(ROUNDS):
            name = ("d", "swap")[i % 2]
            try:
                content = root.read(f"{name}/secret.txt")["content"]
            except ToolCallError:
                refused += 1
            else:
                reads += 1
                if content != "inside":
                    leaked.append(f"round {i}: read {content!r} through {name!r}")
            try:
                root.write(f"{name}/w{i}.txt", f"round {i}")
            except ToolCallError:
                refused += 1
            else:
                writes += 1
    finally:
        swapper.terminate()
        out, _ = swapper.communicate(timeout=30)
    assert swapper.returncode == 0, out
    swaps = int(out.split()[-1])
    escaped = sorted(set(_files(outside)) - {"secret.txt"})
    assert (leaked, escaped) == ([], []), (
        f"{len(leaked)} of {reads} reads returned outside content ({leaked[:3]}); "
        f"{len(escaped)} files from {ROUNDS} writes landed outside ({escaped[:3]})"
    )
    assert _files(outside) == {"secret.txt": b"OUTSIDE"}
    # The attack really ran alongside: the names changed under the calls many times.
    assert swaps > ROUNDS // 10
    assert reads > 0 and writes > 0 and refused > 0


def test_a_hard_link_to_an_outside_file_is_refused_for_read_and_write(
    root: FileRoot, outside: Path
) -> None:
    os.link(outside / "secret.txt", root.root / "h.txt")
    with pytest.raises(ToolCallError, match=r"'h\.txt' has 2 hard links"):
        root.read("h.txt")
    with pytest.raises(ToolCallError, match=r"'h\.txt' has 2 hard links"):
        root.write("h.txt", "pwned")
    assert _files(outside) == {"secret.txt": b"OUTSIDE"}
    assert os.stat(outside / "secret.txt").st_nlink == 2


def test_a_hard_link_inside_the_root_is_refused_too(root: FileRoot) -> None:
    (root.root / "a.txt").write_text("a")
    os.link(root.root / "a.txt", root.root / "b.txt")
    with pytest.raises(ToolCallError, match="hard links"):
        root.read("b.txt")
    with pytest.raises(ToolCallError, match="hard links"):
        root.write("a.txt", "changed")
    assert (root.root / "a.txt").read_text() == "a"


def test_a_symlinked_folder_is_refused_even_when_it_points_inside(root: FileRoot) -> None:
    (root.root / "real").mkdir()
    (root.root / "real" / "f.txt").write_text("inside")
    (root.root / "alias").symlink_to("real", target_is_directory=True)
    for call in (
        lambda: root.read("alias/f.txt"),
        lambda: root.write("alias/f.txt", "changed"),
        lambda: root.write("alias/new/f.txt", "new"),
        lambda: root.list("alias"),
    ):
        with pytest.raises(ToolCallError, match="'alias' is a symlink"):
            call()
    assert _files(root.root) == {"real/f.txt": b"inside"}


def test_a_symlink_as_the_last_component_is_refused(root: FileRoot) -> None:
    (root.root / "real.txt").write_text("inside")
    (root.root / "link.txt").symlink_to("real.txt")
    with pytest.raises(ToolCallError, match=r"'link\.txt' is a symlink"):
        root.read("link.txt")
    with pytest.raises(ToolCallError, match=r"'link\.txt' is a symlink"):
        root.write("link.txt", "changed")
    assert (root.root / "real.txt").read_text() == "inside"
    assert (root.root / "link.txt").is_symlink()


@pytest.mark.parametrize("target", ["made.txt", "../outside/made.txt"])
def test_a_write_through_a_dangling_symlink_is_refused(
    root: FileRoot, outside: Path, target: str
) -> None:
    (root.root / "dangling.txt").symlink_to(target)
    with pytest.raises(ToolCallError, match=r"'dangling\.txt' is a symlink"):
        root.write("dangling.txt", "pwned")
    assert not (root.root / "made.txt").exists()
    assert _files(outside) == {"secret.txt": b"OUTSIDE"}


def test_a_fifo_is_refused_without_hanging(root: FileRoot) -> None:
    os.mkfifo(root.root / "pipe")
    with pytest.raises(ToolCallError, match="not a regular file"):
        root.read("pipe")
    with pytest.raises(ToolCallError, match="not a regular file"):
        root.write("pipe", "x")
