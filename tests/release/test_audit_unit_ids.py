"""Empirical privacy audit of how unit ids are read: one added unit whose id
is a float must not change how the other units' ids are read.

The review's attack: sixty units with integer ids near 2**60 (hashed device
ids) at one spot, given to ``fit`` as a Python list, and in D' one more unit
whose id is 0.5. Had numpy chosen one dtype for the whole list (float64),
the sixty ids would collapse into a few units and the spot's bounded count
would fall from 120 (60 units x m = 2) to about 30: the event "the spot's
noisy count is above t" then tells D from D' nearly always.

Many runs at once, as in tests/release/test_audit_units.py: a strip of
``B`` blocks of two cells (the spot, and the cell of the added unit), a
dense histogram, one sixty-unit crowd per block (ids near 2**60, distinct
across blocks) and, in D', one added unit per block (id ``b + 0.5``). A
block's released values depend on its own units only, so each fit gives B
runs of the pair. The events are thresholds on the spot's noisy count, at
multiples of the public sigma around the crowd's count; Clopper-Pearson
bounds on epsilon at the stated delta must not exceed the stated epsilon.

The power check: the same audit with the ids typed together again (numpy's
``asarray`` of the list, as before the fix) must see an epsilon far above
the claim.

False failures: each :func:`_check` spends ``RATE`` over its events by a
union bound. The long version (``-m audit``) repeats the audit with the
operating system's CSPRNG and ten times the runs.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpdbscan import DPDBSCAN
from dpdbscan.exceptions import UtilityWarning
from dpdbscan.prepare import door as door_module
from dpdbscan.release import bounding

from stats import BOUNDS_PER_EVENT, EventAudit

EPSILON, DELTA = 1.0, 1e-6
K, M = 4, 2
UNITS, POINTS = 60, 3  # the crowd: sixty units, three points each at the spot
RATE = 1e-7
B_QUICK, R_QUICK = 400, 5
B_LONG, R_LONG = 1000, 20


def _data(blocks: int, with_unit: bool, rng: np.random.Generator) -> tuple[np.ndarray, list]:
    x: list[float] = []
    units: list = []
    for b in range(blocks):
        ids = 2**60 + b * 10**6 + rng.choice(4000, UNITS, replace=False)
        for u in ids.tolist():
            x += [2 * b + 0.5] * POINTS
            units += [u] * POINTS
        if with_unit:
            x += [2 * b + 1.5] * POINTS
            units += [b + 0.5] * POINTS
    return np.array(x)[:, None], units


def _spot_values(blocks: int, with_unit: bool, seed: int | None, rng: np.random.Generator):
    X, units = _data(blocks, with_unit, rng)
    est = DPDBSCAN(
        eps=1.0,
        min_samples=10**6,
        epsilon=EPSILON,
        delta=DELTA,
        bounds=(0, 2 * blocks),
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
    assert h.grid.shape == (2 * blocks,) and h.grid.width == 1.0
    return np.asarray(h.values, dtype=np.int64).reshape(blocks, 2)[:, 0], float(np.sqrt(h.scale))


def _audit(blocks: int, fits: int, seed0: int | None, label: str) -> float:
    rng = np.random.default_rng(0 if seed0 is None else seed0)
    spots: dict[str, list] = {"D": [], "D+unit": []}
    sigma = 0.0
    for i in range(fits):
        for j, name in enumerate(spots):
            seed = None if seed0 is None else seed0 + 2 * i + j
            v, sigma = _spot_values(blocks, j == 1, seed, rng)
            spots[name].append(v)
    a, b = (np.concatenate(spots[n]) for n in ("D", "D+unit"))
    full = UNITS * M
    audits = [
        EventAudit(f"spot >= {t:.0f}", int((a >= t).sum()), a.size, int((b >= t).sum()), b.size)
        for t in (full - 3 * sigma, full - 2 * sigma, full - sigma, full, full + sigma)
    ]
    alpha = RATE / (BOUNDS_PER_EVENT * len(audits))
    found = [x.epsilon_lower(alpha, DELTA) for x in audits]
    for x, e in zip(audits, found):
        print(f"[unit-id audit {label}] {x.name}: p_D={x.p1:.4f} p_D'={x.p2:.4f} eps_lower={e:.4f}")
    return max(found)


def test_one_float_id_does_not_move_the_crowds_count():
    assert _audit(B_QUICK, R_QUICK, 26_000, "quick") <= EPSILON


def test_the_audit_sees_ids_typed_together(monkeypatch):
    """Power: the reading before the fix (numpy types the list as a whole)."""
    monkeypatch.setattr(door_module, "read_units", lambda units, *_: np.asarray(units))
    monkeypatch.setattr(bounding, "read_units", lambda units, *_: np.asarray(units))
    assert _audit(B_QUICK, 2, 27_000, "typed together") > 2 * EPSILON


@pytest.mark.audit
def test_long_unit_id_audit_with_the_secure_source():
    assert _audit(B_LONG, R_LONG, None, "long, secure") <= EPSILON
