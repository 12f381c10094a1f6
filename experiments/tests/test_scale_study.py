"""experiments.scale_study: spans taken at other candidate eps from the one release."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpdbscan import DPDBSCAN
from experiments import scale_study

# seven candidate eps, each its own selection: about 10 s on an idle machine
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def case():
    rng = np.random.default_rng(1)
    # a dense blob, a sparse one and a small one, with background
    X = np.vstack(
        [
            rng.normal((2, 2), 0.3, (1500, 2)),
            rng.normal((7, 6), 0.8, (400, 2)),
            rng.normal((2.5, 7.5), 0.2, (120, 2)),
            rng.uniform(0, 10, (200, 2)),
        ]
    )
    y = np.repeat([0, 1, 2, -1], [1500, 400, 120, 200])
    bounds = (np.zeros(2), np.full(2, 10.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # n_expected: no DP count, so near-ties of eps go to the largest alpha, the
        # rule the study replicates (a count below 6,000 would take the 'agree' ties)
        model = (
            DPDBSCAN("auto", min_samples="auto", bounds=bounds, n_expected=2_220.0, random_state=5)
            .fit(X)
            .spans_
        )
    return X, y, model, scale_study.selections(model)


def test_the_default_is_the_model_and_additions_are_disjoint(case):
    X, y, model, sel = case
    assert model.auto.get("ties", "largest") == "largest"
    assert sel["eps"] == model.grid.eps
    assert len(sel["base"]) == len(model.auto["levels"])
    assert set(sel["per"]) == set(sel["candidates"])
    lab = scale_study.labels(sel["grid"], sel["base"], X)
    assert lab.max() + 1 == len(sel["base"])
    # the study's labels agree with predict on most points (predict's border is on sub-cells)
    assert (lab == model.predict(X)).mean() > 0.95
    for which in ("all", "larger", "smaller"):
        spans = scale_study.extend(sel, which=which, gap=0.5)
        assert spans[: len(sel["base"])] == sel["base"]
        keys = np.concatenate([s["keys"] for s in spans])
        assert np.unique(keys).size == keys.size  # disjoint
        for s in spans[len(sel["base"]) :]:
            assert (s["eps"] > sel["eps"]) if which == "larger" else True
            assert (s["eps"] < sel["eps"]) if which == "smaller" else True
    # with nothing selected at the other eps, nothing is added
    empty = {**sel, "per": {a: [] for a in sel["per"]}}
    assert scale_study.extend(empty, gap=0.5) == sel["base"]
    assert scale_study.refine(empty, 0.0, False) == sel["base"]


def test_labels_claim_only_within_the_border(case):
    X, y, model, sel = case
    near = scale_study.labels(sel["grid"], sel["base"], X, border=1e-9)
    assert (near == -1).all()
    row = scale_study.score_case(sel, X, y)
    assert {"default", "add larger gap0.5", "split z1 eom"} <= set(row)
