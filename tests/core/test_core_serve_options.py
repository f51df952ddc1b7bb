"""Options plugins add to ``presets serve``: the hook, the checks, the typed hand-over."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from agent_presets import hookimpl, load_plugins
from agent_presets.cli import main
from agent_presets.host import ServeOptions
from agent_presets.server.host.options import collect_serve_options
from agent_presets_general import SpaceHost


@dataclass(frozen=True)
class Greeting:
    greeting: str = "hello"
    loud: bool = False


class Greeter:
    """A plugin with two serve options and a runtime that reads them back, typed."""

    __name__ = "greeter"

    def __init__(self, flag: str = "--greeting") -> None:
        self.flag = flag
        self.seen: list[Greeting] = []

    @hookimpl
    def presets_serve_options(self) -> ServeOptions[Greeting]:
        return ServeOptions(
            Greeting,
            [
                click.Option([self.flag, "greeting"], default="hello", help="What to say."),
                click.Option(["--loud"], is_flag=True, help="Say it loudly."),
            ],
        )

    @hookimpl
    def presets_headless_runtime(self, host: Any) -> None:
        self.seen.append(host.serve_options(Greeting))


def test_hook_presets_serve_options_gives_the_plugin_its_options_typed(tmp_path: Path) -> None:
    greeter = Greeter()
    plugin_set = load_plugins([greeter])
    [(info, serve_options)] = collect_serve_options(plugin_set, [])
    assert info.name == "greeter"
    built = serve_options.build(greeting="hi", loud=True)
    with SpaceHost(tmp_path / "state", serve_options=[built]) as host:
        host.start(plugin_set)
    assert greeter.seen == [Greeting("hi", True)]


def test_a_host_started_without_serve_gives_a_plugin_its_options_defaults(tmp_path: Path) -> None:
    greeter = Greeter()
    with SpaceHost(tmp_path / "state") as host:
        host.start([greeter])
    assert greeter.seen == [Greeting()]


def test_an_option_the_command_already_has_is_a_problem_naming_both_and_is_left_out() -> None:
    plugin_set = load_plugins([Greeter("--port")])
    port = click.Option(["--port"], type=int)
    assert collect_serve_options(plugin_set, [port]) == []
    [problem] = plugin_set.problems
    assert "hook presets_serve_options adds option --port to presets serve, which the " in str(
        problem
    )
    assert "command itself already has; rename one of them" in str(problem)


def test_two_plugins_adding_one_option_is_a_problem_naming_both() -> None:
    first, second = Greeter(), Greeter()
    second.__name__ = "echo"
    plugin_set = load_plugins([first, second])
    [(info, _)] = collect_serve_options(plugin_set, [])
    assert info.name == "greeter"
    [problem] = plugin_set.problems
    assert "plugin echo" in str(problem) and "which plugin 'greeter' already has" in str(problem)


@pytest.mark.parametrize(
    ("result", "words"),
    [
        (["--x"], "returned list; return agent_presets.host.ServeOptions"),
        (ServeOptions(dict, [click.Argument(["x"])]), "gave Argument among its options"),
    ],
)
def test_a_hook_result_that_is_not_serve_options_is_a_problem(result: Any, words: str) -> None:
    class Odd:
        __name__ = "odd"

        @hookimpl
        def presets_serve_options(self) -> Any:
            return result

    plugin_set = load_plugins([Odd()])
    assert collect_serve_options(plugin_set, []) == []
    assert words in str(plugin_set.problems[0])


GREETER_FILE = """\
import click
from agent_presets import hookimpl
from agent_presets.host import ServeOptions


@hookimpl
def presets_serve_options():
    return ServeOptions(dict, [click.Option(["--greeting"], help="What the greeter says.")])
"""


def test_serve_help_lists_a_plugins_options_before_namespace(tmp_path: Path) -> None:
    (tmp_path / "greeter.py").write_text(GREETER_FILE, encoding="utf-8")
    result = CliRunner().invoke(
        main,
        ["serve", "--plugins-dir", str(tmp_path), "--help"],
        env={"PRESETS_LOAD_PLUGINS": "greeter"},
    )
    assert result.exit_code == 0, result.output
    assert "--greeting TEXT" in result.output and "What the greeter says." in result.output
    assert result.output.index("--greeting") < result.output.index("--namespace")
    # With no plugin loaded, no plugin's flag is left: the shell's belong to general.
    assert "--shell-env" not in result.output


def test_a_serve_options_hook_that_raises_is_a_located_problem_and_the_rest_load() -> None:
    class Broken:
        __name__ = "broken"

        @hookimpl
        def presets_serve_options(self) -> Any:
            raise RuntimeError("no printer configured")

    plugin_set = load_plugins([Broken(), Greeter()])
    [(info, _)] = collect_serve_options(plugin_set, [])
    assert info.name == "greeter"
    [problem] = plugin_set.problems
    assert "hook presets_serve_options raised RuntimeError: no printer configured" in str(problem)
    assert problem.source is not None and problem.source.endswith("test_core_serve_options.py")
    assert problem.line is not None
