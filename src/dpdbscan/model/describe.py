"""A release in numbers and in words: :func:`describe` (what ``dpdbscan info``
shows; ``--json`` prints exactly this) and :func:`summary` (the lines ``fit``
prints)."""

from __future__ import annotations

from ..post.coretests import core_test
from .codec import jsonable
from .guarantee import eps_candidates, guarantee
from .levels import is_levels, level_lines
from .record import SpanModel

# the margin and what it was computed from, in report order
MARGIN_FIGURES = ("beta", "gamma", "gamma_upper", "margin", "kappa", "n_events", "n_cells", "theta")


def margin_figures(model: SpanModel) -> dict:
    """The margin and the public numbers it was computed from."""
    s, spec = model.spans, model.spec
    return {
        "beta": spec.beta,
        "gamma": s.gamma,
        "gamma_upper": s.gamma_upper,
        "margin": spec.margin,
        "kappa": s.kappa,
        "n_events": s.n_events,
        "n_cells": model.release.grid.n_cells,
        "theta": model.release.theta,
    }


def describe(model: SpanModel) -> dict:
    """The parameters and guarantees of the release as a JSON-safe dict.

    ``eta``, ``cell_width`` and ``shape`` are the histogram grid's (the cells
    that were counted); ``span_cell_width`` and ``span_shape`` the grid the
    spans are made of (sub-cells when ``subcells > 1``).
    """
    g, hg, s, spec, rel = model.grid, model.release.grid, model.spans, model.spec, model.release
    info = {
        "epsilon": rel.epsilon,
        "delta": rel.delta,
        "noise": rel.noise,
        "histogram": rel.histogram,
        "alpha": g.alpha,
        "min_samples": spec.min_samples,
        "threshold": s.threshold,
        "rho": s.rho,
        "tau": s.tau,
        **margin_figures(model),
        "core": spec.core,
        "guarantee": guarantee(model),
        "eta": hg.eta,
        "cell_width": hg.width,
        "shape": list(hg.shape),
        "d": g.d,
        "subcells": spec.subcells,
        "span_cell_width": g.width,
        "span_shape": list(g.shape),
        "border": spec.border,
        "n_spans": model.n_spans,
        "n_core_cells": model.n_core_cells,
        "bounds": {"lower": g.lower.tolist(), "upper": g.upper.tolist()},
        "has_histogram": model.histogram is not None,
        "metadata": dict(model.metadata),
        "release": {"eps": rel.eps, "eta": rel.eta, "min_samples": rel.min_samples},
        "auto": None if model.auto is None else dict(model.auto),
    }
    if model.metadata.get("projection") is not None:
        info["units"] = "km"
    return jsonable(info)


def summary(model: SpanModel) -> str:
    """The release in a few lines (what ``dpdbscan fit`` prints)."""
    g, s, spec, rel = model.grid, model.spans, model.spec, model.release
    test = core_test(spec.core)
    lines = [
        f"DP-DBSCAN spans: {model.n_spans} span(s) from {model.n_core_cells} core cell(s)",
        f"  privacy : epsilon={rel.epsilon:g}, delta={rel.delta:g} ({rel.noise} noise, "
        f"{rel.histogram} histogram)",
        f"  DBSCAN  : alpha={g.alpha:g}, min_samples={spec.min_samples}, threshold "
        + test.threshold_text(s.threshold),
        f"  grid    : d={g.d}, cell width w={rel.grid.width:.4g}, "
        f"|X|={rel.grid.n_cells}, kappa={s.kappa}, sub-cells {spec.subcells}^{g.d}",
        "  margin  : "
        + test.margin_text(s, spec)
        + (f", theta={rel.theta:g}" if rel.histogram != "dense" else "")
        + f", border={spec.border:.4g}",
        test.guarantee_line(guarantee(model), s, eps_candidates(model)),
    ]
    return "\n".join(lines + origin_lines(model))


def origin_lines(model: SpanModel) -> list[str]:
    """Where the parameters came from: the automatic mode's choice, or a
    re-parameterised release."""
    rel = model.release
    if model.auto is not None:
        a = model.auto
        chosen = " and ".join(a.get("chosen", [])) or "nothing"
        if is_levels(model):
            what = f"min_samples per span, lowest {model.spec.min_samples}"
        else:
            what = f"min_samples={model.spec.min_samples}"
        return [
            f"  auto    : {chosen} chosen from the release without labels "
            f"(eps={model.grid.alpha:g}, {what}; {a.get('criterion')},"
            f" score {a.get('score', 0):.3g}, {a.get('clusters')} cluster(s)); base release "
            f"at eps={a.get('base_eps', rel.eps):g}, no extra budget",
            *level_lines(model, guarantee(model).get("levels")),
        ]
    if rel.eps != model.grid.alpha or rel.min_samples != model.spec.min_samples:
        return [
            f"  release : made at eps={rel.eps:g}, min_samples={rel.min_samples}; "
            "these spans re-parameterise it (no extra budget)"
        ]
    return []


__all__ = ["describe", "summary", "margin_figures", "origin_lines", "MARGIN_FIGURES"]
