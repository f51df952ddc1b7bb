"""The reference app out of the core: plugins' serve options, the declared context on
`presets serve`, a plugin tried alone, and `presets context set` on a running server."""

from __future__ import annotations

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
                                  turn the shell preset on. Not needed (and
                                  not used) where the sandbox works.
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
