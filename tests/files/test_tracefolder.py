"""A folder of trace files, one per person or vehicle (dpdbscan.files.tracefolder,
--unit-from file|folder), GeoLife's PLT format (dpdbscan.files.pltfile), and
the time and status read in the points' own pass.

A folder must give the rows, the units and the seeded release of the same
rows written as one CSV with a unit column; units are typed as text whatever
they look like; a bad row drops alone, a damaged file drops its rows (counted,
never quoted, never fatal); what the options or the listing refuse is refused
before a ledger reserves anything.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3

import numpy as np
import pytest
from pointfiles import BOX, FIT, SECRET, feature, fit, make_db, same_release, write_geojson, write_gpx

from dpdbscan.files import read_columns, read_input
from dpdbscan.model.describe import protection_fields
from dpdbscan.prepare import door

from clirun import run

pa = pytest.importorskip("pyarrow")

pytestmark = pytest.mark.filterwarnings(
    "ignore::dpdbscan.exceptions.InsecureRandomnessWarning", "ignore::dpdbscan.exceptions.UtilityWarning"
)

UNIT = ["--max-cells-per-unit", "3", "--delta", "1e-6"]
STOPS = ["--time", "time", "--stops", "100m", "5min"]
PLT_HEAD = [
    "Geolife trajectory",
    "WGS 84",
    "Altitude is in Feet",
    "Reserved 3",
    "0,2,255,My Track,0,0,2,8421376",
    "0",
]
EPOCH = dt.datetime(1899, 12, 30)


def traces(seed=0, n_units=120, per_unit=25):
    """Per unit: 15 minutes at one of two places, then a drive; a fix a minute.
    ``{unit name: [(lon, lat, datetime), ...]}``; the names look like numbers."""
    rng = np.random.default_rng(seed)
    out = {}
    for u in range(n_units):
        spot = np.array([[116.30, 39.90], [116.40, 39.95]][u % 3 == 0])
        pos = rng.uniform([116.1, 39.7], [116.5, 40.1])
        start = dt.datetime(2008, 10, 23, 2) + dt.timedelta(hours=u)
        rows = []
        for k in range(per_unit):
            p = spot + rng.normal(0, 2e-4, 2) if k < 15 else pos + rng.normal(0, 0.01, 2) * k
            rows.append((round(float(p[0]), 6), round(float(p[1]), 6), start + dt.timedelta(minutes=k)))
        out[f"{u:03d}"] = rows
    return out


def plt_text(rows, extra_lines=()):
    lines = list(PLT_HEAD)
    for x, y, t in rows:
        days = (t - EPOCH).total_seconds() / 86400
        lines.append(f"{y},{x},0,492,{days!r},{t:%Y-%m-%d},{t:%H:%M:%S}")
    return "\r\n".join([*lines, *extra_lines]) + "\r\n"


def write_geolife(root, units, per_file=2):
    """GeoLife's layout: root/<user>/Trajectory/<n>.plt, each user's rows cut
    into ``per_file`` files, and a labels.txt now and then (not a PLT file)."""
    for name, rows in units.items():
        folder = root / name / "Trajectory"
        folder.mkdir(parents=True)
        step = -(-len(rows) // per_file)
        for i in range(per_file):
            (folder / f"2008102{i}.plt").write_text(plt_text(rows[i * step : (i + 1) * step]))
        if name.endswith("0"):
            (root / name / "labels.txt").write_text("Start Time\tEnd Time\tTransportation Mode\n")
    return root


def write_unit_csv(path, units):
    """The same rows as one CSV, in the folder's order, the unit a column."""
    path.write_text(
        "lon,lat,unit,time\n"
        + "".join(f"{x!r},{y!r},{u},{t:%Y-%m-%dT%H:%M:%S}\n" for u, rows in units.items() for x, y, t in rows)
    )
    return path


# --------------------------------------------------------------------------- #
# the same rows, units and release as one CSV


