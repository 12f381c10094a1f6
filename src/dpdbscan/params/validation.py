"""Checks of the data-shaped inputs: arrays, bounds, single numbers.

The parameter table and its rules are in :mod:`.parameters`; these check what
the table cannot (an array's shape, bounds per feature), with messages in
scikit-learn's words that name the argument and never quote a data value.
"""

from __future__ import annotations

import numbers
import warnings
from typing import Any

import numpy as np

from ..exceptions import PrivacyLeakWarning
from .parameters import Real, _plain, check_param


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


def check_array(
    X: Any,
    name: str = "X",
    *,
    width: int | None = None,
    ragged: list[int] | None = None,
    every_row: bool = False,
) -> np.ndarray:
    """A 2-D float64 array of real numbers (NaN/inf allowed here; the
    mechanism drops such rows). Refuses sparse matrices, complex and
    non-numeric data with messages in scikit-learn's words.

    A list (or tuple) of rows of different lengths is read row by row: a
    row of another length than ``width`` (public: the number of bounds per
    side), or without ``width`` than the length most rows have (the
    shortest of those tied), is a row of NaN, dropped by the clean rule
    alone; ``ragged[0]`` counts them. Never a refusal: whether a release
    happens must not hinge on one row. With ``width`` and ``every_row``
    (what a fit reads), so also when every row has another length (or is no
    row at all: a number, a list of lists) and when the list is empty:
    numpy's shape of such a list is the rows' doing, and one added row of
    the right length would lift a refusal. Without ``every_row``
    (``predict``, which releases nothing), such a list is refused as an
    array of another width."""
    if np.ma.isMaskedArray(X):
        # a masked cell is missing (NaN: the clean rule drops its row), never
        # the value it hides (round 15)
        kind = X.dtype.kind
        X = np.ma.filled(X.astype(np.float64 if kind in "iuf" else object), np.nan)
    if isinstance(X, np.ndarray) and X.dtype.kind in "iuf" and X.ndim == 2 and X.shape[1]:
        return np.asarray(X, dtype=np.float64)
    if hasattr(X, "toarray") or hasattr(X, "tocsr") or type(X).__module__.startswith("scipy.sparse"):
        raise TypeError(
            f"{name} is a sparse matrix, which is not supported: DP-DBSCAN needs dense "
            "coordinates; convert with X.toarray() if it fits in memory"
        )
    if every_row and isinstance(X, (list, tuple)) and width is not None and width > 0:
        return _rows_of_width(X, width, ragged)
    try:
        arr = np.asarray(X)
        by_cells = False
    except Exception as exc:  # ragged input and the like
        cells = _cells(X, width, ragged)
        if cells is None:
            raise ValueError(f"{name} must be a 2-D numeric array: {type(exc).__name__}") from None
        arr, by_cells = cells, True
    if arr.dtype.kind == "b" and not isinstance(X, np.ndarray):
        # booleans of a pandas frame or a pyarrow table (``bool``,
        # ``boolean``, ``bool[pyarrow]``): a numpy bool array without a
        # missing value (refused below) and an object or float array with one
        # (read): read them cell by cell always, so that one missing value
        # never decides whether the fit is refused (docs/privacy.md section 8,
        # round 15). A numpy bool array, which holds no missing value, is
        # refused by its dtype (public)
        arr = arr.astype(object)
    if isinstance(X, (list, tuple)) and arr.dtype.kind not in "iuf" and not by_cells:
        # numpy typed the cells together (one text cell made every cell text,
        # one complex number every number complex): each cell on its own
        cells = _cells(X)
        arr = arr if cells is None else cells
    if arr.dtype.kind == "c":
        raise ValueError(f"Complex data not supported: {name} must hold real numbers")
    if arr.dtype.kind == "O":
        arr = _reals(arr)
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


def _rows_of_width(X: list | tuple, width: int, ragged: list[int] | None = None) -> np.ndarray:
    """A list (or tuple) of rows as a float64 array of ``width`` (public)
    columns: numpy's array when it has that shape and a number dtype (the
    common case, as fast as before), else row by row (:func:`_cells`), a
    row of another length, or no row, read as a row of NaN and counted in
    ``ragged[0]``, and each cell on its own (:func:`_reals`)."""
    try:
        arr = np.asarray(X)
    except Exception:  # ragged input and the like: row by row below
        arr = None
    if arr is not None and arr.dtype.kind in "iuf" and arr.ndim == 2 and arr.shape[1] == width:
        return np.asarray(arr, dtype=np.float64)
    cells = _cells(X, width, ragged) if len(X) else None
    return np.empty((0, width), dtype=np.float64) if cells is None else _reals(cells)


