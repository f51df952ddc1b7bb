"""The one error the scene model raises."""

from __future__ import annotations


class SceneError(ValueError):
    """A refused scene operation; the message says what was wrong and what to do."""
