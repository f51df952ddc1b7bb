"""ServeConfig: every serving option in one frozen, checked object; the old keywords still work."""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import pytest

from agent_presets.lib.model import PresetError
from agent_presets.server import ServeConfig, build_server
from agent_presets.server.config import config_from
from agent_presets.server.policy import ToolPolicy
from agent_presets_general import SpaceHost


def test_a_config_is_frozen_and_replace_checks_the_copy() -> None:
    config = ServeConfig(transport="http", port=0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.port = 1  # type: ignore[misc]
    assert config.replace(port=9).port == 9
    with pytest.raises(PresetError, match="confirm mode 'sometimes'"):
        config.replace(confirm="sometimes")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"transport": "carrier-pigeon"}, "unknown transport 'carrier-pigeon'"),
        ({"confirm_via": "agent"}, "--confirm-via 'agent'"),
        ({"confirm_timeout": 0}, "must be positive"),
        ({"page_size": 0}, "page_size must be at least 1"),
        ({"max_sessions": 0}, "max_sessions must be at least 1"),
        ({"tokens": object()}, "needs --transport http"),
    ],
)
def test_a_bad_option_is_refused_naming_it(fields: dict[str, object], says: str) -> None:
    with pytest.raises(PresetError, match=says):
        ServeConfig(**fields)  # type: ignore[arg-type]


def test_the_old_keywords_still_work_with_a_deprecation_warning(tmp_path: Path) -> None:
    host = SpaceHost(tmp_path / "state")
    presets = host.start()
    policy = ToolPolicy(max_calls=3)
    try:
        with pytest.warns(DeprecationWarning, match=r"build_server\(presets, ServeConfig"):
            server = build_server(presets, policy=policy, confirm="risky")
        assert server.policy is policy and server.confirmation.mode == "risky"
        server.close()
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the config form warns about nothing
            server = build_server(presets, ServeConfig(policy=policy, confirm="risky"))
        assert server.policy is policy and server.confirmation.mode == "risky"
        server.close()
    finally:
        host.close()


def test_a_config_and_keywords_together_are_refused_rather_than_one_ignored() -> None:
    with pytest.raises(TypeError, match="not both"):
        config_from(ServeConfig(), {"port": 1}, "serve")
    with pytest.raises(TypeError, match="unexpected keyword arguments: prot"):
        config_from(None, {"prot": 1}, "serve")
