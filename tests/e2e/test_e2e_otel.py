"""OpenTelemetry: our spans nest under the SDK's request spans; metrics count calls and refusals.

The SDK's in-memory span exporter and metric reader record what the server
emits. The tracer provider is the process's global one (the SDK's own
request span comes from it, and only a global provider can be set once), so
it is installed once for this module and the exporter is cleared per test;
the meter provider is handed to the server's ``Telemetry`` directly.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent_presets.server.mcp import build_server
from agent_presets.server.mcp.server import PresetServer
from agent_presets.server.telemetry import Telemetry
from agent_presets_general import SpaceHost

pytestmark = pytest.mark.anyio

_EXPORTER = InMemorySpanExporter()


@pytest.fixture(scope="module")
def exporter() -> InMemorySpanExporter:
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
    return _EXPORTER


@pytest.fixture
def spans(exporter: InMemorySpanExporter) -> Iterator[InMemorySpanExporter]:
    exporter.clear()
    yield exporter
    exporter.clear()


@pytest.fixture
def reader() -> InMemoryMetricReader:
    return InMemoryMetricReader()


@pytest.fixture
def serve(tmp_path: Path, reader: InMemoryMetricReader) -> Any:
    @asynccontextmanager
    async def serve() -> AsyncIterator[tuple[Client, PresetServer]]:
        host = SpaceHost(tmp_path / "state")
        presets = host.start()
        telemetry = Telemetry(meter_provider=MeterProvider(metric_readers=[reader]))
        server = PresetServer(presets, telemetry=telemetry)
        try:
            async with Client(server, mode="legacy") as client:
                yield client, server
        finally:
            server.close()
            host.close()

    return serve


def named(spans: InMemorySpanExporter, prefix: str) -> list[ReadableSpan]:
    return [s for s in spans.get_finished_spans() if s.name.startswith(prefix)]


def metric_points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    data = reader.get_metrics_data()
    points: dict[str, list[Any]] = {}
    assert data is not None
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                points.setdefault(metric.name, []).extend(metric.data.data_points)
    return points


async def test_a_tool_call_span_nests_under_the_request_span_with_its_facts(
    serve: Any, spans: InMemorySpanExporter, reader: InMemoryMetricReader
) -> None:
    async with serve() as (client, _):
        result = await client.call_tool("space_app_set_theme", {"theme": "dark"})
        assert not result.is_error
    (call,) = named(spans, "presets.tool_call")
    (request,) = named(spans, "tools/call")
    assert call.parent is not None and call.parent.span_id == request.context.span_id
    assert call.context.trace_id == request.context.trace_id
    attributes = dict(call.attributes or {})
    assert attributes["presets.tool"] == "space_app_set_theme"
    assert attributes["presets.preset"] == "general-theme-tools"
    assert attributes["presets.risk"] == "normal"
    assert attributes["presets.outcome"] == "ok"
    assert attributes["presets.latency_ms"] >= 0
    points = metric_points(reader)
    (calls,) = points["presets.tool.calls"]
    assert calls.value == 1 and calls.attributes["presets.outcome"] == "ok"
    (latency,) = points["presets.tool.duration"]
    assert latency.count == 1


async def test_a_refused_call_is_a_refusal_span_and_metric(
    serve: Any, spans: InMemorySpanExporter, reader: InMemoryMetricReader
) -> None:
    async with serve() as (client, _):
        result = await client.call_tool("space_drawing_insert_shape", {})
        assert result.is_error
    (call,) = named(spans, "presets.tool_call")
    attributes = dict(call.attributes or {})
    assert attributes["presets.outcome"] == "refused"
    assert attributes["presets.gate"] == "preset"
    assert call.status.status_code == trace.StatusCode.ERROR
    (refusals,) = metric_points(reader)["presets.tool.refusals"]
    assert refusals.value == 1 and refusals.attributes["presets.gate"] == "preset"


async def test_a_context_switch_is_a_span_inside_the_call_that_made_it(
    serve: Any, spans: InMemorySpanExporter, reader: InMemoryMetricReader
) -> None:
    async with serve() as (client, _):
        result = await client.call_tool("space_app_switch_surface", {"surface": "canvas"})
        assert not result.is_error
    (call,) = named(spans, "presets.tool_call")
    (switch,) = named(spans, "presets.context_switch")
    assert switch.parent is not None and switch.parent.span_id == call.context.span_id
    attributes = dict(switch.attributes or {})
    assert "scene-object-tools" in attributes["presets.presets.removed"]
    removed = attributes["presets.tools.removed"]
    assert removed and all(str(t).startswith("scene.") for t in removed), removed
    assert not attributes["presets.presets.added"]  # canvas without an activity adds nothing
    (switches,) = metric_points(reader)["presets.context.switches"]
    assert switches.value == 1


async def test_a_switch_from_the_host_is_a_root_span(
    serve: Any, spans: InMemorySpanExporter
) -> None:
    async with serve() as (_, server):
        server.presets.manager.set_context(
            {"surface": "canvas", "activity": "drawing", "canvas_visible": True}
        )
    (switch,) = named(spans, "presets.context_switch")
    assert switch.parent is None
    attributes = dict(switch.attributes or {})
    assert "drawing-shape-tools" in attributes["presets.presets.added"]
    assert attributes["presets.tools.added"]


def test_the_server_imports_only_the_api() -> None:
    import subprocess
    import sys

    code = (
        "import sys, agent_presets.server.mcp as m; "
        "print(any(n.startswith('opentelemetry.sdk') for n in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False", done.stderr


def test_build_server_defaults_to_the_global_providers(tmp_path: Path) -> None:
    host = SpaceHost(tmp_path / "state")
    server = build_server(host.start())
    try:
        assert isinstance(server.telemetry, Telemetry)
    finally:
        server.close()
        host.close()
