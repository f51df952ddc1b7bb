"""The pre-commit hook this repository publishes (`.pre-commit-hooks.yaml`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import click
import yaml

from agent_presets.cli import main
from agent_presets.lib.plugins import load_plugins

REPO = Path(__file__).resolve().parents[2]


def hook() -> dict[str, Any]:
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert isinstance(hooks, list)
    (found,) = (h for h in hooks if h["id"] == "presets-validate")
    assert isinstance(found, dict)
    return found


def test_presets_validate_hook_runs_the_installed_command_on_the_files_given() -> None:
    found = hook()
    assert {"id", "name", "entry", "language"} <= found.keys()
    assert found["language"] == "system"
    assert found["pass_filenames"] is True
    command, subcommand, *options = found["entry"].split()
    assert command == "presets"
    assert main.get_command(click.Context(main), subcommand) is not None
    assert options == ["--installed"]  # against the installed catalog, not the files alone


def test_presets_validate_hook_catches_a_tool_id_typo_the_files_alone_would_not(
    tmp_path: Path,
) -> None:
    from click.testing import CliRunner

    changed = tmp_path / "presets.yaml"
    changed.write_text(
        "presets:\n  - name: my-tools\n    default_state: auto\n    risk: normal\n"
        "    contexts: [{surface: any}]\n    tool_ids: [graph.add-nod]\n"
    )
    _, *args = hook()["entry"].split()
    result = CliRunner().invoke(main, [*args, str(changed)])
    assert result.exit_code == 1
    assert "did you mean 'graph.add-node'?" in result.stdout
    assert CliRunner().invoke(main, ["validate", str(changed)]).exit_code == 0


def test_presets_validate_hook_matches_every_built_in_preset_file() -> None:
    pattern = re.compile(hook()["files"])
    shipped = [
        Path(str(item)).resolve()
        for _, files in load_plugins(env={}).call_each("presets_preset_files")
        for item in files
    ]
    assert len(shipped) >= 5
    for path in shipped:
        # pre-commit matches the path relative to the repository, with forward slashes; an
        # installed copy (the release workflow tests the wheels) is matched at its source.
        package = path.parent.name
        [source] = REPO.glob(f"plugins/*/src/{package}/{path.name}")
        relative = source.relative_to(REPO).as_posix()
        assert pattern.search(relative), relative


def test_presets_validate_hook_leaves_other_yaml_alone() -> None:
    pattern = re.compile(hook()["files"])
    for path in ("presets.yaml", "presets-extra.yml", "src/my_plugin/presets.yaml"):
        assert pattern.search(path), path
    for path in (
        ".pre-commit-config.yaml",
        ".pre-commit-hooks.yaml",
        ".github/workflows/ci.yml",
        "presets/config.yaml",
        "my-presets.yaml",
        "schemas/preset.schema.json",
        "presets.yaml.bak",
    ):
        assert not pattern.search(path), path


def test_the_local_hook_in_docs_plugins_is_the_published_one() -> None:
    text = (REPO / "docs" / "plugins.md").read_text()
    [block] = [b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if "repo: local" in b]
    [local] = yaml.safe_load(block)["repos"]
    documented = next(h for h in local["hooks"] if h["id"] == "presets-validate")
    for key in ("entry", "language", "files", "require_serial"):
        assert documented[key] == hook()[key], key
