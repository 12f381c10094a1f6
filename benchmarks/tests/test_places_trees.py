"""benchmarks.places_trees on a small generated trace file: the event
command drops the person-level options alone, and a run with both trees
the same checkout makes every run and reports the medians' ratios. Never
a time."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import places_trees
from benchmarks.bench_places import BOX


def test_the_event_command_is_the_person_command_without_its_unit():
    person = places_trees.fit_command("person", places_trees.REPO, "p", None)
    event = places_trees.fit_command("event", places_trees.REPO, "p", None)
    for option in ("--unit", "--max-cells-per-unit", "--delta"):
        assert option in person and option not in event
    kept = [
        w for w in person if w not in ("--unit", "cab", "--max-cells-per-unit", "auto", "--delta", "1e-6")
    ]
    assert event == kept
    stops = places_trees.fit_command("stops", places_trees.REPO, "p", None)
    assert stops[-12:] != person[-12:] and "--stops" in stops and "--time" in stops


@pytest.mark.slow  # about 10 fresh processes of the command line
def test_places_trees_runs_both_trees_on_a_small_file(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rng = np.random.default_rng(0)
    n = 4000
    lo, hi = np.array(BOX[:2], dtype=float), np.array(BOX[2:], dtype=float)
    centre = (lo + hi) / 2
    xy = np.where(
        rng.random((n, 1)) < 0.7, centre + rng.normal(0, 0.0005, (n, 2)), rng.uniform(lo, hi, (n, 2))
    )
    path = tmp_path / "cabs.parquet"
    table = {
        "x": xy[:, 0],
        "y": xy[:, 1],
        "cab": pa.array([f"c{i % 40}" for i in range(n)]).dictionary_encode(),
        "time": 1_211_018_400 + np.arange(n, dtype=np.int64) * 60,
        "occupied": rng.integers(0, 2, n).astype(np.int8),
    }
    pq.write_table(pa.table(table), path)
    repo = str(places_trees.REPO)
    out = places_trees.main(
        [repo, repo, "--rounds", "2", "--kinds", "person,stops,event", "--data", str(path)]
    )
    assert set(out["kinds"]) == {"person", "stops", "event"}
    for kind, row in out["kinds"].items():
        assert len(out["runs"][f"0:{kind}"]) == len(out["runs"][f"1:{kind}"]) == 2
        assert row["ratio"]["cpu_s"] == pytest.approx(row["tree1"]["cpu_s"] / row["tree0"]["cpu_s"])
        assert row["tree0"]["peak_rss_bytes"] > 0
