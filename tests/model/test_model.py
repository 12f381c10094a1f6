import json
from dataclasses import replace

import numpy as np
import pytest

from dpdbscan import DPDBSCAN
from dpdbscan.cells.grid import Grid
from dpdbscan.model import (
    describe,
    geojson,
    guarantee,
    load_model,
    model_from_dict,
    save_model,
    summary,
    to_json,
    with_params,
)
from dpdbscan.post.merge import canonical_labels, merge_cells
from dpdbscan.release.samplers.integers import SeededSource

from releases import Config as MechanismConfig
from releases import fit_spans, release_histogram, span_cells, span_region, spans_from_histogram


def _two_blobs(n=400, seed=0):
    rng = np.random.default_rng(seed)
    return np.vstack(
        [[0.25, 0.25] + 0.03 * rng.standard_normal((n, 2)), [0.75, 0.7] + 0.03 * rng.standard_normal((n, 2))]
    )


def _model(seed=0, **kw):
    X = _two_blobs()
    return DPDBSCAN(eps=0.05, min_samples=5, epsilon=1.0, bounds=(0, 1), random_state=seed, **kw).fit(X), X


def test_merge_joins_cells_within_alpha_only():
    g = Grid([0, 0], [1, 1], 0.1)  # NB reaches 2 cells except diagonal corners
    cells = np.array([[0, 0], [2, 0], [5, 5], [7, 7], [10, 10], [11, 11]])
    keys = g.encode(cells)
    order = np.argsort(keys)
    lab = merge_cells(g, keys[order])
    by_cell = {tuple(c): label for c, label in zip(cells[order], lab)}
    assert by_cell[(0, 0)] == by_cell[(2, 0)]  # offset (2, 0): distance w < alpha
    assert by_cell[(5, 5)] != by_cell[(7, 7)]  # offset (2, 2): distance sqrt(2) w = alpha, not <
    assert by_cell[(10, 10)] == by_cell[(11, 11)]
    assert len(set(lab.tolist())) == 4
    assert lab[0] == 0  # canonical: the span of the smallest key is 0


def test_canonical_labels_follow_first_occurrence():
    assert canonical_labels(np.array([4, 4, 1, 0, 1])).tolist() == [0, 0, 1, 2, 1]


def test_predict_uses_span_cells_only():
    m, X = _model()
    spans = m.spans_
    assert spans.n_spans == 2
    lab = m.predict(X)
    assert set(lab[:400].tolist()) == {0} or set(lab[:400].tolist()) <= {0, -1}
    assert lab[:400].tolist().count(0) > 380 and lab[400:].tolist().count(1) > 380
    # a point in a core cell gets that span; far points, NaN and out-of-box are noise
    centre = spans.grid.cell_centres(span_cells(spans, 1)[:1])
    q = np.vstack([centre, [[0.0, 1.0]], [[np.nan, 0.5]], [[5.0, 5.0]], [[-1, 0.25]]])
    assert m.predict(q).tolist() == [1, -1, -1, -1, -1]


def test_predict_errors():
    m, _ = _model()
    with pytest.raises(ValueError, match="3 features"):
        m.predict(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="2-D"):
        m.predict(np.zeros(4))


def test_json_roundtrip(tmp_path):
    m, X = _model()
    path = tmp_path / "spans.json"
    save_model(m.spans_, path)
    data = json.loads(path.read_text())
    for key in ("privacy", "params", "bounds", "grid", "guarantee", "spans", "histogram"):
        assert key in data
    assert data["privacy"]["epsilon"] == 1.0 and data["params"]["eps"] == 0.05
    assert data["params"]["min_samples"] == 5 and data["params"]["core"] == "density"
    assert data["tau"] is None and m.tau_ is None  # the density test's guarantee has no tau
    loaded = load_model(path)
    assert np.array_equal(loaded.predict(X), m.predict(X))
    assert np.array_equal(loaded.histogram.values, m.histogram_.values)
    assert with_params(loaded, min_samples=3).n_spans == with_params(m.spans_, min_samples=3).n_spans
    # without histogram
    save_model(m.spans_, tmp_path / "small.json", include_histogram=False)
    small = load_model(tmp_path / "small.json")
    assert np.array_equal(small.predict(X), m.predict(X))
    with pytest.raises(ValueError, match="re-threshold"):
        with_params(small, min_samples=3)


