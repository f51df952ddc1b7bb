"""What the commands share: context flags, loading the installed presets, output helpers."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from agent_presets.lib.boot import Presets
    from agent_presets.lib.plugins import PluginSet

F = TypeVar("F", bound=Callable[..., Any])


class NeedsConfirmation(click.ClickException):
    """A risky change asked for off a terminal without ``--yes``: a usage error."""

    exit_code = 2


def emit_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, ensure_ascii=False))


def default_state_dir() -> Path:
    """``$PRESETS_STATE_DIR``, else ``agent-presets`` under ``$XDG_STATE_HOME`` (or its default).

    ``serve`` keeps its state there; the live-control commands find its server there.
    """
    env = os.environ.get("PRESETS_STATE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "agent-presets"


STATE_DIR_DEFAULT = "[default: $PRESETS_STATE_DIR, or agent-presets under $XDG_STATE_HOME]"


def state_dir_option(what: str) -> Callable[[F], F]:
    """``--state-dir``, whose help says ``what`` the folder is to this command, and its default."""
    return click.option(
        "--state-dir",
        type=click.Path(file_okay=False, path_type=Path),
        help=f"{what} {STATE_DIR_DEFAULT}",
    )


def store_option(what: str) -> Callable[[F], F]:
    """``--store URL``: the store a server keeps its state in (docs/store.md)."""
    return click.option(
        "--store",
        "store_url",
        metavar="URL",
        envvar="PRESETS_STORE",
        help=f"{what} embedded (the default: the state folder) or redis://HOST:PORT/DB, "
        "shared by replicas (needs agent-presets[redis]; docs/store.md). [env: PRESETS_STORE]",
    )


def open_store_or_fail(url: str | None, state_dir: Path | None) -> Any:
    """The store ``--store`` names, checked to answer now; a clear usage error if not."""
    from agent_presets.server.store import StoreSettingsError, StoreUnavailableError, open_store

    try:
        return open_store(url, state_dir, check=True)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="'--store'") from None
    except (StoreUnavailableError, StoreSettingsError) as exc:
        raise click.ClickException(str(exc)) from None


def warn(message: str) -> None:
    click.echo(f"warning: {message}", err=True)


PLUGINS_DIR_KEY = "agent_presets.plugins_dir"


def plugins_dir_option(func: F) -> F:
    """--plugins-dir DIR (or PRESETS_PLUGINS_DIR), for every command that loads plugins.

    The value is kept on the click context rather than passed to the command,
    so the commands' signatures stay theirs and ``load_installed`` finds it.
    """

    def remember(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
        ctx.meta[PLUGINS_DIR_KEY] = value
        return value

    return click.option(
        "--plugins-dir",
        metavar="DIR",
        type=click.Path(exists=True, file_okay=False, path_type=Path),
        envvar="PRESETS_PLUGINS_DIR",
        expose_value=False,
        callback=remember,
        help="Also load the plugins in this folder: each *.py module with hook "
        "implementations, and the preset *.yaml files. [env: PRESETS_PLUGINS_DIR]",
    )(func)


def plugins_dir() -> Path | None:
    """The --plugins-dir of the running command, if it was given (or set in the environment)."""
    ctx = click.get_current_context(silent=True)
    return None if ctx is None else ctx.meta.get(PLUGINS_DIR_KEY)


def load_installed(*, strict: bool | None = None) -> PluginSet:
    """The installed plugins and those of the plugins folder, problems kept, not printed.

    ``strict=False`` for a command whose job is to report the problems (``validate``,
    ``plugins``, ``doctor``): under ``PRESETS_STRICT=1`` too, each is reported in the
    command's own format, and it fails.
    """
    from agent_presets.cli.contextflags import loaded_plugins
    from agent_presets.lib.plugins import load_plugins

    loaded = loaded_plugins()  # as the command line was read (a context command)
    return loaded if loaded is not None else load_plugins(plugins_dir=plugins_dir(), strict=strict)


def installed_plugins() -> PluginSet:
    """The installed plugins; each one that failed to load is a warning on stderr."""
    plugin_set = load_installed()
    for problem in plugin_set.problems:
        warn(str(problem))
    return plugin_set


def check_runtime_hooks(plugin_set: PluginSet) -> None:
    """Call each plugin's ``presets_headless_runtime`` on a scratch host; failures join problems.

    What ``serve`` would meet at start, found by ``validate`` and ``plugins``
    too: a plugin whose runtime hook raises is named there, not when its
    first tool call fails.
    """
    if not any("presets_headless_runtime" in p.hooks for p in plugin_set.plugins):
        return
    import tempfile

    from agent_presets.host import ServedHost

    with (
        tempfile.TemporaryDirectory(prefix="presets-check-") as scratch,
        ServedHost(scratch) as host,
    ):
        plugin_set.call_each("presets_headless_runtime", host=host)


def parse_value(text: str) -> Any:
    import yaml

    from agent_presets.lib.loader import PresetYamlLoader

    try:
        value = yaml.load(text, Loader=PresetYamlLoader)
    except yaml.YAMLError:
        return text
    if value is None and text.strip().lower() not in ("null", "~", ""):
        return text
    return value if isinstance(value, str | int | float | bool) or value is None else text


def context_options(func: F) -> F:
    """--set/--on/--off, shared by resolve, explain, budget and serve.

    The context flags (one per declared field) stand before them: their
    command is a ``ContextCommand`` (``agent_presets.cli.contextflags``).
    """
    options = [
        click.option(
            "--set",
            "facts",
            metavar="KEY=VALUE",
            multiple=True,
            help="Set a context field, declared or not, e.g. --set region=north. Repeatable.",
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


def facts_from(facts: Sequence[str]) -> dict[str, Any]:
    """The fields ``--set KEY=VALUE`` gives, each value read as YAML reads a scalar."""
    found: dict[str, Any] = {}
    for fact in facts:
        key, sep, value = fact.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{fact!r} is not KEY=VALUE", param_hint="'--set'")
        found[key.strip()] = parse_value(value)
    return found


def overrides_from_flags(force_on: Sequence[str], force_off: Sequence[str]) -> dict[str, str]:
    both = set(force_on) & set(force_off)
    if both:
        raise click.UsageError(f"preset {sorted(both)[0]!r} is given to both --on and --off")
    return {**{n: "on" for n in force_on}, **{n: "off" for n in force_off}}


def installed_presets(
    context: dict[str, Any] | None = None,
    overrides: dict[str, str] | None = None,
    app: Any = None,
    plugins: PluginSet | None = None,
) -> Presets:
    from agent_presets.lib.boot import bootstrap

    plugin_set = installed_plugins() if plugins is None else plugins
    return bootstrap(app, plugins=plugin_set, context=context, overrides=overrides)


def presets_for_flags(
    context_flags: Mapping[str, Any],
    facts: Sequence[str],
    force_on: Sequence[str],
    force_off: Sequence[str],
) -> Presets:
    """The installed presets resolved for the context flags and ``--set`` facts.

    The context starts as the host plugin's defaults say (``presets_host_defaults``).
    """
    from agent_presets.cli.contextflags import context_from_flags

    plugin_set = installed_plugins()
    context = context_from_flags(plugin_set.host_defaults(), context_flags, facts_from(facts))
    presets = installed_presets(
        context, overrides_from_flags(force_on, force_off), plugins=plugin_set
    )
    presets.vocabulary.check_context(context)  # a value no one declared: exit 1, one line
    return presets


def table(title: str | None, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """A readable table on a terminal; one unwrapped line per row when piped (for grep)."""
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console(soft_wrap=False)
    piped = not console.is_terminal
    if piped:
        console = Console(width=10_000, soft_wrap=False, no_color=True)
    rich_table = Table(
        title=title,
        header_style="bold",
        title_justify="left",
        box=None if piped else box.HEAVY_HEAD,
    )
    for i, column in enumerate(columns):
        rich_table.add_column(column, no_wrap=piped or i == 0, overflow="fold")
    for row in rows:
        # Text, never markup: a cell may hold a plugin's or an agent's words, and
        # "[link=...]" in them must show as typed.
        rich_table.add_row(*(Text("" if c is None else str(c)) for c in row))
    if not piped:
        console.print(rich_table)
        return
    with console.capture() as captured:
        console.print(rich_table)
    # Columns are padded to the widest cell: strip the padding of the last column.
    lines = [line.rstrip() for line in captured.get().splitlines()]
    click.echo("\n".join(lines).strip("\n"))
