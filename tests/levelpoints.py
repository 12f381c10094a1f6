"""Points for the level-selection tests (tests/post/test_levels.py and
tests/model/test_level_selection.py): clusters no single MinPts separates."""

from __future__ import annotations

import numpy as np

#: The public box of :func:`bridged_blobs`.
BOX = (np.zeros(2), np.array([10.0, 8.0]))


def bridged_blobs(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A dense blob with a sparse blob beside it, joined by a thin bridge,
    and a third, sparse blob far away: no single MinPts separates the
    first two and keeps the third. Labels: 0, 1, 2 and -1 (the bridge)."""
    rng = np.random.default_rng(seed)
    X = np.vstack(
        [
            rng.normal((3.0, 5.0), 0.25, (6000, 2)),  # dense
            rng.normal((5.4, 5.0), 0.6, (1500, 2)),  # sparse, close to the dense one
            np.column_stack([rng.uniform(3.0, 5.4, 200), rng.normal(5.0, 0.03, 200)]),  # bridge
            rng.normal((7.0, 2.0), 0.6, (1500, 2)),  # sparse, far
        ]
    )
    return X, np.repeat([0, 1, -1, 2], [6000, 1500, 200, 1500])
