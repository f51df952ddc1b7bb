"""``presets validate``: check preset files, or the whole installed catalog."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING

import click

from agent_presets.cli.budget import tokenizer_option
from agent_presets.cli.options import (
    check_runtime_hooks,
    emit_json,
    load_installed,
    plugins_dir_option,
)
from agent_presets.lib.model import PresetValidationError

if TYPE_CHECKING:
    from agent_presets.lib.catalog import Catalog
    from agent_presets.lib.plugins import PluginProblem, PluginSet

PATHS_PLUGIN = "files given"
"""The plugin name ``validate --installed`` gives the files it was given."""


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
@click.option(
    "--installed",
    is_flag=True,
    help="Check PATHS together with every installed plugin, in place of the installed "
    "copy of the same files.",
)
@click.option(
    "--max-file-size",
    metavar="SIZE",
    default=None,
    help="Refuse a preset file larger than this, before parsing it (bytes, or 512KiB, 2MiB). "
    "[default: $PRESETS_MAX_FILE_SIZE, else 1MiB]",
)
@click.option(
    "--max-tokens",
    type=click.IntRange(min=1),
    metavar="N",
    help="Also fail when the tools active in a context take more than N tokens, as "
    "`presets budget` counts them (every context the presets' patterns name; needs the "
    "installed plugins). A preset's own max_tokens is checked without this flag.",
)
@tokenizer_option
@plugins_dir_option
def validate(
    paths: tuple[Path, ...],
    fmt: str,
    installed: bool,
    max_file_size: str | None,
    max_tokens: int | None,
    tokenizer: str,
) -> None:
    """Check preset files, or every installed plugin when no PATH is given.

    PATHS are YAML files or folders (searched for *.yaml and *.yml), checked
    alone: a plugin's CI can lint its files before installing anything. With
    no path, every installed plugin and the plugins folder are checked as one
    catalog: tool ids must resolve to adapters, MCP names must carry the
    prefix, no name may be defined twice, and every plugin's hooks must run.
    --installed checks PATHS against that catalog, leaving out the installed
    plugin that ships the same files (matched by path, or by content for a
    non-editable install) so they are not counted twice. Context fields and values must
    be declared by a plugin (the app plugin declares the fields it provides).

    A preset's max_tokens, and with --max-tokens N every context's active
    set, are counted with --tokenizer: a preset over its limit is reported at
    its max_tokens line, an active set over N names its context.

    Exit status: 0 valid, 1 problems found, 2 usage error.
    """
    limit = _size(max_file_size)
    if paths and not installed and max_tokens is not None:
        raise click.UsageError(
            "--max-tokens counts the tools' definitions, which only the installed plugins "
            "provide: add --installed"
        )
    if paths and not installed:
        from agent_presets.lib.catalog import check_preset_files

        files = yaml_files(paths)
        checked = check_preset_files(files, max_file_size=limit)
        problems = [*checked.problems, *checked.upstreams.unchecked]
        _report(problems, [], [str(f) for f in files], len(checked.presets), fmt)
        _report_uncovered(checked, fmt)
        if fmt != "json":
            # What passes here can still fail with the plugins: say so, not only in the docs.
            click.echo(
                "checked alone: the schema and file rules; --installed also checks tool ids, "
                "token budgets, and context fields and values against the installed plugins",
                err=True,
            )
        if problems:
            sys.exit(1)
        return
    from agent_presets.lib.catalog import collect, variants_turned_on_together

    plugin_set = load_installed(strict=False)
    if paths:
        _in_place_of_installed(plugin_set, yaml_files(paths))
    check_runtime_hooks(plugin_set)
    namespace = plugin_set.namespace()  # checked as `presets serve` serves it
    catalog: Catalog = collect(plugin_set, namespace_prefix=namespace, max_file_size=limit)
    # An upstream without a current snapshot: its presets cannot be checked offline.
    problems = [
        *catalog.problems,
        *variants_turned_on_together(catalog),
        *catalog.upstreams.unchecked,
        *_budget_problems(catalog, tokenizer, max_tokens, namespace),
    ]
    plugin_problems: list[PresetValidationError] = list(plugin_set.problems)
    _report(problems, plugin_problems, catalog.files, len(catalog.presets), fmt)
    _report_uncovered(catalog, fmt)
    if problems or plugin_problems:
        sys.exit(1)


def _budget_problems(
    catalog: Catalog, tokenizer: str, max_tokens: int | None, namespace: str
) -> list[PresetValidationError]:
    """Presets over their max_tokens, and with ``max_tokens`` active sets over it."""
    if max_tokens is None and all(p.max_tokens is None for p in catalog.presets):
        return []  # nothing to count, so the tokenizer is never loaded
    from agent_presets.cli.budget import make_budget, server_tools
    from agent_presets.lib.budget import active_set_problems, catalog_manager, preset_problems

    manager = catalog_manager(catalog, namespace)
    budget = make_budget(tokenizer)
    found = preset_problems(catalog, budget, manager.tool_adapters)
    if max_tokens is not None:
        extra = server_tools(manager, namespace)
        try:
            found += active_set_problems(manager, budget, max_tokens, extra)
        except PresetValidationError as exc:  # too many contexts to enumerate
            found.append(exc)
    return found


def _report_uncovered(catalog: Catalog, fmt: str) -> None:
    """Say which upstream tools no preset lists: they are known, and never served."""
    if fmt == "json":
        return
    presets = [*catalog.presets, *catalog.upstreams.pending]
    for name, tool_ids in catalog.upstreams.uncovered(presets).items():
        shown = ", ".join(tool_ids[:8]) + (
            f" and {len(tool_ids) - 8} more" if len(tool_ids) > 8 else ""
        )
        click.echo(
            f"upstream {name!r}: {len(tool_ids)} tool(s) no preset lists, never served: {shown}",
            err=True,
        )


def _in_place_of_installed(plugin_set: PluginSet, files: list[Path]) -> None:
    """Put ``files`` in the catalog instead of the installed plugin that ships them.

    The plugin keeps its adapters (the files' tool ids resolve to them); only
    its preset files are left out, or every preset would be defined twice.
    A file matches by resolved path (an editable install) or by identical
    content (a regular install of the same checkout).
    """
    from agent_presets.lib.plugins import PresetFolder

    given = {f.resolve() for f in files}
    contents = {c for c in map(_content, files) if c is not None}

    def reported_by_collect(problem: PluginProblem) -> None:
        pass

    for info, shipped in plugin_set.call_each("presets_preset_files", reported_by_collect):
        if not isinstance(shipped, Iterable) or isinstance(shipped, str | bytes):
            continue  # collect reports the bad return value
        for item in shipped:
            path = local_path(item)
            if path is not None and (path in given or _content(path) in contents):
                plugin_set.leave_out_hook(info.name, "presets_preset_files")
                click.echo(
                    f"the given files stand in for the preset files of plugin {info.label}",
                    err=True,
                )
                break
    plugin_set.add(PresetFolder(files), PATHS_PLUGIN)


def local_path(item: object) -> Path | None:
    """The file behind a ``presets_preset_files`` item, when it is one on this disk."""
    # A regular package's importlib.resources traversable is a pathlib.Path.
    return Path(item).resolve() if isinstance(item, str | PathLike) else None


def _content(path: Path) -> bytes | None:
    from agent_presets.lib.loader import MAX_FILE_SIZE

    try:
        # Only a regular file within the default size is compared (a FIFO would hang).
        if not path.is_file() or path.stat().st_size > MAX_FILE_SIZE:
            return None
        return path.read_bytes()
    except OSError:
        return None


def _size(text: str | None) -> int | None:
    if text is None:
        return None
    from agent_presets.lib.loader import parse_size

    try:
        return parse_size(text)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--max-file-size") from None


def yaml_files(paths: Iterable[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            # Not is_file(): a FIFO or device named *.yaml is reported, not skipped in silence.
            found = sorted(
                p for p in path.rglob("*") if p.suffix in (".yaml", ".yml") and not p.is_dir()
            )
            if not found:
                raise click.UsageError(f"{path}: folder holds no .yaml or .yml file")
            files.extend(found)
        else:
            files.append(path)
    return files


def _report(
    problems: list[PresetValidationError],
    plugin_problems: list[PresetValidationError],
    sources: list[str],
    preset_count: int,
    fmt: str,
) -> None:
    """Every problem in ``fmt``: the plugins that failed first, since other problems may
    follow from them, and those that do (``FollowingProblem``) last, marked as such."""
    from agent_presets.lib.catalog import FollowingProblem

    def follows_from(p: PresetValidationError) -> list[str] | None:
        return list(p.follows_from) if isinstance(p, FollowingProblem) else None

    ordered = [
        *plugin_problems,
        *(p for p in problems if follows_from(p) is None),
        *(p for p in problems if follows_from(p) is not None),
    ]
    if fmt == "json":
        emit_json(
            {
                "valid": not ordered,
                "files": sources,
                "presets": preset_count,
                "problems": [
                    {
                        "source": p.source,
                        "line": p.line,
                        "column": p.column,
                        "message": p.message,
                        "plugin": p in plugin_problems,
                        "follows_from": follows_from(p),
                    }
                    for p in ordered
                ],
            }
        )
        return
    for p in ordered:
        if fmt == "github":
            loc = ",".join(
                f"{k}={v}"
                for k, v in (("file", p.source), ("line", p.line), ("col", p.column))
                if v
            )
            message = p.message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
            click.echo(f"::error {loc}::{message}" if loc else f"::error::{message}")
        else:
            click.echo(("plugin: " if p in plugin_problems else "") + str(p))
    total = len(problems) + len(plugin_problems)
    summary = f"{len(sources)} file(s), {preset_count} valid preset(s), {total} problem(s)"
    click.echo(("ok: " if not total else "failed: ") + summary, err=True)
