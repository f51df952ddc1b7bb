"""OpenTelemetry spans and metrics for tool calls and context switches.

``mcp`` depends on the OpenTelemetry API and its low-level server opens a
SERVER span per request; the spans here are made while that span is
current, so a tool call's span is its child. Only the API is imported: with
no SDK configured every call below is a no-op costing well under a
microsecond, and a host that wants the data installs ``agent-presets[otel]``
(the SDK) and sets a tracer and meter provider, as any OpenTelemetry app does.
The metrics API (which ``mcp`` does not import) is imported, and the
instruments made, by the first count rather than at start-up.

Nothing here writes an argument value, a message or a token's secret: the
attributes are names (tool, preset, gate, token name), the risk, the
outcome and the latency.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import TYPE_CHECKING, Final

from opentelemetry import trace

from agent_presets._version import __version__
from agent_presets.lib.model import ActivePreset, Resolution

if TYPE_CHECKING:
    from opentelemetry import metrics

    from agent_presets.server.record import CallRecord

SCOPE: Final = "agent_presets"

TOOL: Final = "presets.tool"
PRESET: Final = "presets.preset"
RISK: Final = "presets.risk"
OUTCOME: Final = "presets.outcome"
"""The record's outcome: ``ok``, ``error`` (the tool ran and failed), ``bad-arguments``,
``refused`` (a gate stopped it: ``presets.gate`` says which) or ``cancelled``."""
GATE: Final = "presets.gate"
LATENCY: Final = "presets.latency_ms"
TOKEN: Final = "presets.token"
PRINCIPAL: Final = "presets.principal"
REASON: Final = "presets.reason"
CONFIRM: Final = "presets.confirm"


_NO_SPAN: Final = nullcontext()
"""What an untraced call runs in: ``nullcontext`` keeps no state, so one serves every call."""


class Instruments:
    """The counters and the histogram, made from one meter."""

    def __init__(self, meter: metrics.Meter) -> None:
        self.calls = meter.create_counter(
            "presets.tool.calls", unit="{call}", description="Tool calls that ran, by outcome."
        )
        self.refusals = meter.create_counter(
            "presets.tool.refusals", unit="{call}", description="Tool calls a gate refused."
        )
        self.latency = meter.create_histogram(
            "presets.tool.duration", unit="s", description="Time from a tool call to its result."
        )
        self.switches = meter.create_counter(
            "presets.context.switches",
            unit="{switch}",
            description="Changes of the active presets, tools or prompts.",
        )


class Telemetry:
    """The server's tracer, meter and instruments (the global providers unless given)."""

    def __init__(
        self,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
    ) -> None:
        self.tracer = trace.get_tracer(SCOPE, __version__, tracer_provider)
        self._meter_provider = meter_provider
        self._instruments: Instruments | None = None
        self._lock = threading.Lock()

    def instruments(self) -> Instruments:
        """The instruments, made by the first count (any thread)."""
        made = self._instruments
        if made is None:
            with self._lock:
                made = self._instruments
                if made is None:
                    from opentelemetry import metrics

                    meter = metrics.get_meter(SCOPE, __version__, self._meter_provider)
                    made = self._instruments = Instruments(meter)
        return made

    def tool_call(
        self, tool: str, principal: str, token: str | None
    ) -> AbstractContextManager[None]:
        """A span for one ``tools/call``, current while the call runs; ``record`` ends its story.

        Made only when the SDK's request span around it records: a child of
        an unsampled parent is dropped by the default (parent-based) sampler
        anyway, and skipping it keeps an untraced call free of a span's cost
        (tens of microseconds on a busy machine). An untraced call gets one
        shared do-nothing context, not a generator of its own. Metrics are
        always counted.
        """
        if not trace.get_current_span().is_recording():
            return _NO_SPAN
        return self._tool_span(tool, principal, token)

    @contextmanager
    def _tool_span(self, tool: str, principal: str, token: str | None) -> Iterator[None]:
        attributes = {TOOL: tool, PRINCIPAL: principal}
        if token is not None:
            attributes[TOKEN] = token
        with self.tracer.start_as_current_span(
            f"presets.tool_call {tool}", kind=trace.SpanKind.INTERNAL, attributes=attributes
        ):
            yield

    def record(self, record: CallRecord) -> None:
        """Tell the call's span and the metrics its one record (the pipeline's ``Record``)."""
        span = trace.get_current_span()
        outcome = record.outcome
        if span.is_recording():
            span.set_attribute(OUTCOME, outcome)
            span.set_attribute(LATENCY, round(record.seconds * 1000, 3))
            for key, value in (
                (GATE, record.gate),
                (PRESET, record.preset),
                (RISK, record.risk),
                (REASON, record.reason),
                (CONFIRM, record.confirm),
            ):
                if value is not None:
                    span.set_attribute(key, value)
            if outcome == "refused":
                span.set_status(trace.StatusCode.ERROR, f"refused by {record.gate}")
            elif outcome != "ok":
                span.set_status(trace.StatusCode.ERROR)
        instruments = self.instruments()
        if outcome == "refused":
            instruments.refusals.add(1, {TOOL: record.tool, GATE: record.gate or "unknown"})
            return
        attributes = {TOOL: record.tool, OUTCOME: outcome}
        instruments.calls.add(1, attributes)
        instruments.latency.record(record.seconds, attributes)

    def context_switch(self, before: Resolution | None, after: Resolution) -> None:
        """A span for one change of what is active: presets and tool ids in and out.

        Made where the change is announced: inside a tool call that switched
        the context it is that call's child; from the host, a root span.
        """
        old_presets = _names(before.active_presets) if before is not None else ()
        new_presets = _names(after.active_presets)
        old_tools = before.tool_ids if before is not None else ()
        attributes = {
            "presets.presets.added": _gone(new_presets, old_presets),
            "presets.presets.removed": _gone(old_presets, new_presets),
            "presets.tools.added": _gone(after.tool_ids, old_tools),
            "presets.tools.removed": _gone(old_tools, after.tool_ids),
        }
        with self.tracer.start_as_current_span(
            "presets.context_switch", kind=trace.SpanKind.INTERNAL, attributes=attributes
        ):
            pass
        self.instruments().switches.add(1)


def _names(active: Sequence[ActivePreset]) -> tuple[str, ...]:
    return tuple(a.name for a in active)


def _gone(left: Sequence[str], right: Sequence[str]) -> list[str]:
    """Items of ``left`` not in ``right``, in ``left``'s order."""
    others = set(right)
    return [x for x in left if x not in others]
