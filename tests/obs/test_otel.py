"""OpenTelemetry spans from agent events, exported to an in-memory exporter."""

from __future__ import annotations

import pytest

from lathe.events import (
    ModelRequestFinished,
    RunFinished,
    RunStarted,
    RunStatus,
    ToolFinished,
    ToolStarted,
    TurnStarted,
)
from lathe.obs.otel import OtelSpans, start_tracing, tracing_requested
from lathe.obs.redact import Redactor
from lathe.types import Usage

KEY = "sk-otel-secret-0123456789"


def test_tracing_is_off_without_the_standard_variables():
    assert not tracing_requested({})
    assert not tracing_requested({"OTEL_TRACES_EXPORTER": "none"})
    assert tracing_requested({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"})
    assert tracing_requested({"OTEL_TRACES_EXPORTER": "console"})
    assert start_tracing(environ={}) is None


def test_spans_for_the_run_each_turn_model_request_and_tool_call():
    pytest.importorskip("opentelemetry.sdk", reason="opentelemetry-sdk (lathe[otel]) not installed")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    spans = OtelSpans(provider.get_tracer("test"), Redactor([KEY]), provider.shutdown)
    usage = Usage(input_tokens=100, output_tokens=20)
    for event in [
        RunStarted(task="t", model="fake-model", workspace="/w"),
        TurnStarted(turn=1),
        ModelRequestFinished(
            turn=1,
            model="fake-model",
            latency_ms=250.0,
            first_token_ms=40.0,
            usage=usage,
            stop_reason="tool_use",
            cost_usd=0.5,
            parameters={"temperature": 0.2},
        ),
        ToolStarted(call_id="c1", name="bash", arguments={}, summary=f"echo {KEY}"),
        ToolFinished(
            call_id="c1",
            name="bash",
            is_error=False,
            summary="exit 2",
            duration_ms=5.0,
            details={"exit_code": 2},
        ),
        ToolStarted(call_id="c2", name="read", arguments={}, summary="x.py"),
        ToolFinished(
            call_id="c2", name="read", is_error=True, summary="not found: x.py", duration_ms=1.0
        ),
        TurnStarted(turn=2),
        RunFinished(status=RunStatus.UNVERIFIED, turns=2, usage=usage, answer="", cost_usd=0.5),
    ]:
        spans(event)
    spans.close()

    finished = {span.name: span for span in exporter.get_finished_spans()}
    assert set(finished) == {
        "lathe.run",
        "lathe.turn",
        "lathe.model_request fake-model",
        "lathe.tool bash",
        "lathe.tool read",
    }
    run = finished["lathe.run"]
    turns = [s for s in exporter.get_finished_spans() if s.name == "lathe.turn"]
    assert [t.attributes["lathe.turn"] for t in turns] == [1, 2]
    assert all(t.parent.span_id == run.context.span_id for t in turns)
    request = finished["lathe.model_request fake-model"]
    assert request.parent.span_id == turns[0].context.span_id
    assert request.end_time - request.start_time == 250_000_000
    assert request.attributes["gen_ai.usage.input_tokens"] == 100
    assert request.attributes["gen_ai.request.temperature"] == 0.2
    assert request.attributes["lathe.cost_usd"] == 0.5
    bash = finished["lathe.tool bash"]
    assert bash.parent.span_id == turns[0].context.span_id
    assert bash.attributes["lathe.tool.exit_code"] == 2
    assert KEY not in bash.attributes["lathe.tool.summary"]
    assert not finished["lathe.tool read"].status.is_ok
    assert run.attributes["lathe.status"] == "unverified"
    assert run.attributes["lathe.cost_usd"] == 0.5


def test_console_exporter_from_the_standard_variable():
    pytest.importorskip("opentelemetry.sdk", reason="opentelemetry-sdk (lathe[otel]) not installed")
    spans = start_tracing(environ={"OTEL_TRACES_EXPORTER": "console"})
    assert isinstance(spans, OtelSpans)
    spans.close()
