"""``dpdbscan fit`` and ``dpdbscan sweep``: spend the budget once, write the release."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np

from .. import __version__
from .. import geo as _geo
from ..exceptions import InsecureRandomnessWarning, PrivacyLeakWarning
from ..io import read_model as load_model
from .._optional import require
from ..backends import Backend, NumpyBackend
from ..mechanism import release
from ..params import bounds_from_data, check_param, validate
from ..progress import progress
from .maps import picture_options
from .common import (
    EXIT_OK, _alpha_text, _column_tokens, _draw_spans_png, _floats, _progress_flag, _read,
    _say_read, _split_bounds, _stem,
)


def check_fit_params(args) -> dict:
    """Validate every fit parameter with the shared table before reading a
    possibly huge file; returns them normalised (``min_samples`` is the first
    of a sweep's list)."""
    values = dict(
        eps=_geo.parse_length(args.eps, geo=args.geo), min_samples=_min_samples_list(args)[0],
        epsilon=args.epsilon, delta=args.delta, eta=args.eta, beta=args.beta,
        histogram=args.histogram, noise=args.noise, theta=args.theta, subcells=args.subcells,
        margin=args.margin, border=_border_arg(args.border, geo=bool(args.geo)),
        random_state=args.seed, backend=args.backend,
        raise_min_samples=not args.theoretical_threshold,
    )
    p = validate(values, cli=True)
    for m in _min_samples_list(args):
        check_param("min_samples", m, cli=True)
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
    return p


def _min_samples_list(args) -> list[int]:
    m = args.min_samples
    return list(m) if isinstance(m, (list, tuple)) else [m]


def _dask_backend(args, columns):
    dask_backend = require("dpdbscan.backends.dask_backend", "--backend dask", package="dask")
    # Dask reads the files itself, so --columns are passed on as names.
    return dask_backend.DaskBackend(scheduler=args.scheduler, columns=columns)


def fit_from_args(args, sink, p: dict, min_samples: int):
    """Run one release with the validated parameters ``p``; returns the SpanModel."""
    bounds_in = None if args.bounds is None else _floats(args.bounds, "--bounds")
    columns = _column_tokens(args.columns)
    meta = {"tool": f"dpdbscan {__version__}", "eps_text": str(args.eps),
            "randomness": "secure" if args.seed is None else "seeded (insecure; seed not stored)"}
    dask = args.backend == "dask"
    backend: Backend
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

    if args.seed is not None:
        print("dpdbscan: warning: --seed makes the noise reproducible and NOT cryptographically "
              "secure: for research only, do not publish this release", file=sys.stderr)
    with progress("fitting", enabled=_progress_flag(args), unit="it"), warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRandomnessWarning)  # said above
        model = release(X, lower, upper, {**p, "min_samples": min_samples}, backend=backend)
    sink.flush()
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


def _write_outputs(model, paths, picture: dict | None = None) -> list[str]:
    written = []
    model.save(paths["json"])
    written.append(str(paths["json"]))
    if model.grid.d == 2:
        proj = _geo.projection_of(model)
        if paths["geojson"] is not None:
            model.save_geojson(paths["geojson"], transform=None if proj is None else proj.inverse)
            written.append(str(paths["geojson"]))
        if paths["png"] is not None:
            _draw_spans_png(model, paths["png"], **(picture or {}))
            written.append(str(paths["png"]))
    elif paths["geojson"] is not None or paths["png"] is not None:
        print(f"note: GeoJSON and PNG need 2-D data; skipped for {model.grid.d}-D", file=sys.stderr)
    return written


def _subcells_arg(text: str):
    """--subcells: 'auto' or a number; anything else is left for the parameter
    table to refuse with its one message."""
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text


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
    picture = picture_options(args)
    args.png_requested, args.geojson_requested = bool(args.png or picture), bool(args.geojson)
    p = check_fit_params(args)
    paths = _out_paths(args, args.name or _stem(args.input))
    model = fit_from_args(args, sink, p, p["min_samples"])
    written = _write_outputs(model, paths, picture)
    print(summary(model))
    print("wrote " + ", ".join(written))
    return EXIT_OK


def cmd_sweep(args, sink) -> int:
    if (args.input is None) == (args.model is None):
        raise ValueError("sweep needs either an input data file or --model MODEL.json (not both)")
    values = sorted({check_param("min_samples", m, cli=True) for m in args.min_samples})
    picture = picture_options(args)
    if args.model is not None:
        base = load_model(args.model)
        name = args.name or Path(args.model).name.removesuffix(".json").removesuffix(".spans")
        if base.histogram is None:
            raise ValueError(f"{args.model}: saved without its noisy histogram, cannot re-threshold")
    else:
        if args.eps is None:
            raise ValueError("--eps is required when sweep fits a data file")
        args.png_requested = args.geojson_requested = False
        p = check_fit_params(args)
        name = args.name or _stem(args.input)
        _out_paths(args, name)  # fail on unwritable outputs before spending budget
        base = fit_from_args(args, sink, p, values[0])
    rows = []
    for m in values:
        model = base if m == base.min_samples else base.with_min_samples(m)
        paths = _out_paths(args, f"{name}.m{m}")
        written = _write_outputs(model, paths, picture)
        rows.append((m, model.threshold, model.n_spans, model.n_core_cells, written[0]))
    print(f"spans for {len(values)} MinPts from one release (epsilon={base.epsilon:g}, "
          f"delta={base.delta:g}, alpha={_alpha_text(base)}); re-thresholding costs no budget")
    print(f"{'min_samples':>11}  {'threshold':>10}  {'spans':>6}  {'core_cells':>10}  model")
    for m, thr, n, c, path in rows:
        print(f"{m:>11}  {thr:>10.1f}  {n:>6}  {c:>10}  {path}")
    return EXIT_OK


