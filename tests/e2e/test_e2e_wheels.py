"""The wheels this repository builds install and run outside it, as a third party gets them.

`uv build --all-packages` makes every distribution's sdist, then its wheel from
that sdist (what a publisher uploads). The core's wheel and one built-in
plugin's wheel go into a fresh virtual environment in a temporary folder, and
a plugin that is not ours is installed into it from its own folder
(`uv pip install .`, what `pip install .` does). The environment's own
`presets` then validates, lists and serves them, run from outside the
repository. Dependencies come from whatever package index uv is configured
with; nothing here names one.

Slow (a build and an install): the wheels are built once per module and uv's
cache keeps the installs to a second or two.
"""

from __future__ import annotations

import configparser
import json
import os
import queue
import shutil
import subprocess
import sys
import tarfile
import threading
import tomllib
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from email.message import Message
from email.parser import Parser
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
BUILTINS = ("drawing", "general", "graph", "scene", "units")
DISTRIBUTIONS = ("agent-presets", *(f"agent-presets-{name}" for name in BUILTINS))
# The built-in plugin installed into the fresh environment: its theme tools
# are active on the headless host's default surface, so `serve` lists them.
PLUGIN = "general"
PLUGIN_TOOL = "space_app_set_theme"
RESPONSE_TIMEOUT = 60.0
BIN = "Scripts" if os.name == "nt" else "bin"


# -- running things outside the repository ------------------------------------


def clean_env() -> dict[str, str]:
    """This process's environment without what ties a child to the repository's venv."""
    dropped = {"VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME"}
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    return {k: v for k, v in env.items() if not k.startswith("PRESETS_")}


def run(args: list[str], cwd: Path, *, expect: int = 0) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        args, cwd=cwd, env=clean_env(), capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == expect, (
        f"{' '.join(args)} exited {done.returncode}, expected {expect}\n"
        f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    )
    return done


def presets(venv: Path, *args: str, cwd: Path, expect: int = 0) -> subprocess.CompletedProcess[str]:
    """The fresh environment's own ``presets`` console script."""
    return run([str(venv / BIN / "presets"), *args], cwd, expect=expect)


def artifact(dist: Path, distribution: str, suffix: str) -> Path:
    found = sorted(dist.glob(f"{distribution.replace('-', '_')}-*{suffix}"))
    assert len(found) == 1, f"expected one {distribution} {suffix} in {dist}, found {found}"
    return found[0]


