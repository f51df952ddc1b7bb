"""agent-presets built-in plugin: scene."""
