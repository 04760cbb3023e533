"""A FastAPI service over pywrapai-graph: ``/ingest``, ``/ask``, ``/ask/stream`` (SSE),
``/agent/stream`` (an agent run that searches the tenant's documents, as SSE events), and agent
runs a person approves: ``POST /runs`` and ``POST /runs/{id}/approve``.

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

An agent run (``POST /runs``) that reaches a tool needing approval answers
``{"status": "paused", "run_id", "pending": [{"id", "name", "arguments"}]}``; the run waits in
the ``agent.run_store`` (SQLite or PostgreSQL, shared by every worker) until
``POST /runs/{run_id}/approve`` with ``{"approvals": {call_id: true | false | {args}}}``
continues it, in whichever worker gets the request.

Errors answer with a status and a JSON body ``{"error": {"type", "message"}}``, never a
traceback (see the table at the end): a bad input is 4xx, a busy store 503 with
``Retry-After``, a failing provider 502/503/504; a request body over ``max_request_bytes``
is 413 before it is read.
"""

import asyncio
import contextlib
import dataclasses
import json
import math
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Header, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, Field

from pywrapai_graph import (
    Agent,
    AgentEvent,
    AgentResult,
    ApprovalRequired,
    Document,
    FinalAnswer,
    GenerationParams,
    GraphLLM,
    LLMResponse,
    RunConflictError,
    RunNotFoundError,
    ScopedRetriever,
    ToolRegistry,
    retrieval_tool,
)
from pywrapai_graph.composition.container import Container, build_container
from pywrapai_graph.composition.settings import Settings, Source
from pywrapai_graph.errors import (
    ArgumentTypeError,
    InvalidArgumentError,
    InvalidStateError,
    ProviderError,
    ProviderTimeoutError,
    PyWrapAIError,
    RateLimitError,
    ResponseFormatError,
    RuntimeFailure,
    ScopeError,
    StorageFullError,
    StoreBusyError,
    ToolArgumentsError,
    UnsafePromptNameError,
    UnsupportedOperationError,
    UsageError,
    VectorStoreError,
)

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
    filter: dict[str, str | int | float | bool] | None = None  # within the tenant's scope


class RunRequest(BaseModel):
    question: str = Field(min_length=1, max_length=8000)


class ApproveRequest(BaseModel):
    #: per pending call id: true (run it), false (deny it) or the arguments to run it with
    approvals: dict[str, bool | dict[str, Any]]


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


def create_app(
    config: Source | Settings | None = None, *, max_request_bytes: int = 8 << 20
) -> FastAPI:
    """The service, with its own container built from ``config`` (None: the environment);
    request bodies larger than ``max_request_bytes`` (8 MiB: an ingest batch) are refused."""
    container = build_container(config)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        container.graph()  # the store, its pool, the embedder and the LLM, once, at startup
        container.chunker()
        yield
        await container.ashutdown()  # every store and client the container built

    app = FastAPI(title="pywrapai-graph service", lifespan=lifespan)
    app.state.container = container
    _probes(app, container)
    _rag_routes(app, container)
    _agent_routes(app, container)
    _run_routes(app, container)
    _answer_errors(app, max_request_bytes)
    return app


def _probes(app: FastAPI, container: Container) -> None:
    """Liveness and readiness, for the orchestrator."""

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


def _rag_routes(app: FastAPI, container: Container) -> None:
    """Ingest and ask, each request scoped to its tenant."""

    # async: a plain def dependency would cost each request a hop to the thread pool
    async def scoped_retriever(tenant: Tenant) -> ScopedRetriever:
        return container.scoped_retriever(scope={"tenant": tenant})

    async def scoped_graph(tenant: Tenant) -> GraphLLM:
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
        return _answer(await graph.achat(body.question, filter=body.filter, **params))

    @app.post("/ask/stream")
    async def ask_stream(
        body: AskRequest, graph: Annotated[GraphLLM, Depends(scoped_graph)]
    ) -> StreamingResponse:
        stream = graph.astream(body.question, filter=body.filter, **_generation(body).given())
        pieces = aiter(stream)
        # the first piece before the 200: a failure to start answers with its status
        first = await anext(pieces, None)

        async def events() -> AsyncIterator[str]:
            try:
                if first is not None:
                    yield f"data: {json.dumps({'text': first})}\n\n"
                async for piece in pieces:
                    yield f"data: {json.dumps({'text': piece})}\n\n"
                yield f"event: done\ndata: {json.dumps(_answer(stream.response))}\n\n"
            except PyWrapAIError as exc:  # after the 200: the stream says so, then ends
                yield f"event: error\ndata: {json.dumps(_error_body(exc))}\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")


def _event_data(event: AgentEvent) -> dict[str, Any]:
    """An agent event's SSE ``data``: the event's fields; the run's result in short."""
    if isinstance(event, FinalAnswer | ApprovalRequired):
        result = event.result
        usage = result.total_usage
        done = {
            "answer": result.content,
            "turns": result.total_turns,
            "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
            "cost_usd": result.total_cost_usd,
        }
        if isinstance(event, ApprovalRequired):
            done["pending"] = [dataclasses.asdict(c) for c in event.calls]
        return done
    return dataclasses.asdict(event)


