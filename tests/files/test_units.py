"""How privacy unit ids are read (dpdbscan.files.unitids).

Each id is read on its own, by its own type and value, never through a type
chosen from the other ids: adding one id to the input never changes how any
other id is read. The test of that is a property: for random inputs of mixed
ids (integers above 2**53, floats, NaN, None, text, bytes; Python lists,
numpy and pandas arrays, pandas nullable integers, pyarrow arrays), the
partition of the other rows into units is the same with and without one
more id. Both doors are tested: the estimator's ``units`` and the files the
command line reads (their ids are read by the file's declared types).
"""

from __future__ import annotations

import decimal
import fractions
import math
import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpdbscan import DPDBSCAN
from dpdbscan.cells.grid import Grid
from dpdbscan.exceptions import PrivateNoteWarning, UtilityWarning
from dpdbscan.files.reader import read_input
from dpdbscan.files.unitids import read_units
from dpdbscan.params.specs import UnitBound
from dpdbscan.release.bounding import BoundingKey, count_units, factorize
from dpdbscan.release.samplers.integers import SeededSource

pytestmark = pytest.mark.filterwarnings("ignore::dpdbscan.exceptions.InsecureRandomnessWarning")

BIG = 2**60


def partition(codes: np.ndarray) -> list[frozenset[int]]:
    """The rows grouped by unit (missing rows: a group of their own, -1),
    independent of how the codes are numbered."""
    groups: dict[int, set[int]] = {}
    for i, c in enumerate(np.asarray(codes, dtype=np.int64).tolist()):
        groups.setdefault(max(c, -1), set()).add(i)
    missing = frozenset(groups.pop(-1, set()))
    return sorted((frozenset(g) for g in groups.values()), key=min) + [missing]


def restricted(codes: np.ndarray, n: int) -> list[frozenset[int]]:
    """The partition of the first ``n`` rows."""
    return partition(np.asarray(codes)[:n])


# --------------------------------------------------------------------------- #
# finding 1: one float id made sixty integer ids near 2**60 into a few units


def spot_and_units(added: bool, rng: np.random.Generator) -> tuple[np.ndarray, list]:
    """Sixty units with hashed-device-like ids near 2**60, 40 points each at
    one spot, and (``added``) one more unit, id 0.5, elsewhere."""
    ids = [BIG + int(i) for i in rng.choice(4000, 60, replace=False)]
    X = np.full((60 * 40, 2), 0.25) + rng.normal(0, 0.001, (60 * 40, 2))
    units: list = [u for u in ids for _ in range(40)]
    if added:
        X = np.vstack([X, np.full((40, 2), 0.75)])
        units = units + [0.5] * 40
    return X, units


def test_one_float_id_does_not_merge_sixty_integer_ids():
    rng = np.random.default_rng(0)
    X, units = spot_and_units(True, rng)
    codes, _ = factorize(units)
    assert len(set(codes[: 60 * 40].tolist())) == 60
    grid = Grid(np.zeros(2), np.ones(2), 0.03, 4.0)
    key = BoundingKey.draw(SeededSource(1))
    keys, counts = count_units(grid, X, units, UnitBound(4, 2, "busiest"), key)
    spot = int(grid.keys_of_points(np.array([[0.25, 0.25]]))[0])
    assert dict(zip(keys.tolist(), counts.tolist()))[spot] == 120


def _person_fit(X, units, seed):
    est = DPDBSCAN(
        eps=0.03,
        min_samples=10**6,
        epsilon=1.0,
        delta=1e-6,
        bounds=(0, 1),
        histogram="dense",
        noise="gaussian",
        max_cells_per_unit=4,
        max_points_per_cell=2,
        random_state=seed,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UtilityWarning)
        est.fit(X, units=units)
    return np.asarray(est.histogram_.values, dtype=np.float64)


def test_with_one_more_unit_the_release_moves_within_the_bound():
    """Same seed, so the same noise: the released values differ by the
    bounded counts' difference, at most sqrt(k) m = 4 in L2."""
    rng = np.random.default_rng(3)
    X, units = spot_and_units(True, rng)
    n = 60 * 40
    a = _person_fit(X[:n], units[:n], 11)
    b = _person_fit(X, units, 11)
    assert np.sqrt(((a - b) ** 2).sum()) <= math.sqrt(4) * 2 + 1e-9


# --------------------------------------------------------------------------- #
# finding 2: same cause, smaller


