"""agent-presets built-in plugin: scene (objects, physics, terrain, lights, sky, camera)."""

from __future__ import annotations

from collections.abc import Sequence
from importlib.resources import files
from importlib.resources.abc import Traversable
from typing import TYPE_CHECKING, Any

from agent_presets import ToolAdapter, hookimpl
from agent_presets_scene.errors import SceneError

if TYPE_CHECKING:
    from agent_presets_scene.model import Scene

__all__ = ["Scene", "SceneError"]


def __getattr__(name: str) -> Any:
    # The scene model loads when first used (a call, or this name), not with the plugin.
    if name == "Scene":
        from agent_presets_scene.model import Scene

        return Scene
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@hookimpl
def presets_preset_files() -> Sequence[Traversable]:
    return [files(__name__) / "presets.yaml"]


@hookimpl
def presets_context_fields() -> Sequence[dict[str, Any]]:
    # The value these presets add to the host's surface field.
    return [{"name": "surface", "values": ["scene"]}]


@hookimpl
def presets_tool_adapters() -> Sequence[ToolAdapter]:
    # Imported here: the adapters (and their schema checks) are built when asked for.
    from agent_presets_scene.adapters import tool_adapters

    return tool_adapters()


@hookimpl
def presets_headless_runtime(host: Any) -> None:
    host.add_table_runtime("scene", _scene, migrate=_migrate)


def _scene(table: Any) -> Scene:
    from agent_presets_scene.model import Scene

    return Scene.from_table(table)


def _migrate(saved: Any, table: Any) -> None:
    from agent_presets_scene.model import Scene

    Scene.migrate(saved, table)
