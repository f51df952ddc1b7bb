"""The README's commands hold: each `presets` command and option exists, and its set-up
names the system packages CI installs."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest

from agent_presets.cli import main

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")


def shell_lines(text: str) -> list[str]:
    """Every command line of the ```sh blocks, without its comment."""
    blocks = re.findall(r"```sh\n(.*?)```", text, re.S)
    return [line.split("  #")[0].strip() for block in blocks for line in block.splitlines()]


def packages(line: str) -> set[str]:
    words = shlex.split(line)
    return {w for w in words[words.index("install") + 1 :] if not w.startswith("-")}


def test_the_set_up_names_every_system_package_ci_installs() -> None:
    [readme] = [line for line in shell_lines(README) if line.startswith("apt-get install")]
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    installed: set[str] = set()
    for line in re.findall(r"apt-get install ([^>\n]*)", ci):
        installed |= packages(f"apt-get install {line}")
    assert packages(readme) == installed


PRESETS_LINES = [line for line in shell_lines(README) if line.startswith("uv run presets ")]


@pytest.mark.parametrize("line", PRESETS_LINES)
def test_each_presets_command_of_the_readme_exists_with_its_options(line: str) -> None:
    words = shlex.split(line)[3:]
    command: click.Command = main
    context = click.Context(main)
    while isinstance(command, click.Group) and words and not words[0].startswith("-"):
        found = command.get_command(context, words[0])
        assert found is not None, f"README: `{line}`: no command {words[0]!r}"
        command, words = found, words[1:]
    # As click reads the command line: a context command's flags come from the plugins.
    parsed = command.make_context(command.name, [], parent=context, resilient_parsing=True)
    params = command.get_params(parsed)
    options = {o for p in params for o in (*p.opts, *p.secondary_opts)}
    options |= {"--help"}
    for word in words:
        if word.startswith("--"):
            assert word.split("=")[0] in options, f"README: `{line}`: {word} is not an option"
