"""The reference app out of the core: plugins' serve options, the declared context on
`presets serve`, a plugin tried alone, and `presets context set` on a running server."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from .conftest import serve_command, server_env

pytestmark = pytest.mark.anyio

SHELL_FLAGS_HELP = """\
  --shell-env NAME                Pass this variable of the server's
                                  environment into the shell sandbox.
                                  Repeatable. [default: only PATH, HOME=the
                                  root, LANG]
  --shell-network                 Let shell commands reach the network (off by
                                  default).
  --unsafe-shell                  Where bubblewrap does not work, run shell
                                  commands unconfined instead of refusing to
                                  turn the shell preset on, and load code
                                  units unconfined (in a process of their own)
                                  instead of refusing to. Not needed (and not
                                  used) where the sandbox works.
  --namespace PREFIX """

GREETER = """\
from dataclasses import dataclass

import click
from agent_presets import ToolAdapter, hookimpl
from agent_presets.host import ServeOptions


@dataclass(frozen=True)
class Greeting:
    greeting: str = "hello"
    times: int = 1


class Greeter:
    def __init__(self, options):
        self.options = options

    def hello(self, arguments):
        return " ".join([self.options.greeting] * self.options.times)


@hookimpl
def presets_serve_options():
    return ServeOptions(
        Greeting,
        [
            click.Option(["--greeting"], default="hello", help="What the greeter says."),
            click.Option(["--greeting-times", "times"], type=int, default=1, help="How often."),
        ],
    )


@hookimpl
def presets_headless_runtime(host):
    host.attach("greeter", Greeter(host.serve_options(Greeting)))


@hookimpl
def presets_tool_adapters():
    return [
        ToolAdapter.for_runtime(
            "greet.hello", "greeter", lambda greeter, arguments: greeter.hello(arguments),
            name="greet_hello", description="Say the greeting.",
            input_schema={"type": "object"},
        )
    ]
"""

GREET_PRESETS = """\
presets:
  - name: greet-tools
    default_state: auto
    risk: normal
    contexts: [{surface: any}]
    tool_ids: [greet.hello]
"""


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = serve_command()[:-1]  # the presets command, without "serve"
    return subprocess.run(
        [*command, *args],
        capture_output=True,
        text=True,
        env={**server_env(), **(env or {})},
        stdin=subprocess.DEVNULL,
        timeout=120,
        check=False,
    )


def text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def params(tmp_path: Path, *extra: str, env: dict[str, str] | None = None) -> Any:
    command = serve_command("--state-dir", str(tmp_path / "state"), *extra)
    return StdioServerParameters(
        command=command[0], args=command[1:], env={**server_env(), **(env or {})}
    )


# ------------------------------------------------------------------ serve options


def test_serve_help_lists_the_general_plugins_shell_flags_as_before() -> None:
    proc = run_cli("serve", "--help")
    assert proc.returncode == 0, proc.stderr
    assert SHELL_FLAGS_HELP in proc.stdout


def test_the_shell_flags_belong_to_the_general_plugin_not_the_core() -> None:
    proc = run_cli("serve", "--help", env={"PRESETS_LOAD_PLUGINS": "drawing"})
    assert proc.returncode == 0, proc.stderr
    assert "--shell-env" not in proc.stdout and "--unsafe-shell" not in proc.stdout
    refused = run_cli("serve", "--shell-network", env={"PRESETS_LOAD_PLUGINS": "drawing"})
    assert refused.returncode == 2
    assert "No such option '--shell-network'" in refused.stderr


async def test_a_plugins_serve_options_reach_its_runtime_typed(tmp_path: Path) -> None:
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "greeter.py").write_text(GREETER, encoding="utf-8")
    (folder / "greet.yaml").write_text(GREET_PRESETS, encoding="utf-8")
    server = params(
        tmp_path, "--plugins-dir", str(folder), "--greeting", "howdy", "--greeting-times", "2"
    )
    async with Client(server, mode="legacy") as client:
        result = await client.call_tool("space_greet_hello", {})
    assert not result.is_error, text(result)
    assert text(result) == "howdy howdy"


def test_a_bad_value_for_a_plugins_option_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "greeter.py").write_text(GREETER, encoding="utf-8")
    proc = run_cli(
        "serve", "--state-dir", str(tmp_path / "state"), "--plugins-dir", str(folder),
        "--greeting-times", "many",
    )  # fmt: skip
    assert proc.returncode == 2
    assert "Invalid value for '--greeting-times': 'many' is not a valid integer" in proc.stderr
    assert not (tmp_path / "state").exists()


# ------------------------------------------------------------------ the declared context on serve

STUDIO = """\
from agent_presets import ToolAdapter, hookimpl


