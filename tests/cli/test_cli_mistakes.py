"""Forty-odd mistakes a new user makes on the command line (issue 23), through
the real command: each gets one line ``dpdbscan <command>: error: ...`` on
standard error with the message below, exit status 2, and spends nothing:
the mechanism is never called, nothing is printed on standard output (the
release) and no file or folder is made. Most are caught from public inputs
before the file is opened; none quotes a value read from a data file.

The rows: (mistake, command line with {placeholders}, expected substring).
"""

from __future__ import annotations

import numpy as np
import pytest

from clirun import blob_points, run, write_csv

SF = "-122.48 37.72 -122.38 37.82"
GEO = f"--header --geo --bounds {SF} --eps 50m --min-samples 1000 --out-dir {{out}}"
PLAIN = "--header --eps 0.5 --min-samples 20 --bounds 0 0 10 10 --out-dir {out}"
PERSON = (
    f"--header --geo --columns x y --bounds {SF} --eps 200m --min-samples 30 --unit id "
    "--max-cells-per-unit 5 --delta 1e-6 --out-dir {out}"
)

MISTAKES = [
    # options misspelt or missing
    (
        "a typo in a required option",
        "fit {trips} --header --geo --bounds " + SF + " --eps 50m --min-smaples 1000",
        "unknown option(s) --min-smaples (did you mean --min-samples?)",
    ),
    (
        "a typo in an optional option",
        "fit {blobs} " + PLAIN + " --epsilom 2",
        "--epsilom (did you mean --epsilon?)",
    ),
    (
        "a single dash on a long option",
        "fit {blobs} " + PLAIN + " -epsilon 2",
        "-epsilon (did you mean --epsilon?)",
    ),
    (
        "a stray word",
        "fit {blobs} " + PLAIN + " quickly",
        "unrecognized arguments: quickly (see 'dpdbscan fit --help')",
    ),
    (
        "no --min-samples",
        "fit {blobs} --header --eps 0.5 --bounds 0 10 --out-dir {out}",
        "the following arguments are required: --min-samples",
    ),
    (
        "no --bounds",
        "fit {blobs} --header --eps 0.5 --min-samples 20 --out-dir {out}",
        "--bounds is required",
    ),
    ("a misspelt command", "fti {blobs} " + PLAIN, "invalid choice: 'fti'"),
    ("no command at all", "", "the following arguments are required: COMMAND"),
    # eps and its unit
    (
        "--geo with eps as a bare number",
        "fit {trips} --header --geo --bounds " + SF + " --eps 50 --min-samples 1000",
        "with --geo give eps with a unit, such as 50m or 50km",
    ),
    (
        "an eps as large as the city",
        "fit {trips} " + GEO.replace("50m", "50km"),
        "at least the public box's longest side",
    ),
    (
        "an eps as large as the box",
        "fit {blobs} " + PLAIN.replace("--eps 0.5", "--eps 20"),
        "at least the public box's longest side",
    ),
    (
        "a length without --geo",
        "fit {blobs} " + PLAIN.replace("--eps 0.5", "--eps 50m"),
        "only makes sense with --geo",
    ),
    ("a negative eps", "fit {blobs} " + PLAIN.replace("--eps 0.5", "--eps -1"), "--eps"),
    ("eps is a word", "fit {blobs} " + PLAIN.replace("--eps 0.5", "--eps wide"), "eps must be a number"),
    # bounds
    (
        "reversed --geo bounds",
        "fit {trips} --header --geo --bounds -122.38 37.82 -122.48 37.72 --eps 50m --min-samples 1000",
        "--bounds -122.48 37.72 -122.38 37.82",
    ),
    (
        "bounds as xmin xmax ymin ymax",
        "fit {blobs} --header --eps 0.5 --min-samples 20 --bounds 0 10 0 5",
        "--bounds 0 0 10 5",
    ),
    (
        "latitude first in --geo bounds",
        "fit {trips} --header --geo --bounds 37.72 -122.48 37.82 -122.38 --eps 50m --min-samples 1000",
        "lat_min",
    ),
    (
        "three numbers for a --geo box",
        "fit {trips} --header --geo --bounds -122.48 37.72 -122.38 --eps 50m --min-samples 1000",
        "needs 4 numbers in degrees",
    ),
    (
        "bounds that are not numbers",
        "fit {blobs} --header --eps 0.5 --min-samples 20 --bounds west east",
        "--bounds must be numbers, got 'west'",
    ),
    (
        "bounds and bounds from the data",
        "fit {blobs} " + PLAIN + " --bounds-from-data",
        "give either --bounds or --bounds-from-data",
    ),
    # the file and how to read it
    (
        "a missing input file",
        "fit {dir}/nope.csv " + PLAIN.replace("{out}", "{out}/zz/deeper"),
        "input file not found",
    ),
    (
        "a CSV without --header or --no-header",
        "fit {blobs} --eps 0.5 --min-samples 20 --bounds 0 10",
        "pass --header",
    ),
    (
        "an id,x,y,time file with --geo",
        "fit {four} " + GEO,
        "got 4 (id, x, y, time); choose them with --columns x y",
    ),
    ("a column the header does not have", "fit {blobs} " + PLAIN + " --columns lon lat", "no column 'lon'"),
    ("a column number past the end", "fit {blobs} " + PLAIN + " --columns 0 7", "out of range"),
    ("a folder as input", "fit {dir} " + PLAIN, "input is a folder"),
    (
        "too many columns for any core test",
        "fit {wide} --eps 0.5 --min-samples 5 --bounds 0 1 --out-dir {out}",
        "nothing is released",
    ),
    (
        "--png on 3-D data",
        "fit {xyz} --header --eps 0.5 --min-samples 5 --bounds 0 10 --png {out}/x.png",
        "--png needs 2-D data",
    ),
    # where the release goes
    (
        "an output folder that cannot be made",
        "fit {blobs} " + PLAIN.replace("{out}", "/proc/dpdbscan-out"),
        "cannot write outputs to /proc/dpdbscan-out",
    ),
    (
        "an output folder that is a file",
        "fit {blobs} " + PLAIN.replace("{out}", "{blobs}"),
        "is not a folder",
    ),
    (
        "the model written over the input",
        "fit {blobs} " + PLAIN + " --json {blobs}",
        "would overwrite the input file",
    ),
    ("the model path is a folder", "fit {blobs} " + PLAIN + " --json {dir}", "is a folder, not a file"),
    # privacy and method parameters
    ("epsilon zero", "fit {blobs} " + PLAIN + " --epsilon 0", "--epsilon must be a finite number > 0"),
    ("an epsilon that protects nothing", "fit {blobs} " + PLAIN + " --epsilon 1e6", "--epsilon"),
    (
        "min_samples with a fraction",
        "fit {blobs} " + PLAIN.replace("--min-samples 20", "--min-samples 2.5"),
        "--min-samples",
    ),
    (
        "the stability histogram without delta",
        "fit {blobs} " + PLAIN + " --histogram stability",
        "needs --delta > 0",
    ),
    ("a histogram that does not exist", "fit {blobs} " + PLAIN + " --histogram magic", "--histogram"),
    (
        "the paper's margin with the density test",
        "fit {blobs} " + PLAIN + " --margin paper",
        "'paper' is the bound test's Gamma",
    ),
    (
        "--ref-lat without --geo",
        "fit {blobs} " + PLAIN + " --ref-lat 40",
        "--ref-lat only applies with --geo",
    ),
    (
        "a scheduler without Dask",
        "fit {blobs} " + PLAIN + " --scheduler tcp://h:1",
        "--scheduler needs --backend dask",
    ),
    # sweep and the other commands
    (
        "sweep a model with a new epsilon",
        "sweep --model {model} --min-samples 10 --epsilon 5 --out-dir {out}",
        "shape",
    ),
    (
        # which points a release counts is the fit's: a saved release was read already
        "sweep a model dropping the points outside",
        "sweep --model {model} --min-samples 10 --outside drop --out-dir {out}",
        "--outside shape(s) a new release",
    ),
    ("sweep with neither file nor model", "sweep --min-samples 5 --out-dir {out}", "either an input"),
    (
        "forecast --geo with a bare eps",
        "forecast --geo --bounds " + SF + " --eps 50 --min-samples 1000",
        "with --geo give eps with a unit",
    ),
    ("check without --header", "check {blobs} --eps 0.5 --min-samples 20 --bounds 0 10", "pass --header"),
    ("predict with a missing model", "predict {dir}/none.json {blobs} --header", "model file not found"),
    (
        "predict with one column for a 2-D model",
        "predict {model} {blobs} --header --columns x",
        "1 column(s) selected (x), but the model has 2",
    ),
    ("predict without --header", "predict {model} {blobs}", "pass --header"),
    ("info on a GeoJSON file", "info {geojson}", "not a dpdbscan span model"),
    ("plot labels without points", "plot {model} --kind labels", "needs --points"),
    # stops: the values of --stops, and the time column
    (
        "--stops with its radius alone",
        "fit {four} " + PERSON + " --time time --stops 0.1km",
        "expected 2 arguments; write its values one after the other: --stops 100m 5min",
    ),
    (
        "--stops with a space inside the duration",
        "fit {four} " + PERSON + " --time time --stops 100m 5 min",
        "unrecognized arguments: min; a number and its unit are one value, without a space: 5min",
    ),
    (
        "--stops with minutes written m",
        "fit {four} " + PERSON + " --time time --stops 100m 5m",
        "got '5m': m is metres, minutes are min",
    ),
    (
        "--time naming a column the header lacks",
        "fit {four} " + PERSON + " --time timestamp --stops 100m 5min",
        "--time 'timestamp' is not a column of the file (columns: 'id', 'x', 'y', 'time')",
    ),
    # one row per trip (Porto's taxi trips): the points are a list in one column
    (
        "a table of trips with --geo",
        "fit {porto} --header --geo --bounds -8.7 41.1 -8.55 41.25 --eps 200m --min-samples 30 "
        "--unit TAXI_ID --max-cells-per-unit 5 --delta 1e-6 --time TIMESTAMP --stops 100m 5min",
        "column 'POLYLINE' holds each trip's points as one list (one row per trip, as in Porto's taxi "
        "trips), not a coordinate: dpdbscan reads one row per point. Convert the trips to one row per "
        "point first",
    ),
    (
        "a trip's polyline chosen as the coordinates",
        "check {porto} --header --geo --columns POLYLINE --bounds -8.7 41.1 -8.55 41.25 --eps 200m "
        "--min-samples 30",
        "python docs/examples/polyline_points.py train.csv points.csv",
    ),
]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The inputs the rows name, made once; a saved model for the commands
    that read one."""
    from dpdbscan.cli import main

    d = tmp_path_factory.mktemp("inputs")
    rng = np.random.default_rng(0)
    P = np.vstack([rng.normal(c, [0.0004, 0.0003], (500, 2)) for c in ([-122.41, 37.79], [-122.44, 37.76])])
    files = {
        "dir": d,
        "blobs": write_csv(d / "blobs.csv", blob_points()),
        "trips": write_csv(d / "trips.csv", P),
        "four": d / "four.csv",
        "xyz": d / "xyz.csv",
        "wide": d / "wide.npy",
        "geojson": d / "other.geojson",
    }
    files["four"].write_text(
        "id,x,y,time\n" + "".join(f"{i},{a!r},{b!r},{7 * i}\n" for i, (a, b) in enumerate(P.tolist()))
    )
    files["xyz"].write_text("x,y,z\n1,2,3\n4,5,6\n")
    files["porto"] = d / "train.csv"
    files["porto"].write_text(
        '"TRIP_ID","TAXI_ID","TIMESTAMP","MISSING_DATA","POLYLINE"\n'
        '"1","20000001","1372636858","False","[[-8.618643,41.141412],[-8.618499,41.141376]]"\n'
    )
    np.save(files["wide"], rng.random((50, 10)))
    files["geojson"].write_text('{"type": "FeatureCollection", "features": []}')
    assert (
        main(
            [
                "fit",
                str(files["blobs"]),
                "--header",
                "--eps",
                "0.5",
                "--min-samples",
                "20",
                "--bounds",
                "0",
                "10",
                "--out-dir",
                str(d / "model"),
                "--no-png",
                "-q",
            ]
        )
        == 0
    )
    files["model"] = d / "model" / "blobs.spans.json"
    return files


def _tree(root):
    return sorted((p.relative_to(root), p.stat().st_size) for p in root.rglob("*"))


def test_the_table_has_forty_mistakes():
    assert len(MISTAKES) >= 40 and len({m[0] for m in MISTAKES}) == len(MISTAKES)


@pytest.mark.parametrize("argv,expected", [m[1:] for m in MISTAKES], ids=[m[0] for m in MISTAKES])
def test_a_mistake_gets_one_line_status_2_and_spends_nothing(
    capsys, monkeypatch, tmp_path, files, argv, expected
):
    import dpdbscan.pipeline as pipeline
    import dpdbscan.release.mechanism as mechanism

    spent = []

    def spend(*args, **kwargs):
        spent.append(args)
        raise AssertionError("a mistake reached the mechanism")

    monkeypatch.setattr(pipeline, "release_histogram", spend)
    monkeypatch.setattr(mechanism, "release_histogram", spend)
    out_dir = tmp_path / "out"
    words = [w.format(out=out_dir, **files) for w in argv.split()]
    before = _tree(files["dir"]), _tree(tmp_path)
    rc, out, err = run(capsys, *words)
    lines = err.strip().splitlines()
    command = words[0] if words and not words[0].startswith("-") and words[0] != "fti" else None
    prefix = f"dpdbscan {command}: error: " if command else "dpdbscan: error: "
    assert rc == 2, err
    assert len(lines) == 1 and lines[0].startswith(prefix), err
    assert expected in lines[0], lines[0]
    assert "[Errno" not in err and "Traceback" not in err
    # no budget spent: the mechanism was never called, no release printed, nothing written
    assert spent == [] and out == ""
    assert (_tree(files["dir"]), _tree(tmp_path)) == before


@pytest.mark.parametrize("header", ["lon,lat", "Longitude,Latitude", "lat,lng"])
def test_lonlat_columns_without_geo_get_a_note_naming_geo(capsys, tmp_path, header):
    """Columns named as longitude and latitude fitted without --geo: the fit
    runs (the options may be meant), and a note on standard error, never
    part of the release, says eps is then in degrees and names --geo. From
    the names alone; with --geo, or with other names, no note."""
    rng = np.random.default_rng(0)
    P = rng.normal([-122.41, 37.79], 0.001, (400, 2))
    path = tmp_path / "p.csv"
    path.write_text(header + "\n" + "".join(f"{a!r},{b!r}\n" for a, b in P.tolist()))
    plain = ["--bounds", *SF.split(), "--eps", "0.001", "--min-samples", "5", "--no-png", "--seed", "0"]
    rc, out, err = run(capsys, "fit", path, "--header", *plain, "--out-dir", tmp_path / "a")
    assert rc == 0, err
    a, b = header.split(",")
    lon, lat = (a, b) if a.lower().startswith(("lon", "lng")) else (b, a)
    (note,) = [x for x in err.splitlines() if "named as longitude and latitude" in x]
    assert note.startswith(f"dpdbscan: note: the columns {lon!r} and {lat!r}") and "pass --geo" in note
    assert "longitude" not in out
    geo = ["--bounds", *SF.split(), "--geo", "--eps", "100m", "--min-samples", "5", "--no-png", "--seed", "0"]
    if a.lower().startswith("lon"):
        rc, out, err = run(capsys, "fit", path, "--header", *geo, "--out-dir", tmp_path / "b")
        assert rc == 0, err
        assert "named as longitude and latitude" not in err
    path.write_text("x,y\n" + "".join(f"{a!r},{b!r}\n" for a, b in P.tolist()))
    rc, out, err = run(capsys, "fit", path, "--header", *plain, "--out-dir", tmp_path / "c")
    assert rc == 0 and "named as longitude and latitude" not in err
