"""The shipped test kit, ``agent_presets.testing``, as a plugin author uses it."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

import agent_presets
from agent_presets import PresetValidationError, ToolAdapter, ToolCallError, hookimpl, object_schema
from agent_presets.testing import (
    ContextValues,
    PresetsHost,
    PresetTable,
    assert_unchanged,
    mcp_name,
    plugin_adapters,
    read_only_tools,
    result_text,
)
from agent_presets_general import SpaceApp

PRESETS_YAML = """\
presets:
  - name: tally-tools
    default_state: auto
    risk: normal
    contexts: [{surface: canvas, activity: tally}]
    tool_ids: [tally.add, tally.read, tally.sloppy, tally.scribble]
  - name: tally-reset-tools
    default_state: off
    risk: destructive
    contexts: [{surface: canvas, activity: tally}]
    tool_ids: [tally.reset]
"""


class Tally:
    """A counter the host shares; ``changed`` tells the host to persist it."""

    def __init__(self) -> None:
        self.count = 0

    def to_state(self) -> dict[str, Any]:
        return {"count": self.count}


def add(tally: Tally, args: dict[str, Any]) -> dict[str, int]:
    if args["by"] <= 0:
        raise ToolCallError("by must be positive; pass 1 or more")
    tally.count += args["by"]
    return {"count": tally.count}


def sloppy(tally: Tally, args: dict[str, Any]) -> None:
    tally.count += 1  # a bug: it changes the tally, then refuses
    raise ToolCallError("refused, but too late")


class Ledger:
    """A runtime that keeps rows in the host's state database."""

    def __init__(self, table: Any) -> None:
        self.table = table


def scribble(ledger: Ledger, args: dict[str, Any]) -> None:
    ledger.table.put("entry/1", "written")  # a bug: it saves a row, then refuses
    raise ToolCallError("refused, but a row is saved")


class TallyPlugin:
    def __init__(self, folder: Path) -> None:
        self.file = folder / "presets.yaml"
        self.file.write_text(PRESETS_YAML, encoding="utf-8")

    @hookimpl
    def presets_preset_files(self) -> list[Path]:
        return [self.file]

    @hookimpl
    def presets_context_fields(self) -> list[dict[str, Any]]:
        return [{"name": "activity", "type": "string", "values": ["tally"]}]

    @hookimpl
    def presets_tool_adapters(self) -> list[ToolAdapter]:
        by = object_schema({"by": {"type": "integer"}}, ["by"])
        return [
            ToolAdapter.for_runtime(
                "tally.add",
                "tally",
                add,
                name="tally_add",
                description="Add.",
                input_schema=by,
            ),
            ToolAdapter.for_runtime(
                "tally.read",
                "tally",
                lambda t, a: {"count": t.count},
                name="tally_read",
                description="Read.",
                input_schema=object_schema({}),
                annotations={"readOnlyHint": True},
            ),
            ToolAdapter.for_runtime(
                "tally.sloppy",
                "tally",
                sloppy,
                name="tally_sloppy",
                description="Sloppy.",
                input_schema=object_schema({}),
            ),
            ToolAdapter.for_runtime(
                "tally.reset",
                "tally",
                lambda t, a: setattr(t, "count", 0),
                name="tally_reset",
                description="Reset.",
                input_schema=object_schema({}),
            ),
            ToolAdapter.for_runtime(
                "tally.scribble",
                "ledger",
                scribble,
                name="tally_scribble",
                description="Scribble.",
                input_schema=object_schema({}),
            ),
        ]

    @hookimpl
    def presets_headless_runtime(self, host: Any) -> None:
        host.attach("tally", Tally())
        host.add_table_runtime("ledger", Ledger)


TALLY = {"surface": "canvas", "activity": "tally"}


@pytest.fixture
def plugin(tmp_path: Path) -> TallyPlugin:
    return TallyPlugin(tmp_path)


def test_the_kit_is_a_pytest11_plugin() -> None:
    found = {e.name: e.value for e in entry_points(group="pytest11")}
    assert found["agent_presets"] == "agent_presets.testing"


