"""Observation: one operation's span, duration metric, log record and hook call."""

from __future__ import annotations

import contextlib
import logging
import sys
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from pywrapai_graph.application.observability.telemetry import Instruments, capture_content
from pywrapai_graph.ports.hooks import Hooks
from pywrapai_graph.redaction import redact

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer

__all__ = [
    "NOOP",
    "AttrValue",
    "Observation",
    "cancelled",
    "failure_level",
    "failure_text",
    "fire",
    "quiet",
    "stopped",
]

AttrValue = str | bool | int | float | Sequence[str] | Sequence[float] | Sequence[int]

_hook_log = logging.getLogger("pywrapai_graph.hooks")
_REPORTED = "_pywrapai_reported"  # set on an exception once a WARNING has told of it
_TEXT_LIMIT = 300  # characters of an error's message in a log record


def cancelled(exc: BaseException) -> bool:
    """``exc`` cancelled an asyncio task (asyncio is looked up, never imported: a program that
    has not loaded it has no task to cancel, and the CLI starts faster without it)."""
    asyncio = sys.modules.get("asyncio")
    return asyncio is not None and isinstance(exc, asyncio.CancelledError)


def stopped(exc: BaseException) -> bool:
    """The consumer stopped the operation (closed a stream, cancelled a task): no failure."""
    return isinstance(exc, GeneratorExit) or cancelled(exc)


def failure_level(exc: BaseException) -> int:
    """WARNING for the first observation that sees ``exc`` fail, INFO for the enclosing ones
    (a store failure inside a retrieval inside an agent run is one WARNING record)."""
    seen: BaseException | None = exc
    for _ in range(32):  # an outer layer may have wrapped the reported error
        if seen is None:
            break
        if getattr(seen, _REPORTED, False):
            return logging.INFO
        seen = seen.__cause__ or seen.__context__
    with contextlib.suppress(AttributeError, TypeError):
        setattr(exc, _REPORTED, True)
    return logging.WARNING


def failure_text(exc: BaseException, detail: bool = True) -> str:
    """``Type: message`` of a failure, secrets redacted, on one bounded line (the type only
    without ``detail``)."""
    text = " ".join(redact(str(exc)).split()) if detail else ""
    if len(text) > _TEXT_LIMIT:
        text = text[:_TEXT_LIMIT] + "..."
    name = type(exc).__qualname__
    return f"{name}: {text}" if text else name


