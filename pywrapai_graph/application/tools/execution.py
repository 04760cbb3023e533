"""Running one tool call: observed, bounded in time and size, failures typed and redacted.

Both ``ToolRegistry.execute`` and the agent run calls here, so a tool's failure reaches a
span, a log record, a hook or the model only as our typed error: an exception the tool
raised becomes a :class:`ToolExecutionError` carrying its redacted text (its own object,
whose message or arguments may hold a DSN or a key, is kept only as a redacted copy in the
chain). With content capture off, the tool's span records the error's type only.

Defaults (justified where they are defined, :mod:`pywrapai_graph.domain.agent`): 30 s
per call and 64 KiB of result text, unless the tool or the agent's config sets its own.
"""

from __future__ import annotations

import json
import time
from contextvars import ContextVar, Token
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from pywrapai_graph.application.observability.operations import observe_tool
from pywrapai_graph.application.tools.tool import Tool
from pywrapai_graph.domain import ToolCall
from pywrapai_graph.domain.agent import (
    DEFAULT_MAX_TOOL_RESULT_BYTES,
    DEFAULT_TOOL_TIMEOUT_S,
    ToolTiming,
)
from pywrapai_graph.errors import (
    ArgumentTypeError,
    InvalidStateError,
    PyWrapAIError,
    ToolExecutionError,
    ToolResultTooLargeError,
)
from pywrapai_graph.ports.hooks import Hooks
from pywrapai_graph.redaction import scrubbed

__all__ = [
    "DEFAULT_MAX_TOOL_RESULT_BYTES",
    "DEFAULT_TOOL_TIMEOUT_S",
    "ToolLimits",
    "ToolOutcome",
    "aexecute_tool",
    "error_text",
    "execute_tool",
    "format_tool_output",
    "idempotency_key",
]

_KEY: ContextVar[str | None] = ContextVar("pywrapai_tool_call_key", default=None)


def idempotency_key() -> str:
    """The stable id of the tool call being run, for the tool's own idempotent writes.

    An agent gives every call an id derived from the run, the turn and the call's place in
    it: a call re-run after a crash (its result was not saved) gets the same id, so a tool
    that writes with it as a unique key (``INSERT ... ON CONFLICT DO NOTHING``) has its
    effect once. It is the ``PendingCall.id`` of a call that waited for approval.

    Raises:
        InvalidStateError: called outside a tool call run by an ``Agent``.
    """
    key = _KEY.get()
    if key is None:
        raise InvalidStateError("idempotency_key() is only available in a tool an Agent runs")
    return key


@dataclass(frozen=True, slots=True)
class ToolLimits:
    """The limits a tool without its own gets (None: no limit)."""

    timeout_s: float | None = DEFAULT_TOOL_TIMEOUT_S
    max_result_bytes: int | None = DEFAULT_MAX_TOOL_RESULT_BYTES

    def timeout_for(self, tool: Tool) -> float | None:
        return tool.timeout_s if tool.timeout_s is not None else self.timeout_s

    def size_for(self, tool: Tool) -> int | None:
        return tool.max_result_bytes if tool.max_result_bytes is not None else self.max_result_bytes


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """One call's text for the model, or its typed failure, with its timing.

    ``raised`` is the exception the tool itself raised when ``error`` stands in for it: only
    the agent's "raise" policy hands it on, to the application that called the run.
    """

    call: ToolCall
    timing: ToolTiming
    content: str = ""
    error: PyWrapAIError | None = None
    raised: Exception | None = None


def format_tool_output(value: Any) -> str:
    """A tool's return value as the text the model receives.

    str as is, None as "", JSON-serialisable values as JSON, anything else via ``str()``.
    """
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    try:
        return json.dumps(value, ensure_ascii=False, default=_reject)
    except (TypeError, ValueError):
        return str(value)


def _reject(value: Any) -> Any:
    raise ArgumentTypeError(type(value).__name__)


