"""The ``context`` op: a person changes the host's context on a running server."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from agent_presets import ContextField, PresetError, bootstrap, hookimpl
from agent_presets.lib.vocabulary import ContextValueError
from agent_presets.server.control import Controller, respond
from agent_presets.server.events import ContextChange, Event, check_event
from agent_presets_general import SpaceHost


@pytest.fixture
def host(tmp_path: Path) -> Any:
    with SpaceHost(tmp_path / "state") as host:
        host.start()
        yield host


def controller_of(host: Any) -> tuple[Controller, list[Event]]:
    events: list[Event] = []
    return Controller(host.presets.manager, emit=events.append), events


def test_context_set_moves_the_host_and_logs_a_host_change_not_a_call(host: Any) -> None:
    controller, events = controller_of(host)
    result = controller.set_context({"surface": "canvas", "activity": "drawing"}, by="cli")
    assert result["changed"] == ["activity", "canvas_visible", "surface"]
    assert result["previous"]["surface"] == "scene"
    assert host.context()["surface"] == "canvas" and host.shell.canvas_visible is True
    assert "space_drawing_insert_shape" in host.presets.tool_registry.names()
    assert "drawing-shape-tools" in result["active"]
    # Saved as the host's own state: a restart resumes it.
    saved = json.loads((host.state_dir / "shell.json").read_text())
    assert (saved["surface"], saved["activity"]) == ("canvas", "drawing")
    [event] = events
    assert isinstance(event, ContextChange)
    line = event.to_json()
    check_event(line)
    assert line["kind"] == "context" and line["by"] == "cli"
    assert line["fields"] == {"activity": "drawing", "canvas_visible": True, "surface": "canvas"}


def test_context_set_to_the_same_values_changes_and_logs_nothing(host: Any) -> None:
    controller, events = controller_of(host)
    assert controller.set_context({"surface": "scene"}, by="cli")["changed"] == []
    assert events == []


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        (
            {"surface": "canvs"},
            "surface",
            "did you mean 'canvas'? (declared values: scene, canvas)",
        ),
        ({"surface": "canvas", "activity": "drawng"}, "activity", "did you mean 'drawing'?"),
        ({"surfce": "canvas"}, "surfce", "is not declared; did you mean 'surface'?"),
        ({"canvas_visible": "yes"}, "canvas_visible", "is true or false, not 'yes'"),
        ({"canvas_visible": None}, "canvas_visible", "is required by general"),
    ],
)
def test_a_bad_context_change_is_refused_naming_the_field_and_changes_nothing(
    host: Any, changes: dict[str, Any], field: str, words: str
) -> None:
    controller, events = controller_of(host)
    before = (host.context(), host.presets.tool_registry.names())
    with pytest.raises(ContextValueError) as refused:
        controller.set_context(changes, by="cli")
    assert refused.value.field == field
    assert words in str(refused.value)
    assert (host.context(), host.presets.tool_registry.names()) == before
    assert not (host.state_dir / "shell.json").exists()
    assert events == []


def test_a_world_that_does_not_exist_is_refused_by_the_host(host: Any) -> None:
    controller, _ = controller_of(host)
    with pytest.raises(PresetError, match="no world named 'nowhere'"):
        controller.set_context({"world_id": "nowhere", "surface": "canvas"}, by="cli")
    assert host.context()["surface"] == "scene"


def test_the_context_op_answers_on_the_wire(host: Any) -> None:
    controller, _ = controller_of(host)
    line = json.dumps({"op": "context", "set": {"activity": "graph"}, "by": "cli"}).encode()
    answer = respond(controller, line)
    assert answer["ok"] is True
    assert answer["result"]["context"]["activity"] == "graph"
    assert answer["result"]["changed"] == ["activity"]
    bad = respond(controller, json.dumps({"op": "context", "set": {"surface": "moon"}}).encode())
    assert bad["ok"] is False
    assert bad["error"]["code"] == "invalid-context"
    assert bad["error"]["field"] == "surface"
    assert bad["error"]["values"] == ["scene", "canvas"]
    assert "declared values: scene, canvas" in bad["error"]["message"]
    shape = respond(controller, json.dumps({"op": "context", "set": ["surface"]}).encode())
    assert shape["error"]["code"] == "invalid"


class Panels:
    __name__ = "panels"

    @hookimpl
    def presets_context_fields(self) -> list[ContextField]:
        return [ContextField("panel", "string", ("editor", "preview"), required=True)]


def test_an_app_without_a_host_of_its_own_has_the_managers_context_changed() -> None:
    presets = bootstrap(SimpleNamespace(), plugins=[Panels()], context={"panel": "editor"})
    controller = Controller(presets.manager)
    result = controller.set_context({"panel": "preview"}, by="console")
    assert presets.manager.get_context() == {"panel": "preview"}
    assert result["changed"] == ["panel"]
    with pytest.raises(ContextValueError, match="did you mean 'editor'"):
        controller.set_context({"panel": "editr"}, by="console")
    assert presets.manager.get_context() == {"panel": "preview"}


def test_deeply_nested_json_on_the_socket_is_a_bad_request_line(host: Any) -> None:
    controller, events = controller_of(host)
    deep = b'{"op": "context", "set": ' + b"[" * 1000 + b"]" * 1000 + b"}"
    answer = respond(controller, deep)
    assert answer["ok"] is False and answer["error"]["code"] == "bad-request"
    assert "nested deeper than 32" in answer["error"]["message"]
    assert events == []
    assert respond(controller, b"null")["error"]["code"] == "bad-request"
    shallow = json.dumps({"op": "context", "set": {"activity": [[[[]]]]}}).encode()
    assert respond(controller, shallow)["error"]["code"] == "invalid-context"
