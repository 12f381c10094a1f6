"""Person-level privacy: privacy units, contribution bounds, Gaussian noise (issue 20).

The bounding stage (dpdbscan.release.bounding) and its random choice of
cells (Philox4x32-10), the calibration of the noise to the bound's L2
sensitivity, the estimator's ``units``, and what the model file records.
"""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
from scipy import stats

from dpdbscan import DPDBSCAN, ZCDPAccountant, load_model, save_model
from dpdbscan.cells.grid import Grid
from dpdbscan.exceptions import BudgetExceeded, UtilityWarning
from dpdbscan.laws import zcdp
from dpdbscan.params.specs import UnitBound
from dpdbscan.release.accountant import BudgetAccountant
from dpdbscan.release.bounding import BoundingKey, bounded_counts, factorize, kept_pairs, pairs_of
from dpdbscan.release.samplers.integers import SeededSource
from dpdbscan.release.samplers.philox import philox4x32

pytestmark = pytest.mark.filterwarnings("ignore::dpdbscan.exceptions.InsecureRandomnessWarning")


def blob_and_spot(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """1,000 units x 20 points in a blob, and one unit with 5,000 points at one spot."""
    rng = np.random.default_rng(seed)
    blob = rng.normal([0.3, 0.3], 0.03, size=(20_000, 2))
    spot = np.array([0.75, 0.75]) + rng.normal(0, 0.002, (5_000, 2))
    units = np.concatenate([np.repeat(np.arange(1_000), 20), np.full(5_000, 5_000)])
    return np.vstack([blob, spot]), units


PROBES = np.array([[0.3, 0.3], [0.75, 0.75]])


def person_level(**kw) -> DPDBSCAN:
    params = dict(
        eps=0.03,
        min_samples=50,
        epsilon=1,
        delta=1e-6,
        bounds=(0, 1),
        noise="gaussian",
        max_cells_per_unit=20,
        max_points_per_cell=1,
    )
    return DPDBSCAN(**{**params, **kw})


# --------------------------------------------------------------------------- #
# the test: one unit's spot is not published, the crowd's blob is


def test_one_units_spot_is_not_a_span_but_the_blob_is():
    hits = 0
    for run in range(10):
        X, units = blob_and_spot(run)
        est = person_level(random_state=100 + run)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UtilityWarning)
            labels = est.fit(X, units=units).predict(PROBES)
        hits += bool(labels[0] >= 0 and labels[1] == -1)
    assert hits >= 9


def test_at_event_level_the_spot_is_a_span():
    for run in range(3):
        X, _ = blob_and_spot(run)
        est = DPDBSCAN(eps=0.03, min_samples=50, epsilon=1, bounds=(0, 1), random_state=run)
        labels = est.fit(X).predict(PROBES)
        assert labels[0] >= 0 and labels[1] >= 0 and labels[0] != labels[1]


def test_person_level_default_noise_is_gaussian_and_the_model_says_so(tmp_path):
    X, units = blob_and_spot(0)
    est = person_level(noise="auto", random_state=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UtilityWarning)
        est.fit(X, units=units)
    rel = est.spans_.release
    assert rel.noise == "gaussian"
    assert rel.units == UnitBound(max_cells_per_unit=20, max_points_per_cell=1, cell_choice="busiest")
    rho = zcdp.rho_for(1.0, 1e-6)
    assert rel.rho == pytest.approx(rho, rel=1e-12)
    # sigma^2 = (sqrt(k) m)^2 / (2 rho), rounded up by the sampler by < 1e-5
    assert rel.noise_scale == pytest.approx(20 / (2 * rho), rel=1e-5)
    assert rel.noise_scale >= 20 / (2 * rho)
    path = tmp_path / "m.json"
    save_model(est.spans_, path)
    priv = json.loads(path.read_text())["privacy"]
    assert priv["unit"] == "unit" and priv["max_cells_per_unit"] == 20 and priv["max_points_per_cell"] == 1
    assert priv["rho"] == pytest.approx(rho, rel=1e-12)
    assert priv["cell_choice"] == "busiest"
    back = load_model(path)
    assert back.release.units == rel.units and back.release.rho == rel.rho
    assert np.array_equal(back.predict(PROBES), est.predict(PROBES))
    # a file written before the choice was recorded kept k cells at random
    data = json.loads(path.read_text())
    del data["privacy"]["cell_choice"]
    path.write_text(json.dumps(data))
    assert load_model(path).release.units.cell_choice == "uniform"
    data["privacy"]["cell_choice"] = "loudest"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="cell_choice"):
        load_model(path)


