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
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..exceptions import PrivacyLeakWarning, UtilityWarning, WeakPrivacyWarning

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
    """A public parameter: what it accepts and its name on the command line."""

    constraints: tuple
    cli: str | None = None
    #: TypeError when the value has the wrong type altogether (scikit-learn's
    #: convention); ValueError when it has the right type but a bad value.
    numeric: bool = True


_PROB = Real(0, 1, low_open=True, high_open=True)

#: Every public parameter of :class:`~dpdbscan.DPDBSCAN` (and the CLI's fit).
PARAMETERS: dict[str, Param] = {
    "eps": Param((Options("auto"), Real(0, low_open=True)), "--eps"),
    "min_samples": Param((Options("auto"), Integer(1)), "--min-samples"),
    "epsilon": Param((Real(0, MAX_EPSILON, low_open=True),), "--epsilon"),
    "bounds": Param((), "--bounds"),  # checked by check_bounds (needs the dimension)
    "random_state": Param((NoneValue(), RandomState()), "--seed"),
    "eta": Param((Real(0, 4, low_open=True),), "--eta"),
    "beta": Param((_PROB,), "--beta"),
    "histogram": Param((Options("auto", "dense", "sparse", "stability"),), "--histogram", False),
    "delta": Param((Real(0, MAX_DELTA, high_open=True),), "--delta"),
    "noise": Param((Options("discrete", "laplace"),), "--noise", False),
    "theta": Param((NoneValue(), Real(0)), "--theta"),
    "max_empty_cells": Param((Real(0, low_open=True),), None),
    "max_cells": Param((Integer(MIN_AUTO_CELLS, MAX_AUTO_CELLS),), "--max-cells"),
    "n_expected": Param((NoneValue(), Real(0, low_open=True)), "--n-expected"),
    "raise_min_samples": Param((Boolean(),), None, False),
    "subcells": Param((Options("auto"), Integer(1)), "--subcells", False),
    "margin": Param((Options("auto", "chernoff", "paper", "pointwise"), Real(0)), "--margin", False),
    "core": Param((Options("density", "bound"),), "--core", False),
    "border": Param((Options("auto"), Real(0)), "--border", False),
    "accountant": Param(
        (NoneValue(), HasMethods("check", "spend", what="an accountant with check() and spend()")),
        None,
        False,
    ),
    "backend": Param(
        (NoneValue(), Options("numpy", "dask"), HasMethods("count", what="a backend with count()")),
        "--backend",
        False,
    ),
}


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


def validate(values: dict[str, Any], *, cli: bool = False, stacklevel: int = 2) -> dict[str, Any]:
    """Check ``values`` (a subset of :data:`PARAMETERS`) and the rules that tie
    them together; returns the normalised values. Reads no data.

    An epsilon above :data:`WEAK_EPSILON` is accepted with one
    :class:`~dpdbscan.exceptions.WeakPrivacyWarning` (public: it reads the
    parameter only); ``stacklevel`` points it at the caller's caller.
    """
    out = {name: check_param(name, v, cli=cli) for name, v in values.items() if name != "bounds"}
    opt = (lambda n: PARAMETERS[n].cli) if cli else (lambda n: n)
    epsilon = out.get("epsilon")
    if epsilon is not None and epsilon > WEAK_EPSILON:
        shown = f"--epsilon {epsilon:g}" if cli else f"epsilon={epsilon:g}"
        warnings.warn(
            f"{shown} gives little privacy protection: adding or removing one row may change "
            f"the probability of a release by a factor of up to exp({epsilon:g}). Above about "
            f"{WEAK_EPSILON:g} differential privacy says little; usual values are 0.1 to 2.",
            WeakPrivacyWarning,
            stacklevel=stacklevel + 1,
        )
    hist, delta = out.get("histogram"), out.get("delta", 0.0)
    if hist == "stability" and not delta:
        raise ValueError(f"{opt('histogram')} stability needs {opt('delta')} > 0, got delta=0")
    if hist in ("dense", "sparse") and delta:
        raise ValueError(
            f"{opt('delta')} is used only by the stability histogram (or by histogram 'auto', which "
            f"picks it for large grids); the {hist} histogram is pure epsilon-DP: drop "
            f"{opt('delta')} or choose the stability histogram"
        )
    core, rule = out.get("core", "density"), out.get("margin", "auto")
    if core == "bound" and rule not in ("auto", "chernoff", "paper"):
        raise ValueError(
            f"{opt('margin')} {rule!r} is a rule of the density test; the bound test "
            "takes 'auto', 'chernoff' or 'paper'"
        )
    if core == "density" and rule == "paper":
        raise ValueError(
            f"{opt('margin')} 'paper' is the bound test's Gamma; with the density test "
            "use 'auto' (1 sigma) or a number c of sigmas"
        )
    if core == "density" and out.get("raise_min_samples") is False:
        what = "--theoretical-threshold" if cli else "raise_min_samples=False"
        other = "--core bound" if cli else "core='bound'"
        raise ValueError(
            f"{what} is the bound test's theoretical rule; the density test has no "
            f"such rule: drop it or choose {other}"
        )
    if "auto" in (out.get("eps"), out.get("min_samples")) and core == "bound":
        raise ValueError(
            f"the automatic mode ({opt('eps')} or {opt('min_samples')} 'auto') "
            f"chooses from the density test's spans; drop {opt('core')} bound"
        )
    if out.get("theta") is not None and hist in ("dense", "stability"):
        raise ValueError(f"{opt('theta')} is used only by the sparse histogram, not by the {hist} one")
    return out


