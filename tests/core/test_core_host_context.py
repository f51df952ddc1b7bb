"""The host's door in process: ``POST /api/context`` and the host credential (docs/hosts.md)."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from core.test_core_console import call
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lanes import examples

from agent_presets.server.console.app import TOKEN_HEADER, Console
from agent_presets.server.console.credential import HOST_PATH, HostCredential
from agent_presets.server.control import Controller
from agent_presets.server.events import Event
from agent_presets_general import SpaceHost

CONSOLE_TOKEN = "console-t0ken"


class Door:
    """A console with its host credential, over a headless host."""

    def __init__(self, host: SpaceHost, path: Path) -> None:
        self.host = host
        self.events: list[Event] = []
        self.controller = Controller(host.presets.manager, emit=self.events.append)
        self.console = Console(self.controller, token=CONSOLE_TOKEN, credential=path)
        assert self.console.host_credential is not None
        self.credential = self.console.host_credential

    def post(self, body: Any, headers: dict[str, str] | None = None) -> tuple[int, Any]:
        given = {"Authorization": f"Bearer {self.credential.token}"} if headers is None else headers
        return anyio.run(
            lambda: call(self.console, "POST", HOST_PATH, headers=given, body=body),
            backend="asyncio",
        )


@pytest.fixture
def door(tmp_path: Path) -> Iterator[Door]:
    with SpaceHost(tmp_path / "state") as host:
        host.start()
        made = Door(host, tmp_path / "state" / "host-credential.json")
        try:
            yield made
        finally:
            made.console.close()


def test_the_host_credential_sets_the_context_as_the_host(door: Door) -> None:
    status, answer = door.post({"set": {"surface": "canvas", "activity": "drawing"}})
    assert status == 200, answer
    assert answer["ok"] is True
    assert answer["result"]["changed"] == ["activity", "canvas_visible", "surface"]
    assert door.host.context()["surface"] == "canvas"
    [event] = door.events
    assert event.to_json()["kind"] == "context"
    assert event.to_json()["by"] == "host"


def test_only_the_host_credential_opens_the_door(door: Door) -> None:
    change = {"set": {"surface": "canvas"}}
    for headers in (
        {},
        {TOKEN_HEADER: CONSOLE_TOKEN},
        {"Authorization": f"Bearer {CONSOLE_TOKEN}"},
        {"Authorization": door.credential.token},  # not a bearer
        {"Authorization": f"Basic {door.credential.token}"},
        {"Authorization": f"Bearer {door.credential.token}x"},
        {"Authorization": "Bearer é"},
    ):
        status, answer = door.post(change, headers)
        assert status == 401, headers
        assert answer["error"]["code"] == "unauthorized"
    # Scheme names are case-insensitive (RFC 9110).
    status, _ = door.post(change, {"Authorization": f"bearer {door.credential.token}"})
    assert status == 200
    # And the host token opens nothing else of the console.
    status, _ = anyio.run(
        lambda: call(
            door.console,
            "POST",
            "/api/override",
            headers={TOKEN_HEADER: door.credential.token},
            body={"preset": "general-theme-tools", "state": "off"},
        ),
        backend="asyncio",
    )
    assert status == 401


def test_a_console_without_a_credential_refuses_every_host(tmp_path: Path) -> None:
    with SpaceHost(tmp_path / "state") as host:
        host.start()
        console = Console(Controller(host.presets.manager), token=CONSOLE_TOKEN)
        try:
            assert console.host_credential is None
            status, answer = anyio.run(
                lambda: call(
                    console,
                    "POST",
                    HOST_PATH,
                    headers={"Authorization": f"Bearer {CONSOLE_TOKEN}"},
                    body={"set": {"surface": "canvas"}},
                ),
                backend="asyncio",
            )
        finally:
            console.close()
    assert status == 401
    assert answer["error"]["code"] == "unauthorized"


FIELDS = ["surface", "activity", "canvas_visible", "world_id", "surfce", "mood"]
DECLARED = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            "surface": st.sampled_from(["scene", "canvas"]),
            "activity": st.sampled_from(["drawing", "graph", None]),
            "canvas_visible": st.booleans(),
            "world_id": st.just("home"),
        },
    ).filter(bool)
)
"""Changes the headless host's vocabulary allows."""
VALUES = st.one_of(
    st.sampled_from(["scene", "canvas", "canvs", "drawing", "graph", "home", "nowhere", ""]),
    st.booleans(),
    st.none(),
    st.integers(),
    st.lists(st.just("canvas"), max_size=1),
)
ANYTHING = st.dictionaries(st.sampled_from(FIELDS), VALUES, max_size=4)
BODIES = st.one_of(
    st.fixed_dictionaries({"set": DECLARED}),
    st.fixed_dictionaries(
        {"set": st.one_of(DECLARED, ANYTHING)},
        optional={
            "by": st.sampled_from(["host", "studio", "Host", "", "a b"]),
            "op": st.sampled_from(["context", "set", "status"]),
            "confirmed": st.booleans(),
        },
    ),
    st.dictionaries(st.sampled_from(["set", "by", "x"]), VALUES, max_size=2),
    VALUES,
)


