"""Agent: the ReAct loop — call the model with tools, run what it asks for, repeat."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import (
    AsyncGenerator,
    Awaitable,
    Callable,
    Generator,
    Iterator,
    Mapping,
    Sequence,
)
from dataclasses import dataclass
from typing import Any, Unpack, cast

from pywrapai_graph.application.agent_runs import RunBooks, resumed_books
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
from pywrapai_graph.domain.agent_state import (
    AgentRunState,
    Approval,
    RunNotFoundError,
    TurnState,
)
from pywrapai_graph.domain.events import AgentStepEvent
from pywrapai_graph.errors import InvalidArgumentError, InvalidStateError, PyWrapAIError
from pywrapai_graph.ports.conversation import Conversation
from pywrapai_graph.ports.hooks import Hooks
from pywrapai_graph.ports.run_store import RunStore
from pywrapai_graph.ports.sync_async import Core, adrive, drive
from pywrapai_graph.ports.vector_store import MetadataFilter

__all__ = ["Agent"]

_log = logging.getLogger(__name__)


#: the books of one run (the name the drivers of :meth:`Agent._loop` use)
_Run = RunBooks


@dataclass(frozen=True)
class _Chat:
    """A step of the loop: call the model with the run's messages."""

    messages: list[Message]
    history: Sequence[Message] | None
    options: dict[str, Any]


