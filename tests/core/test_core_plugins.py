"""Plugin discovery for real: installed built-ins, throwaway distributions, env switches, problems.

Throwaway distributions are faked the way pluggy's own tests do it: a module
written to tmp_path and a fake ``importlib.metadata`` distribution whose entry
point names it.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import re
import sys
import textwrap
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from agent_presets import (
    PresetValidationError,
    ToolAdapter,
    ToolAdapterRegistry,
    bootstrap,
    hookimpl,
    load_plugins,
)
from agent_presets.lib.catalog import collect
from agent_presets.lib.plugins import PluginLoadError

BUILTINS = ("drawing", "graph", "scene", "general", "units")

GOOD_PLUGIN = """
from pathlib import Path

from agent_presets import ToolAdapter, hookimpl

HERE = Path(__file__).with_name("{module}.yaml")


@hookimpl
def presets_preset_files():
    return [HERE]


@hookimpl
def presets_tool_adapters():
    return [
        ToolAdapter(
            "throwaway.hello",
            "space_throwaway_hello",
            "Say hello.",
            {{"type": "object"}},
            lambda app, arguments: "hello from the throwaway plugin",
        )
    ]
"""

GOOD_PRESETS = """\
presets:
  - name: throwaway-tools
    default_state: auto
    risk: normal
    contexts: [{surface: any}]
    tool_ids: [throwaway.hello]
"""

BROKEN_PLUGIN = """
raise ImportError("cannot import name 'frobnicate' from 'somewhere'")
"""

MISSPELT_PLUGIN = """
from agent_presets import hookimpl


@hookimpl
def presets_preset_file():
    return []
