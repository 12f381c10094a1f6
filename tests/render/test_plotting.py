import numpy as np
import pytest

pytest.importorskip("matplotlib")

from dpdbscan import DPDBSCAN  # noqa: E402
from dpdbscan.geometry.outlines import cells_to_polygons  # noqa: E402
from dpdbscan.geometry.projection import Equirectangular  # noqa: E402
from dpdbscan.model import model_from_dict, model_to_dict  # noqa: E402
from dpdbscan.model.stats import span_stats  # noqa: E402
from dpdbscan.post.coretests.bound.corecells import neighbour_sums  # noqa: E402
from dpdbscan.render import mapstyle, plotting  # noqa: E402

from releases import span_region  # noqa: E402
from spanmodels import hand_model, square  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"


def blobs(seed=0):
    rng = np.random.default_rng(seed)
    return np.vstack([rng.normal([2, 2], 0.3, (1500, 2)), rng.normal([7, 6], 0.4, (1500, 2))])


@pytest.fixture(scope="module", params=["dense", "sparse"])
def model(request):
    est = DPDBSCAN(
        eps=0.5, min_samples=20, epsilon=1.0, bounds=(0.0, 10.0), random_state=0, histogram=request.param
    ).fit(blobs())
    return est.spans_


def _close(ax):
    import matplotlib.pyplot as plt

    plt.close(ax.figure)


def _spans(ax):
    """The one collection that draws the spans (one path per span in view)."""
    (coll,) = [c for c in ax.collections if c.get_gid() == "spans"]
    return coll


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
    np.testing.assert_allclose(
        ax.images[0].get_extent(), [0, x1, 0, grid.lower[1] + grid.shape[1] * grid.width]
    )
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


def test_spans_paths_follow_the_cells(model):
    ax = plotting.plot_spans(model)
    assert model.n_spans == 2
    paths = _spans(ax).get_paths()
    assert len(paths) == model.n_spans
    g = model.grid
    for s, path in enumerate(paths):
        v = path.vertices
        assert np.all(v >= g.lower - 1e-9) and np.all(v <= 10 + g.width)
        # the path holds exactly the span's outline rings, in model units
        rings = [r for poly in cells_to_polygons(span_region(model, s)) for r in poly]
        np.testing.assert_allclose(v, g.lower + np.concatenate(rings) * g.width)
        # and fills exactly the region's cells (holes stay empty)
        centres = g.lower + (span_region(model, s) + 0.5) * g.width
        assert path.contains_points(centres).all()
    # a seeded fit (random_state=0) says so in its title, as a --seed release does
    assert " ".join(ax.get_title().split()) == (
        "2 DP span(s) event-level: each row is protected, not each person; epsilon=1, delta=0; "
        "seeded: not a private release (reproducible, insecure noise: for research only)"
    )
    _close(ax)


def test_transform_maps_images_and_spans_to_lon_lat():
    """A km model drawn through the inverse projection lands in the degree box."""
    proj = Equirectangular.from_bounds((-122.48, 37.72), (-122.38, 37.82))
    lo, hi = proj.project_bounds((-122.48, 37.72), (-122.38, 37.82))
    rng = np.random.default_rng(3)
    X = proj.forward(np.column_stack([rng.normal(-122.41, 0.001, 3000), rng.normal(37.79, 0.001, 3000)]))
    m = DPDBSCAN(eps=0.05, min_samples=50, bounds=(lo, hi), random_state=1).fit(X).spans_
    ax = plotting.plot_spans(m, transform=proj.inverse, aspect=proj.aspect)
    verts = np.vstack([p.vertices for p in _spans(ax).get_paths()])
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


def test_save_compresses_less_and_keeps_every_pixel(model, tmp_path, monkeypatch):
    """The PNG's zlib level is a speed for size trade: the pixels are those
    of matplotlib's default level, the file is written at :data:`plotting.PNG_COMPRESS_LEVEL`."""
    from PIL import Image

    def pixels(path):
        with Image.open(path) as im:
            return np.asarray(im.convert("RGBA"))

    plotting.save(plotting.plot_spans(model), tmp_path / "fast.png")
    monkeypatch.setattr(plotting, "PNG_COMPRESS_LEVEL", 6)  # zlib's and Pillow's default
    plotting.save(plotting.plot_spans(model), tmp_path / "default.png")
    np.testing.assert_array_equal(pixels(tmp_path / "fast.png"), pixels(tmp_path / "default.png"))
    assert (tmp_path / "fast.png").read_bytes() != (tmp_path / "default.png").read_bytes()


