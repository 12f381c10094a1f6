"""The automatic mode's default, ``selection="levels"`` (issue 21): each span
at its own MinPts of the release's density tree. What the model records
(and its file keeps), what each span is guaranteed to be, the summary and
``info``, explore's alternative of an unsure choice, the condensed-tree plot
and the command line (dpdbscan.model.levels, dpdbscan.render.treeplot). The
selection itself: tests/post/test_levels.py."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from dpdbscan import DPDBSCAN
from dpdbscan.cli import main
from dpdbscan.model import describe, guarantee, load_model, save_model, summary, with_params
from dpdbscan.post import auto
from dpdbscan.post import levelsearch as levels
from dpdbscan.render import explorepanels as E

from levelpoints import BOX, bridged_blobs

quiet = pytest.mark.filterwarnings("ignore")  # seeded noise, small-data notes


def _fit(seed=1, X=None, **kw):
    X = bridged_blobs()[0] if X is None else X
    params = dict(min_samples="auto", bounds=BOX, random_state=seed, max_cells=1 << 14)
    params.update(kw)
    return DPDBSCAN("auto", **params).fit(X).spans_


@pytest.fixture(scope="module")
def unsure():
    """A level selection whose choice was close: another eps scored within 90%."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _fit(0)


@pytest.fixture(scope="module")
def clear():
    """Three separated blobs: a clear choice."""
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(c, 0.35, (1000, 2)) for c in ((2, 2), (7, 6), (2.5, 6.5))])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _fit(0, X=X, max_cells=1 << 12)


def _is_a_span_at(model, span, flat):
    """Span ``span`` of ``model`` is exactly one span of ``flat``: the same
    sub-cells, compared by their coordinates, since a grid at another eps
    pads its keys by its own reach (a span taken at its own eps is compared
    with the flat model at that eps)."""
    mine = np.sort(flat.grid.encode(model.grid.decode(model.core_keys[model.labels == span])))
    hit = np.searchsorted(flat.core_keys, mine)
    if mine.size == 0 or hit.max() >= flat.core_keys.size or not np.array_equal(flat.core_keys[hit], mine):
        return False
    owners = np.unique(flat.labels[hit])
    return owners.size == 1 and np.array_equal(np.sort(flat.core_keys[flat.labels == owners[0]]), mine)


def _flat_at(model, level):
    """The flat model of the same release at the level's own eps and MinPts."""
    return with_params(model, eps=level["eps"], min_samples=level["min_samples"])


def test_the_automatic_mode_takes_each_span_at_its_own_level(unsure):
    from sklearn.metrics import adjusted_rand_score

    m = unsure
    a = m.auto
    assert a["selection"] == "levels" and a["criterion"] == levels.CRITERION
    assert [lv["span"] for lv in a["levels"]] == list(range(m.n_spans)) and m.n_spans == 3
    assert len({lv["min_samples"] for lv in a["levels"]}) >= 2  # clusters at different levels
    assert m.spec.min_samples == a["min_samples"] == min(lv["min_samples"] for lv in a["levels"])
    for lv in a["levels"]:
        assert lv["eps"] == m.grid.eps
        # the recorded level is true: the span is a span of the density test there
        at = with_params(m, min_samples=lv["min_samples"])
        assert at.grid.eps == m.grid.eps and _is_a_span_at(m, lv["span"], at)
        assert at.spans.threshold == pytest.approx(lv["threshold"], rel=1e-5)
        assert lv["min_samples"] <= lv["last_min_samples"]
    # predict labels points as for a flat model: the dense, the bridged and the far blob apart
    X, y = bridged_blobs()
    assert adjusted_rand_score(y, m.predict(X)) > 0.9


