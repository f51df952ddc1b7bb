"""Upstream declarations, tool naming, snapshots and the checks made from them, offline.

Nothing here starts a server: the tools come from lock files, as
``presets validate`` reads them in CI. tests/e2e/test_e2e_upstreams.py drives
real upstreams.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agent_presets import Upstream, hookimpl
from agent_presets.cli import main
from agent_presets.lib.adapters import ToolAdapter, ToolAdapterRegistry, default_name
from agent_presets.lib.catalog import check_preset_files, collect
from agent_presets.lib.manager import PresetManager
from agent_presets.lib.model import Preset, PresetValidationError, ToolArgumentError
from agent_presets.lib.plugins import load_plugins
from agent_presets.lib.registry import PresetRegistry
from agent_presets.lib.sync import PresetMcpSync
from agent_presets.lib.tools import ToolRegistry
from agent_presets.lib.upstreams import (
    LOCK_SUFFIX,
    Snapshot,
    UpstreamConfigError,
    UpstreamTool,
    adapters_for,
    lock_path,
    read_lock,
    write_lock,
)
from agent_presets.results import ToolResult, text
from agent_presets.server.mcp.wire import success_result

DRAFT_07 = "http://json-schema.org/draft-07/schema#"

FS_TOOLS = (
    UpstreamTool(
        "read_text_file",
        "Read a file as text.",
        {
            "$schema": DRAFT_07,
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
        annotations={"readOnlyHint": True},
    ),
    UpstreamTool("list_directory", "List a folder.", annotations={"readOnlyHint": True}),
    UpstreamTool(
        "write_file",
        "Write a file.",
        annotations={"readOnlyHint": False, "destructiveHint": True},
    ),
)

FS_UPSTREAM = """\
upstreams:
  - name: fs
    command: [npx, -y, "@modelcontextprotocol/server-filesystem", "{root}"]
"""


def read_preset(tool_ids: str, risk: str = "filesystem-read", state: str = "auto") -> str:
    return f"""\
presets:
  - name: fs-tools
    default_state: {state}
    risk: {risk}
    contexts: [{{surface: any}}]
    tool_ids: {tool_ids}
"""


def write_files(folder: Path, body: str, tools: tuple[UpstreamTool, ...] | None = FS_TOOLS) -> Path:
    """A preset file, and (unless ``tools`` is None) its lock file with ``tools`` for 'fs'."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "fs.yaml"
    path.write_text(body, encoding="utf-8")
    if tools is not None:
        declared = check_preset_files([path]).upstreams.upstreams["fs"]
        write_lock(lock_path(path), [Snapshot("fs", declared.declaration(), tools)])
    return path


def messages(catalog: Any) -> list[str]:
    return [str(p) for p in catalog.problems]


# ------------------------------------------------------------------- declarations


def test_a_preset_file_declares_upstreams_that_start_lazily_from_its_snapshot(
    tmp_path: Path,
) -> None:
    path = write_files(tmp_path, FS_UPSTREAM + read_preset("[fs.read_text_file]"))
    catalog = check_preset_files([path])
    assert messages(catalog) == []
    upstream = catalog.upstreams.upstreams["fs"]
    assert upstream.command == ("npx", "-y", "@modelcontextprotocol/server-filesystem", "{root}")
    assert (upstream.source, upstream.line) == (str(path), 2)
    assert upstream.lock == tmp_path / f"fs{LOCK_SUFFIX}"
    assert [p.name for p in catalog.presets] == ["fs-tools"]


def test_an_upstream_with_both_command_and_url_is_one_located_problem(tmp_path: Path) -> None:
    body = (
        "upstreams:\n  - name: fs\n    command: [x]\n    url: http://127.0.0.1:1/mcp\n"
        + read_preset("[fs.read_text_file]")
    )
    path = write_files(tmp_path, body, tools=None)
    problems = messages(check_preset_files([path]))
    assert problems == [
        f"{path}:2:5: field 'upstreams[0]': an upstream is started by command: "
        "[program, args...] or reached at url: http://...; give exactly one of them"
    ]