@dataclass(frozen=True)
class _RunTools:
    """A step of the loop: run the tools the model asked for (results in call order), each
    call with its stable id as the tool's ``idempotency_key()``."""

    tools: list[Tool]
    calls: Sequence[ToolCall]
    keys: Sequence[str]

    def each(self) -> Iterator[tuple[Tool, ToolCall, str]]:
        return zip(self.tools, self.calls, self.keys, strict=True)


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
        requires_approval: a rule over each call (its name and arguments): True stops the
            run before it until a person decides (as ``@tool(requires_approval=True)``);
            the result is ``paused``, with ``pending`` calls and a ``state`` to ``resume``.
        run_store: where the agent saves each run (at start, after each model reply and
            after each tool call, by compare-and-set), so ``resume(run_id)`` continues it in
            any process; with one, ``arun`` runs a turn's calls one after another.

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
        RunConflictError: (with a run store) another worker saved the run first.
    """

    def __init__(
        self,
        graph: Conversation,
        registry: ToolRegistry,
        config: AgentConfig | None = None,
        *,
        hooks: Sequence[Hooks] | None = None,
        requires_approval: Callable[[ToolCall], bool] | None = None,
        run_store: RunStore | None = None,
    ) -> None:
        self.graph = graph
        self.registry = registry
        self.config = config if config is not None else AgentConfig()
        self.hooks = check_hooks(hooks)
        self.requires_approval = requires_approval
        self.run_store = run_store
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

    def _save(self, run: _Run, answer: str | None = None) -> None:
        """With a run store: save the run (compare-and-set on its ``seq``)."""
        if self.run_store is not None:
            run.seq += 1
            self.run_store.save(run.snapshot(self.registry.names, answer))

    def _open_turn(self, run: _Run, response: LLMResponse) -> None:
        """The reply's calls become the open turn; those needing approval are pending."""
        calls = tuple(response.tool_calls)
        tools = self._lookup(calls)
        needs = self.requires_approval
        pending = tuple(
            i
            for i, t in enumerate(tools)
            if t.requires_approval or (needs is not None and needs(calls[i]))
        )
        run.turn = TurnState(
            response.content,
            calls,
            response.usage,
            response.cost_usd,
            pending=pending,
            reasoning=response.reasoning,
        )
        self._save(run)

    def _settled(self, run: _Run, o: ToolOutcome) -> ToolResult | None:
        """What the model receives for outcome ``o`` under the error policy (None: skip)."""
        if o.error is None:
            return ToolResult(o.call.id, o.call.name, o.content)
        policy = self.config.tool_error_policy
        if policy == "raise":
            run.tool_raised = o.raised
            raise o.error
        if policy == "return_to_model":
            return ToolResult(o.call.id, o.call.name, error_text(o.error))
        _log.warning("tool %r failed (%s); skipped by policy", o.call.name, type(o.error).__name__)
        return None

    def _run_calls(self, run: _Run) -> Core[_Chat | _RunTools, AgentResult | None]:
        """Run the open turn's unsettled, approved calls (with a run store one at a time,
        saving after each); stop if calls await approval, else close the turn."""
        turn = run.turn
        assert turn is not None
        todo = [
            i for i in range(len(turn.calls)) if i not in turn.results and i not in turn.pending
        ]
        batches = [[i] for i in todo] if self.run_store is not None else [todo] if todo else []
        for batch in batches:
            calls = [turn.calls[i] for i in batch]
            keys = [run.key(i) for i in batch]
            outcomes: list[ToolOutcome] = yield _RunTools(self._lookup(calls), calls, keys)
            for i, o in zip(batch, outcomes, strict=True):
                run.settle(i, self._settled(run, o), o.timing)
            self._save(run)
        if turn.pending:
            return run.result(state=run.snapshot(self.registry.names))
        self._close_turn(run)
        return None

    def _close_turn(self, run: _Run) -> None:
        turn = run.turn
        assert turn is not None
        run.turn = None
        calls = list(turn.calls)
        every = range(len(calls))
        results = [r for r in (turn.results[i] for i in every) if r is not None]
        run.messages.append(
            Message(Role.ASSISTANT, turn.content, tool_calls=calls, reasoning=turn.reasoning)
        )
        run.messages.extend(Message(Role.TOOL, r.content, tool_result=r) for r in results)
        step = AgentStep(
            turn_num=run.turns,
            tool_calls=calls,
            tool_results=results,
            usage=turn.usage,
            cost_usd=turn.cost_usd,
            timings=[turn.timings[i] for i in every],
        )
        if self.config.on_step is not None:
            self.config.on_step(step)
        hooks = (*self.hooks, *global_hooks())
        if hooks:
            fire(hooks, "on_agent_step", AgentStepEvent(run.run_id, step))
        run.steps.append(step)

    def _final(self, run: _Run, response: LLMResponse) -> AgentResult:
        run.messages.append(response.to_message())
        self._save(run, response.content)
        return run.result(response.content)

    # ------------------------------------------------------------------ the loop, once
    def _turn(
        self, run: _Run, history: Sequence[Message] | None, options: dict[str, Any]
    ) -> Core[_Chat | _RunTools, AgentResult | None]:
        """One turn: the model's reply (unless resuming an open turn), then its tool calls;
        returns the final answer, a stop for approval, or None to go on."""
        with run.interrupted():
            if run.turn is None:
                response: LLMResponse = yield _Chat(run.messages, history, options)
                run.book(response)
                if not response.tool_calls:
                    return self._final(run, response)
                self._open_turn(run, response)
            return (yield from self._run_calls(run))

    def _loop(
        self,
        run: _Run,
        history: Sequence[Message] | None,
        options: dict[str, Any],
    ) -> Core[_Chat | _RunTools, AgentResult]:
        """The loop of :meth:`run`, :meth:`arun` and the resumes: yields a model call or
        tool calls, and is sent the response or the outcomes (see
        :mod:`~pywrapai_graph.ports.sync_async`)."""
        run.history, run.options = history, options
        try:
            with self._observe_run(run) as observed, agent_run_context(run.run_id):
                self._save(run)  # a new run is recorded; a resumed one is claimed
                while run.turn is not None or run.turns < self.config.max_turns:
                    if run.turn is None:
                        self._check_budget(run)
                    with observe_agent_turn(run.turns + (run.turn is None)):
                        result = yield from self._turn(run, history, options)
                    if result is not None:
                        observed.result = result
                        return result
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

    def _started(self, input: str | Sequence[Message], run_id: str | None) -> _Run:
        if run_id is None:
            return _Run(as_messages(input))
        given: object = run_id  # checked at run time, whatever its type says
        if not isinstance(given, str) or not given:
            raise InvalidArgumentError(f"run_id must be a non-empty str, got {run_id!r}")
        return _Run(as_messages(input), run_id=run_id)

    def _resumed(
        self, state: AgentRunState | str, approvals: Mapping[str, Approval] | None
    ) -> tuple[_Run, dict[str, Any], AgentResult | None]:
        """The books to go on with, the run's model-call options, and the result of a run
        that had already finished (None otherwise)."""
        if isinstance(state, str):
            if self.run_store is None:
                raise InvalidStateError(
                    "resume(run_id) needs an Agent with a run_store; pass the run's "
                    "AgentRunState (AgentResult.state) instead"
                )
            loaded = self.run_store.load(state)
            if loaded is None:
                raise RunNotFoundError(f"the run store holds no agent run {state!r}")
            state = loaded
        run = resumed_books(state, approvals, self.registry)
        saved = dict(state.options)
        generation = cast(GenerationOptions, saved)
        options = self._options(saved.pop("filter", None), saved.pop("rag_k", None), generation)
        run.history = state.history
        done = None if state.answer is None else run.result(state.answer)
        return run, options, done

    def _do(self) -> Callable[[_Chat | _RunTools], Any]:
        hooks = self._tool_hooks()

        def do(step: _Chat | _RunTools) -> Any:
            if isinstance(step, _Chat):
                return self.graph.chat(step.messages, history=step.history, **step.options)
            return [execute_tool(t, c, hooks, self._limits, k) for t, c, k in step.each()]

        return do

    def _ado(self) -> Callable[[_Chat | _RunTools], Awaitable[Any]]:
        hooks = self._tool_hooks()

        async def do(step: _Chat | _RunTools) -> Any:
            if isinstance(step, _Chat):
                return await self.graph.achat(step.messages, history=step.history, **step.options)
            runs = (aexecute_tool(t, c, hooks, self._limits, k) for t, c, k in step.each())
            return list(await asyncio.gather(*runs))

        return do

    # ------------------------------------------------------------------ sync
    def run(
        self,
        input: str | Sequence[Message],
        history: Sequence[Message] | None = None,
        *,
        filter: MetadataFilter | None = None,
        rag_k: int | None = None,
        run_id: str | None = None,
        **generation: Unpack[GenerationOptions],
    ) -> AgentResult:
        """Run the loop synchronously; returns the final answer with steps, usage and cost,
        or a stop for approval (``result.paused``: ``result.pending`` and ``result.state``).

        ``filter`` / ``rag_k`` turn on RAG for this run's model calls, scoped to chunks
        with that metadata (at most ``rag_k`` of them); without them no context is injected.
        Generation parameters (``max_tokens``, ``temperature``, ``top_p``, ``stop``,
        ``seed``) apply to every model call of the run. A turn's tools run one after another.
        ``run_id`` names the run (default: a random id), e.g. to ``resume`` it from a run
        store after a crash.
        """
        options = self._options(filter, rag_k, generation)
        return drive(self._loop(self._started(input, run_id), history, options), self._do())

    def resume(
        self, state: AgentRunState | str, approvals: Mapping[str, Approval] | None = None
    ) -> AgentResult:
        """Continue a run that stopped for approval or was interrupted (a crash, a kill).

        Args:
            state: the run's state (``AgentResult.state``, or ``AgentRunState.from_dict``),
                or its run id to load from the agent's ``run_store``.
            approvals: a decision for each pending call, by its id: ``True`` runs it,
                ``False`` tells the model it was denied, a mapping runs it with these
                arguments instead (checked like the model's).

        Raises:
            RunNotFoundError: no run of that id in the store.
            RunStateError: a state saved by an agent with another tool set.
            ApprovalsError: a pending call without a decision, or an unknown call id.
            ToolArgumentsError: edited arguments that do not fit the tool.
            RunConflictError: another worker resumed the run first.
        """
        run, options, done = self._resumed(state, approvals)
        if done is not None:
            return done
        return drive(self._loop(run, run.history, options), self._do())

    # ------------------------------------------------------------------ async
    async def arun(
        self,
        input: str | Sequence[Message],
        history: Sequence[Message] | None = None,
        *,
        filter: MetadataFilter | None = None,
        rag_k: int | None = None,
        run_id: str | None = None,
        **generation: Unpack[GenerationOptions],
    ) -> AgentResult:
        """Async :meth:`run` (the same loop); a turn's tool calls run concurrently (one
        after another with a run store, which saves after each)."""
        options = self._options(filter, rag_k, generation)
        run = self._started(input, run_id)
        return await adrive(self._loop(run, history, options), self._ado())

    async def aresume(
        self, state: AgentRunState | str, approvals: Mapping[str, Approval] | None = None
    ) -> AgentResult:
        """Async :meth:`resume` (the same loop)."""
        run, options, done = self._resumed(state, approvals)
        if done is not None:
            return done
        return await adrive(self._loop(run, run.history, options), self._ado())

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
        """:meth:`run`, streamed: yields its events as they happen (the same loop) —
        ``TextDelta`` and ``ToolCallDelta`` pieces, ``ToolCallStarted``/``ToolCallResult``,
        ``StepEnded``, then ``FinalAnswer`` (or ``ApprovalRequired`` for a paused run).
        Errors raise as from :meth:`run`; closing the iterator stops the run, the model
        call in progress booked with what it produced.

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
