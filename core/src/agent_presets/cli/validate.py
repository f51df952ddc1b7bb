"""``presets validate``: check preset files, or the whole installed catalog."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from agent_presets.cli.options import emit_json
from agent_presets.model import PresetValidationError

if TYPE_CHECKING:
    from agent_presets.catalog import Catalog


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "github"]),
    default="text",
    show_default=True,
    help="text: path:line:col: message; github: workflow annotations.",
)
def validate(paths: tuple[Path, ...], fmt: str) -> None:
    """Check preset files, or every installed plugin when no PATH is given.

    PATHS are YAML files or folders (searched for *.yaml and *.yml). With no
    path, every installed plugin's presets and adapters are checked together:
    tool ids must resolve to adapters, MCP names must carry the prefix, and no
    name may be defined twice across plugins. Context fields and values must
    be declared, by a plugin or by the headless host that `presets serve` runs.

    Exit status: 0 valid, 1 problems found, 2 usage error.
    """
    if paths:
        from agent_presets.catalog import check_preset_files

        files = _yaml_files(paths)
        checked = check_preset_files(files)
        problems, preset_count = list(checked.problems), len(checked.presets)
        sources = [str(f) for f in files]
        plugin_problems: list[str] = []
    else:
        from agent_presets.catalog import collect
        from agent_presets.host.context_fields import HostContextFields
        from agent_presets.plugins import load_plugins

        plugin_set = load_plugins()
        plugin_set.add(HostContextFields())  # checked as `presets serve` serves it
        catalog: Catalog = collect(plugin_set)
        problems = list(catalog.problems)
        preset_count = len(catalog.presets)
        sources = catalog.files
        plugin_problems = [str(p) for p in plugin_set.problems]
    _report(problems, plugin_problems, sources, preset_count, fmt)
    if problems or plugin_problems:
        sys.exit(1)


def _yaml_files(paths: Iterable[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(
                p for p in path.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file()
            )
            if not found:
                raise click.UsageError(f"{path}: folder holds no .yaml or .yml file")
            files.extend(found)
        else:
            files.append(path)
    return files


def _report(
    problems: list[PresetValidationError],
    plugin_problems: list[str],
    sources: list[str],
    preset_count: int,
    fmt: str,
) -> None:
    if fmt == "json":
        emit_json(
            {
                "valid": not problems and not plugin_problems,
                "files": sources,
                "presets": preset_count,
                "problems": [
                    {"source": p.source, "line": p.line, "column": p.column, "message": p.message}
                    for p in problems
                ]
                + [
                    {"source": None, "line": None, "column": None, "message": m}
                    for m in plugin_problems
                ],
            }
        )
        return
    for p in problems:
        if fmt == "github":
            loc = ",".join(
                f"{k}={v}"
                for k, v in (("file", p.source), ("line", p.line), ("col", p.column))
                if v
            )
            message = p.message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
            click.echo(f"::error {loc}::{message}" if loc else f"::error::{message}")
        else:
            click.echo(str(p))
    for m in plugin_problems:
        click.echo(f"::error::{m}" if fmt == "github" else f"plugin: {m}")
    total = len(problems) + len(plugin_problems)
    summary = f"{len(sources)} file(s), {preset_count} valid preset(s), {total} problem(s)"
    click.echo(("ok: " if not total else "failed: ") + summary, err=True)
