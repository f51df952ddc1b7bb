"""The bare host and what an app plugin gives it: fields, defaults, a keeper of its context.

With only the core, ``presets serve`` runs a host that names no context field: its
context is what is set on it, and resumes after a restart. An app plugin makes it an
app through the hooks any plugin has; nothing here is the Space app's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agent_presets import ContextField, PresetError, ToolAdapter, hookimpl, object_schema
from agent_presets.cli import main
from agent_presets.host import ContextKeeper, HostDefaults, ServedHost
from agent_presets.server.mcp import PresetServer

TASKS_YAML = """\
presets:
  - name: tasks-read-tools
    default_state: auto
    risk: normal
    contexts: [{screen: any}]
    tool_ids: [tasks.list]
  - name: tasks-edit-tools
    default_state: auto
    risk: normal
    contexts: [{screen: board}]
    tool_ids: [tasks.add]
"""

TODO = HostDefaults(
    namespace="todo_",
    context={"screen": "inbox", "sidebar": False},
    instructions="The tools follow the screen the user has open.",
    implied={"screen": {"board": {"sidebar": True}}},
)


class TaskApp:
    """An app that is not Space: its screens, a sidebar, its defaults, a task list."""

    __name__ = "taskapp"

    def __init__(self, folder: Path) -> None:
        self.file = folder / "tasks.yaml"
        self.file.write_text(TASKS_YAML, encoding="utf-8")

    @hookimpl
    def presets_preset_files(self) -> list[Path]:
        return [self.file]

    @hookimpl
    def presets_context_fields(self) -> list[ContextField]:
        return [
            ContextField("screen", "string", ("inbox", "board"), "The open screen.", required=True),
            ContextField("sidebar", "boolean", None, "Whether the sidebar shows."),
        ]

    @hookimpl
    def presets_host_defaults(self) -> HostDefaults:
        return TODO

    @hookimpl
    def presets_tool_adapters(self) -> list[ToolAdapter]:
        return [
            ToolAdapter.for_runtime(
                tool_id,
                "tasks",
                action,
                description="Tasks.",
                input_schema=object_schema({}),
            )
            for tool_id, action in (
                ("tasks.list", lambda tasks, a: list(tasks)),
                ("tasks.add", lambda tasks, a: tasks.append("one") or len(tasks)),
            )
        ]

    @hookimpl
    def presets_headless_runtime(self, host: Any) -> None:
        host.attach("tasks", [])


def test_hook_presets_host_defaults_make_the_bare_host_the_app(tmp_path: Path) -> None:
    with ServedHost(tmp_path / "state") as host:
        presets = host.start([TaskApp(tmp_path)])
        assert host.defaults is TODO
        assert presets.tool_registry.namespace_prefix == "todo_"
        assert host.context() == {"screen": "inbox", "sidebar": False}
        assert presets.tool_registry.names() == ["todo_tasks_list"]
        host.update_context({"screen": "board"})  # opening the board shows the sidebar
        assert presets.manager.get_context() == {"screen": "board", "sidebar": True}
        assert presets.tool_registry.names() == ["todo_tasks_add", "todo_tasks_list"]
        assert presets.tool_registry.get("todo_tasks_add").run({}) == 1  # type: ignore[union-attr]
        server = PresetServer(presets)
        try:
            assert server.instructions == TODO.instructions
        finally:
            server.close()


def test_with_no_plugin_the_host_keeps_any_context_it_is_given_and_resumes_it(
    tmp_path: Path,
) -> None:
    with ServedHost(tmp_path / "state") as host:
        presets = host.start([])
        assert host.defaults.namespace == "" and host.context() == {}
        host.update_context({"board": "inbox", "urgent": True})
        assert presets.manager.get_context() == {"board": "inbox", "urgent": True}
    saved = json.loads((tmp_path / "state" / "context.json").read_text(encoding="utf-8"))
    assert saved == {"board": "inbox", "urgent": True}
    with ServedHost(tmp_path / "state") as again:
        assert again.start([]).manager.get_context() == {"board": "inbox", "urgent": True}


def test_a_change_the_manager_refuses_is_neither_kept_nor_saved(tmp_path: Path) -> None:
    with ServedHost(tmp_path / "state") as host:
        presets = host.start([TaskApp(tmp_path)])
        with pytest.raises(PresetError, match="did you mean 'board'"):
            host.update_context({"screen": "bord"})
        assert host.context() == presets.manager.get_context() == dict(TODO.context)
        assert not (tmp_path / "state" / "context.json").exists()


def test_two_plugins_that_supply_host_defaults_are_a_problem_naming_both(tmp_path: Path) -> None:
    class Other:
        __name__ = "other-app"

        @hookimpl
        def presets_host_defaults(self) -> HostDefaults:
            return HostDefaults(namespace="other_")

    with ServedHost(tmp_path / "state") as host:
        presets = host.start([TaskApp(tmp_path), Other()])
        assert presets.tool_registry.namespace_prefix == "todo_"  # the first one's
        [problem] = [p for p in presets.plugins.problems if p.hook == "presets_host_defaults"]
        assert "plugin other-app" in str(problem) and "plugin taskapp" in str(problem)


class Notebooks:
    """A keeper: the app keeps its context in its own file, and its notebooks are partitions."""

    def __init__(self, host: Any) -> None:
        self.path = Path(host.state_dir) / "notebooks.json"
        self.books = ["main", "work"]
        self.saved: list[dict[str, Any]] = []

    def load(self) -> Mapping[str, Any]:
        return {"book": "main"}

    def change(self, context: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
        if changes.get("book", context["book"]) not in self.books:
            raise PresetError(f"no notebook {changes['book']!r}")
        return {**context, **changes}

    def save(self, context: Mapping[str, Any]) -> None:
        self.saved.append(dict(context))

    def partition(self, context: Mapping[str, Any]) -> str:
        return str(context["book"])

    def partitions(self) -> Sequence[str]:
        return self.books


class NotebookApp:
    __name__ = "notebooks"

    @hookimpl
    def presets_headless_runtime(self, host: Any) -> None:
        keeper = Notebooks(host)
        assert isinstance(keeper, ContextKeeper)
        host.keep_context(keeper)
        host.add_table_runtime("pages", lambda table: table)


def test_a_keeper_owns_the_context_and_says_which_partition_each_runtime_is_in(
    tmp_path: Path,
) -> None:
    with ServedHost(tmp_path / "state") as host:
        presets = host.start([NotebookApp()])
        keeper = host._keeper
        assert presets.manager.get_context() == {"book": "main"}
        host.runtime("pages").put("p1", "in main")
        host.update_context({"book": "work"})
        assert keeper.saved == [{"book": "work"}]  # saved by the keeper, not context.json
        assert host.runtime("pages").get("p1") is None  # the work notebook's own pages
        with pytest.raises(PresetError, match="no notebook 'diary'"):
            host.update_context({"book": "diary"})
        assert host.context() == {"book": "work"} and keeper.saved == [{"book": "work"}]
        assert host.partition_runtime("main", "pages").get("p1") == "in main"
        host.drop_partition("main")
        assert host.partition_runtime("main", "pages").get("p1") is None
        assert not (tmp_path / "state" / "context.json").exists()


def test_implied_changes_give_way_to_what_the_change_says_itself() -> None:
    assert TODO.with_implied({"screen": "board"}) == {"screen": "board", "sidebar": True}
    assert TODO.with_implied({"screen": "board", "sidebar": False}) == {
        "screen": "board",
        "sidebar": False,
    }
    assert TODO.with_implied({"screen": "inbox"}) == {"screen": "inbox"}


# ------------------------------------------------------------------ the command line


def app_folder(tmp_path: Path) -> Path:
    """A plugins folder holding the task app's fields and defaults as a module."""
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "taskapp.py").write_text(
        "from agent_presets import ContextField, hookimpl\n"
        "from agent_presets.host import HostDefaults\n\n\n"
        "@hookimpl\n"
        "def presets_context_fields():\n"
        "    return [ContextField('screen', 'string', ('inbox', 'board'), 'The open screen.'),\n"
        "            ContextField('sidebar', 'boolean', None, 'Whether the sidebar shows.')]\n\n\n"
        "@hookimpl\n"
        "def presets_host_defaults():\n"
        "    return HostDefaults(namespace='todo_', context={'screen': 'inbox'},\n"
        "                        implied={'screen': {'board': {'sidebar': True}}})\n",
        encoding="utf-8",
    )
    return folder


