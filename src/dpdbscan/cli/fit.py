"""``dpdbscan fit`` and ``dpdbscan sweep``: spend the budget once, write the release."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__
from .. import geo as _geo
from .._optional import require
from ..backends import Backend, NumpyBackend
from ..exceptions import InsecureRandomnessWarning, PrivacyLeakWarning
from ..grid import MAX_KAPPA, count_neighbours
from ..mechanism import release
from ..params import bounds_from_data, check_param, validate
from ..progress import progress
from .common import (
    EXIT_OK,
    EXIT_PARTIAL,
    Notes,
    _column_tokens,
    _draw_spans_png,
    _floats,
    _one_line,
    _progress_flag,
    _read,
    _say_read,
    _split_bounds,
    _stem,
    atomic_write,
    check_writable,
)
from .maps import picture_options


def check_fit_params(args, eps=None) -> dict:
    """Validate every fit parameter with the shared table before reading a
    possibly huge file; returns them normalised (``min_samples`` is the first
    of a sweep's list, ``eps`` overrides ``args.eps``)."""
    eps = args.eps if eps is None else eps
    if not (isinstance(eps, str) and eps.strip().lower() == "auto"):
        eps = _geo.parse_length(eps, geo=args.geo)
    values = dict(
        eps=eps if not isinstance(eps, str) else "auto", min_samples=_min_samples_list(args)[0],
        epsilon=args.epsilon, delta=args.delta, eta=args.eta, beta=args.beta,
        histogram=args.histogram, noise=args.noise, theta=args.theta, subcells=args.subcells,
        margin=args.margin, core=args.core, border=_border_arg(args.border, geo=bool(args.geo)),
        random_state=args.seed, backend=args.backend,
        raise_min_samples=not args.theoretical_threshold,
    )
    if getattr(args, "max_cells", None) is not None:
        values["max_cells"] = args.max_cells
    if getattr(args, "n_expected", None) is not None:
        values["n_expected"] = args.n_expected
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


def fit_from_args(args, sink, p: dict, min_samples: int, notes: Notes):
    """Run one release with the validated parameters ``p``; returns the SpanModel."""
    bounds_in = None if args.bounds is None else _floats(args.bounds, "--bounds")
    columns = _column_tokens(args.columns)
    meta: dict[str, Any] = {"tool": f"dpdbscan {__version__}", "eps_text": str(args.eps),
            "randomness": "secure" if args.seed is None else "seeded (insecure; seed not stored)"}
    dask = args.backend == "dask"
    backend: Backend
    if dask:
        if args.geo:
            raise ValueError("--geo is not supported with --backend dask: the backend counts the "
                             "file's own coordinates, so project lon/lat to km first")
        if args.bounds_from_data:
            raise ValueError("--backend dask needs public --bounds (it never scans the data for them)")
        d = len(columns) if columns else (
            len(bounds_in) // 2 if bounds_in is not None and len(bounds_in) > 2 else None)
        if d is None:
            raise ValueError("with --backend dask give --columns, or --bounds with one lower and one "
                             "upper value per column")
        X, names = args.input, columns
        backend = _dask_backend(args, columns)
    else:
        X, names = _read(args.input, columns, args, geo=args.geo, notes=notes)
        d = X.shape[1]
        backend = NumpyBackend()
    if count_neighbours(d, p["eta"]) > MAX_KAPPA:  # public: d and eta
        raise ValueError(
            f"in d={d} at eta={p['eta']:g} an eps-neighbourhood has {count_neighbours(d, p['eta']):,} "
            f"cells, more than any core test can evaluate ({MAX_KAPPA:,}): the release could have no "
            "span, so no budget is spent on it. Use fewer columns (--columns)")
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
        _say_read(args.input, X, names, notes)
        _note_clipping(X, lower, upper, names, notes, bounds_in)

    if args.seed is not None:
        print("dpdbscan: warning: --seed makes the noise reproducible and NOT cryptographically "
              "secure: for research only, do not publish this release", file=sys.stderr)
    with progress("fitting", enabled=_progress_flag(args), unit="it"), warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRandomnessWarning)  # said above
        model = release(X, lower, upper, {**p, "min_samples": min_samples}, backend=backend)
    sink.flush()
    model.metadata.update(meta)
    return model


def _note_clipping(X, lower, upper, names, notes: Notes, bounds_in=None) -> None:
    """Tell the data owner (private notes) how many rows the per-record rule
    drops or clips, per column and bound: a wrong bound or column order must
    be hard to miss. What is released does not depend on any of this."""
    if X.shape[0] == 0:
        return
    finite = np.isfinite(X).all(axis=1)
    n_bad = int(X.shape[0] - finite.sum())
    if n_bad:
        notes(f"{n_bad:,} row(s) with missing or non-finite values are dropped")
    F = X[finite] if n_bad else X
    n_ok = max(F.shape[0], 1)
    if F.shape[0] and np.all(F.min(axis=0) >= lower) and np.all(F.max(axis=0) <= upper):
        return
    outside = int((~np.all((F >= lower) & (F <= upper), axis=1)).sum())
    notes(f"{outside:,} point(s) ({outside / n_ok:.1%}) lie outside the bounds and are clipped "
          "onto the box")
    for j, name in enumerate(names or [str(j) for j in range(X.shape[1])]):
        below = int((F[:, j] < lower[j]).sum())
        above = int((F[:, j] > upper[j]).sum())
        for count, side, value in ((below, "below its lower", lower[j]), (above, "above its upper",
                                                                          upper[j])):
            if count / n_ok >= 0.01:
                notes(f"column {name!r}: {count / n_ok:.1%} of the rows lie {side} bound "
                      f"{value:g}")
    if outside / n_ok > 0.5:
        hint = "check --bounds (lower_1 .. lower_d upper_1 .. upper_d) and --columns"
        if bounds_in is not None and len(bounds_in) == 4 and X.shape[1] == 2:
            v = bounds_in
            alt_lo, alt_hi = np.array([v[0], v[2]]), np.array([v[1], v[3]])
            if np.all(alt_lo < alt_hi):
                inside_alt = np.all((F >= alt_lo) & (F <= alt_hi), axis=1).mean()
                if inside_alt > 0.9:
                    hint = ("the bounds look like xmin xmax ymin ymax: --bounds wants "
                            f"xmin ymin xmax ymax, i.e. {v[0]:g} {v[2]:g} {v[1]:g} {v[3]:g}")
        notes(f"most points are outside the bounds: {hint}")


def _out_paths(args, name: str) -> dict:
    """Output paths by kind (None when not wanted), checked writable now,
    before the input is read or any budget spent."""
    out_dir = Path(args.out_dir)
    paths = {}
    for kind, skip in (("json", False), ("geojson", args.no_geojson), ("png", args.no_png)):
        explicit = getattr(args, kind, None)
        paths[kind] = None if skip else Path(explicit) if explicit else out_dir / f"{name}.spans.{kind}"
    check_writable(paths.values(), args.input)
    return paths


def _write_outputs(model, paths, notes: Notes,
                   picture: dict | None = None) -> tuple[list[str], list[str]]:
    """Write the release (JSON) first, then GeoJSON and PNG, each atomically.

    ``picture`` holds the PNG's ``size`` and ``extent`` (cli/maps.py).
    Returns (written, failed). A failed GeoJSON or picture does not lose the
    release: the JSON is kept and the failure is reported.
    """
    written: list[str] = []
    failed: list[str] = []
    atomic_write(paths["json"], model.save)
    written.append(str(paths["json"]))
    if model.grid.d != 2:
        if paths["geojson"] is not None or paths["png"] is not None:
            print(f"note: GeoJSON and PNG need 2-D data; skipped for {model.grid.d}-D",
                  file=sys.stderr)
        return written, failed
    proj = _geo.projection_of(model)
    extras = (("geojson", lambda t: model.save_geojson(t, transform=None if proj is None
                                                       else proj.inverse)),
              ("png", lambda t: _draw_spans_png(model, t, **(picture or {}))))
    for kind, write in extras:
        if paths[kind] is None:
            continue
        try:
            atomic_write(paths[kind], write)
            written.append(str(paths[kind]))
        except Exception as exc:  # the release is safe on disk: report, do not lose it
            failed.append(f"{paths[kind]} ({_one_line(exc)})")
    return written, failed


def _number_or_text(text: str):
    """An option that takes a name or a number: the number when it parses, the
    text otherwise (the parameter table refuses what it does not accept)."""
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text


_subcells_arg = _number_or_text


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


def _report(written, failed) -> int:
    print("wrote " + ", ".join(written))
    for f in failed:
        print(f"dpdbscan: error: could not write {f}; the release itself was written to "
              f"{written[0]}", file=sys.stderr)
    return EXIT_PARTIAL if failed else EXIT_OK


def cmd_fit(args, sink) -> int:
    picture = picture_options(args)
    args.png_requested, args.geojson_requested = bool(args.png or picture), bool(args.geojson)
    p = check_fit_params(args)
    notes = Notes(args.quiet)
    paths = _out_paths(args, args.name or _stem(args.input))
    model = fit_from_args(args, sink, p, p["min_samples"], notes)
    written, failed = _write_outputs(model, paths, notes, picture)
    print(summary(model))
    return _report(written, failed)
