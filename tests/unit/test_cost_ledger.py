"""The bounded cost ledger and request scopes."""

from __future__ import annotations

import asyncio
import io
import json
import math
import threading

import pytest

from pywrapai_graph import CostTotals, TokenTracker, TokenUsage, cost_scope
from pywrapai_graph.application.observability.accounting import ExactSum
from pywrapai_graph.application.observability.scope import agent_run_context, current_agent_run
from pywrapai_graph.composition.container import build_container
from pywrapai_graph.domain import CallKind

MODELS = ("gpt-4o-mini", "gpt-4o", "text-embedding-3-small")


def test_100k_records_keep_the_record_list_bounded_and_aggregates_exact() -> None:
    tracker = TokenTracker(max_records=1_000)
    costs: list[float] = []
    expected_in = expected_out = 0
    per_model: dict[str, list[float]] = {m: [] for m in MODELS}
    for i in range(100_000):
        model = MODELS[i % 3]
        kind: CallKind = "embedding" if model.startswith("text-") else "chat"
        usage = TokenUsage(i % 997 + 1, 0 if kind == "embedding" else i % 89)
        rec = tracker.record(kind, "openai", model, usage, prompt_file=f"p{i % 2}.txt")
        costs.append(rec.cost_usd)
        per_model[model].append(rec.cost_usd)
        expected_in += usage.input_tokens
        expected_out += usage.output_tokens
    kept = tracker.records
    assert len(kept) == 1_000 and tracker.max_records == 1_000
    assert tracker.dropped_records == 99_000
    assert kept[-1].usage == TokenUsage(99_999 % 997 + 1, 99_999 % 89)  # the newest are kept
    assert len(tracker) == tracker.total_calls == 100_000
    assert tracker.total_usage == TokenUsage(expected_in, expected_out)
    assert tracker.total_cost == math.fsum(costs)  # exact, not approximately
    by_model = tracker.by_model()
    for model, model_costs in per_model.items():
        key: tuple[CallKind, str, str] = (
            ("embedding" if model.startswith("text-") else "chat"),
            "openai",
            model,
        )
        assert by_model[key].cost_usd == math.fsum(model_costs)
        assert by_model[key].calls == len(model_costs)
    by_prompt = tracker.cost_by_prompt_file()
    assert by_prompt["p0.txt"] == math.fsum(costs[0::2])
    assert by_prompt["p1.txt"] == math.fsum(costs[1::2])


def test_exact_sum_matches_fsum_where_naive_summation_drifts() -> None:
    terms = [0.1] * 10 + [1e16, 1.0, -1e16]
    total = ExactSum()
    for t in terms:
        total.add(t)
    assert total.value == math.fsum(terms) == 2.0
    assert sum(terms) != 2.0


def test_default_cap_and_zero_cap_and_bad_cap() -> None:
    assert TokenTracker().max_records == 10_000
    none_kept = TokenTracker(max_records=0)
    none_kept.record("chat", "openai", "gpt-4o", TokenUsage(10, 10))
    assert none_kept.records == [] and none_kept.total_calls == 1
    for bad in (-1, True, 2.5):
        with pytest.raises(ValueError, match="max_records"):
            TokenTracker(max_records=bad)  # type: ignore[arg-type]


def test_export_jsonl_to_a_path_and_a_stream(tmp_path: object) -> None:
    tracker = TokenTracker()
    tracker.record("chat", "openai", "gpt-4o", TokenUsage(10, 5), prompt_file="a-v1.txt")
    tracker.record("embedding", "openai", "text-embedding-3-small", TokenUsage(7))
    buffer = io.StringIO()
    assert tracker.export_jsonl(buffer) == 2
    rows = [json.loads(line) for line in buffer.getvalue().splitlines()]
    assert [r["kind"] for r in rows] == ["chat", "embedding"]
    assert rows[0]["usage"]["input_tokens"] == 10 and rows[0]["prompt_file"] == "a-v1.txt"
    assert rows[0]["cost_usd"] == tracker.records[0].cost_usd and rows[0]["timestamp"] > 0
    import pathlib

    assert isinstance(tmp_path, pathlib.Path)
    path = tmp_path / "ledger.jsonl"
    assert tracker.export_jsonl(path) == 2
    assert path.read_text().splitlines() == buffer.getvalue().splitlines()


