"""``presets serve`` before the SDK has loaded: the stdio wire and the answers it can give.

``wire``: the stdio wire without the SDK (claiming fd 0 and 1, reading and
writing lines); ``lists``: what the server lists, built without the SDK, for
the full server and the front alike; ``front``: the start front, which
answers the first requests while the SDK loads and then hands the wire over.

``PRESETS_START_FRONT=0`` turns the front off (the server then answers
nothing until the SDK has loaded, as before it existed): a way to compare
the two, and a way out should a client ever be answered differently.
"""

from __future__ import annotations

import os
from typing import Final

ENV: Final = "PRESETS_START_FRONT"


def start_front_enabled() -> bool:
    """Whether ``presets serve`` over stdio starts the front (unless ``PRESETS_START_FRONT=0``)."""
    return os.environ.get(ENV, "1").strip() != "0"