def test_a_geolife_folder_gives_the_rows_units_times_and_release_of_the_same_csv(capsys, tmp_path):
    units = traces()
    root = write_geolife(tmp_path / "Data", units)
    csv = write_unit_csv(tmp_path / "all.csv", units)
    got = read_input(root, unit_from="folder", file_format="plt", also=("time",))
    want = read_input(csv, ["lon", "lat"], unit="unit")
    assert got.X.tobytes() == want.X.tobytes() and got.units.equals(want.units)
    assert got.n_skipped_files == sum(1 for n in units if n.endswith("0"))  # the labels.txt files
    times = read_columns(csv, "time")[0].to_pylist()
    assert got.companions[0].to_pylist() == [t.decode() for t in times]
    a, out, err = fit(
        capsys, tmp_path, root, "--unit-from", "folder", "--format", "plt", *UNIT, *STOPS, name="g"
    )
    b, _, _ = fit(capsys, tmp_path, csv, "--unit", "unit", *UNIT, *STOPS, name="c")
    assert a.n_spans >= 1 and same_release(a, b) and "each unit's stops" in out
    assert "labels.txt" not in err and "005" not in out + err


def test_units_are_text_whatever_they_look_like(tmp_path):
    """Folders '7' and '007' are two units, files 'a/1.plt' and 'b/1.plt' two files."""
    rows = traces(n_units=1)["000"]
    for name in ("7", "007", "7.0"):
        (tmp_path / "d" / name).mkdir(parents=True)
        (tmp_path / "d" / name / "1.plt").write_text(plt_text(rows))
    got = read_input(tmp_path / "d", unit_from="folder", file_format="plt")
    assert sorted(set(got.units.to_pylist())) == [b"007", b"7", b"7.0"]
    got = read_input(tmp_path / "d", unit_from="file", file_format="plt")
    assert sorted(set(got.units.to_pylist())) == [b"007/1.plt", b"7.0/1.plt", b"7/1.plt"]
    assert got.units.type == pa.binary()


def test_a_gpx_folder_with_a_unit_per_file(capsys, tmp_path):
    units = traces(seed=1)
    root = tmp_path / "gpx"
    root.mkdir()
    for name, rows in units.items():
        write_gpx(root / f"{name}.gpx", [[(x, y, f"{t:%Y-%m-%dT%H:%M:%S}Z") for x, y, t in rows]])
    (root / ".hidden.gpx").write_text(SECRET)  # not data
    csv = write_unit_csv(tmp_path / "all.csv", {f"{n}.gpx": r for n, r in units.items()})
    got = read_input(root, unit_from="file", file_format="gpx")
    want = read_input(csv, ["lon", "lat"], unit="unit")
    assert got.X.tobytes() == want.X.tobytes() and got.units.equals(want.units) and got.notes() == []
    a, out, _ = fit(capsys, tmp_path, root, "--unit-from", "file", "--format", "gpx", *UNIT, *STOPS, name="g")
    b, _, _ = fit(capsys, tmp_path, csv, "--unit", "unit", *UNIT, *STOPS, name="c")
    assert a.n_spans >= 1 and same_release(a, b)
    # what is protected is said as what one unit is, not as a column named "file"
    said = "each unit (one file of the input folder) is protected"
    assert said in out and "column file" not in out and " files " not in out
    props = protection_fields(a)  # the GeoJSON's top-level properties
    assert props["unit_from"] == "file" and said in props["protects"]


def test_a_tdrive_folder_of_csv_files_without_a_header(capsys, tmp_path):
    """T-Drive: one text file per taxi, ``id,datetime,lon,lat``, no header."""
    units = traces(seed=2)
    root = tmp_path / "taxi_log"
    root.mkdir()
    for name, rows in units.items():
        (root / f"{int(name)}.txt").write_text(
            "".join(f"{int(name)},{t:%Y-%m-%d %H:%M:%S},{x!r},{y!r}\n" for x, y, t in rows)
        )
    order = sorted(units, key=lambda n: f"{int(n)}.txt")
    csv = write_unit_csv(tmp_path / "all.csv", {f"{int(n)}.txt": units[n] for n in order})
    opts = ["--no-header", "--fields", "4", "--columns", "2", "3", "--time", "1", "--stops", "100m", "5min"]
    a, _, err = fit(capsys, tmp_path, root, "--unit-from", "file", "--format", "csv", *opts, *UNIT, name="t")
    b, _, _ = fit(capsys, tmp_path, csv, "--unit", "unit", *UNIT, *STOPS, name="c")
    assert a.n_spans >= 1 and same_release(a, b), err


# --------------------------------------------------------------------------- #
# the per-record rule, file by file