@quiet
def test_the_flat_cut_stays_an_option():
    m = _fit(1, selection="flat")
    a = m.auto
    assert a["selection"] == "flat" and a["criterion"] == auto.CRITERION and "levels" not in a
    again = with_params(m, eps=m.grid.eps, min_samples=m.spec.min_samples)
    np.testing.assert_array_equal(again.core_keys, m.core_keys)
    np.testing.assert_array_equal(again.labels, m.labels)
    # the tree is over MinPts: a fixed MinPts, or the bound test, is a flat cut
    fixed = _fit(1, min_samples=40)
    assert fixed.auto["selection"] == "flat" and fixed.spec.min_samples == 40
    assert "levels" not in guarantee(fixed) and "levels  :" not in summary(fixed)


def test_the_record_and_the_guarantee_survive_a_round_trip(unsure, tmp_path):
    save_model(unsure, tmp_path / "m.json")
    back = load_model(tmp_path / "m.json")
    assert back.auto == json.loads(json.dumps(unsure.auto))
    X, _ = bridged_blobs()
    np.testing.assert_array_equal(back.predict(X), unsure.predict(X))
    assert guarantee(back) == guarantee(unsure) and summary(back) == summary(unsure)
    assert describe(back)["auto"]["levels"] == back.auto["levels"]
    # without the histogram: the record, the guarantee and the tree still read
    save_model(unsure, tmp_path / "small.json", include_histogram=False)
    small = load_model(tmp_path / "small.json")
    assert guarantee(small) == guarantee(unsure)


@quiet
def test_a_3d_selection_records_that_significance_is_a_share_of_the_total(clear):
    # many small clusters in 3-D: the share of the noisy total, recorded so
    # that explore's alternative rebuilds the same tree; 2-D models keep the
    # positive part and record nothing new
    rng = np.random.default_rng(3)
    centres = rng.uniform(1, 9, (12, 3))
    X = np.vstack([rng.normal(c, 0.15, (150, 3)) for c in centres])
    model = (
        DPDBSCAN(
            "auto",
            min_samples="auto",
            bounds=(np.zeros(3), np.full(3, 10.0)),
            random_state=0,
            max_cells=1 << 13,
        )
        .fit(X)
        .spans_
    )
    assert model.auto["share_of"] == "total" and model.auto["selection"] == "levels"
    total = float(model.histogram.values.sum())
    sel = levels.select_levels(model.histogram, model.spec, (), alpha=model.auto["eps"], share_of="total")
    assert sel.tree.min_mass == pytest.approx(levels.MIN_SHARE * total)
    assert "share_of" not in clear.auto


def test_each_span_states_its_own_guarantee(unsure):
    m = unsure
    g = guarantee(m)
    c = len(m.auto["eps_candidates"])
    assert c == 7 and g["eps_candidates"] == c
    rel = m.release
    assert [x["span"] for x in g["levels"]] == list(range(m.n_spans))
    for x, lv in zip(g["levels"], m.auto["levels"]):
        want = levels.level_guarantee(
            rel.grid,
            rel.histogram,
            rel.noise,
            rel.noise_scale,
            rel.theta,
            m.spec,
            lv["min_samples"],
            c,
            m.spans.approx_ratio,
        )
        assert x == {"span": lv["span"], "eps": lv["eps"], **want}
        # beta / c per candidate, the union over the c eps: beta in all
        assert x["probability"] == pytest.approx(1 - 0.1)
        assert x["m_star"] >= g["within_clusters_at"]["min_samples"]  # no weaker than the lowest level
    assert "each also lies in the span of one (ratio x eps, M*)-cluster at its own level" in g["statement"]
    assert f"union over {c} eps candidates" in g["statement"]


def test_the_summary_says_what_was_chosen_and_whether_it_was_close(unsure, clear):
    text = summary(unsure)
    assert "levels  : 3 span(s)" in text and "each at its own MinPts" in text
    for lv in unsure.auto["levels"]:
        assert f"span {lv['span']}: MinPts {lv['min_samples']} " in text
    runner = unsure.auto["runner_up"]
    assert runner is not None and runner["score_share"] >= levels.CLOSE
    assert f"unsure  : eps={runner['eps']:g} scored" in text and "explore shows both" in text
    assert not clear.auto["unsure"] and "choice  : clear" in summary(clear) and "unsure" not in summary(clear)


