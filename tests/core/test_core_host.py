"""The headless host: shell changes drive the tool list, state survives restarts and crashes."""

from __future__ import annotations

import json
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
from agent_presets.host import HeadlessHost
from agent_presets.host.store import read_json, write_atomic, write_json_atomic
from agent_presets.model import PresetError, ToolCallError
from agent_presets.tools import ToolRegistryChange

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
    def presets_headless_runtime(self, host: HeadlessHost) -> None:
        host.add_world_runtime("sketch", Sketch)


class NoRuntimePlugin(SketchPlugin):
    """The same presets and adapters, but no runtime attached."""

    @hookimpl
    def presets_headless_runtime(self, host: HeadlessHost) -> None:
        return None


@pytest.fixture
def preset_file(tmp_path: Path) -> Path:
    path = tmp_path / "sketch.yaml"
    path.write_text(PRESETS_YAML, encoding="utf-8")
    return path


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    return tmp_path / "state"


def start_host(state_dir: Path, preset_file: Path, plugin: type = SketchPlugin) -> HeadlessHost:
    host = HeadlessHost(state_dir)
    host.start(plugins=[plugin(preset_file)])
    return host


def tool_names(host: HeadlessHost) -> list[str]:
    assert host.presets is not None
    return host.presets.tool_registry.names()


def call(host: HeadlessHost, name: str, arguments: dict[str, Any] | None = None) -> Any:
    assert host.presets is not None
    tool = host.presets.tool_registry.get(name)
    assert tool is not None, f"{name} is not in the tool list: {tool_names(host)}"
    return tool.run(arguments or {})


# ------------------------------------------------------------------ runtimes and context


def test_hook_presets_headless_runtime_attaches_runtimes_to_the_host(state_dir, preset_file):
    host = start_host(state_dir, preset_file)
    assert host.runtime_names() == ["sketch"]
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
    assert host.world_runtime("home", "sketch").strokes == ["home-1"]
    assert host.world_runtime("lab", "sketch").strokes == ["lab-1"]


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
        with pytest.raises(ToolCallError):
            change()
    assert host.shell.state() == before
    after = (state_dir / "shell.json").read_bytes() if (state_dir / "shell.json").exists() else None
    assert after == saved
    assert tool_names(host) == ["space_app_switch_surface", "space_scene_look"]


def test_two_plugins_attaching_one_runtime_name_is_an_error(state_dir):
    host = HeadlessHost(state_dir)
    host.add_world_runtime("sketch", Sketch)
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
    again = HeadlessHost(state_dir)
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
        HeadlessHost(state_dir)


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
