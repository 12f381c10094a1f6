"""``dpdbscan predict``, ``plot`` and ``info``: use a saved release (no budget)."""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np

from ..exceptions import PrivateNoteWarning
from ..files import write_labels
from ..geometry import projection
from ..model import SpanModel, describe, eps_candidates, guarantee
from ..model.describe import noise_words, protection, swamped_words
from ..model.guarantee import levels_words, unit_noun
from ..model.levels import is_levels, level_lines
from ..model.words import words_of
from ..params.paramwords import grid_words
from .common import EXIT_OK, Notes, WarningSink, points_for, progress_flag, read_options_from_args
from .common import read_model as load_model
from .maps import other_views, picture_options


def _labelled(lines: list[str]) -> list[tuple[str, str]]:
    """The summary's lines as ``info``'s rows: a line ``"  name : text"``
    (the summary's own rows: levels, places, choice, unsure) is a row of
    its own; the indented lines under it (spans, reasons) continue it."""
    rows: list[tuple[str, str]] = []
    for line in lines:
        label, sep, text = line.partition(":")
        if sep and line.startswith("  ") and not line.startswith("   ") and label.strip().isidentifier():
            rows.append((label.strip(), text.strip()))
        else:
            rows.append(("", line.strip()))
    return rows


def cmd_predict(args: argparse.Namespace, sink: WarningSink) -> int:
    model = load_model(args.model)
    read, progress = read_options_from_args(args), progress_flag(getattr(args, "no_progress", False))
    Xm, X, names = points_for(model, args.points, read, progress, Notes(getattr(args, "quiet", False)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivateNoteWarning)  # said below, in the command's words
        labels = model.predict(Xm)
    write_labels(args.output, labels, X if args.with_points else None, names)
    # the labels file cannot carry a statement without a column a reader takes as data: said here
    print(
        "note: the labels are of these points, not a DP release: each says which released span one "
        "point lies in, so labels of the data the model was fitted on are not protected (docs/privacy.md "
        "section 2)",
        file=sys.stderr,
    )
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


def not_drawable(model: SpanModel, kind: str) -> str:
    """Why a model of another dimension than 2 has no picture of ``kind``
    (the grid's cells, sums, spans and labels are drawn on the plane), and
    what it does have (:func:`~.maps.other_views`)."""
    return (
        f"--kind {kind} draws a 2-D model's cells on the plane, and this model is {model.grid.d}-D: "
        f"{other_views(model)}"
    )


def cmd_plot(args: argparse.Namespace, sink: WarningSink) -> int:
    picture = picture_options(args)
    model = load_model(args.model)
    if model.grid.d != 2 and args.kind != "tree":
        # said first: --points would not make a 3-D picture drawable
        raise ValueError(not_drawable(model, args.kind))
    if args.kind == "labels" and args.points is None:
        raise ValueError("--kind labels needs --points FILE (the points to label)")
    if args.kind in ("histogram", "sums") and model.histogram is None:
        raise ValueError(f"{args.model}: saved without its noisy histogram; cannot plot {args.kind}")
    private = args.points is not None and args.kind in ("spans", "labels")
    out = _plot_path(args.model, args.kind, args.output, private)
    out.parent.mkdir(parents=True, exist_ok=True)
    points = None
    if private:
        read, progress = read_options_from_args(args), progress_flag(getattr(args, "no_progress", False))
        points = points_for(model, args.points, read, progress, Notes(getattr(args, "quiet", False)))[1]
        print(
            "note: this picture shows the points themselves: it is not a DP release "
            "(the picture says so in its title and a watermark)",
            file=sys.stderr,
        )
    # lazy: the drawing modules load only in a command that draws
    from ..render import plotting

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


def cmd_info(args: argparse.Namespace, sink: WarningSink) -> int:
    model = load_model(args.model)
    if args.json:
        print(json.dumps(describe(model), indent=2, allow_nan=False))
        return EXIT_OK
    g, proj = model.grid, projection.projection_of(model)
    test = words_of(model.spec.core)
    # The histogram's grid; spans may sit on a finer sub-cell grid.
    hg = model.release.grid
    length = projection.format_km if proj is not None else (lambda v: f"{v:g}")
    meta = model.metadata
    g_all = guarantee(model)
    spec, s = model.spec, model.spans
    core = "sub-cell" if spec.subcells > 1 else "cell"
    candidates = eps_candidates(model)
    # one sentence per row, the paper's symbols in brackets
    rows = [
        (
            "model",
            f"{args.model} (dpdbscan.spans): {model.n_spans} span(s) from "
            f"{model.n_core_cells} core {core}(s)",
        ),
        ("protects", protection(model)),
        ("noise", noise_words(model)),
        ("eps", f"{length(g.eps)}: the DBSCAN radius, how near points must be to count (eps, alpha)"),
        (
            "min_samples",
            f"{spec.min_samples}: the {unit_noun(model)} a place needs within eps to be dense, before "
            "the noise margin (min_samples, MinPts)"
            + (f"; {swamped}" if (swamped := swamped_words(model)) else "")
            + ("; the lowest selected: each span has its own (levels)" if is_levels(model) else ""),
        ),
        ("core test", test.rule_text(s, spec, unit_noun(model))),
        (
            "approximation",
            f"the guarantee compares spans with clusters at {s.approx_ratio:g} times eps, "
            f"{length(s.approx_ratio * g.eps)} (approximation ratio {s.approx_ratio:g}, from the cell "
            f"size eta={hg.eta:g} and "
            f"{spec.subcells} sub-cell(s) per cell side)",
        ),
        ("additive error", test.tau_text(s)),
        (
            "failure",
            f"the guarantee fails with probability at most {spec.beta * candidates:g} (beta"
            + (
                f"={spec.beta:g})"
                if candidates == 1
                else f"={spec.beta:g} for each of {candidates} eps candidates)"
            ),
        ),
        (
            "grid",
            grid_words(hg.n_cells, g.d, spec.subcells, hg.kappa, s.kappa_q, length(hg.width))
            + f"; {' x '.join(map(str, hg.shape))} cells",
        ),
        ("guarantee", test.guarantee_text(g_all, s, length) + levels_words(g_all.get("levels"))),
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
    if model.spec.subcells > 1:
        rows.append(("sub-cells", f"{model.spec.subcells} per cell and dimension, {length(g.width)} wide"))
    r = model.release
    if model.auto is not None:
        a = model.auto
        rows.append(
            (
                "auto",
                f"{' and '.join(a.get('chosen', [])) or 'nothing'} chosen from the "
                f"release without labels: eps = {length(g.eps)}, MinPts = "
                f"{model.spec.min_samples} ({a.get('criterion')}; score "
                f"{a.get('score', 0):.3g}, {a.get('clusters')} cluster(s)); base "
                f"release at eps = {length(a.get('base_eps', r.eps))}, "
                f"{len(a.get('eps_candidates', []))} eps x "
                f"{len(a.get('min_samples_candidates', []))} MinPts candidates",
            )
        )
        rows += _labelled(level_lines(model, g_all.get("levels")))
    elif r.eps != g.eps or r.min_samples != model.spec.min_samples:
        rows.append(
            (
                "release",
                f"made at eps = {length(r.eps)}, MinPts = "
                f"{r.min_samples}; these spans re-parameterise it (no "
                "extra budget)",
            )
        )
    if model.histogram is None:
        rows.append(("histogram", "not saved (cannot re-threshold or plot it)"))
    for k, v in rows:
        print(f"{k:>14} : {v}")
    return EXIT_OK