def test_event_level_model_says_row():
    X, _ = blob_and_spot(0)
    est = DPDBSCAN(eps=0.03, min_samples=50, bounds=(0, 1), random_state=0).fit(X)
    rel = est.spans_.release
    assert rel.units is None and rel.rho is None and rel.noise == "discrete"


# --------------------------------------------------------------------------- #
# the bounding stage


def _pairs(X, units, seed=0):
    grid = Grid(np.zeros(2), np.ones(2), 0.03, 4.0)
    key = BoundingKey.draw(SeededSource(seed))
    return grid, key, pairs_of(grid, X, units, key)


@pytest.mark.parametrize("choice", ["uniform", "busiest"])
def test_each_unit_keeps_at_most_k_cells_and_m_points_per_cell(choice):
    rng = np.random.default_rng(0)
    X = rng.random((30_000, 2))
    units = rng.integers(0, 300, 30_000)
    for k, m in [(1, 1), (5, 2), (40, 3)]:
        grid, key, pairs = _pairs(X, units)
        bound = UnitBound(k, m, choice)
        keep = kept_pairs(grid, pairs, bound, key)
        per_unit = np.bincount(pairs.units[keep], minlength=pairs.n_units)
        cells = np.bincount(pairs.units, minlength=pairs.n_units)
        assert np.array_equal(per_unit, np.minimum(cells, k))
        keys, counts = bounded_counts(grid, pairs, bound, key)
        assert np.all(np.diff(keys) > 0)
        assert counts.sum() == np.minimum(pairs.counts[keep], m).sum()


@pytest.mark.parametrize("choice", ["uniform", "busiest"])
def test_removing_one_unit_changes_the_counts_within_the_sensitivity(choice):
    rng = np.random.default_rng(1)
    X = rng.random((20_000, 2)) * 0.2 + 0.4  # crowded cells, many units each
    units = rng.integers(0, 100, 20_000)
    k, m = 7, 3
    bound = UnitBound(k, m, choice)
    grid = Grid(np.zeros(2), np.ones(2), 0.03, 4.0)
    key = BoundingKey.draw(SeededSource(5))
    counts = bounded_counts(grid, pairs_of(grid, X, units, key), bound, key)
    full = dict(zip(*(a.tolist() for a in counts)))
    for gone in (0, 17, 99):
        rest = units != gone
        pairs = pairs_of(grid, X[rest], units[rest], key)
        less = dict(zip(*(a.tolist() for a in bounded_counts(grid, pairs, bound, key))))
        diff = np.array([full.get(c, 0) - less.get(c, 0) for c in set(full) | set(less)])
        assert np.all(diff >= 0)  # only the removed unit's own cells change
        assert np.abs(diff).sum() <= k * m
        assert math.sqrt((diff**2).sum()) <= math.sqrt(k) * m + 1e-12
        assert np.count_nonzero(diff) <= k


