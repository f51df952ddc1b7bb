"""The headless host: shell changes drive the tool list, state survives restarts and crashes."""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_presets import MissingRuntimeError, ToolAdapter, hookimpl, require_runtime
from agent_presets.host import (
    RootOverlapError,
    StateLockedError,
    StateStore,
    acquire_state_lock,
    check_root,
)
from agent_presets.host.store import read_json, write_atomic, write_json_atomic
from agent_presets.lib.model import PresetError
from agent_presets.lib.tools import ToolRegistryChange
from agent_presets_general import SpaceHost

PRESETS_YAML = """\
presets:
  - name: scene-tools
    default_state: auto
    risk: normal
    contexts: [{surface: scene}]
    tool_ids: [scene.look]
  - name: sketch-tools
    default_state: auto
    risk: normal
    contexts: [{surface: canvas, activity: drawing}]
    tool_ids: [sketch.add-stroke, sketch.count]
  - name: general-tools
    default_state: auto
    risk: normal
    contexts: [{surface: any}]
    tool_ids: [app.switch-surface]
"""


class Sketch:
    """A per-world reference runtime that persists through the host."""

    def __init__(self, saved: dict[str, Any] | None, changed: Callable[[], None]) -> None:
        self.strokes: list[str] = list((saved or {}).get("strokes", []))
        self._changed = changed

    def add(self, stroke: str) -> int:
        self.strokes.append(stroke)
        self._changed()
        return len(self.strokes)

    def to_state(self) -> dict[str, Any]:
        return {"strokes": list(self.strokes)}


def sketch_adapter(tool_id: str, handler: Callable[[Any, dict[str, Any]], Any]) -> ToolAdapter:
    name = "space_" + tool_id.replace(".", "_").replace("-", "_")
    schema: dict[str, Any] = {"type": "object", "properties": {"stroke": {"type": "string"}}}
    return ToolAdapter(tool_id, name, f"Tool {tool_id}.", schema, handler)


