"""Compiled kernels: numba's ``njit`` with the settings every kernel shares.

Import this module only inside the functions that need a kernel (the
neighbourhood sums from 4-D up, and 3-D on dense grids of 2^21 cells or
more), never at a module's top level: numba's import and its first dispatch cost about 0.4 s, which a
2-D fit and the command line on 2-D data must not pay.

``cache=True`` keeps the machine code next to the module (or in numba's user
cache when that is read-only), so only a process's first call of a kernel
after an install compiles it. ``nogil=True`` lets a kernel run beside the
reading threads. Kernels are post-processing of a release or counting of
public cells; none draws noise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numpy as np
from numba import njit

F = TypeVar("F", bound=Callable[..., Any])


def kernel(fn: F) -> F:
    """``fn`` compiled at its first call (for those argument types), cached on disk."""
    return cast(F, njit(cache=True, nogil=True)(fn))


def inlined(fn: F) -> F:
    """A helper of kernels, compiled into each kernel that calls it (numba's
    inlining of its code, before LLVM sees it): for a step called once per
    cell in a hot loop, where a call passing a dozen arrays (and the
    reference counts of the one it returns) costs more than the step."""
    return cast(F, njit(cache=True, nogil=True, inline="always")(fn))


@kernel
def lower_bound(keys: np.ndarray, lo: int, hi: int, target: int) -> int:
    """The first index in ``lo:hi`` of the sorted ``keys`` whose key is at
    least ``target`` (``hi`` if none): a binary search for kernels, which
    cannot call ``np.searchsorted`` on a slice without a copy."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if keys[mid] < target:
            lo = mid + 1
        else:
            hi = mid
    return lo


@kernel
def find_root(parent: np.ndarray, x: int) -> int:
    """The root of x's tree in a union-find's ``parent`` array, halving the
    path on the way (the merges of core cells share it)."""
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


@kernel
def link_roots(parent: np.ndarray, a: int, b: int) -> None:
    """Join the trees of roots ``a`` and ``b`` under the smaller of the two
    (so a tree's root is its least member, whatever the order of joins)."""
    if a < b:
        parent[b] = a
    elif b < a:
        parent[a] = b


@kernel
def flatten_roots(parent: np.ndarray) -> None:
    """Point every member of the union-find straight at its root."""
    for x in range(parent.size):
        parent[x] = find_root(parent, x)
