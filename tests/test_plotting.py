import numpy as np
import pytest

pytest.importorskip("matplotlib")

from dpdbscan import DPDBSCAN  # noqa: E402
from dpdbscan import plotting  # noqa: E402
from dpdbscan.post.core import neighbour_sums  # noqa: E402
from dpdbscan.geo import Equirectangular  # noqa: E402
from dpdbscan.geometry import cells_to_polygons  # noqa: E402
from dpdbscan.model import SpanModel  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"


def blobs(seed=0):
    rng = np.random.default_rng(seed)
    return np.vstack([rng.normal([2, 2], 0.3, (1500, 2)), rng.normal([7, 6], 0.4, (1500, 2))])


@pytest.fixture(scope="module", params=["dense", "sparse"])
def model(request):
    est = DPDBSCAN(eps=0.5, min_samples=20, epsilon=1.0, bounds=(0.0, 10.0), random_state=0,
                   histogram=request.param).fit(blobs())
    return est.spans_


def _close(ax):
    import matplotlib.pyplot as plt

    plt.close(ax.figure)


def test_histogram_image_is_the_released_histogram(model):
    ax = plotting.plot_histogram(model.histogram)
    img = np.asarray(ax.images[0].get_array(), dtype=np.float64)
    grid = model.histogram.grid
    expected = np.zeros(grid.shape)
    keys, vals = model.histogram.sparse()
    c = grid.decode(keys)
    expected[c[:, 0], c[:, 1]] = vals
    np.testing.assert_array_equal(img, expected.T)
    x1 = grid.lower[0] + grid.shape[0] * grid.width
    np.testing.assert_allclose(ax.images[0].get_extent(), [0, x1, 0, grid.lower[1] + grid.shape[1] * grid.width])
    # paper style: symmetric scale, zero fully transparent, positive red, negative green
    norm = ax.images[0].norm
    assert norm.vmin == -norm.vmax > -np.inf
    cmap = ax.images[0].cmap
    assert cmap(0.5)[3] == 0.0
    assert cmap(1.0)[0] > 0.8 and cmap(1.0)[1] == 0.0 and cmap(1.0)[3] == 1.0
    assert cmap(0.0)[1] > 0.5 and cmap(0.0)[0] == 0.0
    _close(ax)


def test_big_grids_are_drawn_in_blocks_that_keep_the_total(model):
    ax = plotting.plot_histogram(model.histogram, max_pixels=100)
    img = np.asarray(ax.images[0].get_array(), dtype=np.float64)
    assert img.size <= 4 * 100  # ceil per axis
    assert img.sum() == pytest.approx(float(model.histogram.values.sum()))
    assert "cells per pixel" in ax.get_title()
    _close(ax)


def test_neighbour_sums_image(model):
    ax = plotting.plot_neighbour_sums(model.histogram)
    img = np.ma.filled(ax.images[0].get_array().astype(np.float64), np.nan)
    keys, sums = neighbour_sums(model.histogram)
    grid = model.histogram.grid
    c = grid.decode(keys)
    np.testing.assert_allclose(img.T[c[:, 0], c[:, 1]], sums)
    # the two blob centres are the brightest places
    top = np.unravel_index(np.nanargmax(img.T), img.T.shape)
    centre = grid.lower + (np.asarray(top) + 0.5) * grid.width
    assert min(np.linalg.norm(centre - [2, 2]), np.linalg.norm(centre - [7, 6])) < 1.0
    _close(ax)


def test_spans_patches_follow_the_cells(model):
    ax = plotting.plot_spans(model)
    n_polys = sum(len(cells_to_polygons(model.span_cells(s))) for s in range(model.n_spans))
    assert model.n_spans == 2
    assert len(ax.patches) == n_polys
    for patch in ax.patches:
        v = patch.get_path().vertices
        assert np.all(v >= model.grid.lower - 1e-9) and np.all(v <= 10 + model.grid.width)
    assert ax.get_title() == "2 DP span(s), epsilon=1"
    _close(ax)


