"""Whole-catalog collisions, and a runtime change that would collide changing nothing."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from agent_presets import (
    DuplicateToolError,
    PresetValidationError,
    ToolAdapter,
    bootstrap,
    hookimpl,
    load_plugins,
)
from agent_presets.lib.catalog import can_be_active_together, collect, patterns_meet
from agent_presets.lib.model import Preset
from agent_presets_general import SpaceHost

HERE = Path(__file__).resolve()
ADAPTER_LINE = next(
    n
    for n, text in enumerate(Path(__file__).read_text().splitlines(), 1)
    if text.endswith("# ADAPTER_LINE")
)


def adapter(tool_id: str, name: str) -> ToolAdapter:
    return ToolAdapter(  # ADAPTER_LINE
        tool_id,
        description=f"Tool {tool_id}.",
        input_schema={"type": "object"},
        handler=lambda app, args: tool_id,
        name=name,
    )


class Plugin:
    """A plugin shipping one YAML file of (name, state, contexts, tool id) presets, and adapters."""

    def __init__(
        self,
        name: str,
        directory: Path,
        presets: list[tuple[str, str, str, str]],
        adapters: list[ToolAdapter],
        fields: list[dict[str, Any]] | None = None,
    ) -> None:
        self.__name__ = name
        self.path = directory / f"{name}.yaml"
        lines = ["presets:"]
        for preset, state, contexts, tool_id in presets:
            lines += [
                f"  - name: {preset}",
                f"    default_state: {state}",
                "    risk: normal",
                f"    contexts: {contexts}",
                f"    tool_ids: [{tool_id}]",
            ]
        self.path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        self.adapters = adapters
        self.fields = fields

    @hookimpl
    def presets_preset_files(self) -> list[Path]:
        return [self.path]

    @hookimpl
    def presets_tool_adapters(self) -> list[ToolAdapter]:
        return self.adapters

    @hookimpl
    def presets_context_fields(self) -> list[dict[str, Any]] | None:
        return self.fields


def test_one_mcp_name_from_two_plugins_is_an_error_naming_both(tmp_path: Path) -> None:
    first = Plugin(
        "general",
        tmp_path,
        [("theme-tools", "auto", "[{surface: any}]", "app.set-theme")],
        [adapter("app.set-theme", "app_set_theme")],
    )
    second = Plugin(
        "thirdparty",
        tmp_path,
        [("my-theme-tools", "auto", "[{surface: canvas}]", "my.theme")],
        [adapter("my.theme", "app_set_theme")],
    )
    catalog = collect(load_plugins([first, second]))
    # One problem, at the code that made the adapter (not the YAML that lists it), and no
    # second one for the preset left out with it.
    [problem] = catalog.problems
    assert (Path(problem.source or "").resolve(), problem.line) == (HERE, ADAPTER_LINE)
    message = problem.message
    assert message.startswith("MCP name 'app_set_theme' is given by")
    assert "plugin thirdparty" in message and "plugin general" in message
    assert f"(made at {problem.source}:{ADAPTER_LINE})" in message  # the other, with its place
    assert message.endswith("left out with it: preset(s) 'my-theme-tools'")
    assert [a.id for a in catalog.adapters] == ["app.set-theme"]
    assert [p.name for p in catalog.presets] == ["theme-tools"]


def test_variants_of_one_plugin_for_contexts_that_never_meet_are_allowed(tmp_path: Path) -> None:
    plugin = Plugin(
        "viewer",
        tmp_path,
        [
            ("view-scene", "auto", "[{surface: scene}]", "view.scene"),
            ("view-canvas", "auto", "[{surface: canvas}]", "view.canvas"),
            ("view-forced", "off", "[]", "view.forced"),
        ],
        [
            adapter("view.scene", "view"),
            adapter("view.canvas", "view"),
            adapter("view.forced", "view"),
        ],
    )
    catalog = collect(load_plugins([plugin]))
    assert catalog.problems == []
    presets = bootstrap(SimpleNamespace(), plugins=[plugin], context={"surface": "scene"})
    assert presets.tool_registry.get("view").managed_source == "view.scene"  # type: ignore[union-attr]
    presets.manager.set_context({"surface": "canvas"})
    assert presets.tool_registry.get("view").managed_source == "view.canvas"  # type: ignore[union-attr]


def test_variants_of_one_plugin_whose_presets_can_meet_are_an_error(tmp_path: Path) -> None:
    plugin = Plugin(
        "viewer",
        tmp_path,
        [
            ("view-scene", "auto", "[{surface: scene}]", "view.scene"),
            ("view-anywhere", "auto", "[{activity: none}]", "view.anywhere"),
        ],
        [adapter("view.scene", "view"), adapter("view.anywhere", "view")],
    )
    catalog = collect(load_plugins([plugin]))
    [problem] = catalog.problems
    assert (Path(problem.source or "").resolve(), problem.line) == (HERE, ADAPTER_LINE)
    message = problem.message
    assert message.startswith("MCP name 'view' is given by")
    assert f"'view.scene' (listed at {plugin.path}:6:16)" in message
    assert f"'view.anywhere' (listed at {plugin.path}:11:16)" in message
    assert "can be active in the same context" in message
    assert [p.name for p in catalog.presets] == ["view-scene"]


@pytest.mark.parametrize(
    ("first", "second", "meet"),
    [
        ({"surface": "scene"}, {"surface": "canvas"}, False),
        ({"surface": "scene"}, {"surface": "scene", "activity": "x"}, True),
        ({"surface": "scene"}, {"activity": "x"}, True),
        ({"surface": "any"}, {"surface": "canvas"}, True),
        ({"activity": "none"}, {"activity": "drawing"}, False),
        ({"activity": None}, {"activity": "none"}, True),
        ({"canvas_visible": True}, {"canvas_visible": False}, False),
    ],
)
def test_patterns_meet_when_some_context_matches_both(
    first: dict[str, Any], second: dict[str, Any], meet: bool
) -> None:
    assert patterns_meet(first, second) is meet
    assert patterns_meet(second, first) is meet


def test_an_off_preset_never_auto_activates_with_another() -> None:
    on = Preset("a", "auto", "normal", ({"surface": "any"},), ("a.t",))
    off = Preset("b", "off", "normal", (), ("b.t",))
    assert not can_be_active_together(on, off)
    assert can_be_active_together(on, on)


def test_duplicate_preset_names_across_plugins_name_both_files(tmp_path: Path) -> None:
    first = Plugin(
        "one", tmp_path, [("tools", "auto", "[{s: any}]", "one.t")], [adapter("one.t", "one_t")]
    )
    second = Plugin(
        "two", tmp_path, [("tools", "auto", "[{s: any}]", "two.t")], [adapter("two.t", "two_t")]
    )
    [problem] = collect(load_plugins([first, second])).problems
    assert str(problem).startswith(f"{second.path}:2:11: preset 'tools' is defined twice")
    assert f"in {first.path} and in {second.path}" in str(problem)


# ---------------------------------------------------------------- at run time


def variants(tmp_path: Path) -> Plugin:
    """'view' from a forced-on-able variant and a canvas variant: they collide only at run time."""
    return Plugin(
        "viewer",
        tmp_path,
        [
            ("view-forced", "off", "[]", "view.forced"),
            ("view-canvas", "auto", "[{surface: canvas}]", "view.canvas"),
        ],
        [adapter("view.forced", "view"), adapter("view.canvas", "view")],
    )


def test_an_override_that_would_collide_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    presets = bootstrap(
        SimpleNamespace(), plugins=[variants(tmp_path)], context={"surface": "canvas"}
    )
    assert presets.problems == []
    before = presets.manager.resolve()
    with pytest.raises(DuplicateToolError, match="view"):
        presets.manager.set_override("view-forced", "on")
    assert presets.manager.get_overrides() == {}
    assert presets.manager.resolve() is before


def test_a_shell_switch_that_would_collide_is_refused_unsaved_and_serve_restarts(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    host = SpaceHost(state)
    presets = host.start([variants(tmp_path)])
    presets.manager.set_override("view-forced", "on")  # on the scene: no canvas variant yet
    saved = (
        (state / "shell.json").read_text(encoding="utf-8")
        if (state / "shell.json").exists()
        else None
    )
    with pytest.raises(DuplicateToolError):
        host.shell.set_surface("canvas")
    assert host.shell.surface == "scene"
    assert host.shell.canvas_visible is False
    assert host.context()["surface"] == presets.manager.get_context()["surface"] == "scene"
    now = (
        (state / "shell.json").read_text(encoding="utf-8")
        if (state / "shell.json").exists()
        else None
    )
    assert now == saved
    assert presets.tool_registry.get("space_view").managed_source == "view.forced"  # type: ignore[union-attr]
    host.shell.set_theme("dark")  # the shell still works, and saves
    assert json.loads((state / "shell.json").read_text(encoding="utf-8"))["surface"] == "scene"
    close = getattr(host, "close", None)
    if close is not None:
        close()
    again = SpaceHost(state)
    assert again.start([variants(tmp_path)]).manager.get_context()["surface"] == "scene"


def test_an_undeclared_activity_from_the_shell_is_refused_and_unsaved(tmp_path: Path) -> None:
    host = SpaceHost(tmp_path / "state")
    presets = host.start([variants(tmp_path)])
    with pytest.raises(PresetValidationError, match="no declared value 'paintng'"):
        host.shell.set_activity("paintng")
    assert host.shell.activity is None
    assert presets.manager.get_context()["activity"] is None


def test_an_mcp_name_without_the_prefix_is_one_problem_at_the_adapter(tmp_path: Path) -> None:
    wrong = ToolAdapter(
        "my.theme",
        mcp_name="other_my_theme",
        description="Theme.",
        input_schema={"type": "object"},
        handler=lambda app, args: None,
    )
    line = sys._getframe().f_lineno - 7
    plugin = Plugin(
        "thirdparty", tmp_path, [("my-tools", "auto", "[{surface: any}]", "my.theme")], [wrong]
    )
    catalog = collect(load_plugins([plugin]), namespace_prefix="space_")
    [problem] = catalog.problems  # and no "no installed plugin provides 'my.theme'" after it
    assert (Path(problem.source or "").resolve(), problem.line) == (HERE, line)
    assert "MCP name 'other_my_theme' must start with 'space_'" in problem.message
    assert problem.message.endswith("left out with it: preset(s) 'my-tools'")
    assert catalog.presets == []
