"""A private note never decides whether a release is made (docs/privacy.md section 8, round 13).

A :class:`~dpdbscan.PrivateNoteWarning` counts something in the private
data (rows of another length dropped, ids of no readable type, rows
without a readable time, no unit in the box), said while the points are
prepared or counted. Where the caller's filters turned warnings into
errors (``python -W error``, pytest's ``filterwarnings = error``), it
raised there: D was released and D plus one odd row was not. Now such a
note never raises: it is said (shown or recorded) whatever the filters
but "ignore", and D' is released as D is.
"""

from __future__ import annotations

import decimal
import linecache
import warnings

import numpy as np
import pytest

from dpdbscan import (
    DPDBSCAN,
    InsecureRandomnessWarning,
    PrivateNoteWarning,
    Stops,
    UtilityWarning,
    fit_lonlat,
)
from dpdbscan.exceptions import private_note
from dpdbscan.ledger import Ledger
from dpdbscan.params.parameters import validate
from dpdbscan.series import SeriesInput, append_periods, fit_series, plan_series, start_series
from dpdbscan.traces.periods import Periods

BOUNDS = ([0.0, 0.0], [10.0, 10.0])
PERSON = dict(delta=1e-6, max_cells_per_unit=4)
T0 = 1_709_510_400


def rows(n=300, seed=0):
    return np.random.default_rng(seed).normal(5, 0.5, (n, 2)).tolist()


def under_error(fit, category=PrivateNoteWarning):
    """``fit()`` (returns a model) with ``category`` made an error and every
    other warning ignored: ``(the released histogram or the exception's
    type, the private notes recorded)``."""
    with warnings.catch_warnings(record=True) as log:
        warnings.simplefilter("ignore")
        warnings.simplefilter("error", category)
        try:
            got = fit().histogram.values.tolist()
        except Warning as exc:
            got = type(exc).__name__
    return got, [str(w.message) for w in log if issubclass(w.category, PrivateNoteWarning)]


def estimate(X, units=None, times=None, **kw):
    def fit():
        est = DPDBSCAN(eps=0.5, min_samples=10, bounds=BOUNDS, random_state=1, **kw)
        return est.fit(X, units=units, times=times).spans_

    return fit


def lonlat(X):
    return lambda: fit_lonlat(X, bounds=[0, 0, 10, 10], eps="5km", min_samples=10, random_state=1)


