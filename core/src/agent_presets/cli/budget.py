"""``presets budget``: what each preset's tools, and the active set, cost in an agent's context.

The counting is the library's (``agent_presets.lib.budget``); this module picks
the tools (each preset's, and the set ``presets serve`` would list for the
context flags) and prints them. ``resolve`` and ``validate`` reach the same
helpers here, so all three count one way.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from agent_presets.cli.contextflags import ContextCommand
from agent_presets.cli.options import (
    context_options,
    default_state_dir,
    emit_json,
    facts_from,
    installed_presets,
    overrides_from_flags,
    plugins_dir_option,
    presets_for_flags,
    state_dir_option,
    table,
)
from agent_presets.lib.budget import DEFAULT_TOKENIZER, TOKENIZERS
from agent_presets.lib.toolformats import CLIENTS, DEFAULT_CLIENT
from agent_presets.lib.toolwire import LEGACY, PROTOCOLS

if TYPE_CHECKING:
    from agent_presets.lib.boot import Presets
    from agent_presets.lib.budget import Budget, SetCost
    from agent_presets.lib.manager import PresetManager
    from agent_presets.lib.model import ToolDef

F = TypeVar("F", bound=Callable[..., Any])


def tokenizer_option(func: F) -> F:
    """``--tokenizer NAME``, one of the library's ``TOKENIZERS`` (a bad name lists them)."""
    return click.option(
        "--tokenizer",
        type=click.Choice(TOKENIZERS),
        default=DEFAULT_TOKENIZER,
        show_default=True,
        help="Count with this tokenizer: OpenAI's o200k_base (GPT-4o and later) or "
        "cl100k_base (GPT-4). Its BPE file ships in a package; nothing is downloaded.",
    )(func)


def make_budget(tokenizer: str, protocol: str = LEGACY, client: str = DEFAULT_CLIENT) -> Budget:
    from agent_presets.lib.budget import Budget, get_tokenizer

    return Budget(get_tokenizer(tokenizer), protocol, client)


def server_tools(manager: PresetManager, namespace_prefix: str) -> list[ToolDef]:
    """The tools ``presets serve`` lists in every context besides the presets': the agent's
    ``presets_request``."""
    from agent_presets.server.control import Controller

    return [Controller(manager).request_tool(namespace_prefix)]


def active_tools(presets: Presets) -> list[ToolDef]:
    """The tools ``presets serve`` would list in the presets' context, in its order (by name)."""
    tools = presets.tool_registry.list()
    tools += server_tools(presets.manager, presets.tool_registry.namespace_prefix)
    return sorted(tools, key=lambda t: t.name)


def _principals_presets(
    principal: str, state_dir: Path | None, flags: dict[str, Any]
) -> tuple[Presets, frozenset[str] | None]:
    """The installed presets resolved as the running server serves ``principal`` now, and
    the tools its allow-lists let it be served (None: all)."""
    from agent_presets.server.control import NoServerError, control_request

    where = state_dir or default_state_dir()
    try:
        status = control_request(where, {"op": "status", "principal": principal})
    except NoServerError:
        raise click.ClickException(
            f"--principal {principal!r} counts what a running server serves that principal, "
            f"and no server runs for state dir {where}; start one with `presets serve "
            "--state-dir DIR` and give the same --state-dir here, or count a context with "
            "the context flags instead"
        ) from None
    context = dict(status["context"])
    given = {**flags["context_flags"], **facts_from(flags["facts"])}
    overrides = {p["name"]: p["state"] for p in status["presets"] if p["state"] != "auto"}
    overrides.update(overrides_from_flags(flags["force_on"], flags["force_off"]))
    context.update(given)
    presets = installed_presets(context, overrides)
    presets.vocabulary.check_context(context)
    allowed = status.get("allowed")
    return presets, None if allowed is None else frozenset(allowed)


def cost_line(cost: SetCost, budget: Budget, wire: SetCost | None = None) -> str:
    """The one line ``resolve`` and ``budget`` end with; ``wire``: the same tools counted as
    the server sends them."""
    own = [t.name for t in cost.tools if t.preset is None]
    with_own = f", the server's {', '.join(own)} included" if own else ""
    on_wire = f"; {wire.tokens:,} as tools/list entries" if wire is not None else ""
    return (
        f"cost: {cost.tokens:,} tokens ({budget.label}) for the "
        f"{len(cost.tools)} tools tools/list sends{with_own}{on_wire}"
    )


def client_option(func: F) -> F:
    """``--client NAME``: count tools as this client sends them to its model."""
    return click.option(
        "--client",
        type=click.Choice(CLIENTS),
        default=DEFAULT_CLIENT,
        show_default=True,
        help="Count each tool as this client sends it to its model (name, description, "
        "input schema in its model API's format); wire: the whole tools/list entry as "
        "the server sends it (title, output schema and hints included).",
    )(func)


