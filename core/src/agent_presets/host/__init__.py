"""The headless host: the embedded default app that ``presets serve`` runs.

It holds the shell state a real host reports (surface, activity, canvas
visibility, theme, current world), a sandboxed file root, and slots that
plugins fill with reference runtimes through ``presets_headless_runtime``.
Shell changes feed ``PresetManager.set_context``; every change is persisted
atomically in the state directory, so a restart resumes where it stopped.
"""

from __future__ import annotations

from agent_presets.host.context_fields import SURFACES
from agent_presets.host.headless import (
    THEMES,
    HeadlessHost,
    Shell,
    WorldRuntimeFactory,
)

__all__ = ["SURFACES", "THEMES", "HeadlessHost", "Shell", "WorldRuntimeFactory"]
