"""experiments.person_level on a small synthetic city in the Cabs box (the
numbers on full Cabs are in docs/accuracy.md and results/person_level.json).

400 cabs drive around downtown, 30 points each over about 9 cells; one more
cab parks 5,000 points at one spot in open water. At event level that spot is
a span of one cab; at person level (k = 1000, m = 1) it counts once and is not.
The margins are wide: a downtown cell is seen by about 390 cabs against
MinPts 100 and a Gaussian sd of 22 at epsilon 8 (143 at epsilon 1), so the
assertions on spans fail with a probability far below 1e-6."""

from __future__ import annotations

import math

import numpy as np
import pytest

from experiments import person_level

DOWNTOWN = (-122.4028, 37.7922)
WATER = (-122.55, 37.60)
EPSILONS = (1.0, 8.0)
SEEDS = (0, 1)


def city() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(20)
    n_cabs, per_cab, loner = 400, 30, 5000
    blob = np.asarray(DOWNTOWN) + rng.uniform(-1, 1, (n_cabs * per_cab, 2)) * (0.002, 0.0015)
    spot = np.asarray(WATER) + rng.uniform(-1, 1, (loner, 2)) * 0.0001
    names = [f"c{i:03d}" for i in range(n_cabs) for _ in range(per_cab)] + ["loner"] * loner
    units = np.array(names, dtype=object)
    return np.vstack([blob, spot]), units


@pytest.fixture(scope="module")
def result() -> dict:
    lonlat, units = city()
    return person_level.evaluate(person_level.LEVELS, EPSILONS, SEEDS, lonlat=lonlat, units=units)


def test_every_fit_and_twin_is_measured(result):
    runs, twins = result["runs"], result["twins"]
    assert len(runs) == len(person_level.LEVELS) * len(EPSILONS) * len(SEEDS)
    # a twin per seed at person level (the bounding key), one at event level
    assert sorted((t["level"], t["seed"]) for t in twins) == [("event", None), ("person", 0), ("person", 1)]
    for r in runs:
        assert set(person_level.METRICS) <= set(r)
        assert -0.5 <= r["ari"] <= 1.0 and 0.0 <= r["top_in_spans"] <= 1.0
        assert (r["rho"] is None) == (r["level"] == "event")
    s = result["setup"]
    assert s["rows"] == 17000 and s["units"] == 401
    assert s["grid_shape"] == [187, 236] and s["cell_width_m"] == pytest.approx(141.4, abs=0.1)


def test_the_lone_cab_is_a_span_at_event_level_only(result):
    for r in result["runs"]:
        assert r["spans"] >= 1
        assert r["one_unit_spans"] == (1 if r["level"] == "event" else 0), r
    assert all(t["one_unit_spans"] == (t["level"] == "event") for t in result["twins"])


def test_the_noise_sd_follows_the_level_and_epsilon(result):
    person = {r["epsilon"]: r["noise_sd"] for r in result["runs"] if r["level"] == "person"}
    event = {r["epsilon"]: r["noise_sd"] for r in result["runs"] if r["level"] == "event"}
    assert person[1.0] > person[8.0] > 10 * event[1.0] > 10 * event[8.0]
    # Gaussian: sigma = sqrt(k) m / sqrt(2 rho)
    for r in result["runs"]:
        if r["level"] == "person":
            assert r["noise_sd"] == pytest.approx(math.sqrt(1000 / (2 * r["rho"])), rel=1e-6)


def test_markdown_has_a_row_per_level_and_epsilon(result):
    text = person_level.markdown(result)
    for level in person_level.LEVELS:
        assert f"| {level} | 1 |" in text and f"| {level} | 8 |" in text
        assert f"| {level}, no noise | – | 0 |" in text
    # one-cab spans: event level finds the loner in both seeds
    event8 = next(line for line in text.splitlines() if line.startswith("| event | 8 |"))
    assert event8.split(" | ")[6] == "1.0"


def test_three_sigma_uses_the_library_calibration():
    lonlat, units = city()
    rows = person_level.three_sigma(lonlat, units, ks=(5, 1000), seed=0)
    assert [r["k"] for r in rows] == [5, 1000]
    for r in rows:
        k = r["k"]
        assert r["gaussian_rho_half"]["sd"] == pytest.approx(math.sqrt(k), rel=1e-6)
        # the discrete Laplace of epsilon 1 / k: sd close to sqrt(2) k
        assert r["laplace"]["sd"] == pytest.approx(math.sqrt(2) * k, rel=0.02)
        assert r["max_count"] <= 401
    # with 5 of about 9 cells kept, fewer cabs reach each cell than with all of them
    assert rows[0]["max_count"] < rows[1]["max_count"]
    assert rows[1]["laplace"]["cells_3sd"] == 0  # 3 sqrt(2) 1000 > 401
    text = person_level.three_sigma_markdown(rows)
    assert text.count("\n") == 3 and "| 1,000 |" in text
