"""What the scene tools' schemas need from the scene, without loading it.

The tools are declared when the server starts; the scene model (camera,
terrain, physics) loads with the first call that uses it.
"""

from __future__ import annotations

from typing import Final

BODY_KINDS: Final = ("dynamic", "static", "kinematic")
LIGHT_KINDS: Final = ("point", "directional", "spot")
SKYBOXES: Final = ("none", "clear-day", "sunset", "night", "overcast", "starfield")
MIN_SAMPLES: Final = 2
MAX_SAMPLES: Final = 257
