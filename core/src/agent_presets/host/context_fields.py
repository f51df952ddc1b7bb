"""The context fields the headless host provides, declared as any host declares them.

The core names no context field; the headless host reports ``surface``,
``activity``, ``canvas_visible`` and ``world_id`` and says so through the
``presets_context_fields`` hook, as a plugin object its ``start()`` passes
to ``bootstrap``. It is the one declaration of these fields: plugins add
values to them (a drawing plugin its ``drawing`` activity), and the
activities come only from them, so the host declares the field with no
values of its own. ``surface`` and ``canvas_visible`` are required (the
seed's rule): the manager refuses a context without them.
"""

from __future__ import annotations

from typing import Final

from agent_presets.hookspecs import hookimpl
from agent_presets.vocabulary import ContextField

SURFACES: Final = ("scene", "canvas")

HOST_FIELDS: Final = (
    ContextField(
        "surface",
        "string",
        SURFACES,
        "The surface the user is on: the 3D scene or the 2D canvas.",
        required=True,
    ),
    ContextField(
        "activity",
        "string",
        (),
        "What the user is doing on the surface (drawing, graph, ...); the plugins that "
        "use an activity declare it. None when there is none.",
    ),
    ContextField("canvas_visible", "boolean", None, "Whether the canvas is shown.", required=True),
    ContextField("world_id", "string", None, "The current world's name."),
)


class HostContextFields:
    """The headless host as a plugin: it only declares the context it provides."""

    __name__ = "headless-host"

    @hookimpl
    def presets_context_fields(self) -> list[ContextField]:
        return list(HOST_FIELDS)
