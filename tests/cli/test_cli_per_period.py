"""``dpdbscan forecast --periods N``: the epsilon of each of N releases
planned under one lifetime budget, by the ledger's own composition, checked
against the ledger itself: N releases at the planned epsilon fit, one more
does not, and N at 1% more do not."""

from __future__ import annotations

import json
import shlex
import shutil

import pytest

from dpdbscan.cli.ledger import cost_in_box
from dpdbscan.exceptions import BudgetExceeded
from dpdbscan.ledger import Ledger
from dpdbscan.plan.resolve import validated
from dpdbscan.prepare import project_box, split_bounds
from tests.clirun import run

BOX = ["-122.6", "37.55", "-122.3", "37.85"]
PERSON = ["--geo", "--bounds", *BOX, "--eps", "200m", "--min-samples", "30", "--max-cells-per-unit", "50",
          "--delta", "1e-6", "--n-units-expected", "536"]  # fmt: skip


def _plan(capsys, *argv) -> dict:
    rc, out, err = run(capsys, "forecast", *argv, "--json")
    assert rc == 0, err
    return json.loads(out)


def _cost(epsilon: float):
    """What `fit` reserves for PERSON's release at ``epsilon``."""
    p = validated(dict(eps=0.2, min_samples=30, epsilon=epsilon, delta=1e-6, max_cells_per_unit=50), cli=True)
    lower, upper = split_bounds([float(b) for b in BOX], 2, True)
    _, lower, upper = project_box(lower, upper, None)
    return cost_in_box(p, lower, upper, units=True, geo=True)


def _charge(ledger: Ledger, epsilon: float) -> None:
    ledger.reserve(_cost(epsilon), command="fit", params={}, unit="person", unit_column="cab")


def test_pure_epsilon_at_row_level_splits_the_budget_evenly(capsys):
    """A pure-epsilon lifetime budget (delta 0) composes by adding: 2 over 4."""
    fc = _plan(capsys, "--bounds", "0", "0", "10", "10", "--eps", "1", "--min-samples", "20",
               "--n-expected", "3000", "--periods", "4", "--lifetime-epsilon", "2")  # fmt: skip
    assert fc["per_period"]["epsilon_per_period"] == pytest.approx(0.5)
    assert fc["per_period"]["total"]["method"] == "basic composition"
    assert fc["epsilon"] == pytest.approx(0.5)  # the forecast is one period's release


def test_the_plan_fits_the_ledger_exactly_and_composes_by_zcdp(tmp_path, capsys):
    path = tmp_path / "budget.ledger"
    Ledger.create(path, "cabs", 2.0, 1e-6, unit="cab", accounting="zcdp")
    led = Ledger(path, "cabs")
    _charge(led, 0.5)  # a release already made: the plan fits beside it
    fc = _plan(capsys, *PERSON, "--periods", "5", "--ledger", path, "--dataset", "cabs")
    plan = fc["per_period"]
    each = plan["epsilon_per_period"]
    assert plan["releases_already_held"] == 1 and plan["lifetime"]["epsilon"] == 2.0
    assert fc["epsilon"] == pytest.approx(each)
    # zCDP: five releases cost less than five times one, so each gets more than (2 - 0.5) / 5
    assert each > 1.5 / 5 and plan["total"]["method"].startswith("zCDP")
    spare = tmp_path / "spare.ledger"
    shutil.copy(path, spare)
    for _ in range(5):
        _charge(led, each)
    with pytest.raises(BudgetExceeded):
        _charge(led, each)
    over = Ledger(spare, "cabs")
    with pytest.raises(BudgetExceeded):
        for _ in range(5):
            _charge(over, each * 1.01)


def test_a_given_budget_is_the_same_plan_as_an_empty_ledger_s(tmp_path, capsys):
    path = tmp_path / "budget.ledger"
    Ledger.create(path, "cabs", 2.0, 1e-6, unit="cab", accounting="zcdp")
    given = _plan(capsys, *PERSON, "--periods", "52", "--lifetime-epsilon", "2")["per_period"]
    led = _plan(capsys, *PERSON, "--periods", "52", "--ledger", path, "--dataset", "cabs")["per_period"]
    assert given["epsilon_per_period"] == led["epsilon_per_period"]
    assert Ledger(path, "cabs").account().releases == []


def test_the_text_names_the_plan_and_forecasts_one_period(capsys):
    rc, out, err = run(capsys, "forecast", *PERSON, "--periods", "52", "--lifetime-epsilon", "2")
    assert rc == 0, err
    (line,) = [x for x in out.splitlines() if x.startswith("periods :")]
    each = float(line.split("epsilon=")[2].split(" ")[0])
    assert f"forecast for eps=200 m, min_samples=30, epsilon={each:g}" in out
    assert "52 releases" in line and "Nothing is spent" in line and f"--epsilon {each:g}" in line


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--periods", "4"], "needs the lifetime budget"),
        (["--lifetime-epsilon", "2"], "give --periods N"),
        (["--periods", "0", "--lifetime-epsilon", "2"], "at least 1"),
        (
            [
                "--periods",
                "4",
                "--lifetime-epsilon",
                "2",
                "--per",
                "week",
                "--from",
                "2024-01-01",
                "--to",
                "2024-02-05",
            ],
            "--per plans one series",
        ),  # fmt: skip
        (["--periods", "4", "--ledger", "x.ledger"], "go together"),
    ],
)
def test_the_mistakes_are_said(capsys, argv, words):
    rc, _, err = run(capsys, "forecast", *PERSON, *argv)
    assert rc != 0 and words in " ".join(err.split())


