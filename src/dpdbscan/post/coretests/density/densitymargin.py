"""The noise of the weighted sums and the margin of the density core test.

Every quantity here is a function of public inputs only: the weights, the
noise law of the release (discrete or continuous Laplace at its epsilon, or
the discrete Gaussian at its sigma^2: the ``epsilon`` argument of these
functions is the noise's scale, :mod:`dpdbscan.laws.noise`; the sparse
histogram's theta), beta, MinPts and the number of sub-cells.
"""

from __future__ import annotations

import functools
import math
import weakref
from dataclasses import dataclass
from typing import Literal, TypeAlias

import numpy as np

from ....laws import discretegaussian as _gaussian
from ....laws.noise import cdf as _noise_cdf
from ....laws.noise import is_integer, lam_top, log_mgf, reach, resolution
from ....laws.noise import tail as _noise_tail
from ....laws.noise import variance as noise_variance
from . import lawcache
from .weights import BallWeights

MARGINS = ("chernoff", "pointwise")  # or a number c: c * sigma(q)

#: How an empty cell reads in the release (:func:`empty_truncation`): None, its
#: noise Z (dense); a number theta, Z 1[Z >= theta] (sparse); "zero", exactly 0
#: (stability); "positive", Z^+ = max(Z, 0) (a bound for every cell of a release
#: that drops noisy counts below a threshold).
Truncation: TypeAlias = float | Literal["positive", "zero"] | None


@functools.lru_cache(maxsize=1024)
def weighted_tail_bound(noise: str, epsilon: float, weights: tuple, log_level: float) -> float:
    """Smallest g with P(sum_Y W_Y Z_Y >= g) <= exp(log_level) by Chernoff.

    For every 0 < lam < epsilon / max W (Laplace; any lam > 0 for the
    Gaussian), P(N >= g) <= exp(K(lam) - lam g) with
    K(lam) = sum_Y log M(lam W_Y), M the exact MGF of one noise term; so the
    bound holds at g(lam) = (K(lam) - log_level) / lam, and we take the
    smallest over lam. Rigorous (the optimiser can only miss the minimum,
    which makes g larger, never wrong).
    """
    from scipy.optimize import minimize_scalar

    if noise == "none" or math.isinf(epsilon):
        return 0.0
    uniq, counts = _multiset(weights)
    top = lam_top(noise, epsilon, log_level) / uniq.max() * (1.0 - 1e-9)

    def g_of(lam):
        return float((counts * log_mgf(noise, epsilon, lam * uniq)).sum() - log_level) / lam

    grid = top * np.geomspace(1e-4, 1.0 - 1e-9, 64)
    vals = [g_of(x) for x in grid]
    i = int(np.argmin(vals))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    best = vals[i]
    if hi > lo:
        res = minimize_scalar(g_of, bounds=(lo, hi), method="bounded", options={"xatol": 1e-12 * top})
        best = min(best, float(res.fun))
    return best


def _term_cdf(noise: str, epsilon: float, truncation):
    """CDF of one term's deviation R - x in the worst case the bound covers.

    ``truncation`` None: R - x = Z (dense release). A number theta: an empty
    cell of a release that drops noisy counts below theta, R = Z 1[Z >= theta].
    ``"positive"``: Z^+ = max(Z, 0), which dominates R - x for every cell of
    such a release (R - x = Z if released, -x <= 0 if not).
    """
    F = _noise_cdf(noise, epsilon)
    if truncation is None:
        return F, False
    if truncation == "positive":
        return (lambda r: np.where(np.asarray(r) < 0, 0.0, F(r))), True
    theta = float(truncation)
    below = float(F(math.ceil(theta) - 1)) if is_integer(noise) else float(F(theta))

    def G(r):
        r = np.asarray(r, dtype=np.float64)
        return np.where(r < 0, 0.0, np.where(r < theta, below, F(r)))

    return G, True


