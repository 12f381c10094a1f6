"""Argument checks with messages that name the parameter and its value."""

from __future__ import annotations

import math
import numbers
import warnings

import numpy as np


class PrivacyLeakWarning(UserWarning):
    """Something computed from the private data would steer the mechanism."""


class UtilityWarning(UserWarning):
    """The release carries little information (e.g. no span at all)."""


def check_epsilon(epsilon) -> float:
    if isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real):
        raise TypeError(f"epsilon must be a positive real number, got epsilon={epsilon!r}")
    e = float(epsilon)
    if not math.isfinite(e) or e <= 0:
        raise ValueError(f"epsilon must be positive and finite, got epsilon={epsilon!r}")
    return e


def check_delta(delta) -> float:
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real):
        raise TypeError(f"delta must be a real number in [0, 1), got delta={delta!r}")
    d = float(delta)
    if not (0 <= d < 1):
        raise ValueError(f"delta must be in [0, 1), got delta={delta!r}")
    return d


def check_positive(name: str, value, *, upper=None, upper_inclusive=True) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a positive real number, got {name}={value!r}")
    v = float(value)
    if not math.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be positive and finite, got {name}={value!r}")
    if upper is not None and (v > upper if upper_inclusive else v >= upper):
        bound = f"<= {upper}" if upper_inclusive else f"< {upper}"
        raise ValueError(f"{name} must be {bound}, got {name}={value!r}")
    return v


def check_min_samples(min_samples) -> int:
    if isinstance(min_samples, bool) or not isinstance(min_samples, numbers.Integral):
        if isinstance(min_samples, numbers.Real) and float(min_samples).is_integer():
            min_samples = int(min_samples)
        else:
            raise TypeError(f"min_samples must be an integer >= 1, got min_samples={min_samples!r}")
    if min_samples < 1:
        raise ValueError(f"min_samples must be an integer >= 1, got min_samples={min_samples!r}")
    return int(min_samples)


def check_array(X, name: str = "X") -> np.ndarray:
    """A 2-D float64 array of numbers (NaN/inf allowed here; handled later)."""
    if isinstance(X, np.ndarray) and X.dtype.kind in "iuf" and X.ndim == 2:
        return np.asarray(X, dtype=np.float64)
    try:
        arr = np.asarray(X)
    except Exception as exc:  # ragged input and the like
        raise ValueError(f"{name} must be a 2-D numeric array: {exc}") from None
    if arr.dtype.kind == "b" or arr.dtype.kind not in "iuf":
        if arr.dtype.kind == "O":
            try:
                arr = arr.astype(np.float64)
            except (TypeError, ValueError):
                raise ValueError(f"{name} must be numeric, got dtype {arr.dtype}") from None
        else:
            raise ValueError(f"{name} must be numeric, got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise ValueError(
            f"{name} must be 2-D of shape (n_samples, n_features), got an array of shape {arr.shape}"
        )
    return np.asarray(arr, dtype=np.float64)


def check_bounds(bounds, n_features: int | None):
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
            f"lower={lower[bad]!r} >= upper={upper[bad]!r}"
        )
    return lower, upper


def bounds_from_data(X: np.ndarray):
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
