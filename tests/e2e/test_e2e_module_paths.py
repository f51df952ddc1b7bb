"""The import paths and entry points code outside this repo may rely on."""

from __future__ import annotations

import subprocess
import sys

import agent_presets.mcpserver as mcpserver
import agent_presets.server as old_server


def test_the_old_server_module_re_exports_the_mcpserver_package() -> None:
    for name in old_server.__all__:
        assert getattr(old_server, name) is getattr(mcpserver, name), name
    assert set(old_server.__all__) <= set(mcpserver.__all__)


def test_both_module_entry_points_run_the_presets_command() -> None:
    for module in ("agent_presets", "agent_presets.cli"):
        proc = subprocess.run(
            [sys.executable, "-m", module, "--version"], capture_output=True, text=True
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith("presets, version "), proc.stdout
