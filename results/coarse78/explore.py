"""Exploration (tune seeds 61, 73 only): release on a coarser grid (eta > 4)
with sub-cells, against today's. Not a benchmark: one fit, CPU of the fit,
ARI of predict labels against the dbscan package's labels (cached)."""
import json, os, sys, time, resource, warnings
import numpy as np
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from benchmarks import blobs_nd, sweep_dims
from dpdbscan.params import parameters as P

# let eta above 4 through (exploration only)
import dataclasses
P.PARAMETERS["eta"] = dataclasses.replace(P.PARAMETERS["eta"], constraints=(P.Real(0, 64, low_open=True),))

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF); return r.ru_utime + r.ru_stime

def ref_labels(X, alpha, d, shape, seed):
    path = f"/tmp/coarse78_ref_{d}_{shape}_{seed}_{alpha}.npy"
    if os.path.exists(path):
        return np.load(path), json.load(open(path + ".json"))["cpu"]
    from benchmarks.peer import Peer
    with Peer(X) as other:
        lab = other.labels(alpha, 20)
        c = other.fit(alpha, 20)[0]
    np.save(path, lab); json.dump({"cpu": c}, open(path + ".json", "w")); return lab, c

def main():
    d, shape, seed, scale = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    opts = json.loads(sys.argv[5]) if len(sys.argv) > 5 else {}
    from dpdbscan import DPDBSCAN
    from sklearn.metrics import adjusted_rand_score
    alpha = round(blobs_nd.ALPHA[d] * scale, 6)
    X = sweep_dims.points(d, shape, seed, 100_000)
    ref, rc = ref_labels(X, alpha, d, shape, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DPDBSCAN(alpha, min_samples=20, epsilon=1.0, bounds=(0.0, 1.0), random_state=seed, **opts)
        t = cpu(); est.fit(X); c0 = cpu() - t; t = cpu(); est.fit(X); c = cpu() - t
        lab = est.predict(X)
    print(json.dumps(dict(d=d, shape=shape, seed=seed, scale=scale, opts=opts, cold=round(c0, 2), cpu=round(c, 2), ratio=round(c / rc, 2),
        ari=round(float(adjusted_rand_score(ref, lab)), 4), theta=float(est.theta_),
        released=int(est.histogram_.values.size), eta=float(est.histogram_.grid.eta),
        spans=int(est.spans_.n_spans), dbscan_k=int(ref.max()) + 1,
        peak_gb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6, 2))), flush=True)

main()
