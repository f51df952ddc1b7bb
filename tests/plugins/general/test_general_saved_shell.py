"""A state folder made before the Space app left the core resumes as it was, on disk as it was.

``SHELL_JSON`` is the ``shell.json`` the core's own headless host wrote (switched to the
canvas, drawing, in a second world ``lab``, the dark theme, the canvas hidden), byte for
byte. The rows of a runtime are kept per world in the state database, as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import agent_presets_drawing
import agent_presets_general
from agent_presets import hookimpl
from agent_presets.host import ServedHost, StateStore
from agent_presets_general import SpaceHost

SHELL_JSON = """\
{
 "activity": "drawing",
 "canvas_visible": false,
 "surface": "canvas",
 "theme": "dark",
 "world": "lab",
 "worlds": [
  "home",
  "lab"
 ]
}
"""


def old_state(tmp_path: Path) -> Path:
    state = tmp_path / "state"
    state.mkdir()
    (state / "shell.json").write_text(SHELL_JSON, encoding="utf-8")
    store = StateStore(state / "state.db")
    store.table("notes", "lab").put("n1", "kept in lab")
    store.close()
    return state


def test_a_state_folder_of_the_core_headless_host_resumes_under_presets_serve(
    tmp_path: Path,
) -> None:
    state = old_state(tmp_path)
    # What `presets serve` starts: the bare host, made the Space app by the general plugin.
    with ServedHost(state) as host:
        presets = host.start([agent_presets_general, agent_presets_drawing])
        assert presets.manager.get_context() == {
            "surface": "canvas",
            "activity": "drawing",
            "canvas_visible": False,
            "world_id": "lab",
        }
        assert (host.shell.theme, host.shell.worlds) == ("dark", ["home", "lab"])
        assert "space_drawing_insert_shape" in presets.tool_registry.names()
        assert host.partitions() == ["home", "lab"]
        host.shell.set_theme("dark")  # a change that changes nothing: written as before
    assert (state / "shell.json").read_text(encoding="utf-8") == SHELL_JSON
    assert not (state / "context.json").exists()  # the shell keeps the context, as before


class NotesRuntime:
    __name__ = "notes"

    @hookimpl
    def presets_headless_runtime(self, host: Any) -> None:
        host.add_table_runtime("notes", lambda table: table)


def test_a_runtimes_rows_stay_in_their_world(tmp_path: Path) -> None:
    state = old_state(tmp_path)
    with SpaceHost(state) as host:
        host.start([NotesRuntime(), agent_presets_drawing])
        assert host.runtime("notes").get("n1") == "kept in lab"  # the current world's
        host.shell.switch_world("home")
        assert host.runtime("notes").get("n1") is None
