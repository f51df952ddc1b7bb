"""agent-presets built-in plugin: scene (objects, physics, terrain, lights, sky, camera)."""

from __future__ import annotations

from collections.abc import Sequence
from importlib.resources import files
from importlib.resources.abc import Traversable
from typing import Any

from agent_presets import ToolAdapter, hookimpl
from agent_presets_scene.errors import SceneError
from agent_presets_scene.model import Scene

__all__ = ["Scene", "SceneError"]


@hookimpl
def presets_preset_files() -> Sequence[Traversable]:
    return [files(__name__) / "presets.yaml"]


@hookimpl
def presets_context_fields() -> Sequence[dict[str, Any]]:
    # The parts of the Space vocabulary these presets rely on, so they work in any host.
    return [
        {
            "name": "surface",
            "type": "string",
            "values": ["scene"],
            "description": "The surface the user is on; the 3D scene is one.",
        },
    ]


@hookimpl
def presets_tool_adapters() -> Sequence[ToolAdapter]:
    # Imported here: the adapters (and their schema checks) are built when asked for.
    from agent_presets_scene.adapters import tool_adapters

    return tool_adapters()


@hookimpl
def presets_headless_runtime(host: Any) -> None:
    host.add_table_runtime("scene", Scene.from_table, migrate=Scene.migrate)
