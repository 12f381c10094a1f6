"""The ``dpdbscan`` command: fit, predict, sweep, plot, info.

Conventions: standard output carries only the release (summaries, tables,
labels a user asked for); standard error carries progress and local notes for
the data owner, some of which are computed from the private data (how many rows
were read or clipped) and are therefore not part of the release. Bad input gives
one line ``dpdbscan: error: ...`` on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np

from . import __version__
from . import geo as _geo
from ._random import InsecureRandomnessWarning
from ._validation import (
    PrivacyLeakWarning, bounds_from_data, check_bounds, check_delta, check_epsilon,
    check_min_samples, check_positive,
)
from .io import read_model as load_model
from .progress import Progress

EXIT_OK, EXIT_BAD_INPUT = 0, 2
DATA = "../shared/data/cabs_tiny.csv.gz"
BOX = "-122.48 37.72 -122.38 37.82"

EXAMPLES = {
    "fit": f"""examples:
  # Cabs-tiny as in the paper: lon/lat in degrees, alpha = 50 m, MinPts = 1000
  dpdbscan fit {DATA} --geo --bounds {BOX} --eps 50m --min-samples 1000 --out-dir out

  # plain coordinates with public bounds [0, 700] x [0, 500]
  dpdbscan fit points.csv --columns x y --bounds 0 0 700 500 --eps 12 --min-samples 20
""",
    "predict": f"""examples:
  dpdbscan predict out/cabs_tiny.spans.json {DATA} -o labels.csv
  dpdbscan predict model.json new_points.parquet --with-points > labelled.csv
""",
    "sweep": f"""examples:
  # one release, spans for three MinPts (no extra privacy budget)
  dpdbscan sweep {DATA} --geo --bounds {BOX} --eps 50m --min-samples 500 1000 2000 --out-dir sweep

  # re-threshold a saved model
  dpdbscan sweep --model out/cabs_tiny.spans.json --min-samples 1500 3000 --out-dir sweep
""",
    "plot": f"""examples:
  dpdbscan plot out/cabs_tiny.spans.json --kind histogram -o hist.png
  dpdbscan plot out/cabs_tiny.spans.json --kind sums
  dpdbscan plot out/cabs_tiny.spans.json --kind labels --points {DATA} -o labels.png
""",
    "info": """examples:
  dpdbscan info out/cabs_tiny.spans.json
  dpdbscan info out/cabs_tiny.spans.json --json
""",
}


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error (no usage dump) and exit status 2."""

    def error(self, message):
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


class _Warnings:
    """Collect warnings and print each distinct one once, as one line."""

    def __init__(self, err):
        self.err, self.seen, self._cm, self._log = err, set(), None, None

    def __enter__(self):
        self._cm = warnings.catch_warnings(record=True)
        self._log = self._cm.__enter__()
        warnings.simplefilter("always")
        return self

    def flush(self):
        for w in self._log:
            text = " ".join(str(w.message).split())
            if text in self.seen:
                continue
            self.seen.add(text)
            loud = issubclass(w.category, PrivacyLeakWarning)
            print(f"dpdbscan: {'PRIVACY WARNING' if loud else 'warning'}: {text}", file=self.err)
        self._log.clear()

    def __exit__(self, *exc):
        self.flush()
        self._cm.__exit__(*exc)


# --------------------------------------------------------------------------- #
# parsing helpers


def _tokens(values) -> list[str]:
    """``["1,2", "3"]`` -> ``["1", "2", "3"]`` (commas or spaces both work)."""
    return [t for v in values or [] for t in str(v).replace(",", " ").split()]


def _floats(values, option: str) -> list[float]:
    out = []
    for t in _tokens(values):
        try:
            out.append(float(t))
        except ValueError:
            raise ValueError(f"{option} must be numbers, got {t!r}") from None
    return out


def _column_tokens(values):
    """Column names may contain spaces, so only commas split an argument."""
    toks = [t.strip() for v in values or [] for t in str(v).split(",") if t.strip()]
    return toks or None


