"""A pinned, offline price table: USD per million tokens, per model.

Prices are the providers' published list prices for standard (non-batch) usage as of
2025-11, pinned so a cost figure never depends on the network. Override or extend them with
``PriceTable({...})`` or ``PriceTable.default().with_prices({...})``. Models served locally
(Ollama) cost nothing. Long-context surcharges (e.g. Gemini 2.5 Pro above 200k input tokens)
are not modelled.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass

from pywrapai_graph.domain import CallKind, TokenUsage

__all__ = ["ModelPrice", "PriceTable"]

_log = logging.getLogger(__name__)

_PER_MILLION = 1_000_000.0
_FREE_PROVIDERS = frozenset({"ollama", "scripted", "hashing", "local"})
# Dated snapshots ("claude-haiku-4-5-20251001", "gpt-4o-mini-2024-07-18") and "-latest"
# aliases are priced as their base model.
_SNAPSHOT_SUFFIX = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2}|latest|preview(-\d{2}-\d{4})?)$")


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """USD per million tokens. Cache rates default to the input rate when not published."""

    input: float
    output: float = 0.0
    cache_read: float | None = None
    cache_write: float | None = None

    def cost(self, usage: TokenUsage) -> float:
        """The USD cost of ``usage`` at these rates."""
        cache_read = self.input if self.cache_read is None else self.cache_read
        cache_write = self.input if self.cache_write is None else self.cache_write
        plain_input = max(
            usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens, 0
        )
        total = (
            plain_input * self.input
            + usage.cache_read_tokens * cache_read
            + usage.cache_write_tokens * cache_write
            + usage.output_tokens * self.output
        )
        return total / _PER_MILLION


_DEFAULT_PRICES: dict[str, ModelPrice] = {
    # OpenAI chat
    "gpt-4o": ModelPrice(2.50, 10.00, 1.25),
    "gpt-4o-mini": ModelPrice(0.15, 0.60, 0.075),
    "gpt-4.1": ModelPrice(2.00, 8.00, 0.50),
    "gpt-4.1-mini": ModelPrice(0.40, 1.60, 0.10),
    "gpt-4.1-nano": ModelPrice(0.10, 0.40, 0.025),
    "gpt-5": ModelPrice(1.25, 10.00, 0.125),
    "gpt-5-mini": ModelPrice(0.25, 2.00, 0.025),
    "gpt-5-nano": ModelPrice(0.05, 0.40, 0.005),
    "o3": ModelPrice(2.00, 8.00, 0.50),
    "o4-mini": ModelPrice(1.10, 4.40, 0.275),
    # OpenAI embeddings
    "text-embedding-3-small": ModelPrice(0.02),
    "text-embedding-3-large": ModelPrice(0.13),
    "text-embedding-ada-002": ModelPrice(0.10),
    # Anthropic (cache write = 5-minute cache rate)
    "claude-haiku-4-5": ModelPrice(1.00, 5.00, 0.10, 1.25),
    "claude-sonnet-4-5": ModelPrice(3.00, 15.00, 0.30, 3.75),
    "claude-opus-4-5": ModelPrice(5.00, 25.00, 0.50, 6.25),
    "claude-opus-4-1": ModelPrice(15.00, 75.00, 1.50, 18.75),
    "claude-sonnet-4": ModelPrice(3.00, 15.00, 0.30, 3.75),
    "claude-3-5-haiku": ModelPrice(0.80, 4.00, 0.08, 1.00),
    # Google Gemini
    "gemini-2.5-pro": ModelPrice(1.25, 10.00, 0.125),
    "gemini-2.5-flash": ModelPrice(0.30, 2.50, 0.03),
    "gemini-2.5-flash-lite": ModelPrice(0.10, 0.40, 0.01),
    "gemini-2.0-flash": ModelPrice(0.10, 0.40, 0.025),
    "gemini-embedding-001": ModelPrice(0.15),
    "text-embedding-004": ModelPrice(0.0),
}


class PriceTable:
    """Looks up the price of a model; warns once per unknown model and prices it at 0.

    Args:
        prices: model name → :class:`ModelPrice`. Names match exactly, or after dropping a
            dated snapshot suffix ("-20251001", "-2024-07-18", "-latest").
    """

    def __init__(self, prices: Mapping[str, ModelPrice]) -> None:
        self._prices = dict(prices)
        self._warned: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    @classmethod
    def default(cls) -> PriceTable:
        """The pinned table shipped with the library."""
        return cls(_DEFAULT_PRICES)

    def with_prices(self, prices: Mapping[str, ModelPrice]) -> PriceTable:
        """A new table with ``prices`` added or replacing existing entries."""
        return PriceTable({**self._prices, **prices})

    def price_for(self, model: str) -> ModelPrice | None:
        """The price entry for ``model``, or None when the table does not know it."""
        name = model.removeprefix("models/")
        while True:
            if name in self._prices:
                return self._prices[name]
            shorter = _SNAPSHOT_SUFFIX.sub("", name)
            if shorter == name:
                return None
            name = shorter

    def cost(self, kind: CallKind, provider: str, model: str, usage: TokenUsage) -> float:
        """USD cost of one call; 0.0 (with one warning per model) when the model is unknown."""
        if provider in _FREE_PROVIDERS:
            return 0.0
        price = self.price_for(model)
        if price is None:
            self._warn_unknown(provider, model, kind)
            return 0.0
        return price.cost(usage)

    def _warn_unknown(self, provider: str, model: str, kind: CallKind) -> None:
        with self._lock:
            if (provider, model) in self._warned:
                return
            self._warned.add((provider, model))
        _log.warning(
            "No price known for %s model %r (%s calls); its cost is counted as 0. "
            "Add it with PriceTable.default().with_prices({...}).",
            provider,
            model,
            kind,
        )