def test_loading_the_kit_imports_nothing_heavy() -> None:
    code = (
        "import json, sys, agent_presets.testing\n"
        "heavy = ('mcp', 'mcp_types', 'jsonschema', 'yaml', 'agent_presets.host')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith(heavy))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == []


def test_a_host_calls_the_tools_its_context_offers(
    presets_host: Callable[..., PresetsHost], plugin: TallyPlugin
) -> None:
    host = presets_host(plugins=[SpaceApp(), plugin])
    assert "space_tally_add" not in host.tools()
    with pytest.raises(AssertionError, match="space_tally_add is not offered"):
        host.call_tool("space_tally_add", {"by": 1})
    assert host.set_context(**TALLY)["activity"] == "tally"
    assert host.call_tool("space_tally_add", {"by": 2}) == {"count": 2}
    assert host.call_tool("space_tally_add", by=3) == {"count": 5}


def test_a_prefix_shortens_names_and_context_and_enable_come_with_the_factory(
    presets_host: Callable[..., PresetsHost], plugin: TallyPlugin
) -> None:
    host = presets_host(
        plugins=[SpaceApp(), plugin],
        context=TALLY,
        enable=["tally-reset-tools"],
        tool_prefix="space_tally_",
    )
    host.call_tool("add", by=4)
    host.call_tool("reset")
    assert host.call_tool("read") == {"count": 0}


def test_refused_returns_the_message_and_checks_nothing_changed(
    presets_host: Callable[..., PresetsHost], plugin: TallyPlugin
) -> None:
    host = presets_host(plugins=[SpaceApp(), plugin], context=TALLY)
    assert "by must be positive" in host.refused("space_tally_add", {"by": 0})
    with pytest.raises(AssertionError, match="changed the host: runtimes"):
        host.refused("space_tally_sloppy")
    with pytest.raises(AssertionError, match="changed the host: saved"):
        host.refused("space_tally_scribble")


def test_assert_unchanged_sees_files_overrides_and_what_the_test_observes(
    presets_host: Callable[..., PresetsHost], plugin: TallyPlugin
) -> None:
    host = presets_host(plugins=[SpaceApp(), plugin], context=TALLY)
    with assert_unchanged(host):
        host.call_tool("space_tally_read")
    with pytest.raises(AssertionError, match="files"), assert_unchanged(host):
        (host.host.root / "note.txt").write_text("x")
    with pytest.raises(AssertionError, match="overrides"), host.unchanged():
        host.enable("tally-reset-tools")
    seen = [1]
    with (
        pytest.raises(AssertionError, match="observed"),
        assert_unchanged(host, observe=lambda: len(seen)),
    ):
        seen.append(2)


def test_an_unknown_context_field_names_those_the_host_reports(
    presets_host: Callable[..., PresetsHost], plugin: TallyPlugin
) -> None:
    host = presets_host(plugins=[SpaceApp(), plugin])
    with pytest.raises(TypeError, match="sets no context field 'mood'"):
        host.set_context(mood="happy")


def test_definition_problems_fail_the_start_unless_allowed(
    presets_host: Callable[..., PresetsHost], plugin: TallyPlugin
) -> None:
    plugin.file.write_text(PRESETS_YAML.replace("tally.read", "tally.missing"), encoding="utf-8")
    with pytest.raises(AssertionError, match="definition problems"):
        presets_host(plugins=[SpaceApp(), plugin])
    assert presets_host(plugins=[SpaceApp(), plugin], allow_problems=True).presets.problems


def test_restart_resumes_the_shell_from_the_state_directory(
    presets_host: Callable[..., PresetsHost], plugin: TallyPlugin
) -> None:
    host = presets_host(plugins=[SpaceApp(), plugin], context=TALLY)
    again = host.restart()
    assert again is host
    assert host.manager.get_context()["activity"] == "tally"


def test_the_plugin_tables_read_what_a_plugin_ships(plugin: TallyPlugin) -> None:
    table = PresetTable.of(plugin, "space_")
    assert table == {
        "tally-tools": (
            "auto",
            "normal",
            ["space_tally_add", "space_tally_read", "space_tally_sloppy", "space_tally_scribble"],
        ),
        "tally-reset-tools": ("off", "destructive", ["space_tally_reset"]),
    }
    assert table.auto_presets() == {"tally-tools"}
    assert table.tools(include_off=False) == {
        "space_tally_add",
        "space_tally_read",
        "space_tally_sloppy",
        "space_tally_scribble",
    }


def test_names_are_served_with_the_host_namespace_or_the_one_given(plugin: TallyPlugin) -> None:
    add = plugin_adapters(plugin)["tally.add"]
    assert add.name == "tally_add"
    assert mcp_name(add) == "tally_add"  # no host, no namespace
    assert mcp_name(add, "myapp_") == "myapp_tally_add"
    assert mcp_name.__defaults__ == (agent_presets.DEFAULT_NAMESPACE,)
    assert PresetTable.of(plugin, "myapp_")["tally-reset-tools"] == (
        "off",
        "destructive",
        ["myapp_tally_reset"],
    )
    assert read_only_tools(plugin) == {"tally_read"}
    assert read_only_tools(plugin, "myapp_") == {"myapp_tally_read"}


def test_context_values_declare_another_plugins_activity(
    presets_host: Callable[..., PresetsHost], plugin: TallyPlugin
) -> None:
    alone = presets_host(plugins=[SpaceApp(), plugin], context=TALLY)
    with pytest.raises(PresetValidationError, match="no declared value 'drawing'"):
        alone.set_context(activity="drawing")
    host = presets_host(
        plugins=[SpaceApp(), plugin, ContextValues(activity=["drawing"])], context=TALLY
    )
    assert "space_tally_add" in host.tools()
    assert host.set_context(activity="drawing")["activity"] == "drawing"
    assert "space_tally_add" not in host.tools()


@pytest.mark.anyio
async def test_an_in_memory_mcp_client_sees_and_calls_the_tools(
    presets_host: Callable[..., PresetsHost], plugin: TallyPlugin
) -> None:
    host = presets_host(plugins=[SpaceApp(), plugin], context=TALLY)
    async with host.mcp_client(mode="legacy") as client:
        names = [t.name for t in (await client.list_tools()).tools]
        assert "space_tally_add" in names
        result = await client.call_tool("space_tally_add", {"by": 2})
        assert not result.is_error
        assert json.loads(result_text(result)) == {"count": 2}
        refused = await client.call_tool("space_tally_add", {"by": 0})
        assert refused.is_error and "by must be positive" in result_text(refused)


class BrokenRuntime(TallyPlugin):
    """A plugin whose runtime hook fails: the tally is never attached."""

    @hookimpl
    def presets_headless_runtime(self, host: Any) -> None:
        raise RuntimeError("the tally could not start")  # BROKEN LINE


def test_a_failing_hook_fails_the_start_with_its_own_exception_and_line(
    presets_host: Callable[..., PresetsHost], tmp_path: Path
) -> None:
    with pytest.raises(RuntimeError, match="the tally could not start") as raised:
        presets_host(plugins=[SpaceApp(), BrokenRuntime(tmp_path)], context=TALLY)
    line = next(
        number
        for number, text in enumerate(Path(__file__).read_text().splitlines(), 1)
        if text.endswith("# BROKEN LINE")
    )
    [note] = raised.value.__notes__
    assert note.endswith(
        f"{line}: raised by hook presets_headless_runtime of plugin BrokenRuntime, "
        "while the test host started"
    )
    assert Path(note.split(":")[0]).resolve() == Path(__file__).resolve()
    # A test that expects the problem still gets a host, as before.
    host = presets_host(plugins=[SpaceApp(), BrokenRuntime(tmp_path)], allow_problems=True)
    assert host.presets.plugins.problems


def test_a_preset_table_of_a_misspelt_tool_id_says_what_was_meant(plugin: TallyPlugin) -> None:
    plugin.file.write_text(PRESETS_YAML.replace("tally.read", "tally.raed"), encoding="utf-8")
    with pytest.raises(PresetValidationError) as refused:
        PresetTable.of(plugin)
    assert str(refused.value) == (
        f"{plugin.file}: preset 'tally-tools' lists tool id 'tally.raed', which no adapter "
        "of plugin TallyPlugin provides; did you mean 'tally.read'?"
    )
