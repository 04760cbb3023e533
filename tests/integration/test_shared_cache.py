"""The response cache shared through PostgreSQL: an answer one process paid for is served
to another, until its time to live has passed on the database's clock, never after."""

from __future__ import annotations

import multiprocessing as mp
import uuid
from typing import Any

import pytest

from pywrapai import LLM
from pywrapai_graph.adapters.cache.lru import LRUResponseCache
from pywrapai_graph.adapters.shared.response_cache import PostgresResponseCache
from pywrapai_graph.composition.container import build_container
from pywrapai_graph.composition.settings import load_settings
from pywrapai_graph.domain import (
    FailedAttempt,
    InjectedChunk,
    LLMResponse,
    ReasoningPart,
    TokenUsage,
    ToolCall,
)
from pywrapai_graph.errors import InvalidArgumentError
from pywrapai_graph.testing.wire import OpenAIWire

pytestmark = pytest.mark.integration

CTX = mp.get_context("spawn")


def _report(results: Any, index: int, name: str, *args: Any) -> None:
    from tests.integration import shared_workers

    shared_workers.report(results, index, name, *args)


def in_process(name: str, *args: Any) -> Any:
    """``shared_workers.<name>(*args)`` in a fresh process; its result."""
    results = CTX.Queue()
    proc = CTX.Process(target=_report, args=(results, 0, name, *args), daemon=True)
    proc.start()
    _, answer = results.get(timeout=300)
    proc.join(30)
    assert not (isinstance(answer, str) and answer.startswith("error")), answer
    return answer


def test_one_process_pays_the_other_is_served(pg_url: str, admin: Any) -> None:
    table = f"cache_{uuid.uuid4().hex[:8]}"
    with OpenAIWire() as wire:
        wire.reply("within 30 days")
        first = in_process("cached_chat", pg_url, wire.base_url, table)
        second = in_process("cached_chat", pg_url, wire.base_url, table)
        assert first == ("within 30 days", False) and second == ("within 30 days", True)
        assert len(list(wire.chat_requests())) == 1  # the second process sent nothing
        with admin.cursor() as cur:  # the entry's time to live passes
            cur.execute(f"UPDATE {table} SET expires_at = clock_timestamp() - interval '1 s'")
        wire.reply("within 14 days")
        third = in_process("cached_chat", pg_url, wire.base_url, table)
        assert third == ("within 14 days", False)  # the expired entry was not served
        assert len(list(wire.chat_requests())) == 2


def test_entries_round_trip_and_expire(pg_url: str) -> None:
    cache = PostgresResponseCache(pg_url, ttl_s=600, table=f"cache_{uuid.uuid4().hex[:8]}")
    response = LLMResponse(
        "ok",
        [ToolCall("c1", "lookup", {"q": ["a", 1]})],
        TokenUsage(3, 4, cache_read_tokens=1),
        "gpt-4o-mini",
        "openai",
        0.25,
        context=(InjectedChunk("k1", 0.5, "text", "d1", {"tenant": "acme"}),),
        finish_reason="stop",
        fallback_from=(FailedAttempt("anthropic", "claude", "RateLimitError", 429),),
        reasoning=(ReasoningPart("why", "c2ln+/==", provider="anthropic"),),
    )
    cache.set("k", response)
    assert cache.get("k") == response and len(cache) == 1 and cache.get("other") is None
    assert (cache.hits, cache.misses) == (1, 1)
    cache._db.run(f"UPDATE {cache.table} SET expires_at = clock_timestamp() - interval '1 s'")
    assert cache.get("k") is None and len(cache) == 0
    cache.set("k2", response)  # a later write deletes the expired row
    assert cache._db.run(f"SELECT key FROM {cache.table}") == [("k2",)]
    cache.clear()
    assert len(cache) == 0
    cache.close()


def test_configured_shared_cache(pg_url: str) -> None:
    with OpenAIWire() as wire:
        wire.reply("cached once")
        settings: dict[str, Any] = {
            "llm": {
                "provider": "openai",
                "api_key": "sk-config",
                "base_url": wire.base_url,
                "max_retries": 0,
                "cache": {"shared": pg_url, "ttl_s": 60},
            }
        }
        llm = build_container(load_settings(settings)).llm()
        assert isinstance(llm, LLM) and isinstance(llm.cache, PostgresResponseCache)
        llm.cache.clear()
        assert llm.chat("Hi").cached is False and llm.chat("Hi").cached is True
        assert len(list(wire.chat_requests())) == 1
        llm.close()
        settings["llm"]["cache"] = {"max_entries": 8}  # no DSN: this process's LRU
        local = build_container(load_settings(settings)).llm()
        assert isinstance(local, LLM) and isinstance(local.cache, LRUResponseCache)
        local.close()


def test_bad_cache_arguments_are_refused(pg_url: str) -> None:
    with pytest.raises(InvalidArgumentError, match="ttl_s"):
        PostgresResponseCache(pg_url, ttl_s=0)
    with pytest.raises(InvalidArgumentError, match="identifier"):
        PostgresResponseCache(pg_url, table="x; DROP TABLE y")