def test_plots_refuse_other_dimensions():
    m = (
        DPDBSCAN(eps=1.0, min_samples=5, bounds=(0.0, 4.0), random_state=0)
        .fit(np.random.default_rng(0).uniform(0, 4, (100, 3)))
        .spans_
    )
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
        if kind in ("histogram", "sums"):  # the whole public box, not only where the points are
            assert x0 < -122.47 and x1 > -122.39
        if kind == "spans":  # cropped to the spans (tests/render/test_plotting.py::test_spans_crop...)
            assert x0 > -122.43 and x1 < -122.39
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
    bare = model_from_dict(model_to_dict(model, include_histogram=False))
    with pytest.raises(ValueError, match="without its noisy histogram"):
        plotting.plot_model(bare, "sums")


# --------------------------------------------------------------------------- #
# the spans picture an analyst reads (issue 15): crop, size, scale bar, ids,
# colours, heat layer


def _png_size(path):
    head = path.read_bytes()[:24]
    assert head[:8] == PNG
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def _labels(ax):
    return {t.get_gid(): t.get_text() for t in ax.texts if (t.get_gid() or "").startswith("span-label-")}


def test_spans_picture_is_cropped_to_the_spans_by_default():
    m = hand_model([square(50, 60, 4), square(70, 65, 3)], shape=(200, 200))
    ax = plotting.plot_spans(m)
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    # every span cell is in view, with a margin ...
    assert x0 < 50 and x1 > 73 and y0 < 60 and y1 > 68
    # ... and the view is far smaller than the 200 x 200 box
    assert x1 - x0 < 40 and y1 - y0 < 40
    # widened to the shape of the axes, so the picture has no empty bands
    pos, (fw, fh) = ax.get_position(), ax.figure.get_size_inches()
    assert (x1 - x0) / (y1 - y0) == pytest.approx(pos.width * fw / (pos.height * fh), rel=1e-6)
    _close(ax)
    ax = plotting.plot_spans(m, extent="box")
    assert ax.get_xlim() == pytest.approx((0, 200)) and ax.get_ylim() == pytest.approx((0, 200))
    _close(ax)


def test_spans_picture_honours_a_given_extent():
    m = hand_model([square(50, 60, 4), square(120, 20, 3)], shape=(200, 200))
    ax = plotting.plot_spans(m, extent=(40, 50, 90, 70))
    assert ax.get_xlim() == pytest.approx((40, 90)) and ax.get_ylim() == pytest.approx((50, 70))
    # only the span in view is drawn and labelled
    assert len(_spans(ax).get_paths()) == 1 and set(_labels(ax).values()) == {"0"}
    _close(ax)
    with pytest.raises(ValueError, match="xmin < xmax"):
        plotting.plot_spans(m, extent=(90, 50, 40, 70))


def test_geo_extent_is_lon_lat_and_size_is_in_pixels(tmp_path):
    m = hand_model([square(3, 4, 2), square(6, 6, 1)], shape=(10, 12), geo=True)
    box = (-122.46, 37.74, -122.42, 37.78)
    ax = plotting.plot_model(m, "spans", extent=box, size=(640, 480), dpi=100)
    assert ax.get_xlim() == pytest.approx(box[0::2]) and ax.get_ylim() == pytest.approx(box[1::2])
    plotting.save(ax, tmp_path / "s.png", dpi=100)
    assert _png_size(tmp_path / "s.png") == (640, 480)
    ax = plotting.plot_model(m, "histogram", extent=box, size=(300, 200), dpi=50)
    assert ax.get_xlim() == pytest.approx(box[0::2])
    plotting.save(ax, tmp_path / "h.png", dpi=50)
    assert _png_size(tmp_path / "h.png") == (300, 200)
    with pytest.raises(ValueError, match="size"):
        plotting.plot_model(m, "spans", size=(5, 5))


def _scale_bars(ax):
    return [a for a in ax.artists if a.get_gid() == "scale-bar"]


@pytest.mark.parametrize("width,side,unit", [(0.01, 20, "m"), (1.0, 40, "km")])
def test_geo_pictures_have_a_scale_bar_in_m_or_km(width, side, unit):
    # one square span of side * width km: the default view is a little wider
    m = hand_model([square(5, 5, side)], shape=(60, 60), width=width, geo=True)
    ax = plotting.plot_model(m, "spans")
    (bar,) = _scale_bars(ax)
    texts = {t.get_text() for t in bar.findobj(lambda a: hasattr(a, "get_text"))}
    km = bar.scale_km
    mantissa = km / 10 ** np.floor(np.log10(km))
    assert min(abs(mantissa - v) for v in (1, 2, 5)) < 1e-9  # a round length
    number = km * 1000 if unit == "m" else km
    assert f"{number:g} {unit}" in texts
    x0, x1 = ax.get_xlim()
    km_per_degree = Equirectangular.from_bounds((-122.48, 37.72), (-122.38, 37.82)).kx
    view_km = (x1 - x0) * km_per_degree
    assert 0.08 * view_km <= km <= 0.2 * view_km + 1e-9
    # the bar is as long as it says, in degrees of longitude
    assert bar.size_bar.get_children()[0].get_width() * km_per_degree == pytest.approx(km)
    _close(ax)


