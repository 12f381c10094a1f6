"""A geographic map at the user's eps and MinPts draws a span only where the
release shows points in it (model/shown.py): a span whose cells' noisy
counts add up to less than what the noise of that many empty cells reaches
(t sqrt(n)) is a sub-cell made core by noise, and is left out."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest

from dpdbscan import fit_lonlat
from dpdbscan.geometry.projection import Equirectangular
from dpdbscan.laws.noise import shown_count
from dpdbscan.model import summary
from dpdbscan.model.reparam import remodel, with_params
from dpdbscan.model.shown import _distinct_pairs, shown_floor, shown_mass, shown_spans
from dpdbscan.post.coretests import build_spans

BOUNDS = (-122.50, 37.70, -122.40, 37.80)  # about 8.8 x 11.1 km
PLACE = (4.0, 5.0)  # km from the corner: a rank where 600 units stop


@pytest.fixture(scope="module")
def rank():
    """A person-level map (each unit at most 8 cells): the noise of one
    cell has a standard deviation of about 13 units."""
    proj = Equirectangular.from_bounds(BOUNDS[:2], BOUNDS[2:])
    rng = np.random.default_rng(1)
    km = np.vstack([rng.normal(PLACE, 0.02, (600, 2)), rng.uniform((0, 0), (8.8, 11.1), (400, 2))])
    lonlat = proj.inverse(km + proj.forward(np.array([BOUNDS[:2]]))[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit_lonlat(
            lonlat,
            bounds=BOUNDS,
            eps="200m",
            min_samples=30,
            units=np.arange(len(km)),
            max_cells_per_unit=8,
            delta=1e-6,
            random_state=0,
        )


def _planted(model, ring):
    """The same release with a bump 3 km from the rank: one cell just under
    what a cell shows (t - 1) and its eight neighbours at ``ring``."""
    h = model.histogram
    assert h.kind == "dense"
    t = shown_count(h.noise, h.scale)
    values = h.values.copy()
    at = np.floor(np.array([7.0, 5.0]) / h.grid.width).astype(int)  # km from the corner
    values[at[0] - 1 : at[0] + 2, at[1] - 1 : at[1] + 2] = ring
    values[at[0], at[1]] = t - 1
    return replace(h, values=values), at


def _bump(model, at):
    core = model.grid.decode(model.core_keys) // model.spec.subcells
    return np.all(core == at, axis=1)


def test_a_span_the_release_does_not_show_is_left_out(rank):
    assert rank.spec.border_cells == "occupied"
    h = rank.histogram
    t = shown_count(h.noise, h.scale)
    # the lowest ring (all under t, so no border cell joins) whose ball
    # estimate makes the middle cell's sub-cells core: a span of noise
    for ring in range(1, t):
        hist, at = _planted(rank, ring)
        raw = remodel(rank, hist, build_spans(hist, rank.spec), rank.spec)  # the core test alone
        if _bump(raw, at).any():
            break
    else:
        pytest.fail("no ring under t makes the planted cell core")
    core = raw.grid.decode(raw.core_keys) // raw.spec.subcells
    bump = np.all(np.abs(core - at) <= 1, axis=1)
    assert len(np.unique(raw.labels[bump])) == 1 and not bump.all()
    which = raw.labels[bump][0]
    # its region's cells sum to less than t sqrt(n) (the rank's far more)
    mass, n = shown_mass(raw)
    floor = shown_floor(raw, n)
    assert mass[which] < floor[which]
    assert np.sum(mass >= floor) == raw.n_spans - 1
    # the map leaves it out; the rank's span is the same
    shown = shown_spans(raw)
    assert shown.n_spans == raw.n_spans - 1
    keep = raw.labels != which
    np.testing.assert_array_equal(shown.core_keys, raw.core_keys[keep])
    assert set(shown.labels.tolist()) == set(range(shown.n_spans))
    # re-parameterising the same release applies the same rule
    again = with_params(replace(rank, histogram=hist), min_samples=30)
    np.testing.assert_array_equal(again.core_keys, shown.core_keys)
    np.testing.assert_array_equal(again.labels, shown.labels)


def test_spans_the_release_shows_are_kept(rank):
    mass, n = shown_mass(rank)
    assert rank.n_spans >= 1 and np.all(mass >= shown_floor(rank, n))
    assert shown_spans(rank) is rank


def test_the_floor_does_not_depend_on_min_samples(rank):
    _, n = shown_mass(rank)
    h = rank.histogram
    t = shown_count(h.noise, h.scale)
    np.testing.assert_allclose(shown_floor(rank, n), t * np.sqrt(n))
    other = replace(rank, spec=replace(rank.spec, min_samples=1))
    np.testing.assert_array_equal(shown_floor(other, n), shown_floor(rank, n))


def test_the_summary_says_the_rule(rank):
    h = rank.histogram
    t = shown_count(h.noise, h.scale)
    text = summary(rank)
    assert f"noisy counts add up to at least {t:,} times the square root of their number" in text
    classic = replace(rank, spec=replace(rank.spec, border_cells="any"))
    assert "square root of their number" not in summary(classic)


def test_distinct_pairs_are_numpys_unique_rows_in_its_order():
    rng = np.random.default_rng(3)
    span = rng.integers(-3, 5, 2000)
    cell = rng.integers(-(2**40), 2**40, 2000) // 2**37  # many repeats, negative too
    oracle = np.unique(np.column_stack([span, cell]), axis=0)
    got = np.column_stack(_distinct_pairs(span, cell))
    np.testing.assert_array_equal(got, oracle)
    empty = _distinct_pairs(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    assert empty[0].size == 0 and empty[1].size == 0


def test_shown_mass_adds_up_as_numpys_unique_rows_did(rank):
    # the oracle: the pairs by np.unique(axis=0), summed in its order
    keys, labels = rank.regions()
    hist = rank.histogram
    cells = hist.grid.encode(rank.grid.decode(keys) // rank.spec.subcells)
    pairs = np.unique(np.column_stack([labels.astype(np.int64), cells.astype(np.int64)]), axis=0)
    values = np.asarray(hist.value_at(pairs[:, 1]), dtype=np.float64)
    mass, n = shown_mass(rank)
    assert mass.tobytes() == np.bincount(pairs[:, 0], weights=values, minlength=rank.n_spans).tobytes()
    np.testing.assert_array_equal(n, np.bincount(pairs[:, 0], minlength=rank.n_spans))