@pytest.mark.parametrize("d,histogram", [(1, "dense"), (2, "dense"), (2, "sparse"), (3, "sparse")])
def test_to_json_is_json_dumps_of_the_document(d, histogram):
    """to_json writes the spans' cells with one string format; the text is
    json.dumps(model_to_dict(model)) to the byte, with and without spans."""
    from dpdbscan.model import model_to_dict

    rng = np.random.default_rng(d)
    X = np.vstack([0.5 + 0.03 * rng.standard_normal((600, d)), 0.2 + 0.02 * rng.standard_normal((400, d))])
    est = DPDBSCAN(eps=0.05, min_samples=5, epsilon=1.0, bounds=(0, 1), random_state=1, histogram=histogram)
    m = est.fit(X).spans_
    m.metadata["note"] = 'a "quoted" text, \u00e9 and\nlines'
    assert m.n_spans >= 2
    for hist in (True, False):
        assert to_json(m, hist) == json.dumps(model_to_dict(m, hist))
    none = DPDBSCAN(eps=0.05, min_samples=10**6, epsilon=1.0, bounds=(0, 1), random_state=1).fit(X).spans_
    assert none.n_spans == 0 and to_json(none) == json.dumps(model_to_dict(none))


@pytest.mark.parametrize(
    "content", ['{"format": "other"}', "not json", '{"format": "dpdbscan.spans", "version": 1}']
)
def test_load_rejects_non_models(tmp_path, content):
    p = tmp_path / "bad.json"
    p.write_text(content)
    with pytest.raises(ValueError, match="dpdbscan"):
        load_model(p)


def test_sparse_histogram_model_roundtrip(tmp_path):
    m, X = _model(histogram="sparse")
    save_model(m.spans_, tmp_path / "s.json")
    loaded = load_model(tmp_path / "s.json")
    assert loaded.histogram.kind == "sparse"
    assert np.array_equal(loaded.histogram.keys, m.histogram_.keys)
    assert np.array_equal(loaded.predict(X), m.predict(X))


def test_rethreshold_equals_post_processing_of_the_same_release():
    X = _two_blobs()
    g = Grid([0, 0], [1, 1], 0.05)
    cfg = MechanismConfig(epsilon=1.0)
    hist = release_histogram(g, X, cfg, SeededSource(1))
    a = spans_from_histogram(hist, 5, 40.0, 0.5)
    b = spans_from_histogram(hist, 30, 40.0, 0.5)
    assert np.array_equal(with_params(a, min_samples=30).core_keys, b.core_keys)
    assert np.array_equal(with_params(a, min_samples=30).labels, b.labels)
    assert b.n_core_cells <= a.n_core_cells


def test_geojson_polygons_cover_span_cells():
    m, _ = _model()
    gj = geojson(m.spans_)
    assert gj["type"] == "FeatureCollection" and len(gj["features"]) == m.spans_.n_spans
    g = m.spans_.grid
    for f in gj["features"]:
        s = f["properties"]["span"]
        assert f["geometry"]["type"] == "MultiPolygon"
        # shoelace area of exteriors minus holes equals the cells' area
        area = 0.0
        for poly in f["geometry"]["coordinates"]:
            for k, ring in enumerate(poly):
                r = np.asarray(ring)
                assert np.allclose(r[0], r[-1])
                a = 0.5 * np.sum(r[:-1, 0] * r[1:, 1] - r[1:, 0] * r[:-1, 1])
                assert (a > 0) if k == 0 else (a < 0)
                area += a
        # the polygons draw the region predict uses: core and border cells
        assert area == pytest.approx(len(span_region(m.spans_, s)) * g.width**2)
        assert len(span_region(m.spans_, s)) >= len(span_cells(m.spans_, s))


