"""max_cells_per_unit="auto" (issue 20, item 6): the private choice of k.

The public candidates (dpdbscan.plan.units), the score's sensitivity and
what it prefers, the exponential mechanism's exact law (chi-square against
its probabilities, tests/stats.py), its rho, what the accountant is charged,
and what the release records.
"""

from __future__ import annotations

import json
import math
import warnings
from fractions import Fraction

import numpy as np
import pytest

from dpdbscan import DPDBSCAN, ZCDPAccountant, load_model, save_model
from dpdbscan.cells.grid import Grid
from dpdbscan.exceptions import BudgetExceeded, UtilityWarning
from dpdbscan.laws import zcdp
from dpdbscan.model.codec import MalformedModel, model_from_dict, model_to_dict
from dpdbscan.model.describe import summary
from dpdbscan.plan import units as unit_plan
from dpdbscan.plan.resolve import resolve, validated
from dpdbscan.release import unitchoice
from dpdbscan.release.accountant import BudgetAccountant
from dpdbscan.release.backends import NumpyBackend
from dpdbscan.release.mechanism import release_choosing, release_histogram
from dpdbscan.release.samplers.integers import SeededSource

from stats import P_FAIL, assert_fits

pytestmark = pytest.mark.filterwarnings("ignore::dpdbscan.exceptions.InsecureRandomnessWarning")


def crowd(n_units=400, cells=(3, 6), seed=0):
    """Units in a blob: each visits a few cells of a 0.03 grid in [0, 1]^2."""
    rng = np.random.default_rng(seed)
    per = 12
    centre = rng.normal([0.5, 0.5], 0.05, size=(n_units, 2))
    spread = rng.uniform(*cells, n_units) * 0.01
    X = centre.repeat(per, axis=0) + rng.normal(0, 1, (n_units * per, 2)) * spread.repeat(per)[:, None]
    return np.clip(X, 0, 1), np.repeat(np.arange(n_units), per)


def auto_k(**kw) -> DPDBSCAN:
    params = dict(eps=0.03, min_samples=50, epsilon=1, delta=1e-6, bounds=(0, 1), max_cells_per_unit="auto")
    return DPDBSCAN(**{**params, **kw})


def fit_quietly(est, X, units):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UtilityWarning)
        return est.fit(X, units=units)


# --------------------------------------------------------------------------- #
# the public candidates


@pytest.mark.parametrize("eps", [0.03, 0.2, 0.45])
def test_candidates_are_a_public_ladder_up_to_the_grid(eps):
    grid = Grid(np.zeros(2), np.ones(2), eps, 4.0)
    c = unit_plan.candidates(grid)
    assert c[0] == 1 and list(c) == sorted(set(c))
    assert c[-1] <= grid.n_cells < round(c[-1] * 2 ** (1 / 4)) + 1
    # consecutive ratio at most 2^(1/4) (above the rounding of the small ones)
    big = np.array([k for k in c if k >= 8], dtype=float)
    assert np.all(big[1:] / big[:-1] <= 2 ** (1 / 4) * (1 + 1 / 8))


def test_candidates_are_capped():
    grid = Grid(np.zeros(3), np.ones(3) * 1e4, 0.01, 4.0)
    assert grid.n_cells > unit_plan.MAX_K
    assert unit_plan.candidates(grid)[-1] <= unit_plan.MAX_K


# --------------------------------------------------------------------------- #
# the score


def _signal(cells, k):
    c = np.asarray(cells, dtype=float)
    return np.minimum(1, k / c).sum() / math.sqrt(k)


def _neighbours(cells, rng):
    """Datasets one unit away: one unit removed, or one added with a cell
    count at a candidate, between two, at 1, or far above all."""
    yield np.delete(cells, rng.integers(cells.size))
    for extra in (1, 2, 7, 8, 9, 64, 100, 1000, 10**6, int(rng.integers(1, 5000))):
        yield np.append(cells, extra)


