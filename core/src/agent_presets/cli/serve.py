"""``presets serve`` and ``presets opencode``: run the MCP server, and point opencode at it.

``serve`` reads its flags and hands them to the served process
(``agent_presets.server.process``), which puts it together and runs it; only
that imports the MCP server, inside the command: importing ``mcp`` costs about
a second that the other commands skip.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import click

from agent_presets.cli.contextflags import PLUGINS_KEY, ContextCommand
from agent_presets.cli.options import (
    context_options,
    default_state_dir,
    emit_json,
    facts_from,
    installed_plugins,
    load_installed,
    overrides_from_flags,
    plugins_dir,
    plugins_dir_option,
    state_dir_option,
    store_option,
    warn,
)
from agent_presets.lib.model import DANGEROUS_RISKS, effective_risk
from agent_presets.lib.plugins import PluginSet

_ADDED_KEY = "agent_presets.serve.added"
"""ctx.meta: each plugin's ``ServeOptions``, added to the command's own options."""
BUILT_KEY = "agent_presets.serve.options"
"""ctx.meta: what each plugin's serve options built (``agent_presets.server.host.options``)."""
OPENCODE_KEY = "presets"
"""The opencode server key: ``presets_`` before each tool's name, not the host's namespace twice."""
OPENCODE_KEY_RE = re.compile(r"^[A-Za-z0-9_-]+$")
"""Characters opencode keeps in a tool name; it would rewrite others, and the rules miss."""


@click.command()
@click.option(
    "--write",
    "write_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write an isolated opencode.json into this folder and print OPENCODE_CONFIG.",
)
@click.option(
    "--name",
    default=OPENCODE_KEY,
    show_default=True,
    help="The MCP server's key. opencode names each tool KEY_TOOL (presets_TOOL), so the "
    "default does not repeat the host's namespace.",
)
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
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio: opencode starts the server; http: opencode connects to a running one (--url).",
)
@click.option("--url", help="The remote server's MCP endpoint, e.g. https://host:8765/mcp.")
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="A file holding the bearer token (from `presets tokens create`) to send to --url.",
)
@plugins_dir_option
def opencode(
    write_dir: Path | None,
    name: str,
    state_dir: Path | None,
    root: Path | None,
    transport: str,
    url: str | None,
    token_file: Path | None,
) -> None:
    """Print the opencode.json snippet that runs this MCP server over stdio.

    With --write DIR, write a complete isolated config to DIR/opencode.json
    and print `OPENCODE_CONFIG=<path>` to export before starting opencode. Its
    server keeps its state in DIR/state unless --state-dir says otherwise, so
    two configs never share a state directory (one server may use each).

    With --transport http --url URL [--token-file FILE], the config points
    opencode at a running remote server instead, sending the token as
    `Authorization: Bearer` (read from FILE now; the written file is 0600).

    The config also has `permission` rules that make opencode ask before every
    tool whose effective risk is filesystem-write, destructive or shell, among
    all installed presets' tools, under the names opencode gives them, and
    before `presets_call_risky`, through which such a tool is reached when it
    is not in the list (stable delivery, docs/clients.md).
    """
    if not OPENCODE_KEY_RE.match(name):
        raise click.BadParameter(
            f"{name!r}: use letters, digits, '_' and '-' only; opencode rewrites other "
            "characters in tool names, and the permission rules would not match",
            param_hint="'--name'",
        )
    if transport == "http":
        _opencode_remote(write_dir, name, url, token_file, state_dir, root)
        return
    if url is not None or token_file is not None:
        raise click.UsageError("--url and --token-file need --transport http")
    command = [sys.executable, "-m", "agent_presets", "serve"]
    if state_dir is None and write_dir is not None:
        # Each written config gets its own state, so two opencode windows never share one.
        state_dir = write_dir / "state"
    if state_dir is not None:
        command += ["--state-dir", str(state_dir.resolve())]
    if root is not None:
        command += ["--root", str(root.resolve())]
    folder = plugins_dir()
    if folder is not None:  # the server loads the same one-off plugins as this command
        command += ["--plugins-dir", str(folder.resolve())]
    config: dict[str, Any] = {
        "$schema": "https://opencode.ai/config.json",
        "mcp": {name: {"type": "local", "command": command, "enabled": True}},
    }
    # opencode names an MCP tool `<server key>_<tool>`; "ask" makes it ask the user first.
    plugin_set = installed_plugins()
    namespace = plugin_set.namespace()
    rules = {f"{name}_{tool}": "ask" for tool in risky_tools(plugin_set, namespace)}
    if rules:
        # A risky tool reached indirectly (stable delivery) goes through this one tool:
        # the same question as for a listed one (agent_presets.server.delivery).
        rules[f"{name}_{namespace}presets_call_risky"] = "ask"
        config["permission"] = dict(sorted(rules.items()))
    _emit_config(config, write_dir)