def test_geojson_requires_2d():
    X = np.random.default_rng(0).random((50, 3))
    m = DPDBSCAN(eps=0.3, min_samples=3, bounds=(0, 1), random_state=0).fit(X)
    with pytest.raises(ValueError, match="2-D"):
        geojson(m.spans_)


def test_wide_universe_end_to_end():
    """d = 5 with a fine grid: keys do not fit int64, the pipeline still works.

    kappa = 3903 and theta ~ 19 make Gamma ~ 75,000, so only a very dense
    cluster survives: that is the method's cost in high dimension, not a bug.
    """
    rng = np.random.default_rng(0)
    X = np.vstack([0.5 + 1e-5 * rng.random((100_000, 5)), rng.random((50, 5))])
    g = Grid(np.zeros(5), np.ones(5), 1e-4)
    assert g.wide and g.n_cells > 10**21
    cfg = MechanismConfig(epsilon=2.0, histogram="sparse")
    model = fit_spans(X, g, 5, cfg, SeededSource(0))
    assert model.histogram.kind == "sparse" and model.histogram.n_released > 10_000
    assert model.n_spans == 1
    pred = model.predict(X)
    assert (pred[:100_000] == 0).all() and (pred[100_000:] == -1).all()


def test_border_labels_points_near_span_cells():
    g = Grid([0, 0], [1, 1], 0.1)
    cells = np.array([[5, 5], [9, 5]])
    keys = g.encode(cells)
    from dpdbscan.model.record import SpanModel as SM
    from dpdbscan.params.specs import ReleaseInfo, SpanSpec
    from dpdbscan.post.coretests import Spans

    def bound_model(border):
        spans = Spans(g, keys, np.array([0, 1]), 1.0, 1.0, 2.0, 7.0, 9, g.n_cells, 7.0, None)
        spec = SpanSpec(5, 0.1, 1, "chernoff", border, "any", True, "bound", "eps")
        rel = ReleaseInfo(
            g, "dense", float("-inf"), "discrete", 1.0, 1.0, 0.0, 0.1, 4.0, 5, None, None, None, None, None
        )
        return SM(spans=spans, spec=spec, release=rel, histogram=None, auto=None, metadata={}, second=None)

    w = g.width
    m = bound_model(0.5 * w)
    # the border is measured from the centre of the point's cell: cell (6, 5)
    # has its centre 0.5 w from cell (5, 5), cell (7, 5) 1.5 w from both
    inside = g.cell_centres(cells[:1])[0]
    next_cell = g.cell_lower(cells[:1])[0] + [w + 0.9 * w, 0.1 * w]  # in cell (6, 5)
    too_far = g.cell_lower(cells[:1])[0] + [2 * w + 0.1 * w, 0.5 * w]  # in cell (7, 5)
    middle = g.cell_lower(np.array([[7, 5]]))[0] + [0.5 * w, 0.5 * w]  # 1.5 w from both
    pts = np.array([inside, next_cell, too_far, middle])
    m = bound_model(0.6 * w)
    assert m.predict(pts).tolist() == [0, 0, -1, -1]
    assert bound_model(0.5 * w).predict(pts).tolist() == [0, -1, -1, -1]  # "< border"
    m0 = bound_model(0.0)
    assert m0.predict(pts).tolist() == [0, -1, -1, -1]
    # with a wider border the middle point joins one of the two spans
    m2 = bound_model(2.0 * w)
    assert m2.predict(pts[3:]).tolist()[0] in (0, 1)
    assert m2.predict(pts[:3]).tolist() == [0, 0, 0]


