"""The served process put together from code: settings checked whole, the host started, a config."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_presets.lib.plugins import load_plugins
from agent_presets.server.process import (
    ServeSettings,
    SettingError,
    assemble,
    check_settings,
    open_checked_store,
)


def settings(state_dir: Path, **changes: Any) -> ServeSettings:
    """``presets serve``'s defaults, as its flags give them, with ``changes``."""
    defaults = ServeSettings(
        transport="stdio",
        host="127.0.0.1",
        port=8765,
        state_dir=state_dir,
        store_url=None,
        root=None,
        plugins_dir=None,
        allow=(),
        max_calls=None,
        max_calls_per_tool=None,
        event_log=None,
        no_event_log=False,
        namespace="space_",
        auth=None,
        insecure=False,
        confirm="none",
        confirm_timeout=50.0,
        confirm_via="operator",
        console_address=None,
        max_sessions=None,
        replica=None,
        upstreams_at_start=False,
        tool_budget=None,
        discovery="auto",
        delivery="auto",
        context={},
        overrides={},
        serve_options=(),
    )
    return dataclasses.replace(defaults, **changes)


@pytest.mark.parametrize(
    ("changes", "flag", "says"),
    [
        ({"namespace": "Bad-"}, "--namespace", "lowercase letters"),
        ({"console_address": "0.0.0.0:0"}, "--console", "not a loopback address"),
        ({"console_address": "nowhere:port"}, "--console", None),
        ({"replica": "r1"}, None, "--replica needs --transport http"),
        ({"transport": "http", "replica": "r 1"}, "--replica", "cannot start a session id"),
        ({"event_log": Path("x"), "no_event_log": True}, None, "contradict"),
        ({"delivery": "stable", "discovery": "list"}, None, "--delivery stable"),
        ({"tool_budget": 100, "discovery": "list"}, None, "--tool-budget needs"),
    ],
)
def test_settings_that_cannot_work_are_refused_naming_the_flag_to_blame(
    tmp_path: Path, changes: dict[str, Any], flag: str | None, says: str | None
) -> None:
    with pytest.raises(SettingError, match=says) as refused:
        check_settings(settings(tmp_path, **changes), warn=print)
    assert refused.value.flag == flag
    assert not (tmp_path / "state.lock").exists()  # refused before anything was touched


def test_a_console_on_a_shared_network_is_served_with_insecure_and_a_warning(
    tmp_path: Path,
) -> None:
    warned: list[str] = []
    at = check_settings(
        settings(tmp_path, console_address="0.0.0.0:0", insecure=True), warn=warned.append
    )
    assert at == ("0.0.0.0", 0)
    assert warned == ["the console listens on 0.0.0.0: anyone with its URL may turn presets on"]


def test_an_unknown_store_is_refused_as_its_flag(tmp_path: Path) -> None:
    with pytest.raises(SettingError, match="not a store this server knows") as refused:
        open_checked_store(settings(tmp_path, store_url="postgres://x"))
    assert refused.value.flag == "--store"


def test_assembled_from_code_the_config_serves_the_started_host(tmp_path: Path) -> None:
    said: list[str] = []
    chosen = settings(tmp_path / "state", auth="tokens", transport="http", port=0)
    store = open_checked_store(chosen)
    try:
        presets, config = assemble(
            chosen, store, load_plugins([]), console_at=None, say=said.append, warn=said.append
        )
        state = (tmp_path / "state").resolve()
        assert (config.transport, config.state_dir, config.store) == ("http", state, store)
        assert config.control_socket is not None and config.control_socket.parent == state
        assert config.policy is not None and config.policy.store is store
        assert config.tokens is not None and "no tokens in" in said[0]
        assert config.banner is not None
        config.banner("http://127.0.0.1:1/mcp")
        assert said[-1].startswith("presets serve: ")
        assert said[-1].endswith(
            f" 0 active tools, http://127.0.0.1:1/mcp, 0 tokens, state in {state}"
        )
        assert presets.tool_registry.namespace_prefix == "space_"
    finally:
        presets.manager.app.close()
        store.close()


def test_the_served_host_loads_first_and_its_public_names_are_the_same() -> None:
    # agent_presets.host names the served host: loading the host first must not meet a
    # half-made module.
    code = (
        "import agent_presets.server.host.served as served\n"
        "import agent_presets.host as public\n"
        "assert public.ServedHost is served.ServedHost\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
