"""experiments.border_study: the border changes the labels of one release, not its spans."""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.metrics import adjusted_rand_score

from dpdbscan import DPDBSCAN
from experiments import border_study


def test_each_border_labels_the_same_release():
    rng = np.random.default_rng(0)
    X = np.vstack(
        [rng.normal(c, 0.3, (500, 2)) for c in ((2, 2), (7, 6), (2.5, 7))] + [rng.uniform(0, 10, (150, 2))]
    )
    y = np.repeat([0, 1, 2, -1], [500, 500, 500, 150])
    bounds = (np.zeros(2), np.full(2, 10.0))
    aris = border_study.border_aris(X, y, bounds, 3, (0.5, 1.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = DPDBSCAN("auto", min_samples="auto", bounds=bounds, random_state=3).fit(X).spans_
    assert aris[1.0] == adjusted_rand_score(y, m.predict(X))
    # background points around the blobs: a narrower border labels fewer of them
    assert aris[0.5] != aris[1.0]
    assert "| 0.5 eps |" in border_study._report([("s", 0.1, aris)], (0.5, 1.0))
