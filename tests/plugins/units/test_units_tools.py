"""The unit tools, exercised through the manager's tool defs, error paths included."""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lanes import examples

import agent_presets_units
from agent_presets import MissingRuntimeError, ToolArgumentError, ToolCallError, load_preset_file
from agent_presets.lib.boot import bootstrap
from agent_presets.testing import mcp_name
from agent_presets_general import SPACE_DEFAULTS, SpaceApp

if TYPE_CHECKING:
    from conftest import UnitsApp

GREET = (
    '"""Greetings."""\n\n\ndef greet(name: str) -> str:\n    """Say hello."""\n'
    '    return f"hello {name}"\n'
)

SPACE = SPACE_DEFAULTS.namespace  # the Space app's, which these tools are served in


def test_presets_are_exactly_the_three_unit_presets() -> None:
    (path,) = agent_presets_units.presets_preset_files()
    adapters = {a.id: mcp_name(a, SPACE) for a in agent_presets_units.presets_tool_adapters()}
    table = {
        p.name: (p.default_state, p.risk, [adapters[t] for t in p.tool_ids], p.contexts)
        for p in load_preset_file(path)
    }
    any_surface = ({"surface": "any"},)
    assert table == {
        "units-inspect-tools": (
            "auto",
            "normal",
            ["space_unit_list", "space_unit_inspect"],
            any_surface,
        ),
        "units-edit-tools": (
            "off",
            "filesystem-write",
            ["space_unit_create", "space_unit_edit", "space_unit_apply_patch"],
            any_surface,
        ),
        "units-reload-tools": ("off", "shell", ["space_unit_reload"], any_surface),
    }
    assert set(adapters) == {t for p in load_preset_file(path) for t in p.tool_ids}


def test_only_inspection_is_offered_until_a_user_turns_editing_on(units_app: UnitsApp) -> None:
    assert sorted(units_app.tools()) == ["space_unit_inspect", "space_unit_list"]
    units_app.manager.set_override("units-edit-tools", "on")
    assert "space_unit_apply_patch" in units_app.presets.tool_registry.names()
    assert "space_unit_reload" not in units_app.presets.tool_registry.names()
    units_app.manager.set_override("units-reload-tools", "on")
    assert "space_unit_reload" in units_app.presets.tool_registry.names()


def test_create_list_and_inspect(editing_app: UnitsApp) -> None:
    assert editing_app.call("space_unit_list") == {"units": []}
    created = editing_app.call("space_unit_create", name="greeter", source=GREET)
    assert created["created"] is True
    assert created["status"] == {"state": "never-loaded"}
    assert (editing_app.unit_dir / "greeter.py").read_text() == GREET

    listing = editing_app.call("space_unit_list")
    assert listing == {
        "units": [{"name": "greeter", "size": len(GREET), "status": {"state": "never-loaded"}}]
    }
    info = editing_app.call("space_unit_inspect", name="greeter")
    assert info["source"] == GREET
    assert info["size"] == len(GREET.encode())
    assert len(info["sha256"]) == 64
    assert info["mtime"].endswith("+00:00")
    assert info["doc"] == "Greetings."
    assert info["functions"] == [
        {
            "name": "greet",
            "line": 4,
            "signature": "def greet(name: str) -> str",
            "doc": "Say hello.",
        }
    ]
    assert info["classes"] == []


def test_inspect_outlines_classes_and_reports_syntax_errors(editing_app: UnitsApp) -> None:
    source = "class Shape(Base):\n    def area(self):\n        return 0\n"
    editing_app.call("space_unit_create", name="shapes", source=source)
    info = editing_app.call("space_unit_inspect", name="shapes")
    assert info["classes"] == [
        {"name": "Shape", "line": 1, "bases": ["Base"], "methods": ["area"], "doc": None}
    ]
    editing_app.call("space_unit_edit", name="shapes", source="def (:\n", check_syntax=False)
    info = editing_app.call("space_unit_inspect", name="shapes")
    assert info["syntax_error"]["line"] == 1
    assert "functions" not in info


def test_create_refuses_an_existing_unit_and_bad_names(editing_app: UnitsApp) -> None:
    editing_app.call("space_unit_create", name="greeter", source=GREET)
    with pytest.raises(ToolCallError, match="already exists; edit it"):
        editing_app.call("space_unit_create", name="greeter", source="x = 1\n")
    assert (editing_app.unit_dir / "greeter.py").read_text() == GREET
    for bad in ("9lives", "has-dash", "../escape", "a.b", ""):
        with pytest.raises(ToolArgumentError, match="name"):
            editing_app.call("space_unit_create", name=bad, source="x = 1\n")
    with pytest.raises(ToolCallError, match="not a keyword"):
        editing_app.call("space_unit_create", name="class", source="x = 1\n")
    assert sorted(p.name for p in editing_app.unit_dir.iterdir()) == ["greeter.py"]


def test_syntax_errors_are_refused_with_their_line_unless_asked(editing_app: UnitsApp) -> None:
    with pytest.raises(ToolCallError, match="SyntaxError at line 2"):
        editing_app.call("space_unit_create", name="broken", source="x = 1\ny = (\n")
    assert not (editing_app.unit_dir / "broken.py").exists()
    editing_app.call(
        "space_unit_create", name="broken", source="x = 1\ny = (\n", check_syntax=False
    )
    assert (editing_app.unit_dir / "broken.py").exists()

    editing_app.call("space_unit_create", name="fine", source="x = 1\n")
    with pytest.raises(ToolCallError, match="unit 'fine' was not changed: SyntaxError at line 1"):
        editing_app.call("space_unit_edit", name="fine", source="def :\n")
    assert (editing_app.unit_dir / "fine.py").read_text() == "x = 1\n"


