"""An embedded app serves MCP over HTTP in a thread of its own, takes context pushed
through its control socket, and stops when it sets ServeConfig.stop (docs/embedding.md)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agent_presets import ContextField, hookimpl
from agent_presets.cli import main
from agent_presets.embed import bootstrap, serve
from agent_presets.lib.model import PresetError
from agent_presets.server import ServeConfig


class Fields:
    """The app declares the context it reports, as a host does."""

    @hookimpl
    def presets_context_fields(self) -> list[ContextField]:
        return [ContextField("surface", values=("scene", "canvas"), required=True)]


def test_serve_in_a_thread_takes_pushed_context_and_stops_when_asked(tmp_path: Path) -> None:
    presets = bootstrap(object(), plugins=[Fields()], context={"surface": "scene"})
    stop = threading.Event()
    ready: list[str] = []
    config = ServeConfig(
        transport="http",
        port=0,
        banner=ready.append,
        control_socket=tmp_path / "control.sock",
        stop=stop,
    )
    errors: list[BaseException] = []

    def run() -> None:
        try:
            serve(presets, config)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    thread = threading.Thread(target=run, name="embedded-serve")
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not ready and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ready and ready[0].startswith("serving MCP on http://127.0.0.1:"), errors
        # Another process steers it, as `presets serve` is steered: same folder, same socket.
        pushed = CliRunner().invoke(
            main, ["context", "set", "--state-dir", str(tmp_path), "surface=canvas"]
        )
        assert pushed.exit_code == 0, pushed.output
        assert presets.manager.get_context()["surface"] == "canvas"
    finally:
        stop.set()
        thread.join(timeout=15)
    assert not thread.is_alive(), "serve() did not return after stop was set"
    assert errors == []
    assert not (tmp_path / "control.sock").exists()


def test_stop_is_for_http_a_stdio_server_ends_with_its_input() -> None:
    kwargs: dict[str, Any] = {"stop": threading.Event()}
    with pytest.raises(PresetError, match="a stdio server ends when its input closes"):
        ServeConfig(**kwargs)