def _split_bounds(values: list[float], d: int, geo: bool):
    """``lower_1..lower_d upper_1..upper_d`` (or one lower and one upper)."""
    if geo and len(values) != 4:
        raise ValueError(
            f"--bounds with --geo needs 4 numbers in degrees: lon_min lat_min lon_max lat_max, "
            f"got {len(values)}"
        )
    if len(values) == 2:
        return check_bounds((values[0], values[1]), d)
    if len(values) != 2 * d:
        raise ValueError(
            f"--bounds needs 2 numbers (one lower and one upper for every column) or "
            f"2*d = {2 * d} numbers (lower_1 .. lower_{d} upper_1 .. upper_{d}), got {len(values)}"
        )
    return check_bounds((values[:d], values[d:]), d)


def _stem(path: str) -> str:
    if any(c in path for c in "*?["):
        return "spans"
    name = Path(path).name
    for suffix in (".gz", ".csv", ".tsv", ".txt", ".parquet", ".pq", ".npy"):
        name = name[: -len(suffix)] if name.lower().endswith(suffix) else name
    return name or "spans"


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename and exc.strerror:
        return f"{exc.strerror}: {exc.filename}"
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


# --------------------------------------------------------------------------- #
# models, points and pictures


def _read(path, columns, args, *, model=None, geo=False):
    """Points of ``path`` in display coordinates (lon/lat for geo) and names."""
    from .io import read_points

    preferred = (model.metadata.get("columns") if model is not None else None) or None

    def choose(names, numeric):
        if preferred and all(c in names for c in preferred):
            return list(preferred)
        return _geo.default_geo_columns(names) if geo else None

    return read_points(path, columns, choose=choose, delimiter=args.delimiter,
                       no_header=args.no_header, progress=_progress_flag(args))


def _say_read(path, X, names):
    # After the checks that may still fail, so that bad input gets one line.
    print(f"read {X.shape[0]:,} rows x {X.shape[1]} column(s) ({', '.join(names)}) from {path}",
          file=sys.stderr)


def _progress_flag(args):
    return False if getattr(args, "no_progress", False) else None


def _draw_spans_png(model, path, *, dpi=120):
    from . import plotting

    plotting.save(plotting.plot_model(model, "spans"), path, dpi=dpi)


def _alpha_text(model) -> str:
    a = model.grid.alpha
    return _geo.format_km(a) if _geo.projection_of(model) is not None else f"{a:g}"


# --------------------------------------------------------------------------- #
# fit and sweep


def _check_fit_params(args):
    """Validate the cheap parameters before reading a possibly huge file."""
    eps = check_positive("eps", _geo.parse_length(args.eps, geo=args.geo))
    check_epsilon(args.epsilon)
    check_delta(args.delta)
    check_positive("eta", args.eta, upper=4.0)
    check_positive("beta", args.beta, upper=1.0, upper_inclusive=False)
    for m in _min_samples_list(args):
        check_min_samples(m)
    if args.histogram == "stability" and args.delta == 0:
        raise ValueError("--histogram stability needs --delta > 0, got --delta 0")
    if args.ref_lat is not None and not args.geo:
        raise ValueError("--ref-lat only applies with --geo")
    if args.scheduler and args.backend != "dask":
        raise ValueError("--scheduler needs --backend dask")
    if args.bounds is None and not args.bounds_from_data:
        raise ValueError(
            "--bounds is required: give public bounds of the data domain (not computed from the "
            "data), or pass --bounds-from-data to accept a release with no privacy guarantee"
        )
    if args.bounds is not None and args.bounds_from_data:
        raise ValueError("give either --bounds or --bounds-from-data, not both")
    return eps


def _min_samples_list(args) -> list[int]:
    m = args.min_samples
    return list(m) if isinstance(m, (list, tuple)) else [m]


class _Reporting:
    """Wrap a backend to name the counting step on the progress line."""

    def __init__(self, inner, bar):
        self.inner, self.bar = inner, bar

    def count(self, grid, X):
        self.bar.set_label("fitting: counting cells")
        out = self.inner.count(grid, X)
        self.bar.set_label("fitting: noisy histogram, core cells, spans")
        return out


