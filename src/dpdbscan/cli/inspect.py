"""``dpdbscan predict``, ``plot`` and ``info``: use a saved release (no budget)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from ..files import write_labels
from ..geometry import projection as _geo
from ..model.spanmodel import density_rule
from ..render import plotting
from .common import EXIT_OK, Notes, _points_for, _Warnings
from .common import read_model as load_model
from .maps import picture_options


def cmd_predict(args: argparse.Namespace, sink: _Warnings) -> int:
    model = load_model(args.model)
    Xm, X, names = _points_for(model, args.points, args)
    labels = model.predict(Xm)
    write_labels(args.output, labels, X if args.with_points else None, names)
    n_noise = int((labels < 0).sum())
    notes = Notes(args.quiet)
    notes(
        f"labelled {labels.size:,} point(s) of {args.points}: {labels.size - n_noise:,} in spans, "
        f"{n_noise:,} noise" + ("" if args.output == "-" else f"; wrote {args.output}")
    )
    g = model.grid
    finite = np.isfinite(Xm).all(axis=1)
    inside = finite & np.all((Xm >= g.lower) & (Xm <= g.upper), axis=1)
    if labels.size and not inside.any():
        # every point is noise because none lies in the model's box: a wrong
        # column order or file, not a result (a private note on stderr)
        notes.always(
            "no point lies inside the model's bounds, so every label is noise (-1): check the "
            "columns' order (--columns; longitude first for a --geo model) and the file"
        )
    return EXIT_OK


def cmd_plot(args: argparse.Namespace, sink: _Warnings) -> int:
    picture = picture_options(args)
    model = load_model(args.model)
    if args.kind == "labels" and args.points is None:
        raise ValueError("--kind labels needs --points FILE (the points to label)")
    if model.grid.d != 2:
        raise ValueError(f"plots need a 2-D model, this one is {model.grid.d}-D")
    if args.kind in ("histogram", "sums") and model.histogram is None:
        raise ValueError(f"{args.model}: saved without its noisy histogram; cannot plot {args.kind}")
    private = args.points is not None and args.kind in ("spans", "labels")
    out = _plot_path(args.model, args.kind, args.output, private)
    out.parent.mkdir(parents=True, exist_ok=True)
    points = None
    if private:
        points = _points_for(model, args.points, args)[1]
        print(
            "note: this picture shows the points themselves: it is not a DP release "
            "(the picture says so in its title and a watermark)",
            file=sys.stderr,
        )
    ax = plotting.plot_model(model, args.kind, points, max_points=args.max_points, dpi=args.dpi, **picture)
    plotting.save(ax, out, dpi=args.dpi)
    print(f"wrote {out}")
    return EXIT_OK


def _plot_path(model_path: str, kind: str, output: str | None, private: bool) -> Path:
    """Where ``plot`` writes: ``output``, or MODEL.KIND.png beside the model;
    a picture of the private points is MODEL.PRIVATE-KIND.png by default and
    may not take the name ``fit`` gives the release's picture (NAME.spans.png)."""
    if output:
        out = Path(output)
        if private and out.name.lower().endswith(".spans.png"):
            raise ValueError(
                f"{out.name} is the name of a release picture; this one shows the points and is "
                "not a DP release: give another name (the default is MODEL.PRIVATE-KIND.png)"
            )
        return out
    stem = Path(model_path).with_suffix("")
    return stem.with_name(f"{stem.name}.{'PRIVATE-' if private else ''}{kind}.png")


def _core_rule(model) -> str:
    if model.core == "density":
        return (
            f"density: estimated eps-neighbourhood count E~ >= MinPts + m(q), up to "
            f"{model.threshold:.1f} (margin: {density_rule(model.margin)}), "
            "in an occupied cell; spans join core centres within eps"
        )
    return f"bound: UB~ >= {model.threshold:.1f}" + (
        " (MinPts + tau)" if model.raise_min_samples else " (MinPts)"
    )