def test_scopes_nest_and_span_trackers() -> None:
    chat, embed = TokenTracker(), TokenTracker()
    chat.record("chat", "openai", "gpt-4o", TokenUsage(1, 1))  # outside any scope
    with cost_scope("request") as outer:
        chat.record("chat", "openai", "gpt-4o", TokenUsage(100, 10))
        with cost_scope() as inner:
            embed.record("embedding", "openai", "text-embedding-3-small", TokenUsage(50))
        assert inner.totals == CostTotals(1, TokenUsage(50), inner.cost_usd)
    assert outer.calls == 2 and outer.usage == TokenUsage(150, 10)
    assert outer.cost_usd == math.fsum(r.cost_usd for r in chat.records[1:] + embed.records)
    assert set(outer.by_model()) == {
        ("chat", "openai", "gpt-4o"),
        ("embedding", "openai", "text-embedding-3-small"),
    }
    assert "request" in repr(outer)


async def test_worker_threads_started_by_a_task_count_in_its_scope() -> None:
    tracker = TokenTracker()
    with cost_scope() as scope:
        await asyncio.to_thread(tracker.record, "chat", "openai", "gpt-4o", TokenUsage(3, 4))
    assert scope.usage == TokenUsage(3, 4)


def test_50_tasks_and_8_threads_each_see_only_their_own_costs() -> None:
    tracker = TokenTracker(max_records=16)
    seen: dict[str, TokenUsage] = {}
    expected: dict[str, TokenUsage] = {}
    inside = 0
    max_inside = 0
    lock = threading.Lock()
    barrier = threading.Barrier(8)

    def enter() -> None:
        nonlocal inside, max_inside
        with lock:
            inside += 1
            max_inside = max(max_inside, inside)

    def leave() -> None:
        nonlocal inside
        with lock:
            inside -= 1

    async def task(n: int) -> None:
        name = f"task-{n}"
        expected[name] = TokenUsage(n * 20, n * 10)
        with cost_scope(name) as scope:
            enter()
            for _ in range(10):
                tracker.record("chat", "openai", "gpt-4o-mini", TokenUsage(n * 2, n))
                await asyncio.sleep(0)  # let every other task interleave
            leave()
        seen[name] = scope.usage

    def thread(n: int) -> None:
        name = f"thread-{n}"
        expected[name] = TokenUsage(n * 5000, 0)
        with cost_scope(name) as scope:
            enter()
            barrier.wait()  # all 8 threads are inside their scopes at once
            for _ in range(1000):
                tracker.record("embedding", "openai", "text-embedding-3-small", TokenUsage(n * 5))
            leave()
        seen[name] = scope.usage

    async def main() -> None:
        await asyncio.gather(*(task(n) for n in range(1, 51)))

    threads = [threading.Thread(target=thread, args=(n,)) for n in range(1, 9)]
    for t in threads:
        t.start()
    asyncio.run(main())
    for t in threads:
        t.join()
    assert max_inside >= 50  # the scopes really overlapped
    assert seen == expected
    assert tracker.total_calls == 50 * 10 + 8 * 1000
    total = TokenUsage()
    for usage in expected.values():
        total = total + usage
    assert tracker.total_usage == total


def test_agent_run_id_is_stamped_on_records() -> None:
    tracker = TokenTracker()
    with agent_run_context("run-1"):
        assert current_agent_run() == "run-1"
        tracker.record("chat", "openai", "gpt-4o", TokenUsage(1, 1))
    tracker.record("chat", "openai", "gpt-4o", TokenUsage(1, 1))
    assert [r.agent_run for r in tracker.records] == ["run-1", None]


def test_container_books_chat_and_embedding_in_one_ledger() -> None:
    container = build_container({"store": {"backend": "memory"}})
    embedder = container.embedder()
    graph = container.graph()
    assert embedder.tokens is graph.tokens is container.ledger()
    embedder.embed(["one ledger"])
    assert [r.kind for r in container.ledger().records] == ["embedding"]
