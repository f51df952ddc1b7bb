"""One-off plugins from a plugins folder, and hook errors that say where they were raised.

A plugins folder needs no packaging: each ``*.py`` module is a plugin named
after it, and its preset YAML files together are a plugin named after the
folder. These tests write real folders to tmp_path and load them through
``load_plugins(plugins_dir=...)``, the way the command line does.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest
from greet_plugin import GREET_MODULE, GREET_PRESETS

from agent_presets import ToolAdapter, bootstrap, hookimpl, load_plugins
from agent_presets.lib.catalog import collect
from agent_presets.lib.plugins import (
    PluginLoadError,
    PluginProblem,
    PresetFolder,
    import_file,
    trace_hook_calls,
)
from agent_presets_general import SpaceHost

RAISING_RUNTIME_MODULE = """\
from agent_presets import hookimpl


@hookimpl
def presets_headless_runtime(host):
    attach_greeter(host)


def attach_greeter(host):
    raise RuntimeError("no greeter configured")
"""

BROKEN_MODULE = """\
import os

LIMIT = 3
raise ValueError("broken on purpose")
"""


def plugins_folder(tmp_path: Path, name: str = "extras", **files: str) -> Path:
    """A plugins folder holding ``files`` (file name -> text)."""
    folder = tmp_path / name
    folder.mkdir()
    for file_name, text in files.items():
        (folder / file_name).write_text(textwrap.dedent(text), encoding="utf-8")
    return folder


@pytest.fixture
def greet_folder(tmp_path: Path) -> Path:
    return plugins_folder(tmp_path, **{"greet.py": GREET_MODULE, "greet.yaml": GREET_PRESETS})


NO_DISTRIBUTIONS = {"PRESETS_LOAD_PLUGINS": "greet,extras"}


# ------------------------------------------------------------------ discovery


def test_a_module_is_a_plugin_named_after_it_and_the_yaml_files_one_named_after_the_folder(
    greet_folder: Path,
) -> None:
    plugin_set = load_plugins(env=NO_DISTRIBUTIONS, plugins_dir=greet_folder)
    assert plugin_set.problems == []
    assert [(p.name, p.distribution, p.hooks) for p in plugin_set.plugins] == [
        ("greet", None, ("presets_tool_adapters",)),
        ("extras", None, ("presets_preset_files",)),
    ]
    greet, extras = plugin_set.plugins
    assert greet.path is not None and greet.path.endswith("greet.py")
    assert extras.path is not None and extras.path.endswith("extras")
    assert isinstance(extras.plugin, PresetFolder)


def test_a_plugins_folder_adds_to_the_installed_plugins(greet_folder: Path) -> None:
    plugin_set = load_plugins(env={}, plugins_dir=greet_folder)
    names = [p.name for p in plugin_set.plugins]
    assert {"drawing", "graph", "greet", "extras"} <= set(names)
    catalog = collect(plugin_set)
    assert catalog.problems == []
    assert catalog.preset_plugin["greet-tools"] == "extras"
    assert catalog.adapter_plugin["greet.hello"] == "greet"


def test_presets_plugins_dir_in_the_environment_is_read_when_discovering(
    greet_folder: Path,
) -> None:
    env = {**NO_DISTRIBUTIONS, "PRESETS_PLUGINS_DIR": str(greet_folder)}
    assert [p.name for p in load_plugins(env=env).plugins] == ["greet", "extras"]


def test_an_explicit_plugins_dir_wins_over_the_environment(
    greet_folder: Path, tmp_path: Path
) -> None:
    other = plugins_folder(tmp_path, "other", **{"other.py": GREET_MODULE})
    env = {"PRESETS_LOAD_PLUGINS": "greet,extras,other", "PRESETS_PLUGINS_DIR": str(other)}
    assert [p.name for p in load_plugins(env=env, plugins_dir=greet_folder).plugins] == [
        "greet",
        "extras",
    ]


def test_presets_load_plugins_filters_folder_plugins_by_name(greet_folder: Path) -> None:
    only_module = load_plugins(env={"PRESETS_LOAD_PLUGINS": "greet"}, plugins_dir=greet_folder)
    assert [p.name for p in only_module.plugins] == ["greet"]
    assert only_module.problems == []
    only_files = load_plugins(env={"PRESETS_LOAD_PLUGINS": "extras"}, plugins_dir=greet_folder)
    assert [p.name for p in only_files.plugins] == ["extras"]
    none = load_plugins(env={"PRESETS_LOAD_PLUGINS": ""}, plugins_dir=greet_folder)
    assert none.plugins == [] and none.problems == []


def test_presets_load_plugins_lists_folder_plugins_among_the_known_names(
    greet_folder: Path,
) -> None:
    plugin_set = load_plugins(env={"PRESETS_LOAD_PLUGINS": "gret"}, plugins_dir=greet_folder)
    [problem] = plugin_set.problems
    known = str(problem).split("installed plugins:")[1]
    assert "greet" in known and "extras" in known


def test_underscore_modules_are_helpers_not_plugins(tmp_path: Path) -> None:
    folder = plugins_folder(
        tmp_path, **{"_helpers.py": BROKEN_MODULE, "__init__.py": "", "greet.py": GREET_MODULE}
    )
    plugin_set = load_plugins(env={"PRESETS_LOAD_PLUGINS": "greet"}, plugins_dir=folder)
    assert [p.name for p in plugin_set.plugins] == ["greet"]
    assert plugin_set.problems == []


def test_a_folder_without_yaml_files_adds_no_folder_plugin(tmp_path: Path) -> None:
    folder = plugins_folder(tmp_path, **{"greet.py": GREET_MODULE})
    plugin_set = load_plugins(env={"PRESETS_LOAD_PLUGINS": "greet,extras"}, plugins_dir=folder)
    assert [p.name for p in plugin_set.plugins] == ["greet"]


def test_a_missing_plugins_folder_is_a_problem(tmp_path: Path) -> None:
    plugin_set = load_plugins(env={"PRESETS_LOAD_PLUGINS": ""}, plugins_dir=tmp_path / "nope")
    [problem] = plugin_set.problems
    assert "nope" in str(problem) and "is not a folder" in str(problem)


def test_a_folder_module_named_like_an_installed_plugin_is_refused_naming_both(
    tmp_path: Path,
) -> None:
    folder = plugins_folder(tmp_path, **{"graph.py": GREET_MODULE})
    plugin_set = load_plugins(env={"PRESETS_LOAD_PLUGINS": "graph"}, plugins_dir=folder)
    assert plugin_set.get("graph").distribution == "agent-presets-graph"  # type: ignore[union-attr]
    [problem] = plugin_set.problems
    assert "distribution agent-presets-graph" in str(problem)
    assert "graph.py" in str(problem)


def test_two_folders_with_a_module_of_one_name_import_as_two_modules(tmp_path: Path) -> None:
    one = plugins_folder(tmp_path, "one", **{"tools.py": "WHO = 'one'\n"})
    two = plugins_folder(tmp_path, "two", **{"tools.py": "WHO = 'two'\n"})
    first, second = import_file(one / "tools.py"), import_file(two / "tools.py")
    assert (first.WHO, second.WHO) == ("one", "two")
    assert first.__name__ != second.__name__


def test_a_folder_plugin_serves_its_tool(greet_folder: Path) -> None:
    presets = bootstrap(
        SimpleNamespace(), plugins=load_plugins(env=NO_DISTRIBUTIONS, plugins_dir=greet_folder)
    )
    assert presets.problems == []
    assert presets.tool_registry.names() == ["space_greet_hello"]
    tool = presets.tool_registry.get("space_greet_hello")
    assert tool is not None
    assert tool.run({"name": "Ada"}) == "hello, Ada"


def test_plugin_objects_and_a_plugins_folder_load_together(greet_folder: Path) -> None:
    class Quiet:
        @hookimpl
        def presets_tool_adapters(self) -> list[ToolAdapter]:
            return []

    plugin_set = load_plugins([Quiet()], plugins_dir=greet_folder)
    assert [p.name for p in plugin_set.plugins] == ["Quiet", "greet", "extras"]


# ------------------------------------------------------------------ broken modules


def test_a_module_that_fails_to_import_is_reported_with_its_file_and_line(
    tmp_path: Path,
) -> None:
    folder = plugins_folder(tmp_path, **{"broken.py": BROKEN_MODULE, "greet.py": GREET_MODULE})
    plugin_set = load_plugins(env={"PRESETS_LOAD_PLUGINS": "broken,greet"}, plugins_dir=folder)
    assert [p.name for p in plugin_set.plugins] == ["greet"]
    [problem] = plugin_set.problems
    assert problem.plugin == "broken"
    assert problem.source is not None and problem.source.endswith("broken.py")
    assert problem.line == 4
    message = str(problem)
    assert re.match(
        r".*broken\.py:4: plugin 'broken' \(file .*broken\.py\) failed to load", message
    )
    assert "ValueError: broken on purpose" in message
    assert "PRESETS_LOAD_PLUGINS" in message


def test_a_module_with_a_syntax_error_is_reported_where_the_parser_stopped(
    tmp_path: Path,
) -> None:
    folder = plugins_folder(tmp_path, **{"typo.py": "x = 1\ndef oops(:\n    pass\n"})
    [problem] = load_plugins(env={"PRESETS_LOAD_PLUGINS": "typo"}, plugins_dir=folder).problems
    assert problem.source is not None and problem.source.endswith("typo.py")
    assert problem.line == 2
    assert "SyntaxError" in str(problem)


def test_a_broken_folder_module_is_fatal_in_strict_mode(tmp_path: Path) -> None:
    folder = plugins_folder(tmp_path, **{"broken.py": BROKEN_MODULE})
    with pytest.raises(PluginLoadError, match=r"broken\.py:4"):
        load_plugins(
            env={"PRESETS_LOAD_PLUGINS": "broken", "PRESETS_STRICT": "1"}, plugins_dir=folder
        )


# ------------------------------------------------------------------ hook errors say where


def test_a_raising_runtime_hook_is_a_problem_naming_plugin_hook_exception_and_line(
    tmp_path: Path,
) -> None:
    folder = plugins_folder(tmp_path, **{"greeter.py": RAISING_RUNTIME_MODULE})
    plugin_set = load_plugins(env={"PRESETS_LOAD_PLUGINS": "greeter"}, plugins_dir=folder)
    SpaceHost(tmp_path / "state").start(plugin_set)
    [problem] = plugin_set.problems
    assert isinstance(problem, PluginProblem)
    assert (problem.plugin, problem.hook) == ("greeter", "presets_headless_runtime")
    # The last frame in the plugin's code: the raise in attach_greeter, not the hook's call.
    assert problem.source is not None and problem.source.endswith("greeter.py")
    assert problem.line == 10
    message = str(problem)
    assert "plugin greeter" in message
    assert "hook presets_headless_runtime raised RuntimeError: no greeter configured" in message
    assert message.startswith(f"{problem.source}:10: ")


def test_an_error_raised_in_a_library_is_located_where_the_plugin_called_it(
    tmp_path: Path,
) -> None:
    class BadJson:
        @hookimpl
        def presets_tool_adapters(self) -> list[ToolAdapter]:
            return json.loads("{not json")  # type: ignore[no-any-return]

    line = BadJson.presets_tool_adapters.__code__.co_firstlineno + 2
    catalog = collect(load_plugins([BadJson()]))
    [problem] = catalog.problems
    assert isinstance(problem, PluginProblem)
    assert problem.hook == "presets_tool_adapters"
    assert problem.source is not None and problem.source.endswith("test_core_plugins_dir.py")
    assert problem.line == line
    assert "JSONDecodeError" in str(problem)


def test_a_hook_raising_in_the_catalog_does_not_stop_the_other_plugins(
    greet_folder: Path,
) -> None:
    class Raising:
        @hookimpl
        def presets_preset_files(self) -> list[Path]:
            raise OSError("disk on fire")

    plugin_set = load_plugins([Raising()], plugins_dir=greet_folder)
    catalog = collect(plugin_set)
    assert [p.name for p in catalog.presets] == ["greet-tools"]
    [problem] = catalog.problems
    assert isinstance(problem, PluginProblem) and problem.plugin == "Raising"
    assert "hook presets_preset_files raised OSError: disk on fire" in str(problem)


# ------------------------------------------------------------------ trace


def test_the_trace_is_one_short_line_per_hook_call(greet_folder: Path) -> None:
    lines: list[str] = []
    plugin_set = load_plugins(env=NO_DISTRIBUTIONS, plugins_dir=greet_folder)
    trace_hook_calls(plugin_set.pm, lines.append)
    collect(plugin_set)
    assert [re.sub(r"in \d+\.\d ms", "in X ms", line) for line in lines] == [
        "hook presets_preset_files -> extras: 1 result in X ms\n",
        "hook presets_tool_adapters -> greet: 1 result in X ms\n",
    ]


def test_the_trace_says_when_a_hook_raised(tmp_path: Path) -> None:
    folder = plugins_folder(tmp_path, **{"greeter.py": RAISING_RUNTIME_MODULE})
    lines: list[str] = []
    plugin_set = load_plugins(env={"PRESETS_LOAD_PLUGINS": "greeter"}, plugins_dir=folder)
    trace_hook_calls(plugin_set.pm, lines.append)
    plugin_set.call_each("presets_headless_runtime", host=SimpleNamespace())
    [line] = lines
    assert re.fullmatch(
        r"hook presets_headless_runtime -> greeter: raised RuntimeError in \d+\.\d ms\n", line
    )


def test_the_trace_of_the_installed_plugins_stays_short(capsys: pytest.CaptureFixture[str]) -> None:
    plugin_set = load_plugins(env={"PRESETS_TRACE_PLUGINS": "1"})
    collect(plugin_set)
    lines = capsys.readouterr().err.splitlines()
    # One line per plugin for each hook collect calls that the plugin implements: the host's
    # defaults (its namespace), preset files, context fields, adapters, content providers.
    hooks = (
        "presets_host_defaults",
        "presets_preset_files",
        "presets_context_fields",
        "presets_tool_adapters",
        "presets_content_providers",
    )
    assert len(lines) == sum(h in p.hooks for h in hooks for p in plugin_set.plugins)
    assert {line.split()[1] for line in lines} == set(hooks)
    assert all(len(line) < 100 for line in lines), max(lines, key=len)


# ------------------------------------------------------------------ standing in for files


def test_leave_out_hook_stops_one_plugins_hook_and_add_registers_another(
    greet_folder: Path, tmp_path: Path
) -> None:
    plugin_set = load_plugins(env=NO_DISTRIBUTIONS, plugins_dir=greet_folder)
    plugin_set.leave_out_hook("extras", "presets_preset_files")
    replacement = tmp_path / "replacement.yaml"
    replacement.write_text(GREET_PRESETS.replace("greet-tools", "greet-more"), encoding="utf-8")
    plugin_set.add(PresetFolder([replacement]), "files given")
    catalog = collect(plugin_set)
    assert catalog.problems == []
    assert catalog.preset_plugin == {"greet-more": "files given"}


# ------------------------------------------------------------------ the documented example

DOC = Path(__file__).parents[2] / "docs" / "plugins.md"


def test_the_documented_plugins_folder_loads_and_serves_as_printed(tmp_path: Path) -> None:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## One-off plugins: the plugins folder", 1)[1].split("\n## ", 1)[0]
    [module] = re.findall(r"```python\n(.*?)```", section, re.S)
    [presets_yaml] = re.findall(r"```yaml\n(.*?)```", section, re.S)
    folder = plugins_folder(
        tmp_path, "my-plugins", **{"greet.py": module, "greet.yaml": presets_yaml}
    )
    plugin_set = load_plugins(env={"PRESETS_LOAD_PLUGINS": "greet,my-plugins"}, plugins_dir=folder)
    assert [p.name for p in plugin_set.plugins] == ["greet", "my-plugins"]
    presets = bootstrap(SimpleNamespace(), plugins=plugin_set)
    assert presets.problems == []
    tool = presets.tool_registry.get("greet_hello")  # no app plugin: no namespace
    assert tool is not None and tool.run({"name": "Ada"}) == "hello, Ada"
