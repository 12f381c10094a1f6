"""A model whose spans were each taken at their own level of the release's
density tree (``selection="levels"``, :mod:`dpdbscan.post.levelsearch`): what
each span is, what it is guaranteed to be, the words of the summary, and the
other answer of an unsure choice (for ``explore``).

The model's record (``model.auto``) holds the choice: each span's level
(``levels``: eps, MinPts, threshold, stability), the candidates' scores,
whether the choice was close and the condensed tree. The model's own
``spec.min_samples`` is the lowest selected MinPts: every span is core there
too (the levels are nested), so the model-wide guarantee holds at it, and
each span's own guarantee (:func:`level_guarantees`) is at least as strong.
Everything here reads the model only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..geometry.projection import eps_text
from ..post import levelsearch as _levels
from ..post import ownscale, sidebyside
from ..post.coretests import core_test
from .record import SpanModel
from .reparam import remodel


def is_levels(model: SpanModel) -> bool:
    """Whether the model's spans were selected at their own levels."""
    return (model.auto or {}).get("selection") == "levels"


def level_guarantees(model: SpanModel, candidates: int) -> list[dict[str, Any]]:
    """Each span's guarantee at its own level (:func:`dpdbscan.post.levelsearch.level_guarantee`),
    with a union over ``candidates`` eps: one dict per span id with ``span``,
    ``eps``, ``min_samples``, ``m_star``, ``within_clusters_at`` and
    ``probability``. Empty for a model that is not a level selection."""
    if not is_levels(model):
        return []
    rel, spec = model.release, model.spec
    rho = model.spans.approx_ratio
    out = []
    cache: dict[tuple[float, int], dict[str, Any]] = {}
    for lv in (model.auto or {})["levels"]:
        m, eps = int(lv["min_samples"]), float(lv["eps"])
        if (eps, m) not in cache:
            # the release's cells measured at the span's own eps (the spans'
            # eps but for spans a larger candidate eps gave, lv["taken"])
            grid = rel.grid if math.isclose(eps, rel.grid.eps, rel_tol=1e-9) else rel.grid.at_eps(eps)
            cache[(eps, m)] = _levels.level_guarantee(
                grid, rel.histogram, rel.noise, rel.noise_scale, rel.theta, spec, m, candidates, rho
            )
        out.append({"span": int(lv["span"]), "eps": eps, **cache[(eps, m)]})
    return out


def level_lines(model: SpanModel, per_span: list[dict] | None = None, top: int = 8) -> list[str]:
    """The summary's lines on a level selection: what was chosen, at what
    level, how stable, and whether the choice was close (then ``dpdbscan
    explore`` shows the other answer beside it); ``per_span``: each span's
    guarantee (:func:`level_guarantees`), for its M*. Public values only."""
    if not is_levels(model):
        return []
    a = model.auto or {}
    m_star = {g["span"]: g["m_star"] for g in per_span or [] if g["probability"] is not None}
    spans = list(a.get("levels") or [])
    tree = a.get("tree") or {}
    ms = tree.get("min_samples") or [model.spec.min_samples]
    n_eps = len(a.get("eps_candidates") or [0])
    lines = [
        f"  levels  : {len(spans)} span(s) at eps={eps_text(model, model.grid.eps)}, each at its own MinPts "
        f"(excess of mass over {len(ms)} MinPts {ms[0]}..{ms[-1]}"
        + (f"; eps chosen among {n_eps} by total stability" if "eps" in (a.get("chosen") or []) else "")
        + ")"
    ]
    taken = [lv for lv in spans if lv.get("taken")]
    if taken:
        grown = sum(1 for lv in taken if lv["taken"] == "grown")
        lines.append(
            f"            {len(taken)} of them at a larger candidate eps of their own ({grown} grown from a "
            f"span of eps={eps_text(model, model.grid.eps)} that held under half of its core mass, "
            f"{len(taken) - grown} added where eps={eps_text(model, model.grid.eps)} kept nothing); "
            "predict's border for each is its own eps"
        )
    lines += place_lines(a)
    # spans release two split (post.sidebyside): each part's figures are its whole span's
    part_of = {
        i: sp["span"] for sp in (a.get("second") or {}).get("spans", []) if sp.get("split") for i in sp["ids"]
    }
    # the GeoJSON's noisy_mass (model.stats), beside the level's core mass: two different sums
    cells_mass = None if model.histogram is None else model.stats.noisy_mass
    for lv in sorted(spans, key=lambda lv: -lv["stability"])[:top]:
        at = f"eps={lv['eps']:.4g} ({lv['taken']}), " if lv.get("taken") else ""
        if lv["span"] in part_of:
            at = (
                f"a part of release one's span {part_of[lv['span']]} (release two split it; "
                "figures of the whole), " + at
            )
        lines.append(
            f"    span {lv['span']}: {at}MinPts {lv['min_samples']} (threshold {lv['threshold']:.1f}), one "
            f"span up to MinPts {lv['last_min_samples']}, stability {lv['stability']:.3g} "
            f"({100 * lv['stability_share']:.0f}% of the selected), core mass at its level {lv['mass']:.0f}"
            + (
                f", noisy_mass {cells_mass[lv['span']]:.0f} (all its cells)"
                if cells_mass is not None and lv["span"] < cells_mass.size
                else ""
            )
            + (
                f"; within one (ratio x {'its ' if lv.get('taken') else ''}eps, {m_star[lv['span']]})-cluster"
                if lv["span"] in m_star
                else ""
            )
        )
    if len(spans) > top:
        lines.append(f"    ... and {len(spans) - top} more (dpdbscan info --json: auto.levels)")
    why = unsure_reasons(model)
    if why:
        lines.append("  unsure  : " + "; ".join(why) + " (dpdbscan explore shows both)")
    elif spans:
        lines.append(
            f"  choice  : clear (no other eps within {100 * (1 - _levels.CLOSE):.0f}% of its score with "
            f"another number of clusters, no keep-or-split call within {100 * (1 - _levels.CLOSE):.0f}%)"
        )
    return lines


