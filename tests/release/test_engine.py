"""The counting written once over engine primitives (dpdbscan.release.engine):
the contribution bound over partitions of pairs equals the bound over all of
them, in this process and on a Dask cluster, and a reduce that loses a
partition is refused."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from dpdbscan.cells.grid import Grid
from dpdbscan.params.specs import UnitBound
from dpdbscan.plan.resolve import release_spec, validated
from dpdbscan.release import bounding, periodtable
from dpdbscan.release.backends.base import CellCounts
from dpdbscan.release.bounding import BoundingKey, bound_parts, count_units, pairs_of
from dpdbscan.release.engine import LocalEngine, merge_counts, pairs_by_unit
from dpdbscan.release.mechanism import release_histogram

GRID = Grid(np.zeros(2), np.full(2, 10.0), 0.5, 4.0)
BOUND = UnitBound(max_cells_per_unit=3, max_points_per_cell=2, cell_choice="busiest")
KEY = BoundingKey((12345, 678), bytes(range(16)))


def _rows(seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 11, (5000, 2))  # some outside the box: clipped
    X[::97] = np.nan  # dropped
    units = rng.integers(0, 300, len(X))
    return X, units


def _parts_by_unit(X, units, n_parts):
    """The rows' pairs in partitions that each hold every row of their units
    (what a shuffle by unit gives)."""
    owner = units % n_parts
    return [pairs_of(GRID, X[owner == i], units[owner == i], KEY) for i in range(n_parts)]


@pytest.mark.parametrize("n_parts", [1, 2, 7])
def test_bounding_partitions_by_unit_equals_bounding_everything(n_parts):
    X, units = _rows()
    want = count_units(GRID, X, units, BOUND, KEY)
    got = bound_parts(LocalEngine(), _parts_by_unit(X, units, n_parts), GRID, KEY, bound=BOUND)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    assert want[1].sum() > 0


def test_the_choice_of_the_bound_sees_every_units_cells_once():
    X, units = _rows(1)
    seen = []

    def choose(cells):
        seen.append(np.sort(cells))
        return BOUND

    all_pairs = pairs_of(GRID, X, units, KEY)
    got = bound_parts(LocalEngine(), _parts_by_unit(X, units, 4), GRID, KEY, choose=choose)
    assert len(seen) == 1
    np.testing.assert_array_equal(seen[0], np.sort(bounding.cells_per_unit(all_pairs)))
    want = count_units(GRID, X, units, BOUND, KEY)
    np.testing.assert_array_equal(got[1], want[1])


def test_a_bound_is_needed():
    with pytest.raises(ValueError, match="bound"):
        bound_parts(LocalEngine(), [], GRID, KEY)


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0"
        ) as c,
        distributed.Client(c) as client,
    ):
        yield client


def test_the_dask_engine_bounds_as_in_memory_and_refuses_a_lost_partition(client, monkeypatch):
    from dpdbscan.release.backends import dask_backend
    from dpdbscan.release.backends.dask_backend import DaskEngine

    X, units = _rows(2)
    parts = client.scatter(_parts_by_unit(X, units, 5))
    want = count_units(GRID, X, units, BOUND, KEY)
    got = bound_parts(DaskEngine(client, split_every=2), parts, GRID, KEY, bound=BOUND)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])

    def lossy(merge, *parts):
        return dask_backend.__dict__["_merge_counted_kept"](merge, *parts[:-1])

    counts = client.scatter([_counts(X[i::5]) for i in range(5)])
    monkeypatch.setitem(dask_backend.__dict__, "_merge_counted_kept", dask_backend._merge_counted)
    monkeypatch.setattr(dask_backend, "_merge_counted", lossy)
    with pytest.raises(RuntimeError, match="merged 4 partition result.*for 5 partition"):
        DaskEngine(client, split_every=5).reduce(counts, merge_counts)


def _counts(X):
    from dpdbscan.release.backends.dask_backend import count_block

    return count_block(GRID, X)


def _table_rows(seed: int = 4):
    rng = np.random.default_rng(seed)
    n = 3000
    return rng.integers(0, 80, n), rng.integers(-1, 3, n), rng.integers(-1, 6, n)


def _table_parts(units, spans, periods, n_parts):
    """The table's summed pairs (rows in a span and a period) in partitions
    that each hold every row of their units."""
    ok = (spans >= 0) & (periods >= 0)
    units, pair = units[ok], spans[ok] * 6 + periods[ok]
    owner = units % n_parts
    return [
        periodtable.summed_pairs(
            units[mine], pair[mine], np.ones(mine.sum(), dtype=np.int64), np.arange(80), KEY
        )
        for mine in (owner == i for i in range(n_parts))
    ]


TABLE = periodtable.TableBound((3, 6), 2, 1)


@pytest.mark.parametrize("n_parts", [1, 3])
def test_the_table_bounded_over_partitions_by_unit_is_the_table_of_all_rows(n_parts):
    units, spans, periods = _table_rows()
    want = periodtable.bounded_table(units, spans, periods, TABLE, KEY)
    got = periodtable.bound_table_parts(
        LocalEngine(), _table_parts(units, spans, periods, n_parts), TABLE, KEY
    )
    assert got.tolist() == want.tolist()
    assert 0 < want.sum() < np.count_nonzero((spans >= 0) & (periods >= 0))  # the bound bites


def test_the_dask_engine_bounds_the_table_and_shuffles_by_unit(client):
    pd = pytest.importorskip("pandas")
    from dpdbscan.release.backends.dask_backend import DaskEngine

    units, spans, periods = _table_rows(5)
    engine = DaskEngine(client, split_every=2)
    parts = client.scatter(_table_parts(units, spans, periods, 4))
    want = periodtable.bounded_table(units, spans, periods, TABLE, KEY)
    assert periodtable.bound_table_parts(engine, parts, TABLE, KEY).tolist() == want.tolist()
    # a shuffle by unit: every row kept, each unit's rows in one partition
    frames = [pd.DataFrame({"unit": units[i::3], "row": np.arange(len(units))[i::3]}) for i in range(3)]
    meta = frames[0].iloc[:0]
    shuffled = engine.gather(engine.shuffle(client.scatter(frames), meta))
    assert len(shuffled) == 3
    assert sorted(np.concatenate([f["row"].to_numpy() for f in shuffled]).tolist()) == list(range(len(units)))
    owners = [set(f["unit"].tolist()) for f in shuffled]
    assert sum(len(o) for o in owners) == len(set().union(*owners)) == len(np.unique(units))


def _reads(X, units, n_parts, delayed):
    """The rows read in ``n_parts`` partitions (not by unit), each read giving
    its (unit, cell, count) pairs and tally as the Dask backend's reads do:
    a call here, a task for a cluster (``delayed``)."""
    pd = pytest.importorskip("pandas")
    from dpdbscan.release.backends.dask_backend import _frame_pairs

    frame = pd.DataFrame({"x": X[:, 0], "y": X[:, 1], "unit": units})
    frames = [frame.iloc[i::n_parts] for i in range(n_parts)]
    read = functools.partial if delayed is None else (lambda f, *a: delayed(f, nout=2)(*a))
    return [read(_frame_pairs, GRID, f, ["x", "y"], "unit", "int") for f in frames]


def _bounded_by_unit(engine, reads):
    """The one way from reads to bounded counts, on ``engine``."""
    from dpdbscan.release.backends.dask_backend import _pairs_meta, _summed_pairs

    summed = functools.partial(_summed_pairs, grid=GRID, kind="int", key=KEY)
    pairs, tally = pairs_by_unit(engine, reads, _pairs_meta(GRID, "int"), summed)
    return bound_parts(engine, pairs, GRID, KEY, bound=BOUND), tally


def test_the_way_from_reads_to_bounded_counts_is_one_on_both_engines(client):
    dask = pytest.importorskip("dask")
    from dpdbscan.release.backends.dask_backend import DaskEngine

    X, units = _rows(6)
    want = count_units(GRID, X, units, BOUND, KEY)
    local, tally = _bounded_by_unit(LocalEngine(), _reads(X, units, 4, None))
    cluster, cluster_tally = _bounded_by_unit(
        DaskEngine(client, split_every=2), _reads(X, units, 4, dask.delayed)
    )
    for got in (local, cluster):
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
    assert tally.tolist() == cluster_tally.tolist()
    assert tally[:2].tolist() == [4, len(X)]  # every partition and row read once


def test_the_local_shuffle_puts_each_units_rows_in_one_partition():
    pd = pytest.importorskip("pandas")
    units = np.random.default_rng(7).integers(0, 50, 600)
    frames = [pd.DataFrame({"unit": units[i::3], "row": np.arange(600)[i::3]}) for i in range(3)]
    shuffled = LocalEngine().shuffle(frames, frames[0].iloc[:0], "unit")
    assert len(shuffled) == 3
    assert sorted(np.concatenate([f["row"].to_numpy() for f in shuffled]).tolist()) == list(range(600))
    owners = [set(f["unit"].tolist()) for f in shuffled]
    assert sum(len(o) for o in owners) == len(set().union(*owners)) == len(np.unique(units))
    assert all(len(o) > 0 for o in owners)  # the units are spread, not all in one


def test_a_read_lost_from_the_tally_is_refused():
    X, units = _rows(8)
    reads = _reads(X, units, 3, None)

    def lost(read):
        pairs, tally = read()
        return pairs, tally * 0  # as if the read never counted itself

    with pytest.raises(RuntimeError, match="merged 2 partition result.*for 3 partition"):
        pairs_by_unit(LocalEngine(), [reads[0], reads[1], functools.partial(lost, reads[2])], None, len)


class _EngineBackend:
    """A unit backend that counts by the one way from reads to bounded
    counts (:func:`_bounded_by_unit`) on ``engine``, the rows read in four
    partitions: the mechanism draws the key and the noise."""

    def __init__(self, engine, delayed=None):
        self.engine, self.delayed = engine, delayed

    def count(self, grid, X):
        raise AssertionError("a person-level release counts with units")

    def count_units(self, grid, X, units, bound, key):
        from dpdbscan.release.backends.dask_backend import _pairs_meta, _summed_pairs

        assert grid is GRID
        summed = functools.partial(_summed_pairs, grid=GRID, kind="int", key=key)
        pairs, _ = pairs_by_unit(
            self.engine, _reads(X, units, 4, self.delayed), _pairs_meta(GRID, "int"), summed
        )
        return CellCounts(*bound_parts(self.engine, pairs, GRID, key, bound=bound))


@pytest.mark.parametrize("histogram", ["dense", "sparse"])
def test_the_same_seed_gives_the_same_release_on_both_engines(client, histogram):
    dask = pytest.importorskip("dask")
    from dpdbscan.release.backends.dask_backend import DaskEngine

    X, units = _rows(9)
    p = validated({"max_cells_per_unit": 3, "max_points_per_cell": 2, "delta": 1e-6, "histogram": histogram})
    spec = release_spec(p, GRID, units=True)
    releases = [
        release_histogram(spec, X, backend=backend, random_state=11, units=units)
        for backend in (
            "numpy",
            _EngineBackend(LocalEngine()),
            _EngineBackend(DaskEngine(client), dask.delayed),
        )
    ]
    want = releases[0]
    assert want.kind == histogram and want.values.size > 0
    for got in releases[1:]:
        np.testing.assert_array_equal(got.values, want.values)
        np.testing.assert_array_equal(got.keys, want.keys)