def cases():
    X, ids = rows(), list(range(300))
    # 30 units of 10 fixes a minute apart at one place each: one stop each
    units = [i // 10 for i in range(300)]
    t = [T0 + 60 * (i % 10) for i in range(300)]
    stops = Stops(radius=0.3, duration=120)
    return {
        "a row of another length": (estimate(X), estimate(X + [[5.0, 5.0, 5.0]])),
        "an id of no readable type": (
            estimate(X, ids, **PERSON),
            estimate(X + [[5.0, 5.0]], ids + [decimal.Decimal(1)], **PERSON),
        ),
        "a row without a readable time": (
            estimate(X, units, t, events=stops, **PERSON),
            estimate(X + [[5.0, 5.0]], units + [7], t + ["not a time"], events=stops, **PERSON),
        ),
        "fit_lonlat, a row of another length": (lonlat(X), lonlat(X + [[5.0, 5.0, 5.0]])),
    }


@pytest.mark.parametrize("case", list(cases()))
def test_a_private_note_never_decides_whether_a_release_is_made(case):
    """D and D' (one odd row more, dropped) release the same under a filter
    that makes private notes errors; D' says its note, D none (on the code
    before, D' raised the note, unreleased)."""
    d, d1 = cases()[case]
    released, notes = under_error(d)
    released1, notes1 = under_error(d1)
    assert isinstance(released, list) and released1 == released
    assert notes == [] and len(notes1) == 1


def test_no_unit_to_choose_k_by_is_released_with_its_note():
    """max_cells_per_unit="auto" with no unit to score notes it (D: no row
    at all), one row more does not: both are released."""
    auto = dict(delta=1e-6, max_cells_per_unit="auto")
    released, notes = under_error(estimate(np.zeros((0, 2)), [], **auto))
    released1, notes1 = under_error(estimate([[5.0, 5.0]], [1], **auto))
    assert isinstance(released, list) and isinstance(released1, list)
    assert len(notes) == 1 and "no unit has a point" in notes[0] and notes1 == []


def test_a_ledger_keeps_the_release_that_had_a_note(tmp_path):
    """With a ledger, D' is reserved and written, not refused nor failed."""
    led = Ledger.create(tmp_path / "b.ledger", "points", 5.0, 1e-5)
    released, notes = under_error(estimate(rows() + [[5.0, 5.0, 5.0]], ledger=led))
    assert isinstance(released, list) and len(notes) == 1
    (release,) = led.account().releases
    assert release.status == "written"


LOWER, UPPER = np.zeros(2), np.full(2, 10.0)
P = validate(dict(epsilon=8.0, delta=1e-5, eps=0.5, min_samples=10, max_cells_per_unit=4, random_state=3))
PERIODS = Periods("day", "2024-03-04", "2024-03-07")


def series_rows(extra: bool):
    """60 units of three rows at one spot over the first two days; D' adds
    one row elsewhere whose id is of no readable type."""
    ids: list = [i for i in range(60) for _ in range(3)]
    xy = [[2.5, 2.5]] * len(ids)
    t = [T0 + 3600 * (j % 40) for j in range(len(ids))]
    if extra:
        ids.append(decimal.Decimal(1))
        xy.append([7.5, 7.5])
        t.append(T0 + 86_400)
    return np.array(xy, dtype=float), ids, t


def series(how, extra):
    def fit():
        X, ids, t = series_rows(extra)
        if how == "fit_series":
            plan = plan_series(P, LOWER, UPPER, PERIODS)
            return fit_series(SeriesInput(X, LOWER, UPPER, P, ids, t), plan).model
        plan = plan_series(P, LOWER, UPPER, PERIODS, places=1)
        if how == "start_series":
            return start_series(SeriesInput(X, LOWER, UPPER, P, ids, t), plan).model
        first, first_ids, first_t = series_rows(False)
        data = SeriesInput(first, LOWER, UPPER, P, first_ids, first_t)
        start = start_series(data, plan, through="2024-03-05")
        return append_periods(start.model, X, ids, t, random_state=5).model

    return fit


@pytest.mark.parametrize("how", ["fit_series", "start_series", "append_periods"])
def test_a_series_with_a_note_is_released_as_without_it(how):
    def table(fit):
        got, notes = under_error(lambda: _Table(fit()))
        return got, notes

    (got, notes), (got1, notes1) = table(series(how, False)), table(series(how, True))
    assert isinstance(got, list) and got1 == got
    assert notes == [] and len(notes1) == 1


class _Table:
    """A series' released table where :func:`under_error` looks for a histogram."""

    def __init__(self, model):
        self.histogram = self
        self.values = np.asarray(model.metadata["series"]["table"]["noisy_mass"])


def test_a_note_is_said_from_the_callers_line_under_any_filter():
    """Under "error" (for the note's category or a parent) the note is said
    as "always" says it, from the line ``stacklevel`` names; "default" says
    it once there; "ignore" still silences it."""

    def note():
        private_note("a note", stacklevel=2)

    for action, category, times in (
        ("error", PrivateNoteWarning, 2),
        ("error", UtilityWarning, 2),
        ("error", Warning, 2),
        ("always", Warning, 2),
        ("default", Warning, 1),
        ("ignore", Warning, 0),
    ):
        with warnings.catch_warnings(record=True) as log:
            warnings.simplefilter(action, category)
            for _ in range(2):
                note()
        assert [str(w.message) for w in log] == ["a note"] * times, (action, category)
        assert all(w.filename == __file__ and w.category is PrivateNoteWarning for w in log)
        # the caller's line (the loop's call), not the line in note()
        assert all(linecache.getline(__file__, w.lineno).strip() == "note()" for w in log)
    # a stack less deep than stacklevel: said (as warnings.warn says it then), never an error
    with warnings.catch_warnings(record=True) as log:
        warnings.simplefilter("error")
        private_note("a note", stacklevel=10_000)
    assert [(str(w.message), w.filename) for w in log] == [("a note", "sys")]


# ----------------------------------------------------------------------------
# numpy's warnings of one record: a coordinate near 1e308 overflowed in the
# stops' distances and in the lon/lat projection, and numpy warned; where
# warnings are errors the fit of D' stopped there


def huge_row(X, units, t, value, columns=(0,)):
    """D plus one row of the last unit, half a minute after its last, whose
    ``columns`` are ``value``."""
    row = np.array(X[-1], dtype=float)
    row[list(columns)] = value
    return np.vstack([X, row]), np.append(units, units[-1]), np.append(t, t[-1] + 30)


def numpy_cases():
    rng = np.random.default_rng(0)
    X = rng.normal(5, 0.5, (200, 2))
    X3 = np.column_stack([X, X[:, 0]])
    units, t = np.arange(200) // 10, T0 + 60.0 * (np.arange(200) % 10)
    stops = dict(events=Stops(0.3, 120), **PERSON)
    box3 = dict(bounds=([0.0] * 3, [10.0] * 3))

    def stops_fit(X, units, t, **kw):
        def fit():
            est = DPDBSCAN(eps=0.5, min_samples=3, random_state=1, **{"bounds": BOUNDS, **stops, **kw})
            return est.fit(X, units=units, times=t).spans_

        return fit

    out = {}
    for value in (1e308, -1e308):
        out[f"stops, x {value:g}"] = (stops_fit(X, units, t), stops_fit(*huge_row(X, units, t, value)))
        out[f"fit_lonlat, longitude {value:g}"] = (lonlat(X), lonlat(huge_row(X, units, t, value)[0]))
    for value, columns in ((1e154, (0, 2)), (1e308, (2,))):
        out[f"stops in 3-D, columns {columns} {value:g}"] = (
            stops_fit(X3, units, t, **box3),
            stops_fit(*huge_row(X3, units, t, value, columns), **box3),
        )
    return out


@pytest.mark.parametrize("case", list(numpy_cases()))
def test_a_huge_coordinate_stops_no_release_where_warnings_are_errors(case):
    """D and D' (one row more near 1e308, beyond every radius and outside
    the box) release the same with every warning an error but those of
    public input (seeded noise) and of the release itself (its utility);
    on the code before, numpy's overflow warning stopped D'."""
    d, d1 = numpy_cases()[case]

    def strict(fit):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            warnings.simplefilter("ignore", InsecureRandomnessWarning)
            warnings.simplefilter("ignore", UtilityWarning)  # read from the release, after it
            return fit().histogram.values.tolist()

    assert strict(d1) == strict(d)
