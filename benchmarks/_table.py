"""Tiny helpers shared by the benchmarks: best-of timing and a printed table."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence


def best_of(fn: Callable[[], object], *, repeat: int = 5, number: int = 1) -> float:
    """Best wall time in seconds of ``number`` calls, over ``repeat`` rounds, per call."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - start) / number)
    return best


def print_table(title: str, rows: Sequence[tuple[str, float, float]], unit: str = "µs") -> None:
    """Rows of (label, seconds, ratio to the anchor)."""
    scale = {"µs": 1e6, "ms": 1e3, "s": 1.0}[unit]
    print(f"\n{title}")
    print(f"{'case':<52} {unit:>10} {'ratio':>8}")
    for label, seconds, ratio in rows:
        print(f"{label:<52} {seconds * scale:>10.2f} {ratio:>7.2f}x")