@functools.lru_cache(maxsize=1024)
def weighted_quantile(
    noise: str,
    epsilon: float,
    weights: tuple,
    level: float,
    truncation: Truncation = None,
    floor: float | None = None,
) -> float:
    """g with P(sum_Y W_Y R_Y >= g) <= level, computed exactly up to binning.

    Each term W R is rounded *up* to a multiple of delta (B = ceil(W R / delta)),
    so sum delta B >= the sum and its tail dominates; the laws of the B's are
    exact CDF differences, combined by FFT. The answer is conservative by at
    most (number of terms) * delta, delta = 0.01 max(1, 1/epsilon) (0.01
    max(1, sigma) for the Gaussian). Tail mass beyond |Z| = z_max (below
    1e-6 level) is moved inwards only on the lower side. ``truncation``: see
    :func:`_term_cdf`. When the binned law would be too long (many terms in
    high dimension) the Chernoff bound with the exact MGF of the (truncated)
    term is used instead, and the smaller of the two is returned otherwise:
    both are rigorous.

    ``floor``: a lower level whose z_max (farther out) the law may be built
    with, so that the quantiles of many levels share one law (the law is
    the same or longer, the mass moved inwards smaller: each quantile is as
    rigorous as with its own z_max). Used when that law is not too long.
    """
    if noise == "none" or math.isinf(epsilon):
        return 0.0
    uniq, counts = _multiset(weights)
    # public inputs only: kept across processes (lawcache), the same float
    key = lawcache.key_of((noise, float(epsilon), float(level), truncation, floor), uniq, counts)
    held = lawcache.load(key)
    if held is not None:
        return held
    value = _quantile(noise, epsilon, weights, level, truncation, floor)
    lawcache.store(key, value)
    return value


def _quantile(
    noise: str, epsilon: float, weights: tuple, level: float, truncation: Truncation, floor: float | None
) -> float:
    """:func:`weighted_quantile` computed (not read from the disk's cache)."""
    uniq, counts = _multiset(weights)
    law = None
    if floor is not None and floor < level:
        law = _binned_survival(noise, epsilon, weights, floor, truncation)
    if law is None:
        law = _binned_survival(noise, epsilon, weights, level, truncation)
    if law is None:
        return _chernoff(noise, epsilon, uniq, counts, level, truncation)
    survival, offset, delta = law
    above = np.flatnonzero(survival > level)
    i = int(above[-1]) if above.size else -1
    # P(B > i + offset) <= level, so P(sum > (i + offset) delta) <= level and
    # P(sum >= g) <= level for g one bin higher. With many terms the binning
    # slack can exceed Chernoff's: both are valid, take the smaller.
    return min((i + offset + 1) * delta, _chernoff(noise, epsilon, uniq, counts, level, truncation))


