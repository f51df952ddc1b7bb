"""``presets new-plugin``: the plugin it writes works as written, outside this repository.

The quick tests check the command's refusals and the files it writes. The
slow one is what a plugin author does: the core's wheel (built here) goes
into a fresh virtual environment outside the repository with its test kit,
the generated plugin is installed into it in development mode with its dev
extra, and then its own tests, ruff, ``presets validate`` (its file by path,
then the installed catalog) and ``presets serve`` pass, with no edit.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from e2e.test_e2e_wheels import BIN, artifact, clean_env, presets, run, serve

from agent_presets.cli import main
from agent_presets.cli.newplugin import install_step
from agent_presets.lib.loader import load_preset_file

REPO = Path(__file__).resolve().parents[2]
FILES = [
    ".github/workflows/ci.yml",
    ".gitignore",
    ".pre-commit-config.yaml",
    "README.md",
    "pyproject.toml",
    "schemas/preset.schema.json",
    "src/agent_presets_time_tracker/__init__.py",
    "src/agent_presets_time_tracker/presets.yaml",
    "tests/test_time_tracker.py",
]


def new_plugin(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["new-plugin", *args])
    return result.exit_code, result.output


def test_new_plugin_writes_a_complete_plugin(tmp_path: Path) -> None:
    target = tmp_path / "tracker"
    code, output = new_plugin("time-tracker", "--dir", str(target))
    assert code == 0, output
    assert sorted(str(p.relative_to(target)) for p in target.rglob("*") if p.is_file()) == FILES
    assert "wrote agent-presets-time-tracker" in output

    project = tomllib.loads((target / "pyproject.toml").read_text())
    assert project["project"]["name"] == "agent-presets-time-tracker"
    assert project["project"]["dependencies"] == ["agent-presets>=0.1"]
    assert project["project"]["entry-points"]["agent_presets"] == {
        "time-tracker": "agent_presets_time_tracker"
    }
    assert "agent-presets[testing]>=0.1" in project["project"]["optional-dependencies"]["dev"]

    presets_file = target / "src/agent_presets_time_tracker/presets.yaml"
    first_line = presets_file.read_text().splitlines()[0]
    assert first_line == "# yaml-language-server: $schema=../../schemas/preset.schema.json"
    assert (presets_file.parent / first_line.split("=", 1)[1]).resolve().is_file()
    assert [p.name for p in load_preset_file(presets_file)] == [
        "time-tracker-read-tools",
        "time-tracker-edit-tools",
    ]
    schema = json.loads((target / "schemas/preset.schema.json").read_text())
    assert schema == json.loads((REPO / "schemas/preset.schema.json").read_text())


def test_the_pre_commit_hook_is_the_published_one_as_a_local_hook(tmp_path: Path) -> None:
    new_plugin("notes", "--dir", str(tmp_path / "p"))
    config = yaml.safe_load((tmp_path / "p/.pre-commit-config.yaml").read_text())
    [published] = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    [local] = config["repos"]
    assert local["repo"] == "local"
    hook = next(h for h in local["hooks"] if h["id"] == "presets-validate")
    for key in ("entry", "language", "files", "require_serial"):
        assert hook[key] == published[key], key


def test_the_workflow_validates_with_github_annotations_and_runs_pytest(tmp_path: Path) -> None:
    new_plugin("notes", "--dir", str(tmp_path / "p"))
    workflow = yaml.safe_load((tmp_path / "p/.github/workflows/ci.yml").read_text())
    steps = [s.get("run", "") for s in workflow["jobs"]["test"]["steps"]]
    assert (
        "presets validate --installed src/agent_presets_notes/presets.yaml --format github" in steps
    )
    assert "python -m pytest" in steps


def test_the_generated_plugin_declares_its_context_its_tests_and_ruff_pass(tmp_path: Path) -> None:
    # The quick form of the slow test below: this environment's core and test kit, the
    # plugin on the path instead of installed. Its tests start the served host, which
    # refuses an undeclared view and fills the prompts' {{tool.id}} placeholders.
    target = tmp_path / "tracker"
    assert new_plugin("time-tracker", "--dir", str(target))[0] == 0
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRESETS_")}
    env["PYTHONPATH"] = str(target / "src")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"],
        cwd=target,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "7 passed" in done.stdout
    for check in (["check"], ["format", "--check"]):  # with the generated ruff settings
        linted = subprocess.run(
            [sys.executable, "-m", "ruff", *check, "--no-cache", "."],
            cwd=target,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert linted.returncode == 0, linted.stdout + linted.stderr


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("Notes", "is not a plugin name"),
        ("my notes", "is not a plugin name"),
        ("notes-", "is not a plugin name"),
        ("9lives", "is not a plugin name"),
        ("x" * 41, "is not a plugin name"),
        ("agent-presets-notes", "give the plugin's short name ('notes')"),
        ("class", "is a Python keyword"),
    ],
)
def test_a_bad_name_is_a_usage_error(tmp_path: Path, name: str, message: str) -> None:
    code, output = new_plugin(name, "--dir", str(tmp_path / "p"))
    assert code == 2
    assert message in output
    assert not (tmp_path / "p").exists()


def test_a_folder_that_is_not_empty_is_refused_and_left_alone(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    code, output = new_plugin("notes", "--dir", str(tmp_path))
    assert code == 2
    assert "already exists and is not an empty folder" in output
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


def test_an_empty_folder_is_used_and_the_default_folder_is_the_distribution(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "empty").mkdir()
    assert new_plugin("notes", "--dir", str(tmp_path / "empty"))[0] == 0
    assert (tmp_path / "empty/pyproject.toml").is_file()
    monkeypatch.chdir(tmp_path)
    assert new_plugin("notes")[0] == 0
    assert (tmp_path / "agent-presets-notes/pyproject.toml").is_file()


def offline_pip(folder: Path, uv: str, python: str) -> Path:
    """A folder with ``python3`` and ``pip`` that make and fill environments with uv, offline.

    ``python3 -m venv DIR`` is ``uv venv DIR`` (of ``python``), so the printed
    step's fresh environment is made as it says; ``pip`` is ``uv pip
    --offline`` into the active one (``VIRTUAL_ENV``, which activating it
    sets). Offline: no package index is asked for anything, so the core can
    only come from where the printed step says; the other dependencies come
    from uv's cache, filled by the first environment.
    """
    folder.mkdir()
    pip = folder / "pip"
    pip.write_text(
        f'#!/bin/sh\ncommand="$1"\nshift\nexec {shlex.quote(uv)} pip "$command" --offline '
        '--quiet --python "$VIRTUAL_ENV/bin/python" "$@"\n'
    )
    venv = folder / "python3"
    venv.write_text(
        '#!/bin/sh\n[ "$1 $2" = "-m venv" ] || exit 2\n'
        f'exec {shlex.quote(uv)} venv --quiet --python {shlex.quote(python)} "$3"\n'
    )
    for shim in (pip, venv):
        shim.chmod(0o755)
    return folder


def run_as_printed(step: str, cwd: Path, path: list[Path]) -> subprocess.CompletedProcess[str]:
    env = clean_env()
    env["PATH"] = os.pathsep.join([*map(str, path), env.get("PATH", "")])
    done = subprocess.run(
        ["sh", "-c", step], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"{step}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    return done


@pytest.mark.slow
def test_a_generated_plugin_installed_outside_the_repository_passes_its_checks_and_serves(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    uv = shutil.which("uv")
    assert uv is not None, "uv is not on PATH; this test builds and installs with it"
    outside = tmp_path_factory.mktemp("outside")
    assert REPO not in outside.parents
    dist = outside / "dist"
    run([uv, "build", "--package", "agent-presets", "--wheel", "--quiet", "-o", str(dist)], REPO)
    core = artifact(dist, "agent-presets", ".whl")

    # The first environment: the core from its wheel, as an author who got the wheel has it
    # (no index serves agent-presets). Installing the tools here fills uv's cache.
    first = outside / "first"
    run([uv, "venv", "--quiet", "--python", sys.executable, str(first)], outside)
    tools = ["ruff>=0.6", "pytest>=8", "hatchling"]
    run(
        [
            uv,
            "pip",
            "install",
            "--quiet",
            "--python",
            str(first / BIN / "python"),
            f"{core}[testing]",
            *tools,
        ],
        outside,
    )

    # Its `presets` writes the plugin with no option, and prints the next step.
    written = presets(first, "new-plugin", "time-tracker", cwd=outside).stdout
    [step] = [
        line.removeprefix("next: ") for line in written.splitlines() if line.startswith("next: ")
    ]
    assert step == (
        "cd agent-presets-time-tracker && python3 -m venv .venv && . .venv/bin/activate && "
        f'pip install {core} -e ".[dev]" && pytest'
    )

    # The step, as printed: its own fresh environment, with no index at all.
    shim = offline_pip(outside / "shim", uv, sys.executable)
    tested = run_as_printed(step, outside, [shim])
    assert "7 passed" in tested.stdout

    project = outside / "agent-presets-time-tracker"
    venv = project / ".venv"
    run([str(venv / BIN / "ruff"), "check", "--no-cache", "."], project)
    run([str(venv / BIN / "ruff"), "format", "--check", "--no-cache", "."], project)
    workflow = yaml.safe_load((project / ".github/workflows/ci.yml").read_text())
    checks = [
        shlex.split(s["run"])[1:]
        for s in workflow["jobs"]["test"]["steps"]
        if s.get("run", "").startswith("presets validate")
    ]
    assert checks
    for check in checks:
        presets(venv, *check, cwd=project)
    # The workflow's checks catch a misspelt context value, on its line.
    presets_file = project / "src/agent_presets_time_tracker/presets.yaml"
    good = presets_file.read_text()
    presets_file.write_text(good.replace("view: time-tracker}", "view: time-trakcer}"))
    caught = [presets(venv, *check, cwd=project, expect=1).stdout for check in checks]
    assert "did you mean 'time-tracker'?" in caught[0]
    assert "::error file=" in caught[0]
    presets_file.write_text(good)

    checked = json.loads(presets(venv, "validate", "--format", "json", cwd=outside).stdout)
    assert checked["valid"] is True
    listed = json.loads(presets(venv, "plugins", "--json", cwd=outside).stdout)
    assert [(p["name"], p["distribution"], p["tools"]) for p in listed["plugins"]] == [
        ("time-tracker", "agent-presets-time-tracker", 2)
    ]

    with serve(venv, outside) as server:
        # The plugin's tool, beside the server's own request tool; only the core is
        # installed, so no app plugin gives the host a namespace.
        assert sorted(server.tool_names()) == ["presets_request", "time_tracker_list_notes"]
        assert json.loads(server.call("time_tracker_list_notes", {})) == {"notes": []}


class Installed:
    """An ``agent-presets`` distribution whose install record says ``record``."""

    def __init__(self, record: dict[str, object] | None) -> None:
        self.record = record

    def read_text(self, name: str) -> str | None:
        assert name == "direct_url.json"
        return None if self.record is None else json.dumps(self.record)


@pytest.mark.parametrize(
    ("record", "step"),
    [
        (None, 'pip install -e ".[dev]"'),  # from an index, which serves it again
        ({"url": "file:///nowhere/core", "dir_info": {}}, 'pip install -e ".[dev]"'),  # gone
        (
            {"url": "git+https://example.org/ap.git", "subdirectory": "core"},
            "pip install 'agent-presets @ git+https://example.org/ap.git' -e \".[dev]\"",
        ),
        (
            {
                "url": "https://example.org/ap.git",
                "vcs_info": {"vcs": "git", "commit_id": "abc123"},
                "subdirectory": "core",
            },
            "pip install 'agent-presets @ git+https://example.org/ap.git@abc123"
            '#subdirectory=core\' -e ".[dev]"',
        ),
    ],
)
def test_the_printed_step_installs_the_core_from_where_it_came(
    monkeypatch: pytest.MonkeyPatch, record: dict[str, object] | None, step: str
) -> None:
    monkeypatch.setattr("importlib.metadata.distribution", lambda name: Installed(record))
    assert install_step() == step


def test_the_printed_step_names_a_local_core_folder_or_wheel(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    folder = tmp_path / "my core"
    folder.mkdir()
    wheel = tmp_path / "agent_presets-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"")
    for record, step in [
        (
            {"url": folder.as_uri(), "dir_info": {"editable": True}},
            f"pip install -e '{folder}' -e \".[dev]\"",
        ),
        ({"url": folder.as_uri(), "dir_info": {}}, f"pip install '{folder}' -e \".[dev]\""),
        ({"url": wheel.as_uri(), "archive_info": {}}, f'pip install {wheel} -e ".[dev]"'),
    ]:
        monkeypatch.setattr("importlib.metadata.distribution", lambda name, r=record: Installed(r))
        assert install_step() == step
