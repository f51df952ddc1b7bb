"""``presets upstreams snapshot``: record what each upstream lists, for offline validation.

Each preset file that declares ``upstreams:`` gets a lock file beside it,
``NAME.upstreams.lock.json`` (a name a plugins folder never loads as a preset
file), holding each upstream's tools as it listed them, its server's name and
version, and the capabilities this server declared to it (what an upstream
lists can depend on them). ``presets validate`` then checks the presets'
upstream tool ids, schemas and risks from it, in CI, starting nothing.

This command starts the upstreams, so it imports the MCP client (inside the
command, as ``serve`` does).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from agent_presets.cli.options import emit_json, load_installed, plugins_dir_option, warn
from agent_presets.lib.safetext import shown


@click.group()
def upstreams() -> None:
    """Upstream MCP servers whose tools presets list (docs/upstreams.md)."""


@upstreams.command()
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--root",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=".",
    show_default=True,
    help="The folder {root} stands for while the upstreams run for the snapshot.",
)
@click.option(
    "--only",
    "only",
    metavar="NAME",
    multiple=True,
    help="Snapshot only these upstreams (repeatable); the others keep their snapshot.",
)
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON.")
@plugins_dir_option
def snapshot(paths: tuple[Path, ...], root: Path, only: tuple[str, ...], as_json: bool) -> None:
    """Start each upstream of PATHS and write its tool list beside its preset file.

    PATHS are preset files or folders; with none, every installed plugin's
    preset files and the plugins folder. An upstream that cannot be started
    keeps the snapshot it had, and the command exits 1. Exit status: 0 all
    written, 1 an upstream failed, 2 usage error.
    """
    from agent_presets.cli.validate import yaml_files
    from agent_presets.lib.catalog import check_preset_files
    from agent_presets.lib.upstreams import Snapshot, read_lock, write_lock

    if paths:
        catalog = check_preset_files(yaml_files(paths))
    else:  # the installed catalog: its files, and the upstreams of presets_upstreams
        from agent_presets.lib.catalog import collect

        catalog = collect(load_installed())
    for problem in catalog.upstreams.problems:
        warn(str(problem))
    declared = catalog.upstreams.upstreams
    unknown = [n for n in only if n not in declared]
    if unknown:
        raise click.BadParameter(
            f"no preset file declares upstream(s) {', '.join(map(repr, unknown))}; declared: "
            f"{', '.join(declared) or 'none'}",
            param_hint="'--only'",
        )
    if not declared:
        raise click.UsageError("no preset file given declares upstreams: nothing to snapshot")
    by_lock: dict[Path, list[str]] = {}
    for name, upstream in declared.items():
        if upstream.lock is not None:
            by_lock.setdefault(upstream.lock, []).append(name)

    from agent_presets.server.mcp.upstream import UpstreamHub, UpstreamUnavailable

    hub = UpstreamHub(catalog.upstreams, root=root.resolve())
    failed = False
    written: list[dict[str, object]] = []
    taken_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    try:
        for lock, names in by_lock.items():
            try:
                kept = read_lock(lock)
            except Exception:  # an unreadable lock is written anew
                kept = {}
            snapshots: dict[str, Snapshot] = {n: s for n, s in kept.items() if n in names}
            for name in names:
                if only and name not in only:
                    continue
                try:
                    taken = hub.snapshot(name, taken_at=taken_at)
                except UpstreamUnavailable as exc:
                    failed = True
                    click.echo(f"error: {shown(str(exc))}", err=True)
                    continue
                snapshots[name] = taken
                server = taken.server
                # The upstream's own words: shown, so an escape sequence cannot steer the terminal.
                label = shown(f"{server.get('name', '?')} {server.get('version', '')}".strip())
                written.append({"upstream": name, "tools": len(taken.tools), "lock": str(lock)})
                if not as_json:
                    click.echo(f"{name}: {len(taken.tools)} tools ({label}) -> {lock}", err=True)
            if snapshots:
                write_lock(lock, snapshots.values())
    finally:
        hub.close()
    if as_json:
        emit_json({"written": written, "ok": not failed})
    if failed:
        sys.exit(1)
