"""The CI step the README recommends for a plugin catches what the whole catalog would."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from agent_presets.cli import main

README = Path(__file__).resolve().parents[2] / "README.md"

PLUGIN = """
from agent_presets import AdapterKit, hookimpl, object_schema

KIT = AdapterKit("notes")


@hookimpl
def presets_context_fields():
    return [{"name": "activity", "type": "string", "values": ["notes"]}]


@hookimpl
def presets_tool_adapters():
    return [KIT.adapter("notes.add", lambda n, a: None, description="Add.",
                        input_schema=object_schema())]
"""
PRESETS = """\
presets:
  - name: notes-tools
    default_state: auto
    risk: normal
    contexts: [{surface: canvas, activity: %s}]
    tool_ids: [notes.add]
"""


def readme_ci_step() -> list[str]:
    [line] = [line for line in README.read_text().splitlines() if "# in a plugin's CI" in line]
    command = shlex.split(line.split("#", 1)[0])
    assert command[:3] == ["uv", "run", "presets"], line
    return command[3:]


@pytest.fixture
def plugin_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "notes.py").write_text(PLUGIN)
    monkeypatch.setenv("PRESETS_PLUGINS_DIR", str(folder))  # the plugin, as if installed
    monkeypatch.delenv("PRESETS_LOAD_PLUGINS", raising=False)
    return folder


def run_step(presets_file: Path) -> tuple[int, str]:
    args = [str(presets_file) if a == "path/to/presets.yaml" else a for a in readme_ci_step()]
    assert str(presets_file) in args, args
    result = CliRunner().invoke(main, args)
    return result.exit_code, result.output


def test_the_readme_ci_step_catches_a_context_value_typo(plugin_folder: Path) -> None:
    presets_file = plugin_folder / "presets.yaml"
    presets_file.write_text(PRESETS % "notse")
    code, output = run_step(presets_file)
    assert code == 1, output
    assert f"::error file={presets_file},line=5," in output
    assert "did you mean 'notes'?" in output


def test_the_readme_ci_step_passes_the_same_file_without_the_typo(plugin_folder: Path) -> None:
    presets_file = plugin_folder / "presets.yaml"
    presets_file.write_text(PRESETS % "notes")
    code, output = run_step(presets_file)
    assert code == 0, output