def test_the_choice_of_cells_is_uniform():
    """One unit in 10 cells, k = 3: each cell is kept with probability 3/10,
    and each of the 120 subsets equally often (chi-square over keys)."""
    X = (np.arange(10)[:, None] * np.array([0.1, 0.0]) + 0.05).repeat(3, axis=0)
    units = np.zeros(len(X), dtype=np.int64)
    grid = Grid(np.zeros(2), np.ones(2), 0.03, 4.0)
    subsets: dict[tuple, int] = {}
    source = SeededSource(7)
    trials = 6_000
    for _ in range(trials):
        key = BoundingKey.draw(source)
        pairs = pairs_of(grid, X, units, key)
        keep = kept_pairs(grid, pairs, UnitBound(3, 1, "uniform"), key)
        sub = tuple(pairs.keys[keep].tolist())
        subsets[sub] = subsets.get(sub, 0) + 1
    assert len(subsets) == math.comb(10, 3)
    observed = np.array(list(subsets.values()))
    assert stats.chisquare(observed).pvalue > 1e-3


def test_the_busiest_cells_are_kept_and_ties_are_uniform():
    """One unit: 4 points in cell A, 3 in B, 1 in each of 8 more cells; k = 3
    keeps A and B always and each of the 8 others with probability 1/8
    (chi-square); m still caps what each kept cell counts."""
    cells = np.arange(10)[:, None] * np.array([0.1, 0.0]) + 0.05
    X = np.vstack([cells[:1].repeat(4, axis=0), cells[1:2].repeat(3, axis=0), cells[2:]])
    units = np.zeros(len(X), dtype=np.int64)
    grid = Grid(np.zeros(2), np.ones(2), 0.03, 4.0)
    source = SeededSource(11)
    third: dict[int, int] = {}
    for _ in range(2_000):
        key = BoundingKey.draw(source)
        pairs = pairs_of(grid, X, units, key)
        keep = kept_pairs(grid, pairs, UnitBound(3, 2, "busiest"), key)
        kept = sorted(pairs.counts[keep].tolist())
        assert kept[1:] == [3, 4] and kept[0] == 1
        one = int(pairs.keys[keep & (pairs.counts == 1)][0])
        third[one] = third.get(one, 0) + 1
        _, counts = bounded_counts(grid, pairs, UnitBound(3, 2, "busiest"), key)
        assert sorted(counts.tolist()) == [1, 2, 2]
    assert len(third) == 8
    assert stats.chisquare(np.array(list(third.values()))).pvalue > 1e-3


@pytest.mark.parametrize("choice", ["uniform", "busiest"])
def test_the_choice_does_not_depend_on_row_order_or_the_other_units(choice):
    rng = np.random.default_rng(2)
    X = rng.random((5_000, 2))
    units = rng.choice(np.array(["ann", "bob", "cy", "dee", ""], dtype=object), 5_000)
    grid = Grid(np.zeros(2), np.ones(2), 0.03, 4.0)
    key = BoundingKey.draw(SeededSource(3))
    bound = UnitBound(4, 1, choice)

    def kept(Xs, us):
        pairs = pairs_of(grid, Xs, us, key)
        keep = kept_pairs(grid, pairs, bound, key)
        names = pairs.uniques
        return {(names[u], c) for u, c in zip(pairs.units[keep].tolist(), pairs.keys[keep].tolist())}

    a = kept(X, units)
    order = rng.permutation(len(X))
    assert kept(X[order], units[order]) == a
    alone = units == "bob"
    assert kept(X[alone], units[alone]) == {p for p in a if p[0] == "bob"}


