"""The ``presets`` command line.

Domain errors are raised in the core and turned into one clear line here;
no traceback reaches a user for a bad file or bad arguments. Exit codes:
0 ok, 1 problems found (invalid input), 2 usage error.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import click

from agent_presets import __version__
from agent_presets.model import PresetError, PresetValidationError

if TYPE_CHECKING:
    from agent_presets.bootstrap import Presets
    from agent_presets.catalog import Catalog
    from agent_presets.plugins import PluginSet

F = TypeVar("F", bound=Callable[..., Any])

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class PresetsGroup(click.Group):
    """Maps domain errors to one-line click errors (exit 1)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except PresetError as exc:
            raise click.ClickException(str(exc)) from None
        except BrokenPipeError:
            # The reader went away (`presets list | head`): stop quietly, as cat does.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            sys.exit(1)
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename else ""
            raise click.ClickException(f"{where}{exc.strerror or exc}") from None


@click.group(cls=PresetsGroup, context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, prog_name="presets")
def main() -> None:
    """Decide which tools an AI agent may use right now, and serve them over MCP.

    Presets are YAML bundles of tool ids with the contexts that activate them,
    shipped by plugins (distributions with an `agent_presets` entry point).

    \b
    Examples:
      presets validate                      check every installed plugin
      presets validate plugins/my/presets.yaml --format github
      presets resolve --surface canvas --activity drawing
      presets explain space_app_run_bash
      presets serve --transport http --port 8765

    \b
    Environment:
      PRESETS_LOAD_PLUGINS  comma list of plugins to load (empty: none; unset: all)
      PRESETS_STRICT=1      plugin and definition problems are fatal
      PRESETS_TRACE_PLUGINS=1  print every hook call to stderr
    """


# ------------------------------------------------------------------ helpers


def _emit_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, ensure_ascii=False))


def _warn(message: str) -> None:
    click.echo(f"warning: {message}", err=True)


def _load_plugins() -> PluginSet:
    from agent_presets.plugins import load_plugins

    plugin_set = load_plugins()
    for problem in plugin_set.problems:
        _warn(str(problem))
    return plugin_set


def _parse_value(text: str) -> Any:
    import yaml

    from agent_presets.loader import PresetYamlLoader

    try:
        value = yaml.load(text, Loader=PresetYamlLoader)
    except yaml.YAMLError:
        return text
    if value is None and text.strip().lower() not in ("null", "~", ""):
        return text
    return value if isinstance(value, str | int | float | bool) or value is None else text