def error_text(error: PyWrapAIError) -> str:
    """What the model receives for a failed call (the reference's ``"Error: <message>"``)."""
    return f"Error: {str(error) or type(error).__name__}"


def _typed(tool: Tool, exc: Exception) -> PyWrapAIError:
    """Our error for what a tool raised (ours pass as they are: typed and redacted); the
    tool's own exception stays only as a redacted copy in the chain."""
    if isinstance(exc, PyWrapAIError):
        return exc
    kind = type(exc)
    error = ToolExecutionError(
        str(exc) or kind.__name__,
        tool=tool.name,
        original_type=f"{kind.__module__}.{kind.__qualname__}",
    )
    error.__cause__ = scrubbed(exc)
    return error


def _bounded(tool: Tool, text: str, limit: int | None) -> str:
    if limit is not None and len(text) > limit // 4:  # fewer chars can never be too many bytes
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > limit:
            raise ToolResultTooLargeError(tool.name, size, limit)
    return text


class _Attempt:
    """One observed call: the tool's failures become our typed error, recorded, not raised.

    A typed error made here is never raised inside the tool's ``except``, so the tool's own
    exception is not even its ``__context__``.
    """

    def __init__(
        self,
        tool: Tool,
        call: ToolCall,
        hooks: tuple[Hooks, ...],
        limits: ToolLimits,
        key: str | None,
    ) -> None:
        self.tool = tool
        self.call = call
        self.timeout_s = limits.timeout_for(tool)
        self._limit = limits.size_for(tool)
        self._observation = observe_tool(call, hooks=hooks)
        self._started = 0.0
        self._content = ""
        self._error: PyWrapAIError | None = None
        self._raised: Exception | None = None
        self._key = key
        self._token: Token[str | None] | None = None

    def __enter__(self) -> _Attempt:
        if self._key is not None:
            self._token = _KEY.set(self._key)
        self._started = time.perf_counter()
        self._observation.__enter__()
        return self

    def returned(self, value: Any) -> None:
        """The tool's return value, as the text the model receives (bounded)."""
        self._content = _bounded(self.tool, format_tool_output(value), self._limit)
        self._observation.result = self._content

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        if self._token is not None:
            _KEY.reset(self._token)
        if exc is not None and not isinstance(exc, Exception):  # cancelled, interrupted
            self._observation.__exit__(kind, exc, tb)
            return False
        if isinstance(exc, Exception):
            self._error = _typed(self.tool, exc)
            self._raised = None if self._error is exc else exc
        error = self._error
        self._observation.__exit__(type(error) if error else None, error, None)
        return True

    def outcome(self) -> ToolOutcome:
        timing = ToolTiming(self.call.id, self.call.name, self._started, time.perf_counter())
        return ToolOutcome(self.call, timing, self._content, self._error, self._raised)


def execute_tool(
    tool: Tool,
    call: ToolCall,
    hooks: tuple[Hooks, ...],
    limits: ToolLimits,
    key: str | None = None,
) -> ToolOutcome:
    """Run ``call`` with ``tool`` synchronously; a failure is returned, never raised.
    ``key`` is what the tool's :func:`idempotency_key` returns."""
    with _Attempt(tool, call, hooks, limits, key) as attempt:
        attempt.returned(tool.invoke(call.arguments, timeout_s=attempt.timeout_s))
    return attempt.outcome()


async def aexecute_tool(
    tool: Tool,
    call: ToolCall,
    hooks: tuple[Hooks, ...],
    limits: ToolLimits,
    key: str | None = None,
) -> ToolOutcome:
    """Async :func:`execute_tool`: ``async def`` tools awaited, sync ones in a thread."""
    with _Attempt(tool, call, hooks, limits, key) as attempt:
        attempt.returned(await tool.ainvoke(call.arguments, timeout_s=attempt.timeout_s))
    return attempt.outcome()
