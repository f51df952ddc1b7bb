"""`presets validate` as a plugin's CI meets it: the root cause first, what follows from it
marked, in every format and under PRESETS_STRICT=1; clashes that only a later override
would meet are caught before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from agent_presets.cli import main

KANBAN_PRESETS = """\
presets:
  - name: kanban-tools
    default_state: auto
    risk: normal
    contexts: [{surface: canvas, activity: kanban}]
    tool_ids: [kanban.add-note]
"""

VARIANTS_MODULE = """\
from agent_presets import ToolAdapter, hookimpl


def _view(app, arguments):
    return "view"


@hookimpl
def presets_tool_adapters():
    return [
        ToolAdapter(tool_id, name="view", description="View.", input_schema={"type": "object"},
                    handler=_view)
        for tool_id in ("view.canvas", "view.forced")
    ]
"""

VARIANTS_PRESETS = """\
presets:
  - name: view-canvas
    default_state: auto
    risk: normal
    contexts: [{surface: canvas}]
    tool_ids: [view.canvas]
  - name: view-forced
    default_state: off
    risk: normal
    contexts: []
    tool_ids: [view.forced]
"""


def validate(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["validate", *args])
    return result.exit_code, result.stdout


@pytest.fixture
def broken(tmp_path: Path) -> tuple[Path, Path]:
    """A plugins folder whose kanban plugin fails to import, and its presets file."""
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "kanban.py").write_text("import no_such_dependency\n")
    presets = tmp_path / "presets.yaml"
    presets.write_text(KANBAN_PRESETS)
    return folder, presets


@pytest.mark.parametrize("strict", ["", "1"])
def test_a_plugin_that_fails_to_load_comes_first_and_what_follows_is_marked(
    broken: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, strict: str
) -> None:
    monkeypatch.setenv("PRESETS_STRICT", strict)
    folder, presets = broken
    where = ("--installed", str(presets), "--plugins-dir", str(folder))
    code, out = validate(*where, "--format", "json")
    assert code == 1
    problems = json.loads(out)["problems"]
    assert problems[0]["plugin"] is True and "no_such_dependency" in problems[0]["message"]
    assert [p["follows_from"] for p in problems[1:]] == [["kanban"]] * (len(problems) - 1)
    assert "this may follow from plugin(s) 'kanban' failing to load" in problems[1]["message"]
    code, out = validate(*where, "--format", "github")
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith("::error file=") and "no_such_dependency" in lines[0]
    assert all(line.startswith("::error file=") for line in lines)
    assert len(lines) == len(problems)


def test_an_undeclared_context_value_says_how_to_declare_it(tmp_path: Path) -> None:
    presets = tmp_path / "presets.yaml"
    presets.write_text(KANBAN_PRESETS.replace("kanban.add-note", "general.nothing"))
    code, out = validate("--installed", str(presets))
    assert code == 1
    assert (
        "declare it in its presets_context_fields hook: {'name': 'activity', 'values': "
        "['kanban']}" in out
    )


def test_variants_that_turning_a_preset_on_would_offer_together_are_caught(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "viewer.py").write_text(VARIANTS_MODULE)
    (folder / "viewer.yaml").write_text(VARIANTS_PRESETS)
    code, out = validate("--plugins-dir", str(folder))
    assert code == 1
    [line] = [line for line in out.splitlines() if "view-forced" in line]
    assert line.startswith(f"{folder / 'viewer.yaml'}:11:16: preset 'view-forced': ")
    assert "turning 'view-forced' on while 'view-canvas' is active" in line


def test_one_plugin_giving_one_tool_id_twice_is_told_so(tmp_path: Path) -> None:
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "viewer.py").write_text(VARIANTS_MODULE.replace('"view.forced"', '"view.canvas"'))
    (folder / "viewer.yaml").write_text(VARIANTS_PRESETS.split("  - name: view-forced")[0])
    code, out = validate("--plugins-dir", str(folder))
    assert code == 1
    assert "tool adapter 'view.canvas' is made twice by plugin viewer" in out
    assert "by viewer and by viewer" not in out
