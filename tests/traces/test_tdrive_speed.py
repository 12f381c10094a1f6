"""The steps a T-Drive folder made slow (issue 28, "trace data you do not have"), each now
taken a faster way that must give exactly what the plain way gives: a folder's time
column joined by its buffers, not value by value; ISO text told from numbers by its
first values; the patterns of the text rule each over what is left, without a trimming
pass where nothing is padded; ties in time sorted by the coordinates over the tied rows
alone; a folder's unit codes without a fill over every chunk. No timing is asserted:
each test compares the fast way with the plain one."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpdbscan.files.reader import pa_chunks
from dpdbscan.release.bounding import factorize
from dpdbscan.traces.order import _grouped_order, trace_order, usable
from dpdbscan.traces.times import ISO_LOCAL, ISO_ZONED, NUMBER_PATTERN, _all_numbers, _parse_text, parse_times

pa = pytest.importorskip("pyarrow")
pc = pytest.importorskip("pyarrow.compute")


def test_a_chunked_column_is_cast_chunk_by_chunk_to_its_values():
    chunks = [pa.array([b"2008-02-02 13:30:4%d" % i, None, b"x"]) for i in range(5)]
    for values in (pa.chunked_array(chunks), pa.chunked_array(chunks[:1]), pa.chunked_array([], pa.binary())):
        got = pa_chunks(values, pa.binary())
        assert all(isinstance(c, pa.Array) and c.type == pa.binary() for c in got)
        assert pa.chunked_array(got, pa.binary()).to_pylist() == values.to_pylist()
    # cast as well, as the plain array was; a list or an array as pa_array makes it
    got = pa_chunks(pa.chunked_array([pa.array(["1", "2"]), pa.array(["3"])]), pa.binary())
    assert pa.chunked_array(got).to_pylist() == [b"1", b"2", b"3"]
    assert [c.to_pylist() for c in pa_chunks(["a", None], pa.binary())] == [[b"a", None]]
    assert pa_chunks(np.array([1.5, 2.0]), pa.float64())[0].to_pylist() == [1.5, 2.0]


def _plain_text_rule(values: list[str | None]) -> np.ndarray:
    """The text rule value by value: trim spaces and tabs, then the one pattern that matches."""
    out = []
    for v in values:
        if v is None:
            out.append(np.nan)
            continue
        one = pa.array([v.strip(" \t")])
        for pattern, target in (
            (NUMBER_PATTERN, pa.float64()),
            (ISO_LOCAL, pa.timestamp("ns")),
            (ISO_ZONED, pa.timestamp("ns", tz="UTC")),
        ):
            if pc.match_substring_regex(one, pattern)[0].as_py():
                try:
                    got = one.cast(target)
                except pa.ArrowInvalid:
                    out.append(np.nan)
                    break
                x = got.cast(pa.int64())[0].as_py() / 1e9 if pa.types.is_timestamp(target) else got[0].as_py()
                out.append(x if np.isfinite(x) else np.nan)
                break
        else:
            out.append(np.nan)
    return np.array(out, dtype=float)


TEXTS = [
    "2008-02-02 13:30:49", "2008-02-02T13:30:49Z", "2008-02-02 13:30:49+08:00", "2008-02-02",
    "1202000000", " 2008-02-02 13:30:49", "2008-02-02 13:30:49\t", "2008-02-30 10:00:00", "soon",
    "", "NaN", "inf", "2008-02-02 13:30", "2008-02-02 13:30:49.250", "+0800", None, "1.5e9",
]  # fmt: skip


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_the_text_rule_reads_each_value_as_it_reads_it_alone(seed):
    rng = np.random.default_rng(seed)
    n = 300
    # mostly ISO text as T-Drive writes it, the odd others anywhere (or none padded)
    values: list[str | None] = [f"2008-02-0{1 + i % 7} 1{i % 10}:{i % 60:02d}:{i % 59:02d}" for i in range(n)]
    for i in rng.choice(n, size=int(rng.integers(0, 40)) if seed else 0, replace=False):  # seed 0: all ISO
        values[i] = TEXTS[int(rng.integers(0, len(TEXTS)))]
    got = parse_times(pa.array(values))
    assert np.array_equal(got, _plain_text_rule(values), equal_nan=True)
    assert np.array_equal(_parse_text(pa.array(values)), got, equal_nan=True)


def test_numbers_are_told_from_text_whatever_row_the_text_is_in():
    numbers = [str(1_202_000_000 + i) for i in range(200)]
    assert np.array_equal(_all_numbers(pa.array(numbers)), np.array(numbers, dtype=float))
    for at in (0, 63, 64, 199):  # one ISO value in the head or after it: no longer all numbers
        mixed = list(numbers)
        mixed[at] = "2008-02-02 13:30:49"
        assert _all_numbers(pa.array(mixed)) is None
        assert np.array_equal(parse_times(pa.array(mixed)), _plain_text_rule(mixed), equal_nan=True)
    assert _all_numbers(pa.array([None] * 70 + ["12"])).tolist()[-1] == 12.0


def _lexsorted(X: np.ndarray, codes: np.ndarray, times: np.ndarray) -> np.ndarray:
    ok = np.flatnonzero(usable(X, codes, times))
    keys = [X[ok, j] for j in range(X.shape[1] - 1, -1, -1)]
    return ok[np.lexsort((*keys, times[ok], codes[ok]))]


@pytest.mark.parametrize("seed", range(6))
def test_ties_in_time_are_sorted_by_the_coordinates_as_one_lexsort_sorts_them(seed):
    rng = np.random.default_rng(seed)
    n = 2000
    codes = rng.integers(-1, 30, n)
    times = rng.integers(0, 200, n).astype(float)  # many ties
    if seed % 2:
        times += 0.5 * rng.integers(0, 2, n)  # times that are not whole seconds: lexsort's path
    X = rng.integers(0, 4, (n, 2)).astype(float)  # ties in a coordinate too
    X[rng.integers(0, n, 5), rng.integers(0, 2, 5)] = np.nan
    assert _grouped_order(codes[usable(X, codes, times)], times[usable(X, codes, times)]) is None
    assert np.array_equal(trace_order(X, codes, times), _lexsorted(X, codes, times))


def test_a_trace_file_with_repeated_fixes_keeps_each_units_sequence():
    # T-Drive's kind: each unit's rows together in time order, a few fixes repeated
    rng = np.random.default_rng(7)
    codes = np.repeat(np.arange(50), 40)
    times = np.concatenate([np.sort(rng.integers(0, 60, 40)) for _ in range(50)]).astype(float)
    X = rng.normal(size=(codes.size, 2)).round(1)
    rows = trace_order(X, codes, times)
    assert np.array_equal(rows, _lexsorted(X, codes, times))


def test_a_folders_unit_codes_with_and_without_missing_ids():
    names = [b"%d.txt" % i for i in range(300)]
    chunks = [pa.array([name] * (1 + i % 3), pa.binary()) for i, name in enumerate(names)]
    codes, uniques = factorize(pa.chunked_array(chunks))
    assert [uniques[c] for c in codes] == pa.chunked_array(chunks).to_pylist()
    with_null = pa.chunked_array([*chunks, pa.array([None, b"0.txt"], pa.binary())])
    codes, uniques = factorize(with_null)
    assert codes[-2] == -1 and uniques[codes[-1]] == b"0.txt" and codes.size == len(with_null)


def test_a_file_of_one_block_is_parsed_without_a_pool_and_reads_as_in_many(tmp_path, monkeypatch):
    from dpdbscan.files import csvfile
    from dpdbscan.research import read_input

    rng = np.random.default_rng(3)
    lines = [
        f"{i % 7},2008-02-0{1 + i % 5} 10:00:{i % 60:02d},{x!r},{y!r}\n"
        for i, (x, y) in enumerate(rng.random((3000, 2)).tolist())
    ]
    lines[17] = "7,soon,abc,0.5\n"  # a bad row, dropped alone either way
    path = tmp_path / "one.txt"
    path.write_text("".join(lines))
    opts = dict(header=False, fields=4, columns=(2, 3), unit=0, also=(1,))

    class NoPool:
        def __init__(self, *a, **k):
            raise AssertionError("a thread pool for a file of one block")

    with monkeypatch.context() as m:
        m.setattr(csvfile, "ThreadPoolExecutor", NoPool)
        one = read_input(path, **opts)
    with monkeypatch.context() as m:
        m.setattr(csvfile, "_BATCH", 4096)  # many blocks: the pool, as before
        many = read_input(path, **opts)
    diff = np.flatnonzero(one.X.view(np.uint64) != many.X.view(np.uint64))
    assert diff.size == 0, (diff, one.X.ravel()[diff[:4]], many.X.ravel()[diff[:4]])
    assert one.n_unparseable == many.n_unparseable == 1
    assert one.units.to_pylist() == many.units.to_pylist()
    assert one.companions[0].to_pylist() == many.companions[0].to_pylist()


def _grouped_by_definition(c, t):
    """Whether each unit's rows are one block, each block's times strictly
    monotone: 1 (none backwards), -1 (every block of more than one row
    backwards), else each block's rows in increasing time; None if not."""
    n = c.size
    if n < 2:
        return None
    starts = np.flatnonzero(np.r_[True, c[1:] != c[:-1]])
    ends = np.r_[starts[1:], n]
    if len(set(c[starts].tolist())) != starts.size:
        return None
    backwards = []
    for s, e in zip(starts, ends):
        d = np.diff(t[s:e])
        if not ((d > 0).all() or (d < 0).all()):
            return None
        backwards.append(e - s > 1 and bool(d[0] < 0))
    if not any(backwards):
        return 1
    if all(b for b, s, e in zip(backwards, starts, ends) if e - s > 1):
        return -1
    blocks = [np.arange(s, e)[::-1] if b else np.arange(s, e) for b, s, e in zip(backwards, starts, ends)]
    return np.concatenate(blocks)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 6), st.sampled_from(["up", "down", "mixed", "broken"]))
