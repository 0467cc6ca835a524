"""Optional OpenTelemetry export: spans for the run, each turn, model request and tool call.

Installed with the `otel` extra (`opentelemetry-sdk` plus an OTLP exporter package) and
configured only by the standard variables: tracing is on when `OTEL_TRACES_EXPORTER`
or `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set (and
`OTEL_TRACES_EXPORTER` is not `none`), and the SDK is importable. Otherwise
`start_tracing` returns None and nothing is imported. Exporters: `otlp` (the default;
protocol from `OTEL_EXPORTER_OTLP[_TRACES]_PROTOCOL`, `http/protobuf` unless `grpc`)
and `console` (to stderr, keeping stdout for `--json`). Service name and resource come
from `OTEL_SERVICE_NAME` / `OTEL_RESOURCE_ATTRIBUTES` as the SDK reads them.

Span tree: `lathe.run` → `lathe.turn` → `lathe.model_request` and `lathe.tool`. A model
request's span is created when it finishes, back-dated by its latency. Attributes follow
the GenAI semantic conventions where they exist (`gen_ai.*`), `lathe.*` otherwise.
Every string attribute passes through the run's `Redactor`.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

from lathe.events import (
    AgentEvent,
    ModelRequestFinished,
    RunFinished,
    RunStarted,
    ToolFinished,
    ToolStarted,
    TurnStarted,
    VerifyFinished,
)
from lathe.obs.redact import Redactor


def tracing_requested(environ: Mapping[str, str] | None = None) -> bool:
    environ = os.environ if environ is None else environ
    exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter == "none":
        return False
    endpoint = environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or environ.get(
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
    )
    return bool(exporter or endpoint)


def start_tracing(
    redactor: Redactor | None = None, environ: Mapping[str, str] | None = None
) -> OtelSpans | None:
    """An event consumer exporting spans, or None when tracing is off or not installed.
    Call `close()` on it at the end of the process to flush."""
    environ = os.environ if environ is None else environ
    if not tracing_requested(environ) or importlib.util.find_spec("opentelemetry.sdk") is None:
        return None
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from lathe import __version__

    exporters = [
        exporter
        for name in (environ.get("OTEL_TRACES_EXPORTER") or "otlp").split(",")
        if (exporter := _exporter(name.strip().lower(), environ)) is not None
    ]
    if not exporters:
        return None
    provider = TracerProvider(
        resource=Resource.create({"service.name": "lathe", "service.version": __version__})
    )
    for exporter in exporters:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    return OtelSpans(provider.get_tracer("lathe", __version__), redactor, provider.shutdown)


def _exporter(name: str, environ: Mapping[str, str]) -> Any:
    if name == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter(out=sys.stderr)
    if name != "otlp":
        return None
    protocol = (
        environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf"
    )
    try:
        if protocol == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError:  # the SDK without an OTLP exporter package: nothing to send to
        return None
    return OTLPSpanExporter()


class OtelSpans:
    """Turns agent events into spans on `tracer` (an `opentelemetry.trace.Tracer`)."""

    def __init__(
        self,
        tracer: Any,
        redactor: Redactor | None = None,
        shutdown: Callable[[], Any] | None = None,
    ) -> None:
        self._tracer = tracer
        self._redactor = redactor or Redactor(())
        self._shutdown = shutdown
        self._run: Any = None
        self._turn: Any = None
        self._tools: dict[str, Any] = {}

    def __call__(self, event: AgentEvent) -> None:
        match event:
            case RunStarted(model=model, workspace=workspace):
                self._end_run(None)
                self._run = self._start(
                    "lathe.run", None, {"gen_ai.request.model": model, "lathe.workspace": workspace}
                )
            case TurnStarted(turn=turn):
                self._end(self._turn)
                self._turn = self._start("lathe.turn", self._run, {"lathe.turn": turn})
            case ModelRequestFinished():
                self._model_request(event)
            case ToolStarted(call_id=call_id, name=name, summary=summary):
                self._tools[call_id] = self._start(
                    f"lathe.tool {name}",
                    self._turn or self._run,
                    {
                        "gen_ai.tool.name": name,
                        "gen_ai.tool.call.id": call_id,
                        "lathe.tool.summary": summary,
                    },
                )
            case ToolFinished(call_id=call_id, is_error=is_error, summary=summary):
                span = self._tools.pop(call_id, None)
                if span is not None:
                    exit_code = event.details.get("exit_code")
                    if isinstance(exit_code, int):
                        span.set_attribute("lathe.tool.exit_code", exit_code)
                    span.set_attribute("lathe.tool.result", self._redactor.mask(summary))
                    if is_error:
                        self._error(span, summary)
                    span.end()
            case VerifyFinished(command=command, passed=passed) if self._run is not None:
                self._run.add_event(
                    "verify",
                    {
                        "lathe.verify.command": self._redactor.mask(command),
                        "lathe.verify.passed": passed,
                    },
                )
            case RunFinished():
                self._end_run(event)
            case _:
                pass

    def _model_request(self, event: ModelRequestFinished) -> None:
        end = time.time_ns()
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": event.model,
            "gen_ai.usage.input_tokens": event.usage.input_tokens,
            "gen_ai.usage.output_tokens": event.usage.output_tokens,
            "gen_ai.response.finish_reasons": [event.stop_reason],
            "lathe.retries": event.retries,
            "lathe.latency_ms": event.latency_ms,
        }
        if event.first_token_ms is not None:
            attributes["lathe.first_token_ms"] = event.first_token_ms
        if event.cost_usd is not None:
            attributes["lathe.cost_usd"] = event.cost_usd
        for key, value in event.parameters.items():
            if isinstance(value, bool | int | float | str):
                attributes[f"gen_ai.request.{key}"] = value
        span = self._start(
            f"lathe.model_request {event.model}",
            self._turn or self._run,
            attributes,
            start_time=end - int(event.latency_ms * 1_000_000),
        )
        span.end(end_time=end)

    def _end_run(self, finished: RunFinished | None) -> None:
        for span in self._tools.values():
            span.end()
        self._tools.clear()
        self._end(self._turn)
        self._turn = None
        if self._run is None:
            return
        if finished is not None:
            self._run.set_attribute("lathe.status", finished.status.value)
            self._run.set_attribute("lathe.turns", finished.turns)
            self._run.set_attribute("gen_ai.usage.input_tokens", finished.usage.input_tokens)
            self._run.set_attribute("gen_ai.usage.output_tokens", finished.usage.output_tokens)
            if finished.cost_usd is not None:
                self._run.set_attribute("lathe.cost_usd", finished.cost_usd)
            if finished.status.value not in ("verified", "unverified"):
                self._error(self._run, finished.reason or finished.status.value)
        self._run.end()
        self._run = None

    def _start(
        self, name: str, parent: Any, attributes: dict[str, Any], start_time: int | None = None
    ) -> Any:
        from opentelemetry import trace

        context = trace.set_span_in_context(parent) if parent is not None else None
        masked = {k: self._redactor.mask_data(v) for k, v in attributes.items()}
        return self._tracer.start_span(
            name, context=context, attributes=masked, start_time=start_time
        )

    def _error(self, span: Any, description: str) -> None:
        from opentelemetry.trace import Status, StatusCode

        span.set_status(Status(StatusCode.ERROR, self._redactor.mask(description)))

    @staticmethod
    def _end(span: Any) -> None:
        if span is not None:
            span.end()

    def close(self) -> None:
        """End open spans (an interrupted run) and flush the exporters."""
        self._end_run(None)
        if self._shutdown is not None:
            self._shutdown()