def test_the_unsure_line_compares_like_with_like(unsure):
    """The runner-up and the chosen eps are compared on the same count (the
    clusters each selects), never a cluster count against a span count: the
    line once read "2 cluster(s) instead of 2" when a selection of 3
    clusters made 2 spans."""
    from dataclasses import replace

    from dpdbscan.model.levels import unsure_reasons

    scores = {float(r[0]): int(r[2]) for r in unsure.auto["eps_scores"]}
    runner = unsure.auto["runner_up"]["eps"]
    line = unsure_reasons(unsure)[0]
    chosen, other = scores[unsure.auto["eps"]], scores[runner]
    assert chosen != other
    assert (
        f"selects {other} cluster" in line
        and f"the chosen eps={unsure.auto['eps']:g} selects {chosen}" in line
    )
    # a selection whose spans number differs from its clusters: the words stay right
    rows = [[e, s, 3 if e == unsure.auto["eps"] else n] for e, s, n in unsure.auto["eps_scores"]]
    odd = replace(unsure, auto={**unsure.auto, "eps_scores": rows, "levels": unsure.auto["levels"][:2]})
    text = unsure_reasons(odd)[0]
    assert (
        f"selects {scores[runner]} cluster" in text
        and "selects 3 clusters" in text
        and "instead of" not in text
    )


@quiet
def test_a_span_taken_at_its_own_eps_is_a_span_of_the_flat_model_there():
    """A span the alternative grows to a larger candidate eps (post.ownscale)
    is exactly one span of the same release's flat model at that eps and its
    MinPts, not at the model's own eps: seed 1's alternative grows one. The
    check once compared it with the flat model at the alternative's eps, key
    for key across two grids' paddings, and failed on such seeds."""
    from dpdbscan.model.levels import alternative

    alt = alternative(_fit(1))
    taken = [lv for lv in alt.auto["levels"] if lv.get("taken")]
    assert taken and all(lv["eps"] > alt.grid.eps for lv in taken)
    for lv in alt.auto["levels"]:
        assert _is_a_span_at(alt, lv["span"], _flat_at(alt, lv))
    # and the comparison can fail: at the alternative's own eps the grown span is no span
    lv = taken[0]
    assert not _is_a_span_at(alt, lv["span"], with_params(alt, min_samples=lv["min_samples"]))


