"""CommandObjects: what one ``pywrapai-graph`` command needs, built on first use.

The command line builds its objects with the container's own factories
(:mod:`~pywrapai_graph.composition.factories`) and the same sharing (one ledger, one store,
one embedder per command), but without a dependency-injector container: importing
dependency-injector (and the web framework it probes for) costs more than answering
``ask`` on a large store. Library code keeps using
:func:`~pywrapai_graph.composition.container.build_container`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from pywrapai_graph.application.token_tracker import TokenTracker
from pywrapai_graph.composition.factories import (
    HookSet,
    make_chunker,
    make_embedder,
    make_graph,
    make_llm,
    make_prompts,
    make_reranker,
    make_retriever,
    make_vector_store,
)

if TYPE_CHECKING:
    from pywrapai_graph.application.chunker import Chunker
    from pywrapai_graph.application.vector_retriever import VectorRetriever
    from pywrapai_graph.composition.embedder import Embedder
    from pywrapai_graph.composition.graph_llm import GraphLLM
    from pywrapai_graph.composition.llm import LLM
    from pywrapai_graph.composition.reranker import RerankModel
    from pywrapai_graph.composition.settings import Settings
    from pywrapai_graph.ports import BaseVectorStore, PromptSource

__all__ = ["CommandObjects"]

T = TypeVar("T")


class CommandObjects:
    """The objects of one command, each built once, when first asked for.

    The methods mirror the container's providers (``settings()``, ``vector_store()``,
    ``graph()``...) and build in the same order, so a command reads and fails the same either
    way.

    Args:
        settings: the validated configuration.
    """

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._built: dict[str, Any] = {}

    def _once(self, name: str, build: Callable[[], T]) -> T:
        if name not in self._built:  # None (no LLM) is built too
            self._built[name] = build()
        return cast(T, self._built[name])

    def settings(self) -> Settings:
        """The validated configuration."""
        return self._settings

    def hooks(self) -> HookSet:
        """The command line registers no observability hooks."""
        return ()

    def ledger(self) -> TokenTracker:
        """The one cost ledger of the command's chat and embedding calls."""
        return self._once("ledger", TokenTracker)

    def llm(self) -> LLM | None:
        """The configured LLM, or None when no provider is configured."""
        return self._once("llm", lambda: make_llm(self._settings, self.ledger(), self.hooks()))

    def embedder(self) -> Embedder:
        """The configured embedder."""
        return self._once(
            "embedder", lambda: make_embedder(self._settings, self.ledger(), self.hooks())
        )

    def vector_store(self) -> BaseVectorStore:
        """The configured store (opened on first use)."""
        return self._once("vector_store", lambda: make_vector_store(self._settings))

    def chunker(self) -> Chunker:
        """The configured chunker."""
        return self._once("chunker", lambda: make_chunker(self._settings))

    def reranker(self) -> RerankModel | None:
        """The configured reranker, or None when none is configured."""
        return self._once(
            "reranker", lambda: make_reranker(self._settings, self.ledger(), self.hooks())
        )

    def retriever(self) -> VectorRetriever:
        """The retriever over :meth:`embedder` and :meth:`vector_store` (and :meth:`reranker`)."""
        return self._once(
            "retriever",
            lambda: make_retriever(
                self._settings,
                self.embedder(),
                self.vector_store(),
                self.hooks(),
                self.reranker(),
            ),
        )

    def prompts(self) -> PromptSource:
        """The prompt registry of ``prompts.dir``."""
        return self._once("prompts", lambda: make_prompts(self._settings))

    def graph(self) -> GraphLLM:
        """The GraphLLM over :meth:`llm`, :meth:`retriever` and :meth:`prompts`."""
        return self._once(
            "graph",
            lambda: make_graph(
                self._settings,
                self.llm(),
                self.retriever(),
                self.prompts(),
                self.ledger(),
                self.hooks(),
            ),
        )
