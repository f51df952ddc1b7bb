"""The general presets are exactly the spec's General table."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

import agent_presets_general
from agent_presets import MissingRuntimeError, load_preset_file
from agent_presets.lib.boot import bootstrap
from agent_presets.lib.model import DANGEROUS_RISKS
from agent_presets.testing import mcp_name
from agent_presets_general import SPACE_DEFAULTS

if TYPE_CHECKING:
    from conftest import GeneralApp

DANGEROUS = (
    "general-world-tools",
    "general-file-read-tools",
    "general-file-write-tools",
    "general-shell-tools",
)

# The spec's "Built-In Presets / General" table: name -> (default, risk, MCP tools).
SPEC_TABLE = {
    "general-theme-tools": ("auto", "normal", ["space_app_set_theme"]),
    "general-canvas-tools": (
        "auto",
        "normal",
        ["space_app_set_canvas_visible", "space_app_set_activity", "space_app_switch_surface"],
    ),
    "general-world-tools": (
        "off",
        "destructive",
        ["space_app_create_world", "space_app_switch_world", "space_app_delete_world"],
    ),
    "general-file-read-tools": (
        "off",
        "filesystem-read",
        ["space_app_read_file", "space_app_list_files"],
    ),
    "general-file-write-tools": ("off", "filesystem-write", ["space_app_write_file"]),
    "general-shell-tools": ("off", "shell", ["space_app_run_bash"]),
}

SPACE = SPACE_DEFAULTS.namespace  # the Space app's, which these tools are served in


def _presets() -> list[Any]:
    (path,) = agent_presets_general.presets_preset_files()
    return load_preset_file(path)


def test_presets_match_the_spec_general_table() -> None:
    adapters = {a.id: a for a in agent_presets_general.presets_tool_adapters()}
    table = {
        p.name: (p.default_state, p.risk, [mcp_name(adapters[t], SPACE) for t in p.tool_ids])
        for p in _presets()
    }
    assert table == SPEC_TABLE


def test_every_preset_applies_on_any_surface_and_has_a_prompt() -> None:
    for preset in _presets():
        assert [dict(c) for c in preset.contexts] == [{"surface": "any"}]
        assert preset.group == "general"
        assert preset.system_prompt and len(preset.system_prompt) > 80
        if preset.risk in DANGEROUS_RISKS:
            assert preset.default_state == "off"


def test_every_adapter_is_used_by_a_preset_and_read_tools_say_so() -> None:
    used = {t for p in _presets() for t in p.tool_ids}
    adapters = agent_presets_general.presets_tool_adapters()
    assert {a.id for a in adapters} == used
    read_only = {mcp_name(a, SPACE) for a in adapters if a.annotations.get("readOnlyHint")}
    assert read_only == {"space_app_read_file", "space_app_list_files"}
    for adapter in adapters:
        assert adapter.input_schema["additionalProperties"] is False


def test_fresh_host_offers_only_the_safe_tools(general_app: GeneralApp) -> None:
    assert sorted(general_app.tools()) == sorted(
        SPEC_TABLE["general-theme-tools"][2] + SPEC_TABLE["general-canvas-tools"][2]
    )
    assert sorted(general_app.presets.tool_registry.names()) == sorted(general_app.tools())


@pytest.mark.parametrize("preset", DANGEROUS)
def test_dangerous_preset_appears_only_after_an_override(
    general_app: GeneralApp, preset: str, request: pytest.FixtureRequest
) -> None:
    if preset == "general-shell-tools":
        request.getfixturevalue("shell_sandbox")  # it is not turned on without one
    tools = SPEC_TABLE[preset][2]
    assert not set(tools) & set(general_app.tools())
    general_app.enable(preset)
    assert set(tools) <= set(general_app.tools())
    assert set(tools) <= set(general_app.presets.tool_registry.names())
    general_app.manager.set_override(preset, "auto")
    assert not set(tools) & set(general_app.presets.tool_registry.names())


def test_tools_fail_loudly_in_an_app_without_the_runtimes() -> None:
    presets = bootstrap(
        object(),
        context={"surface": "scene", "canvas_visible": False},
        plugins=[agent_presets_general],
        overrides={name: "on" for name in DANGEROUS},
    )
    tools = {t.name: t for t in presets.manager.get_tool_defs()}
    with pytest.raises(MissingRuntimeError, match=r"app\.shell"):
        tools["space_app_set_theme"].run({"theme": "dark"})
    with pytest.raises(MissingRuntimeError, match=r"app\.files"):
        tools["space_app_list_files"].run({})
    with pytest.raises(MissingRuntimeError, match=r"app\.bash"):
        tools["space_app_run_bash"].run({"command": "true"})