class SketchPlugin:
    """A plugin with presets, adapters and a headless runtime, as a built-in would be."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @hookimpl
    def presets_preset_files(self) -> list[Path]:
        return [self.path]

    @hookimpl
    def presets_context_fields(self) -> list[dict[str, Any]]:
        return [{"name": "activity", "type": "string", "values": ["drawing"]}]

    @hookimpl
    def presets_tool_adapters(self) -> list[ToolAdapter]:
        def add_stroke(app: Any, arguments: dict[str, Any]) -> int:
            return require_runtime(app, "sketch", "space_sketch_add_stroke").add(
                arguments["stroke"]
            )

        def count(app: Any, arguments: dict[str, Any]) -> int:
            return len(require_runtime(app, "sketch", "space_sketch_count").strokes)

        def switch_surface(app: Any, arguments: dict[str, Any]) -> Any:
            return app.shell.set_surface(arguments["surface"])

        def look(app: Any, arguments: dict[str, Any]) -> str:
            return "a scene"

        return [
            sketch_adapter("sketch.add-stroke", add_stroke),
            sketch_adapter("sketch.count", count),
            sketch_adapter("app.switch-surface", switch_surface),
            sketch_adapter("scene.look", look),
        ]

    @hookimpl
    def presets_headless_runtime(self, host: SpaceHost) -> None:
        host.add_state_runtime("sketch", Sketch)


class NoRuntimePlugin(SketchPlugin):
    """The same presets and adapters, but no runtime attached."""

    @hookimpl
    def presets_headless_runtime(self, host: SpaceHost) -> None:
        return None


@pytest.fixture
def preset_file(tmp_path: Path) -> Path:
    path = tmp_path / "sketch.yaml"
    path.write_text(PRESETS_YAML, encoding="utf-8")
    return path


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    return tmp_path / "state"


def start_host(state_dir: Path, preset_file: Path, plugin: type = SketchPlugin) -> SpaceHost:
    host = SpaceHost(state_dir)
    host.start(plugins=[plugin(preset_file)])
    return host


def tool_names(host: SpaceHost) -> list[str]:
    assert host.presets is not None
    return host.presets.tool_registry.names()


def call(host: SpaceHost, name: str, arguments: dict[str, Any] | None = None) -> Any:
    assert host.presets is not None
    tool = host.presets.tool_registry.get(name)
    assert tool is not None, f"{name} is not in the tool list: {tool_names(host)}"
    return tool.run(arguments or {})


# ------------------------------------------------------------------ runtimes and context


def test_hook_presets_headless_runtime_attaches_runtimes_to_the_host(state_dir, preset_file):
    host = start_host(state_dir, preset_file)
    assert host.runtime_names() == ["shell", "sketch"]  # the Space shell is a runtime too
    assert isinstance(host.sketch, Sketch)
    assert host.runtime("sketch") is host.sketch


def test_shell_changes_call_set_context_and_the_tool_list_follows(state_dir, preset_file):
    host = start_host(state_dir, preset_file)
    assert host.presets is not None
    heard: list[ToolRegistryChange] = []
    host.presets.tool_registry.add_on_change(heard.append)
    assert tool_names(host) == ["space_app_switch_surface", "space_scene_look"]

    host.shell.set_surface("canvas")
    assert host.presets.manager.get_context() == host.context()
    assert tool_names(host) == ["space_app_switch_surface"]

    host.shell.set_activity("drawing")
    assert tool_names(host) == [
        "space_app_switch_surface",
        "space_sketch_add_stroke",
        "space_sketch_count",
    ]
    assert len(heard) == 2

    host.shell.set_theme("dark")  # not part of the context: nothing changes
    assert len(heard) == 2


def test_a_tool_that_switches_the_surface_changes_the_tool_list_live(state_dir, preset_file):
    host = start_host(state_dir, preset_file)
    state = call(host, "space_app_switch_surface", {"surface": "canvas"})
    assert state["surface"] == "canvas" and state["canvas_visible"] is True
    assert "space_scene_look" not in tool_names(host)


def test_tools_act_on_the_current_worlds_runtime_at_call_time(state_dir, preset_file):
    host = start_host(state_dir, preset_file)
    host.shell.set_surface("canvas")
    host.shell.set_activity("drawing")
    assert call(host, "space_sketch_add_stroke", {"stroke": "home-1"}) == 1
    host.shell.create_world("lab")
    host.shell.switch_world("lab")
    assert host.presets.manager.get_context()["world_id"] == "lab"
    assert call(host, "space_sketch_count") == 0
    assert call(host, "space_sketch_add_stroke", {"stroke": "lab-1"}) == 1
    assert host.partition_runtime("home", "sketch").strokes == ["home-1"]
    assert host.partition_runtime("lab", "sketch").strokes == ["lab-1"]


def test_a_missing_runtime_is_a_tool_error_naming_it(state_dir, preset_file):
    host = start_host(state_dir, preset_file, NoRuntimePlugin)
    host.shell.set_surface("canvas")
    host.shell.set_activity("drawing")
    with pytest.raises(MissingRuntimeError, match=r"requires app\.sketch"):
        call(host, "space_sketch_count")


def test_bad_shell_input_changes_nothing(state_dir, preset_file):
    host = start_host(state_dir, preset_file)
    saved = (state_dir / "shell.json").read_bytes() if (state_dir / "shell.json").exists() else None
    before = host.shell.state()
    for change in (
        lambda: host.shell.set_surface("moon"),
        lambda: host.shell.set_activity("Drawing Things"),
        lambda: host.shell.set_canvas_visible("yes"),
        lambda: host.shell.set_theme("neon"),
        lambda: host.shell.switch_world("nowhere"),
        lambda: host.shell.create_world("../escape"),
        lambda: host.shell.delete_world("home"),
    ):
        # A bad shape is the shell's ToolCallError; an undeclared surface, the vocabulary's.
        with pytest.raises(PresetError):
            change()
    assert host.shell.state() == before
    after = (state_dir / "shell.json").read_bytes() if (state_dir / "shell.json").exists() else None
    assert after == saved
    assert tool_names(host) == ["space_app_switch_surface", "space_scene_look"]


def test_two_plugins_attaching_one_runtime_name_is_an_error(state_dir):
    host = SpaceHost(state_dir)
    host.add_state_runtime("sketch", Sketch)
    with pytest.raises(PresetError, match="already taken"):
        host.attach("sketch", object())
    with pytest.raises(PresetError, match="already taken"):
        host.attach("shell", object())


# ------------------------------------------------------------------ persistence


def test_a_new_host_on_the_same_state_dir_resumes_surface_activity_and_world(
    state_dir, preset_file
):
    host = start_host(state_dir, preset_file)
    host.shell.set_surface("canvas")
    host.shell.set_activity("drawing")
    host.shell.create_world("lab")
    host.shell.switch_world("lab")
    call(host, "space_sketch_add_stroke", {"stroke": "kept"})
    host.close()

    again = start_host(state_dir, preset_file)

    assert again.shell.state() == host.shell.state()
    assert again.context() == {
        "surface": "canvas",
        "activity": "drawing",
        "canvas_visible": True,
        "world_id": "lab",
    }
    assert again.presets.manager.get_context() == again.context()
    assert tool_names(again) == tool_names(host)
    assert call(again, "space_sketch_count") == 1
    assert again.sketch.strokes == ["kept"]


def test_a_deleted_world_stays_deleted_after_restart(state_dir, preset_file):
    host = start_host(state_dir, preset_file)
    host.shell.create_world("scratch")
    host.shell.delete_world("scratch")
    host.close()
    again = SpaceHost(state_dir)
    assert again.shell.worlds == ["home"]


def test_a_corrupt_world_file_is_a_clear_error(state_dir, preset_file):
    host = start_host(state_dir, preset_file)
    path = state_dir / "worlds" / "home" / "sketch.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(PresetError, match="not valid JSON"):
        host.runtime("sketch")


def test_a_corrupt_shell_file_is_a_clear_error(state_dir):
    state_dir.mkdir(parents=True)
    (state_dir / "shell.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(PresetError, match=r"shell\.json"):
        SpaceHost(state_dir)


def test_write_json_atomic_round_trips_and_leaves_no_temp_file(tmp_path):
    target = tmp_path / "deep" / "state.json"
    write_json_atomic(target, {"a": [1, 2]})
    write_json_atomic(target, {"a": [3]})
    assert read_json(target) == {"a": [3]}
    assert [p.name for p in target.parent.iterdir()] == ["state.json"]
    assert read_json(tmp_path / "absent.json") is None


SLOW_WRITER = """
import os, sys, time
from pathlib import Path
from agent_presets.host import store

