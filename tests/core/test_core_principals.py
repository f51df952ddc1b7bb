"""Principals over the headless host: each one's own context and overrides, the server's below.

In process (no MCP): ``Principals`` over the embedded store, as a server
builds it, and the controller that steers it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lanes import examples

from agent_presets.lib.model import PresetError
from agent_presets.lib.principal import LOCAL, acting_as, current_principal
from agent_presets.server.control import Controller
from agent_presets.server.principals import Audience, Principals
from agent_presets.server.store.embedded import EmbeddedStore
from agent_presets_general import SpaceHost

READ_FILES = "general-file-read-tools"
THEME = "general-theme-tools"


class Served:
    def __init__(self, host: SpaceHost) -> None:
        assert host.presets is not None
        self.host = host
        self.manager = host.presets.manager
        self.clock = [0.0]
        self.store = EmbeddedStore()
        self.principals = Principals(self.manager, self.store, clock=lambda: self.clock[0])
        self.heard: list[Audience] = []
        self.principals.add_on_change(self.heard.append)
        self.controller = Controller(self.manager, principals=self.principals)
        host.attach_principals(self.principals)

    def tool_ids(self, principal: str) -> set[str]:
        return set(self.principals.resolution(principal).tool_ids)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    host = SpaceHost(tmp_path / "state")
    host.start()
    try:
        yield Served(host)
    finally:
        host.close()


def test_a_principal_follows_the_server_until_it_changes_something_of_its_own(
    served: Served,
) -> None:
    assert served.principals.follows_server("alice")
    served.controller.set_context({"surface": "canvas"}, by="cli")  # the host's
    assert served.principals.context("alice")["surface"] == "canvas"
    assert served.store.principal_names() == []  # following costs nothing kept

    served.controller.set_context({"surface": "scene"}, by="cli", principal="alice")
    served.controller.set_context({"activity": "drawing", "surface": "canvas"}, by="cli")
    assert served.principals.context("alice")["surface"] == "scene"  # its own now
    assert served.principals.context("bob")["activity"] == "drawing"
    assert served.manager.get_context()["surface"] == "canvas"
    assert served.store.principal_names() == ["alice"]


def test_a_principals_own_override_wins_over_the_servers_and_auto_returns_to_it(
    served: Served,
) -> None:
    served.controller.set_override(READ_FILES, "on", by="cli")
    assert READ_FILES in served.principals.resolution("alice").active_names
    served.controller.set_override(READ_FILES, "off", by="cli", principal="alice")
    assert READ_FILES not in served.principals.resolution("alice").active_names
    assert READ_FILES in served.principals.resolution("bob").active_names
    assert served.heard[-1] == Audience(only=frozenset({"alice"}))
    served.controller.set_override(READ_FILES, "auto", by="cli", principal="alice")
    assert READ_FILES in served.principals.resolution("alice").active_names
    assert served.principals.follows_server("alice")  # nothing of its own is left


def test_an_agents_shell_switch_changes_only_its_callers_context(served: Served) -> None:
    before = served.manager.get_context()
    with acting_as("alice"):
        state = served.host.shell.set_surface("canvas")
    assert state["surface"] == "canvas"
    assert served.principals.context("alice")["surface"] == "canvas"
    assert served.manager.get_context() == before
    assert served.principals.context("bob") == before
    assert current_principal() == LOCAL
    assert served.host.shell.surface == before["surface"]  # local is the host's own


def test_a_refused_change_changes_nothing(served: Served) -> None:
    with pytest.raises(PresetError, match="activity"):
        served.controller.set_context({"activity": "no-such-activity"}, by="cli", principal="al")
    with pytest.raises(PresetError, match="not a token name"):
        served.controller.set_override(THEME, "off", by="cli", principal="not a name")
    with pytest.raises(PresetError):
        served.controller.set_override("no-such-preset", "off", by="cli", principal="al")
    assert served.store.principal_names() == []
    assert served.heard == []


def test_principals_in_one_context_share_one_resolution_and_idle_ones_are_dropped(
    served: Served,
) -> None:
    for i in range(20):
        served.principals.set_context(f"p{i}", {"world_id": f"w{i}", "surface": "canvas"})
    resolutions = {id(served.principals.resolution(f"p{i}")) for i in range(20)}
    defs = {id(served.principals.tool_defs(f"p{i}")) for i in range(20)}
    assert len(resolutions) == len(defs) == 1
    assert served.principals.in_memory() == 20
    served.clock[0] += served.principals.idle_seconds + 1
    served.principals.resolution("p0")
    assert served.principals.in_memory() == 1
    assert served.principals.context("p7")["world_id"] == "w7"  # back from the store


def test_an_approved_request_applies_to_the_principal_that_asked(served: Served) -> None:
    with acting_as("alice"):
        asked = served.controller.ask(READ_FILES, "on", "read the notes")
    assert asked["status"] == "pending"
    served.controller.approve(asked["request"], by="cli")
    assert READ_FILES in served.principals.resolution("alice").active_names
    assert READ_FILES not in served.principals.resolution("bob").active_names
    assert READ_FILES not in served.manager.resolve().active_names


@settings(max_examples=examples(30), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    steps=st.lists(
        st.tuples(
            st.sampled_from(["alice", "bob", None]),
            st.sampled_from([READ_FILES, THEME]),
            st.sampled_from(["on", "off", "auto"]),
        ),
        max_size=12,
    )
)
def test_what_a_principal_is_served_is_the_servers_overrides_with_its_own_over_them(
    served: Served, steps: list[tuple[str | None, str, str]]
) -> None:
    server: dict[str, str] = dict(served.manager.get_overrides())
    own: dict[str, dict[str, str]] = {"alice": {}, "bob": {}}
    for principal, preset, state in steps:
        served.controller.set_override(preset, state, by="cli", principal=principal)
        table = server if principal is None else own[principal]
        if state == "auto":
            table.pop(preset, None)
        else:
            table[preset] = state
    for principal in ("alice", "bob"):
        expected: dict[str, Any] = {**server, **own[principal]}
        assert served.principals.overrides(principal) == expected
    for preset in list(server):  # leave the server as the next example found it
        served.controller.set_override(preset, "auto", by="cli")
        del server[preset]
    for principal in ("alice", "bob"):
        for preset in list(own[principal]):
            served.controller.set_override(preset, "auto", by="cli", principal=principal)
