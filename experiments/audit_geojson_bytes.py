"""Empirical privacy audit of a GeoJSON feature holding a byte that is not
UTF-8 (round 10): whether a release is made, and what it shows, must not
hinge on one unit's feature.

The GeoJSON reader decoded the file 1 MB at a time, strictly, so one byte
0xff in one unit's feature failed the decoding of the whole piece that held
it. Two neighbouring pairs, in the Beijing box of the tests (one feature per
line, as GDAL, QGIS and geopandas' ``to_file`` write it):

* ``head`` (person level): D is 60 units (``u0`` .. ``u59``) of five Point
  features each near (116.30, 39.90); D' is D and, first, one new unit's
  feature whose ``name`` property holds the byte 0xff. The file's first MB
  is read to check its envelope, so D' was refused as "not valid JSON
  before its features". Fitted by ``dpdbscan fit --geo --unit unit``
  (k = 2, eps = 300 m, MinPts = 5, epsilon = 1, delta = 1e-6). The event: a
  release is made.
* ``later`` (event level): D is 9,000 features near (116.30, 39.90), then
  2,000 near (116.45, 40.05), 1.3 MB; D' is D and, between the two groups
  (in the file's second MB), one feature holding 0xff. The piece read that
  held it (the second MB: 319 features before it and the 2,000 after it)
  was lost with it.
  Fitted by ``dpdbscan fit --geo`` (eps = 300 m, MinPts = 50, epsilon = 1).
  The event: the release's spans hold (116.45, 40.05).

Each side is fitted with seeded noise (seeds 1, 2, ... for D and 100,001,
... for D'); a Clopper-Pearson bound at 95 % on each side gives an epsilon
lower bound at delta = 1e-6 (``audit_long_lines.epsilon_bound``).

    python -m experiments.audit_geojson_bytes --runs 20

Measured (docs/privacy.md section 8, round 10): see there.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import tempfile
import warnings
from pathlib import Path

import numpy as np

from experiments.audit_long_lines import epsilon_bound

DELTA = 1e-6
BOX = ["--bounds", "116.0", "39.6", "116.6", "40.2"]
FIT = ["--geo", *BOX, "--eps", "300m", "--epsilon", "1", "--no-png", "--no-geojson"]
C1, C2 = (116.30, 39.90), (116.45, 40.05)


def _feature(rng: np.random.Generator, centre: tuple[float, float], unit: str) -> str:
    x, y = rng.normal(centre, 0.0008)
    g = {"type": "Point", "coordinates": [round(float(x), 6), round(float(y), 6)]}
    return json.dumps({"type": "Feature", "properties": {"unit": unit}, "geometry": g})


#: One unit's feature whose ``name`` holds the byte 0xff (written as U+00FF, then replaced)
BAD = (
    '{"type": "Feature", "properties": {"unit": "z", "name": "caf\u00ff"}, '
    '"geometry": {"type": "Point", "coordinates": [116.3, 39.9]}}'
)


def _write(path: Path, lines: list[str]) -> None:
    text = '{"type": "FeatureCollection", "features": [\n' + ",\n".join(lines) + "\n]}\n"
    path.write_bytes(text.encode("utf-8").replace("\u00ff".encode(), b"\xff"))


def write_head(extra: bool, folder: Path) -> tuple[Path, list[str]]:
    rng = np.random.default_rng(0)
    lines = [_feature(rng, C1, f"u{i % 60}") for i in range(300)]
    path = folder / f"head{int(extra)}.geojson"
    _write(path, [BAD, *lines] if extra else lines)
    opts = ["--unit", "unit", "--max-cells-per-unit", "2", "--min-samples", "5", "--delta", str(DELTA)]
    return path, opts


def write_later(extra: bool, folder: Path) -> tuple[Path, list[str]]:
    rng = np.random.default_rng(0)
    first = [_feature(rng, C1, "a") for _ in range(9000)]
    second = [_feature(rng, C2, "b") for _ in range(2000)]
    path = folder / f"later{int(extra)}.geojson"
    _write(path, [*first, BAD, *second] if extra else [*first, *second])
    return path, ["--min-samples", "50"]


WRITERS = {"head": write_head, "later": write_later}


def fit(path: Path, opts: list[str], seed: int, out: Path) -> Path | None:
    """The model ``dpdbscan fit`` writes, or None when it makes no release."""
    from dpdbscan.cli import main

    sink = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        warnings.simplefilter("ignore")
        try:
            args = [*FIT, *opts, "--seed", str(seed), "--out-dir", str(out), "--name", "m"]
            rc = main(["fit", str(path), *args])
        except Exception:  # a traceback: no release
            return None
    return out / "m.spans.json" if rc == 0 else None


def event(case: str, model: Path | None) -> bool:
    if model is None:
        return False
    if case == "head":
        return True
    from dpdbscan import load_model, predict_lonlat

    return bool(predict_lonlat(load_model(model), np.array([C2]))[0] >= 0)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20, help="seeded fits of each side")
    ap.add_argument("--cases", nargs="+", default=list(WRITERS), choices=list(WRITERS))
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for case in a.cases:
            hits = []
            for extra in (False, True):
                path, opts = WRITERS[case](extra, folder)
                seeds = range(1 + 100_000 * extra, 1 + 100_000 * extra + a.runs)
                hits.append(sum(event(case, fit(path, opts, s, folder / "out")) for s in seeds))
            eps = epsilon_bound(hits[0], a.runs, hits[1], a.runs, DELTA)
            print(
                f"{case:6s} event in {hits[0]}/{a.runs} of D, {hits[1]}/{a.runs} of D'; "
                f"epsilon >= {eps:.2f} at delta={DELTA:g} (stated epsilon = 1)",
                flush=True,
            )


if __name__ == "__main__":
    main()