def context_options(func: F) -> F:
    """--surface/--activity/--canvas-visible/--set/--on/--off, shared by resolve, explain, serve."""
    options = [
        click.option(
            "--surface",
            metavar="S",
            default=None,
            help="The surface the user is on, e.g. scene or canvas. "
            "[default: scene; serve: as saved]",
        ),
        click.option(
            "--activity",
            metavar="A",
            default=None,
            help="The active activity, e.g. drawing or graph. [default: none]",
        ),
        click.option(
            "--canvas-visible/--no-canvas-visible",
            default=None,
            help="Whether the canvas is shown. [default: on for the canvas surface]",
        ),
        click.option(
            "--set",
            "facts",
            metavar="KEY=VALUE",
            multiple=True,
            help="Another context fact, e.g. --set world_id=home. Repeatable.",
        ),
        click.option(
            "--on",
            "force_on",
            metavar="NAME",
            multiple=True,
            help="Force a preset on for this session. Repeatable.",
        ),
        click.option(
            "--off",
            "force_off",
            metavar="NAME",
            multiple=True,
            help="Force a preset off for this session. Repeatable.",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _context(
    surface: str | None, activity: str | None, canvas_visible: bool | None, facts: Sequence[str]
) -> dict[str, Any]:
    surface = "scene" if surface is None else surface
    context: dict[str, Any] = {
        "surface": surface,
        "activity": activity or None,
        "canvas_visible": canvas_visible if canvas_visible is not None else surface == "canvas",
    }
    for fact in facts:
        key, sep, value = fact.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{fact!r} is not KEY=VALUE", param_hint="'--set'")
        context[key.strip()] = _parse_value(value)
    return context


def _overrides(force_on: Sequence[str], force_off: Sequence[str]) -> dict[str, str]:
    both = set(force_on) & set(force_off)
    if both:
        raise click.UsageError(f"preset {sorted(both)[0]!r} is given to both --on and --off")
    return {**{n: "on" for n in force_on}, **{n: "off" for n in force_off}}


def _presets(
    context: dict[str, Any] | None = None, overrides: dict[str, str] | None = None, app: Any = None
) -> Presets:
    from agent_presets.bootstrap import bootstrap

    return bootstrap(app, plugins=_load_plugins(), context=context, overrides=overrides)


def _presets_for_flags(
    surface: str | None,
    activity: str | None,
    canvas_visible: bool | None,
    facts: Sequence[str],
    force_on: Sequence[str],
    force_off: Sequence[str],
) -> Presets:
    """The installed presets resolved for the context flags of ``context_options``."""
    context = _context(surface, activity, canvas_visible, facts)
    return _presets(context, _overrides(force_on, force_off))


def _table(title: str | None, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """A readable table on a terminal; one unwrapped line per row when piped (for grep)."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    console = Console(soft_wrap=False)
    piped = not console.is_terminal
    if piped:
        console = Console(width=10_000, soft_wrap=False, no_color=True)
    table = Table(
        title=title,
        header_style="bold",
        title_justify="left",
        box=box.SIMPLE if piped else box.HEAVY_HEAD,
    )
    for i, column in enumerate(columns):
        table.add_column(column, no_wrap=piped or i == 0, overflow="fold")
    for row in rows:
        table.add_row(*("" if c is None else str(c) for c in row))
    console.print(table)


# ------------------------------------------------------------------ validate


@main.command()
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
    name may be defined twice across plugins.

    Exit status: 0 valid, 1 problems found, 2 usage error.
    """
    if paths:
        files = _yaml_files(paths)
        problems, preset_count = _validate_files(files)
        sources = [str(f) for f in files]
        plugin_problems: list[str] = []
    else:
        from agent_presets.catalog import collect
        from agent_presets.plugins import load_plugins

        plugin_set = load_plugins()
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


def _validate_files(files: Sequence[Path]) -> tuple[list[PresetValidationError], int]:
    from agent_presets.loader import parse_presets, read_preset_source

    problems: list[PresetValidationError] = []
    first: dict[str, str] = {}
    count = 0
    for path in files:
        try:
            source, text = read_preset_source(path)
        except PresetValidationError as exc:
            problems.append(exc)
            continue
        presets, file_problems = parse_presets(text, source)
        problems.extend(file_problems)
        for preset in presets:
            if preset.name in first:
                problems.append(
                    PresetValidationError(
                        f"preset {preset.name!r} is also defined in {first[preset.name]}; "
                        "preset names must be unique across files",
                        source=source,
                    )
                )
            else:
                first[preset.name] = source
                count += 1
    return problems, count


def _report(
    problems: list[PresetValidationError],
    plugin_problems: list[str],
    sources: list[str],
    preset_count: int,
    fmt: str,
) -> None:
    if fmt == "json":
        _emit_json(
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


# ------------------------------------------------------------------ listings


@main.command("list")
@click.option("--group", metavar="G", help="Only presets of this group.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def list_presets(group: str | None, as_json: bool) -> None:
    """List every preset the installed plugins define, in registration order."""
    presets = _presets()
    items = presets.registry.list_by_group(group) if group else presets.registry.list()
    if as_json:
        _emit_json(
            [
                {**p.to_dict(), "plugin": presets.preset_plugin.get(p.name), "source": p.source}
                for p in items
            ]
        )
        return
    from agent_presets.explain import describe_patterns

    _table(
        None,
        ["preset", "group", "default", "risk", "contexts", "tools", "plugin"],
        (
            (
                p.name,
                p.group,
                p.default_state,
                p.risk,
                describe_patterns(p),
                len(p.tool_ids),
                presets.preset_plugin.get(p.name),
            )
            for p in items
        ),
    )


@main.command()
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def show(name: str, as_json: bool) -> None:
    """Show one preset: its definition, its tools and where it comes from."""
    from agent_presets.model import UnknownPresetError

    presets = _presets()
    preset = presets.registry.get(name)
    if preset is None:
        raise UnknownPresetError(presets.registry._unknown_message(name))
    tools = []
    for tool_id in preset.tool_ids:
        adapter = presets.tool_adapters.get(tool_id)
        tools.append(
            {
                "id": tool_id,
                "mcp_name": adapter.mcp_name if adapter else None,
                "description": adapter.description if adapter else None,
            }
        )
    data = {
        **preset.to_dict(),
        "plugin": presets.preset_plugin.get(name),
        "source": preset.source,
        "tools": tools,
    }
    if as_json:
        _emit_json(data)
        return
    from agent_presets.explain import describe_patterns

    click.echo(f"{preset.name}  (plugin {data['plugin']}, {preset.source})")
    click.echo(f"  group:         {preset.group or '-'}")
    click.echo(f"  default_state: {preset.default_state}")
    click.echo(f"  risk:          {preset.risk}{'  (dangerous)' if preset.dangerous else ''}")
    click.echo(f"  contexts:      {describe_patterns(preset)}")
    click.echo("  tools:")
    for t in tools:
        click.echo(f"    {t['mcp_name'] or '?'}  ({t['id']})")
    if preset.system_prompt:
        click.echo("  system_prompt:")
        for line in preset.system_prompt.strip().splitlines():
            click.echo(f"    {line}")


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def tools(as_json: bool) -> None:
    """List every tool the installed plugins provide, with the presets that include it."""
    presets = _presets()
    providers: dict[str, list[Any]] = {}
    for preset in presets.registry.list():
        for tool_id in preset.tool_ids:
            providers.setdefault(tool_id, []).append(preset)
    adapters = sorted(presets.tool_adapters.list(), key=lambda a: (a.mcp_name, a.id))
    rows: list[dict[str, Any]] = []
    for a in adapters:
        ps = providers.get(a.id, [])
        rows.append(
            {
                "mcp_name": a.mcp_name,
                "id": a.id,
                "plugin": a.source,
                "presets": [p.name for p in ps],
                "risk": sorted({p.risk for p in ps}),
                "read_only": bool((a.annotations or {}).get("readOnlyHint")),
                "description": a.description,
                "input_schema": dict(a.input_schema),
            }
        )
    if as_json:
        _emit_json(rows)
        return
    _table(
        None,
        ["tool", "id", "presets", "risk", "description"],
        (
            (
                r["mcp_name"],
                r["id"],
                ", ".join(r["presets"]) or "-",
                ", ".join(r["risk"]),
                r["description"].strip().splitlines()[0],
            )
            for r in rows
        ),
    )


@main.command()
@click.option("--all", "show_all", is_flag=True, help="Include the built-in plugins.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def plugins(show_all: bool, as_json: bool) -> None:
    """List installed plugins: name, version, hooks, and how many presets and tools each adds."""
    from agent_presets.catalog import collect
    from agent_presets.plugins import load_plugins

    plugin_set = load_plugins()
    catalog = collect(plugin_set)
    preset_counts: dict[str, int] = {}
    for name, plugin in catalog.preset_plugin.items():
        if any(p.name == name for p in catalog.presets):
            preset_counts[plugin] = preset_counts.get(plugin, 0) + 1
    adapter_counts: dict[str, int] = {}
    for a in catalog.adapters:
        adapter_counts[a.source or ""] = adapter_counts.get(a.source or "", 0) + 1
    shown = [p for p in plugin_set.plugins if show_all or not p.builtin]
    rows: list[dict[str, Any]] = [
        {
            "name": p.name,
            "distribution": p.distribution,
            "version": p.version,
            "builtin": p.builtin,
            "hooks": list(p.hooks),
            "presets": preset_counts.get(p.name, 0),
            "tools": adapter_counts.get(p.name, 0),
        }
        for p in shown
    ]
    problems = [str(p) for p in plugin_set.problems]
    if as_json:
        _emit_json({"plugins": rows, "problems": problems})
        return
    if rows:
        _table(
            None,
            ["plugin", "distribution", "version", "hooks", "presets", "tools"],
            (
                (
                    r["name"],
                    r["distribution"],
                    r["version"],
                    ", ".join(r["hooks"]),
                    r["presets"],
                    r["tools"],
                )
                for r in rows
            ),
        )
    else:
        hidden = len(plugin_set.plugins) - len(shown)
        click.echo(f"no third-party plugins installed ({hidden} built-in; --all shows them)")
    for problem in problems:
        _warn(problem)


@main.command()
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the schema to this file instead of printing it.",
)
def schema(output: Path | None) -> None:
    """Print the JSON Schema of a preset file (for editors and CI)."""
    from agent_presets.loader import _schema_text

    text = _schema_text()
    if output is None:
        click.echo(text, nl=not text.endswith("\n"))
        return
    from agent_presets.host.store import write_atomic

    write_atomic(output, text.encode("utf-8"))
    click.echo(f"wrote {output}", err=True)


# ------------------------------------------------------------------ resolve / explain


@main.command()
@context_options
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def resolve(as_json: bool, **flags: Any) -> None:
    """Show the active presets for a context, with reasons, MCP tools and prompt fragments."""
    presets = _presets_for_flags(**flags)
    resolution = presets.manager.resolve()
    tool_defs = presets.manager.get_tool_defs()
    if as_json:
        _emit_json(
            {
                "context": presets.manager.get_context(),
                "overrides": presets.manager.get_overrides(),
                **resolution.to_dict(),
                "mcp_tools": [t.name for t in tool_defs],
            }
        )
        return
    ctx = presets.manager.get_context()
    click.echo("context: " + ", ".join(f"{k}={json.dumps(v)}" for k, v in ctx.items()))
    _table(
        None,
        ["active preset", "reason", "risk"],
        ((a.name, a.reason, a.risk) for a in resolution.active_presets),
    )
    click.echo(f"MCP tools ({len(tool_defs)}): " + ", ".join(t.name for t in tool_defs))
    for fragment in resolution.prompt_fragments:
        click.echo(f"\n[{fragment.preset}]\n{fragment.prompt.strip()}")


@main.command()
@click.argument("tool")
@context_options
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def explain(tool: str, as_json: bool, **flags: Any) -> None:
    """Explain TOOL (MCP name or tool id): which preset provides it, whether it is
    active in the given context and why, and what would turn it on.

    Exit status 1 when no installed plugin provides TOOL.
    """
    from agent_presets.explain import explain_tool

    presets = _presets_for_flags(**flags)
    result = explain_tool(presets.manager, tool)
    if as_json:
        _emit_json(result.to_dict())
    elif result.known:
        click.echo(
            f"{result.mcp_name} ({result.tool_id}): "
            + ("ACTIVE" if result.active else "not active")
        )
        for v in result.presets:
            state = "active" if v.active else "inactive"
            click.echo(
                f"  preset {v.preset} [{v.default_state}, risk {v.risk}]: {state}, {v.reason}"
            )
            if v.enable:
                click.echo(f"    to enable: {v.enable}")
        if not result.presets:
            click.echo("  no preset includes it, so it is never active")
    if not result.known:
        if not as_json:
            raise click.ClickException(result.message())
        sys.exit(1)


# ------------------------------------------------------------------ opencode / serve


def _default_state_dir() -> Path:
    env = os.environ.get("PRESETS_STATE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "agent-presets"


@main.command()
@click.option(
    "--write",
    "write_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write an isolated opencode.json into this folder and print OPENCODE_CONFIG.",
)
@click.option("--name", default="space", show_default=True, help="The MCP server's key.")
@click.option(
    "--state-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="State folder the server should use.",
)
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    help="File root the server's file tools are confined to.",
)
def opencode(write_dir: Path | None, name: str, state_dir: Path | None, root: Path | None) -> None:
    """Print the opencode.json snippet that runs this MCP server over stdio.

    With --write DIR, write a complete isolated config to DIR/opencode.json
    and print `OPENCODE_CONFIG=<path>` to export before starting opencode.
    """
    command = [sys.executable, "-m", "agent_presets", "serve"]
    if state_dir is not None:
        command += ["--state-dir", str(state_dir.resolve())]
    if root is not None:
        command += ["--root", str(root.resolve())]
    config = {
        "$schema": "https://opencode.ai/config.json",
        "mcp": {name: {"type": "local", "command": command, "enabled": True}},
    }
    if write_dir is None:
        _emit_json(config)
        return
    from agent_presets.host.store import write_json_atomic

    write_dir.mkdir(parents=True, exist_ok=True)
    path = (write_dir / "opencode.json").resolve()
    write_json_atomic(path, config)
    click.echo(f"OPENCODE_CONFIG={path}")


@main.command()
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio for opencode; http for streamable HTTP.",
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="HTTP bind address (loopback by default).",
)
@click.option(
    "--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="HTTP port."
)
@click.option(
    "--state-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where the headless host keeps its state. [default: $PRESETS_STATE_DIR, "
    "or agent-presets under $XDG_STATE_HOME]",
)
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    help="The folder the file and shell tools are confined to. [default: STATE/files]",
)
@click.option(
    "--allow",
    "allow",
    metavar="NAME",
    multiple=True,
    help="Expose only these presets' tools and these tools (MCP names or ids). Repeatable; "
    "unknown names are an error. [default: no allow-list]",
)
@click.option("--max-calls", type=click.IntRange(min=1), help="Refuse tool calls after this many.")
@click.option(
    "--max-calls-per-tool", type=click.IntRange(min=1), help="Refuse a tool after this many calls."
)
@click.option(
    "--event-log",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Append one JSON line per tool call (tool, preset, ok, error, latency). "
    "[default: STATE/events.jsonl]",
)
@click.option("--no-event-log", is_flag=True, help="Keep no event log.")
@context_options
def serve(
    transport: str,
    host: str,
    port: int,
    state_dir: Path | None,
    root: Path | None,
    allow: tuple[str, ...],
    max_calls: int | None,
    max_calls_per_tool: int | None,
    event_log: Path | None,
    no_event_log: bool,
    surface: str | None,
    activity: str | None,
    canvas_visible: bool | None,
    facts: tuple[str, ...],
    force_on: tuple[str, ...],
    force_off: tuple[str, ...],
) -> None:
    """Serve the active tools over MCP, on the headless host.

    The tool list follows the host's context live: a tool call that switches
    surface or activity changes the list, and every client is told with
    notifications/tools/list_changed. One banner line goes to stderr.
    """
    from agent_presets.host import SURFACES, HeadlessHost
    from agent_presets.host.headless import ACTIVITY_RE
    from agent_presets.policy import ToolPolicy

    # Check every flag before the host's saved state is touched.
    if facts:
        raise click.UsageError(
            "--set is not supported by serve: the headless host owns its "
            "context; use --surface/--activity/--canvas-visible"
        )
    if surface is not None and surface not in SURFACES:
        raise click.BadParameter(f"use one of: {', '.join(SURFACES)}", param_hint="'--surface'")
    if activity is not None and not ACTIVITY_RE.match(activity):
        raise click.BadParameter("use a lowercase name such as drawing", param_hint="'--activity'")
    if event_log is not None and no_event_log:
        raise click.UsageError("--event-log and --no-event-log contradict each other")
    overrides = _overrides(force_on, force_off)
    state = state_dir or _default_state_dir()
    app = HeadlessHost(state, root)
    presets = app.start(_load_plugins(), overrides=overrides)
    for problem in presets.problems:
        _warn(f"skipped: {problem}")
    try:
        allowed = ToolPolicy.allow_list(presets, allow) if allow else None
    except PresetValidationError as exc:
        raise click.BadParameter(exc.message, param_hint="'--allow'") from None
    policy = ToolPolicy(
        allow=allowed,
        max_calls=max_calls,
        max_calls_per_tool=max_calls_per_tool,
        event_log=None if no_event_log else (event_log or app.state_dir / "events.jsonl"),
    )
    if surface is not None:
        app.shell.set_surface(surface)
    if activity is not None:
        app.shell.set_activity(activity)
    if canvas_visible is not None:
        app.shell.set_canvas_visible(canvas_visible)
    from agent_presets.mcpserver.server import serve as run_server

    def banner(where: str) -> None:
        click.echo(
            f"presets serve: {len(presets.plugins.plugins)} plugins, "
            f"{len(presets.registry)} presets, {len(presets.tool_registry)} active tools"
            + (f" ({len(policy.allow.tools)} allowed)" if policy.allow else "")
            + ", "
            f"{where}, state in {app.state_dir}",
            err=True,
        )

    run_server(
        presets,
        transport=cast(Any, transport),
        host=host,
        port=port,
        banner=banner,
        policy=policy,
    )