target, ready = Path(sys.argv[1]), Path(sys.argv[2])
real_fdopen = os.fdopen


class SlowFile:
    # Writes in small chunks with pauses, and says when it is half way.
    def __init__(self, handle):
        self.handle = handle

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.handle.close()

    def write(self, data):
        view = memoryview(data)
        chunk = 64 * 1024
        for offset in range(0, len(view), chunk):
            self.handle.write(view[offset : offset + chunk])
            self.handle.flush()
            if offset == 8 * chunk:
                ready.write_text("half written")
            time.sleep(0.01)
        return len(view)

    def flush(self):
        self.handle.flush()

    def fileno(self):
        return self.handle.fileno()


os.fdopen = lambda fd, mode: SlowFile(real_fdopen(fd, mode))
store.write_json_atomic(target, {"version": "new", "blob": "x" * 8_000_000})
"""


def test_write_atomic_keeps_the_old_content_when_the_writer_is_killed_mid_write(tmp_path):
    target = tmp_path / "shell.json"
    old = {"version": "old", "surface": "canvas"}
    write_json_atomic(target, old)
    script = tmp_path / "slow_writer.py"
    script.write_text(textwrap.dedent(SLOW_WRITER), encoding="utf-8")
    ready = tmp_path / "ready"

    process = subprocess.Popen([sys.executable, str(script), str(target), str(ready)])
    try:
        deadline = time.monotonic() + 30
        while not ready.exists():
            assert process.poll() is None, "the writer ended before it was half way"
            assert time.monotonic() < deadline, "the writer never got half way"
            time.sleep(0.01)
        temps = [p for p in tmp_path.iterdir() if p.name.startswith(".shell.json.")]
        assert len(temps) == 1 and temps[0].stat().st_size > 0  # mid-write, for real
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == -signal.SIGKILL

    assert json.loads(target.read_text(encoding="utf-8")) == old
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".shell.json.")]
    assert len(leftovers) <= 1
    assert all(name.endswith(".tmp") for name in leftovers)


def test_write_atomic_cleans_up_its_temp_file_when_writing_fails(tmp_path, monkeypatch):
    target = tmp_path / "data.bin"
    write_atomic(target, b"old")

    def broken_fsync(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="No space left"):
        write_atomic(target, b"new" * 1000)
    monkeypatch.undo()
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["data.bin"]


# ------------------------------------------------------------------ one writer per state directory

HOLDER = """
import os, subprocess, sys, time
import agent_presets_drawing
from agent_presets_general import SpaceHost