@functools.lru_cache(maxsize=16)
def _binned_survival(
    noise: str, epsilon: float, weights: tuple, level: float, truncation: Truncation
) -> tuple[np.ndarray, int, float] | None:
    """The survival function of the binned sum of :func:`weighted_quantile`
    with z_max for ``level``: (survival, offset, delta) with survival[i] =
    P(B >= i + offset), bins of width delta; None when it would be longer
    than :data:`_MAX_LAW`. Cached: the laws of a model's few sub-positions
    serve all the levels asked of them."""
    cdf, nonneg = _term_cdf(noise, epsilon, truncation)
    delta = 0.01 * resolution(noise, epsilon)
    zmax = reach(noise, epsilon, -(math.log(1e6 / level) + 2.0))
    uniq, counts = _multiset(weights)
    laws, offset, length = [], 0, 1
    for wi, ci in zip(uniq, counts):
        jlo = 0 if nonneg else int(math.floor(-wi * zmax / delta))
        jhi = int(math.ceil(wi * zmax / delta))
        j = np.arange(jlo, jhi + 1)
        Fj = cdf(j * delta / wi)
        pmf = np.diff(np.concatenate(([0.0], Fj)))
        pmf[-1] += 1.0 - Fj[-1]  # below 1e-6 level: negligible
        laws.append((pmf, int(ci)))
        offset += jlo * int(ci)
        length += (jhi - jlo) * int(ci)
        if length > _MAX_LAW:
            return None
    n = 1 << int(math.ceil(math.log2(length)))
    spec = np.ones(n // 2 + 1, dtype=np.complex128)
    for pmf, ci in laws:
        spec *= np.fft.rfft(pmf, n) ** ci
    law = np.maximum(np.fft.irfft(spec, n)[:length], 0.0)
    survival = np.cumsum(law[::-1])[::-1]
    survival.flags.writeable = False  # shared by the cache
    return survival, offset, delta


_MAX_LAW = 1 << 20


def _log_mgf_term(noise: str, epsilon: float, s: np.ndarray, truncation) -> np.ndarray:
    """log E exp(s R) for one term, 0 < s < epsilon (any s > 0 for the
    Gaussian); R as in :func:`_term_cdf`."""
    if truncation is None:
        return log_mgf(noise, epsilon, s)
    positive = truncation == "positive"
    if noise == "gaussian":
        t = 1 if positive else math.ceil(float(truncation))
        below = 1.0 - _noise_tail(noise, epsilon, t)  # P(Z < t)
        released = _gaussian.log_tail_mgf(epsilon, t, s)  # log E[e^{sZ}; Z >= t]
        return np.logaddexp(math.log(max(below, 1e-300)), released)
    if noise == "discrete":
        q = math.exp(-epsilon)
        t = 1 if positive else math.ceil(float(truncation))
        below = 1.0 / (1.0 + q) if positive else (1.0 - q**t / (1.0 + q) if t >= 1 else q / (1.0 + q))
        x = np.exp(s - epsilon)  # q e^s < 1; e^s alone overflows beyond s ~ 709
        upper = (1.0 - q) / (1.0 + q) * x**t / (1.0 - x)
    else:
        t = 0.0 if positive else float(truncation)  # type: ignore[assignment]
        below = 0.5 if positive else 1.0 - 0.5 * math.exp(-epsilon * t)
        upper = 0.5 * epsilon * np.exp(-(epsilon - s) * t) / (epsilon - s)
    return np.log(below + upper)


def _chernoff(noise, epsilon, uniq, counts, level, truncation) -> float:
    """min over 0 < lam < epsilon / max W of (sum log M(lam W) - log level) / lam."""
    log_level = math.log(level)
    top = lam_top(noise, epsilon, log_level) / uniq.max() * (1.0 - 1e-9)

    def g_of(lam):
        return float((counts * _log_mgf_term(noise, epsilon, lam * uniq, truncation)).sum() - log_level) / lam

    lams = top * np.geomspace(1e-4, 1.0 - 1e-9, 200)
    return min(g_of(x) for x in lams)


@dataclass(frozen=True)
class Margin:
    """The core threshold's margin per sub-position, and what it was made of.

    ``values[i]`` is m(q) for sub-position i; ``sigma[i]`` the standard deviation
    of the weighted noise there; ``empty[i]`` the empty-neighbourhood bound G_0
    (0 when not used); ``n_events`` the union-bound count; ``rule`` the public
    rule ("chernoff", "pointwise" or c); ``shown``: a = c sqrt(Var Z / theta)
    where the rule's margin is capped by the noise a sparse release can show
    (:func:`shown_threshold`), else None.
    """

    rule: str | float
    values: np.ndarray
    sigma: np.ndarray
    empty: np.ndarray
    n_events: int
    beta: float
    shown: float | None = None

    def own(self, min_samples: float) -> np.ndarray:
        """The rule's m(q) at this MinPts before the empty-space guard (numeric rules)."""
        own = float(self.rule) * self.sigma
        if self.shown is None:
            return own
        return np.minimum(own, max(shown_threshold(self.shown, min_samples) - min_samples, 0.0))


def shown_threshold(a: float, min_samples: float) -> float:
    """T with T = MinPts + a sqrt(T): sqrt(T) = (a + sqrt(a^2 + 4 MinPts)) / 2.

    The one-sigma margin of a sparse release (issue 30; results/hd78/RULE.md):
    a released value is at least theta and a weight at most 1, so a
    sub-cell whose estimate is E~ has sum over released cells of W^2 <=
    E~ / theta, and their noise a variance of at most Var Z E~ / theta.
    A cell that is not released reads 0 and adds no noise. At the threshold
    (E~ = T) c such standard deviations are c sqrt(Var Z T / theta) =
    a sqrt(T); every estimate above T clears its own bound too (E~ - MinPts
    grows faster than a sqrt(E~)). Released empty cells are the guard's."""
    root = 0.5 * (a + math.sqrt(a * a + 4.0 * max(float(min_samples), 0.0)))
    return root * root


def empty_truncation(kind: str, theta: float) -> float | Literal["zero"] | None:
    """How an empty cell reads in a release of this kind: its noise Z (dense),
    Z 1[Z >= theta] (sparse) or exactly 0 (stability: empty cells are never
    released; returns "zero")."""
    if kind == "dense":
        return None
    if kind == "stability":
        return "zero"
    return float(theta)


def margin(
    rule: str | float,
    weights: BallWeights,
    noise: str,
    epsilon: float,
    beta: float,
    n_cells: int,
    *,
    min_samples: float | None = None,
    truncation: Truncation = None,
    guard: bool = True,
    shown: bool = True,
) -> Margin:
    """m(q) from public quantities only.

    ``rule``:

    * a number ``c >= 0`` (the default rule, c = 1): m(q) = c sigma(q), where
      sigma(q)^2 = Var(Z) sum_Y W(q, Y)^2 is the variance of the weighted noise
      N(q) = E~(q) - E(q). On a sparse release (``truncation`` a theta > 0,
      ``min_samples`` given, ``shown``) c sigma(q) is capped by c standard
      deviations of the noise the release's shown cells can hold at the
      threshold: T - MinPts with T = MinPts + c sqrt(Var Z T / theta)
      (:func:`shown_threshold`; issue 30, results/hd78/RULE.md).
      ``shown=False`` gives the margin before 0.3.0 (model files written then).
    * ``"chernoff"``: the two-sided union bound, P(|N(q)| > m) <= beta /
      (k^d |X|) by the weighted Chernoff bound (study only: far too strict).
    * ``"pointwise"``: the Chernoff bound at level beta for one sub-cell.

    Whatever the rule, with ``guard`` (and ``min_samples`` given) m(q) is
    raised to G_0(q) - MinPts when that is larger, G_0(q) being the
    (1 - beta / (k^d |X|)) quantile of the weighted noise of an *empty*
    neighbourhood (:func:`weighted_quantile`, ``truncation`` describing how
    an empty cell reads): then, with probability >= 1 - beta, no sub-cell
    with no point within its reach is core anywhere in the universe. (In 0.1
    only the numeric rules had the guard: "pointwise" put spans in
    empty space in about 28% of the fits of one point in d = 1.)
    """
    var = noise_variance(noise, epsilon)
    sigma = np.sqrt(var * weights.sums_of_squares)
    n_events = int(n_cells) * weights.k**weights.d
    empty = np.zeros(len(weights.positions))
    a_shown: float | None = None
    if isinstance(rule, str):
        if rule not in MARGINS:
            raise ValueError(f"density margin must be one of {MARGINS} or a number >= 0, got margin={rule!r}")
        if rule == "chernoff":
            level = math.log(beta) - math.log(2.0) - math.log(n_events)
        else:
            level = math.log(beta)
        vals = np.array([weighted_tail_bound(noise, float(epsilon), key, level) for key in row_keys(weights)])
    else:
        c = float(rule)
        if not (math.isfinite(c) and c >= 0):
            raise ValueError(f"a numeric density margin must be finite and >= 0, got {rule!r}")
        vals = c * sigma
        if (
            shown
            and isinstance(truncation, float)
            and math.isfinite(truncation)
            and truncation > 0
            and min_samples is not None
            and var > 0
        ):
            # a sparse release: only its released cells carry noise, at most
            # Var Z T / theta of it at the threshold T (shown_threshold)
            a_shown = c * math.sqrt(var / truncation)
            vals = np.minimum(vals, max(shown_threshold(a_shown, min_samples) - min_samples, 0.0))
    if guard and min_samples is not None and truncation != "zero":
        empty = np.array(
            [
                weighted_quantile(noise, float(epsilon), key, beta / n_events, truncation)
                for key in row_keys(weights)
            ]
        )
        vals = np.maximum(vals, empty - min_samples)
    vals.setflags(write=False)
    return Margin(rule, vals, sigma, empty, n_events, float(beta), a_shown)


def accuracy_margin(
    weights: BallWeights, noise: str, epsilon: float, beta: float, n_cells: int, kind: str = "dense"
) -> np.ndarray:
    """G(q) with P(N(q) > G(q) for some sub-cell q) <= beta (one-sided union
    bound over the k^d |X| sub-cells; exact quantiles up to binning).

    Dense: N(q) = sum W Z. Truncating releases: each term's deviation R - x is
    at most Z^+, so the bound uses sum W Z^+. The event "N(q) <= G(q) for all
    q" is the accuracy event of the one-sided guarantee (docs/density-notes.md).
    """
    n_events = int(n_cells) * weights.k**weights.d
    trunc = None if kind == "dense" else "positive"
    return np.array(
        [weighted_quantile(noise, float(epsilon), key, beta / n_events, trunc) for key in row_keys(weights)]
    )


def swamped(m: Margin, min_samples: float) -> int | None:
    """The largest MinPts whose core test is exactly this one's, when it is
    above ``min_samples`` (None otherwise): with the empty-space guard binding
    at every sub-position the threshold MinPts + m(q) is G0(q) whatever MinPts,
    so every MinPts up to min_q (G0(q) - c sigma(q)) gives the same release.
    Numeric margin rules only (the tail rules' own bounds are not kept)."""
    if isinstance(m.rule, str) or not np.any(m.empty > 0):
        return None
    own = m.own(min_samples)  # the rule's m(q) before the guard
    if not np.all(m.empty - min_samples >= own - 1e-9):
        return None  # the rule's own margin binds somewhere: MinPts moves the threshold there
    flat = int(math.floor(float(np.min(m.empty - own)) + 1e-9))
    if m.shown is not None:
        # the sparse release's own margin grows with MinPts (shown_threshold):
        # the largest MinPts at which the guard still binds everywhere
        while flat > min_samples and not np.all(m.empty - flat >= m.own(flat) - 1e-9):
            flat -= 1
    return flat if flat > min_samples else None


#: The probabilities a place's statement is rounded up to (:func:`place_tail`).
PLACE_LEVELS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5)


