"""Change points in one series: E-divisive means with its permutation significance test (numpy only).

Matteson & James, "A Nonparametric Approach for Multiple Change Point Analysis of Multivariate Data"
(JASA 2014), as MongoDB's performance CI uses it (Daly et al., ICPE 2020). For a segment Z and a split
tau into X = Z[:tau] (n values) and Y = Z[tau:] (m values), with exponent 1:

    E(X, Y) = 2/(nm) sum|x - y| - 1/C(n,2) sum_{i<k}|x_i - x_k| - 1/C(m,2) sum_{j<k}|y_j - y_k|
    Q(X, Y) = nm/(n+m) E(X, Y)

The candidate is the split of largest Q over every segment found so far (MongoDB's form: each segment
whole, kappa = its end). Its significance: the same maximum over random permutations of that segment;
p = (#permuted >= observed + 1) / (permutations + 1). A candidate with p <= alpha splits its segment and
the search goes on; the first one that isn't stops it. On a series with no change (exchangeable runs),
the first test rejects with probability alpha: that is the stated false-alarm rate per clean series
(scripts/bench/history.py measures it). A significant split smaller than `min_change` (the difference of
the two sides' medians, on the log scale a ratio: compare.py's --threshold) still splits the segment, so
the search goes on, but is not reported: a CI owner acts on neither. Deterministic: the permutations come
from a seeded generator.

Short series: a permutation test of n runs can't give a p-value below the share of orders that look as
changed as the observed one. For a perfect step between k runs and n - k, those are the orders with the same
k runs first, or the other n - k (Q is symmetric): 2 / C(n, k), smallest in the middle (smallest_p). With
6 runs that is 0.1, so no step of any size can be found at alpha 0.01; runs_needed says how many runs can.
The Monte-Carlo p-value only estimates the exact one, so a short segment gets more permutations (a count set
by its length alone, so the test stays exact in size): at least RESOLUTION / alpha, within BUDGET.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

DEFAULT_ALPHA = 0.01
DEFAULT_PERMUTATIONS = 199
# The fewest runs on either side of a change (two are needed for the within-sample term).
DEFAULT_MIN_SIZE = 3
# The smallest change reported, as a ratio (compare.py's default --threshold).
DEFAULT_MIN_CHANGE = 0.02
# A short segment gets at least RESOLUTION / alpha permutations (1999 at alpha 0.01), as long as permutations
# times its length squared stays within BUDGET (what the default 199 permutations cost at 30 runs): a p-value
# near alpha is then estimated closely enough to fall on the right side of it.
RESOLUTION = 20
BUDGET = DEFAULT_PERMUTATIONS * 30 ** 2
# A series can decide when its smallest p-value is at most alpha / MARGIN: the Monte-Carlo estimate of a
# p-value at that floor is then below alpha nearly always (at MARGIN 1, about half the time).
MARGIN = 2
# Permutations resampled at once (their distance matrices held together), and at most this many between two
# checks of whether the test can still pass.
_CHUNK_ELEMENTS = 4_000_000
_EARLY_CHUNK = 25


@dataclasses.dataclass(frozen=True)
class ChangePoint:
    index: int  # the first value after the change
    q: float
    p_value: float


def _prefix(distances: np.ndarray) -> np.ndarray:
    """(..., n+1, n+1) two-dimensional prefix sums of (..., n, n) distance matrices."""
    shape = distances.shape[:-2] + (distances.shape[-2] + 1, distances.shape[-1] + 1)
    out = np.zeros(shape)
    out[..., 1:, 1:] = distances.cumsum(-2).cumsum(-1)
    return out


def q_values(distances: np.ndarray, min_size: int) -> np.ndarray:
    """Q of every split tau in [min_size, n - min_size] of (..., n, n) distance matrices: (..., splits)."""
    n = distances.shape[-1]
    prefix = _prefix(distances)
    tau = np.arange(min_size, n - min_size + 1)
    m = n - tau
    total = prefix[..., n, n][..., None]
    left = prefix[..., tau, tau]  # sum over X x X (each pair twice)
    left_all = prefix[..., tau, n]  # sum over X x Z
    between = left_all - left
    right = total - 2 * left_all + left
    energy = 2 * between / (tau * m) - left / (tau * (tau - 1)) - right / (m * (m - 1))
    return tau * m / n * energy


def best_split(values: np.ndarray, min_size: int) -> tuple:
    """(tau, Q) of a segment's largest Q, or (None, 0) when it is too short to split."""
    if len(values) < 2 * min_size:
        return None, 0.0
    q = q_values(np.abs(values[:, None] - values[None, :]), min_size)
    best = int(np.argmax(q))
    return best + min_size, float(q[best])