def _eps_choice(cands: list, extent: float) -> str:
    """How eps was chosen in the geographic mode: among several candidates by
    stability, or the one candidate the place prior leaves."""
    reach = f"a place at one point is drawn {1000 * extent:.0f} m across"
    if len(cands) == 1:
        return f"            eps {1000 * cands[0]:.0f} m, the only candidate up to where {reach}; "
    span = f"{1000 * min(cands):.0f}..{1000 * max(cands):.0f} m " if cands else ""
    return (
        f"            eps among {len(cands)} candidates {span}(up to where {reach}), chosen by the "
        "stability of the places it finds; "
    )


def place_lines(a: Mapping[str, Any]) -> list[str]:
    """What the geographic mode's place prior did (``auto["max_extent"]``),
    in words; empty without it. Public values only."""
    extent = a.get("max_extent")
    if not extent:
        return []
    cands = a.get("eps_candidates") or []
    whole = sum(1 for lv in a.get("levels") or [] if lv.get("fits") is False)
    pieces = sum(1 for lv in a.get("levels") or [] if lv.get("piece"))
    out = [
        f"  places  : geographic mode, so spans are places: at most {1000 * extent:.0f} m across as predict "
        "draws them (a public prior: a place is tens of metres to about a kilometre; without it the "
        "most massive level set, the whole city, wins)",
        _eps_choice(cands, extent)
        + "a larger cluster is replaced by the places inside it and place-sized pieces of the rest",
    ]
    share = a.get("peak_share")
    tree_ms = (a.get("tree") or {}).get("min_samples") or []
    ladder = a.get("min_samples_candidates") or []
    if share and tree_ms and ladder and tree_ms[0] > ladder[0]:
        out.append(
            f"            counted in units, a place is dense relative to the densest: levels below "
            f"{100 * share:g}% of the peak of the release's {_nth(int(a.get('peak_rank', 1)))}densest place "
            f"left out (the tree starts at MinPts {tree_ms[0]}, "
            "not at the noise margin: a busy road's few stops in a hundred passing are many units in a "
            "large fleet)"
        )
        rungs = int(a.get("min_rungs", 1))
        if rungs > 1:
            out.append(
                f"            and a cluster born there is kept only where it lasts {rungs} levels of the "
                f"ladder (to {2 ** ((rungs - 1) / 2):g}x that MinPts): a place stands out over several "
                "levels, a busy road's jams vanish within a level or two of where the tree starts"
            )
    left = int(a.get("own_left_out", 0))
    if a.get("own_share") and left:
        out.append(
            f"            each span drawn over its own units: {left} core sub-cell(s) left out whose own "
            f"noisy count lay under {100 * float(a['own_share']):g}% of their span's busiest cell by more "
            f"than {float(a.get('own_sds', 0.0)):g} noise standard deviations (cells beside a busy place are "
            "core through the place's units within eps, not their own: the road beside a station)"
        )
    if pieces:
        out.append(
            f"            {pieces} span(s) are such pieces of a district (a larger cluster, with or "
            "without places the release tells apart inside it), cut where the release shows least"
        )
    if whole:
        out.append(
            f"            {whole} span(s) larger than that kept whole: the release shows no place "
            "inside them and no piece of them is significant (too little signal at this budget)"
        )
    return out


def _nth(rank: int) -> str:
    """1 -> "", 2 -> "second ", ...: the rank of a place in words, before "densest"."""
    return {1: "", 2: "second ", 3: "third "}.get(rank, f"{rank}th ")