class StdioServer:
    """``presets serve`` over stdio, spoken to in JSON-RPC lines as an MCP client would."""

    def __init__(self, venv: Path, cwd: Path, *args: str) -> None:
        self.stderr_path = cwd / "serve.stderr"
        self._stderr = self.stderr_path.open("w")
        self.process = subprocess.Popen(
            [str(venv / BIN / "presets"), "serve", "--state-dir", str(cwd / "state"), *args],
            cwd=cwd,
            env=clean_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._next_id = 0
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Send a request and return its result; notifications on the way are skipped."""
        self._next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next_id, "method": method}
        if params is not None:
            message["params"] = params
        self._send(message)
        while True:
            try:
                line = self._lines.get(timeout=RESPONSE_TIMEOUT)
            except queue.Empty:
                line = None
            if line is None:
                raise AssertionError(f"no answer to {method}:\n{self.stderr_path.read_text()}")
            answer = json.loads(line)
            if answer.get("id") == self._next_id:
                assert "error" not in answer, f"{method} failed: {answer['error']}"
                return answer["result"]

    def initialize(self) -> None:
        self.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "test-e2e-wheels", "version": "0"},
            },
        )
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def tool_names(self) -> list[str]:
        return [tool["name"] for tool in self.request("tools/list")["tools"]]

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        result = self.request("tools/call", {"name": name, "arguments": arguments})
        text = "".join(part.get("text", "") for part in result["content"])
        assert not result.get("isError"), f"{name} failed: {text}"
        return text

    def close(self) -> int:
        """Close stdin, as a client that is done does; the server must then exit by itself."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            return self.process.wait(timeout=30)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait(timeout=10)
            self._stderr.close()


@contextmanager
def serve(venv: Path, cwd: Path) -> Iterator[StdioServer]:
    """A served, initialized session; leaving it closes stdin and checks a clean exit."""
    server = StdioServer(venv, cwd)
    try:
        server.initialize()
        yield server
    except BaseException:
        server.close()
        raise
    code = server.close()
    assert code == 0, f"presets serve exited {code}:\n{server.stderr_path.read_text()}"


# -- a plugin that is not ours --------------------------------------------------

GREETER_FILES = {
    "pyproject.toml": """\
[project]
name = "space-greeter"
version = "1.0.0"
requires-python = ">=3.11"
dependencies = ["agent-presets>=0.1"]

[project.entry-points.agent_presets]
greeter = "space_greeter"

[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[tool.hatch.build.targets.wheel]
packages = ["src/space_greeter"]
""",
    "src/space_greeter/__init__.py": """\
from importlib.resources import files

from agent_presets import hookimpl


@hookimpl
def presets_preset_files():
    return [files(__name__) / "presets.yaml"]


@hookimpl
def presets_tool_adapters():
    from space_greeter.adapters import ADAPTERS

    return ADAPTERS
""",
    "src/space_greeter/adapters.py": """\
from agent_presets import ToolAdapter, object_schema


def greet(app, arguments):
    return {"greeting": f"Hello, {arguments['name']}!"}


ADAPTERS = [
    ToolAdapter(
        id="greeter.greet",
        mcp_name="space_greeter_greet",
        description="Greet someone by name.",
        input_schema=object_schema({"name": {"type": "string", "minLength": 1}}, ["name"]),
        handler=greet,
        annotations={"readOnlyHint": True},
    )
]
""",
    "src/space_greeter/presets.yaml": """\
presets:
  - name: greeter-tools
    group: greeter
    default_state: auto
    risk: normal
    contexts:
      - {surface: any}
    tool_ids: [greeter.greet]
    system_prompt: >-
      Greet the user by name when they ask to be greeted.
""",
    "src/space_greeter/py.typed": "",
}


def write_project(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


# -- fixtures: one build, one environment ---------------------------------------


@pytest.fixture(scope="module")
def uv() -> str:
    found = shutil.which("uv")
    if found is None:
        pytest.skip("uv is not on PATH; this test builds and installs with it")
    return found


@pytest.fixture(scope="module")
def dist(uv: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    run([uv, "build", "--all-packages", "--quiet", "--out-dir", str(out)], REPO)
    return out


@pytest.fixture(scope="module")
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A working folder outside the repository: nothing there can import the checkout."""
    where = tmp_path_factory.mktemp("outside")
    assert REPO not in where.parents, "the temporary folder must be outside the repository"
    return where


@pytest.fixture(scope="module")
def venv(uv: str, dist: Path, outside: Path) -> Path:
    """A fresh environment with the core's wheel and one plugin's wheel, nothing editable."""
    venv = outside / "venv"
    run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)], outside)
    wheels = [artifact(dist, name, ".whl") for name in ("agent-presets", f"agent-presets-{PLUGIN}")]
    python = str(venv / BIN / "python")
    run([uv, "pip", "install", "--quiet", "--python", python, *map(str, wheels)], outside)
    return venv


# -- the tests --------------------------------------------------------------------


def read_wheel(path: Path) -> tuple[dict[str, bytes], Message, configparser.ConfigParser]:
    """A wheel's files (name -> bytes), its METADATA and its entry points."""
    with zipfile.ZipFile(path) as wheel:
        files = {name: wheel.read(name) for name in wheel.namelist()}
    info = next(n.split("/")[0] for n in files if n.endswith(".dist-info/METADATA"))
    metadata = Parser().parsestr(files[f"{info}/METADATA"].decode())
    entry_points = configparser.ConfigParser(delimiters=("=",))
    entry_points.read_string(files[f"{info}/entry_points.txt"].decode())
    return files, metadata, entry_points


def test_every_wheel_carries_its_data_entry_point_and_plain_lower_bound_requirements(
    dist: Path,
) -> None:
    for distribution in DISTRIBUTIONS:
        package = distribution.replace("-", "_")
        files, metadata, entry_points = read_wheel(artifact(dist, distribution, ".whl"))

        assert f"{package}/py.typed" in files, distribution
        assert metadata["Requires-Python"] == ">=3.11", distribution
        assert metadata["License-Expression"] == "MIT", distribution
        requirements = [Requirement(r) for r in metadata.get_all("Requires-Dist") or []]
        for req in requirements:
            # A path or URL here means a workspace source leaked into the metadata.
            assert req.url is None, f"{distribution}: {req}"
            assert {s.operator for s in req.specifier} == {">="}, f"{distribution}: {req}"

        if distribution == "agent-presets":
            schema = files["agent_presets/schemas/preset.schema.json"]
            assert schema == (REPO / "schemas" / "preset.schema.json").read_bytes()
            # The executable pauses the collector before the CLI imports (agent_presets._startup).
            assert entry_points["console_scripts"]["presets"] == "agent_presets.__main__:main"
            assert metadata["Description-Content-Type"] == "text/markdown"
            # The long description an index shows says how a plugin depends on the core.
            assert "agent-presets>=0.1" in str(metadata.get_payload())
        else:
            assert f"{package}/presets.yaml" in files, distribution
            # units runs unit loads in the general plugin's sandbox, so it needs that plugin too.
            needs = ["agent-presets-general>=0.1"] if distribution == "agent-presets-units" else []
            assert sorted(str(r) for r in requirements) == sorted(["agent-presets>=0.1", *needs])
            name = distribution.removeprefix("agent-presets-")
            assert dict(entry_points["agent_presets"]) == {name: package}


def test_no_sdist_carries_workspace_sources_or_the_schema_symlink(dist: Path) -> None:
    # uv refuses to build an unpacked sdist (or a copied plugin folder) whose
    # pyproject says `agent-presets = { workspace = true }` outside the workspace.
    for distribution in DISTRIBUTIONS:
        with tarfile.open(artifact(dist, distribution, ".tar.gz")) as sdist:
            top = sdist.getnames()[0].split("/")[0]
            pyproject = sdist.extractfile(f"{top}/pyproject.toml")
            assert pyproject is not None
            assert "uv" not in tomllib.load(pyproject).get("tool", {}), distribution
            if distribution == "agent-presets":
                # The schema ships as a file, not as the repository's symlink.
                member = sdist.getmember(f"{top}/src/agent_presets/schemas/preset.schema.json")
                assert member.isfile()


def test_fresh_environment_with_the_core_and_one_built_in_plugin_validates_lists_and_serves(
    venv: Path, outside: Path, tmp_path: Path
) -> None:
    checked = json.loads(presets(venv, "validate", "--format", "json", cwd=outside).stdout)
    assert checked["valid"] is True
    assert any(f"agent_presets_{PLUGIN}" in f for f in checked["files"])

    listed = json.loads(presets(venv, "plugins", "--all", "--json", cwd=outside).stdout)
    plugin = next(p for p in listed["plugins"] if p["name"] == PLUGIN)
    assert plugin["distribution"] == f"agent-presets-{PLUGIN}"
    assert plugin["tools"] > 0
    assert listed["problems"] == []

    with serve(venv, tmp_path) as server:
        assert PLUGIN_TOOL in server.tool_names()
        assert json.loads(server.call(PLUGIN_TOOL, {"theme": "dark"}))["theme"] == "dark"


def test_third_party_plugin_installed_from_its_folder_is_validated_listed_and_served(
    uv: str, venv: Path, outside: Path, tmp_path: Path
) -> None:
    project = write_project(outside / "space-greeter", GREETER_FILES)
    python = str(venv / BIN / "python")
    run([uv, "pip", "install", "--quiet", "--python", python, "."], project)

    # A plugin's CI lints its own files by path, then the installed catalog.
    presets(venv, "validate", "src/space_greeter/presets.yaml", "--format", "github", cwd=project)
    checked = json.loads(presets(venv, "validate", "--format", "json", cwd=outside).stdout)
    assert checked["valid"] is True
    assert any("space_greeter" in f for f in checked["files"])

    broken = outside / "broken" / "presets.yaml"
    broken.parent.mkdir()
    broken.write_text(GREETER_FILES["src/space_greeter/presets.yaml"].replace("normal", "shell"))
    args = ("validate", "broken/presets.yaml", "--format", "github")
    failed = presets(venv, *args, cwd=outside, expect=1)
    assert failed.stdout.startswith("::error file=broken/presets.yaml,line=4,")

    listed = json.loads(presets(venv, "plugins", "--json", cwd=outside).stdout)
    assert [
        (p["name"], p["distribution"], p["builtin"], p["tools"]) for p in listed["plugins"]
    ] == [("greeter", "space-greeter", False, 1)]

    with serve(venv, tmp_path) as server:
        names = server.tool_names()
        assert {"space_greeter_greet", PLUGIN_TOOL} <= set(names)
        greeting = json.loads(server.call("space_greeter_greet", {"name": "Ada"}))
        assert greeting == {"greeting": "Hello, Ada!"}


# -- what a release uploads ---------------------------------------------------------


def test_every_built_distribution_passes_twine_check_with_complete_metadata(dist: Path) -> None:
    from agent_presets import __version__

    built = sorted(p for p in dist.iterdir() if p.name.endswith((".whl", ".tar.gz")))
    assert len(built) == 2 * len(DISTRIBUTIONS), built  # an sdist and a wheel each
    checked = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, built)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr
    for distribution in DISTRIBUTIONS:
        _, metadata, _ = read_wheel(artifact(dist, distribution, ".whl"))
        assert metadata["Version"] == __version__, distribution
        assert metadata["Description-Content-Type"] == "text/markdown", distribution
        assert metadata["License-File"] == "LICENSE", distribution
        classifiers = metadata.get_all("Classifier") or []
        assert any(c.startswith("Development Status ::") for c in classifiers), distribution


def test_every_wheel_installs_with_plain_pip_into_a_fresh_venv(dist: Path, outside: Path) -> None:
    venv = outside / "pip-venv"
    run([sys.executable, "-m", "venv", str(venv)], outside)
    wheels = [str(artifact(dist, name, ".whl")) for name in DISTRIBUTIONS]
    run([str(venv / BIN / "python"), "-m", "pip", "install", "--quiet", *wheels], outside)
    listed = json.loads(presets(venv, "plugins", "--all", "--json", cwd=outside).stdout)
    assert sorted(p["distribution"] for p in listed["plugins"]) == sorted(DISTRIBUTIONS[1:])
    assert listed["problems"] == []
    checked = json.loads(presets(venv, "validate", "--format", "json", cwd=outside).stdout)
    assert checked["valid"] is True
