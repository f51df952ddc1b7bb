"""The core's version, at the bottom of the package: any module may import it.

``agent_presets.__version__`` re-exports it; modules inside the package take
it from here, so none of them imports the package root (which imports the
public names' modules for type checkers: an import back would be a cycle).
"""

from __future__ import annotations

__version__ = "0.1.0"