@hookimpl
def presets_context_fields():
    # A value added to the host's surface field, and an activity of this plugin.
    return [
        {"name": "surface", "values": ["studio"]},
        {"name": "activity", "values": ["sculpting"]},
    ]


@hookimpl
def presets_tool_adapters():
    return [
        ToolAdapter(
            "studio.carve", "", "Carve.", {"type": "object"}, lambda app, arguments: "carved",
            name="studio_carve",
        )
    ]
"""

STUDIO_PRESETS = """\
presets:
  - name: studio-tools
    default_state: auto
    risk: normal
    contexts: [{surface: studio, activity: sculpting}]
    tool_ids: [studio.carve]
"""


def studio_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "plugins"
    folder.mkdir(exist_ok=True)
    (folder / "studio.py").write_text(STUDIO, encoding="utf-8")
    (folder / "studio.yaml").write_text(STUDIO_PRESETS, encoding="utf-8")
    return folder


async def test_serve_accepts_every_declared_surface_and_activity(tmp_path: Path) -> None:
    folder = studio_folder(tmp_path)
    server = params(
        tmp_path, "--plugins-dir", str(folder), "--surface", "studio", "--activity", "sculpting"
    )
    async with Client(server, mode="legacy") as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
    assert "space_studio_carve" in names


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (
            ["--surface", "canvs"],
            "Invalid value for '--surface': context field 'surface' has no declared value "
            "'canvs'; did you mean 'canvas'? (declared values: scene, canvas, studio)",
        ),
        (
            ["--surface", "studio", "--activity", "sculpt"],
            "Invalid value for '--activity': context field 'activity' has no declared value "
            "'sculpt'; did you mean 'sculpting'? (declared values: drawing, graph, sculpting)",
        ),
    ],
)
def test_serve_refuses_an_undeclared_surface_or_activity_with_a_did_you_mean(
    tmp_path: Path, flags: list[str], words: str
) -> None:
    folder = studio_folder(tmp_path)
    proc = run_cli(
        "serve", "--state-dir", str(tmp_path / "state"), "--plugins-dir", str(folder), *flags
    )
    assert proc.returncode == 2, proc.stderr
    assert words in " ".join(proc.stderr.split())
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "state" / "shell.json").exists()


# ------------------------------------------------------------------ presets context set


class Notices:
    def __init__(self) -> None:
        self.methods: list[str] = []

    async def __call__(self, message: Any) -> None:
        method = getattr(message, "method", None)
        if isinstance(method, str):
            self.methods.append(method)


async def context_set(tmp_path: Path, *assignments: str) -> subprocess.CompletedProcess[str]:
    import anyio.to_thread

    state = str(tmp_path / "state")
    return await anyio.to_thread.run_sync(
        lambda: run_cli("context", "set", *assignments, "--state-dir", state)
    )


async def names_of(client: Client) -> list[str]:
    return [tool.name for tool in (await client.list_tools()).tools]


async def until_listed(client: Client, name: str) -> list[str]:
    import anyio

    with anyio.fail_after(10):
        while name not in (names := await names_of(client)):
            await anyio.sleep(0.05)
    return names


async def test_context_set_moves_a_running_server_and_every_client_hears_of_it(
    tmp_path: Path,
) -> None:
    notices = Notices()
    async with Client(params(tmp_path), mode="legacy", message_handler=notices) as client:
        assert "space_drawing_insert_shape" not in await names_of(client)
        proc = await context_set(tmp_path, "surface=canvas", "activity=drawing")
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == (
            "context: surface=canvas activity=drawing canvas_visible=true world_id=home "
            "(changed: activity, canvas_visible, surface)"
        )
        await until_listed(client, "space_drawing_insert_shape")
        assert "notifications/tools/list_changed" in notices.methods

        refused = await context_set(tmp_path, "activity=drawng")
        assert refused.returncode == 1
        assert (
            "context field 'activity' has no declared value 'drawng'; did you mean 'drawing'? "
            "(declared values: drawing, graph)" in refused.stderr
        )
        assert "space_drawing_insert_shape" in await names_of(client)  # nothing changed
    lines = [json.loads(line) for line in (tmp_path / "state" / "events.jsonl").open()]
    assert [line["kind"] for line in lines] == ["context"]
    assert lines[0]["by"] == "cli"
    stats = run_cli("stats", "--state-dir", str(tmp_path / "state"), "--json")
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["calls"] == 0


def test_context_set_needs_a_running_server_and_key_value_pairs(tmp_path: Path) -> None:
    proc = run_cli("context", "set", "surface=canvas", "--state-dir", str(tmp_path / "none"))
    assert proc.returncode == 1
    assert "no server runs for state dir" in proc.stderr
    bad = run_cli("context", "set", "surface", "--state-dir", str(tmp_path / "none"))
    assert bad.returncode == 2
    assert "'surface' is not KEY=VALUE" in bad.stderr


# ------------------------------------------------------------------ a plugin tried alone


SPACE_APP_ALONE = """\
from agent_presets_general import SpaceApp