def _opencode_remote(
    write_dir: Path | None,
    name: str,
    url: str | None,
    token_file: Path | None,
    state_dir: Path | None,
    root: Path | None,
) -> None:
    if url is None:
        raise click.UsageError("--transport http needs --url, the server's MCP endpoint")
    if not re.match(r"^https?://[^/\s]+", url):
        raise click.BadParameter("use an http:// or https:// URL", param_hint="'--url'")
    if state_dir is not None or root is not None:
        raise click.UsageError("--state-dir and --root belong to the remote server's own flags")
    entry: dict[str, Any] = {"type": "remote", "url": url, "enabled": True}
    if token_file is not None:
        token = token_file.read_text(encoding="utf-8").strip()
        if not token or any(c.isspace() for c in token):
            raise click.BadParameter(
                f"{token_file} does not hold one token (the line `presets tokens create` prints)",
                param_hint="'--token-file'",
            )
        entry["headers"] = {"Authorization": f"Bearer {token}"}
    config = {"$schema": "https://opencode.ai/config.json", "mcp": {name: entry}}
    _emit_config(config, write_dir, private=token_file is not None)  # private: it holds the token


def _emit_config(config: dict[str, Any], write_dir: Path | None, *, private: bool = False) -> None:
    """Print ``config``, or write it as ``write_dir/opencode.json`` and print its path.

    A ``private`` file is only its owner's from its creation (0600), not after.
    """
    if write_dir is None:
        emit_json(config)
        return
    from agent_presets.lib.atomicfile import write_json_atomic

    write_dir.mkdir(parents=True, exist_ok=True)
    path = (write_dir / "opencode.json").resolve()
    write_json_atomic(path, config, mode=0o600 if private else None)
    click.echo(f"OPENCODE_CONFIG={path}")


def risky_tools(plugin_set: PluginSet, namespace: str | None = None) -> list[str]:
    """The MCP names of the tools some installed preset makes risky, sorted.

    Computed from the presets and the adapters (``effective_risk``), without
    starting a server: a tool is risky if any preset that lists it gives it
    a risky effective risk, as the manager stamps the highest one.
    """
    from agent_presets.lib.adapters import mcp_name_for
    from agent_presets.lib.catalog import collect

    namespace = plugin_set.namespace() if namespace is None else namespace
    catalog = collect(plugin_set, namespace_prefix=namespace)
    adapters = {adapter.id: adapter for adapter in catalog.adapters}
    names: set[str] = set()
    for preset in catalog.presets:
        for tool_id in preset.tool_ids:
            adapter = adapters.get(tool_id)
            if adapter is None:
                continue
            hints = adapter.served_hints(preset.risk)
            if effective_risk(preset.risk, hints) in DANGEROUS_RISKS:
                names.add(mcp_name_for(adapter, namespace))
    return sorted(names)


class ServeCommand(ContextCommand):
    """``serve``, with the options plugins add (hook ``presets_serve_options``).

    The plugins are loaded when the command line is read, before it is parsed
    (``--plugins-dir`` is found in the arguments for that), so ``--help``
    lists their options, and the context flags of the fields they declare
    (``ContextCommand``). Their options come before ``--namespace``. Once
    parsed, each plugin's values leave the command's own parameters and build
    that plugin's typed object, which ``serve`` hands to the host.
    """

    resumes_collector = True
    """Its start-up (plugins, host, SDK) keeps the collector paused until it serves."""
    saved_context = True

    def prepare(self, ctx: click.Context, plugin_set: PluginSet) -> list[click.Parameter]:
        from agent_presets.server.host.options import collect_serve_options

        ctx.meta[_ADDED_KEY] = collect_serve_options(plugin_set, self.params)
        added = [o for _, options in ctx.meta[_ADDED_KEY] for o in options.options]
        return [*self.params, *added]

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        params = super().get_params(ctx)
        added = [o for _, options in ctx.meta.get(_ADDED_KEY, ()) for o in options.options]
        at = next((i for i, p in enumerate(params) if p.name == "namespace"), len(params))
        return [*params[:at], *added, *params[at:]]

    def invoke(self, ctx: click.Context) -> Any:
        built = []
        for info, serve_options in ctx.meta.get(_ADDED_KEY, ()):
            values = {o.name: ctx.params.pop(o.name) for o in serve_options.options if o.name}
            try:
                built.append(serve_options.build(**values))
            except (TypeError, ValueError) as exc:
                raise click.UsageError(f"plugin {info.name!r}: its serve options: {exc}") from None
        ctx.meta[BUILT_KEY] = built
        return super().invoke(ctx)


