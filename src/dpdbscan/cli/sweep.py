"""``dpdbscan sweep``: spans for every (eps, MinPts) of two lists from one
release (a data file fitted once, at the smallest eps, or a saved model).

Re-parameterising reads the released histogram only, so every pair after the
first costs no privacy budget.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from contextlib import nullcontext
from pathlib import Path

from ..geometry import projection
from ..model import finest_eps, with_params
from ..model.describe import SEEDED, protection, release_count, second_lines, seeded
from ..params.parameters import check_param
from ..prepare import read_length
from .common import EXIT_OK, EXIT_PARTIAL, Notes, WarningSink, stem
from .common import read_model as load_model
from .fit import check_fit_params, fit_model
from .fitoptions import FitOptions
from .fitseries import NO_SWEEP
from .ledger import charging
from .maps import picture_options
from .outputs import Outputs, out_paths, write_outputs

# options that shape a release: meaningless when sweep re-parameterises a saved one
_FIT_ONLY = (
    "epsilon",
    "delta",
    "beta",
    "eta",
    "histogram",
    "noise",
    "theta",
    "seed",
    "subcells",
    "margin",
    "core",
    "border",
    "bounds",
    "bounds_from_data",
    "geo",
    "ref_lat",
    "backend",
    "scheduler",
    "theoretical_threshold",
    "unit",
    "max_cells_per_unit",
    "max_points_per_cell",
    "cell_choice",
    "ledger",
    "dataset",
    "outside",
)


def eps_values(texts: Sequence[str], *, geo: bool) -> list[tuple[float, str]]:
    """The distinct ``--eps`` values, smallest first, each with its text (for
    file names): numbers, or lengths such as 50m with --geo."""
    out: dict[float, str] = {}
    for t in texts:
        if str(t).strip().lower() == "auto":
            raise ValueError(
                "sweep takes --eps numbers (one or more), not 'auto'; 'dpdbscan fit --eps auto' chooses eps"
            )
        v = check_param("eps", read_length(t, geo=geo), cli=True)
        out.setdefault(v, str(t))
    return sorted(out.items())


def _tag(text: str) -> str:
    """A file-name-safe form of an --eps text: 50m -> 50m, 0.5 -> 0.5."""
    return re.sub(r"[^0-9A-Za-z.+-]", "_", text)


def cmd_sweep(args: argparse.Namespace, sink: WarningSink) -> int:
    if getattr(args, "per", None) is not None:
        raise ValueError(NO_SWEEP)
    if (args.input is None) == (args.model is None):
        raise ValueError("sweep needs either an input data file or --model MODEL.json (not both)")
    values = sorted({check_param("min_samples", m, cli=True) for m in args.min_samples})
    picture = picture_options(args)
    notes = Notes(args.quiet)
    outputs = Outputs.from_args(args)
    if args.model is not None:
        if args.ledger is not None or args.dataset is not None:
            raise ValueError(
                "sweep --model re-parameterises a saved release: it spends nothing, so there is "
                "nothing to charge to --ledger (drop --ledger and --dataset)"
            )
        defaults = args.option_defaults
        given = [k for k in _FIT_ONLY if getattr(args, k, None) != defaults.get(k)]
        if given:
            shown = ", ".join("--" + k.replace("_", "-") for k in given)
            raise ValueError(
                f"{shown} shape(s) a new release; with --model the saved release is "
                "re-parameterised as it is: drop them, or fit the data file instead"
            )
        base = load_model(args.model)
        geo = projection.projection_of(base) is not None
        eps = eps_values(args.eps, geo=geo) if args.eps else [(base.grid.eps, "")]
        name = args.name or Path(args.model).name.removesuffix(".json").removesuffix(".spans")
        if base.histogram is None:
            raise ValueError(f"{args.model}: saved without its noisy histogram, cannot re-parameterise it")
        if eps[0][0] < finest_eps(base) * (1 - 1e-12):
            raise ValueError(
                f"--eps {eps[0][1]} is finer than the release in {args.model} can "
                f"resolve (its smallest eps is {_length(base, finest_eps(base))})"
            )
    else:
        if not args.eps:
            raise ValueError("--eps is required when sweep fits a data file")
        opts = FitOptions.from_args(args)
        eps = eps_values(args.eps, geo=opts.geo)
        p = check_fit_params(opts, eps=eps[0][0])
        name = args.name or stem(opts.input)
    single = len(eps) == 1

    def stem_of(tag: str, m: int) -> str:
        return f"{name}.m{m}" if single else f"{name}.eps{_tag(tag)}.m{m}"

    for _, tag in eps:  # fail on unwritable outputs before spending budget
        for m in values:
            out_paths(outputs, stem_of(tag, m))
    rows, failed_all, files = [], [], []
    with charging(opts, p, "sweep") if args.model is None else nullcontext(None) as charged:
        if args.model is None:  # --ledger: reserved before any record is read
            base = fit_model(opts, sink, {**p, "min_samples": values[0]}, notes)
        for alpha, tag in eps:
            for m in values:
                same = alpha == base.grid.eps and m == base.spec.min_samples
                model = base if same else with_params(base, eps=alpha, min_samples=m)
                written, failed = write_outputs(model, out_paths(outputs, stem_of(tag, m)), notes, picture)
                failed_all += failed
                files += written
                rows.append(
                    (
                        _length(base, alpha),
                        m,
                        model.spans.threshold,
                        model.n_spans,
                        model.n_core_cells,
                        written[0],
                    )
                )
        if charged is not None:
            charged(base, files)
    print(
        f"spans for {len(eps)} eps x {len(values)} MinPts from {release_count(base)} (epsilon="
        f"{base.release.epsilon:g}, delta={base.release.delta:g}, made at "
        f"eps={_length(base, base.release.eps)}); "
        "re-parameterising costs no budget"
    )
    print(f"privacy: {protection(base)}")
    for line in second_lines(base, spans=False):  # what each of the automatic mode's two releases spent
        print(line.strip() + " (each model written says whether its spans carry release two's split)")
    if seeded(base):  # what fit's summary and every file of this release say too
        print(f"WARNING: {SEEDED}")
    print(f"{'eps':>10}  {'min_samples':>11}  {'threshold':>10}  {'spans':>6}  {'core_cells':>10}  model")
    for a, m, thr, n, c, path in rows:
        print(f"{a:>10}  {m:>11}  {thr:>10.1f}  {n:>6}  {c:>10}  {path}")
    for f in failed_all:
        print(f"dpdbscan sweep: error: could not write {f}", file=sys.stderr)
    return EXIT_PARTIAL if failed_all else EXIT_OK


def _length(model, value: float) -> str:
    return projection.format_km(value) if projection.projection_of(model) is not None else f"{value:g}"