def run(*args: str, only: str = "") -> Any:
    return CliRunner().invoke(main, list(args), env={"PRESETS_LOAD_PLUGINS": only})


def test_each_declared_field_is_a_flag_and_the_core_has_none_of_its_own(tmp_path: Path) -> None:
    bare = run("resolve", "--help")
    assert bare.exit_code == 0, bare.output
    for word in ("--surface", "--activity", "--canvas", "surface", "canvas", "world"):
        assert word not in bare.output
    assert "--set KEY=VALUE" in bare.output
    folder = app_folder(tmp_path)
    helped = run("resolve", "--plugins-dir", str(folder), "--help", only="taskapp")
    assert "--screen [inbox|board]" in helped.output
    assert "--sidebar / --no-sidebar" in helped.output
    served = run("serve", "--plugins-dir", str(folder), "--help", only="taskapp")
    assert "--screen [inbox|board]" in served.output and "[default: as saved]" in served.output


def test_the_flags_set_the_apps_context_with_what_it_implies(tmp_path: Path) -> None:
    folder = app_folder(tmp_path)
    resolved = run(
        "resolve", "--plugins-dir", str(folder), "--screen", "board", "--json", only="taskapp"
    )
    assert resolved.exit_code == 0, resolved.output
    assert json.loads(resolved.output)["context"] == {"screen": "board", "sidebar": True}
    explicit = run(
        "resolve", "--plugins-dir", str(folder), "--screen", "board", "--no-sidebar", "--json",
        only="taskapp",
    )  # fmt: skip
    assert json.loads(explicit.output)["context"] == {"screen": "board", "sidebar": False}
    refused = run("resolve", "--plugins-dir", str(folder), "--screen", "bord", only="taskapp")
    assert refused.exit_code == 1 and "did you mean 'board'?" in refused.output
    facts = run("resolve", "--set", "board=inbox", "--json")
    assert json.loads(facts.output)["context"] == {"board": "inbox"}


def test_serve_takes_set_and_blames_it_for_a_field_no_plugin_declares(tmp_path: Path) -> None:
    folder = app_folder(tmp_path)
    refused = run(
        "serve", "--plugins-dir", str(folder), "--state-dir", str(tmp_path / "state"),
        "--set", "mood=calm", only="taskapp",
    )  # fmt: skip
    assert refused.exit_code == 2
    assert "Invalid value for '--set': context field 'mood' is not declared" in refused.output
