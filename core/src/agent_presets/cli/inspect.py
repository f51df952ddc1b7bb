"""The read-only commands: list, show, tools, plugins, schema, resolve, explain."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from agent_presets.cli.budget import tokenizer_option
from agent_presets.cli.contextflags import ContextCommand
from agent_presets.cli.options import (
    check_runtime_hooks,
    context_options,
    emit_json,
    installed_presets,
    load_installed,
    plugins_dir_option,
    presets_for_flags,
    table,
    warn,
)
from agent_presets.lib.safetext import shown

if TYPE_CHECKING:
    from agent_presets.lib.boot import Presets
    from agent_presets.lib.model import Preset


def definition(presets: Presets, preset: Preset) -> dict[str, Any]:
    """A preset as plain data, its prompt's ``{{tool.id}}`` placeholders filled with MCP names."""
    from agent_presets.lib.prompts import fill_placeholders

    data = preset.to_dict()
    if "system_prompt" in data:
        data["system_prompt"] = fill_placeholders(
            data["system_prompt"], presets.tool_adapters.mcp_name_of
        )
    return data


@click.command("list")
@plugins_dir_option
@click.option("--group", metavar="G", help="Only presets of this group.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def list_presets(group: str | None, as_json: bool) -> None:
    """List every preset the installed plugins define, in registration order."""
    presets = installed_presets()
    items = presets.registry.list_by_group(group) if group else presets.registry.list()
    if as_json:
        emit_json(
            [
                {
                    **definition(presets, p),
                    "plugin": presets.preset_plugin.get(p.name),
                    "source": p.source,
                }
                for p in items
            ]
        )
        return
    from agent_presets.lib.explain import describe_patterns

    table(
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


@click.command()
@plugins_dir_option
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def show(name: str, as_json: bool) -> None:
    """Show one preset: its definition, its tools and where it comes from."""
    from agent_presets.lib.model import UnknownPresetError

    presets = installed_presets()
    preset = presets.registry.get(name)
    if preset is None:
        raise UnknownPresetError(presets.registry.unknown_message(name))
    tools = []
    for tool_id in preset.tool_ids:
        adapter = presets.tool_adapters.get(tool_id)
        tools.append(
            {
                "id": tool_id,
                "mcp_name": presets.tool_adapters.mcp_name(adapter) if adapter else None,
                "description": presets.tool_adapters.description(adapter) if adapter else None,
            }
        )
    data = {
        **definition(presets, preset),
        "plugin": presets.preset_plugin.get(name),
        "source": preset.source,
        "tools": tools,
    }
    if as_json:
        emit_json(data)
        return
    from agent_presets.lib.explain import describe_patterns

    click.echo(f"{preset.name}  (plugin {data['plugin']}, {preset.source})")
    click.echo(f"  group:         {preset.group or '-'}")
    click.echo(f"  default_state: {preset.default_state}")
    click.echo(f"  risk:          {preset.risk}{'  (dangerous)' if preset.dangerous else ''}")
    click.echo(f"  contexts:      {describe_patterns(preset)}")
    click.echo("  tools:")
    for t in tools:
        click.echo(f"    {t['mcp_name'] or '?'}  ({t['id']})")
    if data.get("system_prompt"):
        click.echo("  system_prompt:")
        for line in data["system_prompt"].strip().splitlines():
            click.echo(f"    {line}")


@click.command()
@plugins_dir_option
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def tools(as_json: bool) -> None:
    """List every tool the installed plugins provide, with the presets that include it."""
    from agent_presets.lib.explain import presets_providing

    presets = installed_presets()
    name_of = presets.tool_adapters.mcp_name
    adapters = sorted(presets.tool_adapters.list(), key=lambda a: (name_of(a), a.id))
    rows: list[dict[str, Any]] = []
    for a in adapters:
        ps = presets_providing(presets.registry, (a.id,))
        rows.append(
            {
                "mcp_name": name_of(a),
                "id": a.id,
                "plugin": presets.adapter_plugin.get(a.id, a.source),
                "presets": [p.name for p in ps],
                "risk": sorted({p.risk for p in ps}),
                # As the riskiest preset that lists it serves it: an upstream's hint
                # never makes a tool of a writing preset read-only.
                "read_only": bool(a.served_hints(_riskiest(ps)).get("readOnlyHint")),
                "description": presets.tool_adapters.description(a),
                "input_schema": dict(a.input_schema),
            }
        )
    if as_json:
        emit_json(rows)
        return
    table(
        None,
        ["tool", "id", "presets", "risk", "description"],
        (
            (
                r["mcp_name"],
                r["id"],
                ", ".join(r["presets"]) or "-",
                ", ".join(r["risk"]),
                # An upstream's description is its words: shown, never steering the terminal.
                shown((r["description"].strip().splitlines() or [""])[0]),
            )
            for r in rows
        ),
    )


def _riskiest(presets: list[Preset]) -> str:
    """The highest risk of ``presets`` (``normal`` for none)."""
    from agent_presets.lib.model import RISKS

    return max((p.risk for p in presets), key=RISKS.index, default="normal")


@click.command()
@click.option("--all", "show_all", is_flag=True, help="Include the built-in plugins.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@plugins_dir_option
def plugins(show_all: bool, as_json: bool) -> None:
    """List installed plugins: name, version, hooks, and how many presets and tools each adds.

    A plugin that failed to load, or whose hook raised, is listed as failed
    with the reason on stderr; so is a plugin that lost a tool id or an MCP
    name to another plugin (status "clash": which tool, which plugin keeps it,
    which presets were left out). Then the exit status is 1.
    """
    from agent_presets.lib.catalog import collect
    from agent_presets.lib.plugins import BUILTIN_DISTRIBUTIONS, PluginProblem

    plugin_set = load_installed(strict=False)
    check_runtime_hooks(plugin_set)
    catalog = collect(plugin_set)
    problems: list[PluginProblem] = [
        *plugin_set.problems,
        *(p for p in catalog.problems if isinstance(p, PluginProblem)),
    ]
    preset_counts = Counter(
        catalog.preset_plugin[p.name] for p in catalog.presets if p.name in catalog.preset_plugin
    )
    # Counted by the plugin whose hook returned the adapter, not by adapter.source:
    # that is the plugin's own label (graph and scene give their package name).
    adapter_counts = Counter(catalog.adapter_plugin[a.id] for a in catalog.adapters)
    hook_failed = {p.plugin for p in problems if p.hook}

    def status(name: str) -> str:
        if name in hook_failed:
            return "hook failed"
        return "clash" if name in catalog.clashes else "ok"

    rows: list[dict[str, Any]] = [
        {
            "name": p.name,
            "distribution": p.distribution,
            "version": p.version,
            "path": p.path,
            "builtin": p.builtin,
            "hooks": list(p.hooks),
            "presets": preset_counts.get(p.name, 0),
            "tools": adapter_counts.get(p.name, 0),
            "status": status(p.name),
        }
        for p in plugin_set.plugins
        if show_all or not p.builtin or status(p.name) != "ok"
    ]
    # A problem without a hook is a plugin that did not load (or a second
    # claimant of a loaded plugin's name): a row of its own.
    rows += [
        {
            "name": problem.plugin,
            "distribution": problem.distribution,
            "version": None,
            "path": problem.source,
            "builtin": problem.distribution in BUILTIN_DISTRIBUTIONS,
            "hooks": [],
            "presets": 0,
            "tools": 0,
            "status": "not loaded",
        }
        for problem in problems
        if not problem.hook
    ]
    messages = [str(p) for p in problems]
    messages += [str(p) for clashes in catalog.clashes.values() for p in clashes]
    if as_json:
        emit_json({"plugins": rows, "problems": messages})
    elif rows:
        table(
            None,
            ["plugin", "from", "version", "hooks", "presets", "tools", "status"],
            (
                (
                    r["name"],
                    r["distribution"] or r["path"],
                    r["version"],
                    ", ".join(r["hooks"]),
                    r["presets"],
                    r["tools"],
                    r["status"],
                )
                for r in rows
            ),
        )
    else:
        hidden = len(plugin_set.plugins)
        click.echo(f"no third-party plugins installed ({hidden} built-in; --all shows them)")
    for message in messages:
        warn(message)
    if messages:
        sys.exit(1)


@click.command()
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the schema to this file instead of printing it.",
)
def schema(output: Path | None) -> None:
    """Print the JSON Schema of a preset file (for editors and CI)."""
    from agent_presets.lib.schema import schema_text

    text = schema_text()
    if output is None:
        click.echo(text, nl=not text.endswith("\n"))
        return
    from agent_presets.lib.atomicfile import write_atomic

    write_atomic(output, text.encode("utf-8"))
    click.echo(f"wrote {output}", err=True)


# ------------------------------------------------------------------ resolve / explain


@click.command(cls=ContextCommand)
@plugins_dir_option
@context_options
@tokenizer_option
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def resolve(as_json: bool, tokenizer: str, **flags: Any) -> None:
    """Show the active presets for a context, with reasons, MCP tools and prompt fragments,
    and what the tools `presets serve` would list cost in tokens (`presets budget` has
    the detail)."""
    from agent_presets.cli.budget import active_tools, cost_line, make_budget

    presets = presets_for_flags(**flags)
    resolution = presets.manager.resolve()
    tool_defs = presets.manager.get_tool_defs()
    budget = make_budget(tokenizer)
    cost = budget.tools(active_tools(presets))
    if as_json:
        emit_json(
            {
                "context": presets.manager.get_context(),
                "overrides": presets.manager.get_overrides(),
                **resolution.to_dict(),
                "mcp_tools": [t.name for t in tool_defs],
                "cost": {
                    "tokens": cost.tokens,
                    "tools": len(cost.tools),
                    "tokenizer": budget.tokenizer.name,
                    "client": budget.client,
                },
            }
        )
        return
    ctx = presets.manager.get_context()
    click.echo("context: " + ", ".join(f"{k}={json.dumps(v)}" for k, v in ctx.items()))
    table(
        None,
        ["active preset", "reason", "risk"],
        ((a.name, a.reason, a.risk) for a in resolution.active_presets),
    )
    click.echo(f"MCP tools ({len(tool_defs)}): " + ", ".join(t.name for t in tool_defs))
    click.echo(cost_line(cost, budget))
    for fragment in resolution.prompt_fragments:
        click.echo(f"\n[{fragment.preset}]\n{fragment.prompt.strip()}")


@click.command(cls=ContextCommand)
@plugins_dir_option
@click.argument("tool")
@context_options
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def explain(tool: str, as_json: bool, **flags: Any) -> None:
    """Explain TOOL (MCP name or tool id): which preset provides it, whether it is
    active in the given context and why, and what would turn it on.

    Exit status 1 when no installed plugin provides TOOL.
    """
    from agent_presets.lib.explain import explain_tool

    presets = presets_for_flags(**flags)
    result = explain_tool(presets.manager, tool)
    if as_json:
        emit_json(result.to_dict())
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