def test_missing_units_are_dropped_and_types_are_read():
    codes, uniq = factorize(np.array([3.0, np.nan, 3.0, 1.0]))
    assert codes.tolist() == [1, -1, 1, 0] and uniq.tolist() == [1.0, 3.0]
    codes, uniq = factorize(np.array(["b", None, "a", "b"], dtype=object))
    assert codes.tolist() == [0, -1, 1, 0]
    codes, _ = factorize(np.array([7, 7, 2]))
    assert codes.tolist() == [1, 1, 0]
    # mixed Python objects (no fast path): each by its own type
    codes, uniq = factorize(np.array([2, "a", None, 2.0, float("nan")], dtype=object))
    assert codes.tolist() == [0, 1, -1, 0, -1] and uniq.tolist() == [2, "a"]
    # an array whose dtype cannot hold ids is the caller's choice, for every row: refused
    with pytest.raises(TypeError):
        factorize(np.array([1 + 2j]))
    # one id of no readable type is a missing id, not a refusal (docs/privacy.md 8)
    codes, uniq = factorize(np.array([(1, 2), "a", None], dtype=object))
    assert codes.tolist() == [-1, 0, -1] and uniq.tolist() == ["a"]


@pytest.mark.parametrize("dtype", ["int8", "int16", "int64", "uint8", "uint64", "bool"])
@pytest.mark.parametrize("spread", ["narrow", "wide"])
def test_integer_units_are_coded_as_by_sorting(dtype, spread):
    # the lookup table (ids in a narrow range) and the sort (a wide one) give
    # np.unique's codes and uniques, and the count of distinct units
    from dpdbscan.release.bounding import count_distinct_units

    rng = np.random.default_rng(len(dtype) + len(spread))
    info = np.iinfo(dtype) if dtype != "bool" else np.iinfo(np.uint8)
    for n in (0, 1, 7, 3_000):
        if dtype == "bool":
            u = rng.random(n) < 0.5
        elif spread == "narrow":
            top = info.max - 100
            lo = int(rng.integers(info.min, top, endpoint=True)) if info.bits < 64 else top - 400
            u = rng.integers(lo, lo + 100, n, endpoint=True, dtype=dtype)
        else:
            u = rng.integers(info.min, info.max, n, endpoint=True, dtype=dtype)
        codes, uniq = factorize(u)
        want_uniq, want_codes = np.unique(u, return_inverse=True)
        assert codes.dtype == np.int64 and uniq.dtype == want_uniq.dtype
        assert np.array_equal(codes, want_codes.ravel()) and np.array_equal(uniq, want_uniq)
        assert count_distinct_units(u) == want_uniq.size


def test_a_row_with_a_missing_unit_or_coordinate_is_dropped_alone():
    X = np.array([[0.1, 0.1], [0.1, 0.1], [np.nan, 0.5], [0.9, 0.9]])
    units = np.array(["a", None, "b", "b"], dtype=object)
    grid, key, pairs = _pairs(X, units)
    assert pairs.counts.sum() == 2 and pairs.n_units == 2


