"""agent-presets built-in plugin: scene (objects, physics, terrain, lights, sky, camera)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_presets import PluginHooks, hookimpl
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


# presets.yaml, .adapters, and the value these presets add to the host's surface field.
_hooks = PluginHooks(
    __name__,
    context_fields=[{"name": "surface", "values": ["scene"]}],
)
presets_preset_files = _hooks.presets_preset_files
presets_context_fields = _hooks.presets_context_fields
presets_tool_adapters = _hooks.presets_tool_adapters


@hookimpl
def presets_headless_runtime(host: Any) -> None:
    host.add_table_runtime("scene", _scene, migrate=_migrate)


def _scene(table: Any) -> Scene:
    from agent_presets_scene.model import Scene

    return Scene.from_table(table)


def _migrate(saved: Any, table: Any) -> None:
    from agent_presets_scene.model import Scene

    Scene.migrate(saved, table)