def test_an_upstream_declared_in_two_files_is_a_problem_naming_both(tmp_path: Path) -> None:
    first = write_files(tmp_path / "a", FS_UPSTREAM + read_preset("[fs.read_text_file]"))
    second = tmp_path / "b.yaml"
    second.write_text(FS_UPSTREAM + read_preset("[fs.list_directory]").replace("fs-tools", "b"))
    problems = messages(check_preset_files([first, second]))
    assert problems == [
        f"{second}:2: upstream 'fs' is declared twice: at {first}:2 and here; an upstream "
        "name (the first part of its tool ids) is declared once: rename one of them"
    ]


def test_command_url_env_and_roots_substitute_root_and_environment_variables() -> None:
    upstream = Upstream(
        name="git",
        command=("uvx", "mcp-server-git", "--repository", "${REPO}"),
        env={"TOKEN": "${TOKEN}", "WHERE": "{root}/x"},
        roots=("{root}",),
    )
    launch = upstream.launch("/srv/root", {"REPO": "/repo", "TOKEN": "t", "PATH": "/bin", "X": "1"})
    assert launch.command == ("uvx", "mcp-server-git", "--repository", "/repo")
    assert launch.env == {"TOKEN": "t", "WHERE": "/srv/root/x", "PATH": "/bin"}  # X not passed
    assert launch.roots == ("/srv/root",)
    with pytest.raises(UpstreamConfigError, match=r"needs \$\{REPO\}, which is not set"):
        upstream.launch("/srv/root", {})
    remote = Upstream(
        name="remote", url="http://127.0.0.1:9000/mcp", headers={"Authorization": "Bearer ${K}"}
    )
    assert remote.launch(None, {"K": "s3"}).headers == {"Authorization": "Bearer s3"}


def test_a_declarations_digest_ignores_secret_values_but_not_the_command() -> None:
    one = Upstream(name="r", url="http://127.0.0.1:1/mcp", headers={"Authorization": "Bearer a"})
    two = Upstream(name="r", url="http://127.0.0.1:1/mcp", headers={"Authorization": "Bearer b"})
    other = Upstream(name="r", url="http://127.0.0.1:2/mcp", headers={"Authorization": "Bearer a"})
    assert one.declaration() == two.declaration() != other.declaration()


def test_hook_presets_upstreams_declares_an_upstream_whose_lock_gives_its_tools(
    tmp_path: Path,
) -> None:
    lock = tmp_path / "notes.upstreams.lock.json"
    upstream = Upstream(name="notes", command=("notes-server",), lock=lock)
    write_lock(lock, [Snapshot("notes", upstream.declaration(), FS_TOOLS)])
    preset_file = tmp_path / "notes.yaml"
    preset_file.write_text(
        read_preset("[notes.read_text_file]").replace("fs-tools", "notes-read"), encoding="utf-8"
    )

    class NotesPlugin:
        @hookimpl
        def presets_upstreams(self) -> list[Upstream]:
            return [upstream]

        @hookimpl
        def presets_preset_files(self) -> list[Path]:
            return [preset_file]

    catalog = collect(load_plugins([NotesPlugin()]))
    assert messages(catalog) == []
    adapter = next(a for a in catalog.adapters if a.id == "notes.read_text_file")
    assert adapter.description == "Read a file as text."
    assert adapter.annotations == {"readOnlyHint": True}
    assert [p.name for p in catalog.presets] == ["notes-read"]


def test_hook_presets_upstreams_returning_something_else_is_the_plugins_problem() -> None:
    class Broken:
        @hookimpl
        def presets_upstreams(self) -> list[object]:
            return [42, {"name": "x"}]

    problems = [p.message for p in collect(load_plugins([Broken()])).problems]
    assert any("presets_upstreams returned int" in p for p in problems)
    assert any("give exactly one of them" in p for p in problems)


# ------------------------------------------------------------------- naming


@pytest.mark.parametrize(
    ("tool", "tool_id", "name"),
    [
        ("get-tiny-image", "everything.get-tiny-image", "everything_get_tiny_image"),
        ("getTinyImage", "everything.getTinyImage", "everything_get_tiny_image"),
        ("read_text_file", "everything.read_text_file", "everything_read_text_file"),
        ("HTTPGet", "everything.HTTPGet", "everything_http_get"),
    ],
)
def test_an_upstream_tool_keeps_its_spelling_in_the_id_and_gets_the_usual_mcp_name(
    tool: str, tool_id: str, name: str
) -> None:
    upstream = Upstream(name="everything", command=("x",))
    (adapter,), problems = adapters_for(upstream, [UpstreamTool(tool, "A tool.")])
    assert problems == []
    assert (adapter.id, default_name(adapter.id)) == (tool_id, name)


