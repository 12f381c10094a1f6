"""Philox4x32-10, vectorised: random words addressed by a counter.

A counter-based generator (Salmon, Moraes, Dror and Shaw, "Parallel random
numbers: as easy as 1, 2, 3", SC 2011) maps a 128-bit counter and a 64-bit
key to 128 random-looking bits; the same (counter, key) always gives the same
words, in any process and in any order. The contribution bound uses it to give
every (unit, cell) pair a random priority that does not depend on how the rows
are split: the in-memory and the Dask backends choose the same cells for the
same key (:mod:`dpdbscan.release.bounding`). The key is drawn from the
release's randomness source (the operating system's CSPRNG by default) and
used once.

Each round multiplies two 32-bit lanes by fixed constants (as 64-bit
products, split into high and low halves) and mixes the halves with the
other lanes and the key; the key is bumped by Weyl constants between rounds.
The tests check the published known-answer vectors of Random123.
"""

from __future__ import annotations

import numpy as np

_M0 = np.uint64(0xD2511F53)
_M1 = np.uint64(0xCD9E8D57)
_W0 = 0x9E3779B9
_W1 = 0xBB67AE85
_LOW = np.uint64(0xFFFFFFFF)
_SHIFT = np.uint64(32)
ROUNDS = 10


def philox4x32(
    counter: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], key: tuple[int, int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Philox4x32-10 of each counter (four arrays of 32-bit lanes, held as
    uint64 below 2**32) under ``key`` (two 32-bit integers); four arrays of
    32-bit words (as uint64)."""
    c0, c1, c2, c3 = (np.array(c, dtype=np.uint64) for c in counter)
    k0, k1 = int(key[0]) & 0xFFFFFFFF, int(key[1]) & 0xFFFFFFFF
    p0, p1 = np.empty_like(c0), np.empty_like(c0)
    for r in range(ROUNDS):
        if r:
            k0 = (k0 + _W0) & 0xFFFFFFFF
            k1 = (k1 + _W1) & 0xFFFFFFFF
        # a 32 x 32 -> 64-bit product never overflows uint64
        np.multiply(c0, _M0, out=p0)
        np.multiply(c2, _M1, out=p1)
        # new (c0, c1, c2, c3) = (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0),
        # in place: c1 and c3 are read before they are overwritten
        np.right_shift(p1, _SHIFT, out=c0)
        c0 ^= c1
        c0 ^= np.uint64(k0)
        np.bitwise_and(p1, _LOW, out=c1)
        np.right_shift(p0, _SHIFT, out=c2)
        c2 ^= c3
        c2 ^= np.uint64(k1)
        np.bitwise_and(p0, _LOW, out=c3)
    return c0, c1, c2, c3


def words64(a: np.ndarray, b: np.ndarray, key: tuple[int, int]) -> np.ndarray:
    """One random 64-bit word per pair of 64-bit inputs ``(a[i], b[i])``: the
    first two output lanes of Philox4x32-10 at the counter made of their
    32-bit halves."""
    a = np.asarray(a).astype(np.uint64, copy=False)
    b = np.asarray(b).astype(np.uint64, copy=False)
    w0, w1, _, _ = philox4x32((a & _LOW, a >> _SHIFT, b & _LOW, b >> _SHIFT), key)
    return (w1 << _SHIFT) | w0


__all__ = ["ROUNDS", "philox4x32", "words64"]
