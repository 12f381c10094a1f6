"""One door for the private input (dpdbscan.prepare): the estimator and the
command line give the same release for the same research seed, on every
input kind, and the door's hook for per-unit steps reaches the release.

The table below fits the same points through ``DPDBSCAN.fit`` /
``fit_lonlat`` and through ``dpdbscan fit`` (numpy in memory against CSV,
gzipped CSV and Parquet files; lon/lat with ``--geo``; event level and with
``--unit``; the Dask backend on CSV and Parquet files) and compares the two
span models' JSON but for the metadata, which records the command line's own
options (the tool, the eps text, the columns).
"""

from __future__ import annotations

import ast
import contextlib
import gzip
import io
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from dpdbscan import DPDBSCAN
from dpdbscan.cli import main
from dpdbscan.estimator import fit_lonlat
from dpdbscan.model import save_model
from dpdbscan.prepare import Points, Source, prepare

pd = pytest.importorskip("pandas")

EPS, MINPTS, SEED = 0.5, 20, 0
BOX = ["0", "0", "10", "10"]
GEO_BOX = [-122.43, 37.76, -122.40, 37.79]
K, DELTA = 4, 1e-6


def _points(seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Two blobs and some background in the box [0, 10]^2, with 400 units."""
    rng = np.random.default_rng(seed)
    P = np.vstack([rng.normal(c, 0.3, (600, 2)) for c in ((2, 2), (7, 6))] + [rng.uniform(0, 10, (200, 2))])
    return P, np.array([f"u{i % 400}" for i in range(len(P))])


P, U = _points()
G = np.column_stack([-122.42 + P[:, 0] * 0.001, 37.77 + P[:, 1] * 0.001])


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("door")
    frame = pd.DataFrame({"x": P[:, 0], "y": P[:, 1], "unit": U})
    frame.to_csv(d / "p.csv", index=False)
    with gzip.open(d / "p.csv.gz", "wt") as f:
        frame.to_csv(f, index=False)
    if _has("pyarrow"):
        frame.to_parquet(d / "p.parquet")
    pd.DataFrame({"lon": G[:, 0], "lat": G[:, 1], "unit": U}).to_csv(d / "g.csv", index=False)
    return d


def _has(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def _release(path: Path) -> dict:
    """A saved span model's JSON without its metadata."""
    data = json.loads(Path(path).read_text())
    data.pop("metadata")
    return data


def _cli(tmp_path: Path, *argv: object) -> dict:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        rc = main(
            [str(a) for a in argv]
            + ["--seed", str(SEED), "--out-dir", str(tmp_path), "--name", "cli", "--no-png", "--no-geojson"]
        )
    assert rc == 0, err.getvalue()
    return _release(tmp_path / "cli.spans.json")


def _estimator(tmp_path: Path, X, units=None, **kw) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded noise: research only
        est = DPDBSCAN(EPS, min_samples=MINPTS, bounds=(0, 10), random_state=SEED, **kw).fit(X, units=units)
    save_model(est.spans_, tmp_path / "est.json")
    return _release(tmp_path / "est.json")


FIT = ["--eps", EPS, "--min-samples", MINPTS, "--bounds", *BOX]
UNIT = ["--unit", "unit", "--max-cells-per-unit", K, "--delta", DELTA]
PERSON = dict(max_cells_per_unit=K, delta=DELTA)


@pytest.mark.parametrize("person", [False, True], ids=["event", "unit"])
@pytest.mark.parametrize(
    "name, options",
    [
        ("p.csv", ["--header", "--columns", "x", "y"]),
        ("p.csv.gz", ["--header", "--columns", "x", "y"]),
        ("p.parquet", ["--columns", "x", "y"]),
    ],
)
def test_the_estimator_and_the_command_line_release_the_same(files, tmp_path, name, options, person):
    if name.endswith("parquet"):
        pytest.importorskip("pyarrow")
    cli = _cli(tmp_path, "fit", files / name, *options, *FIT, *(UNIT if person else []))
    est = _estimator(tmp_path, P, U if person else None, **(PERSON if person else {}))
    assert cli == est
    assert cli["spans"]  # a release with spans, not two empty ones
    if person:
        assert cli != _estimator(tmp_path, P)  # the units changed the release


@pytest.mark.parametrize("person", [False, True], ids=["event", "unit"])
def test_geo_and_fit_lonlat_release_the_same(files, tmp_path, person):
    box = [str(v) for v in GEO_BOX]
    cli = _cli(
        tmp_path,
        "fit",
        files / "g.csv",
        "--header",
        "--geo",
        "--eps",
        "50m",
        "--min-samples",
        MINPTS,
        "--bounds",
        *box,
        *(UNIT if person else []),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = fit_lonlat(
            G,
            bounds=GEO_BOX,
            eps="50m",
            min_samples=MINPTS,
            random_state=SEED,
            units=U if person else None,
            **(PERSON if person else {}),
        )
    save_model(model, tmp_path / "est.json")
    assert cli == _release(tmp_path / "est.json")
    meta = json.loads((tmp_path / "cli.spans.json").read_text())["metadata"]
    assert meta["projection"] == model.metadata["projection"]
    assert meta["bounds_degrees"] == model.metadata["bounds_degrees"]


@pytest.fixture(scope="module")
def dask_scheduler():
    distributed = pytest.importorskip("distributed")
    pytest.importorskip("pyarrow")
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, protocol="tcp", dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield cluster.scheduler_address, client


@pytest.mark.parametrize("person", [False, True], ids=["event", "unit"])
@pytest.mark.parametrize("name", ["p.csv", "p.parquet"])
def test_the_dask_backend_releases_the_same_through_both_doors(files, tmp_path, dask_scheduler, name, person):
    from dpdbscan.release.backends.dask_backend import DaskBackend

    address, client = dask_scheduler
    options = ["--columns", "x", "y"] + (["--header"] if name.endswith("csv") else [])
    cli = _cli(
        tmp_path,
        "fit",
        files / name,
        *options,
        *FIT,
        *(UNIT if person else []),
        "--backend",
        "dask",
        "--scheduler",
        address,
    )
    backend = DaskBackend(client=client, columns=["x", "y"], header=True if name.endswith("csv") else None)
    est = _estimator(
        tmp_path, str(files / name), "unit" if person else None, backend=backend, **(PERSON if person else {})
    )
    assert cli == est
    # and the same as the points in memory: one release, whoever reads them
    assert est == _estimator(tmp_path, P, U if person else None, **(PERSON if person else {}))


def test_the_door_applies_the_per_unit_steps_in_order_before_the_release(files, tmp_path):
    """The hook for per-unit preparation (``Source.transforms``): each step
    sees the points the previous one returned, in the fit's coordinates,
    after the box and the units are prepared; the release counts what the
    last step returned."""
    seen = []

    def drop_unit(name):
        def step(pts: Points) -> Points:
            seen.append((name, pts.X.shape[0]))
            keep = _ids(pts.units) != name
            # a pyarrow array from a file, a numpy array from memory
            units = pts.units.filter(keep) if hasattr(pts.units, "filter") else pts.units[keep]
            return Points(pts.X[keep], pts.names, pts.lower, pts.upper, pts.proj, pts.counts, units)

        return step

    source = Source(P, bounds=(0, 10), units=U, transforms=(drop_unit("u0"), drop_unit("u1")))
    seen.clear()
    pts = prepare(source, eta=4.0)
    n0, n1 = int(np.sum(U == "u0")), int(np.sum(U == "u1"))
    assert seen == [("u0", len(P)), ("u1", len(P) - n0)]
    assert pts.X.shape[0] == len(P) - n0 - n1 and not np.isin(pts.units, ["u0", "u1"]).any()
    assert pts.counts is None  # the reader's counts described the rows as read

    # a file through the command line's door: the same steps, the same points
    from dpdbscan.files import ReadOptions

    read = ReadOptions(columns=("x", "y"), header=True, unit="unit")
    got = prepare(
        Source(
            files / "p.csv",
            read=read,
            bounds=BOX,
            flat_bounds=True,
            cli=True,
            transforms=(drop_unit("u0"), drop_unit("u1")),
        ),
        eta=4.0,
    )
    np.testing.assert_array_equal(got.X, pts.X)
    np.testing.assert_array_equal(_ids(got.units), _ids(pts.units))


def _ids(units) -> np.ndarray:
    """Unit ids as text: a numpy array in memory, a pyarrow array (binary for
    CSV) from a file."""
    values = units.to_pylist() if hasattr(units, "to_pylist") else list(units)
    return np.array([u.decode() if isinstance(u, bytes) else str(u) for u in values])


SRC = Path(__file__).resolve().parents[1] / "src" / "dpdbscan"
#: The functions that turn the argparse namespace into typed records: the
#: command line's boundary (called only by the commands' entry points).
CONVERTERS = {"from_args", "read_options_from_args", "picture_options", "events_from_args"}


def _cli_modules():
    return sorted((SRC / "cli").glob("*.py"))


def test_no_cli_module_imports_another_modules_private_names():
    found = []
    for path in _cli_modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                private = [
                    a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")
                ]
                if private:
                    found.append(f"{path.name}:{node.lineno} {private}")
    assert found == []


def test_only_the_entry_points_and_the_converters_take_the_namespace():
    """No function below a command's entry point (``cmd_*``) takes the
    argparse namespace: the converters make typed records of it there."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            params = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
            takes = any(
                a.arg == "args" or (a.annotation is not None and "Namespace" in ast.unparse(a.annotation))
                for a in params
            )
            if takes and not (node.name.startswith("cmd_") or node.name == "main" or node.name in CONVERTERS):
                found.append(f"{path.relative_to(SRC)}:{node.lineno} {node.name}")
    assert found == []
    # and the converters are called from the entry points only
    callers = set()
    for path in _cli_modules():
        tree = ast.parse(path.read_text())
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for call in ast.walk(fn):
                    if isinstance(call, ast.Call):
                        f = call.func
                        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
                        if name in CONVERTERS:
                            callers.add(fn.name)
    assert callers and all(c.startswith("cmd_") or c in CONVERTERS for c in callers), callers
