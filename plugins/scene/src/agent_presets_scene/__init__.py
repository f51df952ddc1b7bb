"""agent-presets built-in plugin: scene (objects, physics, terrain, lights, sky, camera)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_presets import PluginHooks
from agent_presets_scene.errors import SceneError

if TYPE_CHECKING:
    from agent_presets_scene.model import Scene

__all__ = ["Scene", "SceneError"]

# The value these presets add to the host's surface field; one scene per world, loaded when used.
_hooks = PluginHooks(
    __name__,
    context_fields=[{"name": "surface", "values": ["scene"]}],
    runtimes={"scene": ".model:Scene"},
)
presets_preset_files = _hooks.presets_preset_files
presets_context_fields = _hooks.presets_context_fields
presets_tool_adapters = _hooks.presets_tool_adapters
presets_headless_runtime = _hooks.presets_headless_runtime
__getattr__ = _hooks.module_getattr
