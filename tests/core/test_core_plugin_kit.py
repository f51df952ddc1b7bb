"""The plugin kit: what the core exports so a plugin need not copy it."""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import agent_presets
from agent_presets.cli.newplugin import write_plugin
from agent_presets.lib.atomicfile import write_atomic
from agent_presets.lib.catalog import collect
from agent_presets.lib.loader import load_preset_file
from agent_presets.lib.plugins import load_plugins
from agent_presets.server.store.statedb import StateStore
from agent_presets.testing import PresetsHost, PresetTable, read_only_tools
from agent_presets_general import SpaceApp

RUNTIME_MODULES = [
    "agent_presets_drawing.document",
    "agent_presets_graph.model",
    "agent_presets_scene.model",
]


def test_the_row_table_protocol_is_public_and_the_host_table_satisfies_it(
    tmp_path: Path,
) -> None:
    store = StateStore(tmp_path / "state.db")
    try:
        assert isinstance(store.table("notes", "home"), agent_presets.RowTable)
    finally:
        store.close()
    assert not isinstance({}, agent_presets.RowTable)


@pytest.mark.parametrize("module", RUNTIME_MODULES)
def test_the_built_in_runtimes_type_their_table_with_the_core_protocol(module: str) -> None:
    assert importlib.import_module(module).RowTable is agent_presets.RowTable


def test_the_atomic_writer_is_public(tmp_path: Path) -> None:
    assert agent_presets.write_atomic is write_atomic
    target = tmp_path / "a" / "b.txt"
    agent_presets.write_atomic(target, b"hello", mode=0o600)
    assert target.read_bytes() == b"hello"
    assert target.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in target.parent.iterdir()] == ["b.txt"]  # no temp file left


# ------------------------------------------------------------------ PluginHooks

PACKAGE_INIT = """
from agent_presets import PluginHooks

_hooks = PluginHooks(
    __name__,
    context_fields=[{"name": "activity", "type": "string", "values": ["notes"]}],
)
presets_preset_files = _hooks.presets_preset_files
presets_context_fields = _hooks.presets_context_fields
presets_tool_adapters = _hooks.presets_tool_adapters
"""
PACKAGE_ADAPTERS = """
from agent_presets import AdapterKit, object_schema

KIT = AdapterKit("notes")


def tool_adapters():
    return [KIT.adapter("notes.count", lambda n, a: len(n), description="Count.",
                        input_schema=object_schema(), annotations={"readOnlyHint": True})]
"""
PACKAGE_PRESETS = """\
presets:
  - name: notes-tools
    default_state: auto
    risk: normal
    contexts: [{surface: any, activity: notes}]
    tool_ids: [notes.count]
"""


@pytest.fixture
def notes_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    package = tmp_path / "kit_notes"
    package.mkdir()
    (package / "__init__.py").write_text(PACKAGE_INIT)
    (package / "adapters.py").write_text(PACKAGE_ADAPTERS)
    (package / "presets.yaml").write_text(PACKAGE_PRESETS)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield importlib.import_module("kit_notes")
    for name in [n for n in sys.modules if n.split(".")[0] == "kit_notes"]:
        del sys.modules[name]


def test_plugin_hooks_give_the_package_its_standard_hooks(notes_package: Any) -> None:
    assert "kit_notes.adapters" not in sys.modules  # built when first asked for
    plugins = load_plugins([notes_package])
    [info] = plugins.plugins
    assert sorted(info.hooks) == [
        "presets_context_fields",
        "presets_preset_files",
        "presets_tool_adapters",
    ]
    [files] = notes_package.presets_preset_files()
    assert files.read_text(encoding="utf-8") == PACKAGE_PRESETS
    assert notes_package.presets_context_fields() == [
        {"name": "activity", "type": "string", "values": ["notes"]}
    ]
    assert PresetTable.of(notes_package, "space_") == {
        "notes-tools": ("auto", "normal", ["space_notes_count"])
    }
    assert read_only_tools(notes_package, "space_") == {"space_notes_count"}


def test_plugin_hooks_serve_the_package_on_a_host(
    notes_package: Any, presets_host: Callable[..., PresetsHost]
) -> None:
    host = presets_host(plugins=[SpaceApp(), notes_package])
    host.host.attach("notes", ["a", "b"])
    assert "space_notes_count" not in host.tools()
    host.set_context(surface="canvas", activity="notes")  # a value the plugin declares
    assert host.call_tool("space_notes_count") == 2


def test_an_adapters_module_without_tool_adapters_is_a_problem_naming_what_to_define(
    notes_package: Any, tmp_path: Path
) -> None:
    (tmp_path / "kit_notes" / "adapters.py").write_text("TOOLS = []\n")
    plugins = load_plugins([notes_package])
    catalog = collect(plugins)
    [problem] = [p for p in catalog.problems if "tool_adapters" in str(p)]
    assert "kit_notes.adapters has no tool_adapters() function" in str(problem)


RUNTIME_INIT = """
from agent_presets import PluginHooks

_hooks = PluginHooks(__name__, runtimes={"notes": ".notebook:Notebook"})
presets_preset_files = _hooks.presets_preset_files
presets_tool_adapters = _hooks.presets_tool_adapters
presets_headless_runtime = _hooks.presets_headless_runtime
__getattr__ = _hooks.module_getattr
"""
RUNTIME_NOTEBOOK = """
from agent_presets import TableRuntime


class Notebook(TableRuntime):
    notes = ()

    def read_rows(self, rows):
        self.notes = tuple(rows["notes"])

    def load_state(self, state):
        self.notes = tuple(state["notes"])

    def row_keys(self):
        return ["notes"]

    def row(self, key):
        return list(self.notes)

    def __len__(self):
        return len(self.notes)
"""


