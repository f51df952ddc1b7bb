"""Options a plugin adds to ``presets serve`` (hook ``presets_serve_options``), typed.

A plugin returns ``ServeOptions(build, options)``: click options, and what
their parsed values build (usually the plugin's own frozen dataclass), each
value passed to ``build`` as a keyword named after its option's parameter.
``presets serve`` adds the options to its command line (its ``--help`` lists
them), builds each plugin's object once it has parsed them, and hands the
objects to the headless host; the plugin reads its own back, typed, with
``host.serve_options(TheType)`` in ``presets_headless_runtime``. No plugin's
option is known to the core by name, and no value travels as untyped data.

As tox's ``tox_add_option``: the plugin that needs a flag owns it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from agent_presets.lib.plugins import PluginInfo, PluginProblem, PluginSet

if TYPE_CHECKING:
    import click

T = TypeVar("T")

HOOK = "presets_serve_options"


@dataclass(frozen=True)
class ServeOptions(Generic[T]):
    """One plugin's ``presets serve`` options and the typed value they parse into."""

    build: Callable[..., T]
    """Called once with every option's value as a keyword (``shell_env=(...)``)."""
    options: Sequence[click.Option]


def collect_serve_options(
    plugin_set: PluginSet, taken: Iterable[click.Parameter]
) -> list[tuple[PluginInfo, ServeOptions[Any]]]:
    """Each plugin's ``ServeOptions``, checked against ``taken`` (the command's own) and each other.

    A hook that raises, returns something else, or adds a flag or parameter
    name another already has is a problem in ``plugin_set.problems`` naming
    both owners; that plugin's options are left out and the rest are added.
    """
    import click

    owners: dict[str, str] = {}
    for param in taken:
        for name in (param.name, *param.opts, *getattr(param, "secondary_opts", ())):
            if name:
                owners[name] = "the command itself"
    collected: list[tuple[PluginInfo, ServeOptions[Any]]] = []
    for info, result in plugin_set.call_each(HOOK):
        if result is None:
            continue
        problem = _shape_problem(result, click)
        if problem is None:
            problem = _clash(info, result, owners)
        if problem is not None:
            plugin_set.problems.append(
                PluginProblem(
                    info.name,
                    f"plugin {info.label}: hook {HOOK} {problem}; its serve options were skipped",
                    info.distribution,
                    hook=HOOK,
                )
            )
            continue
        for option in result.options:
            for name in (option.name, *option.opts, *option.secondary_opts):
                if name:
                    owners[name] = f"plugin {info.name!r}"
        collected.append((info, result))
    return collected


def _shape_problem(result: object, click: Any) -> str | None:
    if not isinstance(result, ServeOptions):
        return f"returned {type(result).__name__}; return agent_presets.host.ServeOptions"
    if not callable(result.build):
        return "gave a build that is not callable"
    for option in result.options:
        if not isinstance(option, click.Option):
            return f"gave {type(option).__name__} among its options; give click.Option objects"
        if not option.expose_value or not option.name:
            return f"gave {option.opts[0]} without a value the plugin could receive"
    return None


def _clash(info: PluginInfo, result: ServeOptions[Any], owners: dict[str, str]) -> str | None:
    for option in result.options:
        for name in (option.name, *option.opts, *option.secondary_opts):
            if name and name in owners:
                what = f"option {name}" if name.startswith("-") else f"parameter name {name!r}"
                return (
                    f"adds {what} to presets serve, which {owners[name]} already has; "
                    "rename one of them"
                )
    return None
