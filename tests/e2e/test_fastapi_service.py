"""examples/fastapi_service.py driven through an ASGI client over the OpenAI wire server."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
from collections.abc import Callable
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


# ----------------------------------------------------------------- errors over HTTP


class Service:
    """The app over the OpenAI wire server (chat) and the offline hashing embedder."""

    def __init__(self, wire: OpenAIWire, store: dict[str, Any], **app: Any) -> None:
        llm = {
            "provider": "openai",
            "api_key": "k",
            "base_url": wire.base_url,
            "max_retries": 0,
            "timeout": 0.5,
        }
        self.app = create_app({"llm": llm, "store": store}, **app)

    async def __aenter__(self) -> httpx.AsyncClient:
        self._lifespan = self.app.router.lifespan_context(self.app)
        await self._lifespan.__aenter__()
        transport = httpx.ASGITransport(app=self.app)
        self._client = httpx.AsyncClient(transport=transport, base_url="http://service")
        return self._client

    async def __aexit__(self, *exc: object) -> None:
        await self._client.aclose()
        await self._lifespan.__aexit__(None, None, None)


def error_of(r: httpx.Response, status: int, kind: str) -> str:
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/json"
    body = r.json()
    assert body["error"]["type"] == kind, body
    assert "Traceback" not in r.text
    return str(body["error"]["message"])


ACME = {"X-Tenant": "acme"}


async def test_usage_errors_are_4xx_with_a_json_body() -> None:
    with OpenAIWire() as wire:
        async with Service(wire, {"backend": "memory"}) as client:
            r = await client.post(
                "/ask", json={"question": "q", "filter": {"tenant": "globex"}}, headers=ACME
            )
            assert "tenant" in error_of(r, 403, "ScopeError")
            r = await client.post(
                "/ask/stream", json={"question": "q", "filter": {"tenant": 7}}, headers=ACME
            )
            error_of(r, 403, "ScopeError")
            doc = {"id": "d", "text": "a lone surrogate \ud800 here"}  # JSON may escape one
            body = json.dumps({"documents": [doc]})
            headers = {**ACME, "content-type": "application/json"}
            r = await client.post("/ingest", content=body, headers=headers)
            assert "surrogate" in error_of(r, 422, "InvalidArgumentError")
        assert wire.requests == []  # nothing reached the provider


async def test_a_busy_store_is_503_with_retry_after(tmp_path: Path) -> None:
    index = tmp_path / "store.faiss"
    store = {"backend": "faiss", "path": str(index), "dimension": 384, "lock_timeout_s": 0.2}
    with OpenAIWire() as wire:
        async with Service(wire, store) as client:
            fd = os.open(f"{index}.lock", os.O_RDWR | os.O_CREAT)
            fcntl.flock(fd, fcntl.LOCK_EX)  # another writer holds the store
            try:
                r = await client.post("/ingest", json={"documents": DOCS["acme"]}, headers=ACME)
            finally:
                os.close(fd)
            assert "another process is writing" in error_of(r, 503, "StoreBusyError")
            assert r.headers["retry-after"] == "1"
            r = await client.post("/ingest", json={"documents": DOCS["acme"]}, headers=ACME)
            assert r.status_code == 200, r.text


@pytest.mark.parametrize(
    ("queue", "status", "kind", "streamed"),
    [
        (lambda w: w.fail(500, "upstream broke"), 502, "ProviderUnavailableError", None),
        (lambda w: w.fail(401, "bad key"), 502, "AuthenticationError", None),
        (lambda w: w.raw("not json"), 502, "ResponseFormatError", "IncompleteStreamError"),
        (lambda w: w.fail(429, "slow down", {"retry-after": "7"}), 503, "RateLimitError", None),
        (lambda w: w.stall(3.0), 504, "ProviderTimeoutError", None),
    ],
)
async def test_provider_errors_are_502_503_504(
    queue: Callable[[OpenAIWire], Any], status: int, kind: str, streamed: str | None
) -> None:
    with OpenAIWire() as wire:
        async with Service(wire, {"backend": "memory"}) as client:
            queue(wire)
            error_of(await client.post("/ask", json={"question": "q"}, headers=ACME), status, kind)
            if kind == "RateLimitError":
                queue(wire)
                r = await client.post("/ask", json={"question": "q"}, headers=ACME)
                assert r.headers["retry-after"] == "7"
            queue(wire)
            r = await client.post("/ask/stream", json={"question": "q"}, headers=ACME)
            error_of(r, status, streamed or kind)  # failed before the first piece: not a 200


async def test_a_stream_failing_after_its_first_piece_ends_with_an_error_event() -> None:
    with OpenAIWire() as wire:
        async with Service(wire, {"backend": "memory"}) as client:
            wire.cut("Once upon a time there was a long story", keep=2)
            r = await client.post("/ask/stream", json={"question": "q"}, headers=ACME)
            assert r.status_code == 200
            events = sse(r.text)
            name, data = events[-1]
            assert name == "error" and data["error"]["type"] == "IncompleteStreamError"
            assert all(name == "message" for name, _ in events[:-1]) and len(events) > 1


async def test_request_bodies_over_the_limit_are_413_before_they_are_read() -> None:
    with OpenAIWire() as wire:
        async with Service(wire, {"backend": "memory"}, max_request_bytes=1000) as client:
            big = {"documents": [{"id": "d", "text": "x" * 2000}]}
            r = await client.post("/ingest", json=big, headers=ACME)
            assert "larger than 1,000 bytes" in error_of(r, 413, "RequestTooLarge")

            async def chunked() -> Any:  # no Content-Length: counted as it arrives
                for _ in range(4):
                    yield b" " * 400

            r = await client.post(
                "/ingest", content=chunked(), headers={**ACME, "content-type": "application/json"}
            )
            error_of(r, 413, "RequestTooLarge")
            small = {"documents": [{"id": "d", "text": "fits"}]}
            r = await client.post("/ingest", json=small, headers=ACME)
            assert r.status_code == 200, r.text