def test_transform_maps_images_and_spans_to_lon_lat():
    """A km model drawn through the inverse projection lands in the degree box."""
    proj = Equirectangular.from_bounds((-122.48, 37.72), (-122.38, 37.82))
    lo, hi = proj.project_bounds((-122.48, 37.72), (-122.38, 37.82))
    rng = np.random.default_rng(3)
    X = proj.forward(np.column_stack([rng.normal(-122.41, 0.001, 3000), rng.normal(37.79, 0.001, 3000)]))
    m = DPDBSCAN(eps=0.05, min_samples=50, bounds=(lo, hi), random_state=1).fit(X).spans_
    ax = plotting.plot_spans(m, transform=proj.inverse, aspect=proj.aspect)
    verts = np.vstack([p.get_path().vertices for p in ax.patches])
    assert np.all(np.abs(verts[:, 0] + 122.41) < 0.01) and np.all(np.abs(verts[:, 1] - 37.79) < 0.01)
    assert ax.get_aspect() == pytest.approx(proj.aspect)
    _close(ax)
    ax = plotting.plot_histogram(m.histogram, transform=proj.inverse, aspect=proj.aspect)
    x0, x1, y0, y1 = ax.images[0].get_extent()
    assert x0 == pytest.approx(-122.48) and y0 == pytest.approx(37.72)
    assert x1 >= -122.38 - 1e-9 and x1 - (-122.38) < 0.001
    _close(ax)


def test_labels_plot_and_subsample(model):
    X = blobs(1)
    labels = model.predict(X)
    ax = plotting.plot_labels(X, labels, max_points=500)
    drawn = sum(len(c.get_offsets()) for c in ax.collections)
    assert drawn == 500
    _close(ax)
    ax = plotting.plot_labels(X, labels, max_points=None)
    assert sum(len(c.get_offsets()) for c in ax.collections) == X.shape[0]
    _close(ax)
    with pytest.raises(ValueError, match="one entry per point"):
        plotting.plot_labels(X, labels[:-1])


def test_save_writes_a_png(model, tmp_path):
    ax = plotting.plot_spans(model, points=blobs(2))
    plotting.save(ax, tmp_path / "s.png")
    assert (tmp_path / "s.png").read_bytes()[:8] == PNG


def test_plots_refuse_other_dimensions():
    m = DPDBSCAN(eps=1.0, min_samples=5, bounds=(0.0, 4.0), random_state=0).fit(
        np.random.default_rng(0).uniform(0, 4, (100, 3))).spans_
    for f in (plotting.plot_histogram, plotting.plot_neighbour_sums):
        with pytest.raises(ValueError, match="2-D grids, this one is 3-D"):
            f(m.histogram)
    with pytest.raises(ValueError, match="2-D grids"):
        plotting.plot_spans(m)


def test_plot_model_draws_geographic_models_over_lon_lat():
    proj = Equirectangular.from_bounds((-122.48, 37.72), (-122.38, 37.82))
    lo, hi = proj.project_bounds((-122.48, 37.72), (-122.38, 37.82))
    rng = np.random.default_rng(4)
    P = np.column_stack([rng.normal(-122.41, 0.0008, 3000), rng.normal(37.79, 0.0008, 3000)])
    m = DPDBSCAN(eps=0.05, min_samples=50, bounds=(lo, hi), random_state=1).fit(proj.forward(P)).spans_
    m.metadata["projection"] = proj.to_dict()
    for kind in plotting.KINDS:
        ax = plotting.plot_model(m, kind, points=P if kind == "labels" else None)
        assert ax.get_xlabel() == "longitude (degrees)" and ax.get_aspect() == pytest.approx(proj.aspect)
        x0, x1 = ax.get_xlim()
        assert -122.49 < x0 < x1 < -122.37
        if kind != "labels":  # the whole public box, not only where the points are
            assert x0 < -122.47 and x1 > -122.39
        _close(ax)
    ax = plotting.plot_model(m, "labels", points=P)
    offsets = np.vstack([c.get_offsets() for c in ax.collections])
    assert np.all(np.abs(offsets[:, 0] + 122.41) < 0.01)  # drawn in degrees, not km
    _close(ax)


def test_plot_model_rejects_bad_requests(model):
    with pytest.raises(ValueError, match="kind must be one of"):
        plotting.plot_model(model, "pie")
    with pytest.raises(ValueError, match="needs points"):
        plotting.plot_model(model, "labels")
    bare = SpanModel.from_dict(model.to_dict(include_histogram=False))
    with pytest.raises(ValueError, match="without its noisy histogram"):
        plotting.plot_model(bare, "sums")
