"""examples/fastapi_service.py's agent runs: a run stops for approval in one worker and an
approval in another worker (another app, the same SQLite run store) continues it."""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("fastapi")

from examples.fastapi_service import create_app
from pywrapai_graph import ToolCall, tool
from pywrapai_graph.testing import ScriptedReply
from pywrapai_graph.testing.wire import OpenAIWire

REFUNDS: list[tuple[str, int]] = []


@tool(requires_approval=True)
def refund(order: str, amount: int) -> str:
    """Refund part of an order."""
    REFUNDS.append((order, amount))
    return f"refunded {amount} on {order}"


async def test_a_run_stops_for_approval_and_another_worker_continues_it(tmp_path: Path) -> None:
    with OpenAIWire() as wire:
        remote = {"provider": "openai", "api_key": "k", "base_url": wire.base_url}
        config = {
            "llm": remote,
            "embedder": {"provider": "hashing", "dimension": 32},
            "store": {"backend": "memory"},
            "agent": {"run_store": {"backend": "sqlite", "path": str(tmp_path / "runs.db")}},
        }
        apps = [create_app(config), create_app(config)]  # two workers
        for app in apps:
            app.state.container.tools().register(refund)
        async with AsyncExitStack() as stack:
            clients: list[httpx.AsyncClient] = []
            for app in apps:
                await stack.enter_async_context(app.router.lifespan_context(app))
                client = httpx.AsyncClient(
                    transport=httpx.ASGITransport(app=app),
                    base_url="http://service",
                    headers={"X-Tenant": "acme"},
                )
                clients.append(await stack.enter_async_context(client))
            first, second = clients

            wire.reply(
                ScriptedReply(tool_calls=[ToolCall("c1", "refund", {"order": "A1", "amount": 5})])
            )
            r = await first.post("/runs", json={"question": "Refund 5 on A1"})
            assert r.status_code == 200, r.text
            body: dict[str, Any] = r.json()
            [pending] = body["pending"]
            assert body["status"] == "paused" and REFUNDS == []
            assert (pending["name"], pending["arguments"]) == (
                "refund",
                {"order": "A1", "amount": 5},
            )

            url = f"/runs/{body['run_id']}/approve"
            r = await second.post(url, json={"approvals": {"nope": True}})
            assert r.status_code == 422 and r.json()["error"]["type"] == "ApprovalsError"
            r = await second.post(
                url, json={"approvals": {pending["id"]: True}}, headers={"X-Tenant": "globex"}
            )
            assert r.status_code == 404  # another tenant's run does not exist for it

            wire.reply(ScriptedReply("Refunded 3 on A1."))
            r = await second.post(
                url, json={"approvals": {pending["id"]: {"order": "A1", "amount": 3}}}
            )
            assert r.status_code == 200, r.text
            assert r.json()["status"] == "done" and r.json()["answer"] == "Refunded 3 on A1."
            assert REFUNDS == [("A1", 3)]
            sent = list(wire.chat_requests())[-1].json["messages"]
            assert sent[-1] == {"role": "tool", "tool_call_id": "c1", "content": "refunded 3 on A1"}
