"""ToolRegistry: owners, stable order, and one notification per change or batch."""

from __future__ import annotations

import pytest

from agent_presets import OwnershipError, PresetValidationError, ToolRegistry
from agent_presets.lib.tools import ToolRegistryChange


@pytest.fixture
def registry():
    registry = ToolRegistry("space_")
    heard: list[ToolRegistryChange] = []
    registry.add_on_change(heard.append)
    registry.heard = heard  # type: ignore[attr-defined]
    return registry


def test_register_get_and_sorted_names(registry, make_host_tool):
    for name in ("space_zeta", "space_alpha", "space_mid"):
        registry.register(make_host_tool(name))
    assert registry.names() == ["space_alpha", "space_mid", "space_zeta"]
    assert [t.name for t in registry.list()] == registry.names()
    assert registry.get("space_mid").name == "space_mid"
    assert registry.get("space_missing") is None
    assert len(registry) == 3 and "space_zeta" in registry


def test_owner_of_reports_the_managed_owner_or_none_for_the_host(registry, make_host_tool):
    registry.register(make_host_tool("space_ping"))
    registry.register(make_host_tool("space_sync", owner="agent-presets"))
    assert registry.owner_of("space_ping") is None
    assert registry.owner_of("space_sync") == "agent-presets"
    with pytest.raises(KeyError):
        registry.owner_of("space_missing")


def test_an_existing_name_raises_unless_replace(registry, make_host_tool):
    registry.register(make_host_tool("space_ping"))
    with pytest.raises(OwnershipError, match="space_ping"):
        registry.register(make_host_tool("space_ping", owner="intruder"))
    assert registry.owner_of("space_ping") is None
    registry.register(make_host_tool("space_ping", owner="new"), replace=True)
    assert registry.owner_of("space_ping") == "new"
    assert registry.heard[-1] == ToolRegistryChange(replaced=("space_ping",))


def test_names_must_carry_the_namespace_prefix(registry, make_host_tool):
    with pytest.raises(PresetValidationError, match="must start with 'space_'"):
        registry.register(make_host_tool("ping"))
    assert registry.heard == []


def test_each_change_outside_a_batch_notifies_once(registry, make_host_tool):
    registry.register(make_host_tool("space_a"))
    registry.register(make_host_tool("space_b"))
    assert registry.unregister("space_a") is True
    assert registry.unregister("space_a") is False
    assert registry.heard == [
        ToolRegistryChange(added=("space_a",)),
        ToolRegistryChange(added=("space_b",)),
        ToolRegistryChange(removed=("space_a",)),
    ]


def test_a_batch_notifies_once_when_the_outermost_batch_ends(registry, make_host_tool):
    with registry.batch():
        registry.register(make_host_tool("space_a"))
        with registry.batch():
            registry.register(make_host_tool("space_b"))
            registry.unregister("space_a")
        assert registry.heard == []
    assert registry.heard == [
        ToolRegistryChange(added=("space_a", "space_b"), removed=("space_a",))
    ]


def test_an_empty_batch_notifies_nobody(registry):
    with registry.batch():
        registry.unregister("space_nothing")
    assert registry.heard == []


def test_a_batch_interrupted_by_an_error_still_reports_what_changed(registry, make_host_tool):
    registry.register(make_host_tool("space_a"))
    registry.heard.clear()
    with pytest.raises(OwnershipError), registry.batch():
        registry.register(make_host_tool("space_b"))
        registry.register(make_host_tool("space_a"))
    assert registry.heard == [ToolRegistryChange(added=("space_b",))]


def test_removed_listeners_hear_nothing(registry, make_host_tool):
    registry.remove_on_change(registry.heard.append)
    registry.register(make_host_tool("space_a"))
    assert registry.heard == []


def test_an_empty_change_is_falsy():
    assert not ToolRegistryChange()
    assert ToolRegistryChange(removed=("space_a",))