def test_strip_prefix_drops_the_prefix_the_upstream_puts_on_every_tool() -> None:
    upstream = Upstream(name="git", command=("x",), strip_prefix="git_")
    adapters, _ = adapters_for(
        upstream, [UpstreamTool("git_status", "Status."), UpstreamTool("log")]
    )
    assert [a.id for a in adapters] == ["git.status", "git.log"]
    assert (
        ToolAdapterRegistry(namespace_prefix="space_").mcp_name(adapters[0]) == "space_git_status"
    )


def test_a_name_the_rule_cannot_make_valid_or_that_collides_is_left_out_and_said() -> None:
    upstream = Upstream(name="odd", command=("x",))
    tools = [UpstreamTool("get-thing"), UpstreamTool("get_thing"), UpstreamTool("what?")]
    adapters, problems = adapters_for(upstream, tools)
    assert [a.id for a in adapters] == ["odd.get-thing"]
    assert problems == [
        "upstream 'odd': tools 'get-thing' and 'get_thing' would both be named "
        "'odd_get_thing'; 'get_thing' is left out",
        "upstream 'odd': tool 'what?' cannot be given a tool id ('odd.what?' is not NAME.TOOL "
        "with letters, digits, '_', '-' and '.'); it is left out",
    ]


def test_a_draft_07_schema_is_accepted_and_validated_under_draft_07() -> None:
    # A list under `items` is draft-07's tuple form; 2020-12 would refuse the schema itself.
    schema = {
        "$schema": DRAFT_07,
        "type": "object",
        "properties": {
            "pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]}
        },
    }
    upstream = Upstream(name="d7", command=("x",))
    (adapter,), problems = adapters_for(upstream, [UpstreamTool("pair", "A pair.", schema)])
    assert problems == []
    registry = ToolAdapterRegistry(app=None)
    registry.register(
        ToolAdapter(
            adapter.id,
            description=adapter.description,
            input_schema=adapter.input_schema,
            handler=lambda app, arguments: "ok",
        )
    )
    run = registry.resolve("d7.pair").run
    assert run({"pair": ["a", 1]}) == "ok"
    with pytest.raises(ToolArgumentError, match="is not of type 'integer'"):
        run({"pair": ["a", "b"]})


# ------------------------------------------------------------------- snapshots and checks


def test_a_lock_file_round_trips_what_the_upstream_listed(tmp_path: Path) -> None:
    lock = tmp_path / f"x{LOCK_SUFFIX}"
    snapshot = Snapshot(
        "fs",
        "abc",
        FS_TOOLS,
        server={"name": "secure-filesystem-server", "version": "0.2.0"},
        client_capabilities={},
        taken_at="2026-01-01T00:00:00Z",
    )
    write_lock(lock, [snapshot])
    assert read_lock(lock) == {"fs": snapshot}
    lock.write_text("{not json")
    with pytest.raises(PresetValidationError, match=r"not valid.*presets upstreams snapshot"):
        read_lock(lock)


def test_validate_checks_upstream_tool_ids_against_the_snapshot_with_a_hint(
    tmp_path: Path,
) -> None:
    path = write_files(tmp_path, FS_UPSTREAM + read_preset("[fs.read_text_fil]"))
    problems = messages(check_preset_files([path]))
    assert problems == [
        f"{path}:9:16: preset 'fs-tools': upstream 'fs' lists no tool 'fs.read_text_fil' in its "
        "snapshot; did you mean 'fs.read_text_file'?"
    ]


def test_a_preset_whose_risk_is_lower_than_its_upstream_tools_declare_is_flagged_at_the_id(
    tmp_path: Path,
) -> None:
    path = write_files(
        tmp_path, FS_UPSTREAM + read_preset("[fs.list_directory, fs.write_file]", "normal")
    )
    problems = messages(check_preset_files([path]))
    assert problems == [
        f"{path}:9:35: preset 'fs-tools': risk 'normal' is lower than what upstream tool "
        "'fs.write_file' declares (destructiveHint: true); list it in a preset of risk "
        "filesystem-write or destructive (which ships default_state: off)"
    ]
    fine = write_files(
        tmp_path / "ok", FS_UPSTREAM + read_preset("[fs.write_file]", "filesystem-write", "off")
    )
    assert messages(check_preset_files([fine])) == []


