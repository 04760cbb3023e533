"""The library's object graph: every object, the factory that builds it and what it needs.

This table is the one source of truth for how the library's objects are wired. Two views are
derived from it and nothing else:

- :class:`ObjectGraph` builds lazily, each shared object once, without importing
  dependency-injector (whose import costs most of an ``ask``); the command line uses it;
- :class:`~pywrapai_graph.composition.container.Container`, the dependency-injector container
  library users get from :func:`~pywrapai_graph.composition.container.build_container`, whose
  providers are generated from :data:`NODES`.

Adding an object means one row here (and its typed accessor, checked by
``tests/unit/test_object_graph.py`` to match the table).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from pywrapai_graph.application.token_tracker import TokenTracker
from pywrapai_graph.composition.factories import (
    HookSet,
    make_agent,
    make_chunker,
    make_conversations,
    make_embedder,
    make_graph,
    make_llm,
    make_prompts,
    make_reranker,
    make_retriever,
    make_run_store,
    make_scoped_graph,
    make_scoped_retriever,
    make_tools,
    make_vector_store,
)

if TYPE_CHECKING:
    from pywrapai_graph.application.chunker import Chunker
    from pywrapai_graph.application.run_agent import Agent
    from pywrapai_graph.application.scoped_retriever import ScopedRetriever
    from pywrapai_graph.application.tools import ToolRegistry
    from pywrapai_graph.application.vector_retriever import VectorRetriever
    from pywrapai_graph.composition.embedder import Embedder
    from pywrapai_graph.composition.graph_llm import GraphLLM
    from pywrapai_graph.composition.llm import LLM
    from pywrapai_graph.composition.reranker import RerankModel
    from pywrapai_graph.composition.settings import Settings
    from pywrapai_graph.ports import BaseVectorStore, PromptSource
    from pywrapai_graph.ports.conversation_store import ConversationStore
    from pywrapai_graph.ports.run_store import RunStore

__all__ = ["NODES", "ROOTS", "Node", "ObjectGraph"]

#: The inputs every graph is given rather than builds.
ROOTS = ("settings", "hooks")


@dataclass(frozen=True)
class Node:
    """One object of the graph.

    Attributes:
        factory: builds it from the objects named in ``needs``, in that order.
        needs: the roots and other nodes it is built from (each listed before it).
        closes: it holds connections; the container closes it on shutdown.
        per_call: built anew on every call (with the caller's extra arguments) instead of once.
        scoped: per call, built for the one argument ``scope`` (the container's provider
            names it, so a misspelt keyword is a type error).
        tracks: the factory opens things of its own (MCP sessions): its first argument is a
            ``track`` callable that hands each to the owner, who closes them on shutdown.
    """

    factory: Callable[..., Any]
    needs: tuple[str, ...] = ()
    closes: bool = False
    per_call: bool = False
    scoped: bool = False
    tracks: bool = False


NODES: Mapping[str, Node] = {
    # One cost ledger for every chat, embedding and agent call.
    "ledger": Node(TokenTracker),
    "llm": Node(make_llm, ("settings", "ledger", "hooks"), closes=True),
    "embedder": Node(make_embedder, ("settings", "ledger", "hooks"), closes=True),
    # The backend is looked up in the table when first used, so a backend registered with
    # register_backend() after import is selectable like the built-in ones.
    "vector_store": Node(make_vector_store, ("settings",), closes=True),
    "chunker": Node(make_chunker, ("settings",)),
    # ``retriever.reranker`` (None when not configured)
    "reranker": Node(make_reranker, ("settings", "ledger", "hooks"), closes=True),
    "retriever": Node(
        make_retriever, ("settings", "embedder", "vector_store", "hooks", "reranker")
    ),
    "prompts": Node(make_prompts, ("settings",)),
    # ``conversations.store`` (None for none)
    "conversations": Node(make_conversations, ("settings",), closes=True),
    "graph": Node(
        make_graph,
        ("settings", "llm", "retriever", "prompts", "ledger", "hooks", "conversations"),
    ),
    "tools": Node(make_tools, ("settings", "hooks"), tracks=True),
    # ``agent.run_store`` (None when ``none``), shared by every agent the container builds
    "run_store": Node(make_run_store, ("settings",), closes=True),
    "agent": Node(make_agent, ("settings", "graph", "tools", "hooks", "run_store"), per_call=True),
    # per request: scoped_retriever(scope={"tenant": "acme"}), likewise scoped_graph
    "scoped_retriever": Node(make_scoped_retriever, ("retriever",), per_call=True, scoped=True),
    "scoped_graph": Node(make_scoped_graph, ("graph", "retriever"), per_call=True, scoped=True),
}


class ObjectGraph:
    """The objects of :data:`NODES`, each shared one built once, when first asked for.

    Thread-safe: threads that ask at once for an object nobody built yet get one object (the
    builds run under one reentrant lock; a build resolves what it needs inside it). The
    accessors are named and ordered as the container's providers, so a command reads and
    fails the same either way.

    Args:
        settings: the validated configuration.
        hooks: observability hooks given to every object built.
    """

    def __init__(self, settings: Settings, hooks: HookSet = ()) -> None:
        self._roots: dict[str, Any] = {"settings": settings, "hooks": hooks}
        self._built: dict[str, Any] = {}
        self._opened: list[Any] = []  # what factories handed to ``track``, to close
        self._lock = threading.RLock()

    def get(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """The object ``name`` (built on first use; a per-call node with ``args``/``kwargs``).

        Raises:
            KeyError: no node or root has that name.
        """
        if name in self._roots:
            return self._roots[name]
        node = NODES[name]
        if node.per_call:
            return node.factory(*self._needs(node), *args, **kwargs)
        try:
            return self._built[name]  # None (no LLM configured) is a built value too
        except KeyError:
            pass
        with self._lock:
            if name not in self._built:
                front = (self._track,) if node.tracks else ()
                self._built[name] = node.factory(*front, *self._needs(node))
            return self._built[name]

    def _needs(self, node: Node) -> list[Any]:
        return [self.get(need) for need in node.needs]

    def _track(self, opened: Any) -> Any:
        with self._lock:
            self._opened.append(opened)
        return opened

    def close(self) -> None:
        """Close what the factories opened of their own (MCP sessions), newest first."""
        with self._lock:
            opened, self._opened = self._opened[::-1], []
        for item in opened:
            item.close()

    def settings(self) -> Settings:
        """The validated configuration."""
        return cast("Settings", self.get("settings"))

    def hooks(self) -> HookSet:
        """The observability hooks (the command line registers none)."""
        return cast("HookSet", self.get("hooks"))

    def ledger(self) -> TokenTracker:
        """The one cost ledger of every chat and embedding call."""
        return cast(TokenTracker, self.get("ledger"))

    def llm(self) -> LLM | None:
        """The configured LLM, or None when no provider is configured."""
        return cast("LLM | None", self.get("llm"))

    def embedder(self) -> Embedder:
        """The configured embedder."""
        return cast("Embedder", self.get("embedder"))

    def vector_store(self) -> BaseVectorStore:
        """The configured store (opened on first use)."""
        return cast("BaseVectorStore", self.get("vector_store"))

    def chunker(self) -> Chunker:
        """The configured chunker."""
        return cast("Chunker", self.get("chunker"))

    def reranker(self) -> RerankModel | None:
        """The configured reranker, or None when none is configured."""
        return cast("RerankModel | None", self.get("reranker"))

    def retriever(self) -> VectorRetriever:
        """The retriever over :meth:`embedder` and :meth:`vector_store`."""
        return cast("VectorRetriever", self.get("retriever"))

    def prompts(self) -> PromptSource:
        """The prompt registry of ``prompts.dir``."""
        return cast("PromptSource", self.get("prompts"))

    def conversations(self) -> ConversationStore | None:
        """The conversation store of ``conversations.store``, or None."""
        return cast("ConversationStore | None", self.get("conversations"))

    def graph(self) -> GraphLLM:
        """The GraphLLM over :meth:`llm`, :meth:`retriever` and :meth:`prompts`."""
        return cast("GraphLLM", self.get("graph"))

    def tools(self) -> ToolRegistry:
        """The tool registry the agent calls."""
        return cast("ToolRegistry", self.get("tools"))

    def run_store(self) -> RunStore | None:
        """The ``agent.run_store``, or None when it is ``none``."""
        return cast("RunStore | None", self.get("run_store"))

    def agent(self) -> Agent:
        """A new agent over :meth:`graph` and :meth:`tools` with the ``agent.*`` defaults."""
        return cast("Agent", self.get("agent"))

    def scoped_retriever(self, scope: Mapping[str, Any]) -> ScopedRetriever:
        """A per-request view of :meth:`retriever`: reads filter by ``scope``, writes stamp it."""
        return cast("ScopedRetriever", self.get("scoped_retriever", scope))

    def scoped_graph(self, scope: Mapping[str, Any]) -> GraphLLM:
        """A per-request copy of :meth:`graph` whose RAG reads only ``scope``."""
        return cast("GraphLLM", self.get("scoped_graph", scope))
