"""``presets new-plugin``: write a complete third-party plugin to start from.

The files come from the package's ``templates/plugin`` folder. A template is
a file ending ``.tmpl`` whose ``@KEY@`` markers are replaced (``@`` stays
free for YAML, TOML and workflow syntax, and ``{{...}}`` for prompts); in a
path, ``PACKAGE`` becomes the import name, ``MODULE`` the snake_case name and
a leading ``dot-`` a dot, so the templates stay plain, visible files inside
the core's wheel.
"""

from __future__ import annotations

import json
import keyword
import re
import shlex
from dataclasses import dataclass
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Final
from urllib.parse import unquote, urlparse

import click

NAME_RE: Final = re.compile(r"^[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*$")
MAX_NAME: Final = 40
TEMPLATE_SUFFIX: Final = ".tmpl"


@dataclass(frozen=True)
class PluginNames:
    """Every spelling of one plugin name that the generated files need."""

    name: str  # the entry point name, as `presets plugins` prints it
    module: str  # snake_case: the runtime attribute, tool id and MCP name part
    kebab: str  # kebab-case: preset names, group, activity
    package: str  # the import package
    dist: str  # the distribution

    @classmethod
    def parse(cls, name: str) -> PluginNames:
        """Check ``name`` and derive the rest; a ``ValueError`` says what to type instead."""
        if name.startswith(("agent-presets-", "agent_presets_")):
            raise ValueError(
                f"give the plugin's short name ({name[len('agent-presets-') :]!r}), not its "
                "distribution name: the distribution becomes agent-presets-NAME"
            )
        if not NAME_RE.match(name) or len(name) > MAX_NAME:
            raise ValueError(
                f"{name!r} is not a plugin name: use up to {MAX_NAME} lowercase letters and "
                "digits, starting with a letter, with single '-' or '_' between words "
                "(for example 'recipes' or 'time-tracker')"
            )
        module = name.replace("-", "_")
        if keyword.iskeyword(module):
            raise ValueError(f"{name!r} is a Python keyword; choose another plugin name")
        return cls(
            name=name,
            module=module,
            kebab=name.replace("_", "-"),
            package=f"agent_presets_{module}",
            dist=f"agent-presets-{name.replace('_', '-')}",
        )

    def markers(self) -> dict[str, str]:
        return {
            "@NAME@": self.name,
            "@MODULE@": self.module,
            "@KEBAB@": self.kebab,
            "@ACTIVITY@": self.kebab,
            "@RUNTIME@": self.module,
            "@PACKAGE@": self.package,
            "@DIST@": self.dist,
            "@TITLE@": self.kebab.replace("-", " ").capitalize(),
        }


def render(names: PluginNames) -> dict[str, str]:
    """The generated plugin: relative path -> text."""
    markers = names.markers()
    out: dict[str, str] = {}

    def walk(folder: Traversable, parts: tuple[str, ...]) -> None:
        for entry in sorted(folder.iterdir(), key=lambda e: e.name):
            if entry.is_dir():
                if entry.name != "__pycache__":
                    walk(entry, (*parts, entry.name))
                continue
            if not entry.name.endswith(TEMPLATE_SUFFIX):
                continue
            path = [_path_part(p, names) for p in (*parts, entry.name[: -len(TEMPLATE_SUFFIX)])]
            text = entry.read_text(encoding="utf-8")
            for marker, value in markers.items():
                text = text.replace(marker, value)
            out["/".join(path)] = text

    walk(files("agent_presets") / "templates" / "plugin", ())
    # The schema the presets file names for editors: this core's own.
    from agent_presets.lib.schema import schema_text

    out["schemas/preset.schema.json"] = schema_text()
    return out


def _path_part(part: str, names: PluginNames) -> str:
    part = part.replace("PACKAGE", names.package).replace("MODULE", names.module)
    return "." + part.removeprefix("dot-") if part.startswith("dot-") else part


def write_plugin(name: str, directory: Path | None = None) -> tuple[Path, list[str]]:
    """Write the plugin ``name`` into ``directory`` (default: ./agent-presets-NAME).

    Raises ``ValueError`` for a bad name or a folder that is not empty, before
    writing anything.
    """
    names = PluginNames.parse(name)
    target = directory if directory is not None else Path(names.dist)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ValueError(
            f"{target} already exists and is not an empty folder; pass another --dir, or "
            "remove it first"
        )
    rendered = render(names)
    for relative, text in rendered.items():
        path = target / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return target, sorted(rendered)


def core_requirement() -> str | None:
    """What ``pip install`` takes to install this core where no package index serves it.

    Read from the core's install record (``direct_url.json`` of the
    ``agent-presets`` distribution, PEP 610): the source folder it was
    installed from (``-e`` again when that was editable), the wheel file, or
    the VCS URL and commit. None when it came from an index (which then
    serves it) or the place it came from is gone.
    """
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        text = distribution("agent-presets").read_text("direct_url.json")
    except PackageNotFoundError:
        return None
    try:
        record = json.loads(text) if text else None
    except ValueError:
        return None
    if not isinstance(record, dict) or not isinstance(record.get("url"), str):
        return None
    url: str = record["url"]
    vcs = record.get("vcs_info")
    if isinstance(vcs, dict) and isinstance(vcs.get("vcs"), str):
        spec = f"{vcs['vcs']}+{url}"
        if isinstance(vcs.get("commit_id"), str):
            spec += f"@{vcs['commit_id']}"
        if isinstance(record.get("subdirectory"), str):
            spec += f"#subdirectory={record['subdirectory']}"
        return shlex.quote(f"agent-presets @ {spec}")
    parsed = urlparse(url)
    if parsed.scheme != "file":
        return shlex.quote(f"agent-presets @ {url}")
    path = Path(unquote(parsed.path))
    if not path.exists():
        return None
    dir_info = record.get("dir_info")
    editable = isinstance(dir_info, dict) and dir_info.get("editable") is True
    return ("-e " if editable else "") + shlex.quote(str(path))


VENV_STEP = "python3 -m venv .venv && . .venv/bin/activate"
"""A fresh virtual environment in the plugin's folder, active for the rest of the step."""


def install_step() -> str:
    """The ``pip install`` that sets the new plugin up for development in a fresh environment.

    It names the core where it was installed from when no index serves it, so
    the step works as printed in a new virtual environment.
    """
    core = core_requirement()
    return f'pip install {core + " " if core else ""}-e ".[dev]"'


@click.command("new-plugin")
@click.argument("name")
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=True, path_type=Path),
    help="Folder to write the plugin into (default: ./agent-presets-NAME); must be "
    "empty or absent.",
)
def new_plugin(name: str, directory: Path | None) -> None:
    """Write a new plugin NAME: one module and its presets, tests, CI and pre-commit.

    \b
    Then, in the new folder, in a fresh virtual environment (the printed step makes one):
      python3 -m venv .venv && . .venv/bin/activate
      pip install -e ".[dev]"    the plugin, the test kit, pytest and ruff
      pytest                     its tests pass as written
      presets validate           its presets with everything installed

    When this core was installed from a folder, a wheel or a repository
    rather than a package index, the printed step installs it from there too.
    The plugin's README ("Installing the core") says how its CI gets the core
    before a release.
    """
    try:
        target, written = write_plugin(name, directory)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    click.echo(f"wrote {PluginNames.parse(name).dist} to {target}:")
    for relative in written:
        click.echo(f"  {relative}")
    click.echo(f"next: cd {shlex.quote(str(target))} && {VENV_STEP} && {install_step()} && pytest")
