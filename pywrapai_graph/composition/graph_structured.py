"""GraphLLM's message assembly (prompt, history, RAG context) and its structured-output calls:
that assembly, then :meth:`LLM.chat_structured` (retries, native or forced-tool mode)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar, Unpack

from pywrapai_graph.domain import GenerationOptions, Message, ScoredChunk
from pywrapai_graph.domain.request import StructuredMode
from pywrapai_graph.ports import MetadataFilter

if TYPE_CHECKING:
    from pydantic import BaseModel

    from pywrapai_graph.application.assemble_messages import AssembleMessages
    from pywrapai_graph.application.retrieve_context import RetrieveContext
    from pywrapai_graph.composition.llm import LLM

__all__ = ["StructuredCalls"]

M = TypeVar("M", bound="BaseModel")


class StructuredCalls:
    """The ``assemble`` / ``aassemble`` and ``chat_structured`` / ``achat_structured`` of
    :class:`GraphLLM`."""

    _llm: LLM
    _prompt_file: str | None
    _assemble: AssembleMessages
    _context: RetrieveContext | None

    def assemble(
        self,
        input: str | Sequence[Message],
        history: Sequence[Message] | None = None,
        rag: bool = True,
        *,
        filter: MetadataFilter | None = None,
        rag_k: int | None = None,
    ) -> tuple[list[Message], list[ScoredChunk]]:
        """The exact message list the LLM would receive, and the chunks injected into it.

        The caller's ``input`` and ``history`` are never modified (D5: save the original).
        ``filter`` restricts retrieval to chunks with that metadata; ``rag_k`` overrides the
        number of chunks for this call.
        """
        head, current = self._assemble.split(input, history)
        if not rag or self._context is None:
            return head + current, []
        augmented, hits = self._context.run(current, k=rag_k, filter=filter)
        return head + augmented, hits

    async def aassemble(
        self,
        input: str | Sequence[Message],
        history: Sequence[Message] | None = None,
        rag: bool = True,
        *,
        filter: MetadataFilter | None = None,
        rag_k: int | None = None,
    ) -> tuple[list[Message], list[ScoredChunk]]:
        """Async :meth:`assemble`: retrieval runs without blocking the event loop."""
        head, current = self._assemble.split(input, history)
        if not rag or self._context is None:
            return head + current, []
        augmented, hits = await self._context.arun(current, k=rag_k, filter=filter)
        return head + augmented, hits

    def chat_structured(
        self,
        input: str | Sequence[Message],
        schema: type[M],
        history: Sequence[Message] | None = None,
        rag: bool = True,
        *,
        filter: MetadataFilter | None = None,
        rag_k: int | None = None,
        retries: int = 1,
        mode: StructuredMode = "auto",
        extra: Mapping[str, object] | None = None,
        **generation: Unpack[GenerationOptions],
    ) -> M:
        """:meth:`LLM.chat_structured` (``retries``, ``mode``) with prompt, history and RAG
        assembly."""
        messages, _ = self.assemble(input, history, rag, filter=filter, rag_k=rag_k)
        return self._llm.chat_structured(
            messages,
            schema,
            retries=retries,
            mode=mode,
            extra=extra,
            prompt_file=self._prompt_file,
            **generation,
        )

    async def achat_structured(
        self,
        input: str | Sequence[Message],
        schema: type[M],
        history: Sequence[Message] | None = None,
        rag: bool = True,
        *,
        filter: MetadataFilter | None = None,
        rag_k: int | None = None,
        retries: int = 1,
        mode: StructuredMode = "auto",
        extra: Mapping[str, object] | None = None,
        **generation: Unpack[GenerationOptions],
    ) -> M:
        """Async :meth:`chat_structured`."""
        messages, _ = await self.aassemble(input, history, rag, filter=filter, rag_k=rag_k)
        return await self._llm.achat_structured(
            messages,
            schema,
            retries=retries,
            mode=mode,
            extra=extra,
            prompt_file=self._prompt_file,
            **generation,
        )
