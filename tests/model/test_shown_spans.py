"""A geographic map at the user's eps and MinPts draws a span only where the
release shows at least MinPts points in it (model/shown.py): a span whose
cells' noisy counts add up to less than MinPts plus what the noise alone
reaches is a sub-cell made core by noise, and is left out."""

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
from dpdbscan.model.shown import shown_floor, shown_mass, shown_spans
from dpdbscan.post.coretests import build_spans

BOUNDS = (-122.50, 37.70, -122.40, 37.80)  # about 8.8 x 11.1 km
PLACE = (4.0, 5.0)  # km from the corner: a rank of 3,000 points


@pytest.fixture(scope="module")
def rank():
    proj = Equirectangular.from_bounds(BOUNDS[:2], BOUNDS[2:])
    rng = np.random.default_rng(1)
    km = np.vstack([rng.normal(PLACE, 0.02, (3000, 2)), rng.uniform((0, 0), (8.8, 11.1), (500, 2))])
    lonlat = proj.inverse(km + proj.forward(np.array([BOUNDS[:2]]))[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit_lonlat(lonlat, bounds=BOUNDS, eps="200m", min_samples=30, random_state=0)


def _planted(model):
    """The same release with a bump 3 km from the rank: one cell at
    MinPts * 2/3 and its eight neighbours each just under what one cell
    shows, which the ball estimate of the middle's sub-cells adds up past
    the core threshold."""
    h = model.histogram
    assert h.kind == "dense"
    t = shown_count(h.noise, h.scale)
    values = h.values.copy()
    at = np.floor(np.array([7.0, 5.0]) / h.grid.width).astype(int)  # km from the corner
    values[at[0] - 1 : at[0] + 2, at[1] - 1 : at[1] + 2] = t - 1
    values[at[0], at[1]] = 2 * model.spec.min_samples // 3
    return replace(h, values=values), at


def test_a_span_the_release_does_not_show_is_left_out(rank):
    assert rank.spec.border_cells == "occupied"
    hist, at = _planted(rank)
    raw = remodel(rank, hist, build_spans(hist, rank.spec), rank.spec)  # the core test alone
    # the core test makes the bump a span of its own, apart from the rank's
    core = raw.grid.decode(raw.core_keys) // raw.spec.subcells
    bump = np.all(np.abs(core - at) <= 1, axis=1)
    assert bump.any() and not bump.all()
    assert len(np.unique(raw.labels[bump])) == 1
    # its region's cells sum to less than MinPts + t sqrt(n) (the rank's far more)
    mass, n = shown_mass(raw)
    floor = shown_floor(raw, n)
    which = raw.labels[bump][0]
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


def test_the_summary_says_the_rule(rank):
    h = rank.histogram
    t = shown_count(h.noise, h.scale)
    text = summary(rank)
    assert f"plus {t:,} points times the square root of its number of cells" in text
    classic = replace(rank, spec=replace(rank.spec, border_cells="any"))
    assert "square root of its number of cells" not in summary(classic)