@pytest.mark.parametrize(
    "kw",
    [
        dict(subcells=2),
        dict(subcells=1),
        dict(subcells=3, margin="paper"),
        dict(subcells=2, histogram="sparse", eps=1e-3),
        dict(subcells=2, histogram="stability", eps=1e-3, delta=1e-6),
    ],
)
def test_reported_guarantee_recomputes_gamma(kw):
    kw = {**kw, "core": "bound"}
    """Issue 14: Gamma was computed with kappa_q = 15 over 4|X| events while
    guarantee() reported 21 and |X|. Now Gamma recomputed from what
    guarantee() reports equals the Gamma that was used."""
    from dpdbscan import DPDBSCAN
    from dpdbscan.post.coretests.bound.boundmargin import margins

    params = {**dict(eps=0.05, min_samples=5, bounds=(0, 1), random_state=0), **kw}
    m = DPDBSCAN(**params).fit(np.random.default_rng(0).random((300, 2))).spans_
    g = guarantee(m)
    theta = g["theta"] if m.release.histogram != "dense" else 0.0
    low, up = margins(
        g["margin"],
        m.release.histogram,
        m.release.noise,
        g["epsilon"],
        g["kappa_q"],
        g["n_events"],
        g["beta"],
        theta,
    )
    assert (low, up) == (
        pytest.approx(g["gamma_low"], rel=1e-12),
        pytest.approx(g["gamma_up"], rel=1e-12),
    )
    assert g["tau"] == pytest.approx(low + up)
    assert g["n_events"] == m.release.grid.n_cells * m.spec.subcells**2
    info = describe(m)
    assert info["eta"] == m.histogram.grid.eta and info["shape"] == list(m.histogram.grid.shape)
    assert info["kappa_q"] == g["kappa_q"] and info["n_events"] == g["n_events"]
    assert info["kappa"] == m.release.grid.kappa
    json.dumps(info, allow_nan=False)  # valid JSON (issue 15: info --json printed -Infinity)


# --------------------------------------------------------------------------- issue 14: bad model files

import copy  # noqa: E402

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


def _valid_doc(histogram="dense"):
    X = np.random.default_rng(3).normal(0.5, 0.05, (400, 2))
    kw = dict(histogram=histogram) if histogram != "dense" else {}
    m = DPDBSCAN(0.1, min_samples=5, bounds=(0, 1), random_state=0, **kw).fit(X).spans_
    assert m.n_spans >= 1
    return json.loads(to_json(m))


DOCS = {"dense": _valid_doc(), "sparse": _valid_doc("sparse")}
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | st.sampled_from(["-inf", "inf", "dense", "sparse", "chernoff", ""]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list) and len(node) <= 3:
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


def _check_consistent(m):
    """What a loaded model must satisfy to be usable and not silently wrong."""
    assert m.core_keys.size == m.labels.size
    if m.core_keys.size:
        assert np.all(m.core_keys[1:] != m.core_keys[:-1])
        assert sorted(set(m.labels.tolist())) == list(range(m.n_spans))
        assert m.grid.valid(m.grid.decode(m.core_keys)).all()
    P = np.random.default_rng(0).random((50, m.grid.d))
    assert m.predict(P).shape == (50,)
    again = model_from_dict(json.loads(to_json(m)))
    assert np.array_equal(again.core_keys, m.core_keys) and again.spans.noise_margin == m.spans.noise_margin


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_corrupted_model_gives_one_clear_error_or_a_consistent_model(data):
    doc = copy.deepcopy(DOCS[data.draw(st.sampled_from(sorted(DOCS)))])
    path = data.draw(st.sampled_from([p for p in _paths(doc) if p]))
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if data.draw(st.booleans()) and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = data.draw(JSON_VALUES)
    try:
        m = model_from_dict(doc)
    except ValueError as exc:
        assert "\n" not in str(exc)
        return
    _check_consistent(m)