def test_philox_known_answers():
    # Random123's published known-answer vectors for Philox4x32-10
    cases = [
        ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
        ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
        (
            (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
            (0xA4093822, 0x299F31D0),
            (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
        ),
    ]
    for counter, key, want in cases:
        got = philox4x32(tuple(np.array([c], dtype=np.uint64) for c in counter), key)
        assert tuple(int(w[0]) for w in got) == want


# --------------------------------------------------------------------------- #
# parameters


def test_units_need_a_contribution_bound():
    X, units = blob_and_spot(0)
    with pytest.raises(ValueError, match="max_cells_per_unit is required"):
        DPDBSCAN(eps=0.03, bounds=(0, 1), delta=1e-6).fit(X, units=units)


def test_a_contribution_bound_needs_units():
    X, _ = blob_and_spot(0)
    with pytest.raises(ValueError, match="no units were given"):
        DPDBSCAN(eps=0.03, bounds=(0, 1), max_cells_per_unit=5).fit(X)
    with pytest.raises(ValueError, match="max_points_per_cell"):
        DPDBSCAN(eps=0.03, bounds=(0, 1), max_points_per_cell=3).fit(X)


def test_gaussian_noise_needs_delta():
    X, units = blob_and_spot(0)
    with pytest.raises(ValueError, match="Gaussian .* needs delta > 0"):
        DPDBSCAN(eps=0.03, bounds=(0, 1), max_cells_per_unit=5).fit(X, units=units)
    with pytest.raises(ValueError, match="needs delta > 0"):
        DPDBSCAN(eps=0.03, bounds=(0, 1), noise="gaussian").fit(X)
    with pytest.raises(ValueError, match="paper"):
        DPDBSCAN(eps=0.03, bounds=(0, 1), noise="gaussian", delta=1e-6, margin="paper", core="bound").fit(X)


def test_laplace_with_units_warns_with_both_noises():
    X, units = blob_and_spot(0)
    est = DPDBSCAN(eps=0.03, bounds=(0, 1), noise="discrete", max_cells_per_unit=20, random_state=0)
    with pytest.warns(UtilityWarning, match=r"Gaussian noise grows with its square root"):
        est.fit(X, units=units)
    assert est.spans_.release.noise == "discrete"
    # L1 sensitivity k m = 20: one count's noise at epsilon / 20
    assert est.spans_.release.noise_scale <= 1 / 20


def test_units_must_match_the_rows():
    X, units = blob_and_spot(0)
    with pytest.raises(ValueError, match="one id per row"):
        person_level().fit(X, units=units[:-1])
    with pytest.raises(ValueError, match="column name"):
        person_level().fit(X, units="cab")


# --------------------------------------------------------------------------- #
# accounting


def test_zcdp_accountant_is_charged_rho_and_others_epsilon_delta():
    X, units = blob_and_spot(0)
    acc = ZCDPAccountant(epsilon=1.0, delta=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UtilityWarning)
        person_level(accountant=acc, random_state=0).fit(X, units=units)
    assert acc.spent_rho == [pytest.approx(zcdp.rho_for(1.0, 1e-6))]
    assert acc.total()[0] <= 1.0 + 1e-9
    with pytest.raises(BudgetExceeded):
        person_level(accountant=acc, random_state=0).fit(X, units=units)
    basic = BudgetAccountant(epsilon=2.0, delta=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UtilityWarning)
        person_level(accountant=basic, random_state=0).fit(X, units=units)
    assert basic.spent_budget == [(1.0, 1e-6)]


def test_two_person_level_gaussian_fits_cost_1_45_under_zcdp_and_fit_a_budget_of_two():
    """docs/privacy.md §1.5: two person-level fits at (1, 1e-6) cost epsilon
    1.45 together at delta 1e-6 (not 2, and their deltas do not add), so
    they fit (2, 1e-6); basic composition refuses the second (delta 2e-6)."""
    X, units = blob_and_spot(0)
    acc = ZCDPAccountant(epsilon=2.0, delta=1e-6)
    basic = BudgetAccountant(epsilon=2.0, delta=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UtilityWarning)
        for seed in (0, 1):
            person_level(accountant=acc, random_state=seed).fit(X, units=units)
        person_level(accountant=basic, random_state=0).fit(X, units=units)
        with pytest.raises(BudgetExceeded):
            person_level(accountant=basic, random_state=1).fit(X, units=units)
    eps, delta = acc.total()
    assert round(eps, 2) == 1.45 and delta == 1e-6
    assert acc.spent_rho == [zcdp.rho_for(1.0, 1e-6)] * 2


@pytest.mark.parametrize(
    "kw",
    [
        dict(histogram="stability"),  # Gaussian noise: charged rho with the threshold's delta
        dict(histogram="stability", noise="laplace", max_cells_per_unit=2),  # charged (epsilon, delta)
    ],
)
def test_zcdp_accountant_refuses_the_stability_histogram_before_the_noise(monkeypatch, kw):
    """The stability histogram is not zCDP: the ZCDPAccountant refuses it in
    its check, before the mechanism reads a point or draws noise (the release
    is made to fail if reached), with the same message on any data, and
    records nothing. Before, it counted the threshold's delta by adding it."""
    import dpdbscan.pipeline as pipeline

    def reached(*a, **k):
        raise AssertionError("the release was reached")

    monkeypatch.setattr(pipeline, "release_histogram", reached)
    messages = set()
    for X, units in (blob_and_spot(0), (np.full((3, 2), 0.5), np.arange(3))):
        acc = ZCDPAccountant(epsilon=10.0, delta=1e-5)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UtilityWarning)
            with pytest.raises(BudgetExceeded, match=r"not zCDP.*dpdbscan\.BudgetAccountant") as err:
                person_level(accountant=acc, random_state=0, **kw).fit(X, units=units)
        messages.add(str(err.value))
        assert acc.spent_rho == [] and acc.spent_budget == []
    assert len(messages) == 1
    # the same release is counted by basic composition
    monkeypatch.undo()
    basic = BudgetAccountant(epsilon=10.0, delta=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UtilityWarning)
        X, units = blob_and_spot(0)
        person_level(accountant=basic, random_state=0, **kw).fit(X, units=units)
    assert basic.spent_budget == [(1.0, 1e-6)]


@pytest.mark.parametrize("histogram", ["dense", "sparse", "stability"])
def test_every_histogram_takes_gaussian_noise(histogram):
    X, units = blob_and_spot(0)
    est = person_level(histogram=histogram, random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UtilityWarning)
        est.fit(X, units=units)
    h = est.spans_.histogram
    assert h.kind == histogram and h.noise == "gaussian"
    assert est.predict(PROBES)[1] == -1
    if histogram == "stability":
        # theta: a cell only one unit occupies (at most m = 1 point) is
        # released with probability at most delta / 2 across its k cells
        from dpdbscan.laws.noise import tail

        assert 20 * tail("gaussian", h.scale, h.theta - 1) <= 1e-6 / 2


def test_delta_against_the_number_of_units_is_a_private_note_after_the_release():
    """Finding 5: the number of units is private, so it never decides
    whether a release happens; a delta not far below one over it is said
    after the release, as a private note (the release is made either way)."""
    from dpdbscan.exceptions import PrivateNoteWarning

    rng = np.random.default_rng(4)
    X = rng.random((3_000, 2))
    units = rng.integers(0, 536, 3_000)
    with pytest.warns(PrivateNoteWarning, match="one over the number of units") as rec:
        est = person_level(delta=0.005, max_cells_per_unit=4).fit(X, units=units)
    assert est.spans_ is not None  # released all the same
    note = next(str(w.message) for w in rec if w.category is PrivateNoteWarning and "delta" in str(w.message))
    assert "private" in note
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivateNoteWarning)
        warnings.simplefilter("ignore", UtilityWarning)
        person_level(delta=1e-6, max_cells_per_unit=4).fit(X, units=units)  # far below 1/536: no note


