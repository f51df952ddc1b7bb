"""``presets doctor``: which features this machine can run, and what to install for the rest."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agent_presets.cli import main


def doctor(*args: str) -> tuple[int, Any, str]:
    result = CliRunner().invoke(main, ["doctor", "--json", *args])
    return result.exit_code, json.loads(result.stdout), result.stderr


def test_a_machine_without_bubblewrap_is_told_the_shell_preset_needs_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on it
    code, report, _ = doctor()
    assert code == 0
    presets = {f["name"]: f for f in report["features"] if f["kind"] == "preset"}
    shell = presets.pop("general-shell-tools")
    assert shell["ready"] is False and shell["plugin"] == "general"
    assert "the Debian/Ubuntu package 'bubblewrap'" in shell["detail"]
    assert all(f["ready"] for f in presets.values())
    text = CliRunner().invoke(main, ["doctor"]).stdout
    assert "general-shell-tools  no" in text and "plugin general" in text


def test_a_missing_extra_says_which_extra_installs_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)  # as if the package were not installed
    _, report, _ = doctor()
    [redis] = [f for f in report["features"] if f["kind"] == "extra" and f["name"] == "redis"]
    assert redis["ready"] is False
    assert redis["detail"].endswith("pip install 'agent-presets[redis]'")


def test_a_plugin_that_fails_to_load_makes_doctor_fail(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("import no_such_module_here\n")
    code, report, _ = doctor("--plugins-dir", str(tmp_path))
    assert code == 1
    assert any("no_such_module_here" in p for p in report["problems"])


def test_doctor_reports_a_plugin_that_fails_to_load_under_strict_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRESETS_STRICT", "1")
    (tmp_path / "broken.py").write_text("import no_such_module_here\n")
    code, report, _ = doctor("--plugins-dir", str(tmp_path))
    assert code == 1
    assert any("no_such_module_here" in p for p in report["problems"])
    assert any(f["name"] == "general-theme-tools" and f["ready"] for f in report["features"])
