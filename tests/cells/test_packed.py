"""Packed arrays (the model file's cells, counts and histograms): the bytes a
seeded release writes must not depend on the process that writes them.

ISA-L's deflate (``isal_zlib.compress``, which packed arrays used when
``isal`` was installed) chose other matches for a few small arrays depending
on where its stream state sat in memory (on the calling thread's stack):
same_release case 78 wrote another model file in about 1 fresh process of 9,
every array the same once inflated. Threads alive at once have their stacks
at different addresses, so packing the same arrays in each of them shows it
within one process."""

import threading

import numpy as np
import pytest

from dpdbscan.cells.packed import pack, unpack


def _span_like_arrays(n: int, seed: int) -> list[np.ndarray]:
    """Small int64 arrays of the kind release two packs per span: the sorted
    3-D cells of a compact blob (int32 once packed, many repeated bytes) and
    their counts."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        centre = rng.integers(5, 60, 3)
        cells = np.unique(centre + rng.integers(-2, 3, (int(rng.integers(8, 60)), 3)), axis=0)
        out.append(cells.astype(np.int64))
        out.append(rng.integers(0, 40, cells.shape[0]).astype(np.int64))
    return out


def test_packed_bytes_are_the_same_on_every_thread():
    arrays = _span_like_arrays(2500, seed=70_078)
    here = [pack(a)["zlib_base64"] for a in arrays]
    n_threads = 6
    barrier = threading.Barrier(n_threads)
    there: list[list[str] | None] = [None] * n_threads

    def run(k: int) -> None:
        barrier.wait()  # all alive at once: six stacks, six addresses
        there[k] = [pack(a)["zlib_base64"] for a in arrays]

    threads = [threading.Thread(target=run, args=(k,)) for k in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k, got in enumerate(there):
        assert got is not None
        differ = [i for i, (a, b) in enumerate(zip(here, got)) if a != b]
        assert not differ, f"thread {k}: {len(differ)} of {len(arrays)} arrays packed to other bytes"


@pytest.mark.parametrize(
    "arr",
    [
        np.array([[39, 20, 13], [39, 20, 14], [40, 19, 14]], dtype=np.int64),
        np.array([2**40, -3], dtype=np.int64),  # stays int64
        np.zeros((0, 3), dtype=np.int64),
        np.linspace(-1.0, 1.0, 7),
    ],
)
def test_unpack_gives_back_what_pack_took(arr):
    d = pack(arr)
    back = unpack(d)
    assert back.shape == arr.shape
    assert np.array_equal(back, arr)
    small = arr.dtype.kind == "i" and arr.size and np.abs(arr).max() < 2**31
    assert d["dtype"] == ("<i4" if small else arr.dtype.str)