@settings(
    max_examples=examples(150),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(body=BODIES)
def test_a_refused_change_changes_nothing_and_an_applied_one_is_what_was_asked(
    door: Door, body: Any
) -> None:
    before = door.host.context()
    logged = len(door.events)
    status, answer = door.post(body)
    after = door.host.context()
    if status == 200:
        assert answer["ok"] is True
        changes = body["set"]
        assert all(after[key] == value for key, value in changes.items())
        assert set(after) == set(before)  # no field came from nowhere
    else:
        assert status == 400, answer
        assert answer["ok"] is False
        assert after == before
        assert len(door.events) == logged
        if answer["error"]["code"] == "invalid-context":
            assert answer["error"]["field"] in FIELDS


def test_the_credential_file_is_private_and_only_its_writer_removes_it(tmp_path: Path) -> None:
    path = tmp_path / "host-credential.json"
    first = HostCredential(path)
    first.publish("http://127.0.0.1:1/api/context")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    data = json.loads(path.read_text())
    assert data == {
        "url": "http://127.0.0.1:1/api/context",
        "token": first.token,
        "pid": os.getpid(),
    }
    assert first.token.startswith("host-") and len(first.token) > 40
    second = HostCredential(path)
    assert second.token != first.token
    second.publish("http://127.0.0.1:2/api/context")
    first.withdraw()  # an older server stopping leaves the newer one's file
    assert json.loads(path.read_text())["token"] == second.token
    second.withdraw()
    assert not path.exists()
    second.withdraw()  # gone already: nothing to do


DEEP = b'{"set": ' + b"[" * 1000 + b"]" * 1000 + b"}"
"""2 KB that Python's JSON parser cannot read without a RecursionError."""


def test_deeply_nested_json_is_a_400_that_changes_nothing(door: Door) -> None:
    before = door.host.context()
    for body in (DEEP, b'{"set": {"surface": ' + b"[" * 40 + b"]" * 40 + b"}}"):
        status, answer = door.post(body)
        assert status == 400, answer
        assert answer["error"]["code"] == "bad-request"
        assert "nested deeper than 32" in answer["error"]["message"]
    assert door.host.context() == before and door.events == []
    # The console's own actions read their bodies the same way.
    status, answer = anyio.run(
        lambda: call(
            door.console,
            "POST",
            "/api/override",
            headers={TOKEN_HEADER: CONSOLE_TOKEN},
            body=DEEP,
        ),
        backend="asyncio",
    )
    assert status == 400 and "JSON object" in answer["error"]
    status, _ = door.post({"set": {"surface": "canvas"}})
    assert status == 200


def test_a_host_sets_one_principals_context_with_principal(tmp_path: Path) -> None:
    from agent_presets.server.principals import Principals
    from agent_presets.server.store.embedded import EmbeddedStore

    with SpaceHost(tmp_path / "state") as host:
        host.start()
        principals = Principals(host.presets.manager, EmbeddedStore())
        controller = Controller(host.presets.manager, principals=principals)
        console = Console(
            controller, token=CONSOLE_TOKEN, credential=tmp_path / "state" / "host-cred.json"
        )
        assert console.host_credential is not None
        bearer = {"Authorization": f"Bearer {console.host_credential.token}"}

        def post(body: Any) -> tuple[int, Any]:
            return anyio.run(
                lambda: call(console, "POST", HOST_PATH, headers=bearer, body=body),
                backend="asyncio",
            )

        try:
            before = host.context()
            status, answer = post({"set": {"surface": "canvas"}, "principal": "alice"})
            assert status == 200, answer
            assert answer["result"]["context"]["surface"] == "canvas"
            assert principals.context("alice")["surface"] == "canvas"
            assert host.context() == before  # the host's own context did not move
            assert principals.context("bob")["surface"] == before["surface"]
            status, answer = post({"set": {"surface": "canvas"}, "principal": "no spaces"})
            assert status == 400 and answer["error"]["code"] == "invalid"
            assert "not a token name" in answer["error"]["message"]
        finally:
            console.close()