class _ReportingDense(_Reporting):
    def dense_counts(self, grid, X):
        self.bar.set_label("fitting: counting cells")
        out = self.inner.dense_counts(grid, X)
        self.bar.set_label("fitting: noisy histogram, core cells, spans")
        return out


def _dask_backend(args, columns):
    try:
        from .backends.dask_backend import DaskBackend
    except ImportError as exc:
        raise ImportError(
            f"--backend dask needs the dask extra: pip install 'dpdbscan[dask]' ({_one_line(exc)})"
        ) from None
    # Dask reads the files itself, so --columns are passed on as names.
    return DaskBackend(scheduler=args.scheduler, columns=columns)


def fit_from_args(args, sink, min_samples: int):
    """Run one release as the options say; returns the SpanModel."""
    from . import DPDBSCAN
    from .backends import NumpyBackend

    eps = _check_fit_params(args)
    bounds_in = None if args.bounds is None else _floats(args.bounds, "--bounds")
    columns = _column_tokens(args.columns)
    meta = {"tool": f"dpdbscan {__version__}", "eps_text": str(args.eps),
            "randomness": "secure" if args.seed is None else "seeded (insecure; seed not stored)"}
    dask = args.backend == "dask"
    if dask:
        if args.geo:
            raise ValueError("--geo is not supported with --backend dask: the backend counts the "
                             "file's own coordinates, so project lon/lat to km first")
        if args.bounds_from_data:
            raise ValueError("--backend dask needs public --bounds (it never scans the data for them)")
        d = len(columns) if columns else (len(bounds_in) // 2 if len(bounds_in) > 2 else None)
        if d is None:
            raise ValueError("with --backend dask give --columns, or --bounds with one lower and one "
                             "upper value per column")
        X, names = args.input, columns
        backend = _dask_backend(args, columns)
    else:
        X, names = _read(args.input, columns, args, geo=args.geo)
        d = X.shape[1]
        backend = NumpyBackend()
    if args.geo and d != 2:
        raise ValueError(f"--geo needs exactly two columns (longitude, latitude), got {d}: {names}")
    if args.png_requested and d != 2:
        raise ValueError(f"--png needs 2-D data, got {d} columns")
    if args.geojson_requested and d != 2:
        raise ValueError(f"--geojson needs 2-D data, got {d} columns")

    if bounds_in is not None:
        lower, upper = _split_bounds(bounds_in, d, args.geo)
        meta["bounds_source"] = "public (--bounds)"
    else:
        with warnings.catch_warnings():
            # Said once below, in the command line's own words.
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            lower, upper = bounds_from_data(X)
        print("dpdbscan: PRIVACY WARNING: --bounds-from-data computes the bounds from the private "
              "data: this leaks information and the release has NO differential privacy guarantee",
              file=sys.stderr)
        meta["bounds_source"] = "data (--bounds-from-data): NO differential privacy guarantee"
    if args.geo:
        proj = _geo.Equirectangular.from_bounds(lower, upper, args.ref_lat)
        err = proj.max_scale_error(lower, upper)
        if err > 0.01:
            print(f"dpdbscan: warning: the --geo box spans latitudes {lower[1]:g}..{upper[1]:g}; "
                  f"east-west distances are off by up to {err:.1%} at its edges "
                  "(equirectangular projection)", file=sys.stderr)
        meta["projection"] = proj.to_dict()
        meta["bounds_degrees"] = {"lower": list(map(float, lower)), "upper": list(map(float, upper))}
        lower, upper = proj.project_bounds(lower, upper)
        X = proj.forward(X)
    meta["columns"] = list(names) if names else None
    if not dask:
        _say_read(args.input, X, names)
        _note_clipping(X, lower, upper)

    est = DPDBSCAN(eps=eps, min_samples=min_samples, epsilon=args.epsilon, bounds=(lower, upper),
                   random_state=args.seed, eta=args.eta, beta=args.beta, histogram=args.histogram,
                   delta=args.delta, noise=args.noise, theta=args.theta,
                   raise_min_samples=not args.theoretical_threshold, subcells=args.subcells,
                   margin=args.margin, border=_border_arg(args.border, geo=bool(args.geo)))
    if args.seed is not None:
        print("dpdbscan: warning: --seed makes the noise reproducible and NOT cryptographically "
              "secure: for research only, do not publish this release", file=sys.stderr)
    with Progress("fitting", enabled=_progress_flag(args)) as bar, warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRandomnessWarning)  # said above
        bar.spin()
        est.backend = (_ReportingDense if hasattr(backend, "dense_counts") else _Reporting)(backend, bar)
        est.fit(X)
        bar.label = "fitting"  # so the line ends "fitting: done in ..."
    sink.flush()
    model = est.spans_
    model.metadata.update(meta)
    return model