@click.command("budget", cls=ContextCommand)
@plugins_dir_option
@context_options
@click.option(
    "--principal",
    metavar="NAME",
    help="Count what this principal is served now: its context and overrides, read from the "
    "running server of --state-dir (context flags given as well change fields of it).",
)
@state_dir_option("The state folder of the server whose principal to count (with --principal).")
@tokenizer_option
@client_option
@click.option(
    "--protocol",
    type=click.Choice(PROTOCOLS),
    default=LEGACY,
    show_default=True,
    help="Count tools/list as sent to a client of this protocol version "
    "(older versions get 2025-11-25's shape); it orders each entry's keys.",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def budget(
    principal: str | None,
    state_dir: Path | None,
    tokenizer: str,
    client: str,
    protocol: str,
    as_json: bool,
    **flags: Any,
) -> None:
    """Show the tokens each preset's and each tool's definition takes in an agent's context,
    and the total of the tools `presets serve` would list for the context flags.

    A tool costs the tokens of what the client sends its model for it (its
    name, description and input schema, in the client's format; --client) as
    compact JSON; a preset costs the sum of its tools; the active set adds the
    server's own presets_request tool. Figures are what the model reads before
    the first message: set a preset's max_tokens, and check it in CI with
    `presets validate --max-tokens N`.

    \b
    Examples:
      presets budget --set mode=review      # in a context (each declared field has a flag)
      presets budget --client opencode --json
      presets budget --client wire          # the tools/list entries as sent
      presets budget --principal alice      # what alice's agent is served now
    """
    from agent_presets.lib.budget import SetCost

    allowed: frozenset[str] | None = None
    if principal is None:
        presets = presets_for_flags(**flags)
    else:
        presets, allowed = _principals_presets(principal, state_dir, flags)
    counter = make_budget(tokenizer, protocol, client)

    def served(tool: ToolDef) -> bool:
        return allowed is None or tool.name in allowed

    active = {t.name for t in presets.manager.get_tool_defs()}
    active_presets = set(presets.manager.resolve().active_names)
    rows: list[dict[str, Any]] = []
    for preset in presets.registry.list():
        cost = counter.preset(preset, presets.tool_adapters)
        if allowed is not None:
            cost = SetCost(tuple(t for t in cost.tools if t.name in allowed))
            if not cost.tools:
                continue  # the principal may be served none of its tools
        rows.append(
            {
                "name": preset.name,
                "plugin": presets.preset_plugin.get(preset.name),
                "source": preset.source,
                "active": preset.name in active_presets,
                "tokens": cost.tokens,
                "max_tokens": preset.max_tokens,
                "over": preset.max_tokens is not None and cost.tokens > preset.max_tokens,
                "tools": [
                    {**t.to_dict(), "active": t.name in active and preset.name in active_presets}
                    for t in cost.tools
                ],
            }
        )
    own = counter.tools(
        t
        for t in server_tools(presets.manager, presets.tool_registry.namespace_prefix)
        if served(t)
    )
    listed = [t for t in active_tools(presets) if served(t)]
    cost = counter.tools(listed)
    wire = make_budget(tokenizer, protocol, "wire").tools(listed)
    data: dict[str, Any] = {
        "tokenizer": counter.tokenizer.to_dict(),
        "client": client,
        "protocol": protocol,
        "principal": principal,
        "context": presets.manager.get_context(),
        "presets": rows,
        "server_tools": [t.to_dict() for t in own.tools],
        "active": {
            "tools": [t.to_dict() for t in cost.tools],
            "count": len(cost.tools),
            "tokens": cost.tokens,
            "wire_tokens": wire.tokens,
        },
    }
    if as_json:
        emit_json(data)
        return
    what = (
        f"each tool's tools/list entry, compact JSON, protocol {protocol}"
        if client == "wire"
        else f"each tool as {client} sends it to its model (name, description, input schema), "
        "compact JSON"
    )
    click.echo(f"tokenizer: {counter.tokenizer.label}; {what}")
    table(
        None,
        ["preset", "tools", "tokens", "max_tokens", "active"],
        (
            (
                r["name"],
                len(r["tools"]),
                f"{r['tokens']:,}",
                "-"
                if r["max_tokens"] is None
                else f"{r['max_tokens']:,}" + (" OVER" if r["over"] else ""),
                "yes" if r["active"] else "",
            )
            for r in rows
        ),
    )
    click.echo()
    tool_rows = [(r["name"], t) for r in rows for t in r["tools"]]
    tool_rows += [("(server)", {**t, "active": True}) for t in data["server_tools"]]
    table(
        None,
        ["tool", "preset", "tokens", "description", "input", "output", "active"],
        (
            (
                t["name"],
                preset,
                f"{t['tokens']:,}",
                t["fields"].get("description", 0),
                t["fields"].get("inputSchema", 0),
                t["fields"].get("outputSchema", "-"),
                "yes" if t["active"] else "",
            )
            for preset, t in tool_rows
        ),
    )
    click.echo()
    whose = f" (principal {principal})" if principal else ""
    from agent_presets.lib.budget import describe_context

    click.echo(
        f"active set{whose}, {describe_context(data['context'])}: "
        + cost_line(cost, counter, None if client == "wire" else wire).removeprefix("cost: ")
    )
