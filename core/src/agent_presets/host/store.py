"""Crash-safe JSON files for the host's state (the code lives in
``agent_presets.lib.atomicfile``)."""

from agent_presets.lib.atomicfile import read_json as read_json
from agent_presets.lib.atomicfile import write_atomic as write_atomic
from agent_presets.lib.atomicfile import write_json_atomic as write_json_atomic