def _note_clipping(X, lower, upper):
    """Tell the data owner (stderr only) how many rows the per-record rule
    will drop or clip: a wrong column order or box shows up here."""
    if X.shape[0] == 0:
        return
    if np.isfinite(X).all():  # common case: no copy of a large input
        n_bad = 0
        if np.all(X.min(axis=0) >= lower) and np.all(X.max(axis=0) <= upper):
            return
        outside = int((~np.all((X >= lower) & (X <= upper), axis=1)).sum())
        n_ok = X.shape[0]
    else:
        finite = np.all(np.isfinite(X), axis=1)
        n_bad = int((~finite).sum())
        outside = int((~np.all((X[finite] >= lower) & (X[finite] <= upper), axis=1)).sum())
        n_ok = int(finite.sum())
    if n_bad:
        print(f"note: {n_bad:,} row(s) with missing or non-finite values are dropped", file=sys.stderr)
    if outside:
        share = outside / max(n_ok, 1)
        hint = "; check --bounds and the column order" if share > 0.5 else ""
        print(f"note: {outside:,} point(s) ({share:.1%}) lie outside the bounds and are clipped "
              f"onto the box{hint}", file=sys.stderr)


def _out_paths(args, name: str):
    out_dir = Path(args.out_dir)
    paths = {}
    for kind, skip in (("json", False), ("geojson", args.no_geojson), ("png", args.no_png)):
        explicit = getattr(args, kind, None)
        paths[kind] = None if skip else Path(explicit) if explicit else out_dir / f"{name}.spans.{kind}"

    src = Path(args.input).resolve() if args.input and not any(c in args.input for c in "*?[") else None
    for p in paths.values():
        if p is not None:
            if src is not None and p.resolve() == src:
                raise ValueError(f"output {p} would overwrite the input file")
            p.parent.mkdir(parents=True, exist_ok=True)
    return paths


def _write_outputs(model, paths) -> list[str]:
    written = []
    model.save(paths["json"])
    written.append(str(paths["json"]))
    if model.grid.d == 2:
        proj = _geo.projection_of(model)
        if paths["geojson"] is not None:
            model.save_geojson(paths["geojson"], transform=None if proj is None else proj.inverse)
            written.append(str(paths["geojson"]))
        if paths["png"] is not None:
            _draw_spans_png(model, paths["png"])
            written.append(str(paths["png"]))
    elif paths["geojson"] is not None or paths["png"] is not None:
        print(f"note: GeoJSON and PNG need 2-D data; skipped for {model.grid.d}-D", file=sys.stderr)
    return written


def _subcells_arg(text: str):
    return "auto" if text == "auto" else int(text)


def _border_arg(text, *, geo: bool):
    """--border: 'auto', a number (data units, km with --geo) or a length like 10m."""
    if text is None or str(text) == "auto":
        return "auto"
    try:
        return _geo.parse_length(str(text), geo=geo)
    except ValueError:
        raise ValueError(f"--border must be 'auto', a number >= 0 or (with --geo) a length "
                         f"like 10m, got {text!r}") from None


def summary(model) -> str:
    """The release's summary, with lengths in m/km for geographic models."""
    lines = [model.summary()]
    proj = _geo.projection_of(model)
    if proj is not None:
        lines.append(f"  geo     : lon/lat in km around {proj.ref_lat:.4f} deg N (equirectangular); "
                     f"alpha = {_geo.format_km(model.grid.alpha)}, cell width = "
                     f"{_geo.format_km(model.histogram_grid.width)}, span cells "
                     f"{_geo.format_km(model.grid.width)}")
    source = model.metadata.get("bounds_source", "")
    if source.startswith("data"):
        lines.append("  WARNING : bounds were computed from the data: this release has NO "
                     "differential privacy guarantee")
    if str(model.metadata.get("randomness", "")).startswith("seeded"):
        lines.append("  WARNING : seeded (reproducible, insecure) noise: for research, not for release")
    return "\n".join(lines)