def _guarantee_text(model, length) -> str:
    gu = model.guarantee()
    within = gu["within_clusters_at"]
    if gu["probability"] is None:
        return gu["statement"]
    if model.core == "density":
        if within is None:
            return gu["statement"]
        return (
            f"with probability >= {gu['probability']:g}: every span lies in the span of one "
            f"({length(within['alpha'])}, {within['min_samples']})-cluster (one-sided: no "
            "span reaches beyond the clusters; no covering statement)"
        )
    covers = gu["covers_clusters_at"]
    text = (
        f"with probability >= {gu['probability']:g}: every ({length(covers['alpha'])}, "
        f"{covers['min_samples']:.1f})-cluster lies in one span"
    )
    if within is None:
        return (
            text + f"; no guarantee that spans stay within clusters (MinPts - tau = "
            f"{covers['min_samples'] - model.tau:.1f} < 1: spans may lie in empty space)"
        )
    return (
        text + f", and every span lies in the span of one ({length(within['alpha'])}, "
        f"{within['min_samples']:.1f})-cluster"
    )


def cmd_info(args: argparse.Namespace, sink: _Warnings) -> int:
    model = load_model(args.model)
    if args.json:
        print(json.dumps(model.describe(), indent=2, allow_nan=False))
        return EXIT_OK
    g, proj = model.grid, _geo.projection_of(model)
    # The histogram's grid; spans may sit on a finer sub-cell grid (newer models).
    hg = getattr(model, "histogram_grid", g)
    length = _geo.format_km if proj is not None else (lambda v: f"{v:g}")
    meta = model.metadata
    rows = [
        (
            "model",
            f"{args.model} (dpdbscan.spans, {model.n_spans} span(s), {model.n_core_cells} core cell(s))",
        ),
        ("epsilon", f"{model.epsilon:g}"),
        ("delta", f"{model.delta:g}"),
        (
            "noise",
            f"{model.noise} Laplace, {model.histogram_kind} histogram"
            + ("" if model.histogram_kind == "dense" else f", theta = {model.theta:g}"),
        ),
        ("alpha", length(g.alpha)),
        ("MinPts", f"{model.min_samples}"),
        ("core test", _core_rule(model)),
        ("rho", f"{model.rho:g} (eta = {hg.eta:g})"),
        (
            "tau",
            f"{model.tau:.2f} (= Gamma_low + Gamma_up)"
            if model.core == "bound"
            else "none (the density test's guarantee is one-sided)",
        ),
        (
            "beta",
            f"{model.beta:g}"
            + (
                ""
                if model.eps_candidates == 1
                else f" per eps candidate ({model.eps_candidates} candidates: "
                f"{model.beta * model.eps_candidates:g} in all)"
            ),
        ),
        ("kappa", f"{model.kappa}"),
        ("|X|", f"{model.n_cells:,} cells ({' x '.join(map(str, hg.shape))}), width {length(hg.width)}"),
        ("guarantee", _guarantee_text(model, length)),
    ]
    if proj is not None:
        b = meta.get("bounds_degrees", {})
        rows.append(
            (
                "projection",
                f"equirectangular, origin ({proj.lon0:.5f}, {proj.lat0:.5f}), "
                f"ref_lat {proj.ref_lat:.5f}; bounds (deg) {b.get('lower')} .. "
                f"{b.get('upper')}",
            )
        )
    else:
        rows.append(("bounds", f"{g.lower.tolist()} .. {g.upper.tolist()}"))
    for key in ("columns", "bounds_source", "randomness"):
        if meta.get(key):
            rows.append((key.replace("_", " "), str(meta[key])))
    if getattr(model, "subcells", 1) > 1:
        rows.append(("sub-cells", f"{model.subcells} per cell and dimension (width {length(g.width)})"))
    r = model.release or {}
    if model.auto is not None:
        a = model.auto
        rows.append(
            (
                "auto",
                f"{' and '.join(a.get('chosen', [])) or 'nothing'} chosen from the "
                f"release without labels: eps = {length(g.alpha)}, MinPts = "
                f"{model.min_samples} ({a.get('criterion')}; score "
                f"{a.get('score', 0):.3g}, {a.get('clusters')} cluster(s)); base "
                f"release at eps = {length(a.get('base_eps', r.get('eps', 0)))}, "
                f"{len(a.get('eps_candidates', []))} eps x "
                f"{len(a.get('min_samples_candidates', []))} MinPts candidates",
            )
        )
    elif r and (r.get("eps") != g.alpha or r.get("min_samples") != model.min_samples):
        rows.append(
            (
                "release",
                f"made at eps = {length(r.get('eps', g.alpha))}, MinPts = "
                f"{r.get('min_samples')}; these spans re-parameterise it (no "
                "extra budget)",
            )
        )
    if model.histogram is None:
        rows.append(("histogram", "not saved (cannot re-threshold or plot it)"))
    for k, v in rows:
        print(f"{k:>13} : {v}")
    return EXIT_OK
