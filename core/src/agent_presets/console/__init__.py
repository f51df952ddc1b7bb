"""The browser console of a running ``presets serve`` (``docs/console.md``)."""
