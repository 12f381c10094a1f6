"""A line too long for pyarrow fails no read (privacy audit, round 9).

pyarrow's CSV reader takes at most 2**31 - 1 bytes at once. A CSV record of
2 GiB (one unit's bytes) failed the whole in-memory read, and the Dask
backend handed a gzip file's whole text to pyarrow, so a file of 2 GiB of
text failed there and one row more or less decided whether anything was
released (docs/privacy.md section 8, round 9;
``experiments/audit_long_lines.py`` shows both on the tree before). Now a
block longer than ``MAX_LINE`` is parsed in parts cut at line ends, and a
line longer than ``MAX_LINE`` is one malformed record, unread. The limit is
lowered here so that the rule is tested without gigabytes; the slow test
writes one real line of 2 GiB.
"""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from dpdbscan.files import csvfile, read_input, records
from dpdbscan.files.records import CsvLayout, parse_rows

pytest.importorskip("pyarrow")

LIMIT = 64  # MAX_LINE in these tests (64 MiB in the library)
ENDS = {"LF": "\n", "CRLF": "\r\n", "CR": "\r"}


@pytest.fixture
def small_limit(monkeypatch):
    # raising=False: on the tree before (no limit) the tests fail on what is read
    monkeypatch.setattr(records, "MAX_LINE", LIMIT, raising=False)
    monkeypatch.setattr(csvfile, "MAX_LINE", LIMIT, raising=False)


def _rows(n: int = 60) -> list[str]:
    return [f"u{i % 7},{116.3 + i * 1e-4:.4f},{39.9 + (i % 13) * 1e-3:.4f}" for i in range(n)]


def _long(length: int) -> str:
    """A record whose unit field makes the line ``length`` characters long."""
    return "z" * (length - len(",116.5,39.9")) + ",116.5,39.9"


def _read(path):
    return read_input(path, ["lon", "lat"], header=True, unit="unit")


@pytest.mark.parametrize("batch", [16, 50, 1 << 22])
@pytest.mark.parametrize("kind", ["csv", "csv.gz"])
@pytest.mark.parametrize("end", list(ENDS))
@pytest.mark.parametrize("at", [0, 31, 60])
def test_a_line_longer_than_the_limit_is_one_malformed_row(
    tmp_path, small_limit, monkeypatch, batch, kind, end, at
):
    """The file with one line too long reads as the file without it, but for
    one malformed row (NaN, no unit) in its place; a line at the limit is
    read. Whatever the blocks: lines longer than a block too."""
    monkeypatch.setattr(csvfile, "_BATCH", batch)
    sep = ENDS[end]

    def written(name: str, rows: list[str]):
        data = (sep.join(["unit,lon,lat", *rows]) + sep).encode()
        path = tmp_path / f"{name}.{kind}"
        path.write_bytes(gzip.compress(data) if kind == "csv.gz" else data)
        return _read(path)

    rows = _rows()
    base = written("base", rows)
    for length, read in ((LIMIT, True), (LIMIT + 1, False), (40 * LIMIT, False)):
        got = written(f"long{length}", [*rows[:at], _long(length), *rows[at:]])
        assert got.X.shape[0] == base.X.shape[0] + 1
        others = np.delete(got.X, at, axis=0)
        assert others.tobytes() == base.X.tobytes()
        units = got.units.to_pylist()
        assert units[:at] + units[at + 1 :] == base.units.to_pylist()
        if read:
            assert got.X[at].tolist() == [116.5, 39.9] and got.n_malformed == base.n_malformed
        else:
            assert np.isnan(got.X[at]).all() and units[at] is None
            assert got.n_malformed == base.n_malformed + 1