def test_edit_replaces_the_source_atomically(editing_app: UnitsApp) -> None:
    editing_app.call("space_unit_create", name="greeter", source=GREET)
    result = editing_app.call("space_unit_edit", name="greeter", source="VALUE = 2\n")
    assert result["size"] == 10
    assert (editing_app.unit_dir / "greeter.py").read_text() == "VALUE = 2\n"
    assert sorted(p.name for p in editing_app.unit_dir.iterdir()) == ["greeter.py"]


@pytest.mark.parametrize("tool", ["space_unit_edit", "space_unit_inspect", "space_unit_reload"])
def test_tools_on_a_missing_unit_say_which_units_exist(editing_app: UnitsApp, tool: str) -> None:
    editing_app.call("space_unit_create", name="greeter", source=GREET)
    arguments: dict[str, Any] = {"name": "nope"}
    if tool == "space_unit_edit":
        arguments["source"] = "x = 1\n"
    with pytest.raises(ToolCallError, match="no unit named 'nope'; existing units: greeter"):
        editing_app.call(tool, **arguments)
    assert not (editing_app.unit_dir / "nope.py").exists()


def test_a_good_patch_applies(editing_app: UnitsApp) -> None:
    editing_app.call("space_unit_create", name="greeter", source=GREET)
    patch = (
        "--- a/greeter.py\n+++ b/greeter.py\n"
        "@@ -5,2 +5,2 @@\n"
        '     """Say hello."""\n'
        '-    return f"hello {name}"\n'
        '+    return f"hi {name}!"\n'
    )
    result = editing_app.call("space_unit_apply_patch", name="greeter", patch=patch)
    assert result["hunks"] == [{"hunk": 1, "line": 5, "offset": 0}]
    assert (editing_app.unit_dir / "greeter.py").read_text() == GREET.replace(
        'f"hello {name}"', 'f"hi {name}!"'
    )


@pytest.mark.parametrize(
    ("patch", "error"),
    [
        (
            '@@ -5,2 +5,2 @@\n     """Say hi."""\n-    return 1\n+    return 2\n',
            r"hunk 1 \(@@ -5,2 \+5,2 @@\) does not apply: line 5 is",
        ),
        ("@@ -1,5 +1,1 @@\n-x\n", "hunk 1 .* ends early"),
        ("just make it better", "no hunks"),
        # Valid diff, but the result is not valid Python.
        ("@@ -4,1 +4,1 @@\n-def greet(name: str) -> str:\n+def greet(:\n", "SyntaxError"),
    ],
)
def test_a_patch_that_does_not_apply_changes_nothing(
    editing_app: UnitsApp, patch: str, error: str
) -> None:
    editing_app.call("space_unit_create", name="greeter", source=GREET)
    path = editing_app.unit_dir / "greeter.py"
    before = path.read_bytes()
    with pytest.raises(ToolCallError, match=error):
        editing_app.call("space_unit_apply_patch", name="greeter", patch=patch)
    assert path.read_bytes() == before
    assert sorted(p.name for p in editing_app.unit_dir.iterdir()) == ["greeter.py"]


def test_tools_fail_loudly_in_an_app_without_units() -> None:
    presets = bootstrap(
        object(),
        context={"surface": "scene", "canvas_visible": False},
        plugins=[SpaceApp(), agent_presets_units],
    )
    tools = {t.name: t for t in presets.manager.get_tool_defs()}
    with pytest.raises(MissingRuntimeError, match=r"requires app\.units"):
        tools["space_unit_list"].run({})


TEXT_LINES = st.lists(st.sampled_from(["a = 1", "", "b = 2", "def f():", "    pass"]), max_size=15)


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(old=TEXT_LINES.filter(bool), new=TEXT_LINES, data=st.data())
def test_through_the_tool_a_generated_patch_applies_and_a_corrupted_one_changes_no_byte(
    editing_app: UnitsApp, old: list[str], new: list[str], data: st.DataObject
) -> None:
    before = "\n".join(old) + "\n"
    after = "\n".join(new) + "\n" if new else ""
    if "space_unit_edit" not in editing_app.tools():
        editing_app.enable_all()
    if not (editing_app.unit_dir / "prop.py").exists():
        editing_app.call("space_unit_create", name="prop", source="", check_syntax=False)
    editing_app.call("space_unit_edit", name="prop", source=before, check_syntax=False)
    path = editing_app.unit_dir / "prop.py"
    patch = "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True), "a", "b"))
    if not patch:
        return
    lines = patch.splitlines(keepends=True)
    targets = [i for i, line in enumerate(lines[2:], 2) if line[:1] in (" ", "-")]
    if targets:
        i = data.draw(st.sampled_from(targets))
        bad = [*lines[:i], lines[i][0] + "§" + lines[i][1:], *lines[i + 1 :]]
        with pytest.raises(ToolCallError, match="does not apply"):
            editing_app.call(
                "space_unit_apply_patch", name="prop", patch="".join(bad), check_syntax=False
            )
        assert path.read_bytes() == before.encode()
    editing_app.call("space_unit_apply_patch", name="prop", patch=patch, check_syntax=False)
    assert path.read_text() == after