def test_plain_models_have_no_scale_bar():
    ax = plotting.plot_model(hand_model([square(5, 5, 2)]), "spans")
    assert _scale_bars(ax) == []
    _close(ax)


def test_the_largest_spans_are_labelled_with_their_ids():
    # 14 square spans of different sizes, far enough apart that no label is skipped
    sides = [1, 5, 2, 7, 3, 1, 6, 2, 4, 8, 1, 3, 2, 5]
    spans = [square(12 * (i % 7), 14 * (i // 7), s) for i, s in enumerate(sides)]
    m = hand_model(spans, shape=(90, 30))
    ax = plotting.plot_spans(m, extent="box")
    ids = {int(v) for v in _labels(ax).values()}
    order = sorted(range(len(sides)), key=lambda i: (-sides[i], i))
    assert ids == set(order[:10])
    # each label sits inside its span, or, for a span drawn smaller than its id, at its upper right
    # corner (the id written beside it)
    stats = span_stats(m)
    inside = 0
    for t in ax.texts:
        s = int(t.get_text())
        if t.get_ha() == "center":
            assert np.all(stats.lower[s] <= t.get_position()) and np.all(t.get_position() <= stats.upper[s])
            inside += 1
        else:
            assert t.get_position() == pytest.approx(stats.upper[s]) and sides[s] <= 4
    assert inside >= 5  # sides 5 to 8 (over 24 pixels): the ids on them
    _close(ax)
    ax = plotting.plot_spans(m, extent="box", n_labels=3)
    assert {int(v) for v in _labels(ax).values()} == set(order[:3])
    _close(ax)


def _meets_its_span(ax, t, stats):
    """Whether the drawn id ``t`` covers part of its span's box."""
    s = int(t.get_text())
    (x0, y0), (x1, y1) = ax.transData.transform(np.array([stats.lower[s], stats.upper[s]]))
    box = t.get_window_extent()
    return box.x0 < x1 and box.x1 > x0 and box.y0 < y1 and box.y1 > y0


def test_a_small_span_far_from_others_gets_its_id_beside_it():
    """A place a few hundred metres wide in a city's box is drawn a few
    pixels wide: its id (bold, with a white halo) was written on it and hid
    it. Its id goes beside it now; a large span keeps its id on it."""
    m = hand_model([square(20, 20, 1), square(120, 120, 60), square(150, 30, 2)], shape=(200, 200))
    ax = plotting.plot_spans(m, extent="box")
    ax.figure.canvas.draw()
    stats = span_stats(m)
    ids = {int(t.get_text()): t for t in ax.texts if (t.get_gid() or "").startswith("span-label-")}
    assert set(ids) == {0, 1, 2}
    assert not _meets_its_span(ax, ids[0], stats) and not _meets_its_span(ax, ids[2], stats)
    assert _meets_its_span(ax, ids[1], stats) and ids[1].get_ha() == "center"  # on the large one
    _close(ax)


def test_a_small_span_in_a_crowd_keeps_its_id_on_it():
    # two small spans side by side: beside them, an id could name either
    m = hand_model([square(20, 20, 2), square(23, 20, 2)], shape=(200, 200))
    ax = plotting.plot_spans(m, extent="box")
    ax.figure.canvas.draw()
    (t,) = [t for t in ax.texts if (t.get_gid() or "").startswith("span-label-")]
    assert t.get_ha() == "center" and _meets_its_span(ax, t, span_stats(m))
    _close(ax)


def test_the_periods_picture_writes_a_small_span_s_id_beside_it():
    """The small multiples of a series (``fit --per``): each panel is
    2.6 inches wide, so every place of a city was drawn under its id."""
    import dataclasses

    import matplotlib.pyplot as plt

    from dpdbscan.render.periodplot import plot_periods

    m = hand_model([square(10, 10, 1), square(150, 150, 40), square(100, 20, 1)], shape=(200, 200))
    series = {
        "period_spans": [[0, 1, 2], [0, 1]],
        "periods": {"starts": ["2026-03-02T00:00", "2026-03-09T00:00"]},
    }
    m = dataclasses.replace(m, metadata={**m.metadata, "series": series})
    fig = plot_periods(m)
    try:
        fig.canvas.draw()
        stats = span_stats(m)
        drawn = [(ax, t) for ax in fig.axes for t in ax.texts if t.get_text() in ("0", "1", "2")]
        assert sorted(t.get_text() for _, t in drawn) == ["0", "0", "1", "1", "2"]
        for ax, t in drawn:
            assert _meets_its_span(ax, t, stats) == (t.get_text() == "1")
    finally:
        plt.close(fig)


def test_a_release_without_spans_draws_its_pictures():
    """The ids beside small spans asked which spans are crowded, and a
    release without a span failed there ("cannot reshape array of size 0"):
    fit wrote the release and no picture, exit status 1."""
    import dataclasses

    import matplotlib.pyplot as plt

    from dpdbscan.render.periodplot import plot_periods

    m = (
        DPDBSCAN(eps=0.5, min_samples=10**6, bounds=(0.0, 10.0), random_state=0)
        .fit(np.random.default_rng(0).uniform(0, 10, (500, 2)))
        .spans_
    )
    assert m.n_spans == 0
    ax = plotting.plot_spans(m)
    ax.figure.canvas.draw()
    assert _labels(ax) == {}
    _close(ax)
    series = {"period_spans": [[], []], "periods": {"starts": ["2026-03-02T00:00", "2026-03-09T00:00"]}}
    fig = plot_periods(dataclasses.replace(m, metadata={**m.metadata, "series": series}))
    try:
        fig.canvas.draw()
    finally:
        plt.close(fig)


def test_labels_that_would_overlap_are_left_out():
    m = hand_model([square(10, 10, 1), square(12, 10, 1), square(60, 60, 1)], shape=(200, 200))
    ax = plotting.plot_spans(m, extent="box")  # cells 2 apart are < 1 pixel apart here
    assert len(_labels(ax)) == 2
    _close(ax)


def test_span_neighbours_are_spans_within_the_radius():
    cells = np.array([[0, 0], [1, 0], [3, 0], [20, 0], [0, 9]])
    labels = np.array([0, 0, 1, 2, 3])
    # span 1 is 2 cells from span 0; span 2 and 3 are far from everything
    assert mapstyle.span_neighbours(cells, labels, radius=2) == [(0, 1)]
    # the guarantee: within `radius` always; beyond 2 * radius never
    assert (0, 3) in mapstyle.span_neighbours(cells, labels, radius=9)
    assert mapstyle.span_neighbours(cells, labels, radius=1) in ([], [(0, 1)])
    assert (0, 2) not in mapstyle.span_neighbours(cells, labels, radius=9)


def test_span_neighbours_are_the_same_by_either_sort():
    # labels from 0 take the one-key sort; shifted to start at -1, the rows' sort
    rng = np.random.default_rng(4)
    cells = rng.integers(0, 400, (3000, 2))
    labels = rng.integers(0, 60, 3000)
    for radius in (1, 5, 30):
        fast = mapstyle.span_neighbours(cells, labels, radius)
        rows = mapstyle.span_neighbours(cells, labels - 1, radius)
        assert fast == [(a + 1, b + 1) for a, b in rows] and len(fast) > 0


def _greedy_colouring_numpy(n, edges, n_colours, order=None):
    """The colouring's rule with numpy's counting: the oracle."""
    adj = [[] for _ in range(n)]
    for a, b in edges:
        if a != b:
            adj[a].append(b)
            adj[b].append(a)
    colour = np.full(n, -1, dtype=np.int64)
    uses = np.zeros(n_colours, dtype=np.int64)
    for v in range(n) if order is None else order:
        taken = np.bincount([colour[u] for u in adj[v] if colour[u] >= 0], minlength=n_colours)
        free = np.flatnonzero(taken == 0)
        c = int(free[np.argmin(uses[free])]) if free.size else int(np.argmin(taken))
        colour[v] = c
        uses[c] += 1
    return colour


def test_greedy_colouring_is_the_oracles():
    rng = np.random.default_rng(1)
    for t in range(100):
        n, n_colours = int(rng.integers(1, 120)), int(rng.integers(1, 10))
        edges = [(int(a), int(b)) for a, b in rng.integers(0, n, (int(rng.integers(0, 6 * n + 1)), 2))]
        order = None if t % 2 else np.lexsort((np.arange(n), -rng.integers(0, 50, n)))
        want = _greedy_colouring_numpy(n, edges, n_colours, order)
        np.testing.assert_array_equal(mapstyle.greedy_colouring(n, edges, n_colours, order), want)


def test_greedy_colouring_separates_neighbours():
    n = len(mapstyle.PALETTE)
    clique = [(a, b) for a in range(n) for b in range(a + 1, n)]
    c = mapstyle.greedy_colouring(n, clique, n)
    assert sorted(c.tolist()) == list(range(n))  # a clique as large as the palette: all differ
    ring = [(i, (i + 1) % 50) for i in range(50)]
    c = mapstyle.greedy_colouring(50, ring, n)
    assert all(c[a] != c[b] for a, b in ring)
    # isolated nodes spread over the palette rather than all taking colour 0
    assert len(set(mapstyle.greedy_colouring(n, [], n).tolist())) == n
    # too few colours: no error, and only the unavoidable clashes
    big = [(a, b) for a in range(n + 1) for b in range(a + 1, n + 1)]
    c = mapstyle.greedy_colouring(n + 1, big, n)
    assert sum(c[a] == c[b] for a, b in big) == 1


def test_touching_spans_get_different_colours_in_the_picture():
    # a row of 12 spans, each touching the next (more spans than colours)
    spans = [[(3 * i + j, 5) for j in range(3)] for i in range(12)]
    m = hand_model(spans, shape=(40, 12))
    colours = mapstyle.span_colours(m)
    assert all(colours[i] != colours[i + 1] for i in range(11))
    ax = plotting.plot_spans(m)
    faces = [tuple(np.round(f, 6)) for f in _spans(ax).get_facecolor()]
    assert len(faces) == 12 and all(faces[i] != faces[i + 1] for i in range(11))
    assert len(set(faces)) >= 3
    _close(ax)


def test_heat_layer_draws_the_noisy_histogram_under_the_spans():
    values = np.zeros((30, 30), dtype=np.int64)
    values[5:10, 5:10] = 400
    values[20, 20] = 2  # below the noise floor (3 sqrt(2) / epsilon): drawn as empty
    values[22, 22] = 60
    m = hand_model([square(6, 6, 3)], shape=(30, 30), values=values)
    ax = plotting.plot_spans(m, extent="box")
    (im,) = [i for i in ax.images if i.get_gid() == "heat"]
    assert im.get_zorder() < _spans(ax).get_zorder()
    rgba = np.asarray(im.get_array())  # [y, x, channel], origin lower
    assert im.get_extent() == pytest.approx([0, 30, 0, 30])
    alpha = rgba[..., 3].T
    assert alpha[0, 0] == 0 and alpha[20, 20] == 0
    assert 0 < alpha[22, 22] < alpha[7, 7]
    assert rgba[7, 7, 0] < rgba[22, 22, 0]  # more points: darker
    assert "noisy histogram" in im.get_label()
    _close(ax)
    ax = plotting.plot_spans(m, extent="box", heat=False)
    assert not ax.images
    _close(ax)


def test_heat_colours_rise_with_the_count():
    img = np.array([[-5.0, 0.0, 3.0, 10.0, 100.0, 1000.0, 5000.0]])
    rgba = mapstyle.heat_rgba(img, vmax=1000.0, floor=3.0)
    alpha, grey = rgba[0, :, 3].astype(int), rgba[0, :, 0].astype(int)
    assert alpha[:3].tolist() == [0, 0, 0]
    assert np.all(np.diff(alpha[2:6]) > 0) and alpha[5] == alpha[6]
    assert np.all(np.diff(grey[3:6]) < 0)


def test_tiny_isolated_spans_get_a_ring_and_crowded_ones_do_not():
    spans = [square(100, 100, 60), [(20, 20)], [(300, 300)], [(301, 302)]]
    m = hand_model(spans, shape=(400, 400))
    ax = plotting.plot_spans(m, extent="box")
    (rings,) = [c for c in ax.collections if c.get_gid() == "small-spans"]
    stats = span_stats(m)
    np.testing.assert_allclose(rings.get_offsets(), stats.anchor[[1]])
    _close(ax)


def test_the_default_view_stays_in_the_box_and_the_picture_follows_the_spans(tmp_path):
    # wide spans along the bottom edge of a 100 x 100 box
    m = hand_model([square(5, 0, 3), square(80, 1, 4)], shape=(100, 100))
    ax = plotting.plot_model(m, "spans")
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    assert 0 <= x0 and x1 <= 100 and 0 <= y0 and y1 <= 100
    assert y0 == 0  # moved up into the box rather than showing what lies below it
    w, h = ax.figure.get_size_inches() * ax.figure.dpi
    assert w == pytest.approx(900) and 500 <= h < 700  # a wide picture for wide spans
    _close(ax)
    lo, hi = mapstyle.keep_in_box([-5, 2], [5, 300], [0, 0], [10, 100])
    assert lo.tolist() == [0, 0] and hi.tolist() == [10, 100]
    lo, hi = mapstyle.keep_in_box([8, 10], [12, 20], [0, 0], [10, 100])
    assert lo.tolist() == [6, 10] and hi.tolist() == [10, 20]


def _is_marked_private(ax) -> bool:
    """The picture itself says it shows private data: a watermark over the
    axes and the title."""
    marks = [t for t in ax.texts if t.get_gid() == "private-watermark"]
    return len(marks) == 1 and "NOT a DP release" in ax.get_title() and "PRIVATE" in marks[0].get_text()


def test_pictures_of_points_say_so_inside_the_file(model, tmp_path):
    """Issue 19, finding 6: a picture that draws the private points must say
    so in the picture (title and watermark), not only on standard error;
    pictures of the release alone carry no such mark."""
    X = blobs(1)
    for kind in plotting.KINDS:
        ax = plotting.plot_model(model, kind, points=X if kind in ("labels", "spans") else None)
        assert _is_marked_private(ax) == (kind in ("labels", "spans")), kind
        _close(ax)
    ax = plotting.plot_model(model, "spans")
    assert not _is_marked_private(ax) and "PRIVATE" not in ax.get_title()
    _close(ax)
    ax = plotting.plot_labels(X, model.predict(X))
    assert _is_marked_private(ax)
    plotting.save(ax, tmp_path / "labels.png")  # the mark is drawn into the file
    from PIL import Image

    with Image.open(tmp_path / "labels.png") as im:
        assert "NOT a DP release" in im.info.get("Description", "")
    ax = plotting.plot_spans(model, points=X)
    assert _is_marked_private(ax)
    _close(ax)


def _is_grey(rgb, tol=0.06):
    return max(rgb) - min(rgb) < tol


def test_a_span_has_one_colour_in_every_picture_and_the_map():
    """Issue 23: the labels picture's colours did not match the spans
    picture's (and its largest Cabs-tiny span was grey, like noise). One
    colour per span id: spans PNG, labels PNG, explore's panel at the
    model's own parameters, and the HTML map."""
    import re

    from matplotlib.colors import to_rgb

    from dpdbscan.model.stats import span_stats
    from dpdbscan.render import explorepanels as E
    from dpdbscan.render.webmap import map_html

    rng = np.random.default_rng(3)
    centres = [(2, 2), (3.2, 2.2), (2.4, 3.3), (7, 7), (7.9, 6.4), (5, 8.5), (8.5, 2)]
    X = np.vstack([rng.normal(c, 0.12, (700, 2)) for c in centres])
    model = DPDBSCAN(eps=0.3, min_samples=30, epsilon=1.0, bounds=(0.0, 10.0), random_state=1).fit(X).spans_
    n = model.n_spans
    assert n >= 6
    want = [to_rgb(h) for h in mapstyle.span_hex(model)]
    assert not any(_is_grey(c) for c in want)  # grey is for noise only
    keys, labels = model.regions()
    r = int(np.ceil(mapstyle.NEIGHBOUR_ALPHAS * model.grid.eps / model.grid.width - 1e-9))
    pairs = mapstyle.span_neighbours(model.grid.decode(keys), labels, r)
    assert pairs and all(want[a] != want[b] for a, b in pairs)  # neighbours stay apart

    # the spans picture
    ax = plotting.plot_model(model, "spans")
    faces = _spans(ax).get_facecolor()
    assert len(faces) == n
    np.testing.assert_allclose(faces[:, :3], want)
    _close(ax)

    # the labels picture: a point at every span's anchor, and noise
    stats = span_stats(model)
    P = np.vstack([stats.anchor, [[0.2, 9.8], [9.8, 0.2]]])
    lab = model.predict(P)
    assert lab.tolist() == [*range(n), -1, -1]
    ax = plotting.plot_model(model, "labels", points=P)
    (pts,) = [c for c in ax.collections if c.get_gid() == "labelled"]
    (noise,) = [c for c in ax.collections if c.get_gid() == "noise"]
    np.testing.assert_allclose(pts.get_facecolor()[:, :3], [want[s] for s in lab[:n]])
    assert _is_grey(noise.get_facecolor()[0][:3])
    _close(ax)

    # explore's panel at the model's own (eps, MinPts): the same spans, ids and colours
    ex = E.explore(model, [model.grid.eps], [model.spec.min_samples])
    (panel,) = ex.models.values()
    np.testing.assert_array_equal(panel.grid.decode(panel.regions()[0]), model.grid.decode(keys))
    np.testing.assert_array_equal(panel.regions()[1], labels)
    fig = E.figure(ex, model)
    (raster,) = [im for im in fig.axes[0].images if im.get_gid() == "span-raster"]
    img = np.asarray(raster.get_array())  # [row, column, rgba], origin lower
    x0, x1, y0, y1 = raster.get_extent()
    for s, (x, y) in enumerate(stats.anchor):
        row = int((y - y0) / (y1 - y0) * img.shape[0])
        col = int((x - x0) / (x1 - x0) * img.shape[1])
        np.testing.assert_allclose(img[row, col, :3], want[s])
    import matplotlib.pyplot as plt

    plt.close(fig)

    # the map
    page = map_html(model)
    fills = re.findall(r'<path class="span" [^>]*?fill="(#[0-9a-f]{6})"[^>]*data-id="(\d+)"', page)
    assert len(fills) == n
    assert {int(s): to_rgb(h) for h, s in fills} == dict(enumerate(want))


def test_labels_without_a_model_are_never_grey():
    """plot_labels alone (no span colours given) cycles the palette, which
    holds no grey; before, tab20 made labels 14 and 15 (mod 20) grey."""
    X = np.column_stack([np.arange(40.0), np.zeros(40)])
    ax = plotting.plot_labels(X, np.arange(40) - 1)
    (pts,) = [c for c in ax.collections if c.get_gid() == "labelled"]
    assert not any(_is_grey(c[:3]) for c in pts.get_facecolor())
    _close(ax)


def test_the_background_import_leaves_pyplot_and_its_styles_alone():
    """``fit --png`` imports matplotlib on a thread while the fit runs; the
    thread must not import pyplot, whose style library is read under a
    process-wide ``warnings.catch_warnings(record=True)`` that swallowed a
    warning the fit gave meanwhile (seen re-logged as "In
    .../petroff8.mplstyle: ..."). Checked in a fresh interpreter."""
    import subprocess
    import sys

    code = (
        "import sys; from dpdbscan.render import plotting; plotting.preload(); "
        "print('matplotlib.figure' in sys.modules, 'matplotlib.style' in sys.modules, "
        "'matplotlib.pyplot' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "False", "False"]


def test_histogram_window_sums_integer_counts_as_the_float_path_does():
    """Integer counts are summed in blocks in place (no padded float copy of
    the window); the same image as the float path, ragged last blocks too."""
    from dataclasses import replace

    from dpdbscan.cells.grid import Grid
    from dpdbscan.cells.histogram import NoisyHistogram

    grid = Grid(np.zeros(2), np.array([13.7, 9.1]), eps=0.2 * 4 * np.sqrt(2), eta=1.0)
    rng = np.random.default_rng(2)
    values = rng.integers(-5, 40, grid.shape)
    hist = NoisyHistogram(grid, "dense", values, None, float("-inf"), "laplace", 1.0, 1.0, 0.0)
    as_float = replace(hist, values=values.astype(np.float64))
    for lo, hi, max_pixels in (
        ((0, 0), grid.shape, 300),
        ((3, 5), (60, 41), 97),
        ((7, 2), (9, 45), 10**6),
        ((-4, 0), (200, 200), 50),
        ((10, 10), (10, 12), 4),
    ):
        img, f, first = mapstyle.histogram_window(hist, lo, hi, max_pixels)
        want, f2, first2 = mapstyle.histogram_window(as_float, lo, hi, max_pixels)
        assert f == f2 and np.array_equal(first, first2) and img.dtype == np.float64
        np.testing.assert_array_equal(img, want)


@pytest.mark.parametrize("dtype", [np.int64, np.uint32])
def test_block_sums_are_reduceats_sums(dtype):
    # on windows of a larger array (not contiguous), ragged last runs, either axis
    rng = np.random.default_rng(5)
    big = rng.integers(0, 1000, (53, 71)).astype(dtype)
    for window in (big, big[3:50, 7:66], big[:1, 2:9], big[5:6, 5:6]):
        for f in (1, 2, 3, 8, 100):
            for axis in (0, 1):
                starts = np.arange(0, window.shape[axis], f)
                want = np.add.reduceat(window, starts, axis=axis)
                got = mapstyle._block_sums(window, f, axis)
                assert got.dtype == want.dtype
                np.testing.assert_array_equal(got, want)


def _saved_blobs_model(path):
    """A release of the blobs saved to ``path``, for pictures drawn in fresh processes."""
    from dpdbscan import save_model

    spans = (
        DPDBSCAN(eps=0.5, min_samples=20, epsilon=1.0, bounds=(0.0, 10.0), random_state=0).fit(blobs()).spans_
    )
    save_model(spans, path)


def test_the_warm_up_changes_no_picture(tmp_path):
    """The drawing copy of ``fit`` draws a picture of nothing first
    (``preload(alone=True)``): the release's picture drawn after it has the
    same bytes as one drawn first thing in a fresh process."""
    import subprocess
    import sys

    _saved_blobs_model(tmp_path / "m.json")
    draw = (
        "import sys; from dpdbscan import load_model; from dpdbscan.cli.common import draw_spans_png; "
        "draw_spans_png(load_model(sys.argv[1]), sys.argv[2])"
    )
    cold = tmp_path / "cold.png"
    subprocess.run([sys.executable, "-c", draw, str(tmp_path / "m.json"), str(cold)], check=True)
    import matplotlib.pyplot as plt

    open_before = plt.get_fignums()
    plotting.preload(alone=True)
    assert plt.get_fignums() == open_before  # the warm-up's figure is closed
    from dpdbscan import load_model
    from dpdbscan.cli.common import draw_spans_png

    warm = tmp_path / "warm.png"
    draw_spans_png(load_model(tmp_path / "m.json"), warm)
    assert warm.read_bytes() == cold.read_bytes()


def test_the_drawing_copys_short_docstrings_change_no_picture(tmp_path):
    """``preload(alone=True)`` in a fresh process (the drawing copy of
    ``fit``) loads matplotlib's drawing modules with empty property lists
    in the artists' docstrings: the picture drawn after it has the same
    bytes as one drawn in a process that loaded them as usual, and
    matplotlib's ``kwdoc`` is its own again afterwards."""
    import subprocess
    import sys

    _saved_blobs_model(tmp_path / "m.json")
    draw = (
        "import sys; from dpdbscan import load_model; from dpdbscan.cli.common import draw_spans_png; "
        "from dpdbscan.render import plotting; import matplotlib.artist as artist; kwdoc = artist.kwdoc; "
        "sys.argv[3] == 'alone' and plotting.preload(alone=True); "
        "draw_spans_png(load_model(sys.argv[1]), sys.argv[2]); "
        "from matplotlib.lines import Line2D; "
        "print(artist.kwdoc is kwdoc, 'drawstyle' in (Line2D.set.__doc__ or ''))"
    )
    said = {}
    for how in ("usual", "alone"):
        res = subprocess.run(
            [sys.executable, "-c", draw, str(tmp_path / "m.json"), str(tmp_path / f"{how}.png"), how],
            check=True,
            capture_output=True,
            text=True,
        )
        said[how] = res.stdout.split()
    assert said["usual"] == ["True", "True"]
    assert said["alone"] == ["True", "False"]  # the short docstrings were in effect, and undone
    assert (tmp_path / "alone.png").read_bytes() == (tmp_path / "usual.png").read_bytes()


def test_the_drawing_copy_loads_no_3d_axes_and_says_nothing_of_them(tmp_path):
    """``preload(alone=True)`` in a fresh process (the drawing copy of
    ``fit``) keeps matplotlib's 3-D axes out (their import cost the copy
    0.03-0.05 s of CPU) without a warning and without leaving the module
    marked absent; the picture drawn after it is the one drawn as usual
    (the bytes: the test above)."""
    import subprocess
    import sys

    code = (
        "import sys; from dpdbscan.render import plotting; plotting.preload(alone=True); "
        "import matplotlib.projections as p; "
        "print(plotting.AXES_3D in sys.modules, '3d' in p.get_projection_names())"
    )
    res = subprocess.run(
        [sys.executable, "-W", "default", "-c", code], check=True, capture_output=True, text=True
    )
    import matplotlib

    from dpdbscan.render.plotting import _3d_axes_optional

    # before 3.9 matplotlib cannot load without them: they load as usual there
    kept_out = _3d_axes_optional(matplotlib)
    assert res.stdout.split() == (["False", "False"] if kept_out else ["True", "True"])
    assert "Axes3D" not in res.stderr
    # a process that draws beside other work (alone=False) loads matplotlib as usual
    code = (
        "import sys; from dpdbscan.render import plotting; plotting.preload(); "
        "print(plotting.AXES_3D in sys.modules)"
    )
    res = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert res.stdout.split() == ["True"]


def test_the_spans_outlines_are_asked_for_last_and_their_order_changes_no_pixel(model):
    """fit's drawing copy is sent the outlines after the release
    (cli/sentrelease.py): plot_spans asks for them only once the rest of
    the picture is drawn. Adding them last cannot change the picture: no
    other artist of the axes shares their z-order, and matplotlib draws by
    z-order (the order of addition only breaks ties)."""
    import functools

    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 6))
    seen = []

    class Late(type(model)):
        @functools.cached_property
        def _outlines(self):
            seen.append((ax.get_title(), [c.get_gid() for c in ax.collections], len(ax.texts)))
            return super()._outlines

    late = object.__new__(Late)
    vars(late).update({k: v for k, v in vars(model).items() if k != "_outlines"})
    plotting.plot_spans(late, ax)
    ((title, gids, n_texts),) = seen
    assert title.startswith(f"{model.n_spans} DP span(s)") and n_texts == model.n_spans
    assert "spans" not in gids
    spans = _spans(ax)
    assert [a for a in ax.get_children() if a.get_zorder() == spans.get_zorder()] == [spans]
    _close(ax)