def cmd_fit(args, sink) -> int:
    args.png_requested, args.geojson_requested = bool(args.png), bool(args.geojson)
    _check_fit_params(args)
    paths = _out_paths(args, args.name or _stem(args.input))
    model = fit_from_args(args, sink, args.min_samples)
    written = _write_outputs(model, paths)
    print(summary(model))
    print("wrote " + ", ".join(written))
    return EXIT_OK


def cmd_sweep(args, sink) -> int:
    if (args.input is None) == (args.model is None):
        raise ValueError("sweep needs either an input data file or --model MODEL.json (not both)")
    values = sorted(set(args.min_samples))
    for m in values:
        check_min_samples(m)
    if args.model is not None:
        base = load_model(args.model)
        name = args.name or Path(args.model).name.removesuffix(".json").removesuffix(".spans")
        if base.histogram is None:
            raise ValueError(f"{args.model}: saved without its noisy histogram, cannot re-threshold")
    else:
        if args.eps is None:
            raise ValueError("--eps is required when sweep fits a data file")
        args.png_requested = args.geojson_requested = False
        _check_fit_params(args)
        name = args.name or _stem(args.input)
        _out_paths(args, name)  # fail on unwritable outputs before spending budget
        base = fit_from_args(args, sink, values[0])
    rows = []
    for m in values:
        model = base if m == base.min_samples else base.with_min_samples(m)
        paths = _out_paths(args, f"{name}.m{m}")
        written = _write_outputs(model, paths)
        rows.append((m, model.threshold, model.n_spans, model.n_core_cells, written[0]))
    print(f"spans for {len(values)} MinPts from one release (epsilon={base.epsilon:g}, "
          f"delta={base.delta:g}, alpha={_alpha_text(base)}); re-thresholding costs no budget")
    print(f"{'min_samples':>11}  {'threshold':>10}  {'spans':>6}  {'core_cells':>10}  model")
    for m, thr, n, c, path in rows:
        print(f"{m:>11}  {thr:>10.1f}  {n:>6}  {c:>10}  {path}")
    return EXIT_OK


# --------------------------------------------------------------------------- #
# predict, plot, info


def _points_for(model, path, args):
    """Points of ``path`` in the model's coordinates (km for geo) and as read."""
    proj = _geo.projection_of(model)
    X, names = _read(path, _column_tokens(args.columns), args, model=model, geo=proj is not None)
    if X.shape[1] != model.grid.d:
        raise ValueError(f"{path}: {X.shape[1]} column(s) selected ({', '.join(names)}), but the "
                         f"model has {model.grid.d}; choose them with --columns")
    return (X if proj is None else proj.forward(X)), X, names


def cmd_predict(args, sink) -> int:
    from .io import write_labels

    model = load_model(args.model)
    Xm, X, names = _points_for(model, args.points, args)
    labels = model.predict(Xm)
    write_labels(args.output, labels, X if args.with_points else None, names)
    n_noise = int((labels < 0).sum())
    print(f"labelled {labels.size:,} point(s) of {args.points}: {labels.size - n_noise:,} in spans, "
          f"{n_noise:,} noise"
          + ("" if args.output == "-" else f"; wrote {args.output}"), file=sys.stderr)
    return EXIT_OK


