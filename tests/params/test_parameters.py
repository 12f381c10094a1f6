"""One table of bad parameter values, through the API and the command line.

Every public parameter is checked by ``dpdbscan.params.parameters`` before any data are
read: the estimator raises with ``name=value`` in the message, the CLI prints
one ``dpdbscan fit: error:`` line naming the option, exits 2, and has not read the
input (the input path does not even exist here).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpdbscan import DPDBSCAN, UtilityWarning, WeakPrivacyWarning
from dpdbscan.cli import main
from dpdbscan.params.parameters import MAX_EPSILON, PARAMETERS, WEAK_EPSILON, check_param, check_units
from dpdbscan.plan.resolve import validated as validate

X = np.random.default_rng(0).random((50, 2))
BASE = dict(eps=0.1, min_samples=5, epsilon=1.0, bounds=(0, 1), random_state=None)
CLI_BASE = ["--eps", "0.1", "--min-samples", "5", "--bounds", "0", "1"]

# (parameter, value for the API, value for the CLI or None, exception of the API)
BAD = [
    ("epsilon", 0, "0", ValueError),
    ("epsilon", -1.0, "-1", ValueError),
    ("epsilon", math.nan, "nan", ValueError),
    ("epsilon", math.inf, "inf", ValueError),
    ("epsilon", "1", None, TypeError),
    ("eps", 0, "0", ValueError),
    ("eps", -0.5, "-0.5", ValueError),
    ("min_samples", 0, "0", ValueError),
    ("min_samples", 2.5, None, TypeError),
    ("min_samples", "5", None, TypeError),
    ("eta", 5, "5", ValueError),
    ("eta", 0, "0", ValueError),
    ("beta", 1.0, "1", ValueError),
    ("beta", 0, "0", ValueError),
    ("delta", 1.5, "1.5", ValueError),
    ("delta", 0.5, "0.5", ValueError),  # issue 15: accepted without comment before
    ("delta", -0.1, "-0.1", ValueError),
    ("epsilon", 1e5, "1e5", ValueError),
    ("histogram", "magic", "magic", ValueError),
    ("noise", "gauss", "gauss", ValueError),
    ("random_state", "seed", None, TypeError),
    ("subcells", 0, "0", ValueError),
    ("subcells", "many", "many", ValueError),
    ("subcells", 1.5, "1.5", ValueError),
    ("margin", "tight", "tight", ValueError),
    ("border", -0.1, "-0.1", ValueError),
    ("border", "wide", "wide", ValueError),
    ("theta", -1.0, "-1", ValueError),
    ("theta", math.inf, "inf", ValueError),
    ("max_empty_cells", 0, None, ValueError),
    ("raise_min_samples", "yes", None, ValueError),
    ("accountant", "mine", None, ValueError),
    ("ledger", "budget.ledger", None, ValueError),
    ("backend", "spark", "spark", ValueError),
    ("outside", "trim", "trim", ValueError),
    ("outside", None, None, ValueError),
    # issue 13: "auto" is the one word eps and min_samples take; the automatic mode's cap
    ("eps", "automatic", None, TypeError),
    ("min_samples", "many", "many", TypeError),
    ("min_samples", "Auto", "Auto", TypeError),
    ("max_cells", 10, "10", ValueError),
    ("max_cells", 2.5, "2.5", TypeError),
    ("max_cells", 1 << 40, str(1 << 40), ValueError),
]
IDS = [f"{name}={value!r}" for name, value, _, _ in BAD]


@pytest.mark.parametrize("name,value,cli_value,exc", BAD, ids=IDS)
def test_api_names_parameter_and_value(name, value, cli_value, exc):
    with pytest.raises(exc) as info:
        DPDBSCAN(**{**BASE, name: value}).fit(X)
    assert f"{name}={value!r}" in str(info.value)


@pytest.mark.parametrize(
    "name,value,cli_value,exc",
    [b for b in BAD if b[2] is not None],
    ids=[i for i, b in zip(IDS, BAD) if b[2] is not None],
)
def test_cli_names_option_and_refuses_before_reading(capsys, tmp_path, name, value, cli_value, exc):
    option = PARAMETERS[name].cli
    missing = tmp_path / "never-read.csv"
    rc = main(["fit", str(missing), *CLI_BASE, option, cli_value, "--out-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dpdbscan fit: error:"), err
    assert option in lines[0], lines[0]
    assert "not found" not in lines[0]  # refused before the file was looked at


def test_every_parameter_of_the_estimator_is_in_the_table():
    sig = set(DPDBSCAN().get_params())
    assert sig == set(PARAMETERS)


@pytest.mark.parametrize(
    "values,match",
    [
        ({"histogram": "stability", "delta": 0.0}, "needs delta > 0"),
        ({"histogram": "dense", "delta": 1e-6}, "used only by Gaussian noise .*, by the stability histogram"),
        (
            {"histogram": "sparse", "delta": 1e-6},
            "used only by Gaussian noise .*, by the stability histogram",
        ),
        ({"noise": "gaussian"}, "gaussian gives .* needs delta > 0"),
        ({"noise": "gaussian", "delta": 1e-6, "margin": "paper"}, "Laplace noise"),
        ({"max_cells_per_unit": 10}, "no units were given"),
        ({"histogram": "dense", "theta": 3.0}, "only by the sparse histogram"),
        ({"eps": "auto", "core": "bound"}, "automatic mode"),
        ({"min_samples": "auto", "core": "bound"}, "automatic mode"),
    ],
)
def test_rules_that_tie_parameters(values, match):
    with pytest.raises(ValueError, match=match):
        check_units(validate(values), units=False)


def test_person_level_rules():
    with pytest.raises(ValueError, match="max_cells_per_unit is required"):
        check_units(validate({"delta": 1e-6}), units=True)
    with pytest.raises(ValueError, match="Gaussian .* needs delta > 0"):
        check_units(validate({"max_cells_per_unit": 5}), units=True)
    # both missing: one message names both, so that one try fixes them
    with pytest.raises(ValueError, match="max_cells_per_unit is required.*; and .*needs delta > 0"):
        check_units(validate({}), units=True)
    # Gaussian noise (auto, with units) uses delta with any histogram
    for histogram in ("dense", "sparse", "stability"):
        check_units(validate({"max_cells_per_unit": 5, "delta": 1e-6, "histogram": histogram}), units=True)


def test_good_values_are_normalised():
    assert check_param("min_samples", 20.0) == 20 and isinstance(check_param("min_samples", 20.0), int)
    assert check_param("eps", "auto") == "auto" and check_param("min_samples", "auto") == "auto"
    assert check_param("max_cells", 2.0**20) == 1 << 20
    assert check_param("subcells", "auto") == "auto"
    assert check_param("epsilon", np.float64(2)) == 2.0
    assert check_param("backend", None) is None


@pytest.mark.parametrize("epsilon", [10.5, 1000.0, MAX_EPSILON])
def test_weak_epsilon_warns_once(epsilon):
    """Issue 19, finding 8: an epsilon above about 10 is accepted with one
    plain WeakPrivacyWarning from the parameter check, pointing at the
    caller's line; the fit itself raises no floating-point warning (the
    suite turns every warning into an error)."""
    with pytest.warns(Warning) as rec:  # the release may also carry a UtilityWarning
        DPDBSCAN(0.1, min_samples=5, epsilon=epsilon, bounds=(0, 1)).fit(X)
    weak = [w for w in rec if w.category is WeakPrivacyWarning]
    assert len(weak) == 1 and weak[0].filename == __file__
    assert f"epsilon={epsilon:g} gives little privacy protection" in str(weak[0].message)
    assert all(w.category in (WeakPrivacyWarning, UtilityWarning) for w in rec)
    with pytest.warns(WeakPrivacyWarning, match="--epsilon"):
        validate({"epsilon": epsilon}, cli=True)


def test_epsilon_up_to_ten_does_not_warn():
    assert WEAK_EPSILON == 10.0
    validate({"epsilon": WEAK_EPSILON})  # any warning would be an error here


def _weak_words(**fit_kw) -> str:
    with pytest.warns(Warning) as rec:
        DPDBSCAN(0.1, min_samples=5, epsilon=20, bounds=(0, 1), delta=1e-6, **fit_kw.pop("params", {})).fit(
            X, **fit_kw
        )
    (weak,) = [str(w.message) for w in rec if w.category is WeakPrivacyWarning]
    return weak


def test_weak_epsilon_names_what_is_protected():
    """At person level the warning speaks of one unit (one cab), not one row."""
    import pandas as pd

    assert "adding or removing one row" in _weak_words()
    person = {"max_cells_per_unit": 2, "max_points_per_cell": 1}
    cabs = pd.Series(np.arange(len(X)) % 7, name="cab")
    said = _weak_words(params=person, units=cabs, unit_name="cab")
    assert "one unit (one cab" in said and "one row" not in said
    # a Series' own name may be text of the data (round 18): never said
    said = _weak_words(params=person, units=cabs)
    assert "one unit (one person, device or account" in said and "cab" not in said
    said = _weak_words(params=person, units=list(range(len(X))))
    assert "one unit (" in said and "one row" not in said


def test_weak_epsilon_on_the_command_line_names_the_unit_column(tmp_path, capsys):
    from clirun import run

    path = tmp_path / "cabs.csv"
    rows = ["x,y,cab"] + [f"{0.5 + 0.001 * (i % 9)},0.5,{i % 11}" for i in range(300)]
    path.write_text("\n".join(rows) + "\n")
    code, _, err = run(
        capsys,
        "fit",
        str(path),
        "--header",
        "--columns",
        "x",
        "y",
        "--unit",
        "cab",
        "--max-cells-per-unit",
        "2",
        "--eps",
        "0.1",
        "--min-samples",
        "5",
        "--epsilon",
        "20",
        "--delta",
        "1e-6",
        "--bounds",
        "0",
        "0",
        "1",
        "1",
        "--seed",
        "1",
    )
    assert code == 0, err
    assert "one unit (one cab" in err and "removing one row" not in err
