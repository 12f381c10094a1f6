"""Empirical privacy audit at person level (issue 20, item 9): neighbouring
datasets that differ by one whole privacy unit, through the estimator.

The unit is "many points in several cells": in D' it adds ``POINTS`` points
to each of six cells; the release bounds it to k = 4 cells and m = 2 points
per cell and adds discrete Gaussian noise calibrated to (epsilon, delta) =
(1, 1e-6) through zCDP. Events on the released histogram ("the sum of the
six cells' noisy counts is at least t", "the first cell's is at least t")
give Clopper-Pearson lower bounds on epsilon at the stated delta
(``stats.epsilon_lower_bound``: ln((P_a(E) - delta) / P_b(E)) over both
directions and the complements), which must not exceed epsilon.

Many runs at once. The data are a strip of ``B`` blocks of eight cells; each
block has one background unit (one point, in the block's eighth cell) in D
and in D', and D' adds one such unit per block. The histogram is dense, so a
block's released values depend on its own cells' counts and their own noise
only, and a unit's bounded counts on that unit only (its kept cells are a
pseudo-random function of the unit, the cell and the release's key): each
fit yields B independent runs of the pair (block of D, same block plus one
unit), as tests/test_audit.py's strips do for single points.

The power check: the same audit of a mechanism that forgets the bound
(``kept_capped`` patched to count every point of every unit) must see an
epsilon above the claim. There the unit adds 6 x POINTS = 120 to the six
cells' sum against a noise standard deviation of about 44 (sigma^2 = k m^2 /
(2 rho) = 328 per cell): P_D(sum >= 0) is about 1/2 against P_D'(sum >= 0)
about 0.997, whose complements' ratio alone is ln(0.5 / 0.003) = 5; the
measured bounds are 2.5 to 3.8 with 4,000 runs (0.11 at most for the
bounded release with 40,000).

What the audit cannot do: be tight. A Gaussian release at delta = 1e-6
reaches its epsilon only on events whose probability is of the order of
delta, which no affordable number of runs can estimate; the bounds here
test that one unit's whole contribution is bounded as stated (the power
check shows they would notice if it were not), not that epsilon = 1 is
the smallest claim that holds.

False failures: each call of :func:`_check` spends ``RATE`` over its events
by a union bound (4 one-sided bounds each); fewer than ten calls in all.
The long version (``-m audit``) repeats the audit with 15 times the runs
(600,000 per dataset) and the operating system's CSPRNG: its largest bound
was 0.32 (about 50 s).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpdbscan import DPDBSCAN
from dpdbscan.exceptions import UtilityWarning
from dpdbscan.release import bounding

from stats import BOUNDS_PER_EVENT, EventAudit

EPSILON, DELTA = 1.0, 1e-6
K, M = 4, 2
CELLS = 8  # per block: six for the unit, the eighth for the background
POINTS = 20  # the unit's points in each of its six cells
RATE = 1e-7  # false-failure budget of one _check call
B_QUICK, R_QUICK = 4000, 10  # blocks per fit, fits per dataset
B_LONG, R_LONG = 10_000, 60


def _data(blocks: int, with_unit: bool) -> tuple[np.ndarray, np.ndarray]:
    """The strip: a background unit per block (one point in cell 7 of the
    block) and, with ``with_unit``, a unit per block with POINTS points in
    each of its cells 0-5."""
    x = [np.arange(blocks) * CELLS + 7.5]
    u = [np.arange(blocks)]
    if with_unit:
        cells = (np.arange(blocks)[:, None] * CELLS + np.arange(6)[None, :] + 0.5).ravel()
        x.append(np.repeat(cells, POINTS))
        u.append(np.repeat(blocks + np.arange(blocks), 6 * POINTS))
    return np.concatenate(x)[:, None], np.concatenate(u)


def _values(blocks: int, with_unit: bool, seed: int | None) -> tuple[np.ndarray, float]:
    """One release's noisy counts, as a (blocks, CELLS) array, and its
    noise's sigma^2 (public: set by epsilon, delta, k and m)."""
    X, units = _data(blocks, with_unit)
    est = DPDBSCAN(
        eps=1.0,
        min_samples=10**6,  # no spans: the audit reads the histogram (spans are post-processing)
        epsilon=EPSILON,
        delta=DELTA,
        bounds=(0, blocks * CELLS),
        histogram="dense",
        noise="gaussian",
        max_cells_per_unit=K,
        max_points_per_cell=M,
        random_state=seed,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UtilityWarning)
        est.fit(X, units=units)
    h = est.histogram_
    assert h.grid.shape == (blocks * CELLS,) and h.grid.width == 1.0
    return np.asarray(h.values, dtype=np.int64).reshape(blocks, CELLS), float(h.scale)


def _runs(blocks: int, fits: int, seed0: int | None) -> tuple[dict[str, np.ndarray], float]:
    """The blocks of ``fits`` releases of D and of D' (one row per block),
    and the noise's sigma."""
    out, scales = {}, set()
    for j, name in enumerate(("D", "D+unit")):
        rows = []
        for i in range(fits):
            values, scale = _values(blocks, j == 1, None if seed0 is None else seed0 + 2 * i + j)
            rows.append(values)
            scales.add(scale)
        out[name] = np.concatenate(rows)
    assert len(scales) == 1
    return out, float(np.sqrt(scales.pop()))


def _events(runs: dict[str, np.ndarray], sigma: float) -> list[EventAudit]:
    """Threshold events on each block, at thresholds fixed by the public sigma."""
    audits = []
    for name, stat in (
        ("sum of the unit's six cells", lambda v: v[:, :6].sum(axis=1)),
        ("cell 0", lambda v: v[:, 0]),
    ):
        spread = sigma * (np.sqrt(6) if name.startswith("sum") else 1.0)
        for t in (-spread, 0.0, spread, 2 * spread, 3 * spread):
            hits = {n: int((stat(v) >= t).sum()) for n, v in runs.items()}
            n1, n2 = len(runs["D"]), len(runs["D+unit"])
            audits.append(EventAudit(f"{name} >= {t:.0f}", hits["D"], n1, hits["D+unit"], n2))
    return audits


def _check(audits: list[EventAudit], label: str) -> float:
    """The largest epsilon lower bound over the events (printed)."""
    alpha = RATE / (BOUNDS_PER_EVENT * len(audits))
    found = {a.name: a.epsilon_lower(alpha, DELTA) for a in audits}
    for a in audits:
        print(
            f"[unit audit {label}] {a.name}: p_D={a.p1:.4f} p_D'={a.p2:.4f} "
            f"eps_lower={found[a.name]:.4f} (claim {EPSILON:g}, delta={DELTA:g})"
        )
    return max(found.values())


def _forget_the_bound(grid, pairs, bound, key):
    """A broken bound: every pair is kept, every point of every unit counts."""
    return pairs.keys, pairs.counts


def test_one_whole_unit_stays_within_epsilon_at_delta():
    worst = _check(_events(*_runs(B_QUICK, R_QUICK, 7_000)), "quick")
    assert worst <= EPSILON


def test_the_unit_audit_sees_a_release_that_forgets_the_bound(monkeypatch):
    monkeypatch.setattr(bounding, "kept_capped", _forget_the_bound)
    worst = _check(_events(*_runs(B_QUICK, 1, 8_000)), "no bound")
    assert worst > EPSILON


@pytest.mark.audit
def test_long_one_whole_unit_audit_with_the_secure_source():
    worst = _check(_events(*_runs(B_LONG, R_LONG, None)), "long, secure")
    assert worst <= EPSILON
