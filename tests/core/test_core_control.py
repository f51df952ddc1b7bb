"""Live control: the Controller's rules, the agent's tool, and the control socket."""

from __future__ import annotations

import json
import os
import socket
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from agent_presets.lib.model import ToolArgumentError, ToolCallError, UnknownPresetError
from agent_presets.server.control import (
    ConfirmationRequired,
    ControlError,
    Controller,
    ControlListener,
    NoServerError,
    control_request,
    respond,
    socket_path,
)
from agent_presets.server.events import Change, Decision, Event, Request

CANVAS_ONLY = ({"surface": "canvas"},)


@pytest.fixture
def stack(make_stack: Callable[..., Any], make_preset: Callable[..., Any]) -> Any:
    return make_stack(
        [
            make_preset("theme-tools", contexts=CANVAS_ONLY, group="general"),
            make_preset("always-tools"),
            make_preset("shell-tools", default_state="off", risk="shell"),
        ]
    )


@pytest.fixture
def events() -> list[Event]:
    return []


@pytest.fixture
def controller(stack: Any, events: list[Event]) -> Controller:
    return Controller(stack.manager, emit=events.append)


def test_a_set_override_changes_the_tools_once_and_logs_who(
    controller: Controller, stack: Any, events: list[Event]
) -> None:
    result = controller.set_override("theme-tools", "on", by="cli")
    assert result == {
        "preset": "theme-tools",
        "state": "on",
        "previous": "auto",
        "changed": True,
        "active": True,
    }
    assert "space_theme_tools_tool" in stack.tools.names()
    assert len(stack.notifications) == 1
    assert events == [
        Change(preset="theme-tools", state="on", previous="auto", by="cli", ts=events[0].ts)
    ]
    # Setting it again changes nothing and logs nothing.
    assert controller.set_override("theme-tools", "on", by="cli")["changed"] is False
    assert len(events) == 1
    controller.set_override("theme-tools", "auto", by="console")
    assert "space_theme_tools_tool" not in stack.tools.names()
    assert isinstance(events[-1], Change) and events[-1].by == "console"


def test_turning_on_a_risky_preset_needs_confirmation_and_changes_nothing_without_it(
    controller: Controller, stack: Any, events: list[Event]
) -> None:
    with pytest.raises(ConfirmationRequired) as caught:
        controller.set_override("shell-tools", "on", by="cli")
    assert (caught.value.preset, caught.value.risk) == ("shell-tools", "shell")
    assert stack.manager.get_overrides() == {} and events == []
    controller.set_override("shell-tools", "on", by="cli", confirmed=True)
    assert "space_shell_tools_tool" in stack.tools.names()
    # Turning a risky preset off never asks.
    controller.set_override("shell-tools", "off", by="cli")


def test_an_unknown_preset_gets_did_you_mean(controller: Controller) -> None:
    with pytest.raises(UnknownPresetError, match="did you mean 'theme-tools'"):
        controller.set_override("theme-tool", "on", by="cli")
    with pytest.raises(ToolCallError, match="did you mean 'theme-tools'"):
        controller.ask("theme-tool", "on", "x")


def test_status_shows_each_preset_with_state_activity_reason_and_risk(
    controller: Controller,
) -> None:
    controller.set_override("always-tools", "off", by="cli")
    status = controller.status()
    assert status["server"] == os.getpid()
    assert status["context"]["surface"] == "scene"
    by_name = {p["name"]: p for p in status["presets"]}
    assert by_name["theme-tools"] == {
        "name": "theme-tools",
        "group": "general",
        "state": "auto",
        "active": False,
        "reason": "no-matching-context",
        "risk": "normal",
    }
    assert (by_name["always-tools"]["state"], by_name["always-tools"]["reason"]) == (
        "off",
        "override",
    )
    assert by_name["shell-tools"]["reason"] == "off-by-default"


def test_the_agent_turning_a_preset_off_applies_at_once(
    controller: Controller, stack: Any, events: list[Event]
) -> None:
    answer = controller.ask("always-tools", "off", "not needed")
    assert answer["status"] == "applied"
    assert "space_always_tools_tool" not in stack.tools.names()
    assert isinstance(events[-1], Change) and events[-1].by == "agent"


def test_the_agent_asking_for_on_files_a_request_and_changes_nothing(
    controller: Controller, stack: Any, events: list[Event]
) -> None:
    before = stack.tools.names()
    answer = controller.ask("theme-tools", "on", "the user wants a dark theme")
    assert answer["status"] == "pending" and answer["request"] == "r1"
    assert "waits for the user" in answer["message"]
    assert stack.tools.names() == before and stack.manager.get_overrides() == {}
    again = controller.ask("theme-tools", "on", "really")
    assert again["request"] == "r1"
    assert [r["reason"] for r in controller.pending()] == ["really"]
    assert [type(e) for e in events] == [Request]


def test_approving_a_request_sets_the_override_and_denying_changes_nothing(
    controller: Controller, stack: Any, events: list[Event]
) -> None:
    controller.ask("theme-tools", "on", "x")
    denied = controller.deny("r1", by="cli")
    assert denied == {"id": "r1", "kind": "override"}
    assert stack.manager.get_overrides() == {} and controller.pending() == []
    controller.ask("theme-tools", "on", "x")
    result = controller.approve("r2", by="cli")
    assert result["change"]["active"] is True
    assert stack.manager.get_overrides() == {"theme-tools": "on"}
    kinds = [(e.KIND, getattr(e, "outcome", None), getattr(e, "by", None)) for e in events]
    assert kinds == [
        ("request", None, None),
        ("decision", "denied", "cli"),
        ("request", None, None),
        ("change", None, "approval"),
        ("decision", "approved", "cli"),
    ]


