"""Names a package exports but loads on first use: one ``__getattr__`` for every such package.

``agent_presets``, ``agent_presets.embed`` and ``agent_presets.server`` each
map a public name to the module that defines it, so importing the package
imports none of them (``mcp``, above all, costs about a second).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_exports(
    package: str, base: str, exports: Mapping[str, str], namespace: dict[str, Any]
) -> Callable[[str], Any]:
    """The module ``__getattr__`` (PEP 562) of ``package``: ``name`` from ``base.exports[name]``.

    The value is kept in ``namespace`` (the package's globals), so each name
    is looked up once.
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f"{base}.{module}"), name)
        namespace[name] = value
        return value

    return __getattr__
