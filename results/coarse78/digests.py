"""Model digests of the held-out gate's 7-D/8-D cases (seeds 501, 502, five
shapes, 1x alpha) in the tree on PYTHONPATH: the narrowed rule must release
what the gated rule released (results/coarse78/RULE.md, "Scope narrowed").

PYTHONPATH=TREE/src python results/coarse78/digests.py
"""

import hashlib
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from benchmarks import blobs_nd, sweep_dims  # noqa: E402

from dpdbscan import DPDBSCAN  # noqa: E402
from dpdbscan.model import to_json  # noqa: E402

warnings.simplefilter("ignore")
for seed in (501, 502):
    for d in (7, 8):
        for shape in sweep_dims.SHAPES:
            X = sweep_dims.points(d, shape, seed, 100_000)
            est = DPDBSCAN(
                blobs_nd.ALPHA[d], min_samples=20, epsilon=1.0, bounds=(0.0, 1.0), random_state=seed
            ).fit(X)
            h = hashlib.sha256(to_json(est.spans_).encode()).hexdigest()[:16]
            print(seed, d, shape, est.histogram_.grid.eta, h, flush=True)
