"""Which n the automatic mode sizes its grid for, from its DP count of the
points (public: the count is a DP release, the rule and its constants are
fixed). The plan (:mod:`dpdbscan.plan.autoplan`) sizes the grid by it, and
the model's summary says by it whether the count changed the grid."""

from __future__ import annotations

#: The n the automatic mode's base is sized for without the user's guess
#: n_expected (the size at which DP clustering at epsilon ~ 1 makes sense).
ASSUMED_N = 20_000
#: In 1-D and 2-D the DP count sizes the base where it is below this: a
#: small set cannot afford the noise of a grid sized for ASSUMED_N (thin
#: shapes of a few hundred points each fall apart under the empty-space
#: guard), and a set of SMALL_N points or more resolves thin gaps better on
#: the finer grid (docs/parameters.md, "Thin shapes next to each other").
SMALL_N = 6_000
#: In 3-D and up the count sizes the base the other way: for the count
#: where it is above LARGE_N, else for ASSUMED_N. A 3-D base for ASSUMED_N
#: has about 40 cells along each side of the box, and a larger set's thin
#: shapes closer than its eps run together; a 3-D base sized for a small
#: count cost as much as it gained in 2-D (close-tune scenes below 6,000
#: points: 2-D +0.055, 3-D -0.035 mean ARI), so below ASSUMED_N it keeps
#: the base for ASSUMED_N (docs/parameters.md, "3-D: the count sizes the
#: base for large sets").
LARGE_N = ASSUMED_N
#: In 3-D, where the count sizes the base (above LARGE_N), the base is
#: sized for FINER_3D times the count (cells x 2.83, eps / sqrt 2), for at
#: most FINER_3D x FINER_3D_UP_TO points and never fewer than the count:
#: two or three thin strands a little apart came out as one cluster on the
#: count's base (issue 28; docs/parameters.md section 7, "A finer 3-D base
#: from a count of 20,000"). Up to 50,000 points its ladder reaches today's
#: largest candidate with one more step (plan.autoplan.FINER_CANDIDATE_KAPPA).
FINER_3D = 2**1.5
FINER_3D_UP_TO = 50_000
#: In 3-D from a count of FINER_3D_FROM up to LARGE_N the base is the
#: finer base a count of LARGE_N gets (for FINER_3D x LARGE_N points), its
#: eps ladder capped lower (plan.autoplan.SMALL_FINER_CANDIDATE_KAPPA: three
#: candidates), and the spans join core sub-cells only where they share a
#: face (:func:`joins_faces`; ``SpanSpec.join``): on the base for ASSUMED_N
#: two strands a little apart have no empty cell between them, even without
#: noise, and on the finer base their core regions still meet through the
#: eps reach of the merge (issue 28; docs/parameters.md section 7, "3-D
#: strands below 20,000 points").
FINER_3D_FROM = 6_000


def sized_n(estimate: float | None, d: int = 2) -> float | None:
    """The n the base is sized for, from the DP count ``estimate`` in ``d``
    dimensions: in 1-D and 2-D the count itself below SMALL_N (at least 1),
    in 3-D and up the count above LARGE_N; else None (ASSUMED_N, as without
    a count). Post-processing of the count."""
    if estimate is None:
        return None
    if d >= 3:
        return float(estimate) if estimate > LARGE_N else None
    if estimate >= SMALL_N:
        return None
    return max(float(estimate), 1.0)


def joins_faces(estimate: float | None, d: int = 2) -> bool:
    """Whether the automatic mode's DP count ``estimate`` in ``d``
    dimensions is in the range where the base is the finer base for
    FINER_3D x LARGE_N points and the spans join core sub-cells sharing a
    face: 3-D, FINER_3D_FROM <= count <= LARGE_N. Post-processing of the count."""
    return d == 3 and estimate is not None and FINER_3D_FROM <= estimate <= LARGE_N


def finer_n(estimate: float | None, d: int = 2) -> float | None:
    """The n the finer 3-D base is sized for, from the DP count
    ``estimate`` in ``d`` dimensions: in 3-D where :func:`sized_n` sizes
    the base for the count, max(count, min(FINER_3D x count, FINER_3D x
    FINER_3D_UP_TO)) where that is more than the count; FINER_3D x LARGE_N
    where :func:`joins_faces`; else None (the base is :func:`sized_n`'s).
    Post-processing of the count."""
    if joins_faces(estimate, d):
        return FINER_3D * LARGE_N
    n = sized_n(estimate, d)
    if n is None or d != 3 or n >= FINER_3D * FINER_3D_UP_TO:
        return None
    return min(FINER_3D * n, FINER_3D * FINER_3D_UP_TO)


__all__ = [
    "ASSUMED_N",
    "SMALL_N",
    "LARGE_N",
    "FINER_3D",
    "FINER_3D_UP_TO",
    "FINER_3D_FROM",
    "sized_n",
    "finer_n",
    "joins_faces",
]