def place_tail(
    weights: BallWeights, m: Margin, noise: str, epsilon: float, kind: str = "dense"
) -> float | None:
    """p with P(N(q) >= m(q)) <= p for every sub-cell q taken alone (not all at once).

    This is what the margin buys each place: a sub-cell whose estimate E(q)
    is below MinPts is core only when its noise N(q) exceeds m(q), so it is
    core with probability at most p. p is the smallest of
    :data:`PLACE_LEVELS` whose exact quantile (:func:`weighted_quantile`,
    truncating releases bounded by Z^+ as in :func:`accuracy_margin`) lies
    at or below m(q) for every sub-position: rounded up, never down. None
    when even 1/2 does not (a margin below the noise's median).
    """
    if noise == "none" or math.isinf(epsilon):
        return 0.0
    trunc = None if kind == "dense" else "positive"
    worst = 0.0
    for key, mq in zip(row_keys(weights), m.values):
        floor = PLACE_LEVELS[0]  # one law per sub-position for all the levels
        held = (
            lv for lv in PLACE_LEVELS if weighted_quantile(noise, float(epsilon), key, lv, trunc, floor) <= mq
        )
        p = next(held, None)
        if p is None:
            return None
        worst = max(worst, p)
    return worst


def place_count(
    weights: BallWeights,
    m: Margin,
    noise: str,
    epsilon: float,
    min_samples: float,
    beta: float,
    kind: str = "dense",
) -> int:
    """M with: a sub-cell q taken alone whose centre has fewer than M points
    within rho alpha is core with probability at most ``beta``. Such a q has
    E(q) <= M - 1 <= MinPts + m(q) - g(q), g(q) the exact (1 - beta) quantile
    of its noise N(q), so being core needs N(q) >= g(q): M = floor(MinPts +
    min_q (m(q) - g(q))) + 1. Where the empty-space guard sets the threshold,
    this is what a place needs (far above MinPts when the margin swamps it)."""
    if noise == "none" or math.isinf(epsilon):
        return int(math.floor(min_samples + float(m.values.min()))) + 1
    trunc = None if kind == "dense" else "positive"
    floor = PLACE_LEVELS[0]  # the laws of place_tail, when beta is above it
    g = np.array(
        [weighted_quantile(noise, float(epsilon), key, beta, trunc, floor) for key in row_keys(weights)]
    )
    return int(math.floor(min_samples + float((m.values - g).min()))) + 1