def test_approving_a_risky_request_needs_confirmation_and_keeps_it_pending(
    controller: Controller, stack: Any
) -> None:
    controller.ask("shell-tools", "on", "run the tests")
    with pytest.raises(ConfirmationRequired):
        controller.approve("r1", by="cli")
    assert [r["id"] for r in controller.pending()] == ["r1"]
    controller.approve("r1", by="cli", confirmed=True)
    assert stack.manager.get_overrides() == {"shell-tools": "on"}


def test_the_agent_turning_off_withdraws_its_own_waiting_request(
    controller: Controller, events: list[Event]
) -> None:
    controller.ask("shell-tools", "on", "x")
    controller.ask("shell-tools", "off", "never mind")
    assert controller.pending() == []
    decision = next(e for e in events if isinstance(e, Decision))
    assert (decision.outcome, decision.by) == ("withdrawn", "agent")


def test_the_request_tool_is_a_host_tool_that_checks_its_arguments(
    controller: Controller,
) -> None:
    tool = controller.request_tool("space_")
    assert tool.name == "space_presets_request"
    assert tool.managed_owner is None and tool.preset is None
    with pytest.raises(ToolArgumentError, match="state"):
        tool.run({"preset": "theme-tools", "state": "maybe", "reason": "x"})
    with pytest.raises(ToolArgumentError, match="reason"):
        tool.run({"preset": "theme-tools", "state": "on", "reason": "x" * 501})
    assert tool.run({"preset": "theme-tools", "state": "on", "reason": "x"})["status"] == "pending"


def test_the_reason_is_kept_with_the_request_but_never_logged(
    controller: Controller, events: list[Event]
) -> None:
    controller.ask("theme-tools", "on", "SECRET-REASON")
    controller.approve("r1", by="cli")
    assert controller.requests.pending() == []
    assert events and not any("SECRET-REASON" in json.dumps(e.to_json()) for e in events)


def test_a_bad_request_line_gets_an_error_response_not_an_exception(
    controller: Controller,
) -> None:
    assert respond(controller, b"not json")["error"]["code"] == "bad-request"
    assert respond(controller, b'{"op": "dance"}')["error"]["code"] == "invalid"
    answer = respond(controller, b'{"op": "set", "preset": "shell-tools", "state": "on"}')
    assert answer["error"]["code"] == "confirm" and answer["error"]["risk"] == "shell"
    answer = respond(controller, b'{"op": "set", "preset": "x", "state": "on", "by": "Bad By"}')
    assert answer["ok"] is False


# -------------------------------------------------------------------- the socket


def test_no_socket_means_no_server(tmp_path: Path) -> None:
    with pytest.raises(NoServerError, match=r"presets serve --state-dir"):
        control_request(tmp_path, {"op": "status"})


def test_a_dead_servers_socket_means_no_server_and_a_new_server_replaces_it(
    tmp_path: Path, controller: Controller
) -> None:
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(socket_path(tmp_path)))
    dead.close()  # the file stays, nobody listens: a killed server's socket
    with pytest.raises(NoServerError):
        control_request(tmp_path, {"op": "status"})
    listener = ControlListener(socket_path(tmp_path))
    try:
        mode = os.stat(listener.path).st_mode
        assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600
        assert [p.name for p in tmp_path.iterdir()] == ["control.sock"]
    finally:
        listener.close()
    assert not socket_path(tmp_path).exists()


@pytest.mark.anyio
async def test_the_socket_answers_requests_while_served(
    tmp_path: Path, controller: Controller, stack: Any
) -> None:
    # A long folder: the socket's path is longer than a Unix address may be.
    state = tmp_path / ("x" * 60) / ("y" * 60)
    listener = ControlListener(socket_path(state))
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(listener.serve, controller)

            def ask(message: dict[str, Any]) -> Any:
                return control_request(state, message)

            status = await anyio.to_thread.run_sync(ask, {"op": "status"})
            assert status["server"] == os.getpid()
            result = await anyio.to_thread.run_sync(
                ask, {"op": "set", "preset": "theme-tools", "state": "on", "by": "cli"}
            )
            assert result["changed"] is True
            assert "space_theme_tools_tool" in stack.tools.names()
            with pytest.raises(ControlError) as caught:
                await anyio.to_thread.run_sync(
                    ask, {"op": "set", "preset": "shell-tools", "state": "on"}
                )
            assert caught.value.code == "confirm"
            assert await anyio.to_thread.run_sync(ask, {"op": "requests"}) == []
            tg.cancel_scope.cancel()
    finally:
        listener.close()
    assert not socket_path(state).exists()


def test_status_names_the_tools_an_allow_list_lets_be_served(
    stack: Any, controller: Controller
) -> None:
    from agent_presets.server.policy import Allowed, ToolPolicy

    assert controller.status()["allowed"] is None  # no policy: every tool
    controller.allows = ToolPolicy().allows
    assert controller.status()["allowed"] is None  # no allow-list: every tool
    theme = sorted(
        stack.adapters.mcp_name(a)
        for a in stack.adapters.list()
        if a.id in stack.registry.get("theme-tools").tool_ids
    )
    policy = ToolPolicy(allow=Allowed(frozenset(theme), ("theme-tools",)))
    controller.allows = policy.allows
    assert controller.status()["allowed"] == theme
