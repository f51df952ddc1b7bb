"""agent-presets built-in plugin: drawing."""