def test_grouped_passes_block_by_block_give_the_whole_file_s_answer(seed, block, kind):
    """The check of a grouped file runs over blocks of steps: a tie, a turn
    or a unit's second block on a block's edge (here blocks of 1 to 6
    steps) is found as in one pass over the whole file."""
    from dpdbscan.traces import order

    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 6, int(rng.integers(1, 6)))
    c = np.repeat(rng.permutation(sizes.size), sizes)
    t = np.concatenate([np.cumsum(rng.integers(1, 4, s)) for s in sizes]).astype(float)
    down = {"up": [], "down": range(sizes.size), "mixed": range(0, sizes.size, 2), "broken": []}[kind]
    blocks = np.split(t, np.cumsum(sizes)[:-1])
    t = np.concatenate([b[::-1] if i in down else b for i, b in enumerate(blocks)])
    if kind == "broken" and c.size > 1:  # a tie, a turn, or a unit's rows in two blocks, anywhere
        i = int(rng.integers(0, c.size - 1))
        how = int(rng.integers(3))
        if how == 0:
            t[i + 1] = t[i]
        elif how == 1:
            t[i + 1] = t[i] - 0.5
        else:
            c[i + 1] = c[0] if c[i] != c[0] else c[-1]
    want = _grouped_by_definition(c, t)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(order, "_BLOCK", block)
        got = order._grouped(c, t)
    if want is None or isinstance(want, int):
        assert got == want if want is not None else got is None
    else:
        assert isinstance(got, np.ndarray) and np.array_equal(got, want)
