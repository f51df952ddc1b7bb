"""The import paths and entry points code outside this repo may rely on."""

from __future__ import annotations

import subprocess
import sys

import agent_presets.server as server
import agent_presets.server.mcp as glue


def test_the_server_package_names_the_mcp_glue_it_serves_with() -> None:
    for name in set(server.__all__) - {"ServeConfig"}:
        assert getattr(server, name) is getattr(glue, name), name


def test_the_served_process_package_imports_no_mcp_until_asked() -> None:
    code = (
        "import sys\n"
        "import agent_presets.server.policy, agent_presets.server.control\n"
        "import agent_presets.server.requests, agent_presets.server.events\n"
        "assert 'mcp' not in sys.modules, 'mcp imported'\n"
        "from agent_presets.server import PresetServer\n"
        "assert 'mcp' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_both_module_entry_points_run_the_presets_command() -> None:
    for module in ("agent_presets", "agent_presets.cli"):
        proc = subprocess.run(
            [sys.executable, "-m", module, "--version"], capture_output=True, text=True
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith("presets, version "), proc.stdout
