"""The command line's start-up with the cyclic garbage collector paused.

Starting ``presets serve`` imports the ``mcp`` SDK (hundreds of pydantic
models), the plugins and their presets: about 95,000 objects that live as
long as the process. With the collector on, that start-up runs some 200
collections that find almost nothing (under a thousand unreachable objects)
and cost about 80 ms, more than a tenth of the time to the first
``tools/list``. So the executable (``presets``, ``python -m agent_presets``)
pauses the collector before it imports anything (``pause``), and the command
resumes it once start-up is over (``resume``): ``serve`` right before it
serves, every other command as soon as it is chosen. Resuming first freezes
what start-up made (``gc.freeze``): those objects leave the collector's
view, so no later full collection walks them again (each walk of them takes
50 to 80 ms), and the few cycles start-up left behind stay, a few hundred KB.

Only a pause made here is resumed here: code that imports the command line
(a test, an embedder) keeps its own collector as it was.
"""

from __future__ import annotations

import gc

__all__ = ["pause", "paused", "resume"]

_paused = False


def pause() -> None:
    """Pause the cyclic collector for the start-up (a no-op if it is off already)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def paused() -> bool:
    """Whether ``pause`` paused the collector and nothing has resumed it yet."""
    return _paused


def resume() -> None:
    """Start-up is over: freeze what it made and turn the collector back on (once)."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()
