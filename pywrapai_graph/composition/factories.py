"""The factories that build each object of the library from validated :class:`Settings`.

:data:`~pywrapai_graph.composition.object_graph.NODES` says which factory builds which object
from what; the container and :class:`~pywrapai_graph.composition.object_graph.ObjectGraph` are
derived from that table. This module imports no adapter and no driver: each factory imports
what it builds inside its body.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pywrapai_graph.application.fusion import fusion_weights
from pywrapai_graph.application.vector_retriever import VectorRetriever
from pywrapai_graph.composition.backends import build_store
from pywrapai_graph.composition.embedder import Embedder
from pywrapai_graph.composition.graph_llm import GraphLLM
from pywrapai_graph.composition.llm import LLM
from pywrapai_graph.composition.no_provider import NoProviderChatModel
from pywrapai_graph.errors import MissingExtraError
from pywrapai_graph.ports import BaseVectorStore, PromptSource
from pywrapai_graph.ports.conversation_store import ConversationStore
from pywrapai_graph.ports.hooks import Hooks
from pywrapai_graph.ports.run_store import RunStore

if TYPE_CHECKING:  # the agent and the chunker load only when a command builds them
    from pywrapai_graph.application.chunker import Chunker
    from pywrapai_graph.application.run_agent import Agent
    from pywrapai_graph.application.scoped_retriever import ScopedRetriever
    from pywrapai_graph.application.token_tracker import TokenTracker
    from pywrapai_graph.application.tools import ToolRegistry
    from pywrapai_graph.composition.reranker import RerankModel
    from pywrapai_graph.composition.settings import FallbackSettings, LLMSettings, Settings

__all__ = [
    "HookSet",
    "Track",
    "make_agent",
    "make_chunker",
    "make_embedder",
    "make_graph",
    "make_llm",
    "make_prompts",
    "make_reranker",
    "make_retriever",
    "make_run_store",
    "make_scoped_graph",
    "make_scoped_retriever",
    "make_tools",
    "make_vector_store",
]

HookSet = tuple[Hooks, ...]
#: Hands an opened object to its owner, which closes it on shutdown (returns it).
Track = Callable[[Any], Any]

_log = logging.getLogger(__name__)


def _secret(value: Any) -> str | None:
    return None if value is None else str(value.get_secret_value())


def _options(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def _connection(s: LLMSettings | FallbackSettings) -> dict[str, Any]:
    """The adapter options of a configured chat model (only those that are set)."""
    return _options(
        api_key=_secret(s.api_key),
        base_url=s.base_url,
        timeout=s.timeout,
        max_retries=s.max_retries,
        prompt_cache=s.prompt_cache,
        api=s.api,
        **s.endpoint_options(),
    )


def make_llm(settings: Settings, ledger: TokenTracker, hooks: HookSet) -> LLM | None:
    """The configured LLM, or None when no provider is configured."""
    s = settings.llm
    if s.provider is None:
        return None
    return LLM(
        provider=s.provider,
        model=s.model,
        system_prompt=s.system_prompt,
        tracker=ledger,
        hooks=hooks,
        generation=s.generation(),
        fallbacks=[
            {
                "provider": f.provider,
                **_options(model=f.model, limits=settings.limits.of(f.provider)),
                **_connection(f),
            }
            for f in s.fallbacks
        ],
        limits=settings.limits.of(s.provider),
        cache=None if s.cache is None else s.cache.cache(),
        **_connection(s),
    )


def make_embedder(settings: Settings, ledger: TokenTracker, hooks: HookSet) -> Embedder:
    """The configured embedder, booking into the container's one ledger.

    ``local`` without its packages falls back to ``hashing`` with a warning, so the bundled
    configuration still runs on an install without the ``[local]`` extra.
    """
    s = settings.embedder
    if s.provider == "local":
        try:
            return Embedder(
                provider="local",
                model=s.model,
                tracker=ledger,
                hooks=hooks,
                **_options(model_dir=s.model_dir, threads=s.threads),
            )
        except MissingExtraError as exc:
            _log.warning("%s; falling back to the lexical 'hashing' embedder", exc)
    if s.provider in ("local", "hashing"):  # local lands here only without its extra
        return Embedder(provider="hashing", dimension=s.dimension, tracker=ledger, hooks=hooks)
    return Embedder(
        provider=s.provider,
        model=s.model,
        tracker=ledger,
        hooks=hooks,
        limits=settings.limits.of(s.provider),
        **_options(api_key=_secret(s.api_key), base_url=s.base_url),
    )


def make_reranker(settings: Settings, ledger: TokenTracker, hooks: HookSet) -> RerankModel | None:
    """The reranker of ``retriever.reranker``, booking into the one ledger; None without one."""
    s = settings.retriever.reranker
    if s is None:
        return None
    from pywrapai_graph.composition.reranker import RerankModel

    # the section's other fields are RerankModel's options (threads: the local model's only)
    skip = {"provider", "model", "api_key"} | ({"threads"} if s.provider != "local" else set())
    options = s.model_dump(exclude=skip, exclude_none=True)
    return RerankModel(
        provider=s.provider,
        model=s.model,
        tracker=ledger,
        hooks=hooks,
        **_options(api_key=_secret(s.api_key)),
        **options,
    )


def make_vector_store(settings: Settings) -> BaseVectorStore:
    """The store ``store.backend`` names, built by its row in the backend table."""
    return build_store(settings.store)


def make_retriever(
    settings: Settings,
    embedder: Embedder,
    store: BaseVectorStore,
    hooks: HookSet,
    reranker: RerankModel | None = None,
) -> VectorRetriever:
    """The retriever of ``retriever.*`` over ``embedder`` and ``store`` (then ``reranker``)."""
    s = settings.retriever
    return VectorRetriever(
        embedder,
        store,
        k=s.k,
        min_score=s.min_score,
        mode=s.mode,
        k1=s.k1,
        b=s.b,
        fusion=s.fusion,
        rrf_k=s.rrf_k,
        weights=fusion_weights(s.fusion, s.dense_weight, s.lexical_weight),
        candidates=s.candidates,
        hooks=hooks,
        embed_concurrency=settings.embed_concurrency,
        reranker=reranker,
        rerank_candidates=s.rerank_candidates,
    )


def make_chunker(settings: Settings) -> Chunker:
    """The chunker of ``chunker.*``."""
    from pywrapai_graph.application.chunker import Chunker

    return Chunker(settings.chunker.chunk_size, settings.chunker.overlap)


def make_prompts(settings: Settings) -> PromptSource:
    from pywrapai_graph.adapters.prompts.filesystem import PromptRegistry

    return PromptRegistry(settings.prompts.dir)


def make_conversations(settings: Settings) -> ConversationStore | None:
    """The conversation store of ``conversations.store`` (None for ``none``)."""
    return settings.conversations.conversation_store()


def make_graph(
    settings: Settings,
    llm: LLM | None,
    retriever: VectorRetriever,
    prompts: PromptSource,
    ledger: TokenTracker,
    hooks: HookSet,
    conversations: ConversationStore | None,
) -> GraphLLM:
    """The GraphLLM; with no LLM configured, ``assemble`` works and calls explain what to set."""
    if llm is None:
        llm = LLM(provider=NoProviderChatModel(), tracker=ledger, hooks=hooks)
    return GraphLLM(
        llm=llm,
        enable_system_prompt_versioning=settings.prompts.file is not None,
        prompt_file=settings.prompts.file,
        retriever=retriever,
        rag_k=settings.rag_k,
        prompt_source=prompts,
        conversations=conversations,
        history_window=settings.conversations.history_window(llm.chat_model),
    )


def make_scoped_retriever(retriever: VectorRetriever, scope: Mapping[str, Any]) -> ScopedRetriever:
    """A per-request view of the retriever: reads filter by ``scope``, writes stamp it."""
    return retriever.scoped(scope)


def make_scoped_graph(
    graph: GraphLLM, retriever: VectorRetriever, scope: Mapping[str, Any]
) -> GraphLLM:
    """A per-request copy of the graph whose RAG reads only ``scope`` and whose
    conversations are ``scope``'s (shares LLM, cache and conversation store)."""
    return graph.with_retriever(retriever.scoped(scope)).with_conversation_scope(scope)


