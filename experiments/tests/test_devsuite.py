"""experiments.devsuite: the dev-suite loader, the evaluation rows and the
tables (a smoke run on one set; the numbers are in docs/density-notes.md)."""

from __future__ import annotations

import numpy as np

from experiments import devsuite


def test_dev_sets_load_inside_their_public_bounds(dev_data):
    sets = devsuite.load_dev()
    assert [ds.name for ds in sets] == list(devsuite.DEV_NAMES)
    for ds in sets:
        lo, hi = ds.bounds
        assert ds.n == 20_000 and ds.X.shape[1] == lo.size
        assert np.all(ds.X >= lo) and np.all(ds.X <= hi), ds.name
        assert ds.k == np.unique(ds.labels[ds.labels >= 0]).size


def test_evaluate_and_tables_on_one_set(dev_data):
    sets = devsuite.load_dev(["banana"])
    rows = devsuite.evaluate(sets, seeds=[0], methods=("density", "bound", "DBSCAN"))
    sc = rows[0]["scores"]
    assert len(sc["density"]["ARI"]) == 1 and len(sc["DBSCAN"]["ARI"]) == 1
    # banana: two crescents that the density test separates and the bound test merges
    assert sc["density"]["ARI"][0] > 0.95 > 0.05 > sc["bound"]["ARI"][0]
    text = devsuite.markdown(rows, ("density", "bound", "DBSCAN"))
    assert "| banana |" in text and "**ARI**" in text and "**AMI**" in text
    sweep = {"moons": {"density": {0.5: [0.9], 1.0: [1.0]}, "DBSCAN": 1.0}}
    assert "| moons | density | 0.90 | 1.00 | 1.00 |" in devsuite.sweep_markdown(sweep, (0.5, 1.0))