@pytest.mark.parametrize("end", list(ENDS))
def test_a_block_longer_than_the_limit_is_parsed_in_parts_as_its_lines(small_limit, end):
    """What the Dask backend hands over (a gzip file's whole text, a block
    cut at ``\\n`` only): a block longer than the limit reads as its lines
    read one by one; a line longer than the limit is malformed; many line
    ends after a line are no part of it."""
    layout = CsvLayout(",", 3, (1, 2), unit=0)
    rows = _rows(40)
    rows[7] = _long(3 * LIMIT)
    rows[20] = _long(LIMIT)
    rows[21] = 'u1,"116.3,39.9'  # a quote that never closes
    rows[22] = "u2,116.3,bob"
    sep = ENDS[end]
    block = (sep.join(rows) + sep * (2 * LIMIT)).encode()
    X, units, counts, _ = parse_rows(block, layout)
    want = [parse_rows(r.encode(), layout) for r in rows]
    for i, (Xi, ui, _, _) in enumerate(want):
        if i == 7:
            assert np.isnan(X[i]).all() and units[i].as_py() is None
        else:
            assert X[i].tobytes() == Xi[0].tobytes() and units[i] == ui[0]
    assert X.shape[0] == len(rows) and counts.rows == len(rows)
    assert counts.malformed == 2 and counts.unparseable == 1
    assert X[20].tolist() == [116.5, 39.9]


def test_the_dask_backends_gzip_text_longer_than_the_limit_is_counted(small_limit, tmp_path):
    """The Dask backend's count of one gzip file's whole text (one block,
    longer than the limit), in the worker's own function."""
    from dpdbscan.cells.grid import Grid
    from dpdbscan.release.backends import dask_backend

    grid = Grid(np.array([116.0, 39.0]), np.array([117.0, 40.0]), 0.01)
    layout = CsvLayout(",", 3, (1, 2), unit=None)
    rows = _rows(200)
    text = ("\n".join(["unit,lon,lat", *rows]) + "\n").encode()
    assert len(text) > 10 * LIMIT
    got = dask_backend._csv_part(
        grid, dask_backend._Inflated(text, False), layout, ["unit", "lon", "lat"], True, "f"
    )
    with_long = ("\n".join(["unit,lon,lat", *rows[:100], _long(5 * LIMIT), *rows[100:]]) + "\n").encode()
    got_long = dask_backend._csv_part(
        grid, dask_backend._Inflated(with_long, False), layout, ["unit", "lon", "lat"], True, "f"
    )
    assert got[0].tolist() == got_long[0].tolist() and got[1].tolist() == got_long[1].tolist()


def test_a_header_line_longer_than_a_header_can_be_is_refused_quoting_nothing(tmp_path, small_limit):
    """A declared header longer than the limit is no CSV header (the file
    is damaged or not CSV): refused as such, before any record, never
    read whole; in a trace folder it is that unit's file, dropped."""
    path = tmp_path / "a.csv"
    path.write_bytes(b"unit,lon,lat" + b"q" * (LIMIT * 1000) + b"\n" + "\n".join(_rows()).encode())
    with pytest.raises(ValueError, match="cannot read as CSV") as err:
        _read(path)
    assert "qqq" not in str(err.value)


@pytest.mark.slow
def test_a_real_line_of_two_gib_drops_alone(tmp_path):
    """At the library's own limit: one record of 2**31 bytes (over what
    pyarrow reads at once) is one malformed row; the other rows read as
    without it. Writes 2 GiB to a temporary file."""
    rows = _rows()
    head = ("\n".join(["unit,lon,lat", *rows]) + "\n").encode()
    base_path, long_path = tmp_path / "base.csv", tmp_path / "long.csv"
    base_path.write_bytes(head)
    with open(long_path, "wb") as fh:
        fh.write(head)
        piece = b"z" * (1 << 24)
        for _ in range(128):
            fh.write(piece)
        fh.write(b",116.5,39.9\n")
    base, got = _read(base_path), _read(long_path)
    assert got.X[:-1].tobytes() == base.X.tobytes() and np.isnan(got.X[-1]).all()
    assert got.n_malformed == base.n_malformed + 1