def test_plugin_hooks_give_each_world_its_table_runtime_loaded_when_first_used(
    notes_package: Any, tmp_path: Path, presets_host: Callable[..., PresetsHost]
) -> None:
    (tmp_path / "kit_notes" / "__init__.py").write_text(RUNTIME_INIT)
    (tmp_path / "kit_notes" / "notebook.py").write_text(RUNTIME_NOTEBOOK)
    importlib.reload(notes_package)
    state = tmp_path / "state"
    (state / "worlds" / "home").mkdir(parents=True)
    (state / "worlds" / "home" / "notes.json").write_text('{"notes": ["saved", "whole"]}')
    host = presets_host(plugins=[SpaceApp(), notes_package], state_dir=state)
    assert "kit_notes.notebook" not in sys.modules  # the host started without it
    host.set_context(surface="canvas", activity="notes")
    assert host.call_tool("space_notes_count") == 2  # migrated from the file saved whole
    assert notes_package.Notebook is sys.modules["kit_notes.notebook"].Notebook
    with pytest.raises(AttributeError, match="module 'kit_notes' has no attribute 'Notes'"):
        notes_package.Notes  # noqa: B018


def test_a_runtime_given_neither_as_a_class_nor_as_module_colon_class_is_refused() -> None:
    with pytest.raises(ValueError, match="give the class, or where it is as 'module:Class'"):
        agent_presets.PluginHooks("kit_notes", runtimes={"notes": ".notebook"})


def test_the_smallest_plugin_is_one_module_and_its_presets_and_its_tool_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, presets_host: Callable[..., PresetsHost]
) -> None:
    # What `presets new-plugin` writes: the package is one module and its presets.
    write_plugin("jot", tmp_path / "p")
    package = tmp_path / "p" / "src" / "agent_presets_jot"
    assert sorted(p.name for p in package.iterdir()) == ["__init__.py", "presets.yaml"]
    # Each tool id is written once, in the presets: no string in the module's code holds one.
    listed = {i for preset in load_preset_file(package / "presets.yaml") for i in preset.tool_ids}
    assert listed == {"jot.add-note", "jot.list-notes"}
    tree = ast.parse((package / "__init__.py").read_text(encoding="utf-8"))
    strings = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)][1:]  # no docstring
    assert not [s for s in strings if isinstance(s, str) and any(i in s for i in listed)]

    monkeypatch.syspath_prepend(str(tmp_path / "p" / "src"))
    try:
        module = importlib.import_module("agent_presets_jot")
        plugins = load_plugins([module])
        catalog = collect(plugins)
        assert plugins.problems == catalog.problems == []  # it loads and validates
        assert {a.id for a in catalog.adapters} == listed
        host = presets_host(plugins=[module], context={"view": "jot"})
        assert host.call_tool("jot_add_note", text=" buy milk ") == {"number": 1}
        host.restart()
        assert host.call_tool("jot_list_notes") == {"notes": ["buy milk"]}
    finally:
        for name in [n for n in sys.modules if n.split(".")[0] == "agent_presets_jot"]:
            del sys.modules[name]


@pytest.mark.parametrize("plugin", ["drawing", "general", "graph", "scene", "units"])
def test_the_built_in_plugins_keep_their_hooks(plugin: str) -> None:
    module = importlib.import_module(f"agent_presets_{plugin}")
    [info] = load_plugins([module]).plugins
    # general is the Space app (its defaults) and owns the shell's flags
    own = ["presets_host_defaults", "presets_serve_options"] if plugin == "general" else []
    # drawing, graph and units also serve a resource, a template or a prompt.
    if plugin in ("drawing", "graph", "units"):
        own.append("presets_content_providers")
    assert sorted(info.hooks) == sorted(
        [
            "presets_context_fields",
            "presets_headless_runtime",
            "presets_preset_files",
            "presets_tool_adapters",
            *own,
        ]
    )
    assert PresetTable.of(module)


def test_the_documented_plugin_kit_example_loads_as_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import re

    doc = (Path(__file__).parents[2] / "docs" / "plugins.md").read_text(encoding="utf-8")
    section = doc.split("## The plugin kit", 1)[1].split("\n## ", 1)[0]
    [init] = re.findall(r"```python\n(.*?)```", section, re.S)
    package = tmp_path / "agent_presets_notes"
    package.mkdir()
    (package / "__init__.py").write_text(init)
    (package / "adapters.py").write_text(PACKAGE_ADAPTERS)
    (package / "presets.yaml").write_text(PACKAGE_PRESETS)
    (package / "notebook.py").write_text("class Notebook(list):\n    def __init__(self, t): ...\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        module = importlib.import_module("agent_presets_notes")
        [info] = load_plugins([module]).plugins
        assert len(info.hooks) == 4
        assert PresetTable.of(module) == {"notes-tools": ("auto", "normal", ["notes_count"])}
    finally:
        for name in [n for n in sys.modules if n.split(".")[0] == "agent_presets_notes"]:
            del sys.modules[name]
