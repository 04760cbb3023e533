"""Which tracer, meter and hooks instrumentation uses — resolved lazily, free when unused.

Nothing here imports OpenTelemetry until a tracer or meter provider exists: with the API not
installed, or installed but no provider set, :func:`listeners` returns
None for both after a dictionary look-up and instrumentation does no further work.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pywrapai_graph.errors import ArgumentTypeError
from pywrapai_graph.ports.hooks import Hooks

if TYPE_CHECKING:
    from opentelemetry.metrics import Counter, Histogram, MeterProvider
    from opentelemetry.trace import Tracer, TracerProvider

__all__ = [
    "Instruments",
    "capture_content",
    "check_hooks",
    "configure",
    "gate",
    "global_hooks",
    "listeners",
    "register_hooks",
    "unregister_hooks",
]

_NAME = "pywrapai_graph"
_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
# The GenAI conventions' advised histogram buckets.
_TOKEN_BUCKETS = [4.0**i for i in range(14)]
_DURATION_BUCKETS = [0.01 * 2.0**i for i in range(14)]


@dataclass(frozen=True, slots=True)
class Instruments:
    """The metric instruments of one meter provider."""

    token_usage: Histogram
    duration: Histogram
    cost: Counter


class _Config:
    """Process-wide instrumentation settings (set with :func:`configure`)."""

    def __init__(self) -> None:
        self.tracer_provider: TracerProvider | None = None
        self.meter_provider: MeterProvider | None = None
        self.capture_content: bool | None = None
        self.hooks: tuple[Hooks, ...] = ()
        self.tracer: tuple[object, Tracer | None] | None = None
        self.instruments: tuple[object, Instruments | None] | None = None
        self.lock = threading.Lock()


_config = _Config()


def configure(
    *,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    capture_content: bool | None = None,
) -> None:
    """Choose providers and content capture for this library only.

    By default the library uses OpenTelemetry's global providers (``trace.set_tracer_provider``
    / ``metrics.set_meter_provider``) and records no message contents. Passing None leaves
    the global provider in use; call ``configure()`` with no arguments to return to defaults.

    Args:
        tracer_provider: a provider for this library's spans instead of the global one.
        meter_provider: a provider for this library's metrics instead of the global one.
        capture_content: record prompts, replies, queries and tool arguments/results on spans
            and logs (off by default; also on when the environment sets
            ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``).
    """
    with _config.lock:
        _config.tracer_provider = tracer_provider
        _config.meter_provider = meter_provider
        _config.capture_content = capture_content
        _config.tracer = None
        _config.instruments = None


def capture_content() -> bool:
    """Whether message contents are recorded (opt-in)."""
    if _config.capture_content is not None:
        return _config.capture_content
    return os.environ.get(_CONTENT_ENV, "").strip().lower() in ("1", "true")


def listeners() -> tuple[Tracer | None, Instruments | None, tuple[Hooks, ...]]:
    """The tracer, metric instruments and global hooks in effect, in one cheap call.

    With no provider anywhere this reads two module globals (``sys.modules`` look-ups, no
    OpenTelemetry code runs) and returns at once.
    """
    config = _config
    tp: object | None = config.tracer_provider
    if tp is None:
        mod = sys.modules.get("opentelemetry.trace")
        # the API's module global: reading it never creates the proxy provider
        tp = None if mod is None else getattr(mod, "_TRACER_PROVIDER", None)
    mp: object | None = config.meter_provider
    if mp is None:
        mod = sys.modules.get("opentelemetry.metrics._internal")
        mp = None if mod is None else getattr(mod, "_METER_PROVIDER", None)
    if tp is None and mp is None:
        return None, None, config.hooks
    return (
        None if tp is None else _tracer_for(tp),
        None if mp is None else _instruments_for(mp),
        config.hooks,
    )


def gate(
    hooks: tuple[Hooks, ...], log: logging.Logger, level: int = logging.INFO
) -> tuple[Tracer | None, Instruments | None, tuple[Hooks, ...]] | None:
    """Who listens to one operation: tracer, instruments and hooks (``hooks`` plus the global
    ones), or None when no one does — no provider, no hook, ``log`` not enabled at ``level``.
    """
    tr, ins, shared = listeners()
    every = (*hooks, *shared) if shared else hooks
    if tr is None and ins is None and not every and not log.isEnabledFor(level):
        return None
    return tr, ins, every


def _tracer_for(provider: object) -> Tracer | None:
    cached = _config.tracer
    if cached is not None and cached[0] is provider:
        return cached[1]
    from opentelemetry import trace

    found = (
        None
        if isinstance(provider, trace.NoOpTracerProvider)
        else trace.get_tracer(_NAME, tracer_provider=provider)  # type: ignore[arg-type]
    )
    _config.tracer = (provider, found)
    return found


def _instruments_for(provider: object) -> Instruments | None:
    cached = _config.instruments
    if cached is not None and cached[0] is provider:
        return cached[1]
    from opentelemetry import metrics

    found = (
        None
        if isinstance(provider, metrics.NoOpMeterProvider)
        else _create_instruments(metrics.get_meter(_NAME, meter_provider=provider))  # type: ignore[arg-type]
    )
    _config.instruments = (provider, found)
    return found


def _create_instruments(meter: Any) -> Instruments:
    return Instruments(
        token_usage=meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=_TOKEN_BUCKETS,
        ),
        duration=meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=_DURATION_BUCKETS,
        ),
        cost=meter.create_counter(
            "pywrapai.client.cost",
            unit="USD",
            description="Cost of GenAI calls from the ledger's price table.",
        ),
    )


def register_hooks(*hooks: Hooks) -> None:
    """Add hooks that observe every object of the process.

    Raises:
        TypeError: for an object that is not a :class:`~pywrapai_graph.ports.hooks.Hooks`.
    """
    checked = check_hooks(hooks)
    with _config.lock:
        _config.hooks = (*_config.hooks, *checked)


def unregister_hooks(*hooks: Hooks) -> None:
    """Remove hooks added with :func:`register_hooks` (unknown ones are ignored)."""
    with _config.lock:
        _config.hooks = tuple(h for h in _config.hooks if h not in hooks)


def global_hooks() -> tuple[Hooks, ...]:
    """The process-wide hooks."""
    return _config.hooks


def check_hooks(hooks: Iterable[Hooks] | None) -> tuple[Hooks, ...]:
    """``hooks`` as a tuple, each checked to be a Hooks instance.

    Raises:
        TypeError: naming the first object that is not a Hooks instance.
    """
    out = tuple(hooks or ())
    for h in out:
        if not isinstance(h, Hooks):
            raise ArgumentTypeError(
                f"hooks must be pywrapai_graph.observability.Hooks instances, got "
                f"{type(h).__name__}; subclass Hooks and override on_llm_call etc."
            )
    return out