@pytest.mark.parametrize(
    "edit,match",
    [
        (lambda d: d["spans"][0].__setitem__("cells", [[10**6, 0]]), "outside the grid"),
        (lambda d: d["spans"][0].__setitem__("id", 5), "numbered"),
        (lambda d: d["params"].__setitem__("eta", 9), "params.eta"),
        (lambda d: d["privacy"].__setitem__("epsilon", -1), "privacy.epsilon"),
        (lambda d: d["bounds"].__setitem__("lower", []), "bounds"),
        (lambda d: d["params"].__setitem__("subcells", 100), "subcells"),
        (lambda d: d["guarantee"].__setitem__("kappa_q", 21), "do not match"),
        (lambda d: d["histogram"]["values"].__setitem__("shape", [3, 3]), "histogram|reshape"),
        (
            lambda d: d["spans"].append(copy.deepcopy(d["spans"][0]) | {"id": len(d["spans"])}),
            "more than one span",
        ),
    ],
)
def test_hand_edited_models_are_refused(edit, match):
    doc = copy.deepcopy(DOCS["dense"])
    edit(doc)
    with pytest.raises(ValueError, match=match):
        model_from_dict(doc)


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("to", ["cells", "centres"])
def test_border_ties_go_to_the_smaller_span_id(seed, to):
    """Issue 14: a cell halfway between core cells of two spans must take the
    smaller span id whatever the float rounding of the grid's coordinates
    (the old rule measured from the point in absolute coordinates and failed
    in 26 of 80 such cases)."""
    from dpdbscan.model.predict import border_labels, span_regions

    rng = np.random.default_rng(seed)
    lower = rng.uniform(-1000, 1000, 2)
    g = Grid(lower, lower + rng.uniform(5, 50, 2), rng.uniform(0.05, 0.5))
    c = np.array([rng.integers(2, s - 2) for s in g.shape])
    axis = seed % 2
    step = np.zeros(2, dtype=np.int64)
    step[axis] = 1
    keys = g.encode(np.stack([c - step, c + step]))
    order = np.argsort(keys)
    for ids in (np.array([0, 1]), np.array([1, 0])):
        assert border_labels(g, keys[order], ids[order], c[None], 1.01 * g.width, to)[0] == 0
        rk, rl = span_regions(g, keys[order], ids[order], 1.01 * g.width, to)
        assert rl[np.searchsorted(rk, g.encode(c[None]))[0]] == 0


def test_two_margins_drive_the_threshold_roundtrip_and_old_models_load(tmp_path):
    """A sparse release has Gamma_low != Gamma_up; the practical rule keeps
    cells whose noisy sum reaches MinPts + Gamma_up, tau is their sum, and
    both survive JSON. A model saved before gamma_upper existed still loads,
    with gamma_upper None and the old tau = 2 Gamma."""
    m, X = _model(histogram="sparse", theta=0.0, core="bound")
    s = m.spans_
    assert s.spans.noise_margin_upper is not None and s.spans.noise_margin_upper > s.spans.noise_margin
    g = guarantee(s)
    assert g["gamma_low"] == s.spans.noise_margin and g["gamma_up"] == s.spans.noise_margin_upper
    assert (
        g["tau"] == pytest.approx(s.spans.noise_margin + s.spans.noise_margin_upper)
        and s.spans.tau == g["tau"]
    )
    assert s.spans.threshold == 5 + s.spans.tau and m.noise_margin_upper_ == s.spans.noise_margin_upper
    assert g["within_clusters_at"]["min_samples"] == 5
    # the same release thresholded at MinPts + Gamma_up by the symmetric rule
    same = spans_from_histogram(
        s.histogram, 5, s.spans.noise_margin_upper, s.spec.beta, subcells=s.spec.subcells, core="bound"
    )
    assert np.array_equal(same.core_keys, s.core_keys)
    path = tmp_path / "m.json"
    save_model(s, path)
    loaded = load_model(path)
    assert loaded.spans.noise_margin_upper == s.spans.noise_margin_upper and loaded.spans.tau == s.spans.tau
    assert np.array_equal(
        with_params(loaded, min_samples=3).core_keys, with_params(s, min_samples=3).core_keys
    )
    data = json.loads(path.read_text())
    del data["noise_margin_upper"]
    old = model_from_dict(data)
    assert old.spans.noise_margin_upper is None and old.spans.tau == 2 * old.spans.noise_margin
    assert guarantee(old)["gamma_up"] is None
    assert np.array_equal(old.predict(X), s.predict(X))


