"""benchmarks.csv_trees on a small generated file: it reads the Cabs CSV by
its name in the data folder (``DPDBSCAN_DATA``), so a folder holding a few
thousand points in the Cabs box under that name runs the whole comparison
(pyarrow's read, the three variants of ``dpdbscan fit`` and the stages, for
two trees) in seconds. Never a time: only that every run is made and
reported, and that the ratios are the medians' ratios."""

from __future__ import annotations

import gzip
import json
import os

import numpy as np
import pytest

from benchmarks import csv_trees
from experiments import data


def small_cabs(folder):
    """A gzipped ``x,y`` CSV of 3,000 points (a dense spot and a scatter)
    in the Cabs box, under the Cabs file's name."""
    lo_lon, lo_lat, hi_lon, hi_lat = data.GEO_BOXES["cabs"].degrees
    rng = np.random.default_rng(0)
    centre = np.array([(lo_lon + hi_lon) / 2, (lo_lat + hi_lat) / 2])
    pts = np.vstack(
        [centre + rng.normal(0, 0.0003, (2500, 2)), rng.uniform([lo_lon, lo_lat], [hi_lon, hi_lat], (500, 2))]
    )
    path = folder / data.FILES["cabs"]
    with gzip.open(path, "wt") as f:
        f.write("x,y\n" + "".join(f"{x:.6f},{y:.6f}\n" for x, y in pts))
    return path


@pytest.mark.slow  # about 20 fresh processes: a minute under load
def test_csv_trees_runs_both_trees_on_a_small_file(tmp_path, monkeypatch):
    folder = tmp_path / "data"
    folder.mkdir()
    small_cabs(folder)
    monkeypatch.setenv(data.ENV, str(folder))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    out = tmp_path / "trees.json"
    tree = csv_trees.REPO
    got = csv_trees.main([str(tree), str(tree), "--rounds", "2", "--json", str(out)])
    assert json.loads(out.read_text())["pyarrow_read_s"] == got["pyarrow_read_s"]
    assert len(got["load_1min"]) == 3  # before the first round and after each
    assert len(got["runs"]["pyarrow"]) == 2 and got["pyarrow_read_s"] > 0
    for i in (0, 1):
        row = got[f"tree{i}"]
        assert row["tree"] == str(tree.resolve())
        for k in csv_trees.VARIANTS:
            runs = got["runs"][f"{i}:{k}"]
            assert len(runs) == 2 and all(r["wall_s"] > 0 and r["cpu_s"] > 0 for r in runs)
            wall = row[k]["wall_s"]
            assert wall == csv_trees.med([r["wall_s"] for r in runs])
            assert row[k]["per_read"] == wall / got["pyarrow_read_s"]
            assert row[k]["per_process"] == wall / got["pyarrow_process_s"]
        assert set(row["stages_s"]) == set(csv_trees.STAGES)
        assert all(v >= 0 for v in row["stages_s"].values())
    # each fit wrote its release where the tree's runs go, in the temporary folder
    written = sorted(p.name for p in (tmp_path / f"csv_trees_{os.getpid()}" / "0").iterdir())
    assert any(name.endswith(".spans.json") for name in written)