def test_nan_stays_missing_when_a_text_id_is_added():
    codes, _ = factorize([1.0, float("nan"), 2.0, float("nan"), "a"])
    assert codes[1] == codes[3] == -1
    assert len(set(codes.tolist()) - {-1}) == 3


def test_an_integer_and_its_text_are_two_units():
    codes, _ = factorize([1, "1", 1, "a"])
    assert codes[0] == codes[2] != codes[1]
    codes, _ = factorize([b"1", "1", 1])
    assert len(set(codes.tolist())) == 3


def test_numbers_are_one_unit_when_their_values_are_equal():
    codes, _ = factorize([1, 1.0, True, np.int64(1), np.float32(1.0), 2**60, float(2**60), 2**60 + 1])
    assert len(set(codes[:5].tolist())) == 1
    assert codes[5] == codes[6] != codes[7]  # exact values: 2**60 + 1 is not float(2**60)


def test_trailing_nuls_and_bytes_are_kept_exactly():
    codes, uniq = factorize(["a", "a\x00", b"a", b"a\x00", "a"])
    assert len(set(codes.tolist())) == 4 and codes[0] == codes[4]


def test_missing_ids_are_missing_whatever_the_others_are():
    ids = [None, float("nan"), np.float32("nan"), pd.NA, "x", 3, b"y", 2.5]
    codes, _ = factorize(ids)
    assert codes[:4].tolist() == [-1] * 4 and min(codes[4:]) >= 0


def test_pandas_nullable_integers_are_integers():
    s = pd.Series([BIG + 1, None, BIG, BIG + 1], dtype="Int64")
    codes, _ = factorize(s)
    assert codes[1] == -1 and codes[0] == codes[3] != codes[2]
    codes, _ = factorize(pd.Series(["a", None, "a"], dtype="string"))
    assert codes.tolist()[1] == -1 and codes[0] == codes[2]
    codes, _ = factorize(pd.Series([2, None, 2], dtype="Int64").astype("category"))
    assert codes[1] == -1 and codes[0] == codes[2]


@pytest.mark.parametrize(
    "bad",
    [decimal.Decimal("0.1"), fractions.Fraction(1, 3), 1 + 2j, (1, 2), np.longdouble(1) / 3, object()],
)
def test_an_id_that_cannot_be_read_exactly_is_missing_and_counted(bad):
    """Its row is dropped like a row with no unit, never a refusal (one
    row's id must not decide whether a release happens);
    tests/params/test_one_row_never_refuses.py checks the release."""
    unreadable = [0]
    got = read_units(["secret-7", bad, "secret-8"], unreadable)
    assert got.tolist() == ["secret-7", None, "secret-8"] and unreadable == [1]


def test_the_estimator_drops_the_row_of_an_unreadable_id_and_spends_as_without_it():
    from dpdbscan import ZCDPAccountant

    acc = ZCDPAccountant(epsilon=10.0, delta=1e-5)
    est = DPDBSCAN(
        eps=0.1,
        min_samples=5,
        epsilon=0.5,
        delta=1e-6,
        bounds=(0, 1),
        max_cells_per_unit=2,
        max_points_per_cell=1,
        accountant=acc,
        random_state=0,
    )
    with pytest.warns(PrivateNoteWarning, match="1 unit id"):
        est.fit(np.full((3, 2), 0.5), units=["a", decimal.Decimal(1), "b"])
    assert len(acc.spent_rho) == 1


@pytest.mark.parametrize("bad", [np.array([1 + 1j]), np.array(["2020-01-01"], dtype="datetime64[D]")])
def test_arrays_of_other_types_are_refused(bad):
    with pytest.raises(TypeError):
        read_units(bad)


def test_typed_arrays_keep_their_type():
    """A numpy or pandas array of one dtype was typed by its owner: read as it is."""
    u = np.arange(10, dtype=np.int64) + BIG
    out = read_units(u)
    assert out.dtype == np.int64 and out is u or np.shares_memory(out, u)
    f = read_units(pd.Series([1.5, np.nan]))
    assert f.dtype == np.float64
    assert read_units(np.array(["a", "b"])).dtype.kind == "U"


# --------------------------------------------------------------------------- #
# the property: adding one id never changes how any other id is read

_int = st.one_of(st.integers(-(2**70), 2**70), st.integers(2**53 - 4, 2**53 + 4), st.integers(BIG, BIG + 600))
_float = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.5, -0.0, 1.0, 2.0**60]))
_text = st.text(max_size=4) | st.sampled_from(["nan", "None", "1", "a\x00", ""])
_bytes = st.binary(max_size=4) | st.sampled_from([b"1", b"a\x00"])
_any = st.one_of(_int, _float, _text, _bytes, st.none(), st.just(pd.NA), st.booleans())


