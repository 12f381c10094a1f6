"""The estimator's private note when most rows lie outside the public box
(the command line says it even under --quiet: such a release says little):
a PrivateNoteWarning in the command line's words, the same from the
in-memory path and from the Dask backend (which used to say nothing at all),
naming the columns by the declared header's or the Parquet schema's names
(public), a DataFrame's by position (its names may be a file's first line).
A fit with a few rows outside says nothing (the documented per-record rule
clips them), as before."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pandas as pd
import pytest

from dpdbscan import DPDBSCAN, InsecureRandomnessWarning, PrivateNoteWarning, UtilityWarning, fit_lonlat

MOST = r"lie outside the bounds and are clipped onto the box; .*most points are outside the bounds"


def shifted(n=3000, share=0.8, seed=0):
    """Points in the unit square, ``share`` of them moved right of x's upper bound."""
    X = np.random.default_rng(seed).uniform(0.1, 0.9, (n, 2))
    X[: int(share * n), 0] += 1.0
    return X


def est(**kw):
    return DPDBSCAN(0.1, min_samples=20, bounds=([0.0, 0.0], [1.0, 1.0]), random_state=1, **kw)


def fit_notes(fit):
    """The PrivateNoteWarnings ``fit()`` gives (other warnings ignored)."""
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        fit()
    return [str(w.message) for w in got if issubclass(w.category, PrivateNoteWarning)]


def outside_notes(notes):
    return [m for m in notes if "outside the bounds" in m]


def test_most_rows_outside_warns_in_memory():
    (note,) = outside_notes(fit_notes(lambda: est().fit(shifted())))
    assert note.startswith("2,400 point(s) (80.0%) lie outside the bounds and are clipped onto the box")
    assert "column '0': 80.0% of the rows lie above its upper bound 1" in note
    assert "check bounds=(lower, upper)" in note


def test_the_warning_points_at_the_callers_line():
    with pytest.warns(PrivateNoteWarning, match=MOST) as got:
        est().fit(shifted())
    assert [w.filename for w in got if "outside" in str(w.message)] == [__file__]


def test_a_dataframes_own_column_names_are_never_said():
    """A DataFrame's column names may be a record: pd.read_csv of a file
    without a header names them by its first line. The note names the
    columns by position (round 18; it quoted them before)."""
    df = pd.DataFrame(shifted(), columns=["east", "north"])
    (note,) = outside_notes(fit_notes(lambda: est().fit(df)))
    assert "column '0': 80.0% of the rows lie above its upper bound 1" in note
    assert "east" not in note and "north" not in note
    lines = "bob@example.com,555-0142\n" + "".join(f"{a!r},{b!r}\n" for a, b in shifted().tolist())
    read = pd.read_csv(io.StringIO(lines))
    assert list(read.columns) == ["bob@example.com", "555-0142"]
    (note,) = outside_notes(fit_notes(lambda: est().fit(read)))
    assert "bob@example.com" not in note and "555-0142" not in note
    assert "column '0': 80.0%" in note


def test_a_few_rows_outside_say_nothing():
    assert outside_notes(fit_notes(lambda: est().fit(shifted(share=0.3)))) == []
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivateNoteWarning)
        warnings.simplefilter("ignore", InsecureRandomnessWarning)
        warnings.simplefilter("ignore", UtilityWarning)
        est().fit(shifted(share=0.3))


def test_fit_lonlat_says_the_box_in_degrees():
    rng = np.random.default_rng(3)
    lonlat = np.column_stack([rng.uniform(116.1, 116.9, 3000), rng.uniform(39.1, 39.9, 3000)])
    notes = fit_notes(
        lambda: fit_lonlat(
            lonlat[:, ::-1], bounds=(116, 39, 117, 40), eps="2km", min_samples=20, random_state=1
        )
    )
    (note,) = outside_notes(notes)
    assert "column 'longitude': 100.0% of the rows lie below its lower bound 116" in note
    assert "longitude first" in note


@pytest.fixture
def dask_backend(client):
    pytest.importorskip("distributed")
    from dpdbscan.release.backends.dask_backend import DaskBackend

    return DaskBackend(client=client, header=True)


def test_the_dask_backend_warns_as_in_memory(tmp_path, dask_backend):
    """A CSV file with a declared header: the note names its columns, and
    says what the in-memory fit of the same rows says."""
    X = shifted()
    path = tmp_path / "p.csv"
    path.write_text("east,north\n" + "".join(f"{a!r},{b!r}\n" for a, b in X.tolist()))
    (dask,) = outside_notes(fit_notes(lambda: est(backend=dask_backend).fit(str(path))))
    (memory,) = outside_notes(fit_notes(lambda: est().fit(X)))
    assert dask == memory.replace("column '0'", "column 'east'").replace("column '1'", "column 'north'")
    assert "column 'east': 80.0% of the rows lie above its upper bound 1" in dask


def test_the_dask_backend_warns_at_person_level_from_parquet(tmp_path, dask_backend):
    pq = pytest.importorskip("pyarrow.parquet")
    pa = pytest.importorskip("pyarrow")
    X = shifted()
    path = tmp_path / "p.parquet"
    pq.write_table(pa.table({"x": X[:, 0], "y": X[:, 1], "cab": [f"c{i % 50}" for i in range(len(X))]}), path)
    fit = lambda: est(backend=dask_backend, max_cells_per_unit=2, delta=1e-6).fit(str(path), units="cab")  # noqa: E731
    (note,) = outside_notes(fit_notes(fit))
    assert "column 'x': 80.0% of the rows lie above its upper bound 1" in note


def test_a_dask_dataframe_names_its_columns(dask_backend):
    dd = pytest.importorskip("dask.dataframe")
    df = dd.from_pandas(pd.DataFrame(shifted(), columns=["east", "north"]), npartitions=3)
    (note,) = outside_notes(fit_notes(lambda: est(backend=dask_backend).fit(df)))
    assert "column 'east': 80.0% of the rows lie above its upper bound 1" in note