# --------------------------------------------------------------------------- #
# the individual checks the rest of the package uses


def check_epsilon(epsilon: Any) -> float:
    return check_param("epsilon", epsilon)


def check_delta(delta: Any) -> float:
    return check_param("delta", delta)


def check_min_samples(min_samples: Any) -> int:
    """MinPts as a number (an integer >= 1; "auto" is the estimator's, not a value)."""
    value = check_param("min_samples", min_samples)
    if value == "auto":
        raise ValueError("min_samples='auto' chooses MinPts when fitting; here give a number")
    return value


def check_positive(
    name: str, value: Any, *, upper: float | None = None, upper_inclusive: bool = True
) -> float:
    """A positive finite real number (optionally with an upper bound)."""
    c = Real(0, upper, low_open=True, high_open=not upper_inclusive)
    if c.accepts(value):
        return float(value)
    exc = TypeError if isinstance(value, (bool, str)) or not isinstance(value, numbers.Real) else ValueError
    raise exc(f"{name} must be {c.text}, got {name}={_plain(value, True)}")


def check_array(X: Any, name: str = "X") -> np.ndarray:
    """A 2-D float64 array of real numbers (NaN/inf allowed here; the
    mechanism drops such rows). Refuses sparse matrices, complex and
    non-numeric data with messages in scikit-learn's words."""
    if isinstance(X, np.ndarray) and X.dtype.kind in "iuf" and X.ndim == 2 and X.shape[1]:
        return np.asarray(X, dtype=np.float64)
    if hasattr(X, "toarray") or hasattr(X, "tocsr") or type(X).__module__.startswith("scipy.sparse"):
        raise TypeError(
            f"{name} is a sparse matrix, which is not supported: DP-DBSCAN needs dense "
            "coordinates; convert with X.toarray() if it fits in memory"
        )
    try:
        arr = np.asarray(X)
    except Exception as exc:  # ragged input and the like
        raise ValueError(f"{name} must be a 2-D numeric array: {type(exc).__name__}") from None
    if arr.dtype.kind == "c":
        raise ValueError(f"Complex data not supported: {name} must hold real numbers")
    if arr.dtype.kind == "O":
        # numpy's messages quote the offending value; ours name only its type
        try:
            arr = arr.astype(np.float64)
        except TypeError:
            raise TypeError(
                f"{name} must be numeric: float() argument must be a string or a "
                "real number, and an entry of X is neither"
            ) from None
        except ValueError:
            raise ValueError(
                f"{name} must be numeric: an entry of dtype object could not be converted to a number"
            ) from None
    elif arr.dtype.kind == "b" or arr.dtype.kind not in "iuf":
        raise ValueError(f"{name} must be numeric, got dtype {arr.dtype}")
    if arr.ndim != 2:
        hint = (
            (
                " Reshape your data either using array.reshape(-1, 1) if your data has a single "
                "feature or array.reshape(1, -1) if it contains a single sample."
            )
            if arr.ndim == 1
            else ""
        )
        raise ValueError(
            f"{name} must be 2-D of shape (n_samples, n_features), got an array of shape {arr.shape}.{hint}"
        )
    if arr.shape[1] == 0:
        raise ValueError(
            f"Found array with 0 feature(s) (shape={arr.shape}) while a minimum of 1 is required."
        )
    return np.asarray(arr, dtype=np.float64)


