"""agent-presets built-in plugin: units."""
