"""What a release needs from the repository: complete metadata in every distribution, one
version source each, a licence, a changelog entry, and the release workflow's jobs.

The built artefacts themselves (twine check, plain pip into a fresh venv) are checked by
tests/e2e/test_e2e_wheels.py in the full lane.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from agent_presets import __version__
from agent_presets_general import SPACE_DEFAULTS

REPO = Path(__file__).resolve().parents[2]
BUILTINS = ("drawing", "general", "graph", "scene", "units")
FOLDERS = [REPO / "core", *(REPO / "plugins" / name for name in BUILTINS)]

SPACE = SPACE_DEFAULTS.namespace  # the Space app's, which these tools are served in


def project(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = tomllib.loads((folder / "pyproject.toml").read_text())["project"]
    return data


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda f: f.name)
def test_every_distribution_has_a_readme_a_licence_and_classifiers(folder: Path) -> None:
    meta = project(folder)
    assert meta["readme"] == "README.md" and (folder / "README.md").is_file()
    assert meta["license"] == "MIT" and meta["license-files"] == ["LICENSE"]
    assert (folder / "LICENSE").read_text() == (REPO / "LICENSE").read_text()
    classifiers = meta["classifiers"]
    for needed in ("Development Status ::", "Programming Language :: Python :: 3.11", "Typed"):
        assert any(needed in c for c in classifiers), (folder.name, needed)
    assert meta["description"] and meta["keywords"]


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda f: f.name)
def test_every_distribution_has_one_version_source_and_one_version(folder: Path) -> None:
    meta = project(folder)
    if folder.name == "core":
        # Read by hatch from the module that --version and __version__ read.
        assert "version" not in meta and meta["dynamic"] == ["version"]
        hatch = tomllib.loads((folder / "pyproject.toml").read_text())["tool"]["hatch"]
        assert hatch["version"]["path"] == "src/agent_presets/_version.py"
        return
    assert meta["version"] == __version__
    package = folder / "src" / f"agent_presets_{folder.name}"
    assert not any("__version__ =" in p.read_text() for p in package.rglob("*.py"))


def test_the_changelog_has_an_entry_for_this_version() -> None:
    changelog = (REPO / "CHANGELOG.md").read_text()
    assert re.search(rf"^## {re.escape(__version__)}\b", changelog, re.M)


@pytest.mark.parametrize("name", BUILTINS)
def test_each_plugin_readme_lists_its_presets_as_they_ship(name: str) -> None:
    from importlib import import_module

    from agent_presets.testing import mcp_name, plugin_adapters, plugin_presets

    module = import_module(f"agent_presets_{name}")
    adapters = plugin_adapters(module)
    expected = [
        f"| `{p.name}` | {p.default_state} | {p.risk} | "
        + ", ".join(f"`{mcp_name(adapters[t], SPACE)}`" for t in p.tool_ids)
        + " |"
        for p in plugin_presets(module)
    ]
    text = (REPO / "plugins" / name / "README.md").read_text()
    assert [line for line in text.splitlines() if line.startswith("| `")] == expected


def test_the_release_workflow_builds_tests_the_wheels_and_publishes_only_on_a_tag() -> None:
    workflow = yaml.safe_load((REPO / ".github/workflows/release.yml").read_text())
    on = workflow[True]  # YAML 1.1 reads the key `on` as true
    assert on["push"]["tags"] == ["v*"]
    jobs = workflow["jobs"]
    assert jobs["test"]["needs"] == "build" and jobs["publish"]["needs"] == "test"
    assert jobs["publish"]["if"] == "startsWith(github.ref, 'refs/tags/v')"
    assert jobs["publish"]["permissions"] == {"id-token": "write"}
    build = [s.get("run", "") for s in jobs["build"]["steps"]]
    assert "uv build --all-packages --out-dir dist" in build
    assert "uvx twine check --strict dist/*" in build
    test = [s.get("run", "") for s in jobs["test"]["steps"]]
    assert ".release-venv/bin/python -m pip install dist/*.whl" in test
    assert test[-1] == ".release-venv/bin/python -m pytest -n auto -q"
