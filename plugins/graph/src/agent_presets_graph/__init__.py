"""agent-presets built-in plugin: graph."""
