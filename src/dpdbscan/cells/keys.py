"""Wide cell keys: coordinates packed into a few 64-bit words.

When the padded universe of a grid does not fit in an int64 key, a cell's key
is its coordinates, each biased to be non-negative and given just the bits
its padded range needs, concatenated (first axis most significant) into
``W = ceil(bits / 64)`` words and stored big-endian as one numpy ``void`` of
``8 W`` bytes. Byte order is then the lexicographic order of the
coordinates, so ``np.sort`` and ``==`` on the keys stay correct; but numpy
compares ``void`` items through a generic function, several times slower
than integers. The operations that matter here (sorting, unique, searching)
therefore run on the words as native uint64 columns: one integer
``searchsorted`` on the leading word, then a vectorised binary search on the
rest within each run of equal leading words (short: the leading word holds
64 bits of the coordinates). A fine 3-D grid needs two words where the
coordinates took three, an 8-D one two where they took eight.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_ONE = np.uint64(1)


@dataclass(frozen=True)
class Packing:
    """Where each axis' biased coordinate sits in the packed key.

    ``widths[i]`` bits for axis i (first axis most significant), starting at
    bit ``positions[i]`` counted from the least significant bit of the whole
    key; ``words`` 64-bit words in all, the first axis at the very top.
    """

    bias: int
    limits: tuple[int, ...]
    widths: tuple[int, ...]
    positions: tuple[int, ...]
    words: int

    @classmethod
    def for_ranges(cls, bias: int, limits: tuple[int, ...]) -> Packing:
        """Axis i holds biased coordinates ``0 <= c + bias < limits[i]``."""
        widths = tuple(max(1, int(v - 1).bit_length()) for v in limits)
        total = sum(widths)
        n_words = max(1, -(-total // 64))
        # from the top: the leading word is full, so runs of equal leading
        # words are short; the spare bits are zeros at the bottom
        positions, at = [], 64 * n_words
        for b in widths:
            at -= b
            positions.append(at)
        return cls(int(bias), tuple(int(v) for v in limits), widths, tuple(positions), n_words)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(("V", 8 * self.words))

    def encode(self, coords: np.ndarray) -> np.ndarray:
        """Keys of integer coordinate rows, (m, d) -> (m,) void.

        A coordinate outside its axis' padded range would spill into the
        next axis' bits and alias another cell: refused, never silent."""
        m = coords.shape[0]
        low_first = [np.zeros(m, dtype=np.uint64) for _ in range(self.words)]
        for i, (b, p) in enumerate(zip(self.widths, self.positions)):
            v = coords[:, i] + self.bias
            if m and (int(v.min()) < 0 or int(v.max()) >= self.limits[i]):
                raise ValueError(
                    f"cell coordinates on axis {i} reach beyond the grid's padding "
                    f"[{-self.bias}, {self.limits[i] - self.bias}): they have no key"
                )
            u = v.view(np.uint64)
            for j in range(p // 64, (p + b - 1) // 64 + 1):
                s = p - 64 * j
                low_first[j] |= (u << np.uint64(s)) if s >= 0 else (u >> np.uint64(-s))
        out = np.empty((m, self.words), dtype=">u8")
        for j, w in enumerate(low_first):
            out[:, self.words - 1 - j] = w
        return out.view(self.dtype).ravel()

    def decode(self, keys: np.ndarray) -> np.ndarray:
        """Coordinates of packed keys (inverse of :meth:`encode`)."""
        w = words(keys)
        low_first = w[::-1]
        out = np.empty((w[0].size if w else 0, len(self.widths)), dtype=np.int64)
        for i, (b, p) in enumerate(zip(self.widths, self.positions)):
            j, s = divmod(p, 64)
            v = low_first[j] >> np.uint64(s)
            if s + b > 64:
                v = v | (low_first[j + 1] << np.uint64(64 - s))
            v &= (_ONE << np.uint64(b)) - _ONE
            out[:, i] = v.view(np.int64)
        out -= self.bias
        return out


def is_packed(keys: np.ndarray) -> bool:
    return keys.dtype.kind == "V"


def words(keys: np.ndarray) -> list[np.ndarray]:
    """The packed keys' words as native uint64 arrays, most significant first."""
    n = keys.dtype.itemsize // 8
    raw = np.ascontiguousarray(keys).view(">u8").reshape(-1, n)
    return [raw[:, j].astype(np.uint64) for j in range(n)]


def searchsorted(sorted_keys: np.ndarray, query: np.ndarray) -> np.ndarray:
    """``np.searchsorted(sorted_keys, query)`` (side "left"), fast for packed keys."""
    if not is_packed(sorted_keys):
        return np.searchsorted(sorted_keys, query)
    K, Q = words(sorted_keys), words(np.asarray(query, dtype=sorted_keys.dtype))
    lo = np.searchsorted(K[0], Q[0], side="left")
    if len(K) == 1:
        return lo
    # only queries whose leading word is present need the rest
    act = np.flatnonzero(K[0][np.minimum(lo, K[0].size - 1)] == Q[0])
    a = lo[act]
    b = np.searchsorted(K[0], Q[0][act], side="right")
    rest = [q[act] for q in Q[1:]]
    while act.size:  # lower bound over the other words, within [a, b)
        mid = (a + b) >> 1
        less = np.zeros(act.size, dtype=bool)
        eq = np.ones(act.size, dtype=bool)
        for kw, qw in zip(K[1:], rest):
            km = kw[mid]
            less |= eq & (km < qw)
            eq &= km == qw
        a = np.where(less, mid + 1, a)
        b = np.where(less, b, mid)
        done = a >= b
        lo[act[done]] = a[done]
        more = ~done
        act, a, b = act[more], a[more], b[more]
        rest = [q[more] for q in rest]
    return lo


def equal_at(sorted_keys: np.ndarray, idx: np.ndarray, query: np.ndarray) -> np.ndarray:
    """``sorted_keys[idx] == query``, word by word for packed keys."""
    if not is_packed(sorted_keys):
        return sorted_keys[idx] == query
    eq = np.ones(idx.size, dtype=bool)
    for kw, qw in zip(words(sorted_keys[idx]), words(np.asarray(query, dtype=sorted_keys.dtype))):
        eq &= kw == qw
    return eq


def argsort(keys: np.ndarray) -> np.ndarray:
    """A stable argsort of keys (a lexsort of the words for packed keys)."""
    if not is_packed(keys):
        return np.argsort(keys, kind="stable")
    return np.lexsort(words(keys)[::-1])


def run_starts(sorted_keys: np.ndarray) -> np.ndarray:
    """Index of the first key of each run of equal keys in a sorted array."""
    n = sorted_keys.size
    if n == 0:
        return np.zeros(0, dtype=np.intp)
    new = np.ones(n, dtype=bool)
    if is_packed(sorted_keys):
        new[1:] = False
        for w in words(sorted_keys):
            new[1:] |= w[1:] != w[:-1]
    else:
        new[1:] = sorted_keys[1:] != sorted_keys[:-1]
    return np.flatnonzero(new)


def unique(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(keys, return_inverse=True)`` (inverse as int64), fast for packed keys."""
    if not is_packed(keys):
        uniq, inv = np.unique(keys, return_inverse=True)
        return uniq, inv.ravel().astype(np.int64)
    order = argsort(keys)
    s = keys[order]
    starts = run_starts(s)
    group = np.zeros(keys.size, dtype=np.int64)
    if starts.size > 1:
        group[starts[1:]] = 1
    inv = np.empty(keys.size, dtype=np.int64)
    inv[order] = np.cumsum(group)
    return s[starts], inv


def popcount(x: np.ndarray) -> np.ndarray:
    """The number of 1 bits of each uint64 (``np.bitwise_count`` from numpy 2;
    the SWAR sum below on numpy 1.26, the oldest supported), as int64."""
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(x).astype(np.int64)
    m1, m2, m4 = np.uint64(0x5555555555555555), np.uint64(0x3333333333333333), np.uint64(0x0F0F0F0F0F0F0F0F)
    x = x - ((x >> np.uint64(1)) & m1)
    x = (x & m2) + ((x >> np.uint64(2)) & m2)
    x = (x + (x >> np.uint64(4))) & m4
    return ((x * np.uint64(0x0101010101010101)) >> np.uint64(56)).astype(np.int64)


__all__ = [
    "Packing",
    "argsort",
    "equal_at",
    "is_packed",
    "popcount",
    "run_starts",
    "searchsorted",
    "unique",
    "words",
]