def check_bounds(bounds: Any, n_features: int | None) -> tuple[np.ndarray, np.ndarray]:
    """``(lower, upper)`` with scalars or per-feature sequences -> two (d,) arrays."""
    if not isinstance(bounds, (tuple, list)) or len(bounds) != 2:
        raise ValueError(f"bounds must be a pair (lower, upper), got bounds={bounds!r}")
    try:
        lower = np.atleast_1d(np.asarray(bounds[0], dtype=np.float64))
        upper = np.atleast_1d(np.asarray(bounds[1], dtype=np.float64))
    except (TypeError, ValueError):
        raise ValueError(f"bounds must hold numbers, got bounds={bounds!r}") from None
    if lower.ndim != 1 or upper.ndim != 1:
        raise ValueError(f"bounds must be scalars or 1-D sequences, got bounds={bounds!r}")
    d = n_features if n_features is not None else max(lower.size, upper.size)
    if lower.size == 1 and d > 1:
        lower = np.repeat(lower, d)
    if upper.size == 1 and d > 1:
        upper = np.repeat(upper, d)
    if lower.size != d or upper.size != d:
        raise ValueError(
            f"bounds must have one value per feature ({d}), got {lower.size} lower and "
            f"{upper.size} upper values: bounds={bounds!r}"
        )
    if not (np.all(np.isfinite(lower)) and np.all(np.isfinite(upper))):
        raise ValueError(f"bounds must be finite, got bounds={bounds!r}")
    if np.any(lower >= upper):
        bad = int(np.flatnonzero(lower >= upper)[0])
        raise ValueError(
            f"bounds must have lower < upper in every feature; feature {bad} has "
            f"lower={lower[bad]:g} >= upper={upper[bad]:g}"
        )
    return lower, upper


#: How close to mean 0 and standard deviation 1 every column must be for
#: :func:`standardised_note` to call the data standardised.
STANDARDISED_TOL = 1e-6


def standardised_note(X: np.ndarray, option: str = "bounds") -> str | None:
    """A warning text when every column of ``X`` has mean 0 and standard
    deviation 1 to within :data:`STANDARDISED_TOL` over its finite rows, else
    None. That is the mark of a scaler fitted on the private data (such as
    scikit-learn's ``StandardScaler`` in a pipeline), whose mean and standard
    deviation then place every point on the grid: one row moves every other
    row's cell and the DP guarantee is void.

    This reads the private data: callers say it only after the release is
    made, and it changes nothing in the release. It is a private note for the
    data holder, like the counts of rows read and clipped (docs/privacy.md,
    section 6). ``option`` names the bounds as the caller's user knows them.
    """
    finite = X[np.all(np.isfinite(X), axis=1)] if X.ndim == 2 else X[:0]
    if finite.shape[0] < 2:
        return None
    with np.errstate(over="ignore", invalid="ignore"):
        # coordinates near 1e308 overflow the sums; such data are not
        # standardised, and the overflow must not become a warning of its own
        mean, std = finite.mean(axis=0), finite.std(axis=0)
    if not (np.all(np.abs(mean) <= STANDARDISED_TOL) and np.all(np.abs(std - 1.0) <= STANDARDISED_TOL)):
        return None
    return (
        "every column of the data has mean 0 and standard deviation 1: were they standardised "
        "(e.g. by StandardScaler in a pipeline)? A scaler fitted on the private data moves "
        "every point with each row, so the release has no DP guarantee. Scale by public "
        f"constants instead, or fit the raw data with public {option} in its own units "
        "(docs/privacy.md)."
    )


def bounds_from_data(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Data bounds, with the warning that this leaks (diffprivlib's convention)."""
    warnings.warn(
        "bounds were not given, so they are computed from the data. This leaks "
        "privacy and voids the DP guarantee: pass public bounds=(lower, upper).",
        PrivacyLeakWarning,
        stacklevel=3,
    )
    finite = X[np.all(np.isfinite(X), axis=1)]
    if finite.shape[0] == 0:
        raise ValueError("bounds cannot be inferred from data with no finite rows; pass bounds")
    lower, upper = finite.min(axis=0), finite.max(axis=0)
    span = np.where(upper > lower, upper - lower, 1.0)
    return lower, np.where(upper > lower, upper, lower + span)


__all__ = [
    "PARAMETERS",
    "Param",
    "validate",
    "check_param",
    "check_epsilon",
    "check_delta",
    "check_min_samples",
    "check_positive",
    "check_array",
    "check_bounds",
    "bounds_from_data",
    "PrivacyLeakWarning",
    "UtilityWarning",
    "MAX_EPSILON",
    "WEAK_EPSILON",
    "standardised_note",
    "MAX_DELTA",
]
