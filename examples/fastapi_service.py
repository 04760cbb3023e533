"""A FastAPI service over pywrapai-graph: ``/ingest``, ``/ask`` and ``/ask/stream`` (SSE).

Every request names its tenant in the ``X-Tenant`` header and works through a scoped view
built from the container for that request: its documents are stamped with the tenant, and
retrieval only ever sees that tenant's chunks. The whole path is async (embedding, store,
chat). The app builds the container's shared objects (store and its connection pool, embedder,
LLM) when it starts, so the first burst of requests finds them ready, and shuts the container
— with every store and client it built — down with the app.

Run it (FastAPI and an ASGI server are example dependencies, not pywrapai-graph's)::

    pip install fastapi uvicorn
    PYWRAPAI_LLM__PROVIDER=openai uvicorn --factory examples.fastapi_service:create_app

    curl -XPOST localhost:8000/ingest -H 'X-Tenant: acme' -H 'content-type: application/json' \\
         -d '{"documents": [{"id": "refunds", "text": "Refunds take 14 days."}]}'
    curl -XPOST localhost:8000/ask -H 'X-Tenant: acme' -H 'content-type: application/json' \\
         -d '{"question": "How long do refunds take?", "max_tokens": 200}'
"""

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Header
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, Field

from pywrapai_graph import Document, GenerationParams, GraphLLM, LLMResponse, ScopedRetriever
from pywrapai_graph.composition.container import build_container
from pywrapai_graph.composition.settings import Settings, Source
from pywrapai_graph.errors import PyWrapAIError

__all__ = ["create_app"]

#: /ready reports "degraded" when the store has not answered a one-row read within this
READY_SECONDS = 1.0

Tenant = Annotated[str, Header(alias="X-Tenant", pattern=r"^[A-Za-z0-9_-]{1,64}$")]


class DocumentIn(BaseModel):
    id: str = Field(min_length=1, max_length=200)
    text: str
    metadata: dict[str, str | int | float | bool] = {}


class IngestRequest(BaseModel):
    documents: list[DocumentIn] = Field(min_length=1, max_length=1000)


class AskRequest(BaseModel):
    question: str = Field(min_length=1, max_length=8000)
    max_tokens: int | None = Field(default=None, gt=0)
    temperature: float | None = Field(default=None, ge=0, le=2)


def _answer(response: LLMResponse) -> dict[str, Any]:
    return {
        "answer": response.content,
        "sources": [
            {"doc_id": c.doc_id, "text": c.text, "score": c.score, "metadata": dict(c.metadata)}
            for c in response.context
        ],
        "usage": {
            "input_tokens": response.usage.input_tokens,
            "output_tokens": response.usage.output_tokens,
        },
        "cost_usd": response.cost_usd,
    }


def _generation(body: AskRequest) -> GenerationParams:
    return GenerationParams(max_tokens=body.max_tokens, temperature=body.temperature)


def create_app(config: Source | Settings | None = None) -> FastAPI:
    """The service, with its own container built from ``config`` (None: the environment)."""
    container = build_container(config)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        container.graph()  # the store, its pool, the embedder and the LLM, once, at startup
        container.chunker()
        yield
        await container.ashutdown()  # every store and client the container built

    app = FastAPI(title="pywrapai-graph service", lifespan=lifespan)
    app.state.container = container

    @app.get("/health")
    async def health() -> dict[str, str]:
        """Liveness: the process answers (touches no backend, so a stuck database never
        makes the orchestrator restart a healthy process)."""
        return {"status": "ok"}

    @app.get("/ready")
    async def ready() -> JSONResponse:
        """Readiness: the store answers a one-row read within READY_SECONDS, else 503."""
        store = container.vector_store()
        try:
            await asyncio.wait_for(asyncio.to_thread(store.embedder_identity), READY_SECONDS)
        except (TimeoutError, PyWrapAIError) as exc:
            problem = str(exc) or f"no answer within {READY_SECONDS:g} s"
            return JSONResponse({"status": "degraded", "store": problem}, status_code=503)
        return JSONResponse({"status": "ok"})

    def scoped_retriever(tenant: Tenant) -> ScopedRetriever:
        return container.scoped_retriever(scope={"tenant": tenant})

    def scoped_graph(tenant: Tenant) -> GraphLLM:
        return container.scoped_graph(scope={"tenant": tenant})

    @app.post("/ingest")
    async def ingest(
        body: IngestRequest, retriever: Annotated[ScopedRetriever, Depends(scoped_retriever)]
    ) -> dict[str, int]:
        docs = [Document(d.text, dict(d.metadata), id=d.id) for d in body.documents]
        chunks = await retriever.aadd_documents(docs, container.chunker())
        return {"documents": len(docs), "chunks": chunks}

    @app.post("/ask")
    async def ask(
        body: AskRequest, graph: Annotated[GraphLLM, Depends(scoped_graph)]
    ) -> dict[str, Any]:
        params = _generation(body).given()
        return _answer(await graph.achat(body.question, **params))

    @app.post("/ask/stream")
    async def ask_stream(
        body: AskRequest, graph: Annotated[GraphLLM, Depends(scoped_graph)]
    ) -> StreamingResponse:
        stream = graph.astream(body.question, **_generation(body).given())

        async def events() -> AsyncIterator[str]:
            async for piece in stream:
                yield f"data: {json.dumps({'text': piece})}\n\n"
            yield f"event: done\ndata: {json.dumps(_answer(stream.response))}\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    return app