def make_tools(track: Track, settings: Settings, hooks: HookSet) -> ToolRegistry:
    """The tool registry the agent calls, holding the tools of every MCP server under
    ``mcp.servers`` (each opened here and handed to ``track``, which closes it on shutdown)."""
    from pywrapai_graph.application.tools import ToolRegistry

    registry = ToolRegistry(hooks=hooks)
    if settings.mcp.servers:
        from pywrapai_graph.composition.mcp_servers import mcp_servers

        opened: list[Any] = []
        try:
            for server in mcp_servers(settings.mcp):
                opened.append(track(server.open()))
                server.register(registry)
        except BaseException:
            for server in opened:  # now, not at shutdown: a retry opens them again
                server.close()
            raise
    return registry


def make_run_store(settings: Settings) -> RunStore | None:
    """The ``agent.run_store`` (None: ``none``)."""
    return settings.agent.run_store.store(settings.store.dsn)


def make_agent(
    settings: Settings,
    graph: GraphLLM,
    registry: ToolRegistry,
    hooks: HookSet,
    run_store: RunStore | None,
) -> Agent:
    """An agent over ``graph`` with the ``agent.*`` defaults and the ``agent.run_store``."""
    from pywrapai_graph.application.run_agent import Agent
    from pywrapai_graph.domain.agent import AgentConfig

    fields = settings.agent.model_dump(exclude={"run_store"})
    config = AgentConfig(**fields)  # the same fields, by name
    return Agent(graph=graph, registry=registry, config=config, hooks=hooks, run_store=run_store)
