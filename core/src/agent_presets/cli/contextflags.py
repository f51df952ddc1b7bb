"""The context flags: one option per declared context field, for ``resolve``, ``explain``,
``budget`` and ``serve``.

The core names no context field, so it has no flag of its own for one. The
plugins declare the fields (``presets_context_fields``; the app plugin the
fields it provides), and each declared field becomes an option of these
commands: a string field ``--name VALUE`` (its declared values shown), a
boolean ``--name/--no-name``. The plugins are loaded as the command line is
read, before it is parsed, so ``--help`` lists the options of the plugins
installed (and of ``--plugins-dir``). ``--set KEY=VALUE`` sets any field,
declared or not; a field whose flag the command has already (a field called
``port`` for ``serve``) is set that way.

An empty value (``--activity=``) clears the field. What a change implies is
the host's to say (``HostDefaults.implied``), and applies here as on the host.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import click

if TYPE_CHECKING:
    from agent_presets.hosting import HostDefaults
    from agent_presets.lib.plugins import PluginSet
    from agent_presets.lib.vocabulary import ContextField

PLUGINS_KEY: Final = "agent_presets.cli.plugins"
"""ctx.meta: the plugins loaded to read the command line, reused to run the command."""
_FLAGS_KEY: Final = "agent_presets.cli.context_flags"
"""ctx.meta: each declared field with the option it gave."""
_PARAM_PREFIX: Final = "context_field__"
"""A flag's parameter name: never one of the command's own (a field may be called ``host``)."""
FLAGS_PARAM: Final = "context_flags"
"""The parameter the command receives the flags' values in, by field (only those given)."""


class ContextCommand(click.Command):
    """A command with one option per declared context field (see the module docstring).

    The options stand before ``--set``. Once parsed, their values leave the
    command's parameters and reach it as one mapping, ``context_flags``:
    field -> value (None to clear), for the flags given only.
    """

    saved_context: bool = False
    """Whether the command resumes a saved context (``serve``): its flags' help says so."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        from agent_presets.lib.plugins import load_plugins

        # None: PRESETS_PLUGINS_DIR, as for every command that loads plugins.
        plugin_set = load_plugins(plugins_dir=plugins_dir_in(args))
        ctx.meta[PLUGINS_KEY] = plugin_set
        taken = self.prepare(ctx, plugin_set)
        ctx.meta[_FLAGS_KEY] = field_options(plugin_set, taken, saved=self.saved_context)
        return super().parse_args(ctx, args)

    def prepare(self, ctx: click.Context, plugin_set: PluginSet) -> list[click.Parameter]:
        """Before the flags are made: the command's parameters, which the flags must not clash with.

        A subclass that adds options of its own (``serve``: the plugins') adds them here.
        """
        return list(self.params)

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        params = super().get_params(ctx)
        added = [option for _, option in ctx.meta.get(_FLAGS_KEY, ())]
        at = next((i for i, p in enumerate(params) if p.name == "facts"), len(params))
        return [*params[:at], *added, *params[at:]]

    def invoke(self, ctx: click.Context) -> Any:
        given: dict[str, Any] = {}
        for field, option in ctx.meta.get(_FLAGS_KEY, ()):
            value = ctx.params.pop(option.name or "", None)
            if value is not None:
                given[field.name] = None if value == "" else value
        ctx.params[FLAGS_PARAM] = given
        return super().invoke(ctx)


def field_options(
    plugin_set: PluginSet, taken: Sequence[click.Parameter], *, saved: bool
) -> list[tuple[ContextField, click.Option]]:
    """Each field ``plugin_set`` declares with its option, but for flags ``taken`` has already."""
    from agent_presets.lib.catalog import context_vocabulary

    vocabulary = context_vocabulary(plugin_set)
    defaults = plugin_set.host_defaults()
    flags = {
        name for param in taken for name in (*param.opts, *getattr(param, "secondary_opts", ()))
    }
    options = [(f, field_option(f, defaults, saved=saved)) for f in vocabulary.fields.values()]
    return [(f, o) for f, o in options if not flags & {*o.opts, *o.secondary_opts}]


def field_option(
    field: ContextField, defaults: HostDefaults | None, *, saved: bool
) -> click.Option:
    """The option that sets ``field``: ``--name VALUE``, or ``--name/--no-name`` for a boolean."""
    flag = "--" + field.name.replace("_", "-")
    name = _PARAM_PREFIX + field.name
    start = None if defaults is None else defaults.context.get(field.name)
    if saved:
        default = "as saved"
    elif field.type == "boolean":
        default = "on" if start else "off"
    else:
        default = "none" if start is None else str(start)
    about = field.description.strip() or f"The context field {field.name}."
    if field.type == "boolean":
        return click.Option(
            [f"{flag}/--no-{flag[2:]}", name],
            default=None,
            help=f"{about} [default: {default}]",
        )
    values = f"[{'|'.join(field.values)}]" if field.values else "TEXT"
    return click.Option(
        [flag, name],
        metavar=values,
        default=None,
        help=f"{about} An empty value clears it. [default: {default}]",
    )


def context_from_flags(
    defaults: HostDefaults | None, flags: Mapping[str, Any], facts: Mapping[str, Any]
) -> dict[str, Any]:
    """The context the flags and ``--set`` facts describe, from the host's starting context.

    What the change implies (``HostDefaults.implied``) is added unless the
    change sets it too.
    """
    context: dict[str, Any] = {} if defaults is None else dict(defaults.context)
    changes = {**flags, **facts}
    context.update(changes if defaults is None else defaults.with_implied(changes))
    return context


def plugins_dir_in(args: Sequence[str]) -> str | None:
    """The ``--plugins-dir`` among ``args`` when it names a folder (click checks it later)."""
    for i, arg in enumerate(args):
        if arg == "--":
            break
        value = None
        if arg == "--plugins-dir" and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith("--plugins-dir="):
            value = arg.partition("=")[2]
        if value is not None:
            return value if Path(value).is_dir() else None
    return None


def loaded_plugins() -> PluginSet | None:
    """The plugins the running command loaded to read its command line, if it did."""
    ctx = click.get_current_context(silent=True)
    return None if ctx is None else ctx.meta.get(PLUGINS_KEY)