def _agent_routes(app: FastAPI, container: Container) -> None:
    """An agent over the tenant's documents, streamed as server-sent events."""

    @app.post("/agent/stream")
    async def agent_stream(body: AskRequest, tenant: Tenant) -> StreamingResponse:
        """One ``event: <kind>`` / ``data: <json>`` per agent event (text and tool-call
        deltas, tool calls and results, step ends, the final answer). A client that
        disconnects stops the run: no further model or tool call, what was spent is booked."""
        tools = ToolRegistry()
        retriever = container.scoped_retriever(scope={"tenant": tenant})
        tools.register(retrieval_tool(retriever, "search_documents", "Search our documents."))
        agent = Agent(container.scoped_graph(scope={"tenant": tenant}), tools)
        run = agent.astream(body.question, **_generation(body).given())
        # the first event before the 200: a failure to start answers with its status
        first = await anext(run)

        async def events() -> AsyncIterator[str]:
            async with contextlib.aclosing(run):
                try:
                    yield f"event: {first.kind}\ndata: {json.dumps(_event_data(first))}\n\n"
                    async for event in run:
                        yield f"event: {event.kind}\ndata: {json.dumps(_event_data(event))}\n\n"
                except PyWrapAIError as exc:  # after the 200: the stream says so, then ends
                    yield f"event: error\ndata: {json.dumps(_error_body(exc))}\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")


def _run_routes(app: FastAPI, container: Container) -> None:
    """Agent runs that stop for a person's approval and go on in any worker. A tenant only
    ever reaches its own runs: their ids in the store start with the tenant."""

    def tenant_agent(tenant: Tenant) -> Agent:
        base = container.agent()  # tools, agent.* settings and the agent.run_store
        graph = container.scoped_graph(scope={"tenant": tenant})
        return Agent(graph, base.registry, base.config, hooks=base.hooks, run_store=base.run_store)

    def outcome(result: AgentResult, run_id: str) -> dict[str, Any]:
        if result.paused:
            pending = [
                {"id": p.id, "name": p.name, "arguments": p.arguments} for p in result.pending
            ]
            return {"status": "paused", "run_id": run_id, "pending": pending}
        return {"status": "done", "run_id": run_id, "answer": result.content,
                "cost_usd": result.total_cost_usd}  # fmt: skip

    @app.post("/runs")
    async def start_run(
        body: RunRequest, tenant: Tenant, agent: Annotated[Agent, Depends(tenant_agent)]
    ) -> dict[str, Any]:
        run_id = uuid.uuid4().hex
        result = await agent.arun(body.question, run_id=f"{tenant}.{run_id}")
        return outcome(result, run_id)

    @app.post("/runs/{run_id}/approve")
    async def approve_run(
        run_id: str,
        body: ApproveRequest,
        tenant: Tenant,
        agent: Annotated[Agent, Depends(tenant_agent)],
    ) -> dict[str, Any]:
        result = await agent.aresume(f"{tenant}.{run_id}", body.approvals)
        return outcome(result, run_id)


# ---------------------------------------------------------------- errors -> HTTP
# First match wins (subclasses before their bases). The caller's mistakes are 4xx; the
# service's own setup (configuration, a missing extra or prompt file) is 500; a busy or
# full store 503/507; the provider behind us 502 (refused, broken reply), 503 (rate
# limited: try later) or 504 (timed out).
_STATUS: tuple[tuple[type[PyWrapAIError], int], ...] = (
    (ScopeError, 403),
    (RunNotFoundError, 404),
    (InvalidArgumentError, 422),
    (ArgumentTypeError, 422),
    (ToolArgumentsError, 422),
    (UnsafePromptNameError, 422),
    (InvalidStateError, 409),
    (UnsupportedOperationError, 501),
    (UsageError, 500),
    (StoreBusyError, 503),
    (StorageFullError, 507),
    (VectorStoreError, 503),
    (RateLimitError, 503),
    (ProviderTimeoutError, 504),
    (ProviderError, 502),
    (ResponseFormatError, 502),
    (RunConflictError, 409),  # another worker is continuing this run
    (RuntimeFailure, 500),
)
#: seconds a client waits before retrying a busy store (its writes take milliseconds)
_STORE_RETRY_AFTER_S = 1


def _status(exc: PyWrapAIError) -> int:
    return next((status for kind, status in _STATUS if isinstance(exc, kind)), 500)


def _error_body(exc: PyWrapAIError) -> dict[str, Any]:
    # our messages are redacted (no keys, passwords or DSNs) and say what to do
    return {"error": {"type": type(exc).__name__, "message": str(exc)}}


def _retry_after(exc: PyWrapAIError) -> dict[str, str]:
    if isinstance(exc, StoreBusyError):
        return {"Retry-After": str(_STORE_RETRY_AFTER_S)}
    if isinstance(exc, RateLimitError):
        return {"Retry-After": str(max(1, math.ceil(exc.retry_after or 1)))}
    return {}


async def _our_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, PyWrapAIError)
    return JSONResponse(_error_body(exc), status_code=_status(exc), headers=_retry_after(exc))


Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class BodyLimit:
    """ASGI middleware: 413 for a body over ``limit`` bytes, by its ``Content-Length`` before
    anything is read; a body without one (chunked) is read up to the limit first."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], limit: int):
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None:
            if not declared.isdigit() or int(declared) > self.limit:
                return await self._refuse(send)
            return await self.app(scope, receive, send)
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            body += message.get("body", b"")
            if len(body) > self.limit:
                return await self._refuse(send)
            if not message.get("more_body", False):
                break
        whole: list[MutableMapping[str, Any]] = [{"type": "http.request", "body": bytes(body)}]

        async def replay() -> MutableMapping[str, Any]:
            return whole.pop() if whole else await receive()

        return await self.app(scope, replay, send)

    async def _refuse(self, send: Send) -> None:
        message = f"the request body is larger than {self.limit:,} bytes; send less per request"
        body = json.dumps({"error": {"type": "RequestTooLarge", "message": message}}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def _answer_errors(app: FastAPI, max_request_bytes: int) -> None:
    """Install the error answers and the request size limit."""
    app.add_exception_handler(PyWrapAIError, _our_error)
    app.add_middleware(BodyLimit, limit=max_request_bytes)
