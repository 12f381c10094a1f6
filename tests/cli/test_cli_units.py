"""Person-level releases on the command line (issue 20, item 5): ``--unit COLUMN``.

The unit column is read beside the coordinates by every reader (CSV with a
header or by index, gzip, standard input, Parquet file and directory), a row
without a unit is dropped and counted, a unit column the file lacks is refused
before any record is read, no unit value is ever printed, the summary and
``info`` say who is protected, ``check`` describes the units, and ``fit``
says when a column looks like a person's id but no --unit was given.

The releases are seeded (``--seed``) so that the command line's release can
be compared with the library's on the same rows and units: equal histograms
and spans mean the units reached the mechanism as they are in the file.
"""

from __future__ import annotations

import gzip
import io
import json
import sys
import types
import warnings

import numpy as np
import pytest

from dpdbscan import DPDBSCAN, load_model
from dpdbscan.cells.grid import Grid
from dpdbscan.model.codec import model_to_dict

from clirun import run

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

pytestmark = pytest.mark.filterwarnings("ignore::dpdbscan.exceptions.InsecureRandomnessWarning")

#: A string that must never leave the file: it names a unit.
SECRET = "SECRETUNIT7"

FIT = ["--eps", "0.03", "--min-samples", "50", "--bounds", "0", "1", "--delta", "1e-6"]
UNIT = ["--unit", "person", "--max-cells-per-unit", "20"]
QUIET_OUT = ["--no-png", "--no-geojson", "--no-progress"]


def crowd(seed: int = 0, n_units: int = 300, per_unit: int = 20, spot: int = 2_000):
    """``n_units`` people with ``per_unit`` points each in a blob around
    (0.3, 0.3), and one person (named :data:`SECRET`) with ``spot`` points
    at (0.75, 0.75). Returns (X, unit names)."""
    rng = np.random.default_rng(seed)
    X = np.vstack(
        [
            rng.normal([0.3, 0.3], 0.03, size=(n_units * per_unit, 2)),
            np.array([0.75, 0.75]) + rng.normal(0, 0.002, (spot, 2)),
        ]
    )
    names = np.array(
        [f"p{u}" for u in np.repeat(np.arange(n_units), per_unit)] + [SECRET] * spot, dtype=object
    )
    return X, names


def csv_text(X, names, *, header: str | None = "x,y,person", unit_first: bool = False) -> str:
    rows = [
        f"{u},{float(a)!r},{float(b)!r}" if unit_first else f"{float(a)!r},{float(b)!r},{u}"
        for (a, b), u in zip(X, names)
    ]
    return "\n".join(([header] if header else []) + rows) + "\n"


def csv_file(tmp_path, X, names, name="p.csv", **kw):
    """:func:`csv_text` written to ``tmp_path / name``; returns the path."""
    path = tmp_path / name
    path.write_text(csv_text(X, names, **kw))
    return path


