"""Agent: the ReAct loop — call the model with tools, run what it asks for, repeat."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncGenerator, Generator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Unpack

from pywrapai_graph.application.assemble_messages import as_messages
from pywrapai_graph.application.observability.observation import Observation, fire
from pywrapai_graph.application.observability.operations import (
    observe_agent_run,
    observe_agent_turn,
)
from pywrapai_graph.application.observability.scope import agent_run_context
from pywrapai_graph.application.observability.telemetry import check_hooks, global_hooks
from pywrapai_graph.application.tools import Tool, ToolRegistry
from pywrapai_graph.application.tools.execution import (
    ToolLimits,
    ToolOutcome,
    aexecute_tool,
    error_text,
    execute_tool,
)
from pywrapai_graph.domain import (
    GenerationOptions,
    LLMResponse,
    Message,
    Role,
    TokenUsage,
    ToolCall,
    ToolResult,
)
from pywrapai_graph.domain.agent import (
    AgentBudgetExceededError,
    AgentConfig,
    AgentMaxTurnsError,
    AgentResult,
    AgentStep,
)
from pywrapai_graph.domain.agent_events import AgentEvent
from pywrapai_graph.domain.events import AgentStepEvent
from pywrapai_graph.errors import PyWrapAIError
from pywrapai_graph.ports.conversation import Conversation
from pywrapai_graph.ports.hooks import Hooks
from pywrapai_graph.ports.sync_async import Core, adrive, drive
from pywrapai_graph.ports.vector_store import MetadataFilter

__all__ = ["Agent"]

_log = logging.getLogger(__name__)


@dataclass
class _Run:
    """The books of one run."""

    messages: list[Message]
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:16])
    steps: list[AgentStep] = field(default_factory=list)
    turns: int = 0
    usage: TokenUsage = field(default_factory=TokenUsage)
    cost: float = 0.0
    last_cost: float = 0.0
    #: what a tool raised that stopped the run under the "raise" policy
    tool_raised: Exception | None = None

    def book(self, response: LLMResponse) -> None:
        self.turns += 1
        self.usage = self.usage + response.usage
        self.cost += response.cost_usd
        self.last_cost = response.cost_usd

    @contextmanager
    def interrupted(self) -> Iterator[None]:
        """An error that stops the run (a failed model call, a tool's failure under the
        "raise" policy) carries the run so far as ``partial`` (steps, messages, cost)."""
        try:
            yield
        except PyWrapAIError as exc:
            if exc.partial is None:
                exc.partial = self.result()
            raise

    def result(self, content: str = "") -> AgentResult:
        return AgentResult(
            content=content,
            steps=list(self.steps),
            total_turns=self.turns,
            total_usage=self.usage,
            total_cost_usd=self.cost,
            messages=list(self.messages),
        )


@dataclass(frozen=True)
class _Chat:
    """A step of the loop: call the model with the run's messages."""

    messages: list[Message]
    history: Sequence[Message] | None
    options: dict[str, Any]


@dataclass(frozen=True)
class _RunTools:
    """A step of the loop: run the tools the model asked for (results in call order)."""

    tools: list[Tool]
    calls: Sequence[ToolCall]

    def pairs(self) -> Iterator[tuple[Tool, ToolCall]]:
        return zip(self.tools, self.calls, strict=True)


def _handed_on(raised: Exception, stopped: PyWrapAIError, run_id: str) -> Exception:
    """The tool's own exception, carrying the run so far as ``partial`` and a note."""
    tool = getattr(stopped, "tool", "?")
    raised.partial = stopped.partial  # type: ignore[attr-defined]
    raised.add_note(
        f"pywrapai-graph: raised by tool {tool!r} in agent run {run_id} "
        '(tool_error_policy="raise"); .partial holds the run so far'
    )
    return raised


