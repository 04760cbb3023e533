"""GraphLLM: assembles the message list (prompt, history, RAG context) and calls the LLM."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, Unpack

from pywrapai_graph.adapters.prompts.filesystem import PromptRegistry
from pywrapai_graph.application.assemble_messages import AssembleMessages
from pywrapai_graph.application.chat_stream import AsyncChatStream, ChatStream, StreamEvent
from pywrapai_graph.application.conversation_memory import ConversationMemory
from pywrapai_graph.application.history_window import HistoryWindow
from pywrapai_graph.application.retrieve_context import RetrieveContext
from pywrapai_graph.application.token_tracker import TokenTracker
from pywrapai_graph.composition.graph_structured import StructuredCalls
from pywrapai_graph.composition.llm import LLM
from pywrapai_graph.domain import (
    GenerationOptions,
    InjectedChunk,
    LLMResponse,
    Message,
    ScoredChunk,
    ToolSpec,
)
from pywrapai_graph.domain.checks import is_positive_int
from pywrapai_graph.errors import ArgumentTypeError, InvalidArgumentError
from pywrapai_graph.ports import (
    BaseRetriever,
    MetadataFilter,
    PromptSource,
    ResponseCache,
)
from pywrapai_graph.ports.conversation_store import ConversationStore
from pywrapai_graph.ports.sync_async import Core, adrive, drive

__all__ = ["GraphLLM"]

if TYPE_CHECKING:  # pydantic loads only when structured output is used
    from pydantic import BaseModel

M = TypeVar("M", bound="BaseModel")


@dataclasses.dataclass(frozen=True, slots=True)
class _Step:
    """One I/O step of :meth:`GraphLLM._prepared`: a method, its async twin, their arguments."""

    blocking: Callable[..., Any]
    awaiting: Callable[..., Awaitable[Any]]
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def run(self) -> Any:
        return self.blocking(*self.args, **self.kwargs)

    def arun(self) -> Awaitable[Any]:
        return self.awaiting(*self.args, **self.kwargs)


class _Sending(GenerationOptions, total=False):
    """The keyword arguments of an LLM call or stream beside its messages."""

    tools: Sequence[ToolSpec] | None
    tool_choice: str | None
    extra: Mapping[str, object] | None
    prompt_file: str | None


class GraphLLM(StructuredCalls):
    """The orchestrator: decides exactly what the LLM receives.

    Message order is always: versioned system prompt (position 0), history oldest first,
    current message — RAG-augmented with the D4 template when a retriever is set.

    Args:
        llm: the LLM to call.
        enable_system_prompt_versioning: load ``prompt_file`` and inject it at position 0.
        prompt_file: file name inside ``prompts_dir``; required when versioning is on.
        prompts_dir: the prompts directory; pass an absolute path in production.
        retriever: enables RAG context injection on every call (unless ``rag=False``).
        rag_k: how many chunks to inject at most.
        prompt_source: read prompts from this source instead of ``prompts_dir``.
        conversations: where ``chat(..., conversation_id=...)`` keeps conversations.
        history_window: keeps a conversation's request within the model's context window.

    Raises:
        ValueError: versioning on without ``prompt_file``, or ``rag_k`` < 1.
        FileNotFoundError: the prompt file or directory does not exist (lists what does).
    """

    def __init__(
        self,
        llm: LLM,
        enable_system_prompt_versioning: bool = False,
        prompt_file: str | None = None,
        prompts_dir: str | os.PathLike[str] = "system_prompts_registry",
        retriever: BaseRetriever | None = None,
        rag_k: int = 4,
        *,
        prompt_source: PromptSource | None = None,
        conversations: ConversationStore | None = None,
        history_window: HistoryWindow | None = None,
    ) -> None:
        if enable_system_prompt_versioning and not prompt_file:
            raise InvalidArgumentError(
                "enable_system_prompt_versioning=True requires prompt_file= "
                "(a file name inside prompts_dir, e.g. 'support-agent-v1.txt')"
            )
        self._llm = llm
        self._versioning = enable_system_prompt_versioning
        self._prompt_file = prompt_file if enable_system_prompt_versioning else None
        self._prompts = prompt_source if prompt_source is not None else PromptRegistry(prompts_dir)
        self._system_prompt: str | None = None
        if enable_system_prompt_versioning:
            assert prompt_file is not None
            self._system_prompt = self._prompts.load(prompt_file)
        if not is_positive_int(rag_k):
            raise InvalidArgumentError(f"rag_k must be a positive int, got {rag_k!r}")
        self._retriever = retriever
        self._rag_k = rag_k
        self._context = RetrieveContext(retriever, rag_k) if retriever is not None else None
        self._assemble = AssembleMessages(self._system_prompt, versioning=self._versioning)
        self._memory = ConversationMemory(conversations, history_window)

    # ------------------------------------------------------------------ proxies
    @property
    def llm(self) -> LLM:
        """The underlying LLM instance."""
        return self._llm

    @property
    def tokens(self) -> TokenTracker:
        """The LLM's TokenTracker (shared by every ``with_system_prompt`` copy)."""
        return self._llm.tokens

    @property
    def cache(self) -> ResponseCache | None:
        """The LLM's response cache, or None."""
        return self._llm.cache

    @property
    def model(self) -> str:
        """The model name."""
        return self._llm.model

    @property
    def provider(self) -> str:
        """The provider name."""
        return self._llm.provider

    @property
    def system_prompt(self) -> str | None:
        """The system prompt in effect: the loaded/set one, else the LLM's inline one."""
        return self._system_prompt if self._versioning else self._llm.system_prompt

    @property
    def prompt_file(self) -> str | None:
        """The versioned prompt file in use (recorded with every call's cost)."""
        return self._prompt_file

    @property
    def retriever(self) -> BaseRetriever | None:
        """The retriever used for RAG, if any."""
        return self._retriever

    @property
    def rag_k(self) -> int:
        """Maximum number of injected chunks."""
        return self._rag_k

    @staticmethod
    def _with_context(response: LLMResponse, hits: list[ScoredChunk]) -> LLMResponse:
        if not hits:
            return response
        injected = tuple(
            InjectedChunk(h.chunk.id, h.score, h.chunk.text, h.chunk.doc_id, dict(h.chunk.metadata))
            for h in hits
        )
        return dataclasses.replace(response, context=injected)

    # ------------------------------------------------------------------ calls
    def chat(
        self,
        input: str | Sequence[Message],
        history: Sequence[Message] | None = None,
        tools: Sequence[ToolSpec] | None = None,
        tool_choice: str | None = None,
        rag: bool = True,
        *,
        filter: MetadataFilter | None = None,
        rag_k: int | None = None,
        extra: Mapping[str, object] | None = None,
        conversation_id: str | None = None,
        scope: Mapping[str, Any] | None = None,
        **generation: Unpack[GenerationOptions],
    ) -> LLMResponse:
        """Assemble and send; ``response.context`` lists the injected chunks.

        ``extra`` carries provider-specific request fields (``user``, ``service_tier``...)
        to the SDK unchanged, as :meth:`LLM.chat` describes; a field the library sets itself
        raises InvalidArgumentError.

        With ``conversation_id`` the history is the stored conversation (of ``scope``),
        fitted to the history window; the turn (``input`` and the answer) is appended
        once the call succeeds.

        Raises:
            ScopeError: ``filter`` given to a retriever that cannot filter, or a ``scope``
                that contradicts a scoped graph's.
            ContextWindowError: the system prompt and ``input`` alone exceed the window.
        """
        turn = self._prepared(input, history, rag, filter, rag_k, conversation_id, scope)
        messages, hits = drive(turn, _Step.run)
        response = self._llm.chat(messages, **self._sending(tools, tool_choice, extra, generation))
        self._memory.remember(conversation_id, input, response, scope)
        return self._with_context(response, hits)

    async def achat(
        self,
        input: str | Sequence[Message],
        history: Sequence[Message] | None = None,
        tools: Sequence[ToolSpec] | None = None,
        tool_choice: str | None = None,
        rag: bool = True,
        *,
        filter: MetadataFilter | None = None,
        rag_k: int | None = None,
        extra: Mapping[str, object] | None = None,
        conversation_id: str | None = None,
        scope: Mapping[str, Any] | None = None,
        **generation: Unpack[GenerationOptions],
    ) -> LLMResponse:
        """Async :meth:`chat`; retrieval, the store and the call never block the loop."""
        turn = self._prepared(input, history, rag, filter, rag_k, conversation_id, scope)
        messages, hits = await adrive(turn, _Step.arun)
        sending = self._sending(tools, tool_choice, extra, generation)
        response = await self._llm.achat(messages, **sending)
        await self._memory.aremember(conversation_id, input, response, scope)
        return self._with_context(response, hits)

    def _prepared(
        self,
        input: str | Sequence[Message],
        history: Sequence[Message] | None,
        rag: bool,
        filter: MetadataFilter | None,
        rag_k: int | None,
        conversation_id: str | None,
        scope: Mapping[str, Any] | None,
    ) -> Core[_Step, tuple[list[Message], list[ScoredChunk]]]:
        """A call's messages and injected chunks, written once for every call and stream:
        the history (given, or the stored conversation), assembled with RAG, fitted to
        the history window."""
        memory = self._memory
        past = yield _Step(memory.recall, memory.arecall, (conversation_id, history, scope))
        messages: list[Message]
        messages, hits = yield _Step(
            self.assemble, self.aassemble, (input, past, rag), {"filter": filter, "rag_k": rag_k}
        )
        current = len(self._assemble.split(input)[1])
        return memory.fit(conversation_id, messages, current, self._llm.system_prompt), hits

    def _sending(
        self,
        tools: Sequence[ToolSpec] | None,
        tool_choice: str | None,
        extra: Mapping[str, object] | None,
        generation: GenerationOptions,
    ) -> _Sending:
        """The keyword arguments of the LLM's call (or stream) beside the messages."""
        return _Sending(
            tools=tools,
            tool_choice=tool_choice,
            extra=extra,
            prompt_file=self._prompt_file,
            **generation,
        )

    def stream(
        self,
        input: str | Sequence[Message],
        history: Sequence[Message] | None = None,
        tools: Sequence[ToolSpec] | None = None,
        rag: bool = True,
        *,
        filter: MetadataFilter | None = None,
        rag_k: int | None = None,
        extra: Mapping[str, object] | None = None,
        conversation_id: str | None = None,
        scope: Mapping[str, Any] | None = None,
        **generation: Unpack[GenerationOptions],
    ) -> ChatStream:
        """Same assembly as :meth:`chat`, streamed: iterate the text; once exhausted,
        ``.response`` holds the whole response with usage, cost and ``context``. A
        conversation's turn is saved when the stream is exhausted (not when left early).

        Raises:
            ValueError: when ``tools`` is passed; use :meth:`stream_with_tools` (or
                :meth:`chat`) for tool calling.
        """
        if tools is not None:
            raise InvalidArgumentError(
                "GraphLLM.stream() does not accept tools=; use stream_with_tools() or chat()"
            )
        return self.stream_with_tools(
            input,
            history,
            rag=rag,
            filter=filter,
            rag_k=rag_k,
            extra=extra,
            conversation_id=conversation_id,
            scope=scope,
            **generation,
        )

    def stream_with_tools(
        self,
        input: str | Sequence[Message],
        history: Sequence[Message] | None = None,
        tools: Sequence[ToolSpec] | None = None,
        tool_choice: str | None = None,
        rag: bool = True,
        *,
        filter: MetadataFilter | None = None,
        rag_k: int | None = None,
        extra: Mapping[str, object] | None = None,
        conversation_id: str | None = None,
        scope: Mapping[str, Any] | None = None,
        **generation: Unpack[GenerationOptions],
    ) -> ChatStream:
        """:meth:`stream` offering ``tools`` (the arguments of :meth:`chat`):
        ``stream.events()`` yields the text and each tool call's pieces
        (:class:`~pywrapai_graph.domain.ToolCallDelta`) as they arrive; once exhausted,
        ``.response.tool_calls`` holds the decoded calls. ``Agent.stream`` drives it."""
        turn = self._prepared(input, history, rag, filter, rag_k, conversation_id, scope)
        messages, hits = drive(turn, _Step.run)
        sending = self._sending(tools, tool_choice, extra, generation)
        stream = self._llm.stream_with_tools(messages, **sending)

        def events() -> Iterator[StreamEvent]:
            with contextlib.closing(stream):  # closed early: the inner stream books it now
                yield from stream.events()
            self._memory.remember(conversation_id, input, stream.response, scope)
            yield self._with_context(stream.response, hits)

        return ChatStream(events())

    def astream(
        self,
        input: str | Sequence[Message],
        history: Sequence[Message] | None = None,
        tools: Sequence[ToolSpec] | None = None,
        rag: bool = True,
        *,
        filter: MetadataFilter | None = None,
        rag_k: int | None = None,
        extra: Mapping[str, object] | None = None,
        conversation_id: str | None = None,
        scope: Mapping[str, Any] | None = None,
        **generation: Unpack[GenerationOptions],
    ) -> AsyncChatStream:
        """Async :meth:`stream`; retrieval happens on the first ``__anext__``, off the loop.

        Raises:
            ValueError: when ``tools`` is passed.
        """
        if tools is not None:
            raise InvalidArgumentError(
                "GraphLLM.astream() does not accept tools=; use astream_with_tools() or achat()"
            )
        return self.astream_with_tools(
            input,
            history,
            rag=rag,
            filter=filter,
            rag_k=rag_k,
            extra=extra,
            conversation_id=conversation_id,
            scope=scope,
            **generation,
        )

    def astream_with_tools(
        self,
        input: str | Sequence[Message],
        history: Sequence[Message] | None = None,
        tools: Sequence[ToolSpec] | None = None,
        tool_choice: str | None = None,
        rag: bool = True,
        *,
        filter: MetadataFilter | None = None,
        rag_k: int | None = None,
        extra: Mapping[str, object] | None = None,
        conversation_id: str | None = None,
        scope: Mapping[str, Any] | None = None,
        **generation: Unpack[GenerationOptions],
    ) -> AsyncChatStream:
        """Async :meth:`stream_with_tools`; retrieval happens on the first ``__anext__``."""

        turn = self._prepared(input, history, rag, filter, rag_k, conversation_id, scope)
        sending = self._sending(tools, tool_choice, extra, generation)

        async def events() -> AsyncIterator[StreamEvent]:
            messages, hits = await adrive(turn, _Step.arun)
            stream = self._llm.astream_with_tools(messages, **sending)
            try:
                async with contextlib.aclosing(stream.events()) as reply:
                    async for event in reply:
                        yield event
            finally:  # closed early: the inner stream books what was produced, now
                await stream.aclose()
            await self._memory.aremember(conversation_id, input, stream.response, scope)
            yield self._with_context(stream.response, hits)

        return AsyncChatStream(events())

    # ------------------------------------------------------------------ copies
    def with_system_prompt(self, text: str) -> GraphLLM:
        """A shallow copy whose system prompt is ``text``; shares the LLM, cache and tracker.

        Raises:
            TypeError: when ``text`` is not a string.
        """
        if not isinstance(text, str):
            raise ArgumentTypeError(f"system prompt must be str, got {type(text).__name__}")
        clone = copy.copy(self)
        clone._system_prompt = text
        clone._versioning = True
        clone._prompt_file = None
        clone._assemble = AssembleMessages(text, versioning=True)
        return clone

    def with_conversation_scope(self, scope: Mapping[str, Any]) -> GraphLLM:
        """A shallow copy that files every conversation under ``scope`` (a request's tenant);
        a call's own ``scope=`` narrows it and may not contradict it."""
        clone = copy.copy(self)
        clone._memory = self._memory.scoped(scope)
        return clone

    def with_retriever(self, retriever: BaseRetriever | None) -> GraphLLM:
        """A shallow copy that retrieves from ``retriever`` (e.g. a per-request scoped view);
        shares the LLM, cache, tracker and system prompt."""
        clone = copy.copy(self)
        clone._retriever = retriever
        clone._context = RetrieveContext(retriever, self._rag_k) if retriever is not None else None
        return clone

    def __repr__(self) -> str:
        return (
            f"GraphLLM(provider={self.provider!r}, model={self.model!r}, "
            f"prompt_file={self._prompt_file!r}, rag={'on' if self._retriever else 'off'})"
        )