def test_one_units_short_lines_first_never_size_the_result_past_what_the_system_gives(tmp_path, monkeypatch):
    """The result's first size is guessed from the first block's bytes per
    record: one unit's many short rows at the start of a large file asked
    for many times the rows the file holds, and where the system refuses
    that (Linux refuses one allocation larger than its memory and swap:
    about 8 x the text's bytes here, at 2 bytes a record) the read failed.
    The system is played by an ``np.empty`` that refuses more than twice
    the file's lines; the read then takes the size the rows read need."""
    monkeypatch.setattr(csvfile, "_BATCH", 1 << 16)
    long_rows = [
        f"{116.3 + (i % 97) * 1e-4:.4f},{39.9 + (i % 13) * 1e-3:.4f},u{i % 7}," + "n" * 200
        for i in range(3000)
    ]
    files = {}
    for name, first in (("D", []), ("D2", [",,zz,"] * 40_000)):
        path = tmp_path / f"{name}.csv"
        path.write_text("\n".join(["lon,lat,unit,note", *first, *long_rows]) + "\n")
        files[name] = (path, len(first) + len(long_rows))
    real_empty = np.empty

    for name, (path, lines) in files.items():

        def empty(shape, *args, lines=lines, **kw):
            if isinstance(shape, tuple) and len(shape) == 2 and shape[0] > max(2 * lines, 4096):
                raise MemoryError("refused, as the system would")
            return real_empty(shape, *args, **kw)

        monkeypatch.setattr(csvfile.np, "empty", empty)
        got = read_input(path, ["lon", "lat"], header=True, unit="unit")
        monkeypatch.setattr(csvfile.np, "empty", real_empty)
        assert got.X.shape[0] == lines
        files[name] = got
    d, d2 = files["D"], files["D2"]
    assert d2.X[40_000:].tobytes() == d.X.tobytes()
    assert d2.units.to_pylist()[40_000:] == d.units.to_pylist()
    assert np.isnan(d2.X[:40_000]).all()


PLT_HEAD = "Geolife trajectory\nWGS 84\nAltitude is in Feet\nReserved 3\n0,2,255,My Track,0,0,2,8421376\n0\n"
PLT_ROW = "39.9{},116.3,0,492,39745.1,2008-10-24,02:09:59"


@pytest.mark.parametrize("end", ["\n", "\r\n"])
def test_a_plt_line_longer_than_the_limit_is_one_malformed_row(tmp_path, monkeypatch, end):
    """A PLT file's lines by the CSV rule: a line longer than the limit is
    malformed, by the vectorised reader and the line-by-line one alike (a
    line of 2 GiB failed the whole read: Arrow's text holds 2**31 bytes)."""
    from dpdbscan.files import pltfile

    monkeypatch.setattr(pltfile, "MAX_LINE", LIMIT, raising=False)
    rows = [PLT_ROW.format(i) for i in range(20)]
    base_path, long_path = tmp_path / "a.plt", tmp_path / "b.plt"
    base_path.write_text(PLT_HEAD + end.join(rows) + end, newline="")
    long_row = PLT_ROW.format("1" * (LIMIT + 1 - len(PLT_ROW.format(""))))
    at_limit = PLT_ROW.format("1" * (LIMIT - len(PLT_ROW.format(""))))
    assert len(long_row) == LIMIT + 1 and len(at_limit) == LIMIT
    long_path.write_text(PLT_HEAD + end.join([*rows[:9], long_row, at_limit, *rows[9:]]) + end, newline="")
    base = pltfile.read(base_path)
    for read in (pltfile.read, pltfile.read_lines):
        X, bad, malformed, times, _ = read(long_path)
        assert np.isnan(X[9]).all() and malformed == base[2] + 1
        assert X[10].tolist() == [116.3, 39.9111111111111111111111]
        assert np.delete(X, [9, 10], axis=0).tobytes() == base[0].tobytes()
