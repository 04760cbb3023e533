"""Streaming an agent run: ``Agent.stream`` / ``Agent.astream`` drive the loop of ``Agent.run``.

The step machine is the one of :meth:`Agent.run <pywrapai_graph.application.run_agent.Agent>`
(``Agent._loop``); only the doing of its steps differs: each model call is a stream offering
the tools (``stream_with_tools``), whose text and tool-call pieces are handed on as they
arrive, and each tool call is announced before it runs and after. The loop keeps the books
(steps, budget, turns, spans, hooks) as in ``run``; every model call is booked in the token
tracker by the call itself, a stream stopped early with what it produced.

Stopping the iterator (``close()``, ``aclose()``, a ``break`` that drops the last
reference, a cancelled task) stops the run where it is: the model stream in progress is
closed and booked, and no further model or tool call starts.

The loop keeps context variables set across its steps (the run's span, the run id its calls
are booked under), while a stream's consumer may read it from different contexts (a web
framework reads the first event in the request's task and the rest in the response's). So
a run's steps all run in one context of its own, a copy of the consumer's at the first
event (the cost scopes open then see every call).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import AsyncGenerator, Generator, Sequence
from typing import Any

from pywrapai_graph.application.run_agent import Agent, _Chat, _RunTools
from pywrapai_graph.application.tools.execution import (
    ToolOutcome,
    aexecute_tool,
    error_text,
    execute_tool,
)
from pywrapai_graph.domain import LLMResponse, Message, ToolCallDelta
from pywrapai_graph.domain.agent import AgentResult
from pywrapai_graph.domain.agent_events import (
    AgentEvent,
    ApprovalRequired,
    FinalAnswer,
    StepEnded,
    TextDelta,
    ToolCallResult,
    ToolCallStarted,
)
from pywrapai_graph.errors import InvalidArgumentError
from pywrapai_graph.ports.conversation import ReplyStream, StreamingConversation

__all__ = ["astream_run", "closing_events", "stream_run"]


def closing_events(result: AgentResult) -> list[AgentEvent]:
    """The last event of a run: :class:`FinalAnswer`, or :class:`ApprovalRequired` when the
    run stopped for calls awaiting approval.

    A paused run (``result.paused``) ends with ``ApprovalRequired``: its pending calls and
    the result whose ``state`` ``Agent.resume`` continues.
    """
    if result.paused:
        return [ApprovalRequired(tuple(result.pending), result)]
    return [FinalAnswer(result)]


def _event(piece: str | ToolCallDelta) -> AgentEvent:
    return TextDelta(piece) if isinstance(piece, str) else piece


def _result(outcome: ToolOutcome) -> ToolCallResult:
    if outcome.error is None:
        return ToolCallResult(outcome.call, outcome.content)
    text = error_text(outcome.error)
    return ToolCallResult(outcome.call, text, text)


class _Steps:
    """The loop of one run, stepped by a stream: the step to do next (None once the run is
    over), and the events that the answer to a step closes."""

    def __init__(
        self,
        agent: Agent,
        input: str | Sequence[Message],
        history: Sequence[Message] | None,
        options: dict[str, Any],
    ) -> None:
        graph = agent.graph
        if not isinstance(graph, StreamingConversation):
            raise InvalidArgumentError(
                f"Agent.stream needs a graph that streams tool calls (a GraphLLM); "
                f"{type(graph).__name__} has no stream_with_tools()"
            )
        self.graph = graph
        self.run = agent._started(input, None)
        self.core = agent._loop(self.run, history, options)
        self.step: _Chat | _RunTools | None = next(self.core)
        self._response = LLMResponse()

    def _ended(self) -> StepEnded:
        response = self._response
        return StepEnded(self.run.turns, response.usage, response.cost_usd)

    def send(self, answer: LLMResponse | list[ToolOutcome]) -> list[AgentEvent]:
        """Hand the loop the answer to its step; the events that closes (the step's end
        once its tools ran, the run's last events once it is over)."""
        if isinstance(answer, LLMResponse):
            self._response = answer
        try:
            self.step = self.core.send(answer)
        except StopIteration as finished:
            self.step = None
            return [self._ended(), *closing_events(finished.value)]
        return [self._ended()] if isinstance(self.step, _Chat) else []

    def throw(self, exc: BaseException) -> None:
        """The loop sees a failure at its step, as in ``run`` (it attaches ``partial``)."""
        self.step = self.core.throw(exc)


def _reply(stream: ReplyStream) -> Generator[AgentEvent, None, LLMResponse]:
    with contextlib.closing(stream):  # stopped early: the call is booked with what it made
        for piece in stream.events():
            yield _event(piece)
    return stream.response


def _tools(agent: Agent, step: _RunTools) -> Generator[AgentEvent, None, list[ToolOutcome]]:
    hooks = agent._tool_hooks()
    outcomes = []
    for tool, call, key in step.each():  # one after another, as in run()
        yield ToolCallStarted(call)
        outcomes.append(execute_tool(tool, call, hooks, agent._limits, key))
        yield _result(outcomes[-1])
    return outcomes


def _in_own_context(
    events: Generator[AgentEvent, None, None],
) -> Generator[AgentEvent, None, None]:
    """``events``, each step of it run in one context of its own (see the module's doc)."""
    context = contextvars.copy_context()
    try:
        while (event := context.run(next, events, None)) is not None:
            yield event
    finally:  # closed early: the run unwinds in its own context
        context.run(events.close)


async def _anext(events: AsyncGenerator[AgentEvent, None]) -> AgentEvent | None:
    return await anext(events, None)


async def _ain_own_context(
    events: AsyncGenerator[AgentEvent, None],
) -> AsyncGenerator[AgentEvent, None]:
    """Async :func:`_in_own_context`: each step a task in the run's context (awaited, so
    cancelling the consumer cancels the step)."""
    context = contextvars.copy_context()
    try:
        while (event := await asyncio.create_task(_anext(events), context=context)) is not None:
            yield event
    finally:
        await asyncio.create_task(events.aclose(), context=context)


def stream_run(
    agent: Agent,
    input: str | Sequence[Message],
    history: Sequence[Message] | None,
    options: dict[str, Any],
) -> Generator[AgentEvent, None, None]:
    """The events of one run of ``agent`` (see :meth:`Agent.stream`)."""
    return _in_own_context(_run(agent, input, history, options))


def _run(
    agent: Agent,
    input: str | Sequence[Message],
    history: Sequence[Message] | None,
    options: dict[str, Any],
) -> Generator[AgentEvent, None, None]:
    steps = _Steps(agent, input, history, options)
    with contextlib.closing(steps.core):
        while (step := steps.step) is not None:
            try:
                if isinstance(step, _Chat):
                    call = steps.graph.stream_with_tools
                    stream = call(step.messages, history=step.history, **step.options)
                    answer: Any = yield from _reply(stream)
                else:
                    answer = yield from _tools(agent, step)
            except BaseException as exc:  # closed or failed: the loop unwinds as in run()
                steps.throw(exc)
                continue
            yield from steps.send(answer)


async def _atools(agent: Agent, step: _RunTools) -> list[ToolOutcome]:
    hooks = agent._tool_hooks()
    runs = (aexecute_tool(t, c, hooks, agent._limits, k) for t, c, k in step.each())
    return list(await asyncio.gather(*runs))  # concurrently, results in call order


def astream_run(
    agent: Agent,
    input: str | Sequence[Message],
    history: Sequence[Message] | None,
    options: dict[str, Any],
) -> AsyncGenerator[AgentEvent, None]:
    """The events of one run of ``agent`` (see :meth:`Agent.astream`); a turn's tool calls
    run concurrently, as in ``arun``."""
    return _ain_own_context(_arun(agent, input, history, options))


async def _arun(
    agent: Agent,
    input: str | Sequence[Message],
    history: Sequence[Message] | None,
    options: dict[str, Any],
) -> AsyncGenerator[AgentEvent, None]:
    steps = _Steps(agent, input, history, options)
    with contextlib.closing(steps.core):
        while (step := steps.step) is not None:
            try:
                if isinstance(step, _Chat):
                    call = steps.graph.astream_with_tools
                    stream = call(step.messages, history=step.history, **step.options)
                    try:
                        async with contextlib.aclosing(stream.events()) as pieces:
                            async for piece in pieces:
                                yield _event(piece)
                    finally:  # stopped early: the call is booked with what it made
                        await stream.aclose()
                    answer: Any = stream.response
                else:
                    for call_ in step.calls:
                        yield ToolCallStarted(call_)
                    answer = await _atools(agent, step)
                    for outcome in answer:
                        yield _result(outcome)
            except BaseException as exc:  # closed, cancelled or failed: as in arun()
                steps.throw(exc)
                continue
            for event in steps.send(answer):
                yield event
