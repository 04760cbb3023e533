"""Paired significance of the difference between two systems' per-query scores.

The paired randomisation (permutation) test, as information retrieval uses it (Smucker,
Allan and Carterette, CIKM 2007): under the null hypothesis that the two systems are the
same, each query's pair of scores could have come out either way round, so the sign of each
per-query difference is a coin flip. The p-value is the share of sign assignments whose mean
difference is at least as far from 0 as the observed one (two-sided). Sampled with a fixed
seed, so a report is reproducible; counted as ``(hits + 1) / (rounds + 1)``, so it is never
0 and is exactly 1 when the systems score every query the same.

The paired t-test is reported beside it (the test most papers quote): ``t = mean(d) /
(sd(d) / sqrt(n))`` over the per-query differences ``d``, two-sided, ``n - 1`` degrees of
freedom, its p-value the regularised incomplete beta ``I_{df/(df+t²)}(df/2, 1/2)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from pywrapai_graph.errors import InvalidArgumentError

__all__ = ["DEFAULT_ROUNDS", "DEFAULT_SEED", "paired_randomisation_test", "paired_t_test"]

#: Sign assignments sampled: the p-value's standard error is at most 0.005.
DEFAULT_ROUNDS = 10_000
DEFAULT_SEED = 0
#: Rows of sign assignments drawn at once (bounds memory for long query lists).
_BLOCK = 2_000
#: Differences of means closer than this are equal (float summation order).
_TOLERANCE = 1e-12


def _differences(a: Sequence[float], b: Sequence[float], rounds: int) -> npt.NDArray[np.float64]:
    if len(a) != len(b) or not a or rounds < 1:
        raise InvalidArgumentError(
            "the paired test needs two equally long, non-empty score lists and rounds >= 1; "
            f"got {len(a)} and {len(b)} scores, rounds={rounds}"
        )
    return np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)


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
    diffs = _differences(a, b, rounds)
    observed = abs(float(diffs.mean()))
    rng = np.random.default_rng(seed)
    hits = 0
    for start in range(0, rounds, _BLOCK):
        size = min(_BLOCK, rounds - start)
        signs = rng.integers(0, 2, size=(size, len(diffs)), dtype=np.int8) * 2 - 1
        means = np.abs(signs @ diffs) / len(diffs)
        hits += int(np.count_nonzero(means >= observed - _TOLERANCE))
    return (hits + 1) / (rounds + 1)


def paired_t_test(a: Sequence[float], b: Sequence[float]) -> float:
    """The two-sided p-value of the paired t-test of ``a`` against ``b`` (1 when every
    difference is the same 0, 0 when every difference is the same non-zero number, 1 for a
    single query).

    Raises:
        InvalidArgumentError: lists of different lengths, or no scores.
    """
    diffs = _differences(a, b, 1)
    n = len(diffs)
    mean = float(diffs.mean())
    spread = float(diffs.std(ddof=1)) if n > 1 else 0.0
    if n < 2 or spread <= _TOLERANCE:
        return 1.0 if n < 2 or abs(mean) <= _TOLERANCE else 0.0
    t = mean / (spread / math.sqrt(n))
    df = n - 1
    return min(1.0, _incomplete_beta(df / (df + t * t), df / 2, 0.5))


def _incomplete_beta(x: float, a: float, b: float) -> float:
    """The regularised incomplete beta function I_x(a, b), by its continued fraction."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    front = math.exp(log_front + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _beta_fraction(x, a, b) / a
    return 1.0 - front * _beta_fraction(1.0 - x, b, a) / b


def _beta_fraction(x: float, a: float, b: float) -> float:
    """The continued fraction of I_x(a, b), evaluated by the modified Lentz method."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    value = d
    for m in range(1, 300):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            value *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return value