@pytest.mark.parametrize("seed", range(6))
def test_the_score_has_sensitivity_one(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    cells = np.maximum(1, np.exp(rng.normal(rng.uniform(0, 6), rng.uniform(0.1, 2), n))).astype(np.int64)
    cands = (1, 2, 3, 4, 6, 8, 11, 16, 23, 32, 45, 64, 91, 128, 181, 256, 1024, 4096)
    u = unitchoice.scores(cells, cands)
    for other in _neighbours(cells, rng):
        v = unitchoice.scores(other, cands)
        assert max(abs(a - b) for a, b in zip(u, v)) <= 1


def test_the_score_of_one_unit_against_none():
    cands = (1, 2, 4, 8)
    assert unitchoice.scores(np.zeros(0, dtype=np.int64), cands) == [0, 0, 0, 0]
    for c in (1, 3, 8, 100):
        assert all(abs(s) <= 1 for s in unitchoice.scores(np.array([c]), cands))


def test_the_best_candidate_by_signal_scores_zero_and_wins():
    """Units with 30 to 50 cells: the candidate of largest signal to noise
    (among those above the floor) scores 0, the others below, and a tenth of
    rho at epsilon = 1 picks it almost surely (exact probabilities)."""
    rng = np.random.default_rng(1)
    cells = rng.integers(30, 51, 2000)
    cands = unit_plan.candidates(Grid(np.zeros(2), np.ones(2), 0.03, 4.0))
    u = unitchoice.scores(cells, cands)
    f = [_signal(cells, k) for k in cands]
    best = int(np.argmax(f))
    assert u[best] == 0 and all(s < 0 for i, s in enumerate(u) if i != best)
    p = unitchoice.probabilities(cells, cands, 0.1 * zcdp.rho_for(1.0, 1e-6))
    assert p[best] > 0.99 and cands[best] == 38


def test_the_floor_keeps_a_few_small_units_from_pulling_k_down(monkeypatch):
    """Thirty one-cell units beside a thousand with 1,000 cells: f(1) is
    about f(1024) (thirty units at sigma 1 against a thousand at sigma 32),
    and with a tenth of rho at epsilon = 1 the mechanism could not tell
    them apart; the floor (k below the 20th percentile of cells per unit
    scores minus the units missing to it) keeps the choice at 1,024."""
    cells = np.r_[np.ones(30, dtype=np.int64), np.full(1000, 1000)]
    cands = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048)
    f = [_signal(cells, k) for k in cands]
    assert f[0] == pytest.approx(f[cands.index(1024)], rel=0.05)
    rho = 0.1 * zcdp.rho_for(1.0, 1e-6)
    assert unitchoice.probabilities(cells, cands, rho)[cands.index(1024)] > 0.99
    monkeypatch.setattr(unitchoice, "FLOOR", Fraction(0))
    assert unitchoice.probabilities(cells, cands, rho)[:3].sum() > 0.2


def test_units_that_are_alike_keep_their_best_k():
    """500 units with 204 to 262 cells each, median 232 (as a month of a
    synthetic taxi fleet's pick-ups): f peaks at 215, below the 20th
    percentile.
    The floor counts units of which k keeps at least half the cells, so it
    does not pull 215 down to the level of k = 1 (where a floor at k itself
    drew k <= 10 with probability 0.42)."""
    cells = np.clip(np.random.default_rng(3).normal(232, 12, 500).round(), 204, 262).astype(np.int64)
    cands = unit_plan.candidates(Grid(np.zeros(2), np.ones(2), 0.001, 4.0))
    ks = np.asarray(cands)
    assert cands[int(np.argmax([_signal(cells, k) for k in cands]))] == 215
    assert np.percentile(cells, 20) > 215
    p = unitchoice.probabilities(cells, cands, 0.1 * zcdp.rho_for(1.0, 1e-6))
    assert p[ks <= 10].sum() < 0.02
    assert p[(ks >= 215) & (ks <= 256)].sum() > 0.9


