"""Tests of experiments/: data loaders, public bounds, the accuracy script,
the baselines and the report's arithmetic. Not the numbers themselves
(those are in results/REPORT.md), but everything that produces them."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpdbscan import Grid
from experiments import accuracy, baselines, data, datasets, notes, paper, tables, timing


# ------------------------------------------------------------------ datasets
@pytest.mark.parametrize("name", datasets.SYNTHETIC)
def test_public_box_contains_synthetic_data(name):
    ds = datasets.load(name)
    lo, hi = ds.bounds
    assert ds.n == 2000
    assert np.all(ds.X >= lo) and np.all(ds.X <= hi)
    assert ds.k == {"circles": 2, "moons": 2, "blobs": 3}[name]


@pytest.mark.parametrize("name", datasets.CLUTO + ("chest", "cabs_tiny", "cabs"))
def test_public_box_contains_real_data(shared_data, name):
    ds = datasets.load(name)
    lo, hi = ds.bounds
    assert np.all(ds.X >= lo) and np.all(ds.X <= hi), f"{name} leaves its public box"
    expected_n = {
        "cluto_t4": 8000,
        "cluto_t5": 8000,
        "cluto_t7": 10000,
        "chest": 103500,
        "cabs_tiny": 845685,
        "cabs": 10995626,
    }[name]
    assert ds.n == expected_n


def test_cluto_labels_and_k(shared_data):
    ds = datasets.load("t7")
    assert ds.name == "cluto_t7"
    assert ds.k == 9
    assert (ds.labels == -1).sum() == 792  # MANIFEST: 792 noise points


def test_max_rows_keeps_an_even_subset(shared_data):
    full = datasets.load("chest")
    sub = datasets.load("chest", max_rows=1000)
    assert sub.n == 1000
    assert np.array_equal(sub.X[0], full.X[0]) and np.array_equal(sub.X[-1], full.X[-1])
    assert sub.alpha == full.alpha  # parameters are not re-derived from the subset


def test_missing_file_says_what_and_where(tmp_path, monkeypatch):
    monkeypatch.setenv("DPDBSCAN_DATA", str(tmp_path))
    assert data.data_dir() == tmp_path
    assert not datasets.available("cluto_t4")
    assert datasets.available("moons")  # synthetic sets need no files
    with pytest.raises(data.MissingDataError) as info:
        datasets.load("cluto_t4")
    msg = str(info.value)
    assert "cluto_t4_8k.csv" in msg and str(tmp_path) in msg
    assert "DPDBSCAN_DATA" in msg and "clustering-benchmark" in msg


def test_data_dir_default_is_beside_the_repo(monkeypatch):
    monkeypatch.delenv("DPDBSCAN_DATA", raising=False)
    assert data.data_dir() == data.REPO.parent / "shared" / "data"
    assert (data.REPO / "experiments" / "data.py").is_file()


@pytest.mark.parametrize(
    "alias,key", [("t4", "cluto_t4"), ("T5", "cluto_t5"), ("har", "chest"), ("moons", "moons")]
)
def test_aliases(alias, key):
    assert datasets.canonical(alias) == key


def test_unknown_dataset_is_rejected():
    with pytest.raises(ValueError, match="unknown data set 'crash'"):
        datasets.canonical("crash")


def test_chest_alpha_rule_gives_the_papers_grid():
    lo, hi = datasets.PUBLIC_BOUNDS["chest"]
    grid = Grid(np.asarray(lo), np.asarray(hi), datasets.CHEST_ALPHA)
    assert abs(grid.n_cells / 1e8 - 1) < 0.02  # the paper's HAR70+ |X| = 1e8
    assert grid.kappa == 117


def test_geographic_projection_round_trips():
    lo, hi = datasets.PUBLIC_BOUNDS["cabs_tiny"]
    # 0.1 degrees of latitude is 11.1195 km; 0.1 of longitude shrinks by cos(37.8)
    assert hi[1] == pytest.approx(11.1195)
    assert hi[0] == pytest.approx(11.1195 * math.cos(math.radians(37.8)))
    to_lonlat = data.GEO_BOXES["cabs_tiny"].projection().inverse
    corners = to_lonlat(np.array([lo, hi]))
    assert corners == pytest.approx(np.array([[-122.48, 37.72], [-122.38, 37.82]]))


def test_paper_parameters_are_used():
    for name in datasets.SYNTHETIC + datasets.CLUTO + datasets.GEOGRAPHIC:
        assert datasets.PARAMS[name] == paper.PARAMS[name]


# ----------------------------------------------------------------- accuracy
@pytest.mark.parametrize(
    "text,seeds", [("0-9", list(range(10))), ("2-4", [2, 3, 4]), ("0,3,7", [0, 3, 7]), ("3", [0, 1, 2])]
)
def test_parse_seeds(text, seeds):
    assert accuracy.parse_seeds(text) == seeds


@pytest.mark.parametrize("text", ["", "a", "5-2", "0", "-1", "1-x"])
def test_parse_seeds_rejects(text):
    import argparse

    with pytest.raises(argparse.ArgumentTypeError):
        accuracy.parse_seeds(text)


@pytest.mark.parametrize(
    "text,pair",
    [
        ("eta=3", ("eta", 3)),
        ("noise=laplace", ("noise", "laplace")),
        ("max_empty_cells=1e5", ("max_empty_cells", 1e5)),
        ("raise_min_samples=False", ("raise_min_samples", False)),
    ],
)
def test_parse_param(text, pair):
    assert accuracy.parse_param(text) == pair


@pytest.mark.parametrize("text", ["eta", "=3", "two words=1"])
def test_parse_param_rejects(text):
    import argparse

    with pytest.raises(argparse.ArgumentTypeError):
        accuracy.parse_param(text)


def test_evaluate_returns_scores_per_seed():
    rows = accuracy.evaluate(
        ["moons", "blobs"], seeds=[0, 1], methods=("DP-DBSCAN", "DBSCAN", "DBSCAN core-only")
    )
    assert [r["dataset"] for r in rows] == ["moons", "blobs"]
    for r in rows:
        assert len(r["scores"]["DP-DBSCAN"]["ARI"]) == 2
        assert len(r["scores"]["DBSCAN"]["AMI"]) == 1  # deterministic: run once
        assert len(r["n_spans"]["DP-DBSCAN"]) == 2
        for m in r["scores"].values():
            for v in m["ARI"] + m["AMI"]:
                assert -0.5 <= v <= 1.0
    # Non-private DBSCAN separates the moons perfectly with the paper's parameters.
    assert rows[0]["scores"]["DBSCAN"]["ARI"] == [pytest.approx(1.0)]
    # and reproduces the paper's (core-only) Blobs number
    assert rows[1]["scores"]["DBSCAN core-only"]["ARI"][0] == pytest.approx(0.55, abs=0.01)


def test_evaluate_passes_estimator_kwargs_through():
    # eta is validated by the estimator: an out-of-range value must reach it.
    with pytest.raises(ValueError, match="eta"):
        accuracy.evaluate(["moons"], seeds=[0], eta=5.0)
    a = accuracy.evaluate(["moons"], seeds=[0], methods=("DP-DBSCAN",), histogram="sparse")
    assert a[0]["scores"]["DP-DBSCAN"]["ARI"]


def test_evaluate_is_reproducible_for_a_seed():
    a = accuracy.evaluate(["blobs"], seeds=[3], methods=("DP-DBSCAN",))
    b = accuracy.evaluate(["blobs"], seeds=[3], methods=("DP-DBSCAN",))
    assert a[0]["scores"] == b[0]["scores"]


def test_evaluate_rejects_unknown_method():
    with pytest.raises(ValueError, match="unknown methods"):
        accuracy.evaluate(["moons"], seeds=[0], methods=("OPTICS",))


def test_main_prints_markdown_with_paper_columns(capsys):
    assert accuracy.main(["--datasets", "moons,circles", "--seeds", "0-1"]) == 0
    out = capsys.readouterr().out
    assert "| Moons | (0.2, 7) |" in out and "| Circles | (0.2, 10) |" in out
    assert "paper DP-DBSCAN" in out and "DBSCAN core-only" in out
    header = next(line for line in out.splitlines() if line.startswith("| Dataset"))
    assert (
        header.index("| DP-DBSCAN |")
        < header.index("| DP-DBSCAN core=bound |")
        < header.index("| DP-DBSCAN paper proc. |")
    )
    assert "0.99" in out  # the paper's Moons DP-DBSCAN ARI / AMI
    assert "mean ± std over seeds 0, 1" in out


def test_main_param_reaches_the_estimator():
    with pytest.raises(ValueError, match="beta"):
        accuracy.main(["--datasets", "moons", "--seeds", "1", "--param", "beta=2.0"])


def test_fmt_and_mean_std():
    assert accuracy.fmt([0.5]) == "0.50"
    assert accuracy.fmt([0.0, 1.0]) == "0.50 ± 0.71"  # sample std
    assert accuracy.fmt([]) == "-"


# ---------------------------------------------------------------- baselines
def test_core_only_labels_drop_border_points():
    # A dense line of 10 points plus one border point reachable only from the end.
    X = np.vstack([np.c_[np.arange(10) * 0.1, np.zeros(10)], [[1.0, 0.0]]])
    db = baselines.dbscan(X, 0.11, 3)
    labels = baselines.core_only_labels(db)
    core = np.zeros(len(X), bool)
    core[db.core_sample_indices_] = True
    assert not core[-1] and db.labels_[-1] == 0  # scikit-learn attaches the border point
    assert labels[-1] == -1
    assert np.array_equal(labels[core], db.labels_[core])


def test_noisy_distance_matrix_shape_and_calibration():
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, size=(50, 2))
    bounds = ((0, 0), (3, 4))  # diameter 5
    M, scale = baselines.noisy_distance_matrix(X, bounds, 0.5, rng, "row")
    assert scale == pytest.approx(49 * 5 / 0.5)  # (n - 1) D / epsilon
    assert M.shape == (50, 50)
    assert np.array_equal(M, M.T) and np.all(np.diag(M) == 0) and np.all(M >= 0)
    _, scale_entry = baselines.noisy_distance_matrix(X, bounds, 0.5, rng, "entry")
    assert scale_entry == pytest.approx(5 / 0.5)
    with pytest.raises(ValueError, match="calibration"):
        baselines.noisy_distance_matrix(X, bounds, 0.5, rng, "column")


def test_noisy_distance_matrix_noise_is_centred_with_the_stated_scale():
    # Before clipping, entries are distance + Laplace(scale). Use a tiny scale
    # regime check: with epsilon huge the matrix equals the true distances.
    rng = np.random.default_rng(1)
    X = rng.uniform(0, 1, size=(30, 2))
    M, scale = baselines.noisy_distance_matrix(X, ((0, 0), (1, 1)), 1e12, rng, "entry")
    true = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    assert scale < 1e-11
    assert np.allclose(M, true, atol=1e-9)


def test_label_publishing_baseline_collapses_to_one_cluster():
    # Negative result of the paper. With scale (n-1) D / eps ~ 2500 >> alpha = 0.2,
    # each noisy distance is <= alpha with probability ~1/2, so every point has
    # ~150 of 300 neighbours (MinPts = 7): all core, one cluster. The chance of
    # any other outcome is below 1e-30 (Chernoff on 300 Binomial(299, 0.49) counts).
    ds = datasets.load("moons")
    idx = baselines.subsample(ds.n, 300, seed=0)
    labels, scale = baselines.noisy_distance_dbscan(
        ds.X[idx], ds.alpha, ds.min_samples, ds.bounds, 1.0, seed=0
    )
    assert scale > 1000
    assert baselines.n_clusters(labels) == 1 and np.all(labels == 0)
    assert accuracy.scores(ds.labels[idx], labels)["ARI"] == pytest.approx(0.0)


def test_density_preserving_alpha():
    # A 4x sparser 2-D sample needs a 2x wider radius for the same expected count.
    assert baselines.density_preserving_alpha(0.2, 2000, 500, 2) == pytest.approx(0.4)
    assert baselines.density_preserving_alpha(1.0, 8000, 1000, 3) == pytest.approx(2.0)


def test_subsample_is_sorted_unique_and_seeded():
    a = baselines.subsample(100, 30, seed=4)
    assert np.array_equal(a, np.unique(a)) and a.size == 30
    assert np.array_equal(a, baselines.subsample(100, 30, seed=4))
    assert baselines.subsample(10, 30, seed=0).size == 10


def test_dp_kmeans_uses_public_bounds_and_true_k(diffprivlib):
    ds = datasets.load("blobs")
    model = baselines.dp_kmeans(ds.X, ds.k, ds.bounds, 1.0, seed=0)
    assert model.cluster_centers_.shape == (3, 2)
    assert model.labels_.shape == (ds.n,)
    assert set(np.unique(model.labels_)) <= {0, 1, 2}


def test_dp_dbscan_wrapper_uses_dataset_parameters():
    ds = datasets.load("moons")
    model = baselines.dp_dbscan(ds, 0, eta=2.0)
    assert model.eps == ds.alpha and model.spans_.spec.min_samples == ds.min_samples
    assert model.spans_.release.grid.eta == 2.0 and model.spans_.release.epsilon == 1.0
    assert np.array_equal(model.spans_.grid.lower, ds.bounds[0])


# ------------------------------------------------------------ timing, report
def test_skip_reasons():
    class Big:
        n = 11_000_000
        alpha = 0.02

    grid = Grid(np.zeros(2), np.ones(2), 0.5)
    assert "out of memory" in str(timing.skip_reason("DBSCAN", Big, grid, 1e9))
    assert "cap" in str(timing.skip_reason("DP-DBSCAN naive", Big, grid, 1e9, dense_max_cells=1))
    assert timing.skip_reason("DP-DBSCAN naive", Big, grid, 1e9) is None
    assert timing.skip_reason("KMeans", Big, grid, 1e9) is None


def test_median_time_runs_the_function_reps_times():
    calls = []
    med, times = timing.median_time(lambda: calls.append(1), reps=3, warmup=True)
    assert len(calls) == 4 and len(times) == 3
    assert med == sorted(times)[1]


def _row(name, dp_ari, n_spans):
    return {
        "dataset": name,
        "title": datasets.TITLES[name],
        "seeds": list(range(len(dp_ari))),
        "n_spans": {"DP-DBSCAN": n_spans},
        "alpha": 0.2,
        "min_samples": 7,
        "scores": {"DP-DBSCAN": {"ARI": dp_ari, "AMI": dp_ari}},
    }


def test_accuracy_notes_flag_only_real_differences():
    close = _row("blobs", [0.80, 0.82], [3, 3])  # paper 0.81 / 0.83
    far = _row("moons", [0.0, 1.0, 1.0], [1, 2, 2])  # paper 0.99
    found = notes.accuracy_notes([close, far], quick=False)
    assert len(found) == 1
    assert "Moons" in found[0] and "1 of 3 seeds" in found[0]


def test_timing_table_shows_paper_numbers():
    row = {
        "dataset": "moons",
        "title": "Moons",
        "n": 2000,
        "d": 2,
        "n_cells": 1849,
        "cols": {
            "DP-DBSCAN naive": {"median": 0.004, "times": [0.004] * 5},
            "DBSCAN": {"skipped": "because"},
        },
    }
    txt = tables.timing_table([row])
    assert "4 ms (×5) (69.9 ms)" in txt
    assert "skipped (5.62 ms)" in txt
    assert "KMeans" in txt
