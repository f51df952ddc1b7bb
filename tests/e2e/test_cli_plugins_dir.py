"""The command line with a plugins folder, hook failures at start, and catalog-wide validation.

What a plugin author and a CI pipeline see: ``--plugins-dir`` (or
``PRESETS_PLUGINS_DIR``) on every command that loads plugins, ``presets
plugins`` counting and marking failures, ``presets validate`` over the whole
catalog or ``--installed`` files in place of their installed copy, and
``presets serve`` serving a folder plugin's tool.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from greet_plugin import GREET_MODULE, GREET_PRESETS
from mcp import Client

from agent_presets import ToolAdapter, load_plugins
from agent_presets.cli import main
from agent_presets.lib.catalog import check_preset_files
from agent_presets.lib.plugins import BUILTIN_DISTRIBUTIONS

from .conftest import serve_command, server_env

RAISING_RUNTIME_MODULE = """\
from agent_presets import hookimpl


@hookimpl
def presets_headless_runtime(host):
    raise RuntimeError("no greeter configured")
"""

BROKEN_MODULE = """\
LIMIT = 3
raise ValueError("broken on purpose")
"""

GRAPH_PRESETS = Path(__file__).parents[2] / "plugins/graph/src/agent_presets_graph/presets.yaml"


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def invoke(runner: CliRunner, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def folder(tmp_path: Path, name: str = "extras", **files: str) -> Path:
    path = tmp_path / name
    path.mkdir(parents=True)
    for file_name, text in files.items():
        (path / file_name).write_text(textwrap.dedent(text), encoding="utf-8")
    return path


@pytest.fixture
def greet(tmp_path: Path) -> Path:
    return folder(tmp_path, **{"greet.py": GREET_MODULE, "greet.yaml": GREET_PRESETS})


# ------------------------------------------------------------------ presets plugins


def test_plugins_lists_a_folders_module_and_preset_files(runner: CliRunner, greet: Path) -> None:
    code, out, err = invoke(runner, "plugins", "--plugins-dir", str(greet), "--json")
    assert code == 0, err
    rows = {r["name"]: r for r in json.loads(out)["plugins"]}
    assert set(rows) == {"greet", "extras"}
    assert rows["greet"]["tools"] == 1 and rows["greet"]["presets"] == 0
    assert rows["greet"]["path"].endswith("greet.py")
    assert rows["extras"]["presets"] == 1 and rows["extras"]["tools"] == 0
    assert {r["status"] for r in rows.values()} == {"ok"}
    code, out, _ = invoke(runner, "plugins", "--plugins-dir", str(greet))
    assert code == 0 and "greet.py" in out and "extras" in out


def test_plugins_reads_the_folder_from_the_environment(
    runner: CliRunner, greet: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRESETS_PLUGINS_DIR", str(greet))
    monkeypatch.setenv("PRESETS_LOAD_PLUGINS", "extras")
    code, out, _ = invoke(runner, "plugins", "--json")
    assert code == 0
    assert [r["name"] for r in json.loads(out)["plugins"]] == ["extras"]


def test_plugins_all_counts_every_builtins_real_presets_and_adapters(runner: CliRunner) -> None:
    plugin_set = load_plugins(env={})
    presets: dict[str, int] = {}
    for info, files in plugin_set.call_each("presets_preset_files"):
        presets[info.name] = presets.get(info.name, 0) + len(check_preset_files(files).presets)
    adapters: dict[str, int] = {}
    for info, returned in plugin_set.call_each("presets_tool_adapters"):
        count = sum(isinstance(a, ToolAdapter) for a in returned)
        adapters[info.name] = adapters.get(info.name, 0) + count
    code, out, err = invoke(runner, "plugins", "--all", "--json")
    assert code == 0, err
    rows = {r["name"]: r for r in json.loads(out)["plugins"]}
    builtins = {n for n, r in rows.items() if r["distribution"] in BUILTIN_DISTRIBUTIONS}
    assert builtins == {"drawing", "graph", "scene", "general", "units"}
    for name in builtins:
        assert (rows[name]["presets"], rows[name]["tools"]) == (presets[name], adapters[name])
        assert rows[name]["tools"] > 0, f"{name}: no tools counted"


def test_plugins_marks_a_module_that_failed_to_load_and_exits_1(
    runner: CliRunner, tmp_path: Path
) -> None:
    plugins = folder(tmp_path, **{"broken.py": BROKEN_MODULE, "greet.py": GREET_MODULE})
    code, out, err = invoke(runner, "plugins", "--plugins-dir", str(plugins), "--json")
    assert code == 1
    data = json.loads(out)
    rows = {r["name"]: r for r in data["plugins"]}
    assert rows["broken"]["status"] == "not loaded"
    assert rows["broken"]["path"].endswith("broken.py")
    assert rows["greet"]["status"] == "ok"
    [problem] = data["problems"]
    assert "broken.py:2: plugin 'broken'" in problem
    assert "ValueError: broken on purpose" in problem
    assert "broken.py:2" in err
    code, out, _ = invoke(runner, "plugins", "--plugins-dir", str(plugins))
    assert code == 1 and "not loaded" in out


def test_plugins_marks_a_raising_runtime_hook_and_exits_1(
    runner: CliRunner, tmp_path: Path
) -> None:
    plugins = folder(tmp_path, **{"greeter.py": RAISING_RUNTIME_MODULE})
    code, out, _ = invoke(runner, "plugins", "--plugins-dir", str(plugins), "--json")
    assert code == 1
    data = json.loads(out)
    [row] = data["plugins"]
    assert (row["name"], row["status"]) == ("greeter", "hook failed")
    [problem] = data["problems"]
    assert "greeter.py:6: plugin greeter" in problem
    assert "hook presets_headless_runtime raised RuntimeError: no greeter configured" in problem


def test_plugins_lists_a_folder_module_that_takes_an_installed_name_as_not_loaded(
    runner: CliRunner, tmp_path: Path
) -> None:
    plugins = folder(tmp_path, **{"graph.py": GREET_MODULE})
    code, out, _ = invoke(runner, "plugins", "--plugins-dir", str(plugins), "--all", "--json")
    assert code == 1
    graphs = [(r["distribution"] or r["path"], r["status"]) for r in json.loads(out)["plugins"]]
    graphs = [g for g in graphs if "graph" in g[0]]
    assert graphs == [("agent-presets-graph", "ok"), (str(plugins / "graph.py"), "not loaded")]


# ------------------------------------------------------------------ the other commands


def test_every_command_that_loads_plugins_takes_the_folder(runner: CliRunner, greet: Path) -> None:
    where = ("--plugins-dir", str(greet))
    code, out, _ = invoke(runner, "list", *where, "--json")
    assert code == 0
    [mine] = [p for p in json.loads(out) if p["name"] == "greet-tools"]
    assert mine["plugin"] == "extras"
    code, out, _ = invoke(runner, "show", "greet-tools", *where, "--json")
    assert code == 0 and json.loads(out)["tools"][0]["mcp_name"] == "space_greet_hello"
    code, out, _ = invoke(runner, "tools", *where, "--json")
    assert code == 0 and "space_greet_hello" in {t["mcp_name"] for t in json.loads(out)}
    code, out, _ = invoke(runner, "resolve", *where, "--json")
    assert code == 0 and "space_greet_hello" in json.loads(out)["mcp_tools"]
    code, out, _ = invoke(runner, "explain", "space_greet_hello", *where, "--json")
    assert code == 0 and json.loads(out)["active"] is True
    code, out, _ = invoke(runner, "list", "--json")
    assert "greet-tools" not in {p["name"] for p in json.loads(out)}


def test_a_plugins_dir_that_does_not_exist_is_a_usage_error(
    runner: CliRunner, tmp_path: Path
) -> None:
    code, _, err = invoke(runner, "list", "--plugins-dir", str(tmp_path / "nope"))
    assert code == 2 and "--plugins-dir" in err


def test_opencode_passes_the_folder_on_to_the_server(
    runner: CliRunner, greet: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = invoke(runner, "opencode", "--plugins-dir", str(greet))
    assert code == 0
    command = json.loads(out)["mcp"]["presets"]["command"]
    assert command[-2:] == ["--plugins-dir", str(greet.resolve())]
    monkeypatch.setenv("PRESETS_PLUGINS_DIR", str(greet))
    code, out, _ = invoke(runner, "opencode")
    assert json.loads(out)["mcp"]["presets"]["command"][-2:] == ["--plugins-dir", str(greet)]
    monkeypatch.delenv("PRESETS_PLUGINS_DIR")
    code, out, _ = invoke(runner, "opencode")
    assert "--plugins-dir" not in json.loads(out)["mcp"]["presets"]["command"]


# ------------------------------------------------------------------ presets validate


def test_validate_with_no_path_checks_the_plugins_folder_with_everything_installed(
    runner: CliRunner, greet: Path
) -> None:
    _, out, _ = invoke(runner, "validate", "--format", "json")
    installed = json.loads(out)
    code, out, err = invoke(runner, "validate", "--plugins-dir", str(greet), "--format", "json")
    assert code == 0, out + err
    data = json.loads(out)
    assert data["presets"] == installed["presets"] + 1
    assert any(f.endswith("greet.yaml") for f in data["files"])


def test_validate_reports_a_folder_preset_whose_tool_no_plugin_provides(
    runner: CliRunner, tmp_path: Path
) -> None:
    plugins = folder(tmp_path, **{"greet.yaml": GREET_PRESETS})
    code, out, _ = invoke(runner, "validate", "--plugins-dir", str(plugins))
    assert code == 1
    assert "greet.yaml" in out and "'greet.hello'" in out


def test_validate_reports_a_raising_runtime_hook_with_plugin_hook_exception_and_line(
    runner: CliRunner, tmp_path: Path
) -> None:
    plugins = folder(tmp_path, **{"greeter.py": RAISING_RUNTIME_MODULE})
    code, out, _ = invoke(runner, "validate", "--plugins-dir", str(plugins))
    assert code == 1
    [line] = [x for x in out.splitlines() if "greeter" in x]
    assert "greeter.py:6: plugin greeter" in line
    assert "hook presets_headless_runtime raised RuntimeError: no greeter configured" in line


def test_validate_annotates_a_plugin_problem_at_its_file_and_line(
    runner: CliRunner, tmp_path: Path
) -> None:
    plugins = folder(tmp_path, **{"broken.py": BROKEN_MODULE})
    code, out, _ = invoke(runner, "validate", "--plugins-dir", str(plugins), "--format", "github")
    assert code == 1
    [line] = [x for x in out.splitlines() if "broken" in x]
    assert line.startswith(f"::error file={plugins / 'broken.py'},line=2::plugin 'broken'")
    code, out, _ = invoke(runner, "validate", "--plugins-dir", str(plugins), "--format", "json")
    [problem] = json.loads(out)["problems"]
    assert (problem["source"], problem["line"]) == (str(plugins / "broken.py"), 2)


def test_validate_paths_alone_loads_no_plugin(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = folder(tmp_path, "broken", **{"broken.py": BROKEN_MODULE})
    monkeypatch.setenv("PRESETS_PLUGINS_DIR", str(broken))
    mine = tmp_path / "mine.yaml"
    mine.write_text(GREET_PRESETS, encoding="utf-8")
    code, _, err = invoke(runner, "validate", str(mine))
    assert code == 0, err
    assert "1 file(s), 1 valid preset(s)" in err


def test_validate_installed_puts_a_plugins_own_files_in_place_of_its_installed_copy(
    runner: CliRunner,
) -> None:
    code, out, err = invoke(runner, "validate", "--installed", str(GRAPH_PRESETS))
    assert code == 0, out + err
    assert "stand in for the preset files of plugin graph" in err
    # Without leaving graph's copy out, each of its presets would be defined twice.
    assert "defined" not in out


def test_validate_installed_matches_a_copy_of_installed_files_by_content(
    runner: CliRunner, tmp_path: Path
) -> None:
    copy = tmp_path / "presets.yaml"
    shutil.copyfile(GRAPH_PRESETS, copy)
    code, out, err = invoke(runner, "validate", "--installed", str(copy), "--format", "json")
    assert code == 0, out + err
    assert "plugin graph" in err
    _, whole, _ = invoke(runner, "validate", "--format", "json")
    assert json.loads(out)["presets"] == json.loads(whole)["presets"]


def test_validate_installed_checks_new_files_against_everything_installed(
    runner: CliRunner, tmp_path: Path
) -> None:
    uses_graph = tmp_path / "uses-graph.yaml"
    uses_graph.write_text(
        GREET_PRESETS.replace("greet-tools", "more-graph-tools").replace(
            "greet.hello", "graph.add-node"
        ),
        encoding="utf-8",
    )
    code, out, err = invoke(runner, "validate", "--installed", str(uses_graph))
    assert code == 0, out + err
    assert "stand in" not in err
    clash = tmp_path / "clash.yaml"
    clash.write_text(GREET_PRESETS.replace("greet-tools", "graph-node-tools"), encoding="utf-8")
    code, out, _ = invoke(runner, "validate", "--installed", str(clash))
    assert code == 1
    [dup] = [x for x in out.splitlines() if "'graph-node-tools'" in x and "presets.yaml" in x]
    assert "clash.yaml" in dup
    code, _, err = invoke(runner, "validate", str(clash))
    assert code == 0, err  # alone, the same file is fine


# ------------------------------------------------------------------ presets serve


def test_serve_reports_a_raising_runtime_hook_at_start(tmp_path: Path) -> None:
    plugins = folder(tmp_path, **{"greeter.py": RAISING_RUNTIME_MODULE})
    done = subprocess.run(
        serve_command("--state-dir", str(tmp_path / "state"), "--plugins-dir", str(plugins)),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=server_env(),
        timeout=60,
    )
    before_banner = done.stderr.split("presets serve:")[0]
    assert "greeter.py:6: plugin greeter" in before_banner
    assert "hook presets_headless_runtime raised RuntimeError: no greeter configured" in (
        before_banner
    )


def test_serve_refuses_a_file_root_that_holds_the_plugins_folder(
    runner: CliRunner, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    plugins = folder(work, "plugins", **{"greet.py": GREET_MODULE})
    code, _, err = invoke(
        runner,
        "serve",
        "--state-dir",
        str(tmp_path / "state"),
        "--root",
        str(work),
        "--plugins-dir",
        str(plugins),
    )
    assert code == 1
    assert "contains a plugins folder" in err


@pytest.mark.anyio
async def test_serve_serves_a_folder_plugins_tool_over_stdio(
    stdio_server_params: Callable[..., Any], greet: Path
) -> None:
    async with Client(stdio_server_params("--plugins-dir", str(greet)), mode="legacy") as client:
        names = [t.name for t in (await client.list_tools()).tools]
        assert "space_greet_hello" in names
        result = await client.call_tool("space_greet_hello", {"name": "Ada"})
    assert "".join(getattr(c, "text", "") for c in result.content) == "hello, Ada"
