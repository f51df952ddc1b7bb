"""The file tools stay inside the file root, write atomically and respect size limits."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lanes import examples

from agent_presets import ToolArgumentError, ToolCallError
from agent_presets_general.files import FileRoot

if TYPE_CHECKING:
    from conftest import GeneralApp

MiB = 1024 * 1024


@pytest.fixture
def outside(files_app: GeneralApp) -> Path:
    """A folder next to the file root with a secret in it."""
    folder = files_app.tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("top secret")
    return folder


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def test_write_then_read_and_list(files_app: GeneralApp) -> None:
    result = files_app.call("space_app_write_file", path="notes/todo.md", content="- milk\n")
    assert result == {"path": "notes/todo.md", "size": 7, "created": True}
    assert (files_app.root / "notes" / "todo.md").read_text() == "- milk\n"
    read = files_app.call("space_app_read_file", path="notes/todo.md")
    assert read["content"] == "- milk\n"
    again = files_app.call("space_app_write_file", path="notes/todo.md", content="- eggs\n")
    assert again["created"] is False

    (files_app.root / "b.txt").write_text("12345")
    listing = files_app.call("space_app_list_files")
    assert listing["path"] == "."
    assert listing["entries"] == [
        {"name": "b.txt", "type": "file", "size": 5},
        {"name": "notes", "type": "directory", "size": None},
    ]
    sub = files_app.call("space_app_list_files", path="notes")
    assert sub["entries"] == [{"name": "todo.md", "type": "file", "size": 7}]


def test_unicode_round_trips(files_app: GeneralApp) -> None:
    text = "grüße, 世界 🚀\n"
    files_app.call("space_app_write_file", path="u.txt", content=text)
    assert files_app.call("space_app_read_file", path="u.txt")["content"] == text


@pytest.mark.parametrize(
    "path", ["../outside/secret.txt", "notes/../../outside/secret.txt", "..", "a/../../x"]
)
def test_dotdot_escapes_are_refused(files_app: GeneralApp, outside: Path, path: str) -> None:
    with pytest.raises(ToolCallError, match="outside the file root"):
        files_app.call("space_app_read_file", path=path)
    with pytest.raises(ToolCallError, match="outside the file root"):
        files_app.call("space_app_write_file", path=path, content="pwned")
    with pytest.raises(ToolCallError, match="outside the file root"):
        files_app.call("space_app_list_files", path=path)
    assert _tree(outside) == {"secret.txt": b"top secret"}


def test_dotdot_that_stays_inside_is_fine(files_app: GeneralApp) -> None:
    files_app.call("space_app_write_file", path="a/../b.txt", content="ok")
    assert (files_app.root / "b.txt").read_text() == "ok"


def test_absolute_paths_are_refused(files_app: GeneralApp, outside: Path) -> None:
    for path in (str(outside / "secret.txt"), str(files_app.root / "x.txt"), "/etc/passwd"):
        with pytest.raises(ToolCallError, match="absolute"):
            files_app.call("space_app_read_file", path=path)
        with pytest.raises(ToolCallError, match="absolute"):
            files_app.call("space_app_write_file", path=path, content="pwned")
    assert _tree(outside) == {"secret.txt": b"top secret"}
    assert not (files_app.root / "x.txt").exists()


def test_symlink_to_a_file_outside_is_refused(files_app: GeneralApp, outside: Path) -> None:
    (files_app.root / "link.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(ToolCallError, match="symlink"):
        files_app.call("space_app_read_file", path="link.txt")
    with pytest.raises(ToolCallError, match="outside the file root"):
        files_app.call("space_app_write_file", path="link.txt", content="pwned")
    assert _tree(outside) == {"secret.txt": b"top secret"}
    # Listing shows the link as a link without following it.
    entries = files_app.call("space_app_list_files")["entries"]
    assert entries == [{"name": "link.txt", "type": "symlink", "size": None}]


def test_symlinked_folder_pointing_outside_is_refused(files_app: GeneralApp, outside: Path) -> None:
    (files_app.root / "docs").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ToolCallError, match="outside the file root"):
        files_app.call("space_app_read_file", path="docs/secret.txt")
    with pytest.raises(ToolCallError, match="outside the file root"):
        files_app.call("space_app_write_file", path="docs/new.txt", content="pwned")
    with pytest.raises(ToolCallError, match="outside the file root"):
        files_app.call("space_app_write_file", path="docs/deeper/new.txt", content="pwned")
    with pytest.raises(ToolCallError, match="outside the file root"):
        files_app.call("space_app_list_files", path="docs")
    assert _tree(outside) == {"secret.txt": b"top secret"}


def test_symlinks_that_stay_inside_are_refused_too_and_the_real_path_works(
    files_app: GeneralApp,
) -> None:
    # Following a link only when it stays inside would mean checking, then
    # following: the race the file root exists to close. So no link is followed.
    (files_app.root / "real").mkdir()
    (files_app.root / "real" / "f.txt").write_text("inside")
    (files_app.root / "alias").symlink_to(files_app.root / "real")
    with pytest.raises(ToolCallError, match=r"'alias' is a symlink.*real file or folder instead"):
        files_app.call("space_app_read_file", path="alias/f.txt")
    with pytest.raises(ToolCallError, match="'alias' is a symlink"):
        files_app.call("space_app_write_file", path="alias/f.txt", content="changed")
    assert files_app.call("space_app_read_file", path="real/f.txt")["content"] == "inside"
    files_app.call("space_app_write_file", path="real/f.txt", content="changed")
    assert (files_app.root / "real" / "f.txt").read_text() == "changed"
    assert (files_app.root / "alias").is_symlink()


def test_write_is_atomic_and_leaves_no_temp_files(files_app: GeneralApp) -> None:
    for i in range(3):
        files_app.call("space_app_write_file", path="d/f.txt", content=f"version {i}")
    assert sorted(os.listdir(files_app.root / "d")) == ["f.txt"]


def test_a_write_that_fails_midway_keeps_the_old_file(
    files_app: GeneralApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    files_app.call("space_app_write_file", path="f.txt", content="old")

    def crash(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(ToolCallError, match="No space left"):
        files_app.call("space_app_write_file", path="f.txt", content="new")
    assert os.listdir(files_app.root) == ["f.txt"]
    assert (files_app.root / "f.txt").read_text() == "old"


def test_read_size_limit(files_app: GeneralApp) -> None:
    (files_app.root / "big.txt").write_bytes(b"a" * (MiB + 1))
    with pytest.raises(ToolCallError, match="over the 1048576-byte read limit"):
        files_app.call("space_app_read_file", path="big.txt")
    (files_app.root / "ok.txt").write_bytes(b"a" * MiB)
    assert files_app.call("space_app_read_file", path="ok.txt")["size"] == MiB


def test_write_size_limit_changes_nothing(files_app: GeneralApp) -> None:
    with pytest.raises(ToolCallError, match="over the 1048576-byte write limit"):
        files_app.call("space_app_write_file", path="big.txt", content="é" * (MiB // 2 + 1))
    assert not (files_app.root / "big.txt").exists()


def test_binary_and_non_utf8_reads_are_refused(files_app: GeneralApp) -> None:
    (files_app.root / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    (files_app.root / "latin1.txt").write_bytes("café".encode("latin-1"))
    with pytest.raises(ToolCallError, match="binary"):
        files_app.call("space_app_read_file", path="img.png")
    with pytest.raises(ToolCallError, match="not UTF-8 text"):
        files_app.call("space_app_read_file", path="latin1.txt")


def test_wrong_kinds_of_path_say_what_to_do(files_app: GeneralApp) -> None:
    (files_app.root / "dir").mkdir()
    (files_app.root / "file.txt").write_text("x")
    with pytest.raises(ToolCallError, match="does not exist; list"):
        files_app.call("space_app_read_file", path="missing.txt")
    with pytest.raises(ToolCallError, match="is a folder; list it"):
        files_app.call("space_app_read_file", path="dir")
    with pytest.raises(ToolCallError, match="is a folder"):
        files_app.call("space_app_write_file", path="dir", content="x")
    with pytest.raises(ToolCallError, match="is a file, not a folder"):
        files_app.call("space_app_write_file", path="file.txt/inner.txt", content="x")
    with pytest.raises(ToolCallError, match="is a file, not a folder"):
        files_app.call("space_app_list_files", path="file.txt")
    with pytest.raises(ToolCallError, match="does not exist"):
        files_app.call("space_app_list_files", path="nowhere")
    with pytest.raises(ToolArgumentError):
        files_app.call("space_app_read_file", path="")
    with pytest.raises(ToolArgumentError):
        files_app.call("space_app_write_file", path="x.txt")


def test_listing_is_capped(tmp_path: Path) -> None:
    root = FileRoot(tmp_path, max_list_entries=3)
    for i in range(5):
        (tmp_path / f"f{i}").write_text("")
    listing = root.list(".")
    assert [e["name"] for e in listing["entries"]] == ["f0", "f1", "f2"]
    assert listing["truncated"] is True
    assert listing["total"] == 5


SEGMENTS = st.sampled_from(["a", "b", "..", ".", "", "c.txt"])


@settings(max_examples=examples(200), deadline=None)
@given(parts=st.lists(SEGMENTS, min_size=1, max_size=6))
def test_any_relative_path_acts_inside_the_root_or_is_refused(
    tmp_path_factory: pytest.TempPathFactory, parts: list[str]
) -> None:
    base = tmp_path_factory.mktemp("fr")
    root = FileRoot(base / "root")
    (base / "root" / "a").mkdir(exist_ok=True)
    (base / "root" / "b").symlink_to(base, target_is_directory=True)
    (base / "c.txt").write_text("outside")
    path = "/".join(parts)
    with contextlib.suppress(ToolCallError):
        assert root.read(path)["content"] != "outside"
    with contextlib.suppress(ToolCallError):
        root.list(path)
    with contextlib.suppress(ToolCallError):
        root.write(path, "written")
    assert _tree(base) == {"c.txt": b"outside", **_tree_under(base, "root")}
    with contextlib.suppress(ToolCallError):
        names = root.parts(path)
        assert all(name not in ("", ".", "..") for name in names)


def _tree_under(base: Path, folder: str) -> dict[str, bytes]:
    return {f"{folder}/{name}": data for name, data in _tree(base / folder).items()}


def test_odd_paths_are_tool_errors_not_crashes(tmp_path: Path) -> None:
    root = FileRoot(tmp_path)
    (tmp_path / "file.txt").write_text("x")
    long_name = "n" * 300
    for call in (
        lambda: root.read(long_name),
        lambda: root.write(long_name, "x"),
        lambda: root.list(long_name),
        lambda: root.write(f"{long_name}/x.txt", "x"),
    ):
        with pytest.raises(ToolCallError, match="too long"):
            call()
    with pytest.raises(ToolCallError, match=r"'file\.txt' is a file, not a folder"):
        root.read("file.txt/inner.txt")
    with pytest.raises(ToolCallError, match=r"'file\.txt' is a file, not a folder"):
        root.list("file.txt/inner")


def test_a_replaced_file_keeps_its_permissions(tmp_path: Path) -> None:
    root = FileRoot(tmp_path)
    root.write("script.sh", "echo 1\n")
    (tmp_path / "script.sh").chmod(0o750)
    root.write("script.sh", "echo 2\n")
    assert (tmp_path / "script.sh").stat().st_mode & 0o777 == 0o750
    assert (tmp_path / "script.sh").read_text() == "echo 2\n"