def _multiset(weights: tuple) -> tuple[np.ndarray, np.ndarray]:
    """The distinct positive weights and how often each occurs (``np.unique``
    of them), once per :class:`_Key`: the margins ask for them about 15
    times per fit, and turning 1.28M Python floats into an array and
    sorting them took 0.15 s each time in d = 8."""
    held = getattr(weights, "_multiset", None) if isinstance(weights, _Key) else None
    if held is not None:
        return held
    w = np.asarray(weights, dtype=np.float64)
    w = w[w > 0]
    uniq, counts = np.unique(w, return_counts=True)
    uniq.setflags(write=False)
    counts.setflags(write=False)
    if isinstance(weights, _Key):
        weights._multiset = (uniq, counts)
    return uniq, counts


class _Key(tuple):
    """The sorted weights of a sub-position: a tuple that computes its hash
    once (the margins' caches hash 1.28M floats per lookup in d = 8) and
    holds its multiset (:func:`_multiset`)."""

    _hash: int
    _multiset: tuple[np.ndarray, np.ndarray]

    def __hash__(self) -> int:
        try:
            return self._hash
        except AttributeError:
            self._hash = tuple.__hash__(self)
            return self._hash


#: Keys of the rows of read-only weight arrays (the ball weights, computed
#: once per process), by the array's identity and the row's address: every
#: fit reads the same ones, and sorting 1.28M weights took 0.2 s each time.
_KEYS: dict[tuple[int, int, int], tuple[weakref.ref, _Key]] = {}


