"""GraphLLM's structured-output calls: its prompt, history and RAG assembly, then
:meth:`LLM.chat_structured` (retries, native or forced-tool mode)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar, Unpack

from pywrapai_graph.domain import GenerationOptions, Message, ScoredChunk
from pywrapai_graph.domain.request import StructuredMode
from pywrapai_graph.ports import MetadataFilter

if TYPE_CHECKING:
    from pydantic import BaseModel

    from pywrapai_graph.composition.llm import LLM

__all__ = ["StructuredCalls"]

M = TypeVar("M", bound="BaseModel")


class StructuredCalls:
    """The ``chat_structured`` / ``achat_structured`` of :class:`GraphLLM`."""

    _llm: LLM
    _prompt_file: str | None

    if TYPE_CHECKING:  # GraphLLM's own

        def assemble(
            self,
            input: str | Sequence[Message],
            history: Sequence[Message] | None = None,
            rag: bool = True,
            *,
            filter: MetadataFilter | None = None,
            rag_k: int | None = None,
        ) -> tuple[list[Message], list[ScoredChunk]]: ...

        async def aassemble(
            self,
            input: str | Sequence[Message],
            history: Sequence[Message] | None = None,
            rag: bool = True,
            *,
            filter: MetadataFilter | None = None,
            rag_k: int | None = None,
        ) -> tuple[list[Message], list[ScoredChunk]]: ...

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