def cmd_plot(args, sink) -> int:
    from . import plotting

    model = load_model(args.model)
    if args.kind == "labels" and args.points is None:
        raise ValueError("--kind labels needs --points FILE (the points to label)")
    if model.grid.d != 2:
        raise ValueError(f"plots need a 2-D model, this one is {model.grid.d}-D")
    if args.kind in ("histogram", "sums") and model.histogram is None:
        raise ValueError(f"{args.model}: saved without its noisy histogram; cannot plot {args.kind}")
    out = Path(args.output) if args.output else Path(args.model).with_suffix(f".{args.kind}.png")
    out.parent.mkdir(parents=True, exist_ok=True)
    points = None
    if args.points is not None and args.kind in ("spans", "labels"):
        points = _points_for(model, args.points, args)[1]
        print("note: this picture shows the points themselves: it is not a DP release",
              file=sys.stderr)
    ax = plotting.plot_model(model, args.kind, points, max_points=args.max_points)
    plotting.save(ax, out, dpi=args.dpi)
    print(f"wrote {out}")
    return EXIT_OK


def model_info(model) -> dict:
    """The parameters and guarantees of a model, in the paper's terms."""
    g, proj = model.grid, _geo.projection_of(model)
    info = {
        "epsilon": model.epsilon, "delta": model.delta, "noise": model.noise,
        "histogram": model.histogram_kind, "alpha": g.alpha, "min_samples": model.min_samples,
        "threshold": model.threshold, "rho": model.rho, "tau": model.tau, "beta": model.beta,
        "gamma": model.gamma, "gamma_upper": model.gamma_upper, "kappa": model.kappa,
        "n_cells": model.n_cells, "theta": model.theta,
        "eta": g.eta, "cell_width": g.width, "shape": list(g.shape), "d": g.d,
        "n_spans": model.n_spans, "n_core_cells": model.n_core_cells,
        "bounds": {"lower": g.lower.tolist(), "upper": g.upper.tolist()},
        "has_histogram": model.histogram is not None, "metadata": model.metadata,
    }
    if proj is not None:
        info["units"] = "km"
    return info


def cmd_info(args, sink) -> int:
    model = load_model(args.model)
    info = model_info(model)
    if args.json:
        print(json.dumps(info, indent=2, default=str))
        return EXIT_OK
    g, proj = model.grid, _geo.projection_of(model)
    # The histogram's grid; spans may sit on a finer sub-cell grid (newer models).
    hg = getattr(model, "histogram_grid", g)
    length = _geo.format_km if proj is not None else (lambda v: f"{v:g}")
    gu = model.guarantee()
    meta = model.metadata
    rows = [
        ("model", f"{args.model} (dpdbscan.spans, {model.n_spans} span(s), "
                  f"{model.n_core_cells} core cell(s))"),
        ("epsilon", f"{model.epsilon:g}"), ("delta", f"{model.delta:g}"),
        ("noise", f"{model.noise} Laplace, {model.histogram_kind} histogram"
                  + ("" if model.histogram_kind == "dense" else f", theta = {model.theta:g}")),
        ("alpha", length(g.alpha)), ("MinPts", f"{model.min_samples}"),
        ("core rule", f"UB~ >= {model.threshold:.1f}"
                      + (" (MinPts + tau)" if model.raise_min_samples else " (MinPts)")),
        ("rho", f"{model.rho:g} (eta = {hg.eta:g})"), ("tau", f"{model.tau:.2f} (= Gamma_low + Gamma_up)"),
        ("beta", f"{model.beta:g}"), ("kappa", f"{model.kappa}"),
        ("|X|", f"{model.n_cells:,} cells ({' x '.join(map(str, hg.shape))}), width {length(hg.width)}"),
        ("guarantee", f"with probability >= {1 - model.beta:g}: every "
                      f"({length(gu['covers_clusters_at']['alpha'])}, "
                      f"{gu['covers_clusters_at']['min_samples']:.1f})-cluster lies in one span, and "
                      f"every span lies in the span of one "
                      f"({length(gu['within_clusters_at']['alpha'])}, "
                      f"{gu['within_clusters_at']['min_samples']:.1f})-cluster"),
    ]
    if proj is not None:
        b = meta.get("bounds_degrees", {})
        rows.append(("projection", f"equirectangular, origin ({proj.lon0:.5f}, {proj.lat0:.5f}), "
                                   f"ref_lat {proj.ref_lat:.5f}; bounds (deg) {b.get('lower')} .. "
                                   f"{b.get('upper')}"))
    else:
        rows.append(("bounds", f"{g.lower.tolist()} .. {g.upper.tolist()}"))
    for key in ("columns", "bounds_source", "randomness"):
        if meta.get(key):
            rows.append((key.replace("_", " "), str(meta[key])))
    if getattr(model, "subcells", 1) > 1:
        rows.append(("sub-cells", f"{model.subcells} per cell and dimension (width {length(g.width)})"))
    if model.histogram is None:
        rows.append(("histogram", "not saved (cannot re-threshold or plot it)"))
    for k, v in rows:
        print(f"{k:>13} : {v}")
    return EXIT_OK