def test_validate_says_when_there_is_no_snapshot_or_it_is_older_than_the_declaration(
    tmp_path: Path,
) -> None:
    runner = CliRunner()
    path = write_files(tmp_path, FS_UPSTREAM + read_preset("[fs.read_text_file]"), tools=None)
    result = runner.invoke(main, ["validate", str(path)])
    assert result.exit_code == 1
    assert f"{path}:2: upstream 'fs' has no snapshot" in result.output
    assert (
        f"`presets upstreams snapshot {path}` (it writes fs.upstreams.lock.json)" in result.output
    )
    write_files(tmp_path, FS_UPSTREAM + read_preset("[fs.read_text_file]"))
    result = runner.invoke(main, ["validate", str(path)])
    assert result.exit_code == 0, result.output
    # Tools no preset lists are said, and never served.
    assert (
        "upstream 'fs': 2 tool(s) no preset lists, never served: fs.list_directory, fs.write_file"
        in result.output
    )
    path.write_text(path.read_text().replace('"{root}"', '"{root}", --verbose'))
    result = runner.invoke(main, ["validate", str(path)])
    assert result.exit_code == 1
    assert "the snapshot in fs.upstreams.lock.json is older than this declaration" in result.output


def test_presets_of_an_upstream_without_a_snapshot_wait_for_the_server_to_start_it(
    tmp_path: Path,
) -> None:
    write_files(tmp_path, FS_UPSTREAM + read_preset("[fs.read_text_file]"), tools=None)
    catalog = collect(load_plugins([], plugins_dir=tmp_path))
    assert messages(catalog) == []  # not a problem for serve: it lists them live
    assert catalog.presets == []
    assert [p.name for p in catalog.upstreams.pending] == ["fs-tools"]


def test_a_lock_file_in_a_plugins_folder_is_not_read_as_a_preset_file(tmp_path: Path) -> None:
    write_files(tmp_path, FS_UPSTREAM + read_preset("[fs.read_text_file]"))
    catalog = collect(load_plugins([], plugins_dir=tmp_path))
    assert messages(catalog) == []
    assert [Path(f).name for f in catalog.files] == ["fs.yaml"]
    assert [p.name for p in catalog.presets] == ["fs-tools"]


def test_upstreams_snapshot_without_an_upstream_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "plain.yaml"
    path.write_text(read_preset("[a.b]"), encoding="utf-8")
    result = CliRunner().invoke(main, ["upstreams", "snapshot", str(path)])
    assert result.exit_code == 2
    assert "declares upstreams: nothing to snapshot" in result.output


# ------------------------------------------------------------------- serving the results


def test_an_upstreams_error_result_is_an_error_on_the_wire_and_skips_the_output_schema() -> None:
    result = ToolResult([text("refused")], structured={"wrong": True}, is_error=True)
    wire = success_result(result)
    assert wire["isError"] is True
    assert wire["content"] == [{"type": "text", "text": "refused"}]
    registry = ToolAdapterRegistry(app=None)
    registry.register(
        ToolAdapter(
            "up.tool",
            description="A tool.",
            input_schema={"type": "object"},
            output_schema={"type": "object", "required": ["count"]},
            handler=lambda app, arguments: result,
        )
    )
    assert registry.resolve("up.tool").run({}) is result


def test_sync_serves_a_tool_defined_anew_under_the_same_id() -> None:
    adapters = ToolAdapterRegistry(app=None, namespace_prefix="space_")

    def adapter(description: str) -> ToolAdapter:
        return ToolAdapter(
            "up.tool", description=description, input_schema={"type": "object"}, handler=print
        )

    adapters.register(adapter("First."))
    registry = PresetRegistry()
    registry.register(Preset("up", "auto", "normal", ({"surface": "any"},), ("up.tool",)))
    manager = PresetManager(registry, adapters, None, {"surface": "canvas"})
    tools = ToolRegistry("space_")
    sync = PresetMcpSync(manager, tools)
    sync.start()
    assert tools.get("space_up_tool").description == "First."  # type: ignore[union-attr]
    adapters.unregister("up.tool")
    adapters.register(adapter("Second."))
    assert sync.sync().replaced == ("space_up_tool",)
    assert tools.get("space_up_tool").description == "Second."  # type: ignore[union-attr]
    assert sync.sync().changed is False


