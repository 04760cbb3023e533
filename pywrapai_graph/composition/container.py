"""The composition root for library users: a dependency-injector container over the object graph.

Swapping SQLite for pgvector or Qdrant is a configuration change only::

    container = build_container({"store": {"backend": "pgvector",
                                           "dsn": "postgresql://...", "dimension": 384}})
    store = container.vector_store()

Heavy adapters are built by small factory functions that import inside their body, so a
backend's driver loads only when that backend is selected.

Every shared object is built exactly once, however many threads and event-loop tasks ask for
it at once on a cold container: the providers are :class:`SharedOnce` (dependency-injector's
``ThreadSafeSingleton`` with a lock of our own), and ``shutdown()`` waits for a build under
way before it closes what was built.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from dependency_injector import containers, providers

from pywrapai_graph.application.observability.telemetry import check_hooks
from pywrapai_graph.composition.object_graph import NODES, Node
from pywrapai_graph.composition.settings import Settings, Source, load_settings
from pywrapai_graph.ports.hooks import Hooks

if TYPE_CHECKING:
    from pywrapai_graph.application.chunker import Chunker
    from pywrapai_graph.application.run_agent import Agent
    from pywrapai_graph.application.scoped_retriever import ScopedRetriever
    from pywrapai_graph.application.token_tracker import TokenTracker
    from pywrapai_graph.application.tools import ToolRegistry
    from pywrapai_graph.application.vector_retriever import VectorRetriever
    from pywrapai_graph.composition.embedder import Embedder
    from pywrapai_graph.composition.graph_llm import GraphLLM
    from pywrapai_graph.composition.llm import LLM
    from pywrapai_graph.composition.reranker import RerankModel
    from pywrapai_graph.ports import BaseVectorStore, PromptSource
    from pywrapai_graph.ports.conversation_store import ConversationStore
    from pywrapai_graph.ports.run_store import RunStore

T = TypeVar("T")

__all__ = ["Container", "LifecycleContainer", "PerRequest", "SharedOnce", "build_container"]


class SharedOnce(providers.ThreadSafeSingleton[T]):
    """A provider whose object is built once, whoever asks first, in whatever thread.

    A plain ``providers.Singleton`` lets two threads that find it empty both call the factory
    (two stores, two pools, two LLMs). Every ``SharedOnce`` of every container builds under
    this one reentrant lock (a build resolves its dependencies inside it, so one lock cannot
    deadlock); once built, reads take no lock. Tasks of an event loop build synchronously:
    no task switch happens inside a build.
    """

    storage_lock = threading.RLock()


class PerRequest(providers.Factory[T]):
    """A per-request provider: ``container.scoped_graph(scope={"tenant": "acme"})``.

    ``providers.Factory`` takes ``**kwargs: Any``, so a misspelt ``scopes=`` passed
    ``mypy --strict`` and failed only at run time inside the factory. This call names its
    one argument: a misspelling is a type error, and a ``TypeError`` naming it at run time.
    """

    # narrower than Factory's (*args, **kwargs) on purpose: that is the point of the class
    def __call__(self, scope: Mapping[str, Any]) -> T:  # type: ignore[override]
        return super().__call__(scope)


# ---------------------------------------------------------------------------- lifecycle
class _Built:
    """What a container built that holds connections, in the order it was built."""

    def __init__(self) -> None:
        self._items: list[Any] = []
        self._lock = threading.Lock()

    def add(self, item: T) -> T:
        if item is not None:  # no LLM configured
            with self._lock:
                self._items.append(item)
        return item

    def take(self) -> list[Any]:
        """Everything built so far, newest first, and forget it."""
        with self._lock:
            items, self._items = self._items[::-1], []
        return items


def _tracked(built: _Built, factory: Callable[..., T], *args: Any) -> T:
    return built.add(factory(*args))


class LifecycleContainer(containers.DynamicContainer):
    """The container instance: providers, plus closing what they built.

    ``shutdown()`` closes every store and client the container built (sync connections);
    ``await ashutdown()`` also closes the async clients of the running loop. Both forget the
    built objects, so the container builds fresh ones if used again. Use it as a context
    manager (``with`` / ``async with``) to shut down on exit.
    """

    _built: SharedOnce[_Built]

    def shutdown(self) -> None:
        """Close every store and client this container built, then forget them.

        A build under way in another thread finishes first and is closed with the rest; a
        build asked for afterwards makes fresh objects (closed by the next shutdown).
        """
        for item in self._take():
            item.close()

    async def ashutdown(self) -> None:
        """:meth:`shutdown`, closing the running loop's async clients first."""
        for item in self._take():
            aclose = getattr(item, "aclose", None)
            if aclose is not None:
                await aclose()
            item.close()

    def _take(self) -> list[Any]:
        """What was built, newest first; the providers forget it in the same step."""
        with SharedOnce.storage_lock:  # no build is half done while we hold it
            items = self._built().take()
            for provider in self.traverse(types=[SharedOnce]):
                if provider is not self._built:
                    provider.reset()
        return items

    def __enter__(self) -> LifecycleContainer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    async def __aenter__(self) -> LifecycleContainer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.ashutdown()