# --------------------------------------------------------------------------- #
# the parser


def _add_input_options(p):
    g = p.add_argument_group("reading points")
    g.add_argument("--columns", nargs="+", metavar="COL",
                   help="columns to use, by name or 0-based index (default: every column except "
                        "'label', all numeric; with --geo, columns named lon/lat if present; "
                        "with --backend dask, names only)")
    g.add_argument("--delimiter", default=None, help="CSV separator (default ',', tab for .tsv)")
    g.add_argument("--no-header", action="store_true", help="the CSV has no header row")


def _add_fit_options(p, *, sweep: bool):
    g = p.add_argument_group("DBSCAN")
    g.add_argument("--eps", "--alpha", required=True, metavar="ALPHA",
                   help="radius alpha; with --geo a length such as 50m or 0.05km (plain = km)")
    g.add_argument("--min-samples", "--minpts", type=int, required=True, nargs="+" if sweep else None,
                   metavar="MINPTS", help="MinPts (a point counts itself)" + (
                       "; several values" if sweep else ""))
    g.add_argument("--eta", type=float, default=4.0,
                   help="grid parameter in (0, 4]; cell width eta*eps/(4 sqrt d) (default 4)")
    g.add_argument("--subcells", type=_subcells_arg, default="auto",
                   help="decide core cells and merge on sub-cells of width w/SUBCELLS "
                        "('auto' = 2 for d <= 3, else 1; 1 = the paper's procedure); no privacy cost")
    g.add_argument("--margin", choices=["chernoff", "paper"], default="chernoff",
                   help="bound for Gamma: Chernoff with the exact MGF (default) or the paper's")
    g.add_argument("--border", default="auto",
                   help="predict: points within this distance of a span join it ('auto' = half a "
                        "sub-cell diameter; 0 = cell membership only; with --geo a length like 10m)")
    g.add_argument("--theoretical-threshold", action="store_true",
                   help="core iff UB~ >= MinPts (default: the paper's practical MinPts + tau)")
    b = p.add_argument_group("domain (public)")
    b.add_argument("--bounds", nargs="+", metavar="B",
                   help="public bounds: lower_1 .. lower_d upper_1 .. upper_d, or one lower and one "
                        "upper for all columns; with --geo: lon_min lat_min lon_max lat_max")
    b.add_argument("--bounds-from-data", action="store_true",
                   help="take the bounds from the data: leaks privacy, voids the guarantee")
    b.add_argument("--geo", action="store_true",
                   help="columns are longitude, latitude in degrees; project to km")
    b.add_argument("--ref-lat", type=float, default=None,
                   help="public latitude where the projection is exact (default: centre of --bounds)")
    q = p.add_argument_group("privacy")
    q.add_argument("--epsilon", type=float, default=1.0, help="privacy budget (default 1)")
    q.add_argument("--delta", type=float, default=0.0, help="delta, for the stability histogram (default 0)")
    q.add_argument("--beta", type=float, default=0.1,
                   help="failure probability of the guarantee (default 0.1; the paper's code used 0.5)")
    q.add_argument("--histogram", choices=["auto", "dense", "sparse", "stability"], default="auto")
    q.add_argument("--noise", choices=["discrete", "laplace"], default="discrete")
    q.add_argument("--theta", type=float, default=None, help="threshold of the sparse histogram")
    q.add_argument("--seed", type=int, default=None,
                   help="reproducible but INSECURE noise (research only; default: OS randomness)")
    c = p.add_argument_group("computing")
    c.add_argument("--backend", choices=["numpy", "dask"], default="numpy")
    c.add_argument("--scheduler", metavar="ADDRESS", help="dask scheduler address (--backend dask)")
    o = p.add_argument_group("output")
    o.add_argument("--out-dir", default=".", help="folder for the outputs (default: current folder)")
    o.add_argument("--name", help="base name of the outputs (default: input file name)")
    if not sweep:
        o.add_argument("--json", help="path of the span model (default OUT_DIR/NAME.spans.json)")
        o.add_argument("--geojson", help="path of the GeoJSON (default OUT_DIR/NAME.spans.geojson)")
        o.add_argument("--png", help="path of the picture (default OUT_DIR/NAME.spans.png)")
    o.add_argument("--no-geojson", action="store_true", help="do not write GeoJSON")
    o.add_argument("--no-png", action="store_true", help="do not draw the picture")


