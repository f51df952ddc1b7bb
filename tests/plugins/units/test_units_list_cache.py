"""``space_unit_list`` reads a unit again only when its stat changed, and still sees every change.

The listing is cached by stat (the folder's, then each unit's: device,
inode, size, mtime and ctime), so a call on an unchanged folder hashes no
file; a stat taken within ``RACY_NS`` of its times is never trusted, since a
change in the same tick of the file system's clock leaves it as it was.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_presets_units import units
from agent_presets_units.loading import UnitLoader
from agent_presets_units.units import UnitFolder

SOURCE = "x = 1\n"


class LoadsAnything(UnitLoader):
    """A loader that runs nothing: every load succeeds (the status is what is under test)."""

    def __init__(self) -> None:
        pass

    def load(self, name: str, path: Path, data: bytes) -> dict[str, Any]:
        return {"state": "loaded"}


def read_afresh(folder: UnitFolder) -> dict[str, Any]:
    """The listing as it was computed before the cache: every unit read and hashed."""
    listed = []
    for name in folder.names():
        data = folder.path(name).read_bytes()
        status = folder.status(name).to_dict(hashlib.sha256(data).hexdigest())
        listed.append({"name": name, "size": len(data), "status": status})
    return {"units": listed}


def next_tick(probe: Path) -> None:
    """Wait until the file system's clock stamps a time later than any stamped so far."""
    probe.write_bytes(b"")
    before = probe.stat().st_ctime_ns
    while True:
        time.sleep(0.002)
        os.utime(probe)
        if probe.stat().st_ctime_ns != before:
            return


def rewrite_in_place(path: Path, data: bytes) -> None:
    """New bytes of the same length, written into the same inode, its mtime put back."""
    old = path.stat()
    with path.open("r+b") as out:
        out.write(data)
    os.utime(path, ns=(old.st_atime_ns, old.st_mtime_ns))


CHANGES: list[tuple[str, Callable[[Path, Path], None]]] = [
    ("same size, in place, mtime put back", lambda d, o: rewrite_in_place(d / "a.py", b"x = 2\n")),
    ("longer", lambda d, o: (d / "a.py").write_text(SOURCE * 3)),
    ("replaced by rename", lambda d, o: os.replace(_tmp(d, "y = 1\n"), d / "a.py")),
    ("added outside the tools", lambda d, o: (d / "b.py").write_text(SOURCE)),
    ("a symlink's target edited", lambda d, o: rewrite_in_place(o, b"z = 9\n")),
    ("removed", lambda d, o: (d / "b.py").unlink()),
    ("a symlink to itself", lambda d, o: (d / "c.py").symlink_to(d / "c.py")),
    ("replaced by a folder", lambda d, o: ((d / "a.py").unlink(), (d / "a.py").mkdir())),
    (
        "the folder back to a file",
        lambda d, o: ((d / "a.py").rmdir(), (d / "a.py").write_text("w = 0\n")),
    ),
]


def _tmp(folder: Path, text: str) -> Path:
    path = folder / ".a.py.new.tmp"
    path.write_text(text)
    return path


@pytest.mark.parametrize("clock", ["real", "two seconds on"])
def test_every_change_to_the_folder_is_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: str
) -> None:
    """Each change made any way (in the tools or not) is in the next listing.

    With the real clock, each list comes right after a change, inside the racy
    window; with the clock moved on, every stat is old enough to be cached, so
    each list after the first answers from the cache unless the stat changed.
    """
    if clock != "real":
        monkeypatch.setattr(units, "_now_ns", lambda: time.time_ns() + units.RACY_NS)
    folder = UnitFolder(tmp_path / "units", loader=LoadsAnything())
    elsewhere = tmp_path / "elsewhere.py"
    elsewhere.write_text("z = 1\n")
    (folder.folder / "a.py").write_text(SOURCE)
    (folder.folder / "s.py").symlink_to(elsewhere)
    folder.reload("a")
    folder.reload("s")
    assert folder.list() == read_afresh(folder)
    assert [u["status"]["stale"] for u in folder.list()["units"]] == [False, False]
    for what, change in CHANGES:
        next_tick(tmp_path / "probe")
        change(folder.folder, elsewhere)
        assert folder.list() == read_afresh(folder), what
    listed = {u["name"]: u for u in folder.list()["units"]}
    assert listed["a"]["status"]["stale"] is True
    assert listed["s"]["status"]["stale"] is True


def test_an_unchanged_folder_is_listed_without_reading_a_unit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(units, "_now_ns", lambda: time.time_ns() + units.RACY_NS)
    folder = UnitFolder(tmp_path / "units")
    for name in ("a", "b"):
        folder.create(name, SOURCE)
    first = folder.list()
    reads: list[Path] = []
    read_bytes = Path.read_bytes

    def counted(self: Path) -> bytes:
        reads.append(self)
        return read_bytes(self)

    monkeypatch.setattr(Path, "read_bytes", counted)
    assert folder.list() == first
    assert reads == []
    folder.edit("b", SOURCE * 2)
    reads.clear()
    second = folder.list()
    assert [p.name for p in reads] == ["b.py"]
    assert second == read_afresh(folder)


def test_a_change_inside_the_racy_window_is_seen_even_with_every_field_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A same-tick change leaves the stat as it was: such a stat is never cached."""
    folder = UnitFolder(tmp_path / "units", loader=LoadsAnything())
    folder.create("a", SOURCE)
    folder.reload("a")
    assert folder.list()["units"][0]["status"]["stale"] is False
    path = folder.path("a")
    before = os.stat(path)
    # The stat unchanged in every field, as a change in the same tick would leave it.
    monkeypatch.setattr(
        units.os, "stat", lambda p, *a, **k: before if Path(p) == path else os.lstat(p)
    )
    path.write_bytes(b"x = 2\n")
    assert folder.list()["units"][0]["status"]["stale"] is True
