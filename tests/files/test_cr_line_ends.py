"""Files whose lines end with a carriage return alone (old Mac text) read as
the same files with ``\\n`` or ``\\r\\n`` line ends (issue 28's doors): a CSV
record is a line ended by any of the three, so a broken record (a quote
that never closes, a wrong number of fields, a value that is not a number)
still drops alone, in plain, gzip and folder files, whatever the block
boundaries; the GeoJSON reader's resynchronisation after a broken feature
counts ``\\r`` as a line break too (tests/files/test_geojson_resync.py runs
its layouts with ``\\r`` line ends).
"""

from __future__ import annotations

import gzip

import numpy as np
import pytest
from pointfiles import SECRET

from dpdbscan.files import csvfile, read_input

pytest.importorskip("pyarrow")

ENDS = {"LF": "\n", "CRLF": "\r\n", "CR": "\r"}


def _lines(n: int = 400) -> list[str]:
    rows = [f"u{i % 7},{116.3 + i * 1e-4:.4f},{39.9 + (i % 13) * 1e-3:.4f}" for i in range(n)]
    rows[17] = f'u1,"{SECRET},39.9'  # a quote that never closes
    rows[90] = f"u2,116.3,39.9,{SECRET}"  # a field too many
    rows[200] = f"u3,{SECRET},39.9"  # not a number
    rows[201] = ""  # an empty line: no record
    return ["unit,lon,lat", *rows]


def _read(path, **kw):
    return read_input(path, ["lon", "lat"], header=True, unit="unit", **kw)


def _same(a, b) -> None:
    assert a.X.tobytes() == b.X.tobytes()
    assert a.units.to_pylist() == b.units.to_pylist()
    assert (a.n_malformed, a.n_unparseable) == (b.n_malformed, b.n_unparseable)


@pytest.mark.parametrize("batch", [64, 1000, 1 << 22])
@pytest.mark.parametrize("kind", ["csv", "csv.gz"])
def test_a_csv_file_with_cr_line_ends_reads_as_with_lf(tmp_path, monkeypatch, batch, kind):
    monkeypatch.setattr(csvfile, "_BATCH", batch)
    got = {}
    for name, end in ENDS.items():
        data = (end.join(_lines()) + end).encode()
        path = tmp_path / f"{name}.{kind}"
        path.write_bytes(gzip.compress(data) if kind == "csv.gz" else data)
        got[name] = _read(path)
    lf = got["LF"]
    assert lf.X.shape == (399, 2) and lf.n_malformed == 2 and lf.n_unparseable == 1
    assert np.isfinite(lf.X).all(axis=1).sum() == 396
    for name in ("CRLF", "CR"):
        _same(got[name], lf)


def test_a_folder_of_csv_files_with_cr_line_ends_reads_as_with_lf(tmp_path):
    got = {}
    for name, end in ENDS.items():
        root = tmp_path / name
        root.mkdir()
        lines = _lines(300)
        for k in range(3):
            rows = ["lon,lat", *(r.split(",", 1)[-1] for r in lines[1:])]
            (root / f"f{k}.csv").write_bytes((end.join(rows) + end).encode())
        got[name] = read_input(root, ["lon", "lat"], header=True, unit_from="file", file_format="csv")
    for name in ("CRLF", "CR"):
        assert got[name].X.tobytes() == got["LF"].X.tobytes()
        assert got[name].units.to_pylist() == got["LF"].units.to_pylist()
        assert got[name].n_malformed == got["LF"].n_malformed >= 3


@pytest.mark.parametrize("seed", range(5))
def test_a_block_holds_records_exactly_when_it_has_a_byte_besides_line_ends(seed):
    # parse_rows asks has_text, not data.strip(b"\r\n") (which copied every
    # block while holding the GIL): the same answer for any bytes
    from dpdbscan.files.records import CsvLayout, has_text, parse_rows

    rng = np.random.default_rng(seed)
    alphabet = np.frombuffer(b"\r\n\r\n\r\n,1 a", dtype=np.uint8)
    for n in range(12):
        data = alphabet[rng.integers(0, alphabet.size, size=n)].tobytes()
        if rng.random() < 0.5:
            data = data.replace(b",", b"\n").replace(b"1", b"\r").replace(b" ", b"\n").replace(b"a", b"\r")
        assert has_text(data) == bool(data.strip(b"\r\n")), data
    layout = CsvLayout(delimiter=",", n_fields=2, usecols=(0, 1))
    for empty in (b"", b"\n", b"\r\n\r\r\n"):
        X, _, counts, _ = parse_rows(empty, layout)
        assert X.shape == (0, 2) and counts.rows == 0
    X, _, counts, _ = parse_rows(b"\r\n1,2\r\n\n", layout)
    assert X.tolist() == [[1.0, 2.0]] and counts.rows == 1