def test_bad_rows_drop_alone_and_damaged_files_drop_their_rows(capsys, tmp_path):
    units = traces(n_units=60, seed=3)
    root = write_geolife(tmp_path / "Data", units, per_file=1)
    good = read_input(root, unit_from="folder", file_format="plt")
    # a bad row and a malformed line in one file; a file of another format under a .plt name
    first = root / "001" / "Trajectory" / "20081020.plt"
    first.write_text(plt_text(units["001"], [f"{SECRET},116.3,0,1,1,2008-10-23,02:00:00", f"{SECRET}"]))
    (root / "002" / "Trajectory" / "20081020.plt").write_bytes(
        b"h\n" * 6 + b"\xff\xfe" + SECRET.encode() * 40
    )
    got = read_input(root, unit_from="folder", file_format="plt")
    assert got.n_unparseable == 1 and got.n_malformed == 1 + 1  # the other file: one undecodable line
    finite = got.X[np.isfinite(got.X).all(axis=1)]
    drop = np.array([u == b"002" for u in good.units.to_pylist()])
    assert finite.tobytes() == good.X[~drop].tobytes()
    # a GPX that is not XML: a damaged file, its rows dropped and counted, never fatal; one
    # with a broken point: that point dropped, counted, the points after it read
    gpx = tmp_path / "gpx"
    gpx.mkdir()
    write_gpx(gpx / "a.gpx", [[(116.3, 39.9, "2008-10-23T02:00:00Z")] * 5])
    (gpx / "b.gpx").write_text(
        f'<gpx><trk><trkseg><trkpt lat="39.9" lon="116.3"/><trkpt lat="1" lon="2"><{SECRET}</trkpt>'
        '<trkpt lat="39.9" lon="116.3"/></trkseg>'
    )
    (gpx / "c.gpx").write_text(f"<{SECRET}>")
    got = read_input(gpx, unit_from="file", file_format="gpx")
    assert got.X.shape == (7, 2) and got.n_damaged_files == 1 and got.n_damaged_rows == 0
    assert got.n_cut_files == 0 and got.n_broken_points == 1
    note = " ".join(got.notes())
    assert "1 file(s) of the folder could not be read" in note and SECRET not in note
    assert "1 GPX point(s) are not well-formed XML" in note
    rc, out, err = run(
        capsys, "fit", gpx, *FIT, "--unit-from", "file", "--format", "gpx", *UNIT, "--out-dir", tmp_path
    )
    assert rc == 0 and "could not be read" in err and "not well-formed" in err and SECRET not in out + err


def test_a_csv_file_whose_header_lacks_the_columns_is_a_damaged_file(tmp_path):
    root = tmp_path / "f"
    root.mkdir()
    (root / "a.csv").write_text("lon,lat,time\n116.3,39.9,1\n116.31,39.91,2\n")
    (root / "b.csv").write_text(f"{SECRET},lat,time\n116.3,39.9,1\n")
    got = read_input(root, ["lon", "lat"], unit_from="file", file_format="csv", header=True)
    assert got.X.shape == (2, 2) and got.n_damaged_files == 1 and SECRET not in " ".join(got.notes())


def test_a_folder_with_one_more_file_is_read_like_the_folder_and_that_file(tmp_path):
    units = traces(n_units=30, seed=4)
    root = write_geolife(tmp_path / "Data", units, per_file=1)
    before = read_input(root, unit_from="folder", file_format="plt", also=("time",))
    extra = {"099": traces(n_units=1, seed=9)["000"]}
    write_geolife(root, extra, per_file=1)
    after = read_input(root, unit_from="folder", file_format="plt", also=("time",))
    alone = write_geolife(tmp_path / "alone", extra, per_file=1)
    one = read_input(alone, unit_from="folder", file_format="plt", also=("time",))
    n = before.X.shape[0]  # '099' sorts after '000'...'029'
    assert after.X[:n].tobytes() == before.X.tobytes() and after.X[n:].tobytes() == one.X.tobytes()
    assert after.units.to_pylist() == before.units.to_pylist() + one.units.to_pylist()
    assert after.companions[0].to_pylist() == before.companions[0].to_pylist() + one.companions[0].to_pylist()


