"""experiments.auto_oracle: the selection against the best of its own release."""

from __future__ import annotations

import pickle
import warnings
from types import SimpleNamespace

import numpy as np
import pytest

from dpdbscan import DPDBSCAN
from experiments import auto_oracle, scene_bench

# seven candidate eps, each its own selection, and every flat cut on sub-cells
pytestmark = pytest.mark.slow


def test_the_oracles_bound_the_candidates_and_the_cache_holds_every_eps(tmp_path):
    rng = np.random.default_rng(2)
    X = np.vstack(
        [rng.normal((2, 2), 0.3, (900, 2)), rng.normal((7, 6), 0.6, (500, 2)), rng.uniform(0, 10, (150, 2))]
    )
    y = np.repeat([0, 1, -1], [900, 500, 150])
    sc = SimpleNamespace(
        seed=3,
        X=X,
        y=y,
        bounds=(np.zeros(2), np.full(2, 10.0)),
        d=2,
        n=X.shape[0],
        k=2,
        tags=frozenset({"2d"}),
    )
    row = auto_oracle.diagnose(sc, tmp_path)
    per = [row[k] for k in row if k.startswith("alpha:")]
    assert row["best_alpha"] == max(per) and row[f"alpha:{row['best_alpha_at']}"] == row["best_alpha"]
    # every score is an ARI
    assert all(-1.0 <= v <= 1.0 for v in [*per, row["leaf"], row["best_flat"], row["model"]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one = DPDBSCAN(
            "auto", min_samples="auto", bounds=sc.bounds, random_state=sc.seed, selection="one-eps"
        ).fit(X)
    # the chosen eps's own selection is the one-eps model (the study labels on centres, predict on sub-cells)
    assert row[f"alpha:{row['chosen']}"] == pytest.approx(scene_bench.ari(y, one.spans_.predict(X)), abs=0.05)
    rec = pickle.loads((tmp_path / "3.pkl").read_bytes())
    assert set(rec["per"]) == set(rec["candidates"]) and rec["eps"] == rec["candidates"][row["chosen"]]
    assert [r[0] for r in rec["scores"]] == rec["candidates"]
