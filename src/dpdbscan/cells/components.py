"""Connected components of an undirected graph, in numpy.

Merging core cells into spans (:mod:`dpdbscan.post.merge`) and finding the
pieces of a span's outline (:mod:`dpdbscan.geometry.outlines`) both need the
components of a graph given as an edge list. scipy's ``csgraph`` does this
too, but importing ``scipy.sparse`` costs about 0.3 s of every cold start of
the command line, more than the whole merge on full Cabs.

The algorithm is min-label hooking with pointer jumping: every round, the
root of each edge's larger endpoint tree is hooked under the smaller root,
then every node jumps to its root. Each round joins every component that
still has an edge to another one with at least one of them, so the number
of components at least halves and there are at most log2(n) + 1 rounds,
each O(n + m) vectorised work.
"""

from __future__ import annotations

import numpy as np


def connected_components(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Component of each of the nodes ``0..n-1`` given the edges ``a[k] -- b[k]``.

    Returns an int64 array of length ``n``: the smallest node of each node's
    component (so equal values mean the same component, and the values are
    canonical: they do not depend on the order of the edges).
    """
    root = np.arange(n, dtype=np.int64)
    a = np.asarray(a, dtype=np.int64).ravel()
    b = np.asarray(b, dtype=np.int64).ravel()
    if a.shape != b.shape:
        raise ValueError("edge endpoint arrays differ in length")
    if a.size and (min(a.min(), b.min()) < 0 or max(a.max(), b.max()) >= n):
        raise ValueError("edge endpoint out of range")
    keep = a != b
    a, b = a[keep], b[keep]
    while a.size:
        ra, rb = root[a], root[b]
        lo, hi = np.minimum(ra, rb), np.maximum(ra, rb)
        live = lo != hi
        if not live.any():
            break
        lo, hi = lo[live], hi[live]
        # every endpoint is a root here (pointer jumping below ran to the end),
        # and roots only ever point to smaller roots: no cycles
        np.minimum.at(root, hi, lo)
        while True:
            nxt = root[root]
            if np.array_equal(nxt, root):
                break
            root = nxt
        # edges inside one component are done for good
        a, b = a[live], b[live]
    return root


__all__ = ["connected_components"]