@click.command(cls=ServeCommand)
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
@state_dir_option("Where the host keeps its state.")
@store_option("What the server keeps (principals, budgets, tokens, requests, the event log):")
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
@click.option(
    "--namespace",
    metavar="PREFIX",
    help="The prefix of every tool's MCP name, applied to the names the plugins give. "
    "[default: the host's namespace, as its app plugin gives it; none without one]",
)
@click.option(
    "--auth",
    type=click.Choice(["tokens"]),
    help="HTTP only: accept only bearer tokens made with `presets tokens create` for this "
    "state folder; each token's profile narrows its tools and budgets.",
)
@click.option(
    "--console",
    "console_address",
    metavar="[HOST:]PORT",
    help="Also serve the browser console here (0 picks a free port); its URL, with a "
    "secret token, goes to stderr. See docs/console.md.",
)
@click.option(
    "--insecure",
    is_flag=True,
    help="Allow serving HTTP without --auth, or the --console, on a non-loopback address "
    "(a trusted network only: anyone who reaches it may call tools or turn presets on).",
)
@click.option(
    "--confirm",
    type=click.Choice(["none", "risky", "destructive"]),
    default="none",
    show_default=True,
    help="Ask the user before a tool of this effective risk runs: risky = filesystem-write, "
    "destructive or shell; destructive = destructive or shell. The call waits for "
    "`presets approve ID` or the console (see --confirm-via).",
)
@click.option(
    "--confirm-via",
    type=click.Choice(["operator", "client"]),
    default="operator",
    show_default=True,
    help="Who may answer --confirm: operator = only you, with `presets approve ID` or the "
    "console; client = also the MCP client, through elicitation, when it supports it. "
    "Choose client only for a client you trust to ask you: an agent's own client that "
    "answers accept approves the agent's call.",
)
@click.option(
    "--confirm-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=50.0,
    show_default=True,
    metavar="SECONDS",
    help="How long a call waits for confirmation before it is refused.",
)
@click.option(
    "--max-sessions",
    type=click.IntRange(min=1),
    metavar="N",
    help="HTTP only: sessions open at once; past it, a new client's initialize ends an idle "
    "session (of the client holding the most) instead of being refused. [default: 1000]",
)
@click.option(
    "--replica",
    metavar="NAME",
    help="HTTP only: this replica's name behind a balancer; every legacy session id starts "
    "with NAME. so the balancer can send a session back here (docs/replicas.md).",
)
@click.option(
    "--upstreams-at-start",
    is_flag=True,
    help="Start every upstream MCP server when the server starts, not on first need "
    "(docs/upstreams.md).",
)
@click.option(
    "--tool-budget",
    type=click.IntRange(min=1),
    metavar="TOKENS",
    help="Keep each client's tools/list at most this many tokens (o200k_base): the server's "
    "own tools, then whole presets (pinned first, then the more specific context, then "
    "registration order); the rest are reached through presets_search and presets_call. "
    "See docs/budget.md. [default: no budget]",
)
@click.option(
    "--discovery",
    type=click.Choice(["auto", "list", "search"]),
    default="auto",
    show_default=True,
    help="Who gets presets_search and presets_call: list = nobody; search = every client; "
    "auto = clients known or seen not to re-list their tools after a change (and every "
    "client under --tool-budget).",
)
@click.option(
    "--delivery",
    type=click.Choice(["auto", "stable", "live"]),
    default="auto",
    show_default=True,
    help="How clients are served their tools. live: the list follows the context, with "
    "tools/list_changed. stable: a client's own calls never change its list (a change from "
    "outside, the host or an operator, still does); the call's result names the tools that "
    "became active, run through presets_call, and the provider's prompt cache holds. auto: "
    "stable for 2026-07-28 clients and for opencode, Codex and Claude Code, live for other "
    "clients. A token may force its own (tokens create --delivery). See docs/clients.md.",
)
@context_options
@plugins_dir_option
def serve(
    state_dir: Path | None,
    context_flags: dict[str, Any],
    facts: tuple[str, ...],
    force_on: tuple[str, ...],
    force_off: tuple[str, ...],
    **flags: Any,
) -> None:
    """Serve the active tools over MCP, on the host the installed plugins make.

    The tools follow the host's context. A live client's list changes with it
    and the client is told: a 2025-11-25 (or older) client with
    notifications/tools/list_changed on its session, a 2026-07-28 client on a
    subscriptions/listen stream it keeps open. A stable client's list changes
    only when the context is changed from outside (the host, `presets context
    set`, the console), and its own calls' results say what became active
    (--delivery; by default 2026-07-28 clients, opencode, Codex and Claude Code
    are stable). One banner line goes to stderr.
    """
    from agent_presets.server import process

    ctx = click.get_current_context()
    settings = process.ServeSettings(
        state_dir=state_dir or default_state_dir(),
        plugins_dir=plugins_dir(),
        # The context flags and --set, as one change of the host's context at start.
        context={**context_flags, **(set_fields := facts_from(facts))},
        overrides=overrides_from_flags(force_on, force_off),
        serve_options=tuple(ctx.meta.get(BUILT_KEY, ())),
        **flags,
    )
    plugin_set = ctx.meta.get(PLUGINS_KEY) or load_installed()
    try:
        process.serve(settings, plugin_set, say=lambda line: click.echo(line, err=True), warn=warn)
    except process.SettingError as exc:
        if exc.flag is None:
            raise click.UsageError(str(exc)) from None
        # A field given with --set has no flag of its own: blame --set.
        field = exc.flag.removeprefix("--").replace("-", "_")
        flag = "--set" if field in set_fields and field not in context_flags else exc.flag
        raise click.BadParameter(str(exc), param_hint=f"'{flag}'") from None