# The Space app (its fields, defaults and shell) without the general plugin's tools.
_app = SpaceApp()
presets_context_fields = _app.presets_context_fields
presets_host_defaults = _app.presets_host_defaults
presets_headless_runtime = _app.presets_headless_runtime
"""


@pytest.mark.parametrize(
    ("plugin", "move", "tool"),
    [
        ("drawing", ["surface=canvas", "activity=drawing"], "space_drawing_insert_shape"),
        ("graph", ["surface=canvas", "activity=graph"], "space_graph_add_node"),
        ("scene", ["surface=scene"], "space_scene_add_cuboid"),
        ("units", ["surface=canvas"], "space_unit_list"),
    ],
)
async def test_a_plugin_alone_starts_in_and_moves_to_its_context(
    tmp_path: Path, plugin: str, move: list[str], tool: str
) -> None:
    # The plugin in the Space app, without the general plugin: the app is a plugin too.
    folder = tmp_path / "app"
    folder.mkdir()
    (folder / "space.py").write_text(SPACE_APP_ALONE, encoding="utf-8")
    alone = {"PRESETS_LOAD_PLUGINS": f"{plugin},space", "PRESETS_PLUGINS_DIR": str(folder)}
    fields = dict(a.split("=") for a in move)
    started = params(tmp_path, *(f"--{k}={v}" for k, v in fields.items()), env=alone)
    async with Client(started, mode="legacy") as client:
        names = await names_of(client)
        assert tool in names
        assert not any(name.startswith("space_app_") for name in names)  # no general plugin
    # Started elsewhere, then moved there on the running server.
    elsewhere = "surface=scene" if fields["surface"] == "canvas" else "surface=canvas"
    start = params(tmp_path, f"--{elsewhere}", "--activity=", env=alone)
    async with Client(start, mode="legacy") as client:
        if plugin != "units":
            assert tool not in await names_of(client)
        proc = await context_set(tmp_path, *move)
        assert proc.returncode == 0, proc.stderr
        await until_listed(client, tool)
