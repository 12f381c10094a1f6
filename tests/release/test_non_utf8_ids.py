"""Round 8 of the privacy review: a text id or value whose bytes are not UTF-8.

Arrow does not check that a Parquet file's strings are UTF-8, and SQLite does
not check its TEXT values (docs/privacy.md §8, "round 8"). Before, one such
id made the bounding's reading of the ids fail ("'utf-8' codec can't decode
byte 0xff ...": a message quoting a byte of the data), so whether anything was
released hinged on one row. Now such an id is a unit by its bytes (as a CSV
field's bytes are), and every other id is read as before.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpdbscan import DPDBSCAN, load_model
from dpdbscan.model.codec import model_to_dict
from dpdbscan.release.bounding import factorize

from clirun import run

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

pytestmark = pytest.mark.filterwarnings(
    "ignore::dpdbscan.exceptions.InsecureRandomnessWarning", "ignore::dpdbscan.exceptions.UtilityWarning"
)

BAD = b"\xc3\xff("  # not UTF-8


def _texts(raw: list[bytes | None], kind: str):
    """Arrow text of these bytes, unchecked (as a Parquet reader gives it)."""
    arr = pa.array(raw, pa.binary()).view(pa.string())
    if kind == "large":
        return pa.array(raw, pa.large_binary()).view(pa.large_string())
    if kind == "dictionary":
        return arr.dictionary_encode()
    return arr


def _people(n_units=60, per_unit=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal([2.0, 2.0], 0.05, (n_units * per_unit, 2))
    ids = [f"p{i}".encode() for i in np.repeat(np.arange(n_units), per_unit)]
    return X, ids


@pytest.mark.parametrize("kind", ["string", "large", "dictionary"])
def test_one_id_that_is_not_utf8_leaves_the_other_ids_as_they_were(kind):
    _, ids = _people()
    codes, uniques = factorize(pa.chunked_array([_texts(ids, kind)]))
    more, more_uniques = factorize(pa.chunked_array([_texts([*ids, BAD, None, b"p0"], kind)]))
    assert np.array_equal(more[: len(ids)], codes) and list(more_uniques[: len(uniques)]) == list(uniques)
    assert more_uniques[more[len(ids)]] == BAD and more[len(ids) + 1] == -1 and more[-1] == codes[0]


@pytest.mark.parametrize("kind", ["string", "dictionary"])
def test_the_estimator_releases_as_without_the_unit_whose_id_is_not_utf8(kind):
    X, ids = _people()
    est = dict(eps=0.3, min_samples=5, bounds=([0, 0], [5, 5]), delta=1e-6, max_cells_per_unit=3)
    ref = DPDBSCAN(**est, random_state=3).fit(X, units=_texts(ids, kind))
    # one more unit far away, alone in its cell: its count is noise-free zero
    # after the threshold in neither release, so the same seed gives the same spans
    got = DPDBSCAN(**est, random_state=3).fit(np.vstack([X, [[4.9, 4.9]]]), units=_texts([*ids, BAD], kind))
    assert got.spans_.n_spans == ref.spans_.n_spans >= 1


def test_a_parquet_file_with_one_unit_id_that_is_not_utf8_is_released(capsys, tmp_path):
    X, ids = _people()
    for name, extra in (("d", []), ("d1", [BAD])):
        m = len(extra)
        pq.write_table(
            pa.table(
                {
                    "x": np.append(X[:, 0], [4.0] * m),
                    "y": np.append(X[:, 1], [4.0] * m),
                    "u": _texts(ids + extra, "string"),
                }
            ),
            tmp_path / f"{name}.parquet",
        )
    fit = ["--columns", "x", "y", "--bounds", "0", "0", "5", "5", "--eps", "0.3", "--min-samples", "5"]
    unit = ["--unit", "u", "--max-cells-per-unit", "3", "--delta", "1e-6", "--seed", "1", "--no-png"]
    models = []
    for name in ("d", "d1"):
        rc, out, err = run(capsys, "fit", tmp_path / f"{name}.parquet", *fit, *unit, "--out-dir", tmp_path)
        assert rc == 0, err  # before: status 2, "'utf-8' codec can't decode byte 0xc3 ..."
        assert "0xff" not in out + err and "codec" not in err
        models.append(model_to_dict(load_model(tmp_path / f"{name}.spans.json")))
    assert models[0]["spans"] == models[1]["spans"] and models[0]["spans"]
    rc, out, err = run(capsys, "check", tmp_path / "d1.parquet", *fit, *unit[:-3])
    assert rc == 0 and out == "", err


def test_a_trip_end_status_that_is_not_utf8_is_no_status():
    from dpdbscan.traces.tripends import parse_status

    raw = [b"free", b"hired", BAD, b"1", None, b"true"]
    for kind in ("string", "large"):
        # before: "Invalid UTF8 sequence in input" from Arrow's trim, for every row
        assert np.array_equal(
            parse_status(_texts(raw, kind), ("free", "hired")),
            [0, 1, np.nan, np.nan, np.nan, np.nan],
            equal_nan=True,
        )
        assert np.array_equal(
            parse_status(_texts(raw, kind)), [np.nan, np.nan, np.nan, 1, np.nan, 1], equal_nan=True
        )


def test_a_parquet_trip_end_status_that_is_not_utf8_drops_its_row(capsys, tmp_path):
    rng = np.random.default_rng(1)
    n = 600
    X = rng.normal(2.0, 0.05, (n, 2))
    status = [[b"free", b"hired"][(i // 60) % 2] for i in range(n)]
    for name, extra in (("d", []), ("d1", [BAD])):
        m = len(extra)
        pq.write_table(
            pa.table(
                {
                    "x": np.append(X[:, 0], [2.0] * m),
                    "y": np.append(X[:, 1], [2.0] * m),
                    "u": [f"p{i % 60}" for i in range(n)] + ["zz"] * m,
                    "time": [1_700_000_000 + 60 * (i // 60) for i in range(n)] + [1_700_000_000] * m,
                    "s": _texts(status + extra, "string"),
                }
            ),
            tmp_path / f"{name}.parquet",
        )
    args = ["--columns", "x", "y", "--bounds", "0", "0", "5", "5", "--eps", "0.3", "--min-samples", "5"]
    args += ["--unit", "u", "--max-cells-per-unit", "3", "--delta", "1e-6", "--seed", "1", "--no-png"]
    args += ["--time", "time", "--trip-ends", "s", "--status-values", "free", "hired"]
    models = []
    for name in ("d", "d1"):
        rc, out, err = run(capsys, "fit", tmp_path / f"{name}.parquet", *args, "--out-dir", tmp_path)
        assert rc == 0, err  # before: status 2, "Invalid UTF8 sequence in input"
        models.append(model_to_dict(load_model(tmp_path / f"{name}.spans.json")))
    assert models[0]["spans"] == models[1]["spans"] and models[0]["histogram"] == models[1]["histogram"]


@pytest.mark.parametrize("prop", ["time", "s"])
def test_a_geojson_time_or_status_with_a_lone_surrogate_drops_its_row(capsys, tmp_path, prop):
    # JSON's "\udcff" escape is valid JSON and no UTF-8: before (round 8) the
    # feature's time or status failed the whole read ("'utf-8' codec can't
    # encode character '\udcff' ...", the character quoted), status 2
    import json

    rng = np.random.default_rng(2)
    lines = []
    for i in range(300):
        x, y = rng.normal(2.0, 0.05, 2)
        props = {
            "person": f"p{i % 60}",
            "time": f"2023-11-14T22:{i % 60:02d}:00Z",
            "s": ["free", "hired"][i % 2],
        }
        lines.append(
            json.dumps(
                {"type": "Feature", "geometry": {"type": "Point", "coordinates": [x, y]}, "properties": props}
            )
        )
    odd = {"person": "zz", "time": "2023-11-14T22:00:00Z", "s": "free", prop: "@@"}
    extra = json.dumps(
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": [2.0, 2.0]}, "properties": odd}
    )
    extra = extra.replace('"@@"', '"\\udcff"')
    for name, features in (("d", lines), ("d1", [*lines, extra])):
        (tmp_path / f"{name}.geojson").write_text(
            '{"type": "FeatureCollection", "features": [\n' + ",\n".join(features) + "\n]}\n"
        )
    args = ["--bounds", "0", "0", "5", "5", "--eps", "0.3", "--min-samples", "5", "--unit", "person"]
    args += ["--max-cells-per-unit", "3", "--delta", "1e-6", "--seed", "1", "--no-png", "--time", "time"]
    args += ["--trip-ends", "s", "--status-values", "free", "hired"]
    models = []
    for name in ("d", "d1"):
        rc, out, err = run(capsys, "fit", tmp_path / f"{name}.geojson", *args, "--out-dir", tmp_path)
        assert rc == 0, err
        assert "udcff" not in out + err and "codec" not in err
        models.append(model_to_dict(load_model(tmp_path / f"{name}.spans.json")))
    assert models[0]["spans"] == models[1]["spans"] and models[0]["histogram"] == models[1]["histogram"]


@pytest.mark.parametrize("dtype", ["U", "S"])
def test_a_numpy_text_column_with_a_value_that_is_not_utf8_reads_the_others(dtype):
    from dpdbscan.traces import parse_times
    from dpdbscan.traces.tripends import parse_status

    values = ["2023-11-14T22:00:00Z", "1", "free", "hired", "true"]
    odd = "\udcff" if dtype == "U" else b"\xff"
    column = np.array(values, dtype=dtype)
    with_odd = np.array([*values, odd]) if dtype == "U" else np.array([v.encode() for v in values] + [odd])
    # before (round 8): UnicodeEncodeError / UnicodeDecodeError for the whole column
    times = parse_times(with_odd)
    assert np.array_equal(times[:-1], parse_times(column), equal_nan=True) and np.isnan(times[-1])
    for codes in (None, ("free", "hired")):
        status = parse_status(with_odd, codes)
        assert np.array_equal(status[:-1], parse_status(column, codes), equal_nan=True) and np.isnan(
            status[-1]
        )