def _scalar_partition_truth(ids: list) -> list[frozenset[int]]:
    """The reference partition: ids read one by one (missing: None, NA,
    NaN; numbers by exact value; text and bytes by their characters)."""
    keys = []
    for v in ids:
        if v is None or v is pd.NA or (isinstance(v, float) and v != v):
            keys.append(None)
        elif isinstance(v, (bool, int, float)):
            keys.append(("n", fractions.Fraction(v)) if not math.isinf(v) else ("n", v))
        elif isinstance(v, str):
            keys.append(("s", v))
        else:
            keys.append(("b", v))
    index: dict = {}
    codes = [-1 if k is None else index.setdefault(k, len(index)) for k in keys]
    return partition(np.array(codes))


CONTAINERS = {
    "list": lambda ids: list(ids),
    "tuple": lambda ids: tuple(ids),
    "object array": lambda ids: np.array(ids + [None], dtype=object)[:-1],
    "object series": lambda ids: pd.Series(ids + [None], dtype=object).iloc[:-1],
}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ids=st.lists(_any, max_size=12), extra=_any, container=st.sampled_from(sorted(CONTAINERS)))
def test_adding_one_mixed_id_never_changes_how_the_others_are_read(ids, extra, container):
    make = CONTAINERS[container]
    before, _ = factorize(make(ids))
    after, _ = factorize(make([*ids, extra]))
    assert restricted(after, len(ids)) == partition(before) == _scalar_partition_truth(ids)


_typed = {
    "int64": (st.integers(-(2**63), 2**63 - 1), lambda v: np.array(v, dtype=np.int64)),
    "uint64": (st.integers(0, 2**64 - 1), lambda v: np.array(v, dtype=np.uint64)),
    "float64": (_float, lambda v: np.array(v, dtype=np.float64)),
    "str": (_text, lambda v: np.array(v + ["x"], dtype=str)[:-1]),
    "Int64": (st.one_of(st.integers(-(2**63), 2**63 - 1), st.none()), lambda v: pd.Series(v, dtype="Int64")),
    "string": (st.one_of(_text, st.none()), lambda v: pd.Series(v, dtype="string")),
    "arrow int": (st.one_of(st.integers(-(2**63), 2**63 - 1), st.none()), lambda v: pa.array(v, pa.int64())),
    "arrow binary": (st.one_of(_bytes, st.none()), lambda v: pa.array(v, pa.binary())),
}


@st.composite
def _typed_case(draw):
    name = draw(st.sampled_from(sorted(_typed)))
    values, make = _typed[name]
    ids = draw(st.lists(values, max_size=12))
    return name, make, ids, draw(values)


@settings(max_examples=300, deadline=None)
@given(case=_typed_case())
def test_adding_one_id_of_the_arrays_type_never_changes_how_the_others_are_read(case):
    """Arrays of one dtype (numpy, pandas, pyarrow): the added id has that
    type too (any other would have to be converted by whoever built it)."""
    _, make, ids, extra = case
    before, _ = factorize(make(ids))
    after, _ = factorize(make([*ids, extra]))
    assert restricted(after, len(ids)) == partition(before)


# --------------------------------------------------------------------------- #
# the command line's door: a file's ids, by the file's declared types


def _csv(path, ids):
    lines = ["x,y,unit"] + [f"0.5,0.5,{u}" for u in ids]
    path.write_text("\n".join(lines) + "\n")
    return path


def _parquet(path, ids):
    pq.write_table(
        pa.table({"x": [0.5] * len(ids), "y": [0.5] * len(ids), "unit": pa.array(ids, pa.string())}), path
    )
    return path


@pytest.mark.parametrize("writer", [_csv, _parquet])
def test_the_command_lines_files_read_each_id_on_its_own(tmp_path, writer):
    ids = [str(BIG + i) for i in range(0, 3000, 50)] + ["1", "01", "1.0"]
    codes = {}
    for added in (False, True):
        path = writer(
            tmp_path / f"f{int(added)}.{'csv' if writer is _csv else 'parquet'}", ids + ["0.5"] * added
        )
        header = True if writer is _csv else None
        got = read_input(path, ["x", "y"], header=header, unit="unit")
        codes[added], _ = factorize(got.units)
    assert restricted(codes[True], len(ids)) == partition(codes[False])
    assert len(set(codes[False].tolist())) == len(ids)