def library_release(X, names, seed: int, **kw):
    """The library's person-level release of the same rows and seed."""
    params = dict(eps=0.03, min_samples=50, epsilon=1, delta=1e-6, bounds=(0, 1), max_cells_per_unit=20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DPDBSCAN(**{**params, **kw}, random_state=seed).fit(X, units=names)
    return est.spans_


def same_release(model, reference) -> bool:
    a, b = model_to_dict(model), model_to_dict(reference)
    return a["histogram"] == b["histogram"] and a["spans"] == b["spans"] and a["privacy"] == b["privacy"]


def fit(capsys, tmp_path, path, *extra, name="m"):
    rc, out, err = run(capsys, "fit", path, *FIT, *QUIET_OUT, "--out-dir", tmp_path, "--name", name, *extra)
    model = load_model(tmp_path / f"{name}.spans.json") if rc == 0 else None
    return rc, out, err, model


@pytest.fixture(scope="module")
def data():
    return crowd()


# --------------------------------------------------------------------------- #
# every reader hands the units to the fit


def test_csv_with_header_gives_the_librarys_release(capsys, tmp_path, data):
    X, names = data
    path = csv_file(tmp_path, X, names)
    rc, out, err, model = fit(capsys, tmp_path, path, *UNIT, "--seed", "7")
    assert rc == 0, err
    assert same_release(model, library_release(X, names, 7))
    assert model.release.units is not None and model.release.noise == "gaussian"


def _write_parquet(path, X, names, unit_type):
    if unit_type == "dictionary":
        unit = pa.array(names.tolist()).dictionary_encode()
    else:
        unit = pa.array(names.tolist(), type=unit_type)
    table = pa.table({"x": X[:, 0], "y": X[:, 1], "person": unit})
    pq.write_table(table, path, row_group_size=997)  # several row groups and dictionaries


@pytest.mark.parametrize(
    "make, args",
    [
        ("noheader", ["--no-header", "--fields", "3", "--columns", "1", "2", "--unit", "0"]),
        ("noheader_default_fields", ["--no-header", "--unit", "2", "--bounds", "0", "0", "1", "1"]),
        ("gz", ["--header", "--unit", "person"]),
        ("tsv", ["--header", "--unit", "person"]),
        ("parquet_string", ["--unit", "person"]),
        ("parquet_dictionary", ["--unit", "person"]),
        ("parquet_directory", ["--columns", "x", "y", "--unit", "person"]),  # a folder names its columns
    ],
)
def test_every_reader_gives_the_same_release(capsys, tmp_path, data, make, args):
    X, names = data
    if make == "noheader":
        path = tmp_path / "p.csv"
        path.write_text(csv_text(X, names, header=None, unit_first=True))
    elif make == "noheader_default_fields":
        # without --fields: the bounds' 2 coordinates and the unit (3 fields)
        path = tmp_path / "p.csv"
        path.write_text(csv_text(X, names, header=None))
    elif make == "gz":
        path = tmp_path / "p.csv.gz"
        path.write_bytes(gzip.compress(csv_text(X, names).encode()))
    elif make == "tsv":
        path = tmp_path / "p.tsv"
        path.write_text(csv_text(X, names, header="x\ty\tperson").replace(",", "\t"))
    elif make.startswith("parquet_directory"):
        path = tmp_path / "dataset"
        path.mkdir()
        half = len(X) // 2
        _write_parquet(path / "part-0.parquet", X[:half], names[:half], pa.string())
        _write_parquet(path / "part-1.parquet", X[half:], names[half:], pa.string())
    else:
        path = tmp_path / "p.parquet"
        _write_parquet(path, X, names, pa.string() if make == "parquet_string" else "dictionary")
    rc, out, err, model = fit(capsys, tmp_path, path, *args, "--max-cells-per-unit", "20", "--seed", "7")
    assert rc == 0, err
    assert same_release(model, library_release(X, names, 7))


def test_standard_input(capsys, tmp_path, monkeypatch, data):
    X, names = data
    stdin = types.SimpleNamespace(buffer=io.BytesIO(csv_text(X, names).encode()))
    monkeypatch.setattr(sys, "stdin", stdin)
    rc, out, err, model = fit(capsys, tmp_path, "-", "--header", *UNIT, "--seed", "7")
    assert rc == 0, err
    assert same_release(model, library_release(X, names, 7))


def test_parquet_integer_units(capsys, tmp_path, data):
    X, names = data
    ids = np.array([int(n[1:]) if n != SECRET else 10**12 for n in names], dtype=np.int64)
    pq.write_table(pa.table({"x": X[:, 0], "y": X[:, 1], "person": ids}), tmp_path / "p.parquet")
    rc, out, err, model = fit(capsys, tmp_path, tmp_path / "p.parquet", *UNIT, "--seed", "3")
    assert rc == 0, err
    assert same_release(model, library_release(X, ids, 3))


# --------------------------------------------------------------------------- #
# rows without a unit are dropped, alone


def test_missing_units_are_dropped_and_counted(capsys, tmp_path, data):
    X, names = data
    text = csv_text(X, names).splitlines()
    # rows 1, 2 and 3 (after the header) lose their unit in three ways; row 4
    # has a unit but no y (counted as a missing value, not as a missing unit)
    text[1] = text[1].rsplit(",", 1)[0] + ","
    text[2] = text[2].rsplit(",", 1)[0] + ",NA"
    text[3] = text[3].rsplit(",", 1)[0] + ',""'
    text[4] = text[4].split(",")[0] + ",," + text[4].rsplit(",", 1)[1]
    path = tmp_path / "p.csv"
    path.write_text("\n".join(text) + "\n")
    rc, out, err, model = fit(capsys, tmp_path, path, *UNIT, "--seed", "7")
    assert rc == 0, err
    assert "[private: do not publish] 3 row(s) with no unit (column 'person', --unit) are dropped" in err
    keep = np.ones(len(X), dtype=bool)
    keep[:4] = False
    assert same_release(model, library_release(X[keep], names[keep], 7))


def test_missing_units_in_parquet_are_dropped(capsys, tmp_path, data):
    X, names = data
    units = names.tolist()
    units[0] = units[5] = None
    pq.write_table(pa.table({"x": X[:, 0], "y": X[:, 1], "person": units}), tmp_path / "p.parquet")
    rc, out, err, model = fit(capsys, tmp_path, tmp_path / "p.parquet", *UNIT, "--seed", "7")
    assert rc == 0, err
    assert "2 row(s) with no unit (column 'person', --unit) are dropped" in err
    keep = np.ones(len(X), dtype=bool)
    keep[[0, 5]] = False
    assert same_release(model, library_release(X[keep], names[keep], 7))


# --------------------------------------------------------------------------- #
# refused before anything is read or spent


def _no_records(monkeypatch):
    """Fail the test if any record is read (CSV blocks, Parquet batches)."""
    from dpdbscan.files import csvfile, reader

    def boom(*a, **k):
        raise AssertionError("a record was read")

    monkeypatch.setattr(csvfile, "read_blocks", boom)
    monkeypatch.setattr(reader, "_read_parquet", boom)


@pytest.mark.parametrize("kind", ["csv", "parquet", "noheader"])
def test_unknown_unit_column_is_refused_before_reading(capsys, tmp_path, monkeypatch, data, kind):
    X, names = data
    if kind == "parquet":
        path = tmp_path / "p.parquet"
        _write_parquet(path, X, names, pa.string())
        args = ["--unit", "cab"]
    elif kind == "csv":
        path = tmp_path / "p.csv"
        path.write_text(csv_text(X, names))
        args = ["--header", "--unit", "cab"]
    else:
        path = tmp_path / "p.csv"
        path.write_text(csv_text(X, names, header=None))
        args = ["--no-header", "--fields", "3", "--columns", "0", "1", "--unit", "5"]
    _no_records(monkeypatch)
    rc, out, err, model = fit(capsys, tmp_path, path, *args, "--max-cells-per-unit", "20")
    assert rc == 2 and model is None
    assert "--unit" in err and out == ""
    assert not list(tmp_path.glob("*.spans.*"))  # nothing released


def test_unit_named_as_a_coordinate_is_refused(capsys, tmp_path, data):
    X, names = data
    path = csv_file(tmp_path, X, names)
    rc, out, err, _ = fit(capsys, tmp_path, path, "--columns", "x", "person", *UNIT)
    assert rc == 2 and "privacy unit (--unit) and a coordinate" in err


def test_parquet_unit_of_another_type_is_refused_from_the_schema(capsys, tmp_path, monkeypatch, data):
    X, _ = data
    stamps = pa.array(np.arange(len(X)).astype("datetime64[s]"))
    pq.write_table(pa.table({"x": X[:, 0], "y": X[:, 1], "person": stamps}), tmp_path / "p.parquet")
    _no_records(monkeypatch)
    rc, out, err, _ = fit(capsys, tmp_path, tmp_path / "p.parquet", *UNIT)
    assert rc == 2 and "--unit column 'person' has type timestamp" in err


@pytest.mark.parametrize("choice", ["uniform", "busiest"])
def test_cell_choice_reaches_the_release_and_the_file(capsys, tmp_path, data, choice):
    """--cell-choice gives the library's release with the same choice; the
    crowd's units have 20 points in more than k = 5 cells, so the choice
    matters, and the two give different counts."""
    X, names = data
    path = csv_file(tmp_path, X, names)
    args = ["--unit", "person", "--max-cells-per-unit", "5", "--seed", "3", "--cell-choice", choice]
    rc, out, err, model = fit(capsys, tmp_path, path, *args, name=choice)
    assert rc == 0, err
    ref = library_release(X, names, 3, max_cells_per_unit=5, cell_choice=choice)
    assert same_release(model, ref)
    other = library_release(
        X, names, 3, max_cells_per_unit=5, cell_choice="uniform" if choice == "busiest" else "busiest"
    )
    assert model_to_dict(other)["histogram"] != model_to_dict(model)["histogram"]
    assert json.loads((tmp_path / f"{choice}.spans.json").read_text())["privacy"]["cell_choice"] == choice


def test_cell_choice_needs_units(capsys, tmp_path, data):
    X, names = data
    path = csv_file(tmp_path, X, names)
    rc, out, err, model = fit(capsys, tmp_path, path, "--cell-choice", "uniform")
    assert rc == 2 and model is None and "--cell-choice" in err and "--unit" in err


def test_unit_needs_its_bound(capsys, tmp_path, data):
    X, names = data
    path = csv_file(tmp_path, X, names)
    rc, _, err, _ = fit(capsys, tmp_path, path, "--unit", "person")
    assert rc == 2 and "--max-cells-per-unit is required" in err
    # without --delta too: both in the one message
    rc, _, err, _ = fit(capsys, tmp_path, path, "--unit", "person", "--delta", "0")
    assert rc == 2 and "--max-cells-per-unit is required" in err and "needs --delta > 0" in err


@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_the_dask_backend_gives_the_same_person_level_release(capsys, tmp_path, data, kind):
    pytest.importorskip("dask.dataframe")
    X, names = data
    if kind == "csv":
        path = csv_file(tmp_path, X, names)
        extra = ["--header"]
    else:
        path = tmp_path / "p.parquet"
        pq.write_table(pa.table({"x": X[:, 0], "y": X[:, 1], "person": names.tolist()}), path)
        extra = []
    dask = ["--backend", "dask", "--columns", "x", "y", *extra]
    rc, out, err, model = fit(capsys, tmp_path, path, *UNIT, *dask, "--seed", "7")
    assert rc == 0, err
    assert same_release(model, library_release(X, names, 7))
    assert SECRET not in out + err
    # the unit names a column, beside the coordinates' names: no index
    rc, _, err, _ = fit(capsys, tmp_path, path, "--unit", "2", "--max-cells-per-unit", "20", *dask)
    assert rc == 2 and "--unit with --backend dask names a column" in err


# --------------------------------------------------------------------------- #
# no unit value is ever printed or released


def test_unit_text_is_never_printed_or_released(capsys, tmp_path, data):
    X, names = data
    text = csv_text(X, names)
    # malformed lines and bad values that hold the secret too
    text += f'{SECRET},{SECRET},{SECRET},{SECRET}\n0.5,{SECRET},{SECRET}\n"{SECRET},0.5\n'
    path = tmp_path / "p.csv"
    path.write_text(text)
    outputs = []
    rc, out, err = run(
        capsys, "fit", path, *FIT, *UNIT, "--out-dir", tmp_path, "--name", "m", "--no-progress"
    )
    assert rc == 0, err
    outputs += [out, err]
    rc, out, err = run(capsys, "check", path, *FIT, *UNIT)
    assert rc == 0, err
    outputs += [out, err]
    rc, out, err = run(capsys, "info", tmp_path / "m.spans.json")
    outputs += [out, err]
    for written in tmp_path.glob("m.spans.*"):
        outputs.append(written.read_bytes().decode("latin-1"))
    assert not any(SECRET.lower() in text.lower() for text in outputs)


# --------------------------------------------------------------------------- #
# what the release says about itself


def test_summary_and_info_say_who_is_protected(capsys, tmp_path, data):
    X, names = data
    path = csv_file(tmp_path, X, names)
    rc, out, err, model = fit(capsys, tmp_path, path, *UNIT, "--noise", "gaussian")
    assert rc == 0, err
    rho = model.release.rho
    words = (
        "person-level: each unit (column person) is protected: at most 20 cells and 1 point per cell "
        f"per unit; (epsilon=1, delta=1e-06), rho={rho:.3g} zCDP"
    )
    assert f"  privacy : {words}\n" in out
    assert "  noise   : discrete Gaussian," in out
    doc = json.loads((tmp_path / "m.spans.json").read_text())
    priv = doc["privacy"]
    assert priv["unit"] == "unit" and priv["max_cells_per_unit"] == 20 and priv["max_points_per_cell"] == 1
    assert priv["noise"] == "gaussian" and priv["rho"] == pytest.approx(0.0244, abs=5e-5)
    assert doc["metadata"]["unit_column"] == "person"
    rc, out, err = run(capsys, "info", tmp_path / "m.spans.json")
    assert rc == 0 and f"protects : {words}" in out and "noise : discrete Gaussian" in out
    rc, out, err = run(capsys, "info", "--json", tmp_path / "m.spans.json")
    info = json.loads(out)
    assert info["unit_column"] == "person" and info["max_cells_per_unit"] == 20 and info["protects"] == words

    rc, out, err, model = fit(
        capsys, tmp_path, tmp_path / "p.csv", "--columns", "x", "y", "--delta", "0", name="e"
    )
    assert rc == 0, err
    assert "  privacy : event-level: each row is protected, not each person; (epsilon=1, delta=0)\n" in out
    assert "  noise   : discrete Laplace," in out


# --------------------------------------------------------------------------- #
# a column that looks like an id, and no --unit


def _note_lines(err):
    return [ln for ln in err.splitlines() if "protects each row, not each person" in ln]


@pytest.mark.parametrize("column", ["user_id", "cab", "deviceId", "driver"])
def test_an_id_like_column_without_unit_gets_one_note(capsys, tmp_path, data, column):
    X, names = data
    path = csv_file(tmp_path, X, names, header=f"x,y,{column}")
    rc, out, err, _ = fit(capsys, tmp_path, path, "--columns", "x", "y", "--delta", "0")
    assert rc == 0, err
    notes = _note_lines(err)
    assert len(notes) == 1 and f"--unit {column}" in notes[0] and not notes[0].startswith("[private")
    assert column not in out  # a note, never part of the release
    # with --unit, no note
    rc, out, err, _ = fit(capsys, tmp_path, path, "--unit", column, "--max-cells-per-unit", "20")
    assert rc == 0, err
    assert _note_lines(err) == []


@pytest.mark.parametrize(
    "header, args",
    [("x,y,grid", ["--columns", "x", "y"]), (None, ["--no-header", "--fields", "3", "--columns", "0", "1"])],
)
def test_no_note_without_an_id_like_name(capsys, tmp_path, data, header, args):
    X, names = data
    path = tmp_path / "p.csv"
    # values that look like ids decide nothing: only a declared name does
    path.write_text(csv_text(X, names, header=header))
    rc, out, err, _ = fit(capsys, tmp_path, path, *args, "--delta", "0")
    assert rc == 0, err
    assert _note_lines(err) == []


def test_the_note_comes_from_a_parquet_schema(capsys, tmp_path, data):
    X, names = data
    pq.write_table(pa.table({"x": X[:, 0], "y": X[:, 1], "taxi": names.tolist()}), tmp_path / "p.parquet")
    rc, out, err, _ = fit(capsys, tmp_path, tmp_path / "p.parquet", "--columns", "x", "y", "--delta", "0")
    assert rc == 0, err
    assert len(_note_lines(err)) == 1 and "--unit taxi" in _note_lines(err)[0]


# --------------------------------------------------------------------------- #
# check: the units, as private notes


def _private(err, head):
    got = [ln for ln in err.splitlines() if ln.startswith(f"[private: do not publish] {head}")]
    assert len(got) == 1, err
    return got[0]


def test_check_describes_the_units(capsys, tmp_path):
    # 40 units; unit u has u + 1 points, each in a cell of its own (a line
    # of cells along x), so the counts are known exactly
    grid = Grid(np.zeros(2), np.ones(2), 0.03, 4.0)
    w = grid.width
    X, names = [], []
    for u in range(40):
        for j in range(u + 1):
            X.append([(j + 0.5) * w, (u + 0.5) * w])
            names.append(f"q{u}")
    X, names = np.array(X), np.array(names, dtype=object)
    path = csv_file(tmp_path, X, names, name="u.csv")
    rc, out, err = run(capsys, "check", path, *FIT, *UNIT[:2], "--max-cells-per-unit", "10")
    assert rc == 0 and out == "", err
    assert "40 unit(s) in column 'person' among the 820 rows kept" in _private(err, "units")
    spread = "min 1, 10% 5, 25% 11, median 20, 75% 30, 90% 36, max 40"
    assert f"per unit: {spread}" in _private(err, "points")
    assert f"per unit, of the release's grid (width 0.0212132): {spread}" in _private(err, "cells")
    # unit u keeps min(1, 10 / (u + 1)) of its u + 1 points: 10 each for u >= 9
    kept = sum(min(u + 1, 10) for u in range(40)) / 820
    bound = _private(err, "bound")
    assert f"k = 10 cells per unit keeps {kept:.1%} of the points" in bound
    assert f"{30 / 40:.0%} of the units have more than k cells" in bound
    assert f"the bounded counts add up to {kept:.1%}" in bound
    n = sum(min(u + 1, 10) for u in range(40))
    assert f"measured against the about {n:,} unit-cell contributions the bounded counts hold" in _private(
        err, "forecast"
    )


def test_check_without_k_shows_the_quartiles_and_no_forecast(capsys, tmp_path, data):
    X, names = data
    path = csv_file(tmp_path, X, names)
    rc, out, err = run(capsys, "check", path, *FIT, "--unit", "person")
    assert rc == 0 and out == "", err
    assert "301 unit(s) in column 'person'" in _private(err, "units")
    # no private figure phrased as the k to use; k from public knowledge, or auto
    bound = _private(err, "bound")
    assert "public knowledge" in bound and "--max-cells-per-unit auto" in bound
    assert "keeps" not in err and "k = " not in err and "quartile" not in err
    assert "give --max-cells-per-unit K" in _private(err, "forecast")
    rc, out, err = run(capsys, "check", path, "--bounds", "0", "1", "--unit", "person", "--delta", "1e-6")
    assert rc == 0 and "per unit: min 20," in _private(err, "points")
    assert "give --eps and --min-samples" in _private(err, "cells")


def test_sweep_makes_one_person_level_release(capsys, tmp_path, data):
    X, names = data
    path = csv_file(tmp_path, X, names)
    rc, out, err = run(
        capsys,
        "sweep",
        path,
        "--eps",
        "0.03",
        "0.06",
        "--min-samples",
        "50",
        "--bounds",
        "0",
        "1",
        "--delta",
        "1e-6",
        *UNIT,
        "--seed",
        "7",
        *QUIET_OUT,
        "--out-dir",
        tmp_path,
    )
    assert rc == 0, err
    assert "privacy: person-level: each unit (column person) is protected: at most 20 cells" in out
    models = sorted(tmp_path.glob("*.spans.json"))
    assert len(models) == 2
    # the release is made at the smallest eps, the other re-parameterises it
    first = load_model(next(m for m in models if ".eps0.03." in m.name))
    assert same_release(first, library_release(X, names, 7))
    assert all(load_model(m).release.units is not None for m in models)


def test_a_person_level_model_file_follows_the_published_schema(capsys, tmp_path, data):
    jsonschema = pytest.importorskip("jsonschema")
    from importlib.resources import files

    X, names = data
    rc, out, err, _ = fit(capsys, tmp_path, csv_file(tmp_path, X, names), *UNIT)
    assert rc == 0, err
    schema = json.loads((files("dpdbscan.model") / "schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(json.loads((tmp_path / "m.spans.json").read_text()))


def test_a_delta_near_one_over_the_units_is_a_private_note_after_the_release(capsys, tmp_path, data):
    """The number of units is private: it never stops a release; a delta
    not far below one over it is said after the release, marked private."""
    X, names = data
    path = csv_file(tmp_path, X, names)
    fit = [a if a != "1e-6" else "0.005" for a in FIT]
    rc, out, err = run(capsys, "fit", path, *fit, *UNIT, *QUIET_OUT, "--out-dir", tmp_path, "--seed", "0")
    assert rc == 0 and (tmp_path / "p.spans.json").is_file(), err
    notes = [ln for ln in err.splitlines() if "one over the number of units" in ln]
    assert len(notes) == 1 and notes[0].startswith("[private: do not publish]")
    rc, out, err = run(capsys, "fit", path, *FIT, *UNIT, *QUIET_OUT, "--out-dir", tmp_path, "--seed", "0")
    assert rc == 0 and "one over the number of units" not in err


def test_forecast_takes_a_fits_unit_option(capsys):
    """A fit's command with ``forecast`` in place of ``fit`` (and no input)
    runs: --unit only names the unit; --max-cells-per-unit makes it person-level."""
    common = "--geo --bounds -122.6 37.55 -122.3 37.85 --eps 200m --min-samples 30 --delta 1e-6".split()
    common += ["--unit", "cab"]
    rc, out, err = run(capsys, "forecast", *common, "--max-cells-per-unit", "100")
    assert rc == 0, err
    ref_rc, ref, _ = run(capsys, "forecast", *common[:-2], "--max-cells-per-unit", "100")
    assert ref_rc == 0 and out == ref and "person-level" in out
    rc, out, err = run(capsys, "forecast", *common)
    assert rc == 2 and not out and "--unit makes a person-level release: give --max-cells-per-unit K" in err


@pytest.mark.parametrize("column", ["person", "subject_id"])
def test_an_id_like_column_read_as_a_coordinate_gets_a_note(capsys, tmp_path, data, column):
    """A table of readings beside each person's id, fitted with the default columns (every
    column but one named label): the id was read as a coordinate, every row of text ids was
    dropped and the release was empty, with no word on the id (the note skipped the columns
    chosen). Public: the declared header alone."""
    X, names = data
    path = csv_file(tmp_path, X, names, header=f"x,y,{column}")
    rc, out, err = run(
        capsys, "fit", path, "--header", "--bounds", "0", "1", "--eps", "0.05", "--min-samples", "5",
        "--delta", "0", *QUIET_OUT, "--out-dir", tmp_path,
    )  # fmt: skip
    assert rc == 0, err
    said = [ln for ln in err.splitlines() if "read as coordinates look like an id" in ln]
    assert len(said) == 1 and f"'{column}'" in said[0] and "--columns" in said[0], err
    assert f"--unit {column}" in said[0] and f"column {column}" not in out and repr(column) not in out
    # named coordinates: no such note
    rc, out, err = run(
        capsys, "fit", path, "--columns", "x", "y", "--bounds", "0", "1", "--eps", "0.05",
        "--min-samples", "5", "--delta", "0", *QUIET_OUT, "--out-dir", tmp_path,
    )  # fmt: skip
    assert rc == 0, err
    assert "read as coordinates look like an id" not in err


@pytest.mark.parametrize("command", ["fit", "check"])
def test_bounds_for_fewer_columns_than_the_default_reads_say_how_to_choose_them(
    capsys, tmp_path, data, command
):
    """Bounds for the readings (2 columns) of a file that also holds each person's id: the
    default columns are 3, and the refusal said "2*d = 6 numbers ... got 4" with no word on
    which columns were read or how to choose them."""
    X, names = data
    path = csv_file(tmp_path, X, names, header="x,y,person")
    rc, out, err = run(
        capsys, command, path, "--header", "--bounds", "0", "0", "1", "1", "--eps", "0.05",
        "--min-samples", "5",
    )  # fmt: skip
    assert rc == 2 and out == ""
    assert "got 4. The input gives d = 3 columns to cluster" in err
    assert "if the data have 2 coordinates, name them with --columns" in err
    # --columns given: no such advice
    rc, out, err = run(
        capsys, command, path, "--columns", "x", "y", "person", "--bounds", "0", "0", "1", "1",
        "--eps", "0.05", "--min-samples", "5",
    )  # fmt: skip
    assert rc == 2 and "got 4" in err and "name them with --columns" not in err
