"""Every public name, of ``agent_presets`` and ``agent_presets.embed``, has docstrings."""

from __future__ import annotations

import inspect

# adapters.py and the server.mcp package are being reworked on their own
# branches; their owners add these, and this set only shrinks.
KNOWN_UNDOCUMENTED = {
    "ToolAdapterRegistry.register",
    "ToolAdapterRegistry.unregister",
    "ToolAdapterRegistry.get",
    "ToolAdapterRegistry.list",
    "PresetServer.status",
    "PresetServer.create_initialization_options",
}


def undocumented() -> set[str]:
    import agent_presets.embed

    missing: set[str] = set()
    for name in {*agent_presets.__all__, *agent_presets.embed.__all__}:
        obj = getattr(
            agent_presets.embed
            if hasattr(agent_presets.embed, name) and name in agent_presets.embed.__all__
            else agent_presets,
            name,
        )
        if inspect.isfunction(obj) and not obj.__doc__:
            missing.add(name)
        if not inspect.isclass(obj):
            continue
        if not obj.__doc__:
            missing.add(name)
        for attr, member in vars(obj).items():
            if attr.startswith("_"):
                continue
            if isinstance(member, staticmethod | classmethod):
                member = member.__func__
            if isinstance(member, property):
                member = member.fget
            if inspect.isfunction(member) and not member.__doc__:
                missing.add(f"{name}.{attr}")
    return missing


def test_every_public_method_has_a_docstring() -> None:
    assert undocumented() <= KNOWN_UNDOCUMENTED
