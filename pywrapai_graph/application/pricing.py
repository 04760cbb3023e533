"""A pinned, offline price table: USD per million tokens, per model.

Prices are the providers' published list prices for standard (non-batch) usage as of
2025-11, pinned so a cost figure never depends on the network. Override or extend them with
``PriceTable({...})`` or ``PriceTable.default().with_prices({...})``. The data, including
which providers serve models locally and so cost nothing, is ``default_prices.json`` beside
this module: no provider is named in code. Long-context surcharges (e.g. Gemini 2.5 Pro
above 200k input tokens) are not modelled.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources

from pywrapai_graph.domain import CallKind, TokenUsage

__all__ = ["ModelPrice", "PriceTable"]

_log = logging.getLogger(__name__)

_PER_MILLION = 1_000_000.0
# Dated snapshots ("claude-haiku-4-5-20251001", "gpt-4o-mini-2024-07-18") and "-latest"
# aliases are priced as their base model.
_SNAPSHOT_SUFFIX = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2}|latest|preview(-\d{2}-\d{4})?)$")
# Cloud platforms' model ids name a model with a publisher (and a region) prefix and a
# version suffix ("us.anthropic.claude-sonnet-4-5-20250929-v1:0") or an "@" version
# ("claude-haiku-4-5@20251001"); they are priced as the model they name (list prices).
_PLATFORM_PREFIX = re.compile(r"^(?:[a-z]+\.){1,2}(?=[a-z])")
_PLATFORM_SUFFIX = re.compile(r"(?:-v\d+(?::\d+)*|@[\w.-]+)$")


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


@functools.cache
def _default_data() -> tuple[dict[str, ModelPrice], frozenset[str]]:
    """The shipped table (``default_prices.json``): model prices and the free providers."""
    text = resources.files(__package__).joinpath("default_prices.json").read_text("utf-8")
    data = json.loads(text)
    prices = {name: ModelPrice(**rates) for name, rates in data["models"].items()}
    return prices, frozenset(data["free_providers"])


class PriceTable:
    """Looks up the price of a model; warns once per unknown model and prices it at 0.

    Args:
        prices: model name → :class:`ModelPrice`. Names match exactly, or after dropping a
            dated snapshot suffix ("-20251001", "-2024-07-18", "-latest") and a cloud
            platform's model-id form ("anthropic.<model>-v1:0", "<model>@20251001").
        free_providers: providers whose calls cost nothing (models served locally); None
            means the shipped table's list.
    """

    def __init__(
        self, prices: Mapping[str, ModelPrice], free_providers: Iterable[str] | None = None
    ) -> None:
        self._prices = dict(prices)
        self._free = _default_data()[1] if free_providers is None else frozenset(free_providers)
        self._warned: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    @classmethod
    def default(cls) -> PriceTable:
        """The pinned table shipped with the library."""
        prices, free = _default_data()
        return cls(prices, free)

    def with_prices(self, prices: Mapping[str, ModelPrice]) -> PriceTable:
        """A new table with ``prices`` added or replacing existing entries."""
        return PriceTable({**self._prices, **prices}, self._free)

    def with_free_providers(self, providers: Iterable[str]) -> PriceTable:
        """A new table where calls to ``providers`` cost nothing (models served locally)."""
        return PriceTable(self._prices, self._free | set(providers))

    def price_for(self, model: str) -> ModelPrice | None:
        """The price entry for ``model``, or None when the table does not know it."""
        name = model.removeprefix("models/")
        if name in self._prices:  # a name of the table's own, dots and all
            return self._prices[name]
        name = _PLATFORM_SUFFIX.sub("", _PLATFORM_PREFIX.sub("", name))
        while True:
            if name in self._prices:
                return self._prices[name]
            shorter = _SNAPSHOT_SUFFIX.sub("", name)
            if shorter == name:
                return None
            name = shorter

    def cost(self, kind: CallKind, provider: str, model: str, usage: TokenUsage) -> float:
        """USD cost of one call; 0.0 (with one warning per model) when the model is unknown."""
        if provider in self._free:
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