class Observation:
    """Context manager around one operation; a no-op (``active`` False) when nothing listens.

    ``attach`` makes the span current inside the block, so nested operations become its
    children; streams do not attach, as their block spans the consumer's iterations.
    """

    __slots__ = (
        "_finish",
        "_initial",
        "_result",
        "_span",
        "_started",
        "_token",
        "active",
        "attach",
        "attributes",
        "duration_s",
        "error",
        "instruments",
        "kind_client",
        "metric_attributes",
        "name",
        "quiet_detail",
        "quiet_log",
        "tracer",
    )

    def __init__(
        self,
        name: str,
        attributes: dict[str, AttrValue],
        *,
        tracer: Tracer | None,
        instruments: Instruments | None,
        finish: Callable[[Observation], None] | None,
        client: bool = True,
        attach: bool = True,
        active: bool = True,
    ) -> None:
        self.active = active
        self.name = name
        self.attributes = attributes
        self.tracer = tracer
        self.instruments = instruments
        self._finish = finish
        self.kind_client = client
        self.attach = attach
        self.metric_attributes: dict[str, AttrValue] | None = None
        self._result: Any = None
        self.error: BaseException | None = None
        self.duration_s = 0.0
        self._span: Span | None = None
        self._token: object | None = None
        self._started = 0.0
        self._initial = 0
        self.quiet_log: logging.Logger | None = None
        self.quiet_detail = True

    @property
    def result(self) -> Any:
        """What the operation produced (set by the instrumented code)."""
        return self._result

    @result.setter
    def result(self, value: Any) -> None:
        if self.active:  # the shared inactive instance keeps nothing
            self._result = value

    def set(self, values: Mapping[str, AttrValue]) -> None:
        """Add attributes (ignored when inactive)."""
        if self.active:
            self.attributes.update(values)

    def __enter__(self) -> Observation:
        if not self.active:
            return self
        self._started = time.perf_counter()
        if self.tracer is not None:
            from opentelemetry import context, trace

            kind = trace.SpanKind.CLIENT if self.kind_client else trace.SpanKind.INTERNAL
            self._span = self.tracer.start_span(self.name, kind=kind, attributes=self.attributes)
            self._initial = len(self.attributes)
            if self.attach:
                self._token = context.attach(trace.set_span_in_context(self._span))
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if not self.active:
            if exc is not None and self.quiet_log is not None and not stopped(exc):
                # nothing listens, yet a failure is always told (the shared quiet instance)
                text = failure_text(exc, self.quiet_detail)
                self.quiet_log.log(failure_level(exc), "%s failed: %s", self.name, text)
            return
        self.duration_s = time.perf_counter() - self._started
        if isinstance(exc, GeneratorExit):
            self.attributes["pywrapai.stream.abandoned"] = True
        elif exc is not None and cancelled(exc):
            self.attributes["pywrapai.cancelled"] = True
        elif exc is not None:
            self.error = exc
            self.attributes["error.type"] = type(exc).__qualname__
        try:
            if self._finish is not None:
                self._finish(self)
        finally:
            self._end_span()

    def _end_span(self) -> None:
        span = self._span
        if span is None:
            return
        from opentelemetry import context, trace

        # only what the operation added: the span already holds the opening attributes
        span.set_attributes(dict(list(self.attributes.items())[self._initial :]))
        error = self.error
        if error is not None:
            # Our typed error only: its cause may be an SDK exception quoting a credential.
            kind = type(error)
            event: dict[str, AttrValue] = {
                "exception.type": f"{kind.__module__}.{kind.__qualname__}"
            }
            # a tool's error text or a model's argument values are content: opt-in only
            if capture_content() or not getattr(error, "quotes_content", False):
                event["exception.message"] = str(error)
                event["exception.stacktrace"] = "".join(
                    traceback.format_exception(error, chain=False)
                )
            span.add_event("exception", event)
            span.set_status(trace.StatusCode.ERROR, kind.__qualname__)
        if self._token is not None:
            context.detach(self._token)  # type: ignore[arg-type]
        span.end()

    @property
    def error_type(self) -> str | None:
        """The qualified name of the failure's type (None after a success)."""
        return type(self.error).__qualname__ if self.error is not None else None

    def log_level(self, ok: int = logging.INFO) -> int:
        """``ok`` for a success; WARNING for a failure (INFO when an inner operation told of it)."""
        return ok if self.error is None else failure_level(self.error)

    def failed(self, prefix: str = " failed: ", detail: bool = True) -> str:
        """What a log line adds for a failure: ``prefix`` and its text ("" after a success)."""
        return f"{prefix}{failure_text(self.error, detail)}" if self.error is not None else ""

    def record_duration(self, operation: str) -> None:
        """Record ``gen_ai.client.operation.duration`` for this operation."""
        if self.instruments is None:
            return
        attrs = dict(self.metric_attributes or {})
        if self.error_type is not None:
            attrs["error.type"] = self.error_type
        attrs.setdefault("gen_ai.operation.name", operation)
        self.instruments.duration.record(self.duration_s, attrs)


#: The shared inactive observation: every method returns at once.
NOOP = Observation("", {}, tracer=None, instruments=None, finish=None, active=False)


def quiet(name: str, log: logging.Logger, *, detail: bool = True) -> Observation:
    """A shared inactive observation for one kind of operation (``name``, e.g. "chat") that
    nothing listens to: no span, metric or INFO record, but a failure is still logged on
    ``log`` — at WARNING, redacted (its type only without ``detail``) — whatever else is
    configured."""
    ob = Observation(name, {}, tracer=None, instruments=None, finish=None, active=False)
    ob.quiet_log = log
    ob.quiet_detail = detail
    return ob


def fire(hooks: Sequence[Hooks], method: str, event: object) -> None:
    """Call ``method`` on every hook; an exception is logged and never propagates."""
    for hook in hooks:
        try:
            getattr(hook, method)(event)
        except Exception:
            _hook_log.exception("hook %s.%s failed; the call went on", type(hook).__name__, method)
