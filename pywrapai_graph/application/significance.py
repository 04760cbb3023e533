"""Paired significance of the difference between two systems' per-query scores.

The paired randomisation (permutation) test, as information retrieval uses it (Smucker,
Allan and Carterette, CIKM 2007): under the null hypothesis that the two systems are the
same, each query's pair of scores could have come out either way round, so the sign of each
per-query difference is a coin flip. The p-value is the share of sign assignments whose mean
difference is at least as far from 0 as the observed one (two-sided). Sampled with a fixed
seed, so a report is reproducible; counted as ``(hits + 1) / (rounds + 1)``, so it is never
0 and is exactly 1 when the systems score every query the same.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pywrapai_graph.errors import InvalidArgumentError

__all__ = ["DEFAULT_ROUNDS", "DEFAULT_SEED", "paired_randomisation_test"]

#: Sign assignments sampled: the p-value's standard error is at most 0.005.
DEFAULT_ROUNDS = 10_000
DEFAULT_SEED = 0
#: Rows of sign assignments drawn at once (bounds memory for long query lists).
_BLOCK = 2_000
#: Differences of means closer than this are equal (float summation order).
_TOLERANCE = 1e-12


def paired_randomisation_test(
    a: Sequence[float],
    b: Sequence[float],
    *,
    rounds: int = DEFAULT_ROUNDS,
    seed: int = DEFAULT_SEED,
) -> float:
    """The two-sided p-value that ``a`` and ``b`` (scores of the same queries, in the same
    order) come from the same system.

    Raises:
        InvalidArgumentError: lists of different lengths, no scores, or rounds < 1.
    """
    if len(a) != len(b) or not a or rounds < 1:
        raise InvalidArgumentError(
            "the paired test needs two equally long, non-empty score lists and rounds >= 1; "
            f"got {len(a)} and {len(b)} scores, rounds={rounds}"
        )
    diffs = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    observed = abs(float(diffs.mean()))
    rng = np.random.default_rng(seed)
    hits = 0
    for start in range(0, rounds, _BLOCK):
        size = min(_BLOCK, rounds - start)
        signs = rng.integers(0, 2, size=(size, len(diffs)), dtype=np.int8) * 2 - 1
        means = np.abs(signs @ diffs) / len(diffs)
        hits += int(np.count_nonzero(means >= observed - _TOLERANCE))
    return (hits + 1) / (rounds + 1)