def test_no_budget_left_is_said(tmp_path, capsys):
    path = tmp_path / "budget.ledger"
    Ledger.create(path, "cabs", 1.0, 1e-6, unit="cab")
    _charge(Ledger(path, "cabs"), 1.0)
    rc, _, err = run(capsys, "forecast", *PERSON, "--periods", "3", "--ledger", path, "--dataset", "cabs")
    assert rc != 0 and "no release of these options fits 3 times" in " ".join(err.split())
    assert len(Ledger(path, "cabs").account().releases) == 1  # nothing charged


def test_fit_help_says_which_question_each_series_answers(capsys):
    """--per and --places-periods find the places once; a fit per period
    finds them again, and forecast --periods plans its epsilon."""
    rc, out, _ = run(capsys, "fit", "--help")
    assert rc == 0
    text = " ".join(out.split())
    assert "the places are fixed; each period says how busy each is" in text
    assert "never find new ones (for places found again each period, fit each period on its own" in text
    assert "forecast --periods N plans its epsilon" in text


def test_the_help_s_planning_example_runs(capsys):
    rc, out, _ = run(capsys, "forecast", "--help")
    assert rc == 0
    text = out.replace("\\\n", " ")
    lines = [x.strip() for x in text.splitlines() if x.strip().startswith("dpdbscan")]
    (line,) = [x for x in lines if "--periods 52" in x]
    rc, out, err = run(capsys, *shlex.split(line)[1:])
    assert rc == 0, err
    assert "periods : 52 releases" in out


def test_a_plan_in_a_basic_ledger_adds_the_deltas(tmp_path, capsys):
    """By the default accounting (basic composition) N person-level releases
    at delta 1e-6 cannot fit a lifetime delta of 1e-6: refused, nothing spent;
    at delta 1e-6 / N each gets the lifetime epsilon over N."""
    path = tmp_path / "budget.ledger"
    Ledger.create(path, "cabs", 2.0, 1e-6, unit="cab")
    with pytest.raises(AssertionError, match="no release of these options fits 5 times"):
        _plan(capsys, *PERSON, "--periods", "5", "--ledger", path, "--dataset", "cabs")
    small = [a if a != "1e-6" else "2e-7" for a in PERSON]
    assert small != list(PERSON)
    plan = _plan(capsys, *small, "--periods", "5", "--ledger", path, "--dataset", "cabs")["per_period"]
    assert (
        plan["epsilon_per_period"] == pytest.approx(0.4, rel=1e-3)
        and plan["total"]["method"] == "basic composition"
    )
    assert Ledger(path, "cabs").account().releases == []


def test_a_given_budget_says_which_ledger_charges_its_plan(tmp_path, capsys):
    """A given lifetime budget (--lifetime-epsilon) is planned by zCDP, as a
    ledger registered with --accounting zcdp composes: the text said "and
    --ledger to charge it", and a ledger registered with the default
    accounting (basic composition) refuses the plan's second week, whose
    delta takes the total past the lifetime delta. The text says so now."""
    rc, out, err = run(capsys, "forecast", *PERSON, "--periods", "52", "--lifetime-epsilon", "2")
    assert rc == 0, err
    (line,) = [" ".join(x.split()) for x in out.splitlines() if x.startswith("periods :")]
    each = float(line.split("epsilon=")[2].split(" ")[0])
    assert "'dpdbscan ledger init ... --accounting zcdp'" in line and "and --ledger to charge it" not in line
    # what it says of the default accounting holds: the second release is refused
    path = tmp_path / "basic.ledger"
    Ledger.create(path, "cabs", 2.0, 1e-6, unit="cab")
    _charge(Ledger(path, "cabs"), each)
    with pytest.raises(BudgetExceeded):
        _charge(Ledger(path, "cabs"), each)
    # a plan in a ledger says nothing of the sort: its accounting is the ledger's
    zpath = tmp_path / "zcdp.ledger"
    Ledger.create(zpath, "cabs", 2.0, 1e-6, unit="cab", accounting="zcdp")
    rc, out, err = run(capsys, "forecast", *PERSON, "--periods", "52", "--ledger", zpath, "--dataset", "cabs")
    assert (
        rc == 0 and "--accounting zcdp'" not in out and "and --ledger to charge it" in " ".join(out.split())
    )


def test_a_plan_refused_by_a_basic_ledger_s_deltas_gives_the_way_out(tmp_path, capsys):
    """Refused because the N deltas add up under basic composition, the
    error names the delta that fits and the zCDP accounting, and the delta
    it names does fit."""
    path = tmp_path / "budget.ledger"
    Ledger.create(path, "cabs", 2.0, 1e-6, unit="cab")
    rc, _, err = run(capsys, "forecast", *PERSON, "--periods", "52", "--ledger", path, "--dataset", "cabs")
    text = " ".join(err.split())
    assert rc == 2 and "no release of these options fits 52 times" in text
    assert "--accounting zcdp" in text
    delta = text.split("give each release --delta ")[1].split(" ")[0]
    small = [a if a != "1e-6" else delta for a in PERSON]
    plan = _plan(capsys, *small, "--periods", "52", "--ledger", path, "--dataset", "cabs")["per_period"]
    assert plan["epsilon_per_period"] > 0 and plan["total"]["method"] == "basic composition"
    assert Ledger(path, "cabs").account().releases == []