def _forget(at: tuple[int, int, int], _ref: object) -> None:
    _KEYS.pop(at, None)  # the weight array is gone


def _rounded(row: np.ndarray) -> tuple:
    # the cache key: the bounds depend on the multiset of weights only, and
    # weights agree to far below any effect on them
    # (np.sort then tolist: the same floats in the same order as sorted() of
    # them, without a Python loop over the 1.28M weights of d = 8)
    base = row.base
    held = isinstance(base, np.ndarray) and not base.flags.writeable and not row.flags.writeable
    if held:
        at = (id(base), int(row.__array_interface__["data"][0]), row.size)
        hit = _KEYS.get(at)
        if hit is not None and hit[0]() is base:
            return hit[1]
    key = _Key(np.sort(np.round(row[row > 0], 12)).tolist())
    if held:
        _KEYS[at] = (weakref.ref(base, functools.partial(_forget, at)), key)
    return key


#: :func:`row_keys` of the ball weights held (by their identity).
_ROW_KEYS: dict[int, tuple[weakref.ref, tuple[tuple, ...]]] = {}


def row_keys(weights: BallWeights) -> tuple[tuple, ...]:
    """The key (:func:`_rounded`) of every row of the weights, computed once
    per class of rows with the same multiset (:attr:`BallWeights.row_classes`)
    and held with the weights: in d = 8 with two sub-cells the 256 rows are
    reflections of one another, and a key of each (593k Python floats) took
    4.9 GB."""
    hit = _ROW_KEYS.get(id(weights))
    if hit is not None and hit[0]() is weights:
        return hit[1]
    made: dict[int, tuple] = {}
    keys = []
    for c in weights.row_classes.tolist():
        if c not in made:
            made[c] = _rounded(weights.row(c))
        keys.append(made[c])
    out = tuple(keys)
    at = id(weights)
    _ROW_KEYS[at] = (weakref.ref(weights, functools.partial(_forget_keys, at)), out)
    return out


def _forget_keys(at: int, _ref: object) -> None:
    _ROW_KEYS.pop(at, None)