def _keep_smallest_by_lexsort(units, k, prio, busiest=None):
    """The reference: each unit's k pairs first by (priority, position), or
    with ``busiest`` by (most points, priority, position)."""
    most = np.zeros(units.size, dtype=np.int64) if busiest is None else -busiest
    order = np.lexsort((np.arange(units.size), prio, most, units))
    keep = np.zeros(units.size, dtype=bool)
    u = units[order]
    first = np.flatnonzero(np.concatenate(([True], u[1:] != u[:-1])))
    rank = np.arange(u.size) - np.repeat(first, np.diff(np.append(first, u.size)))
    keep[order[rank < k]] = True
    return keep


@pytest.mark.parametrize("seed", range(6))
def test_keep_smallest_is_each_units_k_smallest_priorities_ties_by_position(seed):
    from dpdbscan.release.bounding import keep_smallest

    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 6))
    units = np.sort(rng.integers(0, int(rng.integers(1, 400)), int(rng.integers(1, 3_000))))
    prio = rng.integers(0, 2**64, units.size, dtype=np.uint64, endpoint=False)
    if seed % 3 == 1:  # equal top bits: the words tie, the full priorities do not
        prio &= np.uint64(0xFF)
    if seed % 3 == 2:  # equal full priorities: ties go to the earlier pair
        prio = rng.integers(0, 3, units.size).astype(np.uint64) << np.uint64(60)
    got = keep_smallest(units, k, lambda idx: prio[idx])
    assert np.array_equal(got, _keep_smallest_by_lexsort(units, k, prio))
    per_unit = np.bincount(units[got], minlength=units.max() + 1)
    assert np.array_equal(per_unit, np.minimum(np.bincount(units), k))
    # the busiest choice: most points first, the priority breaking ties (small
    # counts tie often; a huge one leaves too few bits and takes the sort)
    for top in (4, 2**40):
        points = rng.integers(1, top, units.size)
        got = keep_smallest(units, k, lambda idx: prio[idx], busiest=points)
        assert np.array_equal(got, _keep_smallest_by_lexsort(units, k, prio, points))


