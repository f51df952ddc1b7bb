"""docs/embedding.md and the README's embedding snippet work as printed.

The host example runs in memory and over stdio; the runtime protocols match
what the built-in plugins' adapters use and what their reference runtimes
offer, so the page cannot drift from the code.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import inspect
import json
import re
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import pytest

import agent_presets
import agent_presets_drawing
import agent_presets_general
import agent_presets_graph
import agent_presets_scene
import agent_presets_units
from agent_presets import AdapterKit
from agent_presets.testing import PresetsHost

REPO = Path(__file__).parents[2]
DOC = REPO / "docs" / "embedding.md"
PLUGINS = [
    agent_presets_drawing,
    agent_presets_graph,
    agent_presets_scene,
    agent_presets_general,
    agent_presets_units,
]
PROTOCOLS = {
    "drawing": "DrawingRuntime",
    "graph": "GraphRuntime",
    "scene": "SceneRuntime",
    "shell": "ShellRuntime",
    "files": "FilesRuntime",
    "bash": "BashRuntime",
    "units": "UnitsRuntime",
}


def blocks(path: Path, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", path.read_text(encoding="utf-8"), re.S)


def block(path: Path, language: str, containing: str) -> str:
    [found] = [b for b in blocks(path, language) if containing in b]
    return found


@pytest.fixture
def host_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The doc's host.py and presets.yaml, written to a folder and imported."""
    (tmp_path / "presets.yaml").write_text(block(DOC, "yaml", "tasks.complete"))
    (tmp_path / "host.py").write_text(block(DOC, "python", "class TaskApp"))
    spec = importlib.util.spec_from_file_location("embedding_doc_host", tmp_path / "host.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    return module


def test_the_documented_host_follows_its_context_in_memory(host_module: ModuleType) -> None:
    seen = anyio.run(host_module.demo)
    # The server's own tools (the agent asks for a preset; a 2026-07-28 client, served
    # stable, reaches what its own calls activate through search and call) beside the host's.
    own = ["todo_presets_search", "todo_presets_call", "todo_presets_call_risky"]
    assert seen["inbox"] == ["todo_presets_request", "todo_tasks_list", *own]
    # The app's own UI switched the screen: a change from outside, so the list follows it.
    assert seen["board"] == [
        "todo_presets_request",
        "todo_tasks_add",
        "todo_tasks_complete",
        "todo_tasks_list",
        *own,
    ]
    assert json.loads(seen["added"]) == {"id": 1, "title": "write the docs", "done": False}
    is_error, message = seen["refused"]
    assert is_error and "there is no task 7; list the tasks" in message
    assert seen["tasks"] == [{"id": 1, "title": "write the docs", "done": False}]


def test_the_documented_host_declares_its_screens_and_its_prompts_name_served_tools(
    host_module: ModuleType,
) -> None:
    app = host_module.TaskApp()
    presets = host_module.start(app)
    app.open("board")
    prompts = "\n".join(f.prompt for f in presets.manager.get_prompt_fragments())
    assert "todo_tasks_add" in prompts and "todo_tasks_complete" in prompts
    assert "{{" not in prompts
    with pytest.raises(agent_presets.PresetValidationError, match="did you mean 'board'"):
        app.open("bord")
    assert (app.screen, presets.manager.get_context()["screen"]) == ("board", "board")


@pytest.mark.slow  # a second Python serving the doc's host over stdio: seconds on its own
def test_the_documented_host_serves_over_stdio(tmp_path: Path, host_module: ModuleType) -> None:
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "embedding-doc", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    process = subprocess.Popen(
        [sys.executable, str(tmp_path / "host.py")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    watchdog = threading.Timer(120, process.kill)
    watchdog.start()
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
        process.stdin.flush()
        answer: dict[str, Any] = {}
        while answer.get("id") != 2:
            line = process.stdout.readline()
            assert line, "the host stopped before answering tools/list"
            answer = json.loads(line)
        process.stdin.close()  # a client that is done: the host must exit by itself
        assert process.wait(timeout=60) == 0
    finally:
        watchdog.cancel()
        if process.poll() is None:
            process.kill()
            process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
    names = [t["name"] for t in answer["result"]["tools"]]
    assert sorted(names) == ["todo_presets_request", "todo_tasks_list"]


def app_folder(tmp_path: Path) -> Path:
    """The doc's app plugin and its presets, as the plugins folder ``todo``."""
    folder = tmp_path / "todo"
    folder.mkdir()
    (folder / "taskapp.py").write_text(block(DOC, "python", "def presets_host_defaults"))
    (folder / "tasks.yaml").write_text(block(DOC, "yaml", "contexts: [{screen: board}]"))
    return folder


ONLY_THE_APP = {"PRESETS_LOAD_PLUGINS": "taskapp,todo"}


def test_the_documented_app_plugin_makes_the_served_host_the_app(tmp_path: Path) -> None:
    from agent_presets.host import ServedHost
    from agent_presets.lib.plugins import load_plugins

    plugins = load_plugins(env=ONLY_THE_APP, plugins_dir=app_folder(tmp_path))
    assert plugins.problems == []
    with ServedHost(tmp_path / "state") as host:
        presets = host.start(plugins)
        assert presets.problems == []
        assert presets.tool_registry.names() == ["todo_tasks_list"]
        host.update_context({"screen": "board"})
        assert host.context() == {"screen": "board", "sidebar": True}
        assert presets.tool_registry.names() == ["todo_tasks_add", "todo_tasks_list"]
        assert presets.tool_registry.get("todo_tasks_add").run({"title": "x"}) == {"count": 1}  # type: ignore[union-attr]


def test_the_documented_app_plugins_commands_work_as_printed(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from agent_presets.cli import main

    folder = app_folder(tmp_path)
    runner = CliRunner()
    helped = runner.invoke(
        main, ["resolve", "--plugins-dir", str(folder), "--help"], env=ONLY_THE_APP
    )
    assert "--screen [inbox|board]" in helped.output
    assert "--sidebar / --no-sidebar" in helped.output
    resolved = runner.invoke(
        main,
        ["resolve", "--plugins-dir", str(folder), "--screen", "board", "--json"],
        env=ONLY_THE_APP,
    )
    assert resolved.exit_code == 0, resolved.output
    answer = json.loads(resolved.output)
    assert sorted(answer["mcp_tools"]) == ["todo_tasks_add", "todo_tasks_list"]
    assert answer["context"] == {"screen": "board", "sidebar": True}


def test_the_readme_snippet_defines_what_it_uses(monkeypatch: pytest.MonkeyPatch) -> None:
    snippet = block(REPO / "README.md", "python", "serve(")
    served: list[object] = []
    import agent_presets.embed

    monkeypatch.setattr(agent_presets.embed, "serve", served.append, raising=False)
    namespace: dict[str, Any] = {}
    exec(compile(snippet, "README.md", "exec"), namespace)
    [presets] = served
    assert presets is namespace["presets"]
    assert "space_app_run_bash" in presets.tool_registry.names()  # the override it shows


def test_serving_is_public_and_loads_mcp_on_first_use() -> None:
    code = "import sys, agent_presets\nassert 'mcp' not in sys.modules\n"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    # The names themselves are checked here: a second Python that loads mcp costs a second.
    from agent_presets import PresetServer, build_server, serve, server

    assert (serve, build_server, PresetServer) == (
        server.serve,
        server.build_server,
        server.PresetServer,
    )
    import agent_presets.embed

    assert {"serve", "build_server", "PresetServer", "ServeConfig", "bootstrap"} <= set(
        agent_presets.embed.__all__
    )


def test_the_top_level_lists_the_plugin_authors_names_and_still_loads_the_embedders() -> None:
    import agent_presets.embed

    # A plugin author's few at the top; a host's in agent_presets.embed.
    assert {"ToolAdapter", "hookimpl", "ContextField", "RowTable", "TableRuntime"} <= set(
        agent_presets.__all__
    )
    assert not {"bootstrap", "serve", "PresetManager"} & set(agent_presets.__all__)
    # The core's own care for pictures is no plugin author's business; it still loads here.
    assert "svg_safe" not in agent_presets.__all__
    assert agent_presets.svg_safe("a\x01b") == "a\ufffdb"
    # Code written before the split keeps working: every embedding name still loads here.
    for name in agent_presets.embed.__all__:
        if name in ("Stage", "PendingCall", "CallRefused", "HostDefaults"):
            continue  # new with the split: only agent_presets.embed has them
        assert getattr(agent_presets, name) is getattr(agent_presets.embed, name), name


def test_type_checkers_see_every_public_name_and_the_version_is_the_distribution_s() -> None:
    # The serving names too: the server takes the version from agent_presets._version, so a
    # typing import of agent_presets.server.mcp in the package root makes no cycle.
    tree = ast.parse(Path(agent_presets.__file__).read_text(encoding="utf-8"))
    [block] = [
        n
        for n in tree.body
        if isinstance(n, ast.If) and isinstance(n.test, ast.Name) and n.test.id == "TYPE_CHECKING"
    ]
    typed = {
        a.asname or a.name: n.module
        for n in block.body
        if isinstance(n, ast.ImportFrom)
        for a in n.names
    }
    # Exactly the names the package loads (the author's, and the embedder's kept for
    # code written before the split), each from the module it loads it from.
    loaded = {**agent_presets._EXPORTS, **agent_presets._UNLISTED}
    assert typed == {name: f"agent_presets.{module}" for name, module in loaded.items()}
    assert agent_presets.__version__ == importlib.metadata.version("agent-presets")


def test_the_listed_and_the_unlisted_names_are_apart() -> None:
    assert not set(agent_presets._EXPORTS) & set(agent_presets._UNLISTED)


# -- the runtime protocols -------------------------------------------------------


def protocols() -> dict[str, type]:
    namespace: dict[str, Any] = {"__name__": "embedding_protocols"}
    exec(compile(block(DOC, "python", "class DrawingRuntime"), str(DOC), "exec"), namespace)
    return {runtime: namespace[name] for runtime, name in PROTOCOLS.items()}


def members(protocol: type) -> set[str]:
    names = {n for n in vars(protocol) if not n.startswith("_")}
    return names | set(getattr(protocol, "__annotations__", {}))


def used_by_adapters(plugin: ModuleType) -> dict[str, set[str]]:
    """Runtime attribute -> the members of it that the plugin's tool actions touch."""
    adapters = importlib.import_module(f"{plugin.__name__}.adapters")
    tree = ast.parse(inspect.getsource(adapters))
    functions = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    used: dict[str, set[str]] = {}

    def scan(node: ast.AST, param: str, runtime: str) -> None:
        for child in ast.walk(node):
            if (
                isinstance(child, ast.Attribute)
                and isinstance(child.value, ast.Name)
                and child.value.id == param
            ):
                used.setdefault(runtime, set()).add(child.attr)
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Name):
                helper = functions.get(child.func.id)
                for i, arg in enumerate(child.args):
                    if helper and isinstance(arg, ast.Name) and arg.id == param:
                        scan(helper, helper.args.args[i].arg, runtime)

    for call in ast.walk(tree):
        # Each tool is KIT.adapter(action, ...) (or KIT.adapter(id, action, ...)), KIT being
        # one of the module's AdapterKits.
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr == "adapter"
            and isinstance(call.func.value, ast.Name)
            and isinstance(getattr(adapters, call.func.value.id, None), AdapterKit)
        ):
            continue
        runtime = getattr(adapters, call.func.value.id).runtime
        action = call.args[-1]
        if isinstance(action, ast.Lambda):
            scan(action, action.args.args[0].arg, runtime)
        else:
            assert isinstance(action, ast.Name), ast.unparse(action)
            function = functions[action.id]
            scan(function, function.args.args[0].arg, runtime)
    return used


def test_the_protocols_name_exactly_what_the_built_in_adapters_use() -> None:
    used: dict[str, set[str]] = {}
    for plugin in PLUGINS:
        used.update(used_by_adapters(plugin))
    documented = {runtime: members(p) for runtime, p in protocols().items()}
    assert documented == used


def test_the_reference_runtimes_satisfy_the_protocols(
    presets_host: Callable[..., PresetsHost],
) -> None:
    host = presets_host(plugins=PLUGINS)
    for runtime, protocol in protocols().items():
        reference = host.host.shell if runtime == "shell" else host.host.runtime(runtime)
        assert isinstance(reference, protocol), runtime
        for name in members(protocol):
            documented = getattr(protocol, name, None)
            if not callable(documented):
                continue
            expected = [(p.name, p.kind) for p in inspect.signature(documented).parameters.values()]
            actual = [
                (p.name, p.kind)
                for p in inspect.signature(getattr(type(reference), name)).parameters.values()
            ]
            assert actual == expected, f"{runtime}.{name}"