def _cells(X: Any, width: int | None = None, ragged: list[int] | None = None) -> np.ndarray | None:
    """A list (or tuple) of rows as a 2-D object array of its cells, each
    kept as it is; None when it is not that. Rows of different lengths:
    each row of another length than ``width`` (without it, than the length
    most rows have, the shortest of those tied) is a row of NaN, counted in
    ``ragged[0]``."""
    if not isinstance(X, (list, tuple)) or not X:
        return None
    lengths = []
    for row in X:
        try:
            lengths.append(len(row) if not isinstance(row, (str, bytes, dict)) else -1)
        except TypeError:
            lengths.append(-1)  # not a row: a scalar
    widths = set(lengths)
    if width is not None:
        w = width  # public: every row of another length is dropped, however many
    elif len(widths) == 1 and -1 not in widths:
        w = widths.pop()
    else:
        counts: dict[int, int] = {}
        for n in lengths:
            if n > 0:
                counts[n] = counts.get(n, 0) + 1
        if not counts:
            return None
        top = max(counts.values())
        w = min(n for n, c in counts.items() if c == top)
    out = np.empty((len(X), w), dtype=object)
    bad = 0
    for i, row in enumerate(X):
        if lengths[i] != w:
            out[i, :] = np.nan
            bad += 1
            continue
        for j, v in enumerate(row):
            out[i, j] = v
    if ragged is not None:
        ragged[0] += bad
    return out


def _reals(arr: np.ndarray) -> np.ndarray:
    """An object array as float64, cell by cell: a cell that is no real
    number (text that is no number, pandas' NA, a date, a dict, a complex
    number) is NaN, so the clean rule drops its row alone; it never refuses
    the fit (whether a release happens must not hinge on one record)."""
    # never numpy's astype, even as a fast path when every cell converts: it
    # reads a datetime64 or timedelta64 cell as a number that float() refuses,
    # so that cell would read otherwise when another cell is bad
    out = np.empty(arr.shape, dtype=np.float64)
    flat, cells = out.reshape(-1), arr.reshape(-1).tolist()
    for i, v in enumerate(cells):
        try:
            flat[i] = float(v)
        except (TypeError, ValueError, OverflowError):
            flat[i] = np.nan
    return out


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
    if X.ndim != 2 or X.shape[0] < 2:
        return None
    with np.errstate(over="ignore", invalid="ignore"):
        # coordinates near 1e308 overflow the sums; such data are not
        # standardised, and the overflow must not become a warning of its own.
        # A finite column sum means a column without NaN or inf: then no copy
        # of the rows (on 1e6 rows this note cost a quarter of the fit).
        # column by column: X.sum(axis=0) is several times slower on a tall
        # array of few columns, and a product with a vector of ones made a
        # fresh array of the rows' length (first touching its pages cost the
        # command 0.1-0.5 s on the Cabs file) and woke OpenBLAS's threads
        total = np.array([X[:, j].sum() for j in range(X.shape[1])])
        finite = X if np.all(np.isfinite(total)) else X[np.all(np.isfinite(X), axis=1)]
        if finite.shape[0] < 2:
            return None
        mean = total / X.shape[0] if finite is X else finite.mean(axis=0)
        if not np.all(np.abs(mean) <= STANDARDISED_TOL):
            return None  # most data: one pass, no variance
        std = finite.std(axis=0)
    if not np.all(np.abs(std - 1.0) <= STANDARDISED_TOL):
        return None
    return (
        "every column of the data has mean 0 and standard deviation 1: were they standardised "
        "(e.g. by StandardScaler in a pipeline)? A scaler fitted on the private data moves "
        "every point with each row, so the release has no DP guarantee. Scale by public "
        f"constants instead, or fit the raw data with public {option} in its own units "
        "(docs/privacy.md)."
    )


def bounds_from_data(X: np.ndarray, stacklevel: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Data bounds, with the warning that this leaks (diffprivlib's convention);
    ``stacklevel`` as for :func:`warnings.warn`."""
    warnings.warn(
        "bounds were not given, so they are computed from the data. This leaks "
        "privacy and voids the DP guarantee: pass public bounds=(lower, upper).",
        PrivacyLeakWarning,
        stacklevel=stacklevel,
    )
    finite = X[np.all(np.isfinite(X), axis=1)]
    if finite.shape[0] == 0:
        raise ValueError("bounds cannot be inferred from data with no finite rows; pass bounds")
    lower, upper = finite.min(axis=0), finite.max(axis=0)
    span = np.where(upper > lower, upper - lower, 1.0)
    return lower, np.where(upper > lower, upper, lower + span)


__all__ = [
    "check_min_samples",
    "check_positive",
    "check_array",
    "check_bounds",
    "bounds_from_data",
]