def test_files_are_read_one_at_a_time(tmp_path, monkeypatch):
    from dpdbscan.files import pltfile

    units = traces(n_units=5, seed=5)
    root = write_geolife(tmp_path / "Data", units, per_file=1)
    seen = []
    original = pltfile.read

    def spy(path):
        seen.append(path.parent.parent.name)
        return original(path)

    monkeypatch.setattr(pltfile, "read", spy)
    read_input(root, unit_from="folder", file_format="plt")
    assert seen == sorted(units)


# --------------------------------------------------------------------------- #
# refused from the options and the listing, before anything is charged


@pytest.mark.parametrize(
    "extra, match",
    [
        (["--unit-from", "folder"], "pass --format"),
        (["--unit-from", "folder", "--format", "parquet"], "not --format parquet"),
        (["--unit-from", "folder", "--format", "plt", "--unit", "x"], "not both"),
        (["--unit-from", "folder", "--format", "plt", "--columns", "x", "y"], "not --columns"),
        (
            ["--unit-from", "folder", "--format", "plt", "--backend", "dask", "--columns", "x", "y"],
            "not a folder of trace files",
        ),
        (["--unit-from", "folder", "--format", "csv", "--header"], "give the coordinates' number"),
        (["--unit-from", "folder", "--format", "csv"], "--header"),
        (
            ["--unit-from", "folder", "--format", "plt", "--time", "when", "--stops", "100m", "5min"],
            "no column 'when'",
        ),
    ],
)
def test_refused_before_the_ledger_reserves(capsys, tmp_path, extra, match):
    root = write_geolife(tmp_path / "Data", traces(n_units=3), per_file=1)
    ledger = tmp_path / "budget.ledger"
    rc, _, err = run(capsys, "ledger", "init", ledger, "--dataset", "d", "--epsilon", "5")
    assert rc == 0, err
    # a CSV folder with a header and no --geo, --bounds or --columns: no public number of coordinates
    fit_opts = (
        ["--eps", "0.3", "--min-samples", "10", "--bounds", "0", "1", *FIT[-4:]]
        if "--header" in extra
        else FIT
    )
    rc, out, err = run(capsys, "fit", root, *fit_opts, *UNIT, "--ledger", ledger, "--dataset", "d", *extra)
    assert rc == 2 and match in err, err
    con = sqlite3.connect(f"file:{ledger}?mode=ro", uri=True)
    assert con.execute("SELECT count(*) FROM releases").fetchone() == (0,)
    con.close()


def test_unit_from_folder_leaves_a_file_outside_every_unit_folder_alone(tmp_path):
    """A file directly in the folder is in no unit's sub-folder: left alone
    and counted, never a refusal (before, one stray file refused the whole
    read, so whether a release happened hinged on it); the units' rows read
    as without it."""
    root = write_geolife(tmp_path / "Data", traces(n_units=2), per_file=1)
    d = read_input(root, unit_from="folder", file_format="plt")
    (root / "loose.plt").write_text(plt_text(traces(n_units=1)["000"]).replace("39.", SECRET))
    d1 = read_input(root, unit_from="folder", file_format="plt")
    assert d1.X.tobytes() == d.X.tobytes() and d1.units.equals(d.units)
    assert d1.n_stray_files == 1 and d.n_stray_files == 0
    notes = " ".join(d1.notes())
    assert "1 file(s) lie directly in the folder" in notes and "loose" not in notes
    assert read_input(root, unit_from="file", file_format="plt").X.shape[0] == 75


def test_unit_from_needs_a_folder(tmp_path):
    path = tmp_path / "one.plt"
    path.write_text(plt_text(traces(n_units=1)["000"]))
    with pytest.raises(ValueError, match="give the folder"):
        read_input(path, unit_from="file")
    got = read_input(path, also=("time",))  # one PLT file, event-level
    assert (
        got.X.shape == (25, 2) and got.X[0, 0] > 116 and got.X[0, 1] < 41
    )  # lon, lat: latitude first in the file


# --------------------------------------------------------------------------- #
# the time and status in the points' own pass; GeoJSON units no feature has


