"""One object graph, two views: the container and ObjectGraph expose the same names, built by
the same factory functions from the same dependencies, each shared object once."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from dependency_injector import providers

from pywrapai_graph.application.scoped_retriever import ScopedRetriever
from pywrapai_graph.composition import backends
from pywrapai_graph.composition.backends import BackendEntry
from pywrapai_graph.composition.container import Container, SharedOnce, build_container
from pywrapai_graph.composition.object_graph import NODES, ROOTS, ObjectGraph
from pywrapai_graph.composition.settings import load_settings
from tests.unit.test_container_threads import CountingStores


def _factory_of(provider: providers.Provider[Any]) -> tuple[Any, tuple[Any, ...]]:
    """The user factory a generated provider calls, and the providers it passes to it."""
    assert isinstance(provider, providers.Factory | SharedOnce)
    args = tuple(provider.args)
    if (
        getattr(provider.provides, "__name__", "") == "_tracked"
    ):  # closed at shutdown: (_built, factory, *needs)
        return args[1], args[2:]
    return provider.provides, args


def test_the_container_has_a_provider_for_every_node_and_nothing_else() -> None:
    generated = {name for name in Container.providers if not name.startswith("_")}
    assert generated == set(NODES) | set(ROOTS)


@pytest.mark.parametrize("name", list(NODES))
def test_each_container_provider_calls_the_nodes_factory_with_its_needs(name: str) -> None:
    node = NODES[name]
    provider = Container.providers[name]
    factory, args = _factory_of(provider)
    assert factory is node.factory
    if node.tracks:  # first: the container's list of what to close on shutdown
        args = args[1:]
    assert args == tuple(Container.providers[need] for need in node.needs)
    assert isinstance(provider, SharedOnce) is not node.per_call


@pytest.mark.parametrize("name", list(NODES) + list(ROOTS))
def test_object_graph_has_an_accessor_for_every_name(name: str) -> None:
    assert callable(getattr(ObjectGraph, name))


def test_every_need_is_a_root_or_an_earlier_node() -> None:
    seen = set(ROOTS)
    for name, node in NODES.items():
        assert set(node.needs) <= seen, name
        seen.add(name)


def test_both_views_wire_the_same_objects_the_same_way() -> None:
    settings = load_settings({"store": {"backend": "memory", "dimension": 8}})
    graph = ObjectGraph(settings)
    container = build_container(settings)
    for view in (graph, container):
        retriever = view.retriever()
        assert retriever.store is view.vector_store()
        assert retriever.embedder is view.embedder()
        assert view.graph().retriever is retriever
        assert view.embedder().tokens is view.ledger()
        assert view.llm() is None
        assert view.agent().registry is view.tools()
        scoped = view.scoped_retriever({"tenant": "acme"})
        assert isinstance(scoped, ScopedRetriever)
        assert scoped.inner is retriever
    assert type(graph.vector_store()) is type(container.vector_store())
    assert graph.vector_store() is not container.vector_store()
    container.shutdown()


def test_a_cold_object_graph_builds_each_shared_object_once_under_a_burst(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stores = CountingStores()
    monkeypatch.setitem(backends._BACKENDS, "counting", BackendEntry("counting", stores.build))
    graph = ObjectGraph(load_settings({"store": {"backend": "counting", "dimension": 8}}))
    barrier = threading.Barrier(32)
    got: list[Any] = []

    def ask() -> None:
        barrier.wait()
        got.append((graph.retriever(), graph.vector_store(), graph.embedder()))

    threads = [threading.Thread(target=ask) for _ in range(32)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(stores.built) == 1
    assert len({tuple(map(id, objects)) for objects in got}) == 1


def test_an_unknown_name_is_a_key_error() -> None:
    graph = ObjectGraph(load_settings({"store": {"backend": "memory", "dimension": 8}}))
    with pytest.raises(KeyError):
        graph.get("nothing")
