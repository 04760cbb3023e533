"""container.shutdown() and the context managers close everything the container built."""

from __future__ import annotations

from pathlib import Path

import pytest

from pywrapai_graph.adapters.llm.openai import OpenAIChatModel
from pywrapai_graph.composition.container import build_container
from pywrapai_graph.composition.embedder import Embedder
from pywrapai_graph.composition.llm import LLM
from pywrapai_graph.testing.wire import OpenAIWire


def config(wire: OpenAIWire, tmp_path: Path) -> dict[str, object]:
    remote = {"provider": "openai", "api_key": "k", "base_url": wire.base_url}
    return {
        "llm": remote,
        "embedder": remote,
        "store": {"backend": "sqlite", "path": str(tmp_path / "s.db")},
    }


def sync_client_closed(obj: LLM | Embedder) -> bool:
    if isinstance(obj, LLM):
        return bool(obj.chat_model._client.is_closed())  # type: ignore[attr-defined]
    return bool(obj._adapter._client.is_closed())  # type: ignore[attr-defined]


def test_shutdown_closes_stores_and_clients_and_forgets_them(tmp_path: Path) -> None:
    with OpenAIWire() as wire:
        wire.reply("hi")
        with build_container(config(wire, tmp_path)) as container:
            llm, embedder, store = container.llm(), container.embedder(), container.vector_store()
            assert llm is not None
            container.graph().chat("hello")
            assert not sync_client_closed(llm)
        assert sync_client_closed(llm) and sync_client_closed(embedder)
        with pytest.raises(Exception, match="closed"):
            len(store)
        # a used-again container builds fresh objects
        assert container.vector_store() is not store
        assert len(container.vector_store()) >= 0
        container.shutdown()


async def test_async_shutdown_closes_the_loops_async_clients(tmp_path: Path) -> None:
    with OpenAIWire() as wire:
        wire.reply("hi")
        async with build_container(config(wire, tmp_path)) as container:
            response = await container.graph().achat("hello")
            llm, embedder = container.llm(), container.embedder()
            assert llm is not None and response.content == "hi"
            assert isinstance(llm.chat_model, OpenAIChatModel)
            clients = llm.chat_model._aclients
            assert len(clients) == 1
        assert len(clients) == 0  # the async client of this loop was closed
        assert sync_client_closed(llm) and sync_client_closed(embedder)