def unsure_reasons(model: SpanModel) -> list[str]:
    """Why the level selection was unsure, in words (empty when it was not)."""
    a = model.auto or {}
    if not a.get("unsure"):
        return []
    why = []
    runner = a.get("runner_up")
    if runner:
        # both counts from the same column: clusters the tree selects at that eps
        # (the spans of a selection can be more or fewer than its clusters)
        selects = {float(r[0]): int(r[2]) for r in a.get("eps_scores") or []}
        n, chosen = selects.get(float(runner["eps"])), selects.get(float(a.get("eps", float("nan"))))
        words = f"eps={eps_text(model, runner['eps'])} scored {100 * runner['score_share']:.0f}% of the best"
        if n is not None and chosen is not None:
            words += (
                f" and selects {_clusters(n)} where the chosen "
                f"eps={eps_text(model, float(a['eps']))} selects {_clusters(chosen)}"
            )
        why.append(words)
    for c in a.get("close") or []:
        why.append(
            f"the cluster born at MinPts {c['min_samples']} was "
            f"{'kept over' if c['kept'] else 'split into'} its {c['children']} sub-clusters by a "
            f"margin under {100 * (1 - _levels.CLOSE):.0f}%"
        )
    return why


def _clusters(n: int) -> str:
    return f"{n} cluster{'' if n == 1 else 's'}"


def alternative(model: SpanModel) -> SpanModel | None:
    """The other answer of an unsure level selection, as a model of the same
    release (post-processing): the runner-up eps's selection, else the same
    tree with its close keep-or-split calls reversed. None when the choice
    was clear or the model is not a level selection; ValueError when it was
    saved without its noisy histogram. Release one's alone: a split by the
    automatic mode's release two (``auto["second"]``, docs/privacy.md 4.10)
    was made for the chosen answer's spans and is not carried over."""
    a = model.auto or {}
    if not (is_levels(model) and a.get("unsure")):
        return None
    if model.histogram is None:
        raise ValueError("this model was saved without its noisy histogram; cannot rebuild the alternative")
    hist, spec = model.histogram, model.spec
    runner = a.get("runner_up")
    extent, share = a.get("max_extent"), a.get("peak_share")
    cands = [float(x) for x in a.get("eps_candidates") or []]
    # spans at their own eps as the fit took them (post.ownscale), unless it
    # kept one eps (selection="one-eps")
    own = not a.get("one_eps") and ownscale.applies(
        hist.grid.d, model.release.units is not None, extent, len(cands)
    )

    def select(alpha: float) -> _levels.LevelSpans:
        """The selection at ``alpha`` as the model made it (the place prior, peak share and
        significance's mass, if recorded)."""
        return _levels.select_levels(
            hist,
            spec,
            (),
            alpha=alpha,
            max_extent=extent,
            peak_share=share,
            share_of=a.get("share_of"),
            # models saved before the rank was recorded took the densest place's peak
            peak_rank=int(a.get("peak_rank", 1)),
            # models saved before it selected short-lived clusters too
            min_rungs=int(a.get("min_rungs", 1)),
            # models saved before it: the floor wherever it is above the margin
            jam_share=a.get("jam_share"),
            # models saved before it: the share alone
            noise_sds=a.get("noise_sds"),
            per_unit=_levels.unit_mass(model.release.units),
            # models saved before it: every core sub-cell drawn
            own_share=a.get("own_share"),
            own_sds=float(a.get("own_sds", 0.0)),
        )

    if runner:
        other = select(float(runner["eps"]))
    else:
        # the same alpha's tree, rebuilt from the release; then the close calls reversed
        same = select(float(a["eps"]))
        flipped = _levels.alternative(same, hist, spec)
        if flipped is None:
            return None
        other = flipped
    if own:
        larger = ownscale.larger_selections(hist, spec, cands, other.eps, share_of=a.get("share_of"))
        other = ownscale.widen(other, larger)
    test = core_test(spec.core)
    h = hist.on_grid(hist.grid.at_eps(other.eps))
    m = min((s.min_samples for s in other.spans), default=spec.min_samples)
    spec2 = replace(spec, min_samples=m, border=float(test.border_at(spec.border, model.grid.eps, other.eps)))
    keys = h.grid.subdivided(spec2.subcells).encode(other.grid.decode(other.core_keys))
    rec = {
        # release two's split (post.sidebyside) was of the chosen answer's spans, not these
        **{k: v for k, v in a.items() if k != sidebyside.KEY},
        **_levels.record(replace(other, alphas=tuple(tuple(r) for r in a.get("eps_scores") or []))),
        "eps": float(other.eps),
        "min_samples": int(m),
        "clusters": other.n_spans,
        "score": float(other.tree.score),
        "unsure": False,
        "runner_up": None,
        "close": [],
        "alternative": True,
        # its own drawing's (absent where the fit drew every core sub-cell)
        **({"own_left_out": int(other.own_left_out)} if a.get("own_share") else {}),
    }
    return remodel(model, h, test.spans_of(h, spec2, keys, other.labels), spec2, rec)


__all__ = ["is_levels", "level_guarantees", "level_lines", "place_lines", "unsure_reasons", "alternative"]
