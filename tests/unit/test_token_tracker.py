from __future__ import annotations

import logging
import threading

import pytest

from pywrapai_graph import ModelPrice, PriceTable, TokenTracker, TokenUsage


def test_cost_from_pinned_prices() -> None:
    tracker = TokenTracker()
    rec = tracker.record("chat", "openai", "gpt-4o-mini", TokenUsage(1_000_000, 1_000_000))
    assert rec.cost_usd == pytest.approx(0.15 + 0.60)
    assert tracker.total_cost == pytest.approx(0.75)
    assert tracker.records == [rec]


def test_reference_models_are_priced_including_dated_snapshots() -> None:
    table = PriceTable.default()
    for model in (
        "claude-haiku-4-5-20251001",
        "gpt-4o-mini",
        "text-embedding-3-small",
        "gpt-4o-mini-2024-07-18",
        "models/gemini-2.5-flash",
    ):
        assert table.price_for(model) is not None, model
    assert table.price_for("gpt-4o-mini-2024-07-18") == table.price_for("gpt-4o-mini")


def test_cache_tokens_billed_at_cache_rates() -> None:
    price = ModelPrice(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
    usage = TokenUsage(
        input_tokens=1_000_000,
        output_tokens=0,
        cache_read_tokens=600_000,
        cache_write_tokens=100_000,
    )
    assert price.cost(usage) == pytest.approx(0.3 * 3.0 + 0.6 * 0.3 + 0.1 * 3.75)


def test_unknown_model_costs_zero_and_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    tracker = TokenTracker()
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            rec = tracker.record("chat", "openai", "gpt-99-ultra", TokenUsage(100, 100))
            assert rec.cost_usd == 0.0
    warnings = [r for r in caplog.records if "gpt-99-ultra" in r.getMessage()]
    assert len(warnings) == 1


def test_local_providers_are_free_without_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        rec = TokenTracker().record("chat", "ollama", "llama3.2", TokenUsage(500, 500))
    assert rec.cost_usd == 0.0 and not caplog.records


def test_prices_are_overridable() -> None:
    table = PriceTable.default().with_prices({"my-model": ModelPrice(1.0, 2.0)})
    tracker = TokenTracker(table)
    assert tracker.record("chat", "x", "my-model", TokenUsage(1_000_000, 0)).cost_usd == 1.0
    # the default table is unchanged
    assert PriceTable.default().price_for("my-model") is None


def test_totals_prompt_file_grouping_and_reset() -> None:
    tracker = TokenTracker()
    tracker.record("chat", "openai", "gpt-4o", TokenUsage(10, 20), prompt_file="a-v1.txt")
    tracker.record("embedding", "openai", "text-embedding-3-small", TokenUsage(30, 0))
    assert tracker.total_usage == TokenUsage(40, 20)
    assert (tracker.total_input_tokens, tracker.total_output_tokens) == (40, 20)
    assert set(tracker.cost_by_prompt_file()) == {"a-v1.txt", None}
    assert len(tracker) == 2 and "calls=2" in repr(tracker)
    tracker.reset()
    assert len(tracker) == 0 and tracker.total_cost == 0.0


def test_tracker_is_thread_safe() -> None:
    tracker = TokenTracker()

    def work() -> None:
        for _ in range(500):
            tracker.record("chat", "openai", "gpt-4o-mini", TokenUsage(1, 1))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(tracker) == 2000
    assert tracker.total_usage == TokenUsage(2000, 2000)


def test_free_providers_are_data_of_the_table(caplog: pytest.LogCaptureFixture) -> None:
    mine = PriceTable({}, free_providers=["my-local-server"])
    with caplog.at_level(logging.WARNING):
        rec = TokenTracker(mine).record("chat", "my-local-server", "any", TokenUsage(5, 5))
    assert rec.cost_usd == 0.0 and not caplog.records
    priced = PriceTable.default().with_prices({"m": ModelPrice(1.0)})
    assert priced.cost("chat", "ollama", "m", TokenUsage(1_000_000)) == 0.0  # shipped data
    assert PriceTable({"m": ModelPrice(1.0)}, free_providers=[]).cost(
        "chat", "ollama", "m", TokenUsage(1_000_000)
    ) == pytest.approx(1.0)
    assert (
        PriceTable.default()
        .with_free_providers(["openai"])
        .cost("chat", "openai", "gpt-4o", TokenUsage(1_000_000))
        == 0.0
    )