def permutation_p(values: np.ndarray, observed: float, min_size: int, permutations: int,
                  rng: np.random.Generator, give_up_above: float = 1.0) -> float:
    """The share of random orders of `values` whose largest Q is at least `observed` (counting this one).

    give_up_above: stop as soon as the share is sure to exceed it (a lower bound is returned): the search
    stops at such a p anyway, and the generator's stream is drawn in the same order, so the change points
    found are the same, only found sooner (most series have no change, and most permutations beat them)."""
    at_least = 0
    step = max(1, min(_EARLY_CHUNK, _CHUNK_ELEMENTS // len(values) ** 2))
    for start in range(0, permutations, step):
        if (at_least + 1) / (permutations + 1) > give_up_above:
            break
        orders = np.argsort(rng.random((min(step, permutations - start), len(values))), axis=1)
        permuted = values[orders]
        maxima = q_values(np.abs(permuted[:, :, None] - permuted[:, None, :]), min_size).max(axis=1)
        # A float tolerance: a permutation that is the observed order again must count as at least as large.
        at_least += int(np.sum(maxima >= observed * (1 - 1e-12)))
    return (at_least + 1) / (permutations + 1)


def smallest_p(n: int, min_size: int = DEFAULT_MIN_SIZE) -> float:
    """The smallest p-value the permutation test can give any series of n values (a perfect step in the
    middle): 2 / C(n, n // 2); 1 when the series is too short to split."""
    if n < 2 * max(2, min_size):
        return 1.0
    return min(1.0, 2 / math.comb(n, n // 2))


def can_decide(n: int, alpha: float, min_size: int = DEFAULT_MIN_SIZE) -> bool:
    """Whether a series of n values can show a change at `alpha` (with MARGIN to spare)."""
    return smallest_p(n, min_size) * MARGIN <= alpha


def runs_needed(alpha: float, min_size: int = DEFAULT_MIN_SIZE) -> int:
    """The fewest values a series needs before a change (a step in its middle) can be significant at `alpha`."""
    n = 2 * max(2, min_size)
    while not can_decide(n, alpha, min_size):
        n += 1
    return n


def permutations_for(n: int, alpha: float, permutations: int) -> int:
    """The permutations a segment of n values gets: `permutations`, more for a short one (see RESOLUTION)."""
    return max(permutations, min(math.ceil(RESOLUTION / alpha) - 1, BUDGET // max(1, n * n)))


def change_points(values, alpha: float = DEFAULT_ALPHA, permutations: int = DEFAULT_PERMUTATIONS,
                  min_size: int = DEFAULT_MIN_SIZE, seed: int = 0, min_change: float = 0.0) -> list:
    """The significant change points of a 1-D series of logs, in index order, at least `min_change` in size."""
    values = np.asarray(values, dtype=np.float64)
    rng = np.random.default_rng(seed)
    bounds = [0, len(values)]
    found = []
    while True:
        candidates = []
        for start, end in zip(bounds, bounds[1:]):
            tau, q = best_split(values[start:end], min_size)
            if tau is not None:
                candidates.append((q, start, end, start + tau))
        if not candidates:
            break
        q, start, end, index = max(candidates)
        p = permutation_p(values[start:end], q, min_size, permutations_for(end - start, alpha, permutations), rng,
                          give_up_above=alpha)
        if p > alpha:
            break
        if abs(np.median(values[index:end]) - np.median(values[start:index])) >= np.log1p(min_change):
            found.append(ChangePoint(index, q, p))
        bounds = sorted(bounds + [index])
    return sorted(found, key=lambda c: c.index)
