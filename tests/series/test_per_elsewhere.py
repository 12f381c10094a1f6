"""``--per`` beyond fit: what each period of a series could detect
(``forecast --per``, public; ``check --per``, private notes), and why
``sweep`` has none."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpdbscan import load_model
from dpdbscan.laws import discretegaussian as law
from dpdbscan.params.parameters import validate
from dpdbscan.release import periodtable
from dpdbscan.release.samplers.gaussian import rational_sigma2
from dpdbscan.series import plan_series
from dpdbscan.traces.periods import Periods
from tests.clirun import run
from tests.series.test_append import _rows, _write

FORECAST = ["forecast", "--bounds", "0", "0", "10", "10", "--eps", "0.5", "--min-samples", "30",
            "--epsilon", "2", "--delta", "1e-5", "--max-cells-per-unit", "8", "--noise", "gaussian",
            "--per", "day", "--from", "2024-03-04", "--to", "2024-03-11"]  # fmt: skip


@pytest.mark.parametrize("sigma2", [3.0, 161.65, 12345.6])
def test_detectable_is_the_smallest_mass_found_active_with_probability_095(sigma2):
    h = periodtable.half_width(sigma2)
    mu = periodtable.detectable(sigma2)
    s2 = float(rational_sigma2(sigma2))

    def active(m: int) -> float:  # P(m + Z >= h) = P(Z >= h - m)
        return law.tail(s2, h - m)

    assert active(mu) >= 0.95 > active(mu - 1)
    assert mu > h


def test_forecast_per_gives_the_spans_share_and_each_spans_count(capsys):
    rc, out, err = run(capsys, *FORECAST, "--max-pairs-per-unit", "all", "--json")
    assert rc == 0, err
    doc = json.loads(out)
    p = validate(
        dict(epsilon=2.0, delta=1e-5, eps=0.5, min_samples=30, max_cells_per_unit=8, noise="gaussian")
    )
    plan = plan_series(p, np.zeros(2), np.full(2, 10.0), Periods("day", "2024-03-04", "2024-03-11"))
    assert doc["epsilon"] == pytest.approx(plan.spans_epsilon) and doc["epsilon"] < 2
    rows = doc["series"]["table_forecast"]
    assert [r["n_spans"] for r in rows] == [1, 2, 5, 10, 20]
    for r in rows:
        c = plan.calibrated(r["n_spans"])
        assert r["max_pairs_per_unit"] == 7 * r["n_spans"]
        assert r["sigma"] ** 2 == pytest.approx(c.sigma2)
        assert r["interval_half_width"] == periodtable.half_width(c.sigma2)
    # an appendable plan bounds each period: K = S, the same noise
    rc, out, err = run(capsys, *FORECAST, "--places-periods", "3", "--json")
    assert rc == 0, err
    appendable = json.loads(out)["series"]["table_forecast"]
    assert [r["max_pairs_per_unit"] for r in appendable] == [1, 2, 5, 10, 20]
    assert [r["interval_half_width"] for r in appendable] == [r["interval_half_width"] for r in rows]
    rc, out, err = run(capsys, *FORECAST, "--max-pairs-per-unit", "all")
    assert rc == 0 and "S=5   K=35 " in out and "active w.p. 0.95 from" in out
    # the default in memory chooses K privately: at most S x T, at 0.9 of the table's rho
    rc, out, err = run(capsys, *FORECAST, "--json")
    assert rc == 0, err
    auto = json.loads(out)["series"]["table_forecast"]
    assert all(r["chosen_privately"] for r in auto)
    assert [r["max_pairs_per_unit"] for r in auto] == [r["max_pairs_per_unit"] for r in rows]
    assert all(a["sigma"] > r["sigma"] for a, r in zip(auto, rows))  # 0.9 of the rho at the same K
    rc, out, err = run(capsys, *FORECAST)
    assert rc == 0 and "S=5   K<=35 " in out and "chosen privately" in out


def test_forecast_per_needs_a_person_level_bound(capsys):
    args = list(FORECAST)
    i = args.index("--max-cells-per-unit")
    del args[i : i + 2]
    rc, out, err = run(capsys, *args)
    assert rc == 2 and "--max-cells-per-unit" in err


def test_check_per_notes_each_periods_rows_and_units(tmp_path, capsys):
    path = _write(tmp_path / "cabs.csv", *_rows())
    rc, out, err = run(capsys, "check", path, "--header", "--columns", "x", "y", "--unit", "cab",
                       "--max-cells-per-unit", "8", "--time", "time", "--per", "day", "--from",
                       "2024-03-04", "--to", "2024-03-11", "--bounds", "0", "0", "10", "10", "--eps", "0.5",
                       "--min-samples", "30", "--epsilon", "2", "--delta", "1e-5")  # fmt: skip
    assert rc == 0, err
    assert out == ""  # private notes only
    line = next(x for x in err.splitlines() if "periods   :" in x)
    assert line.startswith("[private: do not publish]")
    assert "7 day(s)" in line and "units (cab) per day" in line and "dropped" in line
    assert "S=2   K<=14 " in err  # auto by default: at most S x T
    assert "rows per day" in line and "row(s) with no time" in line


def test_check_per_counts_the_stops_per_period_when_stops_are_counted(tmp_path, capsys):
    """With --stops the periods' counts are of the stops, as the release's
    are, and the line says so (it said "rows per day" of the stops)."""
    path = _write(tmp_path / "cabs.csv", *_rows())
    rc, out, err = run(capsys, "check", path, "--header", "--columns", "x", "y", "--unit", "cab",
                       "--max-cells-per-unit", "8", "--time", "time", "--stops", "1", "5min", "--per", "day",
                       "--from", "2024-03-04", "--to", "2024-03-11", "--bounds", "0", "0", "10", "10",
                       "--eps", "0.5", "--min-samples", "30", "--epsilon", "2",
                       "--delta", "1e-5")  # fmt: skip
    assert rc == 0, err
    line = next(x for x in err.splitlines() if "periods   :" in x)
    assert "events per day" in line and "event(s) with no time" in line and "rows per day" not in line


def test_sweep_says_why_it_has_no_per(tmp_path, capsys):
    path = _write(tmp_path / "cabs.csv", *_rows(n=500))
    rc, out, err = run(capsys, "sweep", path, "--header", "--columns", "x", "y", "--bounds", "0", "0", "10",
                       "10", "--eps", "0.5", "--min-samples", "30", "--per", "day")  # fmt: skip
    assert rc == 2 and "sweep has no --per" in err and "spend the table's budget once per setting" in err


# --------------------------------------------------------------------------- #
# K chosen privately (--max-pairs-per-unit auto)


def test_auto_pairs_spend_a_share_of_the_table_and_no_more():
    from fractions import Fraction

    p = validate(dict(epsilon=1.0, delta=1e-6, eps=0.5, min_samples=20, max_cells_per_unit=4))
    plan = plan_series(p, np.zeros(2), np.full(2, 10.0), Periods("week", "2024-01-01", "2024-02-05"),
                       max_pairs_per_unit="auto")  # fmt: skip
    assert plan.choose_k and plan.k is None and plan.calibrated(5).k is None  # chosen from the data
    assert plan.choice_rho == pytest.approx(0.1 * plan.table_rho)
    assert Fraction(plan.choice_rho) + Fraction(plan.noise_rho) <= Fraction(plan.table_rho)
    assert plan.record()["table"]["max_pairs_per_unit"].startswith("auto")
    chosen = plan.chosen(12)
    assert chosen.sigma2 == pytest.approx(periodtable.sigma2_for(plan.noise_rho, 12, 1))
    with pytest.raises(ValueError, match="appendable series"):
        plan_series(p, np.zeros(2), np.full(2, 10.0), Periods("week", "2024-01-01", "2024-02-05"),
                    max_pairs_per_unit="auto", places=2)  # fmt: skip


def test_auto_pairs_choose_about_each_units_number_of_pairs(tmp_path, capsys):
    # every cab is in ~13.5 of the 14 (place, day) pairs: the signal to noise peaks there.
    # auto is the default in memory; given here, and the default checked below
    path = _write(tmp_path / "cabs.csv", *_rows())
    rc, out, err = run(capsys, "fit", path, "--header", "--columns", "x", "y", "--unit", "cab",
                       "--max-cells-per-unit", "8", "--time", "time", "--per", "day", "--from",
                       "2024-03-04", "--to", "2024-03-11", "--bounds", "0", "0", "10", "10", "--eps", "0.5",
                       "--min-samples", "30", "--epsilon", "2", "--delta", "1e-5",
                       "--no-png", "--max-pairs-per-unit", "auto", "--seed", "5",
                       "--out-dir", tmp_path / "o")  # fmt: skip
    assert rc == 0, err

    t = load_model(tmp_path / "o" / "cabs.spans.json").metadata["series"]["table"]
    assert t["max_pairs_per_unit"] in (11, 13)  # the ladder's 1, 2, 3, ..., 11, 13 (<= 2 x 7)
    assert t["pairs_choice"]["rho"] == pytest.approx(0.1 * t["rho"])
    assert t["sigma2"] == pytest.approx(periodtable.sigma2_for(t["pairs_choice"]["noise_rho"],
                                                               t["max_pairs_per_unit"], 1))  # fmt: skip


def test_auto_is_the_default_in_memory_and_all_where_it_cannot_run():
    from dpdbscan.cli.fitseries import SeriesOptions, pairs_bound

    s = SeriesOptions("day", "2024-03-04", "2024-03-11", None, 0.4, None, 1)
    assert pairs_bound(s) == "auto"
    assert pairs_bound(s, dask=True) == "all"
    assert pairs_bound(SeriesOptions("day", "2024-03-04", "2024-03-11", None, 0.4, None, 1, 3)) == "all"
    assert pairs_bound(SeriesOptions("day", "2024-03-04", "2024-03-11", None, 0.4, 9, 1)) == 9
