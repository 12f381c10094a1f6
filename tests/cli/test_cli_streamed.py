"""The cells counted while the file is read (``fit``'s streamed counts), with
the noise drawn meanwhile, give the release of counting after the read, bit
for bit, on awkward CSV files."""

from __future__ import annotations

import gzip
import threading

import numpy as np
import pytest

from dpdbscan.cells.grid import Grid
from dpdbscan.cli import fit as cli_fit
from dpdbscan.files import csvfile
from dpdbscan.release import mechanism
from dpdbscan.release.backends import NumpyBackend
from dpdbscan.release.backends import numpy_backend as nb

from clirun import blob_points, run


def _csv_bytes(X: np.ndarray, *, bom: bool, geo: bool) -> bytes:
    """A header, then the rows with bad ones among them: a word, a missing
    value, a line with too many fields, an empty line, infinity."""
    head = "lon,lat" if geo else "x,y"
    rows = [f"{a!r},{b!r}" for a, b in X]
    bad = ["oops,1.0", "2.0,", "1,2,3", "", "inf,2.0", "-1e308,nan"]
    for i, line in enumerate(bad):
        rows.insert(37 + 401 * i, line)
    text = "\r\n".join([head, *rows]) + "\r\n"
    return (b"\xef\xbb\xbf" if bom else b"") + text.encode()


def _fit(capsys, path, out, extra):
    """The summary and the release's bytes (the same output name each time)."""
    out.mkdir()
    argv = ["fit", path, "--header", *extra, "--seed", "3", "--out-dir", out, "--no-png", "--no-progress"]
    rc, stdout, _ = run(capsys, *argv)
    assert rc == 0
    return stdout.replace(str(out), "OUT"), (out / "p.spans.json").read_bytes()


@pytest.mark.parametrize(
    ("gz", "bom", "geo"),
    [(False, False, False), (True, True, False), (False, True, True), (True, False, True)],
)
def test_streamed_counts_give_the_same_release(tmp_path, capsys, monkeypatch, gz, bom, geo):
    monkeypatch.setattr(csvfile, "_BATCH", 1 << 12)  # many blocks, on several threads
    X = blob_points(1)
    if geo:  # lon/lat around San Francisco, about 1 km across
        X = np.array([-122.45, 37.75]) + X * np.array([0.0012, 0.0009])
        extra = ["--geo", "--bounds", "-122.46", "37.74", "-122.43", "37.76", "--eps", "80m"]
    else:
        extra = ["--bounds", "0", "0", "10", "10", "--eps", "0.5"]
    extra += ["--min-samples", "20"]
    data = _csv_bytes(X, bom=bom, geo=geo)
    path = tmp_path / ("p.csv.gz" if gz else "p.csv")
    path.write_bytes(gzip.compress(data) if gz else data)

    seen: list[int] = []
    counts = nb.StreamedCounts.counts

    def spy(self):
        seen.append(self.rows)
        return counts(self)

    monkeypatch.setattr(nb.StreamedCounts, "counts", spy)
    taken: list[bool] = []
    take = mechanism.NoiseAhead.take

    def took(self, spec, random_state):
        z = take(self, spec, random_state)
        taken.append(z is not None)
        return z

    monkeypatch.setattr(mechanism.NoiseAhead, "take", took)
    streamed = _fit(capsys, path, tmp_path / "streamed", extra)
    assert seen == [X.shape[0] + 5]  # every record but the empty line, the bad ones as NaN rows
    assert taken == [True]  # the noise drawn while the file was read
    monkeypatch.setattr(cli_fit, "streamed_counts", lambda opts, p: None)
    after = _fit(capsys, path, tmp_path / "after", extra)
    assert seen == [X.shape[0] + 5]  # not used the second time
    assert streamed[0] == after[0]
    assert streamed[1] == after[1]


def test_streamed_counts_match_the_backend_by_block_on_threads(monkeypatch):
    monkeypatch.setattr(nb, "_DENSE_BLOCK", 700)  # the backend counts in several blocks
    rng = np.random.default_rng(5)
    X = rng.uniform(-1, 11, (10_000, 2))  # some outside the box: clipped onto it
    X[rng.choice(10_000, 50, replace=False), rng.integers(0, 2, 50)] = np.nan
    X[3, 1], X[9, 0] = np.inf, -np.inf
    grid = Grid(np.zeros(2), np.full(2, 10.0), 0.5)
    s = nb.StreamedCounts(grid)
    blocks = np.array_split(X, 23)
    threads = [threading.Thread(target=lambda b=b: s(b)) for b in blocks]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    expected = NumpyBackend().dense_counts(grid, X)
    backend = s.backend_for(X)
    got = backend.dense_counts(grid, X)
    assert got.shape == grid.shape
    np.testing.assert_array_equal(got, expected)
    assert got.sum() == np.isfinite(X).all(axis=1).sum()
    got[...] = -1  # used once: a second call counts afresh
    np.testing.assert_array_equal(backend.dense_counts(grid, X), expected)


def test_precounted_backend_counts_afresh_for_other_rows_or_cells():
    X = np.random.default_rng(2).uniform(0, 10, (500, 2))
    grid = Grid(np.zeros(2), np.full(2, 10.0), 0.5)
    s = nb.StreamedCounts(grid)
    s(X[:300])  # not every row seen
    np.testing.assert_array_equal(
        s.backend_for(X).dense_counts(grid, X), NumpyBackend().dense_counts(grid, X)
    )
    s(X[300:])
    Y = X.copy()  # another array
    np.testing.assert_array_equal(
        s.backend_for(X).dense_counts(grid, Y), NumpyBackend().dense_counts(grid, Y)
    )
    other = Grid(np.zeros(2), np.full(2, 10.0), 0.7)  # other cells
    np.testing.assert_array_equal(
        s.backend_for(X).dense_counts(other, X), NumpyBackend().dense_counts(other, X)
    )