def test_a_database_reads_time_and_status_in_the_points_pass(capsys, tmp_path, monkeypatch):
    rows = [
        (116.3 + 1e-5 * i, 39.9, f"p{i % 40}", 1_211_018_400 + 60 * (i // 40), i % 2) for i in range(1200)
    ]
    db = make_db(tmp_path / "t.sqlite", "x REAL, y REAL, person TEXT, time INTEGER, busy INTEGER", rows)
    got = read_input(db, ["x", "y"], unit="person", also=("time", "busy"))
    assert [c.to_pylist() for c in got.companions] == [[r[3] for r in rows], [r[4] for r in rows]]

    def second_pass(*a, **k):
        raise AssertionError("read in a second pass")

    monkeypatch.setattr(door, "read_columns", second_pass)
    rc, out, err = run(
        capsys,
        "check",
        db,
        "--columns",
        "x",
        "y",
        "--geo",
        *BOX,
        "--eps",
        "300m",
        "--min-samples",
        "5",
        "--unit",
        "person",
        *UNIT,
        *STOPS,
    )
    assert rc == 0, err


def test_a_geojson_unit_property_no_feature_has_is_said(capsys, tmp_path):
    path = write_geojson(tmp_path / "p.geojson", [feature(116.3, 39.9, {"cab": "a"})] * 50)
    got = read_input(path, unit="person")
    assert got.n_no_unit_property and "no feature has the property 'person'" in " ".join(got.notes())
    assert not read_input(path, unit="cab").n_no_unit_property
    rc, out, err = run(
        capsys, "check", path, "--geo", *BOX, "--eps", "300m", "--min-samples", "5", "--unit", "person", *UNIT
    )
    assert rc == 0 and "no feature has the property 'person'" in err, err


def test_the_ledger_says_what_one_unit_of_a_folder_is(capsys, tmp_path):
    """A budget per file (or sub-folder) of a folder: registered with
    ``ledger init --unit-from``, charged by ``fit --unit-from`` alone, and
    worded as the release's summary words it, never as a column 'file'."""
    root = write_geolife(tmp_path / "Data", traces(n_units=40), per_file=1)
    ledger = tmp_path / "budget.ledger"
    rc, out, err = run(
        capsys,
        "ledger",
        "init",
        ledger,
        "--dataset",
        "d",
        "--epsilon",
        "5",
        "--delta",
        "1e-5",
        "--unit-from",
        "folder",
    )
    assert rc == 0 and "per person: each unit (one sub-folder of the input folder)" in out, err
    fit_opts = [*FIT, *UNIT, "--unit-from", "folder", "--format", "plt", "--ledger", ledger, "--dataset", "d"]
    rc, out, err = run(capsys, "fit", root, *fit_opts, "--out-dir", tmp_path)
    assert rc == 0 and "each unit (one sub-folder of the input folder) is protected" in out, err
    rc, shown, err = run(capsys, "ledger", "show", ledger)
    assert rc == 0 and "per person: each unit (one sub-folder of the input folder)" in shown, err
    assert "person (one sub-folder of the input folder)" in shown and "'folder'" not in shown
    # a budget of another unit refuses the release before charging it: each file, or a column 'folder'
    for other in (["--unit-from", "file"], ["--unit", "folder"]):
        other_ledger = tmp_path / f"{other[0]}.ledger"
        rc, _, err = run(capsys, "ledger", "init", other_ledger, "--dataset", "d", "--epsilon", "5", *other)
        assert rc == 0, err
        fit_opts[-3] = other_ledger
        rc, _, err = run(capsys, "fit", root, *fit_opts, "--out-dir", tmp_path)
        assert rc != 0 and "this release protects each unit (one sub-folder of the input folder)" in err, err
        con = sqlite3.connect(f"file:{other_ledger}?mode=ro", uri=True)
        assert con.execute("SELECT count(*) FROM releases").fetchone() == (0,)
        con.close()
    rc, _, err = run(
        capsys,
        "ledger",
        "init",
        tmp_path / "x.ledger",
        "--dataset",
        "d",
        "--epsilon",
        "5",
        "--unit",
        "u",
        "--unit-from",
        "file",
    )
    assert rc == 2 and "not both" in err


def _gpx_points(n: int, start: int = 0) -> str:
    return "".join(
        f'<trkpt lat="{39.9 + i * 1e-5:.6f}" lon="{116.3 + i * 1e-5:.6f}"><time>{i}</time></trkpt>\n'
        for i in range(start, start + n)
    )


@pytest.mark.parametrize("n_before", [1, 50, 40_000])
def test_a_gpx_file_s_broken_point_drops_alone(tmp_path, n_before):
    """Issue 28's per-record rule: where a GPX file's XML breaks (cut, or a
    stray character), every point whose element ended before is kept --
    not only whole chunks of 32,768 -- the broken point is dropped, the
    points after it are read (reading goes on at the next point's tag), and
    the note counts the broken one; alone or in a folder."""
    whole = f"<gpx><trk><trkseg>\n{_gpx_points(n_before)}"
    single = tmp_path / "one.gpx"
    cut = whole + '<trkpt lat="1" lon="2"><time>3'
    broken = whole + f'<trkpt lat="1" lon="2"><{SECRET}&\n' + _gpx_points(5, n_before)
    for text, n in ((cut, n_before), (broken, n_before + 5)):
        single.write_text(text)
        got = read_input(single, also=("time",))
        assert got.X.shape == (n, 2) and got.n_read_before_damage is None and got.n_broken_points == 1
        assert got.companions is not None and got.companions[0].to_pylist() == [str(i) for i in range(n)]
        note = " ".join(got.notes())
        assert "1 GPX point(s) are not well-formed XML" in note and SECRET not in note
    folder = tmp_path / "gpx"
    folder.mkdir()
    (folder / "a.gpx").write_text(broken)
    (folder / "b.gpx").write_text(f"<gpx><trk><trkseg>\n{_gpx_points(3)}</trkseg></trk></gpx>\n")
    got = read_input(folder, unit_from="file", file_format="gpx", also=("time",))
    assert got.X.shape == (n_before + 5 + 3, 2) and got.n_cut_files == 0 and got.n_broken_points == 1
    assert got.units.to_pylist() == [b"a.gpx"] * (n_before + 5) + [b"b.gpx"] * 3
    assert got.n_damaged_files == 0 and SECRET not in " ".join(got.notes())


def test_cut_plt_and_headerless_csv_files_of_a_folder_keep_their_lines_before_the_cut(tmp_path):
    units = traces(n_units=3, seed=5, per_unit=40)
    root = write_geolife(tmp_path / "Data", units, per_file=1)
    whole = read_input(root, unit_from="folder", file_format="plt", also=("time",))
    first = next((root / "000" / "Trajectory").glob("*.plt"))
    text = first.read_bytes()
    lines = text.splitlines(keepends=True)
    first.write_bytes(b"".join(lines[: 6 + 20]) + lines[6 + 20][:9])  # 20 lines, then part of one
    got = read_input(root, unit_from="folder", file_format="plt", also=("time",))
    keep = np.array([u != b"000" for u in whole.units.to_pylist()])
    keep[np.flatnonzero(~keep)[:20]] = True
    assert got.X.shape[0] == keep.sum() + 1 and got.n_malformed == 1  # the cut line: malformed, dropped
    finite = np.isfinite(got.X).all(axis=1)
    assert got.X[finite].tobytes() == whole.X[keep].tobytes()
    csv = tmp_path / "csv"
    csv.mkdir()
    rows = [f"7,{t},{116.3 + i * 1e-4},{39.9}\n" for i, t in enumerate(range(1000, 1040))]
    (csv / "a.txt").write_text("".join(rows)[:-12])  # the last line cut
    (csv / "b.txt").write_text("".join(rows[:5]))
    got = read_input(
        csv, unit_from="file", file_format="csv", columns=[2, 3], header=False, fields=4, also=(1,)
    )
    finite = np.isfinite(got.X).all(axis=1)
    assert finite.sum() == 39 + 5 and got.n_damaged_files == 0


@pytest.mark.parametrize("header", [True, False])
def test_a_cut_gzip_csv_file_of_a_folder_keeps_its_rows_before_the_cut(capsys, tmp_path, header):
    """A .csv.gz file cut part-way (an interrupted download) reads as the
    intact gzip file of the text before the cut: its rows kept, the file
    counted as cut, nothing quoted; the fit with --time --stops releases."""
    import gzip
    import zlib

    units = traces(n_units=30, seed=6, per_unit=40)
    folders = {}
    for name in ("cut", "oracle"):
        root = folders[name] = tmp_path / name
        root.mkdir()
        for unit, rows in units.items():
            text = ("lon,lat,time\n" if header else "") + "".join(
                f"{x!r},{y!r},{t:%Y-%m-%dT%H:%M:%S}\n" for x, y, t in rows
            )
            (root / f"{unit}.csv.gz").write_bytes(gzip.compress(text.encode()))
    victim = sorted(folders["cut"].iterdir())[1]
    data = victim.read_bytes()
    victim.write_bytes(data[: len(data) * 2 // 3])
    inflated = zlib.decompressobj(wbits=31).decompress(data[: len(data) * 2 // 3])
    (folders["oracle"] / victim.name).write_bytes(gzip.compress(inflated))
    opts = (
        {"columns": ["lon", "lat"], "header": True, "also": ("time",)}
        if header
        else {"columns": [0, 1], "header": False, "fields": 3, "also": (2,)}
    )
    got = read_input(folders["cut"], unit_from="file", file_format="csv.gz", **opts)
    want = read_input(folders["oracle"], unit_from="file", file_format="csv.gz", **opts)
    np.testing.assert_array_equal(got.X, want.X)
    assert got.units.equals(want.units) and got.companions[0].equals(want.companions[0])
    n_rows = int(np.count_nonzero(want.units.to_numpy(zero_copy_only=False) == victim.name.encode()))
    assert 0 < n_rows < 40 and got.n_damaged_files == 0
    assert got.n_cut_files == 1 and got.n_cut_rows == n_rows and want.n_cut_files == 0
    note = " ".join(got.notes())
    assert f"1 file(s) of the folder stop being valid part-way: their {n_rows} row(s)" in note
    cli = (
        ["--columns", "lon", "lat", "--header"]
        if header
        else ["--columns", "0", "1", "--no-header", "--fields", "3"]
    )
    stops = ["--time", "time" if header else "2", "--stops", "100m", "5min"]
    a, _, err = fit(
        capsys,
        tmp_path,
        folders["cut"],
        "--unit-from",
        "file",
        "--format",
        "csv.gz",
        *cli,
        *stops,
        *UNIT,
        name="c",
    )
    b, _, _ = fit(
        capsys,
        tmp_path,
        folders["oracle"],
        "--unit-from",
        "file",
        "--format",
        "csv.gz",
        *cli,
        *stops,
        *UNIT,
        name="o",
    )
    assert same_release(a, b) and "part-way" in err, err


def test_check_and_forecast_speak_of_a_folders_units_as_fit_does(capsys, tmp_path):
    """A T-Drive folder's user runs ``check`` and ``forecast`` with fit's own ``--unit-from``:
    check counts the units as one file each (there is no column 'file'), and the forecast,
    which reads no folder, takes ``--unit-from`` as it takes ``--unit``."""
    units = traces(seed=4, n_units=30)
    root = tmp_path / "taxi_log"
    root.mkdir()
    for name, rows in units.items():
        (root / f"{int(name)}.txt").write_text(
            "".join(f"{int(name)},{t:%Y-%m-%d %H:%M:%S},{x!r},{y!r}\n" for x, y, t in rows)
        )
    opts = ["--no-header", "--fields", "4", "--columns", "2", "3", "--time", "1", "--stops", "100m", "5min"]
    rc, out, err = run(
        capsys, "check", root, "--unit-from", "file", "--format", "csv", *opts, "--geo", *BOX,
        "--eps", "300m", "--min-samples", "5", *UNIT,
    )  # fmt: skip
    assert rc == 0 and out == "", err
    assert "30 unit(s) (one file of the input folder each)" in err and "column 'file'" not in err
    plan = ["--geo", *BOX, "--eps", "300m", "--min-samples", "5", "--time", "1", "--stops", "100m", "5min"]
    rc, out, err = run(capsys, "forecast", *plan, "--unit-from", "file", *UNIT, "--json")
    assert rc == 0, err
    got = json.loads(out)
    assert got["unit_from"] == "file" and got["unit_column"] is None and got["privacy_level"] == "person"
    assert "each unit (one file of the input folder) would be protected" in got["protects"]
    rc, out, err = run(capsys, "forecast", *plan, "--unit-from", "file", "--unit", "taxi", *UNIT)
    assert rc == 2 and "--unit-from replaces --unit" in err
    rc, out, err = run(capsys, "forecast", *plan, "--unit-from", "folder", "--delta", "1e-6")
    assert rc == 2 and "--unit-from makes a person-level release" in err