# ---------------------------------------------------------------------------- container
class Container(containers.DeclarativeContainer):
    """Every object of the library, built on first use from validated settings.

    Its providers are generated from :data:`~pywrapai_graph.composition.object_graph.NODES`
    (shared nodes are :class:`SharedOnce`, per-call nodes ``Factory``), so the container and
    :class:`~pywrapai_graph.composition.object_graph.ObjectGraph` wire the same objects with the
    same factories. The instance is a :class:`LifecycleContainer`: ``container.shutdown()`` (or
    ``with build_container(...) as container:``) closes every store and client it built.
    """

    instance_type = LifecycleContainer

    settings = providers.Dependency(instance_of=Settings)
    #: Observability hooks given to every object the container builds.
    hooks = providers.Dependency(instance_of=tuple, default=())
    _built = SharedOnce(_Built)

    if TYPE_CHECKING:  # generated below from NODES; these tell mypy what they provide
        ledger: SharedOnce[TokenTracker]
        llm: SharedOnce[LLM | None]
        embedder: SharedOnce[Embedder]
        vector_store: SharedOnce[BaseVectorStore]
        chunker: SharedOnce[Chunker]
        reranker: SharedOnce[RerankModel | None]
        retriever: SharedOnce[VectorRetriever]
        prompts: SharedOnce[PromptSource]
        conversations: SharedOnce[ConversationStore | None]
        graph: SharedOnce[GraphLLM]
        tools: SharedOnce[ToolRegistry]
        run_store: SharedOnce[RunStore | None]
        agent: providers.Factory[Agent]
        # per request: container.scoped_retriever(scope={"tenant": "acme"}), likewise scoped_graph
        scoped_retriever: PerRequest[ScopedRetriever]
        scoped_graph: PerRequest[GraphLLM]

        # the instance is a LifecycleContainer
        def shutdown(self) -> None: ...
        async def ashutdown(self) -> None: ...
        def __enter__(self) -> Container: ...
        def __exit__(self, *exc: object) -> None: ...
        async def __aenter__(self) -> Container: ...
        async def __aexit__(self, *exc: object) -> None: ...


def _provider(node: Node) -> providers.Provider[Any]:
    needs = [getattr(Container, need) for need in node.needs]
    if node.tracks:  # the factory hands what it opens to the container's list of built things
        needs.insert(0, Container._built.provided.add)
    if node.scoped:
        return PerRequest(node.factory, *needs)
    if node.per_call:
        return providers.Factory(node.factory, *needs)
    if node.closes:
        return SharedOnce(_tracked, Container._built, node.factory, *needs)
    return SharedOnce(node.factory, *needs)


for _name, _node in NODES.items():  # in table order: what a node needs is already there
    setattr(Container, _name, _provider(_node))


def build_container(
    source: Source | Sequence[Source] | Settings | None = None,
    *,
    hooks: Sequence[Hooks] | None = None,
) -> Container:
    """A container from a dict, a YAML file, layers of them, settings, or (None) the environment.

    Args:
        source: the configuration.
        hooks: observability hooks registered on every object the container builds.

    Raises:
        ConfigurationError: the configuration is invalid (every offending key is named).
        TypeError: a hook is not a ``Hooks`` instance.
    """
    settings = source if isinstance(source, Settings) else load_settings(source)
    return Container(settings=settings, hooks=check_hooks(hooks))