def test_the_floor_spends_the_whole_sensitivity():
    """Below the floor each unit missing to the 20th percentile costs 5/4:
    (R - N / 5) / (1 - 1/5) moves by exactly 1 when a unit the candidate
    keeps at least half of is added (R and N both grow by one), the most
    the score may move; R - N / 5 moved by 4/5 and drew tiny k more often."""
    cells = np.full(100, 1000, dtype=np.int64)
    cands = (1, 2, 4, 1024)
    u = unitchoice.scores(cells, cands)
    assert u[0] == Fraction(-(100 // 5) * 5, 4)  # R = 0: minus N / 4
    # a unit with one cell: R of k = 1 grows by one, N by one
    v = unitchoice.scores(np.append(cells, 1), cands)
    assert v[0] - u[0] == 1
    # a unit far above: N grows, R does not
    w = unitchoice.scores(np.append(cells, 10**6), cands)
    assert w[0] - u[0] == Fraction(-1, 4)


def test_a_tiny_k_is_drawn_rarely_where_units_have_a_hundred_cells():
    """Units with a median of about 120 cells (lognormal, as the stops of a
    month of 536 cabs on 121 m cells: f peaks near 108): the candidates
    below half the 20th percentile, which lose every place, are drawn with
    probability under 0.003 at a tenth of rho at epsilon = 1 (0.0058 with
    the floor at 4/5 of its sensitivity on Cabs' own stops)."""
    rng = np.random.default_rng(7)
    cells = np.clip(np.exp(rng.normal(math.log(118), 0.35, 536)), 20, 400).astype(np.int64)
    cands = unit_plan.candidates(Grid(np.zeros(2), np.ones(2), 0.003, 4.0))
    ks = np.asarray(cands)
    p = unitchoice.probabilities(cells, cands, 0.1 * zcdp.rho_for(1.0, 1e-6))
    assert p[ks <= 20].sum() < 0.003
    assert p[(ks >= 64) & (ks <= 152)].sum() > 0.99


def _reference_probabilities(cells, cands, rho):
    """The exponential mechanism written out in floating point, apart from
    the library: f, the pairwise comparisons in units, the floor, and
    weights exp(sqrt(8 rho) / 2 u)."""
    c = np.asarray(cells, dtype=float)
    f = np.array([_signal(c, k) for k in cands])
    inv = 1 / np.sqrt(np.asarray(cands, dtype=float))
    u = []
    for i in range(len(cands)):
        pair = [(f[i] - f[j]) / abs(inv[i] - inv[j]) for j in range(len(cands)) if j != i]
        u.append(min(0.0, *pair, (np.sum(c <= 2 * cands[i]) - c.size / 5) / (1 - 1 / 5)))
    w = np.exp(math.sqrt(8 * rho) / 2 * (np.array(u) - max(u)))
    return w / w.sum()


def test_the_law_is_the_exponential_mechanism_on_the_signal_score():
    rng = np.random.default_rng(5)
    cells = np.maximum(1, np.exp(rng.normal(2.5, 1.0, 60))).astype(np.int64)
    cands = (1, 2, 4, 8, 16, 32, 64, 128)
    for rho in (2e-3, 2e-2):
        assert np.allclose(
            unitchoice.probabilities(cells, cands, rho),
            _reference_probabilities(cells, cands, rho),
            rtol=1e-3,
            atol=1e-12,
        )


def test_the_exponential_mechanism_spends_what_it_states():
    """lambda <= sqrt(8 rho) / 2 - 2^-20 exactly, so the range of the privacy
    loss, 2 lambda + 2^-19, is at most eps_em = sqrt(8 rho): eps_em-bounded
    range, eps_em^2 / 8 = rho-zCDP."""
    for rho in (1e-6, 2.4e-3, 0.0244, 0.5, 3.0):
        lam = unitchoice._lambda(rho)
        assert lam > 0
        width = 2 * lam + Fraction(2, unitchoice.DEN)
        assert width * width <= 8 * Fraction(rho)
        assert width > Fraction(math.sqrt(8 * rho)) * (1 - Fraction(1, 10**6))
    assert unitchoice._lambda(1e-14) == 0  # too little to choose: uniform, still private


# --------------------------------------------------------------------------- #
# the sampler's law


def test_draw_follows_exp_minus_a_exactly():
    """Exponents with whole and fractional parts: counts of 12,000 draws
    against exp(-a / 2^20) normalised (stats.assert_fits, false-failure rate
    P_FAIL)."""
    D = unitchoice.DEN
    a = [0, D // 2, D, 3 * D + 12_345, 2 * D, D // 7, 5 * D]
    probs = np.exp(-np.array(a, dtype=float) / D)
    probs /= probs.sum()
    source = SeededSource(2024)
    counts = np.bincount([unitchoice.draw(a, source) for _ in range(12_000)], minlength=len(a))
    assert_fits(counts, probs, rate=P_FAIL)


def test_choose_picks_each_candidate_with_its_probability():
    """End to end, scores to draw: 8 candidates on a spread of cell counts
    where no candidate dominates (a small rho), 3,000 choices against the
    exponential mechanism's law (false-failure rate P_FAIL)."""
    rng = np.random.default_rng(5)
    cells = np.maximum(1, np.exp(rng.normal(2.5, 1.0, 60))).astype(np.int64)
    cands = (1, 2, 4, 8, 16, 32, 64, 128)
    rho = 2e-3
    probs = _reference_probabilities(cells, cands, rho)
    assert probs.max() < 0.6 and np.sort(probs)[-4] > 0.02  # spread: the test can see a wrong law
    source = SeededSource(99)
    counts = np.bincount(
        [unitchoice.choose(cells, cands, rho, source) for _ in range(3_000)], minlength=len(cands)
    )
    assert_fits(counts, probs, rate=P_FAIL)


def test_draw_refuses_exponents_without_a_zero():
    with pytest.raises(ValueError, match="smallest of 0"):
        unitchoice.draw([3, 4], SeededSource(0))


# --------------------------------------------------------------------------- #
# the release: spend, record, refusals


def test_the_release_spends_rho_once_and_the_noise_gets_the_rest(tmp_path):
    X, units = crowd()
    rho = zcdp.rho_for(1.0, 1e-6)
    acc = ZCDPAccountant(epsilon=1.0, delta=1e-6)
    est = fit_quietly(auto_k(accountant=acc, random_state=4), X, units)
    rel = est.spans_.release
    choice, k = rel.unit_choice, rel.units.max_cells_per_unit
    assert acc.spent_rho == [rho] and rel.rho == rho
    assert choice.share == unit_plan.SHARE and choice.rho == rho * unit_plan.SHARE
    assert k in choice.candidates
    rho_noise = k / (2 * rel.noise_scale)  # (sqrt(k) m)^2 / (2 sigma^2), m = 1
    assert rho_noise <= rho - choice.rho
    assert rho_noise == pytest.approx(rho - choice.rho, rel=1e-5)  # sigma^2 rounded up by < 1e-5
    with pytest.raises(BudgetExceeded):
        fit_quietly(auto_k(accountant=acc, random_state=4), X, units)
    basic = BudgetAccountant(epsilon=2.0, delta=1e-5)
    fit_quietly(auto_k(accountant=basic, random_state=4), X, units)
    assert basic.spent_budget == [(1.0, 1e-6)]


def test_the_release_records_the_choice(tmp_path):
    X, units = crowd()
    est = fit_quietly(auto_k(random_state=7), X, units)
    rel = est.spans_.release
    path = tmp_path / "m.json"
    save_model(est.spans_, path)
    priv = json.loads(path.read_text())["privacy"]
    assert priv["max_cells_per_unit"] == rel.units.max_cells_per_unit
    assert priv["unit_choice"] == {
        "mechanism": "exponential",
        "candidates": list(unit_plan.candidates(rel.grid)),
        "share": unit_plan.SHARE,
        "rho": rel.unit_choice.rho,
    }
    back = load_model(path)
    assert back.release == rel
    line = [s for s in summary(est.spans_).splitlines() if s.lstrip().startswith("units")]
    k = rel.units.max_cells_per_unit
    assert line and f"k={k:,}" in line[0] and "chosen privately" in line[0] and "10% of rho" in line[0]
    # a fixed k says nothing of a choice
    fixed = fit_quietly(auto_k(max_cells_per_unit=k, random_state=7), X, units).spans_
    assert fixed.release.unit_choice is None and "chosen" not in summary(fixed)
    assert "unit_choice" not in model_to_dict(fixed)["privacy"]


@pytest.mark.parametrize(
    "edit, what",
    [
        (lambda c: c.update(candidates=[1, 2]), "not among the candidates"),
        (lambda c: c.update(rho=1.0), "unit_choice.rho"),
        (lambda c: c.update(candidates=[4, 2, 8]), "increasing"),
    ],
)
def test_the_loader_checks_the_choice(edit, what):
    X, units = crowd()
    doc = model_to_dict(fit_quietly(auto_k(random_state=7), X, units).spans_)
    doc["privacy"]["max_cells_per_unit"] = 8
    doc["privacy"]["unit_choice"]["candidates"] = [1, 2, 4, 8, 16]
    model_from_dict(doc)
    edit(doc["privacy"]["unit_choice"])
    with pytest.raises(MalformedModel, match=what):
        model_from_dict(doc)


@pytest.mark.parametrize("noise", ["discrete", "laplace"])
def test_auto_with_laplace_noise_is_refused_before_anything_is_read(noise):
    X, units = crowd()
    with pytest.raises(ValueError, match="Gaussian noise"):
        auto_k(noise=noise).fit(X, units=units)


def test_one_source_makes_the_same_release_twice():
    X, units = crowd()
    a = fit_quietly(auto_k(random_state=11), X, units).spans_
    b = fit_quietly(auto_k(random_state=11), X, units).spans_
    assert a.release == b.release and np.array_equal(a.histogram.values, b.histogram.values)


def _resolved(units=True):
    p = validated(
        dict(eps=0.03, min_samples=50, epsilon=1.0, delta=1e-6, bounds=(0, 1), max_cells_per_unit="auto")
    )
    return resolve(p, np.zeros(2), np.ones(2), units=units)


def test_the_candidates_releases_share_everything_but_k():
    r = _resolved()
    assert [c.units.max_cells_per_unit for c in r.choices] == list(unit_plan.candidates(r.release.grid))
    assert r.release is r.choices[-1]
    for c in r.choices:
        assert (c.grid, c.histogram, c.noise.rho, c.delta_spent, c.unit_choice) == (
            r.release.grid,
            r.release.histogram,
            r.release.noise.rho,
            r.release.delta_spent,
            r.release.unit_choice,
        )
        assert c.noise.l2_sensitivity == pytest.approx(math.sqrt(c.units.max_cells_per_unit))


class _Twice(NumpyBackend):
    def count_units_choosing(self, grid, X, units, choose, key):
        choose(np.array([3]))
        return super().count_units_choosing(grid, X, units, choose, key)


def test_a_backend_must_choose_exactly_once():
    r = _resolved()
    X, units = crowd()
    with pytest.raises(RuntimeError, match="twice"):
        release_choosing(r.choices, X, units=units, backend=_Twice(), random_state=0)
    with pytest.raises(ValueError, match="release_choosing"):
        release_histogram(r.release, X, units=units, random_state=0)
    with pytest.raises(ValueError, match="candidate"):
        release_choosing(r.choices[:-1][::-1], X, units=units, random_state=0)


def test_the_utility_note_quotes_the_chosen_k_s_noise():
    """The note after a fit quotes one estimate's noise at the k chosen, not
    at the stand-in release (the largest candidate) planned before it."""
    from dpdbscan.plan.outlook import forecast

    X, units = crowd()
    with pytest.warns(UtilityWarning, match="standard deviation") as caught:
        est = auto_k(random_state=7).fit(X, units=units)
    k = est.spans_.release.units.max_cells_per_unit
    r = _resolved()
    made = r.choices[list(unit_plan.candidates(r.release.grid)).index(k)]
    expected = f"standard deviation {forecast(made, r.spans).noise_std:.1f})"
    stand_in = f"standard deviation {forecast(r.release, r.spans).noise_std:.1f})"
    notes = [str(w.message) for w in caught if "standard deviation" in str(w.message)]
    assert expected != stand_in and any(expected in n for n in notes)


def test_the_research_hook_offers_one_k_and_restores_the_ladder():
    from dpdbscan.research import offered_k

    X, units = crowd()
    ladder = unit_plan.candidates(Grid(np.zeros(2), np.ones(2), 0.03, 4.0))
    with offered_k(3):
        est = fit_quietly(auto_k(random_state=0), X, units)
    assert est.spans_.release.units.max_cells_per_unit == 3
    assert tuple(est.spans_.release.unit_choice.candidates) == (3,)
    assert unit_plan.candidates(Grid(np.zeros(2), np.ones(2), 0.03, 4.0)) == ladder
