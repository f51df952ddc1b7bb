"""``presets serve`` and ``presets opencode``: run the MCP server, and point opencode at it.

Only ``serve`` imports the MCP server (``agent_presets.mcpserver``), inside the
command: importing ``mcp`` costs about a second that the other commands skip.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, cast

import click

from agent_presets.cli.options import (
    context_options,
    default_state_dir,
    emit_json,
    installed_plugins,
    overrides_from_flags,
    plugins_dir,
    plugins_dir_option,
    state_dir_option,
    warn,
)
from agent_presets.model import (
    DANGEROUS_RISKS,
    DEFAULT_NAMESPACE,
    PresetValidationError,
    effective_risk,
)
from agent_presets.plugins import PluginSet

ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
OPENCODE_KEY = "presets"
"""The opencode server key: its tools read ``presets_space_...``, not ``space_space_...``."""
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
    help="The MCP server's key. opencode names each tool KEY_TOOL "
    "(presets_space_app_write_file), so the default does not double the tools' space_ prefix.",
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
    all installed presets' tools, under the names opencode gives them.
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
    rules = {f"{name}_{tool}": "ask" for tool in risky_tools(installed_plugins())}
    if rules:
        config["permission"] = rules
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
    from agent_presets.atomicfile import write_json_atomic

    write_dir.mkdir(parents=True, exist_ok=True)
    path = (write_dir / "opencode.json").resolve()
    write_json_atomic(path, config, mode=0o600 if private else None)
    click.echo(f"OPENCODE_CONFIG={path}")


def risky_tools(plugin_set: PluginSet) -> list[str]:
    """The MCP names of the tools some installed preset makes risky, sorted.

    Computed from the presets and the adapters (``effective_risk``), without
    starting a server: a tool is risky if any preset that lists it gives it
    a risky effective risk, as the manager stamps the highest one.
    """
    from agent_presets.adapters import mcp_name_for
    from agent_presets.catalog import collect

    catalog = collect(plugin_set)
    adapters = {adapter.id: adapter for adapter in catalog.adapters}
    names: set[str] = set()
    for preset in catalog.presets:
        for tool_id in preset.tool_ids:
            adapter = adapters.get(tool_id)
            if adapter is None:
                continue
            if effective_risk(preset.risk, adapter.annotations) in DANGEROUS_RISKS:
                names.add(mcp_name_for(adapter, DEFAULT_NAMESPACE))
    return sorted(names)


@click.command()
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
@state_dir_option("Where the headless host keeps its state.")
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
    "--shell-env",
    "shell_env",
    metavar="NAME",
    multiple=True,
    help="Pass this variable of the server's environment into the shell sandbox. Repeatable. "
    "[default: only PATH, HOME=the root, LANG]",
)
@click.option(
    "--shell-network", is_flag=True, help="Let shell commands reach the network (off by default)."
)
@click.option(
    "--unsafe-shell",
    is_flag=True,
    help="Where bubblewrap does not work, run shell commands unconfined instead of refusing "
    "to turn the shell preset on, and load code units unconfined (in a process of their "
    "own) instead of refusing to. Not needed (and not used) where the sandbox works.",
)
@click.option(
    "--namespace",
    metavar="PREFIX",
    default=DEFAULT_NAMESPACE,
    show_default=True,
    help="The prefix of every tool's MCP name: the host's namespace, applied to the names "
    "the plugins give.",
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
@context_options
@plugins_dir_option
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
    shell_env: tuple[str, ...],
    shell_network: bool,
    unsafe_shell: bool,
    namespace: str,
    auth: str | None,
    insecure: bool,
    confirm: str,
    confirm_timeout: float,
    confirm_via: str,
    console_address: str | None,
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
    from agent_presets.adapters import MCP_NAME_RE
    from agent_presets.host import SURFACES, HeadlessHost
    from agent_presets.host.headless import ACTIVITY_RE
    from agent_presets.policy import ToolPolicy
    from agent_presets.tools import ToolRegistry

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
    for name in shell_env:
        if not ENV_NAME_RE.match(name):
            raise click.BadParameter(
                f"{name!r} is not an environment variable name (letters, digits, '_')",
                param_hint="'--shell-env'",
            )
    if namespace and not MCP_NAME_RE.match(namespace):
        raise click.BadParameter(
            "use lowercase letters, digits and '_', starting with a letter, like myapp_",
            param_hint="'--namespace'",
        )
    console_at: tuple[str, int] | None = None
    if console_address is not None:
        from agent_presets.console import is_loopback, parse_address

        try:
            console_at = parse_address(console_address)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="'--console'") from None
        if not is_loopback(console_at[0]):
            if not insecure:
                raise click.BadParameter(
                    f"{console_at[0]} is not a loopback address: anyone who reaches it could "
                    "turn presets on; use 127.0.0.1, or pass --insecure",
                    param_hint="'--console'",
                )
            warn(f"the console listens on {console_at[0]}: anyone with its URL may turn presets on")
    if event_log is not None and no_event_log:
        raise click.UsageError("--event-log and --no-event-log contradict each other")
    if auth is not None and transport != "http":
        raise click.UsageError("--auth tokens needs --transport http")
    from agent_presets.mcpserver.auth import check_exposure

    if transport == "http":
        check_exposure(host, auth=auth, insecure=insecure)
    overrides = overrides_from_flags(force_on, force_off)
    state = state_dir or default_state_dir()
    folder = plugins_dir()
    # The file tools must not reach code that the next start imports.
    app = HeadlessHost(state, root, plugin_dirs=[folder] if folder is not None else [])
    # Plain data the shell plugin reads when it attaches its runner (no plugin import here).
    app.shell_options = {
        "shell_env": list(shell_env),
        "shell_network": shell_network,
        "unsafe_shell": unsafe_shell,
    }
    plugin_set = installed_plugins()
    loaded = len(plugin_set.problems)  # already reported
    presets = app.start(plugin_set, overrides=overrides, tool_registry=ToolRegistry(namespace))
    # A runtime hook that raised: said now, not when its first tool call fails. (The
    # catalog's problems, presets.problems, bootstrap has already logged once.)
    for problem in plugin_set.problems[loaded:]:
        warn(f"skipped: {problem}")
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
    # The flags set fields of the headless host's vocabulary; the plugins declare
    # the activities, so an undeclared one is refused here (and nothing is saved).
    changes: list[tuple[str, Callable[[], object]]] = []
    if surface is not None:
        changes.append(("--surface", partial(app.shell.set_surface, surface)))
    if activity is not None:
        changes.append(("--activity", partial(app.shell.set_activity, activity)))
    if canvas_visible is not None:
        changes.append(("--canvas-visible", partial(app.shell.set_canvas_visible, canvas_visible)))
    for flag, change in changes:
        try:
            change()
        except PresetValidationError as exc:
            raise click.BadParameter(exc.message, param_hint=f"'{flag}'") from None
    from agent_presets.control import SOCKET_NAME
    from agent_presets.mcpserver import serve as run_server

    tokens = None
    if auth == "tokens":  # the token module is imported only where tokens are used
        from agent_presets.tokens import TokenTable

        tokens = TokenTable(app.state_dir)
    if tokens is not None and not tokens.names():
        warn(
            f"no tokens in {tokens.path} yet: every request is refused until one is made "
            "with `presets tokens create NAME`"
        )

    def banner(where: str) -> None:
        click.echo(
            f"presets serve: {len(presets.plugins.plugins)} plugins, "
            f"{len(presets.registry)} presets, {len(presets.tool_registry)} active tools"
            + (f" ({len(policy.allow.tools)} allowed)" if policy.allow else "")
            + ", "
            f"{where}"
            + (f", {len(tokens.names())} tokens" if tokens is not None else "")
            + f", state in {app.state_dir}",
            err=True,
        )

    run_server(
        presets,
        transport=cast(Any, transport),
        host=host,
        port=port,
        banner=banner,
        policy=policy,
        control_socket=app.state_dir / SOCKET_NAME,
        tokens=tokens,
        insecure=insecure,
        confirm=cast(Any, confirm),
        confirm_timeout=confirm_timeout,
        confirm_via=cast(Any, confirm_via),
        console=None if console_at is None else _console_options(console_at, app),
        state_dir=app.state_dir,
    )


def _console_options(address: tuple[str, int], app: Any) -> Any:
    from agent_presets.console.app import ConsoleOptions

    return ConsoleOptions(
        host=address[0], port=address[1], app=app, announce=lambda line: click.echo(line, err=True)
    )
