"""Private counts of what the per-record rule does to the rows, and the notes
that tell the data owner about them.

A fit drops a row with a missing or non-finite value and clips a row outside
the public box onto it (:mod:`dpdbscan.release.points`). Nothing here changes
that or the release: it only counts, for the private notes on standard error,
so that a wrong bound or column order is hard to miss. :class:`BlockPrep`
does the projection and the counting block by block while a file is read.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ..geometry.projection import LAT_NAMES, LON_NAMES
from ..traces import take_rows
from .box import project_box, split_bounds
from .notes import Notes
from .prepared import Points, Transform


class BlockPrep:
    """What ``fit`` does to each block of rows while the file is still being
    read (:meth:`dpdbscan.files.InputPlan.read`'s ``block_hook``, on the parsing
    threads): with ``--geo``, project lon/lat to km in place; then count
    what the per-record rule will drop or clip (:func:`clipping_counts`,
    for the private notes); then hand the block to ``counter`` (the cell
    counts, made while reading). All are per row, so doing them block by
    block gives the same array and the same counts as doing them afterwards.

    It sets itself up from the public ``--bounds`` and the number of columns
    of the first block; where that fails (wrong number of bounds, a bad
    lon/lat box, --geo on other than two columns) it does nothing and the
    command's own checks after the read report the problem as usual.
    """

    def __init__(
        self,
        bounds_in: list[float],
        geo: bool,
        ref_lat: float | None,
        counter: Callable[[np.ndarray], None] | None = None,
    ) -> None:
        self.bounds_in, self.geo, self.ref_lat, self.counter = bounds_in, geo, ref_lat, counter
        self._lock = threading.Lock()
        self._setup: dict[int, Any] = {}
        self._counts: list[dict] = []
        self._rows = 0

    def _prepare(self, d: int):
        with self._lock:
            if d not in self._setup:
                try:
                    if self.geo and d != 2:
                        raise ValueError("--geo needs two columns")
                    lower, upper = split_bounds(self.bounds_in, d, self.geo)
                    proj = None
                    if self.geo:
                        proj, lower, upper = project_box(lower, upper, self.ref_lat)
                    self._setup[d] = (proj, lower, upper)
                except ValueError:
                    self._setup[d] = None  # reported by the checks after the read
            return self._setup[d]

    def __call__(self, X: np.ndarray) -> None:
        setup = self._prepare(X.shape[1])
        if setup is None:
            return
        proj, lower, upper = setup
        if proj is not None:
            proj.forward(X, out=X)
        counts = clipping_counts(X, lower, upper)
        if self.counter is not None:
            self.counter(X)
        with self._lock:
            self._counts.append(counts)
            self._rows += X.shape[0]

    def result(self, n_rows: int) -> dict | None:
        """The summed clipping counts, or None if the blocks were left as
        read (then the caller projects and counts itself)."""
        if not self._counts:
            return None
        if self._rows != n_rows:  # pragma: no cover - every block passes through the hook
            raise RuntimeError("some blocks of the input were not prepared")
        total = self._counts[0].copy()
        for c in self._counts[1:]:
            for k in ("n_bad", "n_ok", "outside"):
                total[k] += c[k]
            total["below"] = total["below"] + c["below"]
            total["above"] = total["above"] + c["above"]
        return total


_SCAN_ROWS = 1 << 16  # rows per block of the clipping scan: stays in the CPU's cache


def rows_all(mask: np.ndarray) -> np.ndarray:
    """``mask.all(axis=1)``, column by column (quicker for a few columns)."""
    out = mask[:, 0].copy()
    for j in range(1, mask.shape[1]):
        out &= mask[:, j]
    return out


def clipping_counts(X: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> dict:
    """What the per-record rule will do to the rows of ``X`` (private counts):
    ``n_bad`` rows with a missing or non-finite value (dropped), and among
    the others ``n_ok``, ``outside`` (clipped onto the box) and, per column,
    ``below`` and ``above`` its bound. One pass in cache-sized blocks."""
    d = X.shape[1]
    lower, upper = np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64)
    n_bad = outside = 0
    below, above = np.zeros(d, dtype=np.int64), np.zeros(d, dtype=np.int64)
    if X.shape[0] and all(X[:, j].min() >= lower[j] and X[:, j].max() <= upper[j] for j in range(d)):
        # every row inside (a NaN makes its column's min NaN, which fails
        # the test): the scan's answer, from each column's min and max
        # (1e6 rows of 2 columns: 3.2 -> 1.7 ms)
        return {"n_bad": 0, "n_ok": X.shape[0], "outside": 0, "below": below, "above": above}
    rows = min(X.shape[0], _SCAN_ROWS)
    inside_buf, test_buf = np.empty(rows, dtype=bool), np.empty(rows, dtype=bool)
    for a in range(0, X.shape[0], _SCAN_ROWS):
        B = X[a : a + _SCAN_ROWS]
        inside, test = inside_buf[: B.shape[0]], test_buf[: B.shape[0]]
        # column by column against scalars (NaN compares False): comparing
        # (n, d) with a (d,) pair runs numpy's loop d values at a time
        for j in range(d):
            np.greater_equal(B[:, j], lower[j], out=inside if j == 0 else test)
            if j:
                inside &= test
            np.less_equal(B[:, j], upper[j], out=test)
            inside &= test
        if inside.all():
            continue
        finite = rows_all(np.isfinite(B))
        n_bad += int(finite.size - np.count_nonzero(finite))
        out = finite & ~inside
        if out.any():
            outside += int(np.count_nonzero(out))
            F = B[out]
            below += np.count_nonzero(F < lower, axis=0)
            above += np.count_nonzero(F > upper, axis=0)
    return {"n_bad": n_bad, "n_ok": X.shape[0] - n_bad, "outside": outside, "below": below, "above": above}


def dropped_note(n_bad: int, units: bool) -> str:
    """The private note of the rows the per-record rule drops (``units``:
    a person-level read, where a row with no unit is dropped too)."""
    unit = " or no unit" if units else ""
    return f"{n_bad:,} row(s) with missing or non-finite values{unit} are dropped"


def note_clipping(
    pts: Points, notes: Notes, bounds_in: list[float] | None = None, counts: dict | None = None
) -> None:
    """Tell the data owner (private notes) how many rows the per-record rule
    drops or clips, per column and bound, in the units they gave (degrees
    with --geo): a wrong bound or column order must be hard to miss. When
    most rows are clipped the note is printed even under --quiet (it is still
    a private note on standard error). What is released does not depend on any
    of this. ``counts``: :func:`clipping_counts` of ``pts.X`` when already made."""
    X = pts.X
    if X.shape[0] == 0:
        return
    c = clipping_counts(X, pts.lower, pts.upper) if counts is None else counts
    if c["n_bad"]:
        notes(dropped_note(c["n_bad"], pts.units is not None))
    lower, upper = user_bounds(pts, bounds_in)
    names = pts.names or [str(j) for j in range(X.shape[1])]
    say_outside(c, notes, names, lower, upper, lambda: outside_hint(pts, bounds_in), pts.proj is not None)


#: What clipped points do to a map, and the way out (the command line's note).
PILE_UP = (
    "points clipped onto the box pile up on its edges, where many (GPS fixes at (0, 0), a trip out "
    "of town) can make a span that is no place: --outside drop (in memory, the default backend) "
    "drops them instead"
)

#: The same for points that are not longitude and latitude (sensor readings,
#: features): no GPS fix or town there.
PILE_UP_PLAIN = (
    "points clipped onto the box pile up on its edges, where many (readings beyond the bounds, "
    "a saturated sensor) can make a span on an edge that is no cluster of the data: --outside drop "
    "(in memory, the default backend) drops them instead"
)


def pile_up(geo: bool) -> str:
    """:data:`PILE_UP` for longitude and latitude (``geo``: a ``--geo``
    read, whose points carry a projection), else :data:`PILE_UP_PLAIN`."""
    return PILE_UP if geo else PILE_UP_PLAIN


def say_outside(
    c: dict,
    notes: Notes,
    names: Sequence[str],
    lower: np.ndarray,
    upper: np.ndarray,
    hint: Callable[[], str],
    geo: bool = False,
) -> None:
    """The private notes of the rows clipped onto the box (``c``:
    :func:`clipping_counts`' counts): how many, and per column and bound
    those of at least 1% of the rows; when most are, the note is said even
    under --quiet, with ``hint()`` (:func:`outside_hint`)."""
    lines = outside_lines(c, names, lower, upper)
    if not lines:
        return
    most = most_outside(c)
    say = notes.always if most else notes
    for line in lines:
        say(line)
    if most:
        say(hint())
    notes(pile_up(geo))


def most_outside(c: dict) -> bool:
    """Whether most of the rows kept lie outside the box (``c``:
    :func:`clipping_counts`' counts): the release then says little."""
    return c["outside"] / max(c["n_ok"], 1) > 0.5


def outside_lines(c: dict, names: Sequence[str], lower: np.ndarray, upper: np.ndarray) -> list[str]:
    """:func:`say_outside`'s lines (without the hint): how many rows are
    clipped onto the box, and per column and bound those of at least 1% of
    the rows; none when no row is."""
    outside, n_ok = c["outside"], max(c["n_ok"], 1)
    if not outside:
        return []
    lines = [
        f"{outside:,} point(s) ({outside / n_ok:.1%}) lie outside the bounds and are clipped onto the box"
    ]
    for j, name in enumerate(names):
        for count, side, value in (
            (int(c["below"][j]), "below its lower", lower[j]),
            (int(c["above"][j]), "above its upper", upper[j]),
        ):
            if count / n_ok >= 0.01:
                lines.append(f"column {name!r}: {count / n_ok:.1%} of the rows lie {side} bound {value:g}")
    return lines


def outside_warning(
    c: dict, names: Sequence[str], lower: np.ndarray, upper: np.ndarray, check: str
) -> str | None:
    """The private note a library fit gives (a
    :class:`~dpdbscan.PrivateNoteWarning`) where the command line says its
    lines even under --quiet: most rows lie outside the box, so the release
    says little. :func:`outside_lines` in one message, then what to
    ``check``; None otherwise (the other notes are the command line's alone:
    dropping and clipping rows is the documented per-record rule)."""
    if not most_outside(c):
        return None
    return (
        "; ".join(outside_lines(c, names, lower, upper))
        + f": most points are outside the bounds: check {check}"
    )


def note_clipping_counted(
    counts: Any, names: Sequence[str] | None, lower: np.ndarray, upper: np.ndarray, notes: Notes
) -> None:
    """:func:`note_clipping`'s notes of the rows clipped onto the box, from
    what a distributed backend's partitions counted (``counts``, a
    :class:`~dpdbscan.files.records.BlockCounts` with ``outside``,
    ``below`` and ``above``; counts only, no value read), in the same
    words. The hint when most rows lie outside tests all the rows kept
    where the in-memory path tests a sample of them. Nothing when the
    backend counted no box (empty ``below``)."""
    lower, upper = np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64)
    d = lower.size
    c = counted_clipping(counts, d)
    if c is None:
        return
    n_ok = c["n_ok"]
    bounds = [*lower.tolist(), *upper.tolist()]

    def hint() -> str:
        if d != 2 or n_ok <= 0:
            return hint_of(None, 0.0, 0.0)
        return hint_of(bounds, counts.fit_as_ranges / n_ok, counts.fit_swapped / n_ok, names)

    say_outside(c, notes, names or [str(j) for j in range(d)], lower, upper, hint)


def counted_clipping(counts: Any, d: int) -> dict | None:
    """:func:`clipping_counts`' counts from what a distributed backend's
    partitions counted (a :class:`~dpdbscan.files.records.BlockCounts`),
    or None when it counted no box for ``d`` coordinates (or no row)."""
    if counts is None or not counts.rows or len(counts.below) != d or len(counts.above) != d:
        return None
    return {
        "n_ok": counts.rows - counts.dropped,
        "outside": counts.outside,
        "below": np.asarray(counts.below),
        "above": np.asarray(counts.above),
    }


def user_bounds(pts: Points, bounds_in: list[float] | None) -> tuple[np.ndarray, np.ndarray]:
    """The box in the units the user gave it: degrees with --geo, else as fitted."""
    if pts.proj is not None and bounds_in is not None:
        return np.asarray(bounds_in[:2], dtype=float), np.asarray(bounds_in[2:], dtype=float)
    return pts.lower, pts.upper


_HINT_ROWS = 100_000  # rows the hint looks at (a private note; a sample is enough)


def outside_hint(pts: Points, bounds_in: list[float] | None) -> str:
    """The private note when most points lie outside the box: which option
    to check, the bounds in the order that would fit them (xmin xmax ymin ymax
    given for xmin ymin xmax ymax), or the columns in the other order (latitude
    first). Compared in the user's units (degrees with --geo), on a sample
    of the rows (:func:`hint_of`)."""
    X = pts.X[:: max(1, pts.X.shape[0] // _HINT_ROWS)]
    F = X[rows_all(np.isfinite(X))]
    if pts.proj is not None:
        F = pts.proj.inverse(F)
    if bounds_in is None or len(bounds_in) != 4 or F.shape[1] != 2 or F.shape[0] == 0:
        return hint_of(None, 0.0, 0.0)
    lo, hi = user_bounds(pts, bounds_in)

    def share(points: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
        return float(np.all((points >= a) & (points <= b), axis=1).mean())

    v = bounds_in
    alt_lo, alt_hi = np.array([v[0], v[2]]), np.array([v[1], v[3]])
    as_ranges = share(F, alt_lo, alt_hi) if np.all(alt_lo < alt_hi) else 0.0
    swapped = share(F[:, ::-1], lo, hi)
    return hint_of(v, as_ranges, swapped, pts.names, pts.proj is not None, pts.geometry)


def _lon_lat_in_order(names: Sequence[str]) -> bool:
    """The two coordinate columns' names say longitude, then latitude."""
    first, second = (str(n).strip().lower() for n in names[:2])
    return first in ("x", *LON_NAMES) and second in ("y", *LAT_NAMES)


def hint_of(
    bounds_in: Sequence[float] | None,
    as_ranges: float,
    swapped: float,
    names: Sequence[str] | None = None,
    geo: bool = False,
    geometry: str | None = None,
) -> str:
    """The hint of :func:`outside_hint` from the shares of the 2-D rows that
    the box fits read as ``xmin xmax ymin ymax`` (``as_ranges``; 0 when
    those are not ordered) and with their two coordinates swapped
    (``swapped``). ``bounds_in``: the four bounds as given (None: no
    particular hint)."""
    hint = "check --bounds (lower_1 .. lower_d upper_1 .. upper_d) and --columns"
    if bounds_in is None:
        return f"most points are outside the bounds: {hint}"
    v = bounds_in
    if as_ranges > 0.9 and v[0] < v[1] and v[2] < v[3]:
        hint = (
            "the bounds look like xmin xmax ymin ymax: --bounds wants "
            f"xmin ymin xmax ymax, i.e. {v[0]:g} {v[2]:g} {v[1]:g} {v[3]:g}"
        )
    elif swapped > 0.9 and geometry is not None:
        # no --columns to give: the file's own points are latitude first
        hint = (
            f"the points look latitude first: the box fits them with their two coordinates "
            f"swapped; a {geometry} file's points are longitude first (x = longitude, "
            "y = latitude): write them so"
        )
    elif swapped > 0.9:
        names = names or ["0", "1"]
        box = f"--bounds {v[1]:g} {v[0]:g} {v[3]:g} {v[2]:g}"
        if geo and _lon_lat_in_order(names):
            # the columns' names say longitude then latitude: the box is what is swapped
            hint = (
                "the bounds look latitude first: the box fits the points with their two "
                f"coordinates swapped, and the columns are longitude then latitude ({names[0]!r}, "
                f"{names[1]!r}); --bounds takes lon_min lat_min lon_max lat_max: {box}"
            )
        elif geo and not -90 <= v[0] < v[2] <= 90:
            # the box read latitude first would not be a box on the Earth: the columns are swapped
            hint = (
                f"the columns look swapped: the box fits the points with {names[1]!r} first; "
                f"longitude comes first: --columns {names[1]} {names[0]}"
            )
        else:
            first = "longitude" if geo else "the first coordinate"
            hint = (
                f"the columns or the bounds look swapped: the box fits the points with "
                f"{names[1]!r} first; {first} comes first: --columns {names[1]} {names[0]}, "
                f"or, if the columns are in order, {box}"
            )
    return f"most points are outside the bounds: {hint}"


def drop_outside_step(
    notes: Callable[[str], object] | None = None, option: str = "--outside drop"
) -> Transform:
    """The door's step of ``--outside drop`` and of the estimator's
    ``outside="drop"`` (:data:`~dpdbscan.prepare.prepared.Transform`):
    a row with a finite coordinate outside the public box is dropped instead
    of clipped onto it, each row by its own values and the public box alone
    (docs/privacy.md §4.1: neighbouring inputs stay neighbours), with its
    unit, time and status. A private note to ``notes`` counts them, naming
    ``option`` as the caller spelt it. Rows with a missing or non-finite
    value are left to the clean rule."""

    def step(pts: Points) -> Points:
        X = np.asarray(pts.X, dtype=np.float64)
        lower, upper = np.asarray(pts.lower, dtype=np.float64), np.asarray(pts.upper, dtype=np.float64)
        # NaN compares False both ways, so a row with a missing value is kept here
        out = ((X < lower) | (X > upper)).any(axis=1)
        n_out = int(np.count_nonzero(out))
        if notes is not None and n_out:
            notes(
                f"{n_out:,} row(s) ({n_out / max(X.shape[0], 1):.1%}) lie outside the bounds and are "
                f"dropped ({option}), not clipped onto the box"
            )
        if not n_out:
            return pts
        rows = np.flatnonzero(~out)
        return replace(
            pts,
            X=np.asarray(pts.X)[rows],
            units=None if pts.units is None else take_rows(pts.units, rows),
            times=None if pts.times is None else take_rows(pts.times, rows),
            status=None if pts.status is None else take_rows(pts.status, rows),
            counts=None,
        )

    return step
