"""examples/fastapi_service.py's ``POST /agent/stream``: an agent run over the tenant's
documents as server-sent events, through an ASGI client over the OpenAI wire server."""

from __future__ import annotations

import json

import httpx
import pytest

pytest.importorskip("fastapi")

from examples.fastapi_service import create_app
from pywrapai_graph import ToolCall
from pywrapai_graph.testing import ScriptedReply
from pywrapai_graph.testing.wire import OpenAIWire
from tests.e2e.test_fastapi_service import DOCS, sse

SEARCH = ToolCall("call_s1", "search_documents", {"query": "How long do refunds take?"})


async def test_an_agent_run_streams_as_server_sent_events() -> None:
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
            wire.reply(ScriptedReply(tool_calls=[SEARCH]), ScriptedReply("Refunds take 14 days."))
            r = await client.post(
                "/agent/stream",
                json={"question": "How long do refunds take?", "max_tokens": 100},
                headers={"X-Tenant": "acme"},
            )
            assert r.status_code == 200, r.text
            assert r.headers["content-type"].startswith("text/event-stream")
            events = sse(r.text)
            kinds = [
                name for i, (name, _) in enumerate(events) if name != events[i - 1][0] or i == 0
            ]
            assert kinds == [
                "tool_call_delta",
                "tool_call_started",
                "tool_call_result",
                "step_ended",
                "text_delta",
                "step_ended",
                "final_answer",
            ]
            deltas = [data for name, data in events if name == "tool_call_delta"]
            assert deltas[0] == {
                "index": 0,
                "id": "call_s1",
                "name": "search_documents",
                "arguments": "",
            }
            assert json.loads("".join(d["arguments"] for d in deltas)) == SEARCH.arguments
            (result,) = [data for name, data in events if name == "tool_call_result"]
            assert "Acme refunds take 14 days." in result["content"]
            assert "Globex" not in result["content"]  # the tenant's documents only
            assert result["error"] is None
            ends = [data for name, data in events if name == "step_ended"]
            assert [e["turn"] for e in ends] == [1, 2]
            assert all(e["usage"]["input_tokens"] > 0 for e in ends)
            _, final = events[-1]
            assert final["answer"] == "Refunds take 14 days." and final["turns"] == 2
            text = "".join(data["text"] for name, data in events if name == "text_delta")
            assert text == final["answer"]
            sent = [req.json for req in wire.chat_requests()]
            assert sent[0]["stream"] is True and sent[0]["max_completion_tokens"] == 100
            assert "Acme refunds" in json.dumps(sent[1]["messages"])  # the result went back

            r = await client.post("/agent/stream", json={"question": "hi"})
            assert r.status_code == 422  # no tenant, no run
