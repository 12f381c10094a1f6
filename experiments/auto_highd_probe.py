"""The automatic mode beyond 3-D on well-separated blobs: k = 4 Gaussian
blobs (sd 0.03, centres uniform in [0.2, 0.8]^d), n points, the unit box
as public bounds, epsilon = 1. Prints the automatic mode's ARI (two draws),
its eps, HDBSCAN's (non-private, min_cluster_size 1% of n) and fixed eps
0.1 / 0.2 at MinPts 50."""

import sys
import warnings

import numpy as np
from sklearn.cluster import HDBSCAN
from sklearn.metrics import adjusted_rand_score as ari

from dpdbscan import DPDBSCAN

warnings.simplefilter("ignore")
d, n, data_seed = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(data_seed)
centres = rng.uniform(0.2, 0.8, (4, d))
truth = rng.integers(0, 4, n)
X = np.clip(centres[truth] + rng.normal(0, 0.03, (n, d)), 0, 1)
box = ([0.0] * d, [1.0] * d)
row = [f"d={d} n={n} data={data_seed}"]
for seed in (70001, 70002):
    m = DPDBSCAN("auto", min_samples="auto", bounds=box, random_state=seed).fit(X)
    p = m.predict(X)
    row.append(f"auto {ari(truth, p):.3f} ({len(set(p) - {-1})} spans, eps {m.spans_.release.eps:.3g})")
for eps in (0.1, 0.2):
    p = DPDBSCAN(eps, min_samples=50, bounds=box, random_state=70001).fit(X).predict(X)
    row.append(f"eps {eps}: {ari(truth, p):.3f}")
row.append(f"HDBSCAN {ari(truth, HDBSCAN(min_cluster_size=max(5, n // 100)).fit(X).labels_):.3f}")
print(" | ".join(row), flush=True)
