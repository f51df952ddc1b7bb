"""agent-presets built-in plugin: general."""