def build_parser() -> argparse.ArgumentParser:
    fmt = argparse.RawDescriptionHelpFormatter
    parser = _Parser(prog="dpdbscan", formatter_class=fmt,
                     description="Differentially private DBSCAN that publishes cluster spans "
                                 "(Qiu and Yi, 'Approximate DBSCAN under Differential Privacy').",
                     epilog=EXAMPLES["fit"] + "\nsee 'dpdbscan COMMAND --help' for each command")
    parser.add_argument("--version", action="version", version=f"dpdbscan {__version__}")
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress bars (they only show on a terminal anyway)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def add(name, help_, func):
        p = sub.add_parser(name, help=help_, description=help_, epilog=EXAMPLES[name],
                           formatter_class=fmt)
        p.set_defaults(func=func)
        return p

    p = add("fit", "release DP spans of a data file; write JSON, GeoJSON and PNG", cmd_fit)
    p.add_argument("input", help="CSV (optionally gzipped), Parquet or .npy; "
                                 "with --backend dask a path or glob")
    _add_input_options(p)
    _add_fit_options(p, sweep=False)

    p = add("predict", "label points with a saved model (-1 = noise); CSV out", cmd_predict)
    p.add_argument("model", help="span model JSON written by 'dpdbscan fit'")
    p.add_argument("points", help="points to label (lon/lat for a --geo model)")
    p.add_argument("-o", "--output", default="-", help="labels CSV (default: standard output)")
    p.add_argument("--with-points", action="store_true", help="write the point columns before the label")
    _add_input_options(p)

    p = add("sweep", "spans for several MinPts from one release, at no extra budget", cmd_sweep)
    p.add_argument("input", nargs="?", help="data file to fit once (or use --model)")
    p.add_argument("--model", help="re-threshold this saved model instead of fitting")
    _add_input_options(p)
    _add_fit_options(p, sweep=True)
    # With --model the DBSCAN radius comes from the model.
    for a in p._actions:
        if a.dest == "eps":
            a.required = False

    p = add("plot", "draw the noisy histogram, neighbour sums, spans or labels", cmd_plot)
    p.add_argument("model", help="span model JSON")
    p.add_argument("--kind", choices=["histogram", "sums", "spans", "labels"], default="spans")
    p.add_argument("--points", help="points to label (--kind labels) or to draw under the spans")
    p.add_argument("-o", "--output", help="PNG path (default: MODEL.KIND.png)")
    p.add_argument("--dpi", type=int, default=120)
    p.add_argument("--max-points", type=int, default=200_000, help="subsample big point files for drawing")
    _add_input_options(p)

    p = add("info", "print a model's parameters and guarantees", cmd_info)
    p.add_argument("model", help="span model JSON")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    return parser


def main(argv=None) -> int:
    """Entry point of the ``dpdbscan`` command; returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors
        return int(exc.code or 0) if not isinstance(exc.code, str) else EXIT_BAD_INPUT
    try:
        with _Warnings(sys.stderr) as sink:
            return args.func(args, sink)
    except BrokenPipeError:
        # A reader such as `head` closed the pipe: not an error of ours.
        sys.stderr.close()
        return EXIT_OK
    except (ValueError, TypeError, OSError, ImportError) as exc:
        print(f"dpdbscan: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("dpdbscan: interrupted", file=sys.stderr)
        return 130


__all__ = ["main", "build_parser", "load_model", "model_info", "summary"]
