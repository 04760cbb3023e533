"""examples/fastapi_service.py driven through an ASGI client over the OpenAI wire server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("fastapi")

from examples.fastapi_service import create_app
from pywrapai_graph.testing import ScriptedReply
from pywrapai_graph.testing.wire import OpenAIWire

DOCS = {
    "acme": [{"id": "refunds", "text": "Acme refunds take 14 days.", "metadata": {"kind": "p"}}],
    "globex": [{"id": "refunds", "text": "Globex refunds take 30 days."}],
}


def sse(text: str) -> list[tuple[str, Any]]:
    events = []
    for block in text.strip().split("\n\n"):
        name, data = "message", ""
        for line in block.splitlines():
            if line.startswith("event: "):
                name = line[len("event: ") :]
            elif line.startswith("data: "):
                data = line[len("data: ") :]
        events.append((name, json.loads(data)))
    return events


async def test_ingest_ask_and_stream_per_tenant() -> None:
    with OpenAIWire() as wire:
        remote = {"provider": "openai", "api_key": "k", "base_url": wire.base_url}
        app = create_app({"llm": remote, "embedder": remote, "store": {"backend": "memory"}})
        transport = httpx.ASGITransport(app=app)
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(transport=transport, base_url="http://service") as client,
        ):
            for tenant, docs in DOCS.items():
                r = await client.post(
                    "/ingest", json={"documents": docs}, headers={"X-Tenant": tenant}
                )
                assert r.status_code == 200, r.text
                assert r.json() == {"documents": 1, "chunks": 1}

            wire.reply(ScriptedReply("14 days."))
            r = await client.post(
                "/ask",
                json={"question": "How long do refunds take?", "max_tokens": 50},
                headers={"X-Tenant": "acme"},
            )
            assert r.status_code == 200, r.text
            body = r.json()
            assert body["answer"] == "14 days."
            assert [s["metadata"]["tenant"] for s in body["sources"]] == ["acme"]
            assert body["sources"][0]["text"] == "Acme refunds take 14 days."
            sent = list(wire.chat_requests())[-1].json
            assert sent["max_completion_tokens"] == 50
            prompt = sent["messages"][-1]["content"]
            assert "Acme refunds" in prompt and "Globex" not in prompt

            wire.reply(ScriptedReply("Thirty days, for Globex."))
            r = await client.post(
                "/ask/stream",
                json={"question": "How long do refunds take?"},
                headers={"X-Tenant": "globex"},
            )
            assert r.status_code == 200
            assert r.headers["content-type"].startswith("text/event-stream")
            events = sse(r.text)
            text = "".join(data["text"] for name, data in events if name == "message")
            assert text == "Thirty days, for Globex."
            name, done = events[-1]
            assert name == "done" and done["answer"] == text
            assert [s["doc_id"] for s in done["sources"]] == ['{"tenant":"globex"}/refunds']
            assert done["usage"]["output_tokens"] > 0

            llm = app.state.container.llm()
            r = await client.post("/ask", json={"question": "hi"})
            assert r.status_code == 422  # no tenant, no answer
            r = await client.post("/ask", json={"question": "hi"}, headers={"X-Tenant": "a b"})
            assert r.status_code == 422
        assert len(wire.requests) == 6  # 2 ingests, 2 query embeddings, 2 chats
        assert llm.chat_model._client.is_closed()  # shut down with the app


async def test_a_cold_burst_right_after_start_builds_one_store_and_one_llm(
    tmp_path: Path,
) -> None:
    burst = 32
    with OpenAIWire() as wire:
        wire.reply(*[ScriptedReply(f"answer {i}") for i in range(burst)])
        remote = {"provider": "openai", "api_key": "k", "base_url": wire.base_url}
        store = {"backend": "sqlite", "path": str(tmp_path / "burst.db")}
        app = create_app({"llm": remote, "embedder": remote, "store": store})
        transport = httpx.ASGITransport(app=app)
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(transport=transport, base_url="http://service") as client,
        ):
            container = app.state.container
            built = list(container._built()._items)  # what startup built, before any request
            wire.hold("chat", until=8)  # released when 8 chats are open at once
            asks = [
                client.post("/ask", json={"question": f"q{i}"}, headers={"X-Tenant": f"t{i % 4}"})
                for i in range(burst)
            ]
            ingests = [
                client.post("/ingest", json={"documents": docs}, headers={"X-Tenant": tenant})
                for tenant, docs in DOCS.items()
            ]
            replies = await asyncio.gather(*asks, *ingests)
            assert [r.status_code for r in replies] == [200] * len(replies), replies[0].text
            answers = sorted(r.json()["answer"] for r in replies[:burst])
            assert answers == sorted(f"answer {i}" for i in range(burst))
            assert wire.peak_in_flight["chat"] >= 8  # the requests really overlapped
            # the burst built nothing more: one store, one embedder, one LLM, from startup
            assert [type(o).__name__ for o in built] == ["LLM", "Embedder", "SQLiteVectorStore"]
            assert container._built()._items == built