"""


@dataclass
class FakeDistribution:
    name: str
    entry_points: list[importlib.metadata.EntryPoint] = field(default_factory=list)
    version: str = "0.0.1"

    @property
    def metadata(self) -> dict[str, str]:
        return {"name": self.name}


Installer = Callable[..., str]


@pytest.fixture
def install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Installer]:
    """``install(dist, plugin, source)``: a throwaway plugin distribution, gone after the test."""
    fakes: list[FakeDistribution] = []
    before: list[FakeDistribution] = []  # found ahead of the installed ones
    real = importlib.metadata.distributions

    def distributions(**kwargs: Any) -> list[Any]:
        return [*before, *real(**kwargs), *fakes]

    monkeypatch.setattr(importlib.metadata, "distributions", distributions)
    monkeypatch.syspath_prepend(str(tmp_path))
    modules: list[str] = []

    def installer(
        dist: str, plugin: str, source: str, presets: str | None = None, *, first: bool = False
    ) -> str:
        module = f"throwaway_{plugin}_{uuid.uuid4().hex[:8]}"
        (tmp_path / f"{module}.py").write_text(
            textwrap.dedent(source).format(module=module), encoding="utf-8"
        )
        if presets is not None:
            (tmp_path / f"{module}.yaml").write_text(presets, encoding="utf-8")
        importlib.invalidate_caches()
        modules.append(module)
        entry_point = importlib.metadata.EntryPoint(plugin, module, "agent_presets")
        (before if first else fakes).append(FakeDistribution(dist, [entry_point]))
        return module

    yield installer
    for module in modules:
        sys.modules.pop(module, None)


# ------------------------------------------------------------------ built-ins


def test_the_five_builtins_are_found_by_entry_point_as_installed_distributions():
    plugin_set = load_plugins()
    for name in BUILTINS:
        info = plugin_set.get(name)
        assert info is not None, f"built-in plugin {name!r} not discovered"
        assert info.distribution == f"agent-presets-{name}"
        assert info.builtin
        assert info.version
    assert [
        p for p in plugin_set.problems if p.distribution in {f"agent-presets-{n}" for n in BUILTINS}
    ] == []


def test_the_builtins_declare_entry_points_in_the_agent_presets_group():
    found = {
        ep.name: ep.dist.metadata["name"] if ep.dist else None
        for ep in importlib.metadata.entry_points(group="agent_presets")
    }
    for name in BUILTINS:
        assert found.get(name) == f"agent-presets-{name}"


# ------------------------------------------------------------------ throwaway distributions


def test_a_throwaway_distribution_is_discovered_and_its_tools_served(install):
    install("agent-presets-throwaway", "throwaway", GOOD_PLUGIN, GOOD_PRESETS)
    plugin_set = load_plugins(env={"PRESETS_LOAD_PLUGINS": "throwaway"})
    info = plugin_set.get("throwaway")
    assert info is not None
    assert (info.distribution, info.version, info.builtin) == (
        "agent-presets-throwaway",
        "0.0.1",
        False,
    )
    assert set(info.hooks) == {"presets_preset_files", "presets_tool_adapters"}
    assert info.label == "throwaway (agent-presets-throwaway 0.0.1)"

    presets = bootstrap(SimpleNamespace(), plugins=plugin_set)

    assert presets.problems == []
    assert presets.tool_registry.names() == ["space_throwaway_hello"]
    assert presets.tool_registry.get("space_throwaway_hello").run({}) == (
        "hello from the throwaway plugin"
    )
    assert presets.preset_plugin == {"throwaway-tools": "throwaway"}


def test_a_broken_plugin_is_skipped_and_reported_and_the_rest_load(install):
    install("agent-presets-broken", "broken", BROKEN_PLUGIN)
    install("agent-presets-throwaway", "throwaway", GOOD_PLUGIN, GOOD_PRESETS)

    plugin_set = load_plugins()

    names = {p.name for p in plugin_set.plugins}
    assert {*BUILTINS, "throwaway"} <= names
    assert "broken" not in names
    [problem] = [p for p in plugin_set.problems if p.plugin == "broken"]
    assert problem.distribution == "agent-presets-broken"
    message = str(problem)
    assert "distribution agent-presets-broken 0.0.1" in message
    assert "ImportError: cannot import name 'frobnicate'" in message
    assert "PRESETS_LOAD_PLUGINS" in message
    assert "pip uninstall agent-presets-broken" in message


def test_a_broken_distribution_is_reported_at_the_line_of_its_code_that_raised(install):
    module = install("agent-presets-broken", "broken", BROKEN_PLUGIN)
    [problem] = load_plugins(env={"PRESETS_LOAD_PLUGINS": "broken"}).problems
    assert problem.source is not None and problem.source.endswith(f"{module}.py")
    assert problem.line == 2  # the raise, after the leading blank line
    assert str(problem).startswith(f"{problem.source}:2: plugin 'broken'")


def test_strict_mode_makes_a_broken_plugin_fatal(install, monkeypatch):
    install("agent-presets-broken", "broken", BROKEN_PLUGIN)
    monkeypatch.setenv("PRESETS_STRICT", "1")
    with pytest.raises(PluginLoadError) as info:
        load_plugins()
    assert "agent-presets-broken" in str(info.value)
    assert "PRESETS_STRICT=1" in str(info.value)


def test_a_broken_plugin_left_out_by_name_causes_no_problem(install):
    install("agent-presets-broken", "broken", BROKEN_PLUGIN)
    plugin_set = load_plugins(env={"PRESETS_LOAD_PLUGINS": "graph", "PRESETS_STRICT": "1"})
    assert [p.name for p in plugin_set.plugins] == ["graph"]
    assert plugin_set.problems == []


def test_a_misspelt_hook_in_a_distribution_is_reported(install):
    install("agent-presets-typo", "typo", MISSPELT_PLUGIN)
    plugin_set = load_plugins(env={"PRESETS_LOAD_PLUGINS": "typo,graph"})
    assert [p.name for p in plugin_set.plugins] == ["graph"]
    [problem] = plugin_set.problems
    assert problem.distribution == "agent-presets-typo"
    assert "presets_preset_file" in str(problem)
    assert "unknown hook" in str(problem)


def test_two_distributions_claiming_one_plugin_name_are_reported(install):
    install("agent-presets-first", "twin", GOOD_PLUGIN, GOOD_PRESETS)
    install("agent-presets-second", "twin", GOOD_PLUGIN, GOOD_PRESETS)
    plugin_set = load_plugins(env={"PRESETS_LOAD_PLUGINS": "twin"})
    assert plugin_set.get("twin").distribution == "agent-presets-first"
    [problem] = plugin_set.problems
    assert "agent-presets-first" in str(problem) and "agent-presets-second" in str(problem)


# ------------------------------------------------------------------ PRESETS_LOAD_PLUGINS


def test_load_plugins_unset_loads_every_installed_plugin():
    names = {p.name for p in load_plugins(env={}).plugins}
    assert set(BUILTINS) <= names


def test_load_plugins_empty_loads_none(monkeypatch):
    monkeypatch.setenv("PRESETS_LOAD_PLUGINS", "")
    plugin_set = load_plugins()
    assert plugin_set.plugins == []
    assert plugin_set.problems == []


def test_load_plugins_comma_list_loads_only_those(monkeypatch):
    monkeypatch.setenv("PRESETS_LOAD_PLUGINS", " graph , units,")
    plugin_set = load_plugins()
    assert sorted(p.name for p in plugin_set.plugins) == ["graph", "units"]
    assert plugin_set.problems == []
    for name in ("drawing", "scene", "general"):
        assert plugin_set.pm.is_blocked(name)


def test_load_plugins_names_an_unknown_plugin_in_the_list(monkeypatch):
    monkeypatch.setenv("PRESETS_LOAD_PLUGINS", "graph,grpah")
    plugin_set = load_plugins()
    assert [p.name for p in plugin_set.plugins] == ["graph"]
    [problem] = plugin_set.problems
    assert "'grpah'" in str(problem)
    assert "graph" in str(problem).split("installed plugins:")[1]


def test_an_unknown_plugin_in_the_list_is_fatal_in_strict_mode():
    with pytest.raises(PluginLoadError, match="grpah"):
        load_plugins(env={"PRESETS_LOAD_PLUGINS": "grpah", "PRESETS_STRICT": "1"})


# ------------------------------------------------------------------ plugin objects


class TypoPlugin:
    @hookimpl
    def presets_preset_file(self) -> list[Path]:
        return []


def test_a_misspelt_hook_in_a_plugin_object_is_reported_and_skipped():
    plugin_set = load_plugins([TypoPlugin()])
    assert plugin_set.plugins == []
    [problem] = plugin_set.problems
    assert problem.plugin == "TypoPlugin"
    assert "presets_preset_file" in str(problem)
    assert "fix or remove it" in str(problem)


def test_a_misspelt_hook_is_fatal_in_strict_mode(monkeypatch):
    monkeypatch.setenv("PRESETS_STRICT", "1")
    with pytest.raises(PluginLoadError, match="presets_preset_file"):
        load_plugins([TypoPlugin()])


def test_plugin_objects_replace_discovery():
    class Quiet:
        @hookimpl
        def presets_tool_adapters(self) -> list[ToolAdapter]:
            return []

    plugin_set = load_plugins([Quiet()])
    assert [(p.name, p.distribution, p.hooks) for p in plugin_set.plugins] == [
        ("Quiet", None, ("presets_tool_adapters",))
    ]


# ------------------------------------------------------------------ tracing


def adapter(tool_id: str, mcp_name: str | None = None) -> ToolAdapter:
    name = mcp_name or "space_" + tool_id.replace(".", "_").replace("-", "_")
    return ToolAdapter(tool_id, name, f"Tool {tool_id}.", {"type": "object"}, lambda a, b: None)


class PresetsFrom:
    """A plugin shipping one YAML file and some adapters."""

    def __init__(self, path: Path | None = None, adapters: list[ToolAdapter] | None = None):
        self.path = path
        self.adapters = adapters or []

    @hookimpl
    def presets_preset_files(self) -> list[Path]:
        return [self.path] if self.path else []

    @hookimpl
    def presets_tool_adapters(self) -> list[ToolAdapter]:
        return self.adapters


def yaml_file(directory: Path, name: str, *presets: tuple[str, str]) -> Path:
    lines = ["presets:"]
    for preset, tool_id in presets:
        lines.append(
            f"  - {{name: {preset}, default_state: auto, risk: normal, "
            f"contexts: [{{surface: any}}], tool_ids: [{tool_id}]}}"
        )
    path = directory / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_trace_plugins_prints_hook_calls_to_stderr(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("PRESETS_TRACE_PLUGINS", "1")
    plugin = PresetsFrom(yaml_file(tmp_path, "a.yaml", ("a-tools", "a.tool")), [adapter("a.tool")])
    bootstrap(SimpleNamespace(), plugins=[plugin])
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2
    assert re.fullmatch(
        r"hook presets_preset_files -> PresetsFrom: 1 result in \d+\.\d ms", lines[0]
    )
    assert re.fullmatch(
        r"hook presets_tool_adapters -> PresetsFrom: 1 result in \d+\.\d ms", lines[1]
    )


def test_no_trace_without_the_switch(capsys, tmp_path):
    plugin = PresetsFrom(yaml_file(tmp_path, "a.yaml", ("a-tools", "a.tool")), [adapter("a.tool")])
    bootstrap(SimpleNamespace(), plugins=[plugin])
    assert capsys.readouterr().err == ""


# ------------------------------------------------------------------ collisions and problems


class First(PresetsFrom):
    pass


class Second(PresetsFrom):
    pass


def test_one_preset_name_in_two_plugins_is_reported_naming_both_sources(tmp_path):
    first = yaml_file(tmp_path, "first.yaml", ("shared-tools", "first.tool"))
    second = yaml_file(tmp_path, "second.yaml", ("shared-tools", "second.tool"))
    presets = bootstrap(
        SimpleNamespace(),
        plugins=[
            First(first, [adapter("first.tool")]),
            Second(second, [adapter("second.tool")]),
        ],
    )
    [problem] = presets.problems
    message = str(problem)
    assert "preset 'shared-tools' is defined twice" in message
    assert str(first) in message and str(second) in message
    # The first definition wins; nothing is renamed.
    assert presets.registry.names() == ["shared-tools"]
    assert presets.registry.get("shared-tools").tool_ids == ("first.tool",)
    assert presets.tool_registry.names() == ["space_first_tool"]


def test_one_adapter_id_in_two_plugins_is_reported_naming_both_sources(tmp_path):
    path = yaml_file(tmp_path, "p.yaml", ("p-tools", "same.tool"))
    presets = bootstrap(
        SimpleNamespace(),
        plugins=[
            First(path, [adapter("same.tool")]),
            Second(None, [adapter("same.tool", "space_x")]),
        ],
    )
    [problem] = presets.problems
    assert "tool adapter 'same.tool' is provided twice: by First and by Second" in str(problem)
    assert presets.tool_adapters.get("same.tool").mcp_name == "space_same_tool"


def test_collect_reports_every_definition_problem_of_a_plugin_set(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("presets:\n  - 42\n", encoding="utf-8")
    orphan = yaml_file(tmp_path, "orphan.yaml", ("orphan-tools", "nobody.tool"))

    class Messy:
        @hookimpl
        def presets_preset_files(self) -> Any:
            return [bad, orphan, 42, tmp_path / "missing.yaml"]

        @hookimpl
        def presets_tool_adapters(self) -> Any:
            return [adapter("fine.tool"), "not an adapter", adapter("other.tool", "wrong_prefix")]

    catalog = collect(load_plugins([Messy()]), namespace_prefix="space_")
    messages = [str(p) for p in catalog.problems]
    assert any(m.startswith(f"{bad}:2:5: ") for m in messages)
    assert any("no installed plugin provides tool id(s) 'nobody.tool'" in m for m in messages)
    assert any("presets_preset_files returned int" in m for m in messages)
    assert any("cannot read preset file" in m and "missing.yaml" in m for m in messages)
    assert any("returned str, expected ToolAdapter" in m for m in messages)
    assert any("MCP name 'wrong_prefix' must start with 'space_'" in m for m in messages)
    assert len(messages) == 6
    assert [a.id for a in catalog.adapters] == ["fine.tool"]
    assert catalog.presets == []


def test_a_hook_returning_a_single_path_instead_of_a_list_is_reported(tmp_path):
    path = yaml_file(tmp_path, "p.yaml", ("p-tools", "p.tool"))

    class NotAList:
        @hookimpl
        def presets_preset_files(self) -> Any:
            return path

    catalog = collect(load_plugins([NotAList()]))
    [problem] = catalog.problems
    assert "plugin 'NotAList': a hook returned" in str(problem)
    assert "return a list" in str(problem)


def test_definition_problems_are_fatal_in_strict_mode(monkeypatch, tmp_path):
    monkeypatch.setenv("PRESETS_STRICT", "1")
    path = yaml_file(tmp_path, "p.yaml", ("p-tools", "nobody.tool"))
    with pytest.raises(PresetValidationError, match="PRESETS_STRICT=1") as info:
        bootstrap(SimpleNamespace(), plugins=[PresetsFrom(path)])
    assert "nobody.tool" in str(info.value)


def test_an_unknown_tool_id_says_which_provided_one_was_meant(tmp_path):
    path = yaml_file(tmp_path, "p.yaml", ("p-tools", "notes.apend"), ("q-tools", "zzz.qqq"))
    catalog = collect(load_plugins([First(path, [adapter("notes.append")])]))
    assert [str(p) for p in catalog.problems] == [
        f"{path}:2:95: preset 'p-tools': no installed plugin provides tool id(s) 'notes.apend' "
        "(did you mean 'notes.append'?); install the plugin that does or fix the id",
        f"{path}:3:95: preset 'q-tools': no installed plugin provides tool id(s) 'zzz.qqq'; "
        "install the plugin that does or fix the id",
    ]


def test_a_prompt_placeholder_no_adapter_provides_says_which_one_was_meant(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(
        "presets:\n  - {name: p-tools, default_state: auto, risk: normal, contexts: "
        "[{surface: any}], tool_ids: [notes.append], system_prompt: 'Use {{notes.apend}}.'}\n",
        encoding="utf-8",
    )
    [problem] = collect(load_plugins([First(path, [adapter("notes.append")])])).problems
    assert problem.message.endswith(
        "no installed plugin provides that tool id; did you mean 'notes.append'?"
    )


def test_resolving_an_unknown_tool_id_says_which_one_was_meant():
    registry = ToolAdapterRegistry()
    registry.register(adapter("notes.append"))
    with pytest.raises(PresetValidationError, match=r"did you mean 'notes\.append'\?$"):
        registry.resolve("notes.apend")


# ------------------------------------------------------------------ clashes with a built-in

# The throwaway plugin with its tool renamed to the general plugin's MCP name.
THEME_CLASH = GOOD_PLUGIN.replace('"throwaway.hello"', '"clasher.theme"').replace(
    "space_throwaway_hello", "space_app_set_theme"
)
CLASH_PRESETS = GOOD_PRESETS.replace("throwaway-tools", "clasher-tools").replace(
    "throwaway.hello", "clasher.theme"
)


def test_a_third_party_never_takes_a_built_in_mcp_name_even_when_it_loads_first(install):
    module = install("agent-presets-clasher", "clasher", THEME_CLASH, CLASH_PRESETS, first=True)
    plugin_set = load_plugins(env={"PRESETS_LOAD_PLUGINS": "clasher,general"})
    assert [p.name for p in plugin_set.plugins] == ["clasher", "general"]
    catalog = collect(plugin_set)
    assert "general-theme-tools" in {p.name for p in catalog.presets}
    assert "clasher-tools" not in {p.name for p in catalog.presets}
    [problem] = catalog.problems  # no second one for the built-in's prompt placeholder
    assert problem.source is not None and problem.source.endswith(f"{module}.py")
    assert "the built-in plugin general keeps it: give 'clasher.theme' another name" in str(problem)
    assert str(problem).endswith("left out with it: preset(s) 'clasher-tools'")
    assert list(catalog.clashes) == ["clasher"]


def test_presets_plugins_names_the_plugin_that_lost_a_name_and_fails(install, monkeypatch):
    from click.testing import CliRunner

    from agent_presets.cli import main

    install("agent-presets-clasher", "clasher", THEME_CLASH, CLASH_PRESETS, first=True)
    monkeypatch.setenv("PRESETS_LOAD_PLUGINS", "clasher,general")
    result = CliRunner().invoke(main, ["plugins", "--json"])
    assert result.exit_code == 1
    listed = json.loads(result.stdout)
    assert [(p["name"], p["status"]) for p in listed["plugins"]] == [("clasher", "clash")]
    assert "left out with it: preset(s) 'clasher-tools'" in result.stderr


def test_a_plugin_of_the_working_folder_that_fails_to_load_is_told_to_fix_its_code(
    install, monkeypatch, tmp_path
):
    install("agent-presets-broken", "broken", BROKEN_PLUGIN)
    monkeypatch.chdir(tmp_path)  # the plugin's own checkout, as its author runs the checks
    [problem] = load_plugins(env={"PRESETS_LOAD_PLUGINS": "broken"}).problems
    message = str(problem)
    assert "the plugin of this folder" in message
    assert "fix the error in its code" in message
    assert "pip uninstall" not in message


def test_an_installed_copy_is_shown_at_the_checkout_it_came_from(monkeypatch, tmp_path):
    from agent_presets.lib.plugins import display_path

    installed = tmp_path / "venv/lib/python3.11/site-packages/my_plugin/adapters.py"
    source = tmp_path / "checkout/src/my_plugin/adapters.py"
    for path in (installed, source):
        path.parent.mkdir(parents=True)
        path.write_text("x = 1\n")
    monkeypatch.chdir(tmp_path / "checkout")
    assert display_path(str(installed)) == "src/my_plugin/adapters.py"
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")  # not a checkout of it: the installed file
    assert display_path(str(installed)) == str(installed)


def test_a_third_party_preset_never_replaces_a_built_in_preset_of_the_same_name(install):
    presets = GOOD_PRESETS.replace("throwaway-tools", "general-theme-tools")
    install("agent-presets-thief", "thief", GOOD_PLUGIN, presets, first=True)
    plugin_set = load_plugins(env={"PRESETS_LOAD_PLUGINS": "thief,general"})
    catalog = collect(plugin_set)
    [kept] = [p for p in catalog.presets if p.name == "general-theme-tools"]
    assert kept.tool_ids == ("app.set-theme",)
    assert catalog.preset_plugin["general-theme-tools"] == "general"
    [problem] = catalog.clashes["thief"]
    assert "preset 'general-theme-tools' is defined twice" in str(problem)
    assert str(problem).endswith(
        "the built-in plugin general keeps it, and plugin thief's definition is left out"
    )


def test_a_third_party_never_takes_a_built_in_tool_id_even_when_it_loads_first(install):
    source = GOOD_PLUGIN.replace('"throwaway.hello"', '"app.set-theme"')
    module = install("agent-presets-thief", "thief", source, first=True)
    catalog = collect(load_plugins(env={"PRESETS_LOAD_PLUGINS": "thief,general"}))
    assert catalog.adapter_plugin["app.set-theme"] == "general"
    [problem] = catalog.clashes["thief"]
    assert problem.source is not None and problem.source.endswith(f"{module}.py")
    assert "tool adapter 'app.set-theme' is provided twice" in str(problem)
    assert "plugin general keeps it: rename the id in plugin thief" in str(problem)
    assert "general-theme-tools" in {p.name for p in catalog.presets}