class Agent:
    """Drives the tool-calling loop until the model answers in plain text.

    Every call passes ``rag=False`` (give the agent a ``retrieval_tool`` instead) unless
    ``run``/``arun`` get a ``filter`` or ``rag_k`` and the
    registry's neutral schemas. ``run`` executes a turn's tools one after another; ``arun``
    runs them concurrently (``async def`` tools awaited, sync tools in worker threads),
    keeping results in call order. A tool's failure — an exception (as a
    ``ToolExecutionError`` with its redacted text: the tool's own exception never reaches a
    span, a log or the model), bad arguments, its timeout (``tool_timeout_s``: a sync tool
    with one runs in a thread of its own) or an oversized result — goes to
    ``tool_error_policy``. Under "raise" the exception the tool raised propagates to the
    caller of ``run``/``arun`` as it is (``except MyDomainError:`` catches it), with the run
    so far as its ``partial`` attribute and a note naming the tool.

    Args:
        graph: the conversation to drive (a ``GraphLLM``).
        registry: the tools the model may call.
        config: loop configuration; defaults to ``AgentConfig()``.
        hooks: observability hooks told about every step and tool call (the registry's
            hooks are told about tool calls too).

    Raises:
        KeyError: (from run/arun) the model called a tool that is not registered —
            regardless of ``tool_error_policy``, as it is a programming error.
        Exception: (policy "raise") what a tool raised, carrying ``partial``; our own
            failures of a call stay typed: ``ToolTimeoutError``,
            ``ToolResultTooLargeError``, ``ToolArgumentsError`` (each with ``partial``).
        AgentMaxTurnsError: no final answer within ``max_turns``.
        AgentBudgetExceededError: the next call would exceed ``max_cost_usd``.
        PyWrapAIError: a model call failed (rate limit, timeout, malformed reply...); the
            error's ``partial`` holds the run so far (steps, messages, usage and cost).
    """

    def __init__(
        self,
        graph: Conversation,
        registry: ToolRegistry,
        config: AgentConfig | None = None,
        *,
        hooks: Sequence[Hooks] | None = None,
    ) -> None:
        self.graph = graph
        self.registry = registry
        self.config = config if config is not None else AgentConfig()
        self.hooks = check_hooks(hooks)
        self._limits = ToolLimits(self.config.tool_timeout_s, self.config.max_tool_result_bytes)

    def _observe_run(self, run: _Run) -> Observation:
        provider = str(getattr(self.graph, "provider", ""))
        return observe_agent_run(run.run_id, provider, str(getattr(self.graph, "model", "")))

    def _tool_hooks(self) -> tuple[Hooks, ...]:
        return tuple(dict.fromkeys((*self.hooks, *self.registry.hooks)))

    # ------------------------------------------------------------------ shared steps
    def _check_budget(self, run: _Run) -> None:
        budget = self.config.max_cost_usd
        if budget is None:
            return
        # The next call sends at least the previous call's input: it costs about as much.
        if run.cost > budget or (run.turns and run.cost + run.last_cost > budget):
            raise AgentBudgetExceededError(run.cost, budget, run.result())

    def _lookup(self, calls: Sequence[ToolCall]) -> list[Tool]:
        return [self.registry.get(c.name) for c in calls]  # KeyError always propagates

    def _finish_turn(self, run: _Run, response: LLMResponse, outcomes: list[ToolOutcome]) -> None:
        policy = self.config.tool_error_policy
        results: list[ToolResult] = []
        for o in outcomes:
            if o.error is None:
                results.append(ToolResult(o.call.id, o.call.name, o.content))
            elif policy == "raise":
                run.tool_raised = o.raised
                raise o.error
            elif policy == "return_to_model":
                results.append(ToolResult(o.call.id, o.call.name, error_text(o.error)))
            else:
                _log.warning(
                    "tool %r failed (%s); skipped by policy", o.call.name, type(o.error).__name__
                )
        calls = list(response.tool_calls)
        run.messages.append(response.to_message())
        run.messages.extend(Message(Role.TOOL, r.content, tool_result=r) for r in results)
        step = AgentStep(
            turn_num=run.turns,
            tool_calls=calls,
            tool_results=results,
            usage=response.usage,
            cost_usd=response.cost_usd,
            timings=[o.timing for o in outcomes],
        )
        if self.config.on_step is not None:
            self.config.on_step(step)
        hooks = (*self.hooks, *global_hooks())
        if hooks:
            fire(hooks, "on_agent_step", AgentStepEvent(run.run_id, step))
        run.steps.append(step)

    def _final(self, run: _Run, response: LLMResponse) -> AgentResult:
        run.messages.append(response.to_message())
        return run.result(response.content)

    # ------------------------------------------------------------------ the loop, once
    def _loop(
        self,
        run: _Run,
        history: Sequence[Message] | None,
        options: dict[str, Any],
    ) -> Core[_Chat | _RunTools, AgentResult]:
        """The loop of :meth:`run` and :meth:`arun`: yields a model call or a turn's tool
        calls, and is sent the response or the outcomes (see
        :mod:`~pywrapai_graph.ports.sync_async`)."""
        try:
            with self._observe_run(run) as observed, agent_run_context(run.run_id):
                for turn in range(1, self.config.max_turns + 1):
                    self._check_budget(run)
                    with observe_agent_turn(turn):
                        with run.interrupted():
                            response: LLMResponse = yield _Chat(run.messages, history, options)
                        run.book(response)
                        if not response.tool_calls:
                            observed.result = result = self._final(run, response)
                            return result
                        with run.interrupted():
                            used = self._lookup(response.tool_calls)
                            outcomes: list[ToolOutcome] = yield _RunTools(used, response.tool_calls)
                            self._finish_turn(run, response, outcomes)
                raise AgentMaxTurnsError(run.turns, run.result())
        except PyWrapAIError as exc:
            if run.tool_raised is None:
                raise
            stopped = exc
        # Spans and logs saw our typed, redacted error; the application gets its tool's own
        # exception, raised outside the handler so that its chain stays the tool's.
        raise _handed_on(run.tool_raised, stopped, run.run_id)

    def _options(
        self,
        filter: MetadataFilter | None,
        rag_k: int | None,
        generation: GenerationOptions,
    ) -> dict[str, Any]:
        """The keyword arguments of every model call of one run."""
        rag = filter is not None or rag_k is not None
        tools = self.registry.to_schema()
        return {"tools": tools, "rag": rag, "filter": filter, "rag_k": rag_k, **generation}

    # ------------------------------------------------------------------ sync
    def run(
        self,
        input: str | Sequence[Message],
        history: Sequence[Message] | None = None,
        *,
        filter: MetadataFilter | None = None,
        rag_k: int | None = None,
        **generation: Unpack[GenerationOptions],
    ) -> AgentResult:
        """Run the loop synchronously; returns the final answer with steps, usage and cost.

        ``filter`` / ``rag_k`` turn on RAG for this run's model calls, scoped to chunks
        with that metadata (at most ``rag_k`` of them); without them no context is injected.
        Generation parameters (``max_tokens``, ``temperature``, ``top_p``, ``stop``,
        ``seed``) apply to every model call of the run. A turn's tools run one after another.
        """
        hooks = self._tool_hooks()

        def do(step: _Chat | _RunTools) -> Any:
            if isinstance(step, _Chat):
                return self.graph.chat(step.messages, history=step.history, **step.options)
            return [execute_tool(t, c, hooks, self._limits) for t, c in step.pairs()]

        options = self._options(filter, rag_k, generation)
        return drive(self._loop(_Run(as_messages(input)), history, options), do)

    # ------------------------------------------------------------------ async
    async def arun(
        self,
        input: str | Sequence[Message],
        history: Sequence[Message] | None = None,
        *,
        filter: MetadataFilter | None = None,
        rag_k: int | None = None,
        **generation: Unpack[GenerationOptions],
    ) -> AgentResult:
        """Async :meth:`run` (the same loop); a turn's tool calls run concurrently."""
        hooks = self._tool_hooks()

        async def do(step: _Chat | _RunTools) -> Any:
            if isinstance(step, _Chat):
                return await self.graph.achat(step.messages, history=step.history, **step.options)
            runs = (aexecute_tool(t, c, hooks, self._limits) for t, c in step.pairs())
            return list(await asyncio.gather(*runs))

        options = self._options(filter, rag_k, generation)
        return await adrive(self._loop(_Run(as_messages(input)), history, options), do)

    # ------------------------------------------------------------------ streamed
    def stream(
        self,
        input: str | Sequence[Message],
        history: Sequence[Message] | None = None,
        *,
        filter: MetadataFilter | None = None,
        rag_k: int | None = None,
        **generation: Unpack[GenerationOptions],
    ) -> Generator[AgentEvent, None, None]:
        """:meth:`run`, streamed: yields the run's events as they happen (the same loop).

        Per turn: :class:`~pywrapai_graph.domain.agent_events.TextDelta` and
        :class:`~pywrapai_graph.domain.ToolCallDelta` pieces as the model streams them;
        ``ToolCallStarted`` and ``ToolCallResult`` around each tool call; ``StepEnded``
        with the turn's usage and cost. Last, ``FinalAnswer`` with the
        :class:`AgentResult` that :meth:`run` would return. Errors raise as from
        :meth:`run`. Closing the iterator stops the run: the model call in progress is
        booked with what it produced and no further model or tool call starts.

        Raises:
            InvalidArgumentError: the graph cannot stream tool calls (not a ``GraphLLM``).
        """
        from pywrapai_graph.application.agent_stream import stream_run

        return stream_run(self, input, history, self._options(filter, rag_k, generation))

    def astream(
        self,
        input: str | Sequence[Message],
        history: Sequence[Message] | None = None,
        *,
        filter: MetadataFilter | None = None,
        rag_k: int | None = None,
        **generation: Unpack[GenerationOptions],
    ) -> AsyncGenerator[AgentEvent, None]:
        """Async :meth:`stream`; a turn's tool calls run concurrently, as in :meth:`arun`.
        ``aclose()`` (or cancelling the task) stops the run."""
        from pywrapai_graph.application.agent_stream import astream_run

        return astream_run(self, input, history, self._options(filter, rag_k, generation))

    def __repr__(self) -> str:
        return f"Agent(tools={self.registry.names!r}, config={self.config!r})"
