"""What a host supplies and the core does not: namespace, starting context, instructions,
and which of its runtimes run alone."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from agent_presets import bootstrap, hookimpl
from agent_presets.lib.boot import HostDefaults
from agent_presets.server.mcp import PROMPT_NAME, PROMPT_URI, PresetServer
from agent_presets_general import SPACE_DEFAULTS, SpaceHost

TODAYS_INSTRUCTIONS = (
    "The tools offered here follow what the user is doing in the app (its surface and "
    "activity). When your own call changes that, your tool list stays as it is and the "
    "call's result names the tools that became active: run them with the presets_call tool "
    "(risky ones with presets_call_risky); presets_search finds any other. "
    "The prompt 'active-presets' and the resource presets://active/prompt hold guidance for "
    "the tools active now. A tool that is not active answers with what would turn it on."
)


class CanvasHost(SpaceHost):
    defaults = HostDefaults(
        namespace="studio_",
        context={"surface": "canvas", "activity": None, "canvas_visible": True},
        instructions="The studio's tools follow its open panel.",
    )


def test_the_headless_host_keeps_todays_namespace_context_and_instructions(
    tmp_path: Path,
) -> None:
    assert SPACE_DEFAULTS.namespace == "space_"
    assert dict(SPACE_DEFAULTS.context) == {
        "surface": "scene",
        "activity": None,
        "canvas_visible": False,
    }
    assert SPACE_DEFAULTS.instructions == TODAYS_INSTRUCTIONS
    assert repr(PROMPT_NAME) in TODAYS_INSTRUCTIONS and PROMPT_URI in TODAYS_INSTRUCTIONS
    with SpaceHost(tmp_path / "state") as host:
        presets = host.start()
        assert presets.tool_registry.namespace_prefix == "space_"
        assert host.context()["surface"] == "scene"
        server = PresetServer(presets)
        try:
            assert server.instructions == TODAYS_INSTRUCTIONS
        finally:
            server.close()


def test_a_host_supplies_its_namespace_starting_context_and_instructions(
    tmp_path: Path,
) -> None:
    with CanvasHost(tmp_path / "state") as host:
        presets = host.start()
        assert host.context()["surface"] == "canvas"
        names = presets.tool_registry.names()
        assert names and all(name.startswith("studio_") for name in names)
        assert "studio_drawing_insert_shape" not in names  # no activity yet
        server = PresetServer(presets)
        try:
            assert server.instructions == "The studio's tools follow its open panel."
        finally:
            server.close()


def test_bootstrap_reads_an_apps_defaults_when_the_caller_gives_none() -> None:
    app = SimpleNamespace(defaults=CanvasHost.defaults)
    presets = bootstrap(app, plugins=[])
    assert presets.tool_registry.namespace_prefix == "studio_"
    assert presets.manager.get_context() == dict(CanvasHost.defaults.context)


def test_a_server_whose_app_supplies_nothing_names_no_hosts_vocabulary() -> None:
    presets = bootstrap(SimpleNamespace(), plugins=[])
    server = PresetServer(presets)
    try:
        text = server.instructions or ""
        assert "presets_call" in text and PROMPT_URI in text
        for word in ("surface", "activity", "canvas"):
            assert word not in text
    finally:
        server.close()


class Printer:
    """A plugin whose runtime changes what the others are, so it runs alone."""

    __name__ = "printer"

    @hookimpl
    def presets_headless_runtime(self, host: Any) -> None:
        host.attach("printer", object(), exclusive=True)
        host.attach("paper", object())


def test_exclusive_runtimes_are_declared_by_whoever_owns_them(tmp_path: Path) -> None:
    with SpaceHost(tmp_path / "state") as host:
        presets = host.start([Printer()])
        assert host.exclusive_runtimes == {"shell", "printer"}
        server = PresetServer(presets)
        try:
            assert server.calls.exclusive == {"shell", "printer"}
        finally:
            server.close()
    plain = PresetServer(bootstrap(SimpleNamespace(), plugins=[]))
    try:
        assert plain.calls.exclusive == frozenset()
    finally:
        plain.close()


@pytest.mark.parametrize("given", [frozenset({"ledger"}), frozenset()])
def test_a_server_may_be_told_its_exclusive_runtimes(tmp_path: Path, given: frozenset[str]) -> None:
    with SpaceHost(tmp_path / "state") as host:
        server = PresetServer(host.start([]), exclusive_runtimes=given)
        try:
            assert server.calls.exclusive == given
        finally:
            server.close()
