"""Which cells within the border radius join a span (SpanSpec.border_cells).

A geographic map at the user's eps and MinPts draws a border cell only where
the release shows points ("occupied": its noisy count reaches
laws.noise.shown_count); elsewhere, and in the automatic mode, every cell within
the radius joins, as before. The model file keeps the rule and needs the
histogram it reads."""

from __future__ import annotations

import json
import warnings
from dataclasses import replace

import numpy as np
import pytest

from dpdbscan import DPDBSCAN, fit_lonlat, load_model, predict_lonlat, save_model
from dpdbscan.geometry.projection import Equirectangular
from dpdbscan.laws.noise import SHOWN_LEVEL, shown_count, tail
from dpdbscan.model.codec import model_from_dict, model_to_dict

BOUNDS = (-122.50, 37.70, -122.40, 37.80)  # about 8.8 x 11.1 km
PLACE = (4.0, 5.0)  # km from the corner: a taxi rank, 3,000 points within ~20 m


def _lonlat(km: np.ndarray) -> np.ndarray:
    """Lon/lat of points given in km east and north of the box's corner."""
    proj = Equirectangular.from_bounds(BOUNDS[:2], BOUNDS[2:])
    return proj.inverse(km + proj.forward(np.array([BOUNDS[:2]]))[0])


@pytest.fixture(scope="module")
def rank():
    rng = np.random.default_rng(1)
    km = np.vstack([rng.normal(PLACE, 0.02, (3000, 2)), rng.uniform((0, 0), (8.8, 11.1), (500, 2))])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = fit_lonlat(_lonlat(km), bounds=BOUNDS, eps="200m", min_samples=30, random_state=0)
    return km, model


def test_shown_count_is_the_noise_s_upper_quantile():
    for noise, scale in (("gaussian", 100.0), ("gaussian", 2463.0), ("discrete", 0.5), ("laplace", 0.2)):
        t = shown_count(noise, scale)
        assert tail(noise, scale, t) <= SHOWN_LEVEL < tail(noise, scale, t - 1)
    assert 2.2 * 10 < shown_count("gaussian", 100.0) <= 2.4 * 10 + 1  # ~2.33 sigma
    assert shown_count("none", 1.0) == 1  # exact counts: a cell shows points when it holds one


def test_a_geographic_map_at_fixed_parameters_draws_borders_only_where_points_are(rank):
    km, model = rank
    assert model.spec.border_cells == "occupied"
    keys, labels = model.regions()
    classic = replace(model, spec=replace(model.spec, border_cells="any"))
    all_keys, _ = classic.regions()
    assert set(keys.tolist()) < set(all_keys.tolist())  # strictly fewer cells
    border = ~np.isin(keys, model.core_keys)
    h = model.histogram
    cells = h.grid.encode(model.grid.decode(keys[border]) // model.spec.subcells)
    assert np.all(h.value_at(cells) >= shown_count(h.noise, h.scale))
    # the rank's points are in the span (but for a stray few in cells that show
    # too few to tell from noise); empty ground 300 m off it is inside the
    # classic border (2 eps around the points), not in the map
    labels_rank = np.asarray(predict_lonlat(model, _lonlat(km[:3000])))
    assert np.mean(labels_rank >= 0) > 0.99, np.mean(labels_rank >= 0)
    # the classic border's cells 250 m or more from the rank: empty ground
    # (but for the sparse background), nearly all gone from the map
    g = model.grid
    centres = g.decode(all_keys) * g.width + g.lower + g.width / 2
    proj = Equirectangular.from_bounds(BOUNDS[:2], BOUNDS[2:])
    far = np.hypot(*(centres - proj.forward(_lonlat(np.array([PLACE])))[0]).T) >= 0.25
    assert far.sum() >= 10
    off = proj.inverse(centres[far])
    assert np.all(np.asarray(predict_lonlat(classic, off)) >= 0)
    assert np.mean(np.asarray(predict_lonlat(model, off)) == -1) > 0.9


def test_elsewhere_every_cell_within_the_radius_joins(rank):
    km, _ = rank
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = DPDBSCAN(0.2, min_samples=30, bounds=([0, 0], [8.8, 11.1]), random_state=0).fit(km)
        auto = fit_lonlat(_lonlat(km), bounds=BOUNDS, eps="auto", min_samples="auto", random_state=0)
    assert plain.spans_.spec.border_cells == "any"  # no projection: not a map of places
    assert auto.spec.border_cells == "any"  # the automatic mode bounds its spans by the place prior


def test_the_model_file_keeps_the_rule_and_its_histogram(rank, tmp_path):
    _, model = rank
    path = tmp_path / "m.spans.json"
    save_model(model, path)
    back = load_model(path)
    assert back.spec.border_cells == "occupied"
    for a, b in zip(back.regions(), model.regions()):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="saved with it"):
        model_to_dict(model, include_histogram=False)
    data = json.loads(path.read_text())
    del data["histogram"]
    with pytest.raises(ValueError, match="border_cells"):
        model_from_dict(data)
    # files without the key read as before: every cell within the radius
    data = json.loads(path.read_text())
    del data["params"]["border_cells"]
    assert model_from_dict(data).spec.border_cells == "any"


def test_the_summary_says_which_cells_join(rank):
    from dpdbscan.model import summary

    _, model = rank
    h = model.histogram
    text = summary(model)
    t = shown_count(h.noise, h.scale)
    assert f"where the release shows them (a cell's noisy count at least {t:,} points)" in text
    classic = replace(model, spec=replace(model.spec, border_cells="any"))
    assert "where the release shows them" not in summary(classic)