host = SpaceHost(sys.argv[1])
presets = host.start([agent_presets_drawing])
host.shell.set_surface("canvas")
host.shell.set_activity("drawing")
if len(sys.argv) > 2:
    # Inherits every fd not close-on-exec. Popen returns once the child has exec'd: a
    # forked child holds every fd until its exec, so "ready" must not come before it.
    subprocess.Popen(["sleep", "30"], close_fds=False)
insert = presets.tool_registry.get("space_drawing_insert_shape")
print("ready", flush=True)
for i in range(20):
    insert.run({"shape": "rect", "x": i, "y": 0, "width": 5, "height": 5})
    print(i + 1, flush=True)
time.sleep(300)
"""


def start_holder(state_dir: Path, *extra: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(state_dir), *extra],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "ready"
    return process


def kill_holder(process: subprocess.Popen[str]) -> None:
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    if process.stdout:
        process.stdout.close()


def test_a_second_host_on_a_state_dir_in_use_is_refused_naming_the_running_pid(state_dir):
    holder = start_holder(state_dir)
    try:
        with pytest.raises(StateLockedError) as info:
            SpaceHost(state_dir)
        message = str(info.value)
        assert f"PID {holder.pid}" in message
        assert "--state-dir" in message and "PRESETS_STATE_DIR" in message
        assert isinstance(info.value, PresetError)
    finally:
        kill_holder(holder)


def test_the_lock_dies_with_a_killed_server_and_its_acknowledged_writes_survive(state_dir):
    import agent_presets_drawing

    holder = start_holder(state_dir)
    try:
        assert holder.stdout is not None
        acknowledged = [holder.stdout.readline().strip() for _ in range(20)]
        assert acknowledged[-1] == "20"
        with pytest.raises(StateLockedError):
            SpaceHost(state_dir)
    finally:
        kill_holder(holder)
    with SpaceHost(state_dir) as host:  # no stale lock after kill -9
        presets = host.start([agent_presets_drawing])
        document = presets.tool_registry.get("space_drawing_inspect").run({})
        assert len(document["layers"][0]["objects"]) == 20


def test_a_child_process_does_not_keep_the_lock_after_the_server_dies(state_dir):
    holder = start_holder(state_dir, "spawn-child")
    try:
        with pytest.raises(StateLockedError):
            SpaceHost(state_dir)
    finally:
        os.kill(holder.pid, signal.SIGKILL)  # the server only; its `sleep` child lives on
        holder.wait(timeout=30)
    try:
        SpaceHost(state_dir).close()
    finally:
        kill_holder(holder)


def test_closing_a_host_frees_the_state_dir_and_commands_can_take_the_lock(state_dir):
    host = SpaceHost(state_dir)
    with pytest.raises(StateLockedError, match=f"PID {os.getpid()}"):
        acquire_state_lock(state_dir)
    host.close()
    with acquire_state_lock(state_dir) as lock:
        assert lock.held
        with pytest.raises(StateLockedError):
            SpaceHost(state_dir)
    assert not lock.held
    SpaceHost(state_dir).close()


# ------------------------------------------------------------------ the root and the server's files


@pytest.mark.parametrize(
    ("root", "relation"),
    [
        (".", "contains"),
        ("state", "is"),
        ("state/worlds", "lies inside"),
    ],
)
def test_a_root_overlapping_the_state_dir_is_refused(tmp_path, root, relation):
    state = tmp_path / "state"
    with pytest.raises(RootOverlapError, match=f"{relation} the state directory"):
        SpaceHost(state, root=tmp_path / root)


@pytest.mark.parametrize("root", [".", "plugins", "plugins/mine"])
def test_a_root_overlapping_a_plugins_folder_is_refused(tmp_path, root):
    work = tmp_path / "work"
    (work / "plugins" / "mine").mkdir(parents=True)
    with pytest.raises(RootOverlapError, match="a plugins folder"):
        SpaceHost(tmp_path / "state", root=work / root, plugin_dirs=[work / "plugins"])
    assert not (tmp_path / "state" / "state.lock").exists()  # refused before taking anything


def test_a_symlinked_root_cannot_hide_the_state_dir(tmp_path):
    (tmp_path / "state").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "state")
    with pytest.raises(RootOverlapError, match="the state directory"):
        SpaceHost(tmp_path / "state", root=tmp_path / "link")


def test_the_default_root_and_a_separate_root_are_accepted(tmp_path):
    with SpaceHost(tmp_path / "state") as host:
        assert host.root == (tmp_path / "state" / "files").resolve()
    with SpaceHost(tmp_path / "state", root=tmp_path / "work", plugin_dirs=[tmp_path / "p"]):
        pass
    check_root(tmp_path / "work", state_dir=tmp_path / "state", plugin_dirs=[tmp_path / "p"])


def test_serve_on_a_state_dir_in_use_stops_at_once_with_a_one_line_error(state_dir, tmp_path):
    from click.testing import CliRunner

    from agent_presets.cli import main

    with acquire_state_lock(state_dir):
        result = CliRunner().invoke(main, ["serve", "--state-dir", str(state_dir)])
    assert result.exit_code == 1
    assert f"PID {os.getpid()}" in result.output and "--state-dir" in result.output
    assert "Traceback" not in result.output

    outer = CliRunner().invoke(
        main, ["serve", "--state-dir", str(state_dir), "--root", str(tmp_path)]
    )
    assert outer.exit_code == 1
    assert "contains the state directory" in outer.output


def test_an_unreadable_state_database_is_a_clear_error_and_frees_the_lock(state_dir):
    state_dir.mkdir(parents=True)
    (state_dir / "state.db").write_bytes(b"this is not a database" * 100)
    with pytest.raises(PresetError, match=r"state\.db: the state database cannot be read"):
        SpaceHost(state_dir)
    acquire_state_lock(state_dir).release()  # the refused host let go of the lock


def _filled_state(state_dir: Path) -> Path:
    """A state database of a few dozen pages, closed (its log folded in)."""
    store = StateStore(state_dir / "state.db")
    table = store.table("drawing", "home")
    with table.transaction():
        for i in range(2000):
            table.put(f"obj/{i:05d}", {"x": i, "text": "abc" * 20})
        table.put("nan", float("nan"))  # Python's json writes it, SQLite's doubts it
    store.close()
    return state_dir / "state.db"


def test_a_sound_state_database_opens_whatever_python_wrote_into_it(state_dir):
    with SpaceHost(state_dir) as host:
        assert host.store.table("drawing", "home").is_empty()
    _filled_state(state_dir)
    with SpaceHost(state_dir) as host:
        table = host.store.table("drawing", "home")
        assert len(table.keys()) == 2001 and math.isnan(table.get("nan"))


def _refused_at_start(state_dir: Path) -> str:
    """The one-line error ``presets serve`` stops with; the lock is free again after it."""
    from click.testing import CliRunner

    from agent_presets.cli import main

    with pytest.raises(PresetError) as refused:
        SpaceHost(state_dir)
    acquire_state_lock(state_dir).release()
    result = CliRunner().invoke(main, ["serve", "--state-dir", str(state_dir)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert str(refused.value) in " ".join(result.output.split())
    message = str(refused.value)
    assert message.startswith(f"{state_dir.resolve() / 'state.db'}: the state database cannot")
    assert "restore it from a backup, or move it aside" in message
    assert "\n" not in message and len(message) < 800
    return message


def test_a_state_database_with_pages_damaged_mid_file_is_refused_at_start(state_dir):
    path = _filled_state(state_dir)
    data = bytearray(path.read_bytes())
    for i in range(64):
        data[len(data) // 2 + i] ^= 0xFF
    path.write_bytes(data)
    assert "(it is damaged: " in _refused_at_start(state_dir)


def test_a_state_database_row_with_a_flipped_byte_is_refused_at_start(state_dir):
    # The pages stay sound (quick_check passes); the value is no longer UTF-8.
    path = _filled_state(state_dir)
    data = path.read_bytes()
    at = data.index(b'{"x":1012,') + 20
    path.write_bytes(data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1 :])
    message = _refused_at_start(state_dir)
    assert "(its row 'obj/01012' of 'drawing' in world 'home' is not JSON)" in message


def test_a_state_database_row_that_is_not_json_is_refused_at_start(state_dir):
    import sqlite3

    path = _filled_state(state_dir)
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute("UPDATE rows SET value = '{not json' WHERE key = 'obj/00007'")
    message = _refused_at_start(state_dir)
    assert "(its row 'obj/00007' of 'drawing' in world 'home' is not JSON)" in message


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def test_the_state_directory_and_database_are_private_from_creation(state_dir, preset_file):
    host = start_host(state_dir, preset_file)
    host.partition_runtime("home", "sketch").add("a stroke")
    names = {p.name: _mode(p) for p in state_dir.iterdir() if p.name.startswith("state")}
    host.close()
    assert _mode(state_dir) == 0o700
    assert names["state.db"] == 0o600
    assert names.get("state.db-wal") == 0o600 and names.get("state.db-shm") == 0o600


def test_a_readable_state_directory_and_database_are_tightened_at_start(state_dir, preset_file):
    start_host(state_dir, preset_file).close()
    import sqlite3

    # What an earlier version left: a 0755 folder, a 0644 database, a log beside it.
    db = sqlite3.connect(state_dir / "state.db")
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE t (x)")
    files = [state_dir / "state.db", state_dir / "state.db-wal", state_dir / "state.db-shm"]
    for path in files:
        path.chmod(0o644)
    state_dir.chmod(0o755)
    host = SpaceHost(state_dir)
    db.close()
    assert _mode(state_dir) == 0o700
    assert [_mode(p) for p in files] == [0o600, 0o600, 0o600]
    host.close()


# ------------------------------------------------------------------ the state database


def test_a_table_keeps_rows_per_runtime_and_world_and_a_failed_transaction_writes_nothing(
    tmp_path,
):
    store = StateStore(tmp_path / "state.db")
    table = store.table("notes", "home")
    table.put("note/002", "b")
    table.put("note/001", {"text": "a"})
    table.put("meta", [1, 2])
    store.table("notes", "lab").put("note/001", "other world")
    store.table("drawing", "home").put("note/001", "other runtime")
    assert table.items("note/") == [("note/001", {"text": "a"}), ("note/002", "b")]
    assert table.get("meta") == [1, 2] and table.get("absent", 0) == 0
    with pytest.raises(RuntimeError), table.transaction():
        table.put("note/003", "c")
        table.delete("note/001")
        raise RuntimeError("the change failed half way")
    assert table.keys() == ["meta", "note/001", "note/002"]
    table.delete("note/002")
    store.drop_world("lab")
    store.close()

    again = StateStore(tmp_path / "state.db")
    assert again.table("notes", "home").keys() == ["meta", "note/001"]
    assert again.table("notes", "lab").is_empty()
    assert again.table("drawing", "home").get("note/001") == "other runtime"
    again.close()


def test_a_deleted_world_takes_its_rows_with_it(state_dir, preset_file):
    host = start_host(state_dir, preset_file)
    host.shell.create_world("scratch")
    host.partition_runtime("scratch", "sketch").add("gone soon")
    assert not host.store.table("sketch", "scratch").is_empty()
    host.shell.delete_world("scratch")
    assert host.store.table("sketch", "scratch").is_empty()