def test_explore_shows_the_chosen_spans_beside_the_alternative(unsure, clear, tmp_path, capsys):
    ex = E.explore(unsure, [unsure.grid.eps], [20, 40])
    assert [t for t, _ in ex.selections][0].startswith("chosen") and len(ex.selections) == 2
    chosen, alt = ex.selections[0][1], ex.selections[1][1]
    assert chosen is unsure
    # the alternative: the runner-up eps's own selection, from the same release
    assert alt.grid.eps == pytest.approx(unsure.auto["runner_up"]["eps"]) and alt.auto["alternative"]
    for lv in alt.auto["levels"]:
        assert _is_a_span_at(alt, lv["span"], _flat_at(alt, lv))
    assert len(E.explore(clear, [clear.grid.eps], [20]).selections) == 1
    save_model(unsure, tmp_path / "u.json")
    assert (
        main(
            [
                "explore",
                str(tmp_path / "u.json"),
                "--eps",
                str(unsure.grid.eps),
                "--min-samples",
                "20",
                "40",
                "--no-png",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "chosen: each span at its own MinPts" in out and "the alternative" in out and "unsure:" in out


def test_the_condensed_tree_is_drawn_from_the_record(unsure, tmp_path, capsys):
    from matplotlib.patches import Rectangle

    from dpdbscan.render import plotting

    ax = plotting.plot_model(unsure, "tree")
    tree = unsure.auto["tree"]
    red = [
        p
        for p in ax.patches
        if isinstance(p, Rectangle)
        and p.get_facecolor()[:3]
        == (pytest.approx(0.839, abs=0.01), pytest.approx(0.153, abs=0.01), pytest.approx(0.157, abs=0.01))
    ]
    assert len(red) == sum(len(tree["clusters"][i]["masses"]) for i in tree["selected"])
    assert len(ax.patches) == sum(len(c["masses"]) for c in tree["clusters"])
    # the release alone: no point is drawn, no private mark
    assert not any(t.get_gid() == "private-watermark" for t in ax.texts) and not ax.collections
    # and whom it protects, as every picture of a release says (it said nothing)
    title = " ".join(ax.get_title().split())
    assert "event-level: each row is protected, not each person" in title and "epsilon=1" in title
    plotting._plt().close(ax.figure)
    with pytest.raises(ValueError, match="level selection"):
        plotting.plot_model(_fit(1, selection="flat"), "tree")
    save_model(unsure, tmp_path / "u.json")
    assert main(["plot", str(tmp_path / "u.json"), "--kind", "tree", "-o", str(tmp_path / "t.png")]) == 0
    assert (tmp_path / "t.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@quiet
def test_the_command_line_takes_the_selection(tmp_path, capsys):
    X, _ = bridged_blobs()
    path = tmp_path / "p.csv"
    path.write_text("x,y\n" + "\n".join(f"{a:.9g},{b:.9g}" for a, b in X[::6]) + "\n")
    common = [
        str(path),
        "--header",
        "--eps",
        "auto",
        "--min-samples",
        "auto",
        "--bounds",
        "0",
        "0",
        "10",
        "8",
        "--seed",
        "0",
        "--max-cells",
        "16384",
        "--no-png",
        "--no-geojson",
    ]
    assert main(["fit", *common, "--out-dir", str(tmp_path / "a")]) == 0
    out = capsys.readouterr().out
    assert "levels  : 3 span(s)" in out and "each at its own MinPts" in out
    assert load_model(tmp_path / "a" / "p.spans.json").auto["selection"] == "levels"
    assert main(["fit", *common, "--selection", "flat", "--out-dir", str(tmp_path / "b")]) == 0
    assert "levels  :" not in capsys.readouterr().out
    assert load_model(tmp_path / "b" / "p.spans.json").auto["selection"] == "flat"
    assert main(["info", str(tmp_path / "a" / "p.spans.json")]) == 0
    info = capsys.readouterr().out
    assert "levels : 3 span(s)" in info and "at its own level: span" in info
    # the summary's own rows (choice or unsure) are rows of info too, not lines under "levels"
    rows = [line.split(" : ", 1)[0].strip() for line in info.splitlines() if " : " in line]
    assert rows.count("choice") + rows.count("unsure") == 1
    assert rows[rows.index("levels") + 1 :].count("") >= 3  # the spans continue the levels row


# --------------------------------------------------------------------------- #
# each span's own guarantee, measured: spans in empty space over many fits

EMPTY_BOX = (np.zeros(2), np.full(2, 10.0))


def _levels_rates(fits: int, person: bool, n: int) -> tuple[int, int, float]:
    """(fits with spans, fits where some span has a core sub-cell with fewer
    than its own M* points within its reach, the stated probability) over
    seeded automatic fits of ``n`` points of one small blob in a large box.
    At person level each unit is one row (k = m = 1), so the bounded data
    are the data."""
    from dpdbscan.release.backends import NumpyBackend

    from reach import ub_of_core_subcells

    X = np.random.default_rng(0).normal((3.0, 3.0), 0.3, (n, 2))
    kw = dict(min_samples="auto", bounds=EMPTY_BOX, max_cells=4096)
    if person:
        kw.update(delta=1e-6, max_cells_per_unit=1, max_points_per_cell=1)
    with_spans = bad = 0
    probability = 1.0
    for seed in range(fits):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = (
                DPDBSCAN("auto", random_state=seed, **kw)
                .fit(X, units=np.arange(n) if person else None)
                .spans_
            )
        per_span = [s for s in guarantee(m).get("levels") or [] if s["probability"] is not None]
        if not per_span:
            continue
        assert m.auto["selection"] == "levels" and (m.release.units is not None) == person
        with_spans += 1
        grid = m.release.grid
        ub = ub_of_core_subcells(m, grid, NumpyBackend().dense_counts(grid, X))
        probability = min(probability, *(s["probability"] for s in per_span))
        bad += any(ub[m.labels == s["span"]].min() < s["m_star"] for s in per_span)
    return with_spans, bad, probability


# person level's 30 fits cost twice the event level's 40; it is measured in
# make test-slow (test_each_spans_own_guarantee_over_many_fits, 400 fits each)
@pytest.mark.parametrize(
    "person, n, fits", [(False, 80, 40), pytest.param(True, 200, 30, marks=pytest.mark.slow)]
)
def test_each_spans_own_guarantee_holds_as_measured(person, n, fits):
    """The level selection's per-span statement ("with probability >= 0.9
    each span lies in the span of one (rho alpha, M*)-cluster at its own
    level") measured as the pointwise margin's was (tests/post/
    test_density_guarantee.py): the rate of fits with a span that has a core
    sub-cell with fewer than its M* points within reach (a span in empty
    space) is at most 1 - probability, one-sided Clopper-Pearson at 1e-6.
    The data are a small blob in a large box, at sizes where about half or
    more of the fits make a span."""
    from stats import P_FAIL, cp_lower

    with_spans, bad, probability = _levels_rates(fits, person, n)
    assert with_spans >= fits // 4  # spans are made: the check is not vacuous
    assert cp_lower(bad, with_spans, P_FAIL) <= 1.0 - probability, (bad, with_spans, probability)


@pytest.mark.slow
@pytest.mark.parametrize("person, n", [(False, 80), (True, 200)])
def test_each_spans_own_guarantee_over_many_fits(person, n):
    from stats import P_FAIL, cp_lower

    with_spans, bad, probability = _levels_rates(400, person, n)
    print(
        f"[levels guarantee] person={person}: {bad}/{with_spans} fits with a span in empty space, "
        f"stated <= {1 - probability:g}"
    )
    assert cp_lower(bad, with_spans, P_FAIL) <= 1.0 - probability


def test_the_summary_names_its_two_masses_apart(clear, tmp_path):
    """A span's line gave its core mass at its level as "noisy mass", the
    name of the GeoJSON's different figure (every histogram cell holding any
    of its core sub-cells, whole): on a seeded release of Cabs-tiny's stops
    139 in the summary, 286 in the file. Each now has its own name, and the
    GeoJSON's number is the file's."""
    from dpdbscan.model.geojson import to_geojson

    text = summary(clear)
    assert "noisy mass" not in text
    files = {f["properties"]["span"]: f["properties"]["noisy_mass"] for f in to_geojson(clear)["features"]}
    for lv in clear.auto["levels"]:
        want = f"core mass at its level {lv['mass']:.0f}, noisy_mass {files[lv['span']]:.0f} (all its cells)"
        assert want in text
    # the two are different sums: here the whole cells hold more than the core sub-cells' shares
    assert any(round(files[lv["span"]]) != round(lv["mass"]) for lv in clear.auto["levels"])
    # without the histogram only the core mass is known
    save_model(clear, tmp_path / "m.json", include_histogram=False)
    bare = summary(load_model(tmp_path / "m.json"))
    assert "core mass at its level" in bare and "noisy_mass" not in bare