def test_packed_arrays_are_plain_zlib_with_or_without_isal(monkeypatch):
    """Histograms are deflated by ISA-L when it is installed; the stream is
    standard zlib either way, so files read back everywhere."""
    import base64
    import builtins
    import zlib

    from dpdbscan.model.codec import pack, unpack

    arr = np.random.default_rng(2).integers(-5, 40_000, size=(300, 200))
    real_import = builtins.__import__

    def no_isal(name, *args, **kwargs):
        if name.startswith("isal"):
            raise ImportError("isal hidden for this test")
        return real_import(name, *args, **kwargs)

    packed = [pack(arr)]
    monkeypatch.setattr(builtins, "__import__", no_isal)
    packed.append(pack(arr))
    for d in packed:
        raw = zlib.decompress(base64.b64decode(d["zlib_base64"]))
        assert np.array_equal(np.frombuffer(raw, dtype=d["dtype"]).reshape(d["shape"]), arr)
        assert np.array_equal(unpack(d), arr)


@pytest.mark.filterwarnings("ignore::dpdbscan.InsecureRandomnessWarning")
def test_a_guarantee_at_minpts_below_one_reads_no_guarantee(tmp_path, capsys):
    """Issue 19, finding 3: "within one (rho, MinPts)-cluster" says nothing
    when MinPts < 1 (every location is then core), so guarantee(), summary()
    and ``dpdbscan info`` must say "no guarantee" in words instead of quoting
    a negative MinPts. The bound test's theoretical rule reaches it (MinPts -
    tau < 0) while its covering half still holds; a density model with
    M* < 1 (only without the empty-space guard, which every public rule now
    has) is built by hand."""
    from dpdbscan.cli import main

    m, _ = _model(core="bound", raise_min_samples=False)
    s = m.spans_
    g = guarantee(s)
    assert 5 - s.spans.tau < 1
    assert g["within_clusters_at"] is None and g["probability"] == pytest.approx(0.9)
    assert g["covers_clusters_at"]["min_samples"] == 5
    assert "no guarantee that spans stay within clusters" in g["statement"]
    assert "no guarantee" in summary(s).splitlines()[-1]
    path = tmp_path / "bound.json"
    save_model(s, path)
    assert main(["info", str(path)]) == 0
    line = [x for x in capsys.readouterr().out.splitlines() if x.strip().startswith("guarantee")][0]
    assert "no guarantee" in line and ", -" not in line  # no "(0.3, -52.9)-cluster"

    d, _ = _model()
    ds = d.spans_
    assert guarantee(ds)["within_clusters_at"]["min_samples"] >= 1
    void = replace(ds, spans=replace(ds.spans, extra={**ds.spans.extra, "m_star": -4}))
    gv = guarantee(void)
    assert gv["within_clusters_at"] is None and gv["probability"] is None
    # what holds for each place alone still leads; all at once there is none
    assert gv["statement"].startswith("each place alone: ") and "MinPts = -4 < 1" in gv["statement"]
    assert "; all at once, no guarantee: " in gv["statement"]
    assert "; all at once, no guarantee: " in summary(void) and "MinPts=-4" not in summary(void)


@pytest.mark.parametrize("d", [1, 2, 3, 5, 7])
@pytest.mark.parametrize("to", ["cells", "centres"])
def test_labelling_the_points_cells_equals_the_regions(d, to):
    # predict without the regions (high dimension) gives the regions' labels
    from dpdbscan.model.predict import predict_cells, predict_spans, span_regions

    rng = np.random.default_rng(d)
    g = Grid(np.zeros(d), np.ones(d), 0.3 if d > 2 else 0.05, 4.0)
    core = np.unique(g.encode(np.stack([rng.integers(0, s, 30) for s in g.shape], axis=1)))
    labels = rng.integers(0, 3, core.size)
    X = np.concatenate([rng.random((400, d)), g.decode(core[:5]) * g.width + g.width / 2 + 1e-3])
    X[0] = 2.0  # outside the box
    border = g.eps
    keys, lab = span_regions(g, core, labels, border, to)
    want = predict_spans(g, keys, lab, X)
    got = predict_cells(g, core, labels, X, border, to)
    assert np.array_equal(got, want)
    assert (want >= 0).any() and (want == -1).any()