def test_many_units_and_cells_give_the_same_pairs_by_cell_keys_as_by_cell_ranks():
    # 10,000 units x ~15,000 occupied cells: too many pairs for a table, so
    # pairs_of sorts words made of the raw cell keys; summed_pairs goes
    # through the cells' ranks. The same pairs, counts and order.
    from dpdbscan.release.bounding import factorize, kept_keys, summed_pairs

    rng = np.random.default_rng(11)
    X = rng.random((40_000, 2))
    X[1::3] = X[::3][: len(X[1::3])]  # repeated cells within and across units
    units = rng.integers(0, 10_000, len(X)) * 7 - 30_000
    grid = Grid(np.zeros(2), np.ones(2), 0.01, 4.0)
    key = BoundingKey.draw(SeededSource(5))
    got = pairs_of(grid, X, units, key)
    codes, uniques = factorize(units)
    _, keys = kept_keys(grid, X, codes >= 0)
    want = summed_pairs(grid, codes, keys, None, uniques, key)
    assert got.units.size > 20_000 and got.counts.max() > 1
    for field in ("units", "keys", "counts", "unit_words", "uniques"):
        assert np.array_equal(getattr(got, field), getattr(want, field)), field
    assert got.keys.dtype == want.keys.dtype


@pytest.mark.parametrize("extra_units", [0, 1])
def test_a_program_run_as_a_module_gets_its_release_with_or_without_the_delta_note(tmp_path, extra_units):
    """The delta note is counted from the private number of units and said to
    the caller's frame. In a program run as ``python -m package.module`` that
    frame's module is ``__main__``, whose loader refuses to give its source
    (ImportError): the note failed the fit after the release was made, so D
    (19 units: no note at delta 0.005) was released and D' (20 units: a note)
    was not. Both are released now, and D' says its note."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    import dpdbscan

    pkg = tmp_path / "notepkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "run.py").write_text(
        "import sys\n"
        "import numpy as np\n"
        "from dpdbscan import DPDBSCAN\n"
        "n_units = int(sys.argv[1])\n"
        "rng = np.random.default_rng(4)\n"
        "X = rng.random((600, 2))\n"
        "units = np.arange(600) % n_units\n"
        "est = DPDBSCAN(eps=0.1, min_samples=5, epsilon=1.0, bounds=(0, 1), random_state=0,\n"
        "               noise='gaussian', delta=0.005, max_cells_per_unit=4).fit(X, units=units)\n"
        "print('released', est.spans_.n_spans)\n"
    )
    src = str(Path(dpdbscan.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": f"{src}:{tmp_path}"}
    n_units = 19 + extra_units  # delta * n: 0.095 (below the note's 0.1) and 0.1
    proc = subprocess.run(
        [sys.executable, "-m", "notepkg.run", str(n_units)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-1500:]
    assert proc.stdout.startswith("released")
    assert ("one over the number of units" in proc.stderr) == bool(extra_units)
