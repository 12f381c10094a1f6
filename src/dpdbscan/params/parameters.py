"""The parameters of dpdbscan in one declarative table, and input checks.

:data:`PARAMETERS` lists every public parameter of the estimator and the
command line with what it accepts. :func:`validate` checks a set of values
against it (and the rules that tie parameters together) before any file is
read or any budget is spent; the estimator and the CLI both call it, so the
same bad value gives the same message through either door. Messages name the
parameter (``min_samples=0`` for the API, ``--min-samples 0`` for the CLI) and
the value, never a data value.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..exceptions import WeakPrivacyWarning

#: Largest epsilon accepted. Far beyond it already the discrete Laplace noise
#: is 0 with probability 1 - 2 exp(-epsilon): no privacy is left to account for.
MAX_EPSILON = 1e4
#: Above this epsilon a release is accepted with a WeakPrivacyWarning: one row
#: may change the probability of any outcome by a factor of up to e^10 ~ 22,000.
WEAK_EPSILON = 10.0
#: delta must be below this. delta is the probability that the stability
#: histogram publishes a cell holding a single record; useful values are far
#: below 1/n (say 1e-6 to 1e-9), and 0.01 is already a leak, not a parameter.
MAX_DELTA = 0.01
#: The automatic mode's public cap on the cells of its one release (eps="auto").
MIN_AUTO_CELLS = 1 << 10
MAX_AUTO_CELLS = 1 << 26


# --------------------------------------------------------------------------- #
# constraints


class Constraint:
    """One kind of acceptable value; ``check`` returns the normalised value."""

    text = ""

    def accepts(self, value: Any) -> bool:
        raise NotImplementedError

    def type_ok(self, value: Any) -> bool:
        """The value has the right type, whatever its range."""
        return self.accepts(value)

    def normalise(self, value: Any) -> Any:
        return value


class Real(Constraint):
    """A finite real number in an interval (``bool`` and strings refused)."""

    def __init__(
        self,
        low: float | None = None,
        high: float | None = None,
        *,
        low_open: bool = False,
        high_open: bool = False,
    ) -> None:
        self.low, self.high, self.low_open, self.high_open = low, high, low_open, high_open
        parts = []
        if low is not None:
            parts.append(f"{'>' if low_open else '>='} {low:g}")
        if high is not None:
            parts.append(f"{'<' if high_open else '<='} {high:g}")
        self.text = "a finite number" + (" " + " and ".join(parts) if parts else "")

    def type_ok(self, value: Any) -> bool:
        return isinstance(value, numbers.Real) and not isinstance(value, bool)

    def accepts(self, value: Any) -> bool:
        if not self.type_ok(value):
            return False
        v = float(value)
        if not math.isfinite(v):
            return False
        if self.low is not None and (v <= self.low if self.low_open else v < self.low):
            return False
        return not (self.high is not None and (v >= self.high if self.high_open else v > self.high))

    def normalise(self, value: Any) -> Any:
        return float(value)


class Integer(Constraint):
    """An integer (or an integral float such as 20.0) in an interval."""

    def __init__(self, low: int | None = None, high: int | None = None) -> None:
        self.low, self.high = low, high
        parts = ([f">= {low}"] if low is not None else []) + ([f"<= {high}"] if high is not None else [])
        self.text = "an integer" + (" " + " and ".join(parts) if parts else "")

    def type_ok(self, value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            return False
        return isinstance(value, numbers.Integral) or (
            math.isfinite(float(value)) and float(value).is_integer()
        )

    def accepts(self, value: Any) -> bool:
        if not self.type_ok(value):
            return False
        v = int(value)
        return (self.low is None or v >= self.low) and (self.high is None or v <= self.high)

    def normalise(self, value: Any) -> Any:
        return int(value)


class Options(Constraint):
    """One of a few strings."""

    def __init__(self, *values: str) -> None:
        self.values = values
        self.text = "one of " + ", ".join(repr(v) for v in values)

    def accepts(self, value: Any) -> bool:
        return isinstance(value, str) and value in self.values


class Name(Constraint):
    """A name from a registry that a later stage checks (the core tests)."""

    text = "a name"

    def accepts(self, value: Any) -> bool:
        return isinstance(value, str)


class Boolean(Constraint):
    text = "True or False"

    def accepts(self, value: Any) -> bool:
        return isinstance(value, (bool, np.bool_))

    def normalise(self, value: Any) -> Any:
        return bool(value)


class NoneValue(Constraint):
    text = "None"

    def accepts(self, value: Any) -> bool:
        return value is None


class HasMethods(Constraint):
    """An object with the given methods (duck-typed interfaces)."""

    def __init__(self, *methods: str, what: str) -> None:
        self.methods = methods
        self.text = what

    def accepts(self, value: Any) -> bool:
        # a str has a count() method too, and is never an interface
        return not isinstance(value, (str, bytes)) and all(
            callable(getattr(value, m, None)) for m in self.methods
        )


class RandomState(Constraint):
    text = "an int or a numpy Generator"

    def accepts(self, value: Any) -> bool:
        return isinstance(value, (int, np.integer, np.random.Generator)) and not isinstance(value, bool)


@dataclass(frozen=True)
class Param:
    """A public parameter: its default, what it accepts and its name on the
    command line. The only place a default of dpdbscan lives."""

    default: Any
    constraints: tuple
    cli: str | None
    #: TypeError when the value has the wrong type altogether (scikit-learn's
    #: convention); ValueError when it has the right type but a bad value.
    numeric: bool = True


_PROB = Real(0, 1, low_open=True, high_open=True)
_NO_CLI = None

#: Every public parameter of :class:`~dpdbscan.DPDBSCAN` (and the CLI's fit),
#: with its default: the estimator's signature and the CLI's options take
#: their defaults from here (tests/spec/test_specs.py checks it).
PARAMETERS: dict[str, Param] = {
    "eps": Param(0.5, (Options("auto"), Real(0, low_open=True)), "--eps"),
    "min_samples": Param(5, (Options("auto"), Integer(1)), "--min-samples"),
    "epsilon": Param(1.0, (Real(0, MAX_EPSILON, low_open=True),), "--epsilon"),
    "bounds": Param(None, (), "--bounds"),  # checked by check_bounds (needs the dimension)
    "random_state": Param(None, (NoneValue(), RandomState()), "--seed"),
    # "auto": the grid at eta 4, or where the coarse release of 7-D/8-D acts
    # (plan.coarserelease) at eta 8; a number (4 included) is the grid asked for
    "eta": Param("auto", (Options("auto"), Real(0, 4, low_open=True)), "--eta"),
    "beta": Param(0.1, (_PROB,), "--beta"),
    "histogram": Param("auto", (Options("auto", "dense", "sparse", "stability"),), "--histogram", False),
    "delta": Param(0.0, (Real(0, MAX_DELTA, high_open=True),), "--delta"),
    # "auto": the exact discrete Laplace when each row is its own unit, the
    # exact discrete Gaussian with privacy units (plan.resolve)
    "noise": Param("auto", (Options("auto", "discrete", "laplace", "gaussian"),), "--noise", False),
    "theta": Param(None, (NoneValue(), Real(0)), "--theta"),
    "max_empty_cells": Param(float(2**20), (Real(0, low_open=True),), _NO_CLI),
    "max_cells": Param(2**20, (Integer(MIN_AUTO_CELLS, MAX_AUTO_CELLS),), "--max-cells"),
    "n_expected": Param(None, (NoneValue(), Real(0, low_open=True)), "--n-expected"),
    # the automatic mode (min_samples="auto"): each cluster at its own level of
    # the release's density tree (and, "levels", at its own eps where a larger
    # candidate's span holds it, post.ownscale; "one-eps": every span at the
    # chosen eps), or one flat cut (post.levelsearch, post.auto)
    "selection": Param("levels", (Options("levels", "one-eps", "flat"),), "--selection", False),
    "raise_min_samples": Param(True, (Boolean(),), _NO_CLI, False),
    "subcells": Param("auto", (Options("auto"), Integer(1)), "--subcells", False),
    "margin": Param("auto", (Options("auto", "chernoff", "paper", "pointwise"), Real(0)), "--margin", False),
    # one of the core tests' registry (dpdbscan.post.coretests), checked by plan.resolve
    "core": Param("density", (Name(),), "--core", False),
    "border": Param("auto", (Options("auto"), Real(0)), "--border", False),
    # contribution bounds per privacy unit (fit(X, units=...)); "auto": k
    # chosen privately by the release (plan.units, release.unitchoice)
    "max_cells_per_unit": Param(None, (NoneValue(), Options("auto"), Integer(1)), "--max-cells-per-unit"),
    "max_points_per_cell": Param(1, (Integer(1),), "--max-points-per-cell"),
    # which k cells a unit with more keeps: its busiest (most points first) or k at random
    "cell_choice": Param("busiest", (Options("busiest", "uniform"),), "--cell-choice", False),
    # each unit's stops or trip ends instead of its rows (dpdbscan.traces), before
    # bounding; on the command line --stops RADIUS DURATION or --trip-ends COLUMN
    "events": Param(
        None,
        (NoneValue(), HasMethods("rows", "resolved", what="dpdbscan.Stops(...) or dpdbscan.TripEnds(...)")),
        _NO_CLI,
        False,
    ),
    # a point outside the public box: clipped onto its edge, or dropped, each row
    # alone, before the events and the contribution bound (prepare.clipping.drop_outside_step);
    # on the command line None stands for not given (sweep --model refuses it given)
    "outside": Param("clip", (Options("clip", "drop"),), "--outside", False),
    "accountant": Param(
        None,
        (NoneValue(), HasMethods("check", "spend", what="an accountant with check() and spend()")),
        _NO_CLI,
        False,
    ),
    # a lifetime budget in a ledger file (dpdbscan.ledger.Ledger), charged before the release
    "ledger": Param(
        None,
        (NoneValue(), HasMethods("reserve", "account", what="a dpdbscan.ledger.Ledger")),
        _NO_CLI,
        False,
    ),
    "backend": Param(
        "numpy",
        (NoneValue(), Options("numpy", "dask"), HasMethods("count", what="a backend with count()")),
        "--backend",
        False,
    ),
}


#: The grid parameter eta="auto" stands for before any rule widens the cells:
#: the paper's eta = 4 (the largest a fit accepts).
AUTO_ETA = 4.0


def grid_eta(eta: Any) -> float:
    """The eta of the user's grid: :data:`AUTO_ETA` for ``"auto"``, else the
    number given. Public: the parameter only (the coarse release of 7-D/8-D
    may widen an ``"auto"`` grid's cells later, :mod:`dpdbscan.plan.coarserelease`)."""
    return AUTO_ETA if eta == "auto" else float(eta)


def default(name: str) -> Any:
    """The default of a parameter (from :data:`PARAMETERS`)."""
    return PARAMETERS[name].default


def _describe(name: str, param: Param) -> str:
    return " or ".join(c.text for c in param.constraints)


def check_param(name: str, value: Any, *, cli: bool = False) -> Any:
    """``value`` normalised if :data:`PARAMETERS` accepts it for ``name``.

    Raises TypeError (wrong type for a number) or ValueError naming the
    parameter and the value.
    """
    param = PARAMETERS[name]
    for c in param.constraints:
        if c.accepts(value):
            return c.normalise(value)
    shown = f"{param.cli} {_plain(value)}" if cli and param.cli else f"{name}={_plain(value, True)}"
    label = param.cli if cli and param.cli else name
    wrong_type = param.numeric and not any(c.type_ok(value) for c in param.constraints)
    exc = TypeError if wrong_type and not cli else ValueError
    raise exc(f"{label} must be {_describe(name, param)}, got {shown}")


def _plain(value, api: bool = False) -> str:
    """A value as the user wrote it: 700.0 not np.float64(700.0)."""
    if isinstance(value, (np.floating, np.integer)):
        value = value.item()
    return repr(value) if api or isinstance(value, str) else f"{value}"


def protected_one(p: dict[str, Any], unit_name: str | None = None) -> str:
    """What one neighbour adds, in words: "one row" at event level, "one
    unit (one cab: all its rows)" at person level (``unit_name``: the unit
    column's name, public; "cab" in the example)."""
    if p.get("max_cells_per_unit") is None:
        return "one row"
    who = f"one {unit_name}" if unit_name else "one person, device or account"
    return f"one unit ({who}: all its rows)"


def validate(
    values: dict[str, Any], *, cli: bool = False, stacklevel: int = 2, unit_name: str | None = None
) -> dict[str, Any]:
    """Check ``values`` (any of :data:`PARAMETERS` but ``bounds``) and the
    rules that tie them together; returns every parameter normalised, the
    ones not given at their table default. Reads no data. The core test's
    own rules are checked by :func:`dpdbscan.plan.resolve.validated`.

    An epsilon above :data:`WEAK_EPSILON` is accepted with one
    :class:`~dpdbscan.exceptions.WeakPrivacyWarning` (public: it reads the
    parameter only); ``stacklevel`` points it at the caller's caller. It
    names what is protected: one row, or at person level (a contribution
    bound) one unit, by ``unit_name`` (the unit column's public name) when
    it is known.
    """
    given = {name: check_param(name, v, cli=cli) for name, v in values.items() if name != "bounds"}
    out = {name: param.default for name, param in PARAMETERS.items() if name != "bounds"}
    out.update(given)
    opt = namer(cli)
    epsilon = out["epsilon"]
    if epsilon > WEAK_EPSILON:
        shown = f"--epsilon {epsilon:g}" if cli else f"epsilon={epsilon:g}"
        one = protected_one(out, unit_name)
        warnings.warn(
            f"{shown} gives little privacy protection: adding or removing {one} may change "
            f"the probability of a release by a factor of up to exp({epsilon:g}). Above about "
            f"{WEAK_EPSILON:g} differential privacy says little; usual values are 0.1 to 2.",
            WeakPrivacyWarning,
            stacklevel=stacklevel + 1,
        )
    hist, delta, noise = out["histogram"], out["delta"], out["noise"]
    if hist == "stability" and not delta:
        raise ValueError(f"{opt('histogram')} stability needs {opt('delta')} > 0, got delta=0")
    if noise == "gaussian" and not delta:
        raise ValueError(
            f"{opt('noise')} gaussian gives (epsilon, delta)-DP: it needs {opt('delta')} > 0 "
            f"(say 1e-6, far below one over the number of people), got delta=0"
        )
    if out["theta"] is not None and hist in ("dense", "stability"):
        raise ValueError(f"{opt('theta')} is used only by the sparse histogram, not by the {hist} one")
    if out["margin"] == "paper" and noise == "gaussian":
        raise ValueError(
            f"{opt('margin')} paper is the paper's bound for Laplace noise; with {opt('noise')} "
            "gaussian use 'chernoff' (or leave the margin to 'auto')"
        )
    return out


def check_units(p: dict[str, Any], units: bool, *, cli: bool = False) -> None:
    """The rules of the privacy unit, once it is known whether the fit has
    one (``units``: ids were given; public, the user's choice). Reads no data.

    With units, ``max_cells_per_unit`` is required (a number or "auto"):
    there is no default that protects a person without losing their data.
    Without units the contribution bounds mean nothing, and setting one is
    refused rather than ignored, so that nobody believes a release protects
    people when it protects rows."""
    opt = namer(cli)
    k = p["max_cells_per_unit"]
    if p.get("events") is not None and not units:
        what, where = ("--stops and --trip-ends", "--unit COLUMN") if cli else ("events=", "units= to fit()")
        raise ValueError(
            f"{what} turn each unit's trace into its stops or trip ends, which needs a privacy unit "
            f"({where}): with each row its own unit, one row can split or merge a stop, so no "
            "row-level guarantee covers them. Pass the unit (a cab, a person) and its bounds"
        )
    missing = []
    if units and k is None:
        missing.append(
            f"{opt('max_cells_per_unit')} is required: the number of cells each "
            f"unit may add to (a number, or 'auto' to choose it privately). It bounds what one "
            f"person can change; {opt('max_points_per_cell')} (default 1) bounds each of those counts"
        )
    if units and p["noise"] == "auto" and not p["delta"]:
        missing.append(
            f"the noise is Gaussian ({opt('noise')} auto), which needs "
            f"{opt('delta')} > 0: say 1e-6, far below one over the number of people. (Laplace "
            f"noise, pure epsilon-DP, grows with {opt('max_cells_per_unit')} and rarely finds a "
            f"cluster at person level; choose it with {opt('noise')} discrete if you must.)"
        )
    if missing:
        # every missing requirement at once, so that a newcomer fixes them in one go
        raise ValueError("with privacy units, " + "; and ".join(missing))
    if units and k == "auto" and p["noise"] in ("discrete", "laplace"):
        raise ValueError(
            f"{opt('max_cells_per_unit')} auto chooses k for Gaussian noise, whose noise grows as "
            f"sqrt(k): with {opt('noise')} {p['noise']} the noise grows as k and the smallest k "
            f"would always win. Use {opt('noise')} gaussian (or auto), or give "
            f"{opt('max_cells_per_unit')} a number"
        )
    hist, delta, noise = p["histogram"], p["delta"], p["noise"]
    gaussian = noise == "gaussian" or (noise == "auto" and units)
    if hist in ("dense", "sparse") and delta and not gaussian:
        raise ValueError(
            f"{opt('delta')} is used only by Gaussian noise (person-level releases), by the stability "
            f"histogram, or by histogram 'auto' (which picks the stability histogram for large "
            f"grids); the {hist} histogram with Laplace noise is pure epsilon-DP: drop "
            f"{opt('delta')}, or choose {opt('noise')} gaussian or the stability histogram"
        )
    if not units:
        given = [n for n in ("max_cells_per_unit",) if p[n] is not None]
        for n in ("max_points_per_cell", "cell_choice"):
            if p.get(n, PARAMETERS[n].default) != PARAMETERS[n].default:
                given.append(n)
        if given:
            what = " and ".join(opt(n) for n in given)
            where = "--unit COLUMN" if cli else "units=... to fit() (one id per row)"
            raise ValueError(
                f"{what} bound{'s' if len(given) == 1 else ''} each privacy unit's contribution, but "
                f"no units were given: pass {where}, or drop {what} (each row is then its own unit)"
            )


def namer(cli: bool) -> Callable[[str], str]:
    """How a message names a parameter: its option (``--min-samples``) or its name."""
    if cli:
        return lambda n: PARAMETERS[n].cli or n
    return lambda n: n


__all__ = [
    "PARAMETERS",
    "Param",
    "AUTO_ETA",
    "default",
    "grid_eta",
    "namer",
    "validate",
    "check_param",
    "check_units",
    "MAX_EPSILON",
    "MAX_DELTA",
    "WEAK_EPSILON",
]