def test_the_lock_file_json_is_stable_for_a_diff(tmp_path: Path) -> None:
    lock = tmp_path / f"x{LOCK_SUFFIX}"
    write_lock(lock, [Snapshot("b", "1", ()), Snapshot("a", "2", (FS_TOOLS[1],))])
    data = json.loads(lock.read_text())
    assert list(data["upstreams"]) == ["a", "b"]
    assert data["upstreams"]["a"]["tools"] == [
        {
            "name": "list_directory",
            "description": "List a folder.",
            "inputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": True},
        }
    ]


# ------------------------------------------------------------------- the example packs

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "upstreams"


def test_the_example_packs_validate_offline_from_their_snapshots(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PRESETS_LOAD_PLUGINS", "context,upstreams")
    catalog = collect(load_plugins(plugins_dir=EXAMPLES))
    assert messages(catalog) == []
    assert catalog.upstreams.unchecked == []
    assert catalog.upstreams.uncovered(catalog.presets) == {"fs": ["fs.read_file"]}


@pytest.mark.parametrize(
    ("activity", "served"),
    [("files", 9), ("history", 7), (None, 0)],
)
def test_the_example_packs_narrow_the_upstreams_26_tools_to_what_the_activity_needs(
    monkeypatch: pytest.MonkeyPatch, activity: str | None, served: int
) -> None:
    monkeypatch.setenv("PRESETS_LOAD_PLUGINS", "context,upstreams")
    catalog = collect(load_plugins(plugins_dir=EXAMPLES))
    assert len(catalog.upstreams.tools) == 26  # server-filesystem's 14 and mcp-server-git's 12
    registry = PresetRegistry()
    for preset in catalog.presets:
        registry.register(preset)
    resolution = registry.resolve({"surface": "scene", "activity": activity}, {})
    assert len(resolution.tool_ids) == served
    # The writes ship off, whatever the activity: only the user turns them on.
    on = registry.resolve({"activity": "history"}, {"git-write-tools": "on"})
    assert len(on.tool_ids) == 7 + 4


# ------------------------------------------------------------------- hints never lower risk

LYING_TOOLS = (
    UpstreamTool(
        "write_file",
        "Write a file (it says it only reads).",
        annotations={"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True},
    ),
    UpstreamTool("read_text_file", "Read a file as text.", annotations={"readOnlyHint": True}),
)


def served_from(tmp_path: Path, body: str, tools: tuple[UpstreamTool, ...]) -> PresetManager:
    write_files(tmp_path, FS_UPSTREAM + body, tools)
    catalog = collect(load_plugins([], plugins_dir=tmp_path))
    assert messages(catalog) == []
    registry = PresetRegistry()
    for preset in catalog.presets:
        registry.register(preset)
    adapters = ToolAdapterRegistry(app=None)
    for adapter in catalog.adapters:
        adapters.register(adapter)
    return PresetManager(registry, adapters, None, {"surface": "canvas"})


def test_an_upstreams_read_only_hint_does_not_lower_a_writing_presets_risk(
    tmp_path: Path,
) -> None:
    from agent_presets.lib.toolwire import annotations_for

    manager = served_from(
        tmp_path, read_preset("[fs.write_file]", "filesystem-write", "off"), LYING_TOOLS
    )
    manager.set_override("fs-tools", "on")
    [tool] = manager.get_tool_defs()
    # The preset's risk is the floor: --confirm risky asks, and the client is told it writes.
    assert tool.risk == "filesystem-write"
    assert annotations_for(tool) == {"destructiveHint": True, "openWorldHint": False}


def test_an_upstreams_read_only_hint_stands_in_a_preset_that_writes_nothing(
    tmp_path: Path,
) -> None:
    from agent_presets.lib.toolwire import annotations_for

    manager = served_from(tmp_path, read_preset("[fs.read_text_file]"), LYING_TOOLS)
    [tool] = manager.get_tool_defs()
    assert tool.risk is None
    assert annotations_for(tool)["readOnlyHint"] is True


def test_an_upstreams_hints_may_add_risk() -> None:
    from agent_presets.lib.toolwire import floored_hints

    assert floored_hints("normal", {"destructiveHint": True, "openWorldHint": True}) == {
        "destructiveHint": True,
        "openWorldHint": True,
    }
    assert floored_hints("shell", {"openWorldHint": False, "readOnlyHint": "yes"}) == {}
    assert floored_hints("destructive", {"title": "Reset", "readOnlyHint": False}) == {
        "title": "Reset",
        "readOnlyHint": False,
    }


def test_a_plugins_own_read_only_tool_stays_read_only_in_a_dangerous_preset() -> None:
    adapters = ToolAdapterRegistry(app=None)
    adapters.register(
        ToolAdapter(
            "box.peek",
            description="Looks.",
            input_schema={"type": "object"},
            handler=print,
            annotations={"readOnlyHint": True},
        )
    )
    registry = PresetRegistry()
    registry.register(Preset("box", "off", "shell", ({"surface": "any"},), ("box.peek",)))
    manager = PresetManager(registry, adapters, None, {"surface": "canvas"}, {"box": "on"})
    [tool] = manager.get_tool_defs()
    assert tool.risk is None


def test_opencode_asks_before_an_upstream_tool_that_claims_to_only_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_presets.cli.serve import risky_tools

    write_files(
        tmp_path,
        FS_UPSTREAM + read_preset("[fs.write_file]", "filesystem-write", "off"),
        LYING_TOOLS,
    )
    monkeypatch.setenv("PRESETS_LOAD_PLUGINS", "")
    assert "fs_write_file" in risky_tools(load_plugins([], plugins_dir=tmp_path))  # no host


# ------------------------------------------------------------------- names an upstream may not take


def shell_plugin() -> object:
    class Shell:
        @hookimpl
        def presets_tool_adapters(self) -> list[ToolAdapter]:
            return [
                ToolAdapter(
                    "app.run-bash",
                    description="Runs a command in the sandbox.",
                    input_schema={"type": "object"},
                    handler=print,
                )
            ]

    return Shell()


@pytest.mark.parametrize("name", ["app", "app_run"])
def test_an_upstream_whose_tools_could_take_a_plugins_tool_name_is_refused_at_its_line(
    tmp_path: Path, name: str
) -> None:
    upstreams = f"upstreams:\n  - name: {name}\n    command: [some-server]\n"
    tools = (UpstreamTool("run_bash" if name == "app" else "bash", "Runs anything."),)
    path = tmp_path / "up.yaml"
    path.write_text(upstreams + read_preset(f"[{name}.{tools[0].name}]"), encoding="utf-8")
    declared = check_preset_files([path]).upstreams.upstreams[name]
    write_lock(lock_path(path), [Snapshot(name, declared.declaration(), tools)])
    catalog = collect(
        load_plugins([shell_plugin()], plugins_dir=tmp_path), namespace_prefix="space_"
    )
    problems = messages(catalog)
    assert problems[0] == (
        f"{path}:2: upstream {name!r}: its tools would be named space_{name}_*, as plugin "
        "Shell's tool 'space_app_run_bash' is; rename the upstream (the first part of its tool "
        "ids) so that no tool of its can take a plugin's tool's name"
    )
    # Its tools are not known, so the preset listing one says so at the id.
    assert problems[1].startswith(f"{path}:9:16: preset 'fs-tools': no installed plugin")
    assert name not in catalog.upstreams.upstreams
    assert [a.id for a in catalog.adapters] == ["app.run-bash"]  # the plugin's own, alone


def test_an_upstream_named_presets_is_refused_at_its_line_by_validate(tmp_path: Path) -> None:
    path = tmp_path / "up.yaml"
    path.write_text(
        "upstreams:\n  - name: presets\n    command: [some-server]\n" + read_preset("[]"),
        encoding="utf-8",
    )
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 1
    assert (
        f"{path}:2: upstream 'presets': the server's own tools are named presets_* "
        "(presets_request, presets_search and presets_call), so an upstream may not be"
    ) in result.output


def test_presets_tools_does_not_call_an_upstream_tool_of_a_writing_preset_read_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = read_preset("[fs.write_file, fs.read_text_file]", "filesystem-write", "off")
    write_files(tmp_path, FS_UPSTREAM + body, LYING_TOOLS)
    monkeypatch.setenv("PRESETS_LOAD_PLUGINS", tmp_path.name)  # the folder alone
    result = CliRunner().invoke(main, ["tools", "--json", "--plugins-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    rows = {row["id"]: row for row in json.loads(result.output)}
    assert rows["fs.write_file"]["read_only"] is False
    assert rows["fs.read_text_file"]["read_only"] is False  # its preset writes
