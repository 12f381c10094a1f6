"""Span models as JSON: the release's file format (``model/schema.json``).

The JSON file is the whole release: public parameters, the spans (core cells
by span) and, optionally, the noisy histogram (compressed arrays in base64).
Reading it back needs nothing else; every field is checked, the parameters
against the parameter table. Functions here read a model's public attributes
and build a new one; they never see training data.
"""

from __future__ import annotations

import binascii
import json
import math
import zlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from ..cells import packed
from ..cells.grid import MAX_RELEASE_ETA, Grid
from ..cells.histogram import NoisyHistogram
from ..cells.packed import pack
from ..cells.subcells import SubcellLayout
from ..params.parameters import check_param
from ..params.specs import ReleaseInfo, SecondSpend, SizeEstimate, SpanSpec, UnitBound, UnitChoice
from ..post import sidebyside
from ..post.coretests import Stored, core_test
from ..post.merge import JOINS
from .guarantee import guarantee
from .record import SpanModel

FORMAT = "dpdbscan.spans"
#: 2 (0.3.0): one name per quantity (docs/architecture.md, the glossary);
#: files of version 1 (0.2.0) are read through :func:`_from_version_1`.
VERSION = 2
READABLE = (1, 2)
HISTOGRAM_KINDS = ("dense", "sparse", "stability")
#: Noises a release file may name (exact counts are for the tests only).
NOISE_KINDS = ("discrete", "laplace", "gaussian")
#: Which cells within the border radius join a span (:class:`SpanSpec`).
BORDER_CELLS = ("any", "occupied", "own")


# --------------------------------------------------------------------------- #
# span model <-> dict


def model_to_dict(model: SpanModel, include_histogram: bool = True) -> dict:
    """The JSON document of a :class:`~dpdbscan.model.record.SpanModel`."""
    cells, ends = span_cells(model)
    rows = cells.tolist()
    span_list = [
        {"id": s, "n_cells": b - a, "cells": rows[a:b]} for s, (a, b) in enumerate(zip([0] + ends[:-1], ends))
    ]
    return _document(model, include_histogram, span_list)


def span_cells(model: SpanModel) -> tuple[np.ndarray, list[int]]:
    """The core cells' coordinates grouped by span, each span's in key order
    (a stable sort by span), and where each span's rows end."""
    spans = model.spans
    order = np.argsort(spans.labels, kind="stable")
    cells = spans.grid.decode(spans.core_keys[order])
    return cells, np.cumsum(np.bincount(spans.labels, minlength=spans.n_spans)).tolist()


def _document(model: SpanModel, include_histogram: bool, span_list: Any) -> dict:
    """:func:`model_to_dict` with ``span_list`` as its ``spans``."""
    spans, spec, rel = model.spans, model.spec, model.release
    out = {
        "format": FORMAT,
        "version": VERSION,
        "privacy": {
            "epsilon": rel.epsilon,
            "delta": rel.delta,
            "noise": rel.noise,
            noise_key(rel.noise): rel.noise_scale,
            "histogram": rel.histogram,
            "unit": "row" if rel.units is None else "unit",
            **(
                {}
                if rel.units is None
                else {
                    "max_cells_per_unit": rel.units.max_cells_per_unit,
                    "max_points_per_cell": rel.units.max_points_per_cell,
                    "cell_choice": rel.units.cell_choice,
                }
            ),
            **({} if rel.rho is None else {"rho": rel.rho}),
            **({} if rel.unit_choice is None else {"unit_choice": unit_choice_dict(rel.unit_choice)}),
            **({} if rel.size_estimate is None else {"size_estimate": size_estimate_dict(rel.size_estimate)}),
            **second_privacy(model),
        },
        "params": {
            "eps": spans.grid.eps,
            "min_samples": spec.min_samples,
            "eta": rel.grid.eta,
            "beta": spec.beta,
            "raise_min_samples": spec.raise_min_samples,
            "subcells": spec.subcells,
            "border": spec.border,
            **({} if spec.border_cells == "any" else {"border_cells": spec.border_cells}),
            **({} if spec.join == "eps" else {"join": spec.join}),
            "margin": spec.margin,
            "core": spec.core,
        },
        "bounds": {"lower": spans.grid.lower.tolist(), "upper": spans.grid.upper.tolist()},
        "grid": rel.grid.to_dict(),
        "span_grid": {"width": spans.grid.width, "shape": list(spans.grid.shape)},
        "guarantee": jsonable(guarantee(model)),
        "tau": spans.tau,
        "beta": spec.beta,
        "noise_margin": spans.noise_margin,
        "noise_margin_upper": spans.noise_margin_upper,
        "theta": json_number(rel.theta),
        "spans": span_list,
        "metadata": dict(model.metadata),
        "release": {"eps": rel.eps, "eta": rel.eta, "min_samples": rel.min_samples},
    }
    if model.auto is not None:
        out["auto"] = dict(model.auto)
    if model.second is not None:
        out["second"] = dict(model.second)
    if include_histogram and model.histogram is not None:
        out["histogram"] = histogram_to_dict(model.histogram)
    elif spec.border_cells != "any":
        raise ValueError(
            "this model's border cells are chosen by the release's noisy counts: it reads the noisy "
            "histogram, so the model must be saved with it (include_histogram=True)"
        )
    return out


def noise_key(noise: str) -> str:
    """The name of the noise's parameter in a model file, typed by family:
    ``sigma2`` (the discrete Gaussian's sigma^2) or ``count_epsilon`` (the
    epsilon one count's Laplace or discrete Laplace noise is drawn with)."""
    return "sigma2" if noise == "gaussian" else "count_epsilon"


def size_estimate_dict(size: SizeEstimate) -> dict:
    """The automatic mode's DP count of the points, as the model file records it."""
    return {
        "share": size.share,
        noise_key(size.noise): size.scale,
        **({} if size.rho is None else {"rho": size.rho}),
        "value": size.value,
    }


def unit_choice_dict(choice: UnitChoice) -> dict:
    """How k was chosen privately, as the model file records it."""
    return {
        "mechanism": "exponential",
        "candidates": list(choice.candidates),
        "share": choice.share,
        "rho": choice.rho,
    }


def to_json(model: SpanModel, include_histogram: bool = True) -> str:
    """``json.dumps(model_to_dict(model))``, the same text made faster: the
    spans' cells (often 10^5 and more) are written by one string format
    instead of as Python lists through the JSON encoder."""
    doc = _document(model, include_histogram, None)
    # a dict is encoded as its items joined by ", " (json's default separators)
    items = (
        f"{json.dumps(k)}: {spans_json(model) if k == 'spans' else json.dumps(v)}" for k, v in doc.items()
    )
    return "{" + ", ".join(items) + "}"


def spans_json(model: SpanModel) -> str:
    """``json.dumps`` of :func:`model_to_dict`'s ``spans`` list."""
    cells, ends = span_cells(model)
    n, d = cells.shape
    # every cell "[i, j]", one per line of one formatted string, then split
    rows = (("[" + ", ".join(["%d"] * d) + "]\n") * n % tuple(cells.ravel().tolist())).split("\n")
    return (
        "["
        + ", ".join(
            f'{{"id": {s}, "n_cells": {b - a}, "cells": [{", ".join(rows[a:b])}]}}'
            for s, (a, b) in enumerate(zip([0] + ends[:-1], ends))
        )
        + "]"
    )


def save_model(model: SpanModel, path: Path | str, include_histogram: bool = True) -> None:
    """Write the release to ``path`` as JSON (:func:`model_to_dict`)."""
    Path(path).write_text(to_json(model, include_histogram))


def load_model(path: Path | str) -> SpanModel:
    """Read a release written by :func:`save_model` (every field checked)."""
    text = Path(path).read_text()
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        raise ValueError(f"{path}: not a dpdbscan span model (not JSON)") from None
    return model_from_dict(data)


class MalformedModel(ValueError):
    """A model file that is JSON of the right format but not a valid model."""


def _need(cond: bool, what: str) -> None:
    if not cond:
        raise MalformedModel(f"malformed dpdbscan span model: {what}")


def _real(value, name: str, low=None, high=None, *, low_open=False, high_open=False) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if ok and low is not None:
        ok = value > low if low_open else value >= low
    if ok and high is not None:
        ok = value < high if high_open else value <= high
    _need(
        ok,
        f"{name} must be a finite number"
        + (f" {'>' if low_open else '>='} {low}" if low is not None else "")
        + (f" and {'<' if high_open else '<='} {high}" if high is not None else "")
        + f", got {value!r}",
    )
    return float(value)


def _eta(value, name: str) -> float:
    """A release grid's eta: the user's (at most 4), or twice that where the
    coarse release of 7-D/8-D made it (:data:`MAX_RELEASE_ETA`)."""
    return _real(value, name, 0, MAX_RELEASE_ETA, low_open=True)


def _choice(value, name: str, options) -> str:
    _need(isinstance(value, str) and value in options, f"{name} must be one of {options}, got {value!r}")
    return value


def _cells(raw, d: int, shape, name: str) -> np.ndarray:
    """An (m, d) int64 array of cell coordinates inside ``shape``."""
    c = np.asarray(raw)
    _need(c.dtype.kind in "iu" or c.size == 0, f"{name} must hold integer cell coordinates")
    c = c.astype(np.int64).reshape(-1, d) if c.size else np.zeros((0, d), np.int64)
    _need(c.ndim == 2 and c.shape[1] == d, f"{name} must be rows of {d} coordinates")
    _need(bool(np.all((c >= 0) & (c < np.asarray(shape)))), f"{name} lie outside the grid")
    return c


def model_from_dict(data: Any) -> SpanModel:
    """The :class:`~dpdbscan.model.record.SpanModel` of a JSON document.

    Everything is checked, the parameters against the parameter table: a
    corrupted or hand-edited file gives one clear ValueError, never a
    traceback or a silently wrong model.
    """
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError("not a dpdbscan span model (missing format 'dpdbscan.spans')")
    if data.get("version") not in READABLE:
        raise ValueError(f"unsupported dpdbscan model version {data.get('version')!r}")
    try:
        return _model_from_dict(_from_version_1(data) if data["version"] == 1 else data)
    except MalformedModel:
        raise
    except (
        KeyError,
        TypeError,
        IndexError,
        AttributeError,
        ValueError,
        OverflowError,
        ZeroDivisionError,
        MemoryError,
        zlib.error,
        binascii.Error,
    ) as exc:
        text = f"missing {exc}" if isinstance(exc, KeyError) else f"{type(exc).__name__}: {exc}"
        raise MalformedModel(f"malformed dpdbscan span model: {text}"[:300]) from None


def _param(name: str, value: Any, where: str) -> Any:
    """``value`` checked against the parameter table's entry ``name``."""
    try:
        return check_param(name, value)
    except (TypeError, ValueError) as exc:
        raise MalformedModel(f"malformed dpdbscan span model: {where}: {exc}") from None


def _model_from_dict(data: dict) -> SpanModel:
    p, priv, box = data["params"], data["privacy"], data["bounds"]
    for name, part in (("params", p), ("privacy", priv), ("bounds", box)):
        _need(isinstance(part, dict), f"{name} must be an object")
    lower, upper = box["lower"], box["upper"]
    _need(
        isinstance(lower, list) and isinstance(upper, list) and 1 <= len(lower) == len(upper),
        "bounds must be two lists of the same length >= 1",
    )
    lower = [_real(v, "bounds.lower") for v in lower]
    upper = [_real(v, "bounds.upper") for v in upper]
    _need(all(lo < hi for lo, hi in zip(lower, upper)), "bounds must have lower < upper")
    alpha = _param("eps", p["eps"], "params.eps")
    _need(alpha != "auto", "params.eps must be a number")
    eta = _eta(p["eta"], "params.eta")
    k = _param("subcells", p.get("subcells", 1), "params.subcells")
    _need(isinstance(k, int), "params.subcells must be an integer")
    _need(k ** len(lower) <= 4096, f"params.subcells={k} is too large for d={len(lower)}")
    # the stored widths, when they agree with (alpha, eta) up to rounding: a
    # re-parameterised model's cells are its release's bit for bit
    hgrid = Grid(
        np.asarray(lower), np.asarray(upper), alpha, eta, cell_width=_width(data.get("grid"), "grid.width")
    )
    grid = hgrid.subdivided(k)
    span_width = _width(data.get("span_grid"), "span_grid.width")
    if k > 1 and span_width is not None:
        grid = Grid(hgrid.lower, hgrid.upper, alpha, eta / k, cell_width=span_width)
    kind = _choice(priv["histogram"], "privacy.histogram", HISTOGRAM_KINDS)
    keys, lab = _span_cells(data["spans"], grid)
    hist = histogram_from_dict(hgrid, data["histogram"]) if "histogram" in data else None
    _need(hist is None or hist.kind == kind, "histogram.kind differs from privacy.histogram")
    core = _param("core", p.get("core", "bound"), "params.core")
    test = core_test(core)
    rule = p.get("margin", "paper")
    if isinstance(rule, str):
        _choice(rule, "params.margin", test.margin_rules)
    else:
        _need(test.numeric_margin, f"params.margin must be one of {test.margin_rules}, got {rule!r}")
        rule = _real(rule, "params.margin", 0)
    raise_min = p.get("raise_min_samples", True)
    _need(isinstance(raise_min, bool), "params.raise_min_samples must be true or false")
    spec = SpanSpec(
        min_samples=_min_samples(p["min_samples"]),
        beta=_param("beta", p["beta"], "params.beta"),
        subcells=k,
        margin=rule,
        border=_real(p.get("border", 0.0), "params.border", 0),
        border_cells=_choice(p.get("border_cells", "any"), "params.border_cells", BORDER_CELLS),
        raise_min_samples=raise_min,
        core=core,
        join=_choice(p.get("join", "eps"), "params.join", JOINS),
    )
    _need(
        spec.border_cells == "any" or hist is not None,
        f"params.border_cells {spec.border_cells!r} needs the model's histogram, which the file does "
        "not hold",
    )
    fit = _release(data.get("release"), alpha, eta, spec.min_samples)
    release = _release_info(priv, data.get("theta"), hgrid, kind, fit)
    used = data.get("guarantee", {})
    _need(isinstance(used, dict), "guarantee must be an object")
    if "n_events" in used:  # what the margins were computed with must be what the spans need
        layout = SubcellLayout(hgrid, k)
        # files before kappa_q had its own name called it guarantee.kappa (grid.kappa is the
        # cells within alpha of a whole cell, a different number with sub-cells)
        name = "kappa_q" if "kappa_q" in used else "kappa"
        _need(
            used.get(name) == layout.kappa_q and str(used["n_events"]) == str(layout.n_events),
            f"guarantee.{name} / n_events do not match the grid and sub-cells",
        )
    upper = data.get("noise_margin_upper")
    upper = None if upper is None else _real(upper, "noise_margin_upper", 0)
    margin = _real(data["noise_margin"], "noise_margin", 0)
    try:
        stored = Stored(
            hgrid, grid, keys, lab, kind, release.noise, release.noise_scale, release.theta, margin, upper
        )
        spans = test.restore(stored, spec)
    except ValueError as exc:
        raise MalformedModel(f"malformed dpdbscan span model: {exc}") from None
    metadata = data.get("metadata", {})
    _need(isinstance(metadata, dict), "metadata must be an object")
    auto = data.get("auto")
    _need(auto is None or isinstance(auto, dict), "auto must be an object")
    if auto is not None and auto.get("selection") == "levels":
        _levels_record(auto, int(lab.max()) + 1 if lab.size else 0, alpha, spec.min_samples)
    if auto is not None and sidebyside.KEY in auto:
        _second_record(auto[sidebyside.KEY], int(lab.max()) + 1 if lab.size else 0, hgrid, release)
    second = data.get("second")
    if second is not None:
        # release two carried to spans at other parameters (with_params): no automatic choice
        _need(auto is None, "second is for a model that is no automatic choice (else auto.second)")
        _second_record(second, int(lab.max()) + 1 if lab.size else 0, hgrid, release, "second")
    record = (auto or {}).get(sidebyside.KEY, second)
    # what release two spent: from its record where the spans carry one, else as the
    # privacy section states it (spans at other parameters that left its split out)
    spent = _second_spend(priv, release) if record is None else sidebyside.spend_of(record)
    return SpanModel(
        spans=spans,
        spec=spec,
        release=replace(release, second=spent),
        histogram=hist,
        auto=auto,
        metadata=metadata,
        second=second,
    )


def _release_info(priv: dict, theta: Any, hgrid: Grid, kind: str, fit: dict) -> ReleaseInfo:
    """The public facts of the release: the file's privacy section, its
    ``theta`` and the parameters ``fit`` of the fit that spent the budget
    (:func:`_release`), on the histogram's grid ``hgrid``."""
    noise = _choice(priv["noise"], "privacy.noise", NOISE_KINDS)
    key = noise_key(noise)
    _need(key in priv, f"privacy.{key} is missing ({noise} noise)")
    units = _units(priv)
    rho = _rho(priv, noise)
    return ReleaseInfo(
        grid=hgrid,
        histogram=kind,
        theta=_theta(theta),
        noise=noise,
        noise_scale=_real(priv[key], f"privacy.{key}", 0, low_open=True),
        epsilon=_param("epsilon", priv["epsilon"], "privacy.epsilon"),
        delta=_param("delta", priv["delta"], "privacy.delta"),
        eps=fit["eps"],
        eta=fit["eta"],
        min_samples=fit["min_samples"],
        rho=rho,
        units=units,
        unit_choice=_unit_choice(priv.get("unit_choice"), units, rho),
        size_estimate=_size_estimate(priv.get("size_estimate"), noise, units, rho),
        second=None,  # set from release two's record or the privacy section (load)
    )


def _levels_record(auto: dict, n_spans: int, alpha: float, lowest: int) -> None:
    """A level selection's record names each span once, at the spans' eps
    (or, a span taken at its own scale, at a larger candidate eps), at a
    MinPts no lower than the model's (its lowest); the guarantee, the
    summary and ``predict`` (each span's border) read it."""
    levels = auto.get("levels")
    if not isinstance(levels, list):
        raise MalformedModel("malformed dpdbscan span model: auto.levels must be a list")
    _need(len(levels) == n_spans, "auto.levels must list every span once")
    larger = [float(a) for a in auto.get("eps_candidates") or [] if isinstance(a, (int, float)) and a > alpha]
    for i, lv in enumerate(levels):
        _need(
            isinstance(lv, dict) and lv.get("span") == i, f"auto.levels must be numbered 0, 1, ... (span {i})"
        )
        eps = _real(lv.get("eps"), "auto.levels.eps", 0, low_open=True)
        if "taken" in lv:
            _need(lv["taken"] in ("grown", "added"), f"auto.levels[{i}].taken must be 'grown' or 'added'")
            _need(
                any(math.isclose(eps, a, rel_tol=1e-9) for a in larger),
                f"auto.levels[{i}].eps is not a candidate eps larger than the spans' eps",
            )
        else:
            _need(math.isclose(eps, alpha, rel_tol=1e-9), f"auto.levels[{i}].eps is not the spans' eps")
        m = _min_samples(lv.get("min_samples"))
        _need(m >= lowest, f"auto.levels[{i}].min_samples is below the model's min_samples")
        for name in ("threshold", "stability", "stability_share", "mass"):
            _real(lv.get(name), f"auto.levels[{i}].{name}")
    _need(isinstance(auto.get("unsure"), bool), "auto.unsure must be true or false")


def second_privacy(model: SpanModel) -> dict:
    """The privacy section's words on release two, when the release is two
    (docs/privacy.md 4.10): the pair is the release of the stated epsilon,
    release two's share and the epsilon its noise is drawn with. From the
    release's facts (:attr:`~dpdbscan.params.specs.ReleaseInfo.second`), so
    that spans at other parameters that leave release two's split out still
    say that two releases were spent."""
    spent = model.release.second
    if spent is None:
        return {}
    if spent.noise == "gaussian":
        second = {"share": spent.share, "noise": spent.noise, "rho": spent.rho, "sigma2": spent.scale}
    else:
        second = {"share": spent.share, "noise": spent.noise, "count_epsilon": spent.scale}
    return {"releases": 2, "second": second}


def _second_spend(priv: dict, release: ReleaseInfo) -> SecondSpend | None:
    """What release two spent, as the privacy section states it
    (``privacy.releases`` and ``privacy.second``), for a model whose spans
    carry no record of release two (spans at other parameters that left its
    split out); None when the section states one release."""
    if "releases" not in priv and "second" not in priv:
        return None
    _need(priv.get("releases") == 2, "privacy.releases must be 2 (absent: one release)")
    sec = priv.get("second")
    if not isinstance(sec, dict):
        raise MalformedModel(
            "malformed dpdbscan span model: privacy.second must be an object when privacy.releases is 2"
        )
    share = _real(sec.get("share"), "privacy.second.share", 0, 1, low_open=True, high_open=True)
    noise = _choice(sec.get("noise"), "privacy.second.noise", ("discrete", "gaussian"))
    if noise == "gaussian":
        _need(
            release.units is not None and release.noise == "gaussian" and release.rho is not None,
            "privacy.second with Gaussian noise is for person-level Gaussian releases only",
        )
        rho = _real(sec.get("rho"), "privacy.second.rho", 0, release.rho, low_open=True)
        return SecondSpend(
            share, noise, _real(sec.get("sigma2"), "privacy.second.sigma2", 0, low_open=True), rho
        )
    _need(release.units is None, "privacy.second with Laplace noise is for event-level releases only")
    return SecondSpend(
        share, noise, _real(sec.get("count_epsilon"), "privacy.second.count_epsilon", 0, low_open=True), None
    )


def _second_record(
    rec: Any, n_spans: int, hgrid: Grid, release: ReleaseInfo, name: str = "auto.second"
) -> None:
    """Release two's record (``auto["second"]``, :mod:`dpdbscan.post.sidebyside`):
    its share and noise, each span's fine cells and noisy counts, and where a
    span was split, its ids (the span's and new ones, each a span of the
    file) and the piece of each kept fine cell; ``predict`` reads it.
    ``name``: where the file holds it (``second`` when carried to spans at
    other parameters, :attr:`SpanModel.second`)."""
    _need(isinstance(rec, dict), f"{name} must be an object")
    _real(rec.get("share"), f"{name}.share", 0, 1, low_open=True, high_open=True)
    _choice(rec.get("noise"), f"{name}.noise", ("discrete", "gaussian"))
    if rec["noise"] == "gaussian":
        # person level (docs/privacy.md 4.10): the discrete Gaussian at a share of the release's rho
        _need(
            release.units is not None and release.noise == "gaussian" and release.rho is not None,
            f"{name} with Gaussian noise is for person-level Gaussian releases only",
        )
        _real(rec.get("rho"), f"{name}.rho", 0, release.rho, low_open=True)
        _real(rec.get("sigma2"), f"{name}.sigma2", 0, low_open=True)
    else:
        _need(release.units is None, f"{name} with Laplace noise is for event-level releases only")
        _real(rec.get("count_epsilon"), f"{name}.count_epsilon", 0, release.epsilon, low_open=True)
    spans = rec.get("spans")
    _need(isinstance(spans, list), f"{name}.spans must be a list")
    taken: set[int] = set()
    for sp in spans:
        _need(isinstance(sp, dict), f"{name}.spans must hold objects")
        s, f = sp.get("span"), sp.get("f")
        _need(isinstance(s, int) and 0 <= s < n_spans, f"{name}.spans[].span must be a span of the file")
        _need(isinstance(f, int) and 2 <= f <= 8, f"{name}.spans[].f must be an integer from 2 to 8")
        fine = unpack(sp["fine"]).reshape(-1, hgrid.d)
        _need(unpack(sp["counts"]).shape == (fine.shape[0],), f"{name}.spans[].counts must match its cells")
        _need(isinstance(sp.get("split"), bool), f"{name}.spans[].split must be true or false")
        if not sp["split"]:
            continue
        ids = sp.get("ids")
        _need(
            isinstance(ids, list)
            and len(ids) >= 2
            and ids[0] == s
            and all(isinstance(i, int) and 0 <= i < n_spans and i not in taken for i in ids)
            and len(set(ids)) == len(ids),
            f"{name}.spans[].ids must be the span and other spans of the file, each split once",
        )
        taken.update(ids)
        kept = unpack(sp["kept"]).reshape(-1, hgrid.d)
        piece = unpack(sp["piece"])
        _need(
            piece.shape == (kept.shape[0],)
            and kept.shape[0] > 0
            and bool(np.all((piece >= 0) & (piece < len(ids)))),
            f"{name}.spans[].piece must name a piece of each kept fine cell",
        )


#: Version 1's names of the quantities version 2 renamed (its other keys are unchanged).
_V1_NAMES = {"gamma": "noise_margin", "gamma_upper": "noise_margin_upper"}


def _from_version_1(data: dict) -> dict:
    """A version-1 document (0.2.0) with version 2's names: ``params.alpha``
    is ``params.eps``; ``gamma``/``gamma_upper`` are ``noise_margin`` and
    ``noise_margin_upper``; ``privacy.noise_scale`` and ``histogram.scale``
    are ``sigma2`` (Gaussian noise) or ``count_epsilon``. The stored
    guarantee is recomputed on reading (only its ``kappa``/``kappa_q`` and
    ``n_events`` are checked), so its old names need no translation."""
    out = {_V1_NAMES.get(k, k): v for k, v in data.items()}
    for part, old, new in (("params", "alpha", "eps"), ("grid", "alpha", "eps")):
        if isinstance(out.get(part), dict):
            out[part] = {new if k == old else k: v for k, v in out[part].items()}
    for part, old in (("privacy", "noise_scale"), ("histogram", "scale")):
        d = out.get(part)
        if isinstance(d, dict):
            # files before the scale was recorded drew Laplace noise at the epsilon they state
            value = d.get(old, d.get("epsilon"))
            out[part] = {k: v for k, v in d.items() if k != old} | {noise_key(str(d.get("noise"))): value}
    return out


def _rho(priv: dict, noise: str) -> float | None:
    """The zCDP rho of a Gaussian release (required with Gaussian noise)."""
    if noise != "gaussian":
        _need("rho" not in priv, "privacy.rho is for Gaussian noise only")
        return None
    _need("rho" in priv, "privacy.rho is missing (Gaussian noise)")
    return _real(priv["rho"], "privacy.rho", 0, low_open=True)


def _units(priv: dict) -> UnitBound | None:
    """The contribution bound of a person-level release (None: event-level)."""
    unit = _choice(priv.get("unit", "row"), "privacy.unit", ("row", "unit"))
    names = ("max_cells_per_unit", "max_points_per_cell")
    if unit == "row":
        _need(
            not any(n in priv for n in (*names, "cell_choice")),
            "privacy.max_cells_per_unit needs privacy.unit 'unit'",
        )
        return None
    k, m = (_param(n, priv.get(n), f"privacy.{n}") for n in names)
    _need(isinstance(k, int), "privacy.max_cells_per_unit must be an integer")
    # files before the choice was recorded kept k cells at random
    how = _choice(priv.get("cell_choice", "uniform"), "privacy.cell_choice", ("busiest", "uniform"))
    return UnitBound(max_cells_per_unit=int(k), max_points_per_cell=int(m), cell_choice=how)


def _unit_choice(raw: Any, units: UnitBound | None, rho: float | None) -> UnitChoice | None:
    """How k was chosen privately (``max_cells_per_unit="auto"``): its public
    candidates, among them the recorded k, and a share of the release's rho."""
    if raw is None:
        return None
    _need(isinstance(raw, dict), "privacy.unit_choice must be an object")
    if units is None or rho is None:
        raise MalformedModel(
            "malformed dpdbscan span model: privacy.unit_choice needs a person-level Gaussian release"
        )
    _need(
        set(raw) == {"mechanism", "candidates", "share", "rho"} and raw["mechanism"] == "exponential",
        "privacy.unit_choice must hold mechanism 'exponential', candidates, share and rho",
    )
    cands = raw["candidates"]
    _need(
        isinstance(cands, list)
        and all(isinstance(c, int) and not isinstance(c, bool) and c >= 1 for c in cands)
        and all(a < b for a, b in zip(cands, cands[1:])),
        "privacy.unit_choice.candidates must be increasing integers >= 1",
    )
    _need(units.max_cells_per_unit in cands, "privacy.max_cells_per_unit is not among the candidates")
    share = _real(raw["share"], "privacy.unit_choice.share", 0, 1, low_open=True, high_open=True)
    spent = _real(raw["rho"], "privacy.unit_choice.rho", 0, rho, low_open=True)
    return UnitChoice(candidates=tuple(cands), share=share, rho=spent)


def _size_estimate(raw: Any, noise: str, units: UnitBound | None, rho: float | None) -> SizeEstimate | None:
    """The automatic mode's DP count of the points (event-level only): its
    share of the budget, its noise (the release's family) and its value."""
    if raw is None:
        return None
    _need(isinstance(raw, dict), "privacy.size_estimate must be an object")
    _need(units is None, "privacy.size_estimate is for event-level releases only")
    key = noise_key(noise)
    names = {"share", key, "value"} | ({"rho"} if noise == "gaussian" else set())
    _need(set(raw) == names, f"privacy.size_estimate must hold {', '.join(sorted(names))}")
    share = _real(raw["share"], "privacy.size_estimate.share", 0, 1, low_open=True, high_open=True)
    scale = _real(raw[key], f"privacy.size_estimate.{key}", 0, low_open=True)
    spent = None if rho is None else _real(raw["rho"], "privacy.size_estimate.rho", 0, rho, low_open=True)
    value = _real(raw["value"], "privacy.size_estimate.value")
    return SizeEstimate(share=share, noise=noise, scale=scale, rho=spent, value=value)


def _min_samples(value: Any) -> int:
    m = _param("min_samples", value, "params.min_samples")
    _need(m != "auto", "params.min_samples must be a number")
    return int(m)


def _span_cells(spans: Any, grid: Grid) -> tuple[np.ndarray, np.ndarray]:
    """Sorted keys of the stored spans' cells and their span ids."""
    _need(isinstance(spans, list), "spans must be a list")
    cells, labels = [], []
    for i, span in enumerate(spans):
        _need(
            isinstance(span, dict) and span.get("id") == i,
            f"spans must be numbered 0, 1, ... in order (span {i})",
        )
        c = _cells(span["cells"], grid.d, grid.shape, f"the cells of span {i}")
        _need(c.shape[0] > 0, f"span {i} has no cells")
        cells.append(c)
        labels.append(np.full(c.shape[0], i, dtype=np.int64))
    coords = np.concatenate(cells) if cells else np.zeros((0, grid.d), np.int64)
    lab = np.concatenate(labels) if labels else np.zeros(0, np.int64)
    keys = grid.encode(coords)
    order = np.argsort(keys, kind="stable")
    keys, lab = keys[order], lab[order]
    _need(
        bool(np.all(keys[1:] != keys[:-1])) if keys.size > 1 else True,
        "a cell belongs to more than one span, or twice to one",
    )
    return keys, lab


def _width(part, name: str):
    """A stored cell width (None when absent: older files)."""
    if not isinstance(part, dict) or "width" not in part:
        return None
    return _real(part["width"], name, 0, low_open=True)


def _release(raw: Any, alpha: float, eta: float, min_samples: int) -> dict:
    """The parameters of the fit that spent the budget (older files: the model's own)."""
    if raw is None:
        return {"eps": alpha, "eta": eta, "min_samples": min_samples}
    _need(isinstance(raw, dict), "release must be an object")
    return {
        "eps": _real(raw["eps"], "release.eps", 0, low_open=True),
        "eta": _eta(raw["eta"], "release.eta"),
        "min_samples": _min_samples(raw["min_samples"]),
    }


# --------------------------------------------------------------------------- #
# helpers


def json_number(x: float) -> float | str | None:
    """A float as JSON allows it: NaN -> null, +-inf -> "inf"/"-inf"."""
    return x if math.isfinite(x) else (None if math.isnan(x) else str(x))


def jsonable(d: dict) -> dict:
    """A nested dict with non-finite floats and huge ints made JSON-safe."""
    out: dict = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out[k] = jsonable(v)
        elif isinstance(v, float):
            out[k] = json_number(v)
        elif isinstance(v, int) and abs(v) > 2**53:
            out[k] = str(v)
        else:
            out[k] = v
    return out


def unpack(d: dict) -> np.ndarray:
    _need(
        isinstance(d, dict) and isinstance(d.get("dtype"), str) and isinstance(d.get("shape"), list),
        "a packed array needs dtype, shape and zlib_base64",
    )
    dtype = np.dtype(d["dtype"])
    _need(dtype.kind in "iuf" and dtype.itemsize <= 8, f"packed arrays hold numbers, not {dtype}")
    return packed.unpack(d)


def histogram_to_dict(h: NoisyHistogram) -> dict:
    out = {
        "kind": h.kind,
        "theta": json_number(h.theta),
        "noise": h.noise,
        noise_key(h.noise): h.scale,
        "epsilon": h.epsilon,
        "delta": h.delta,
        "values": pack(h.values),
    }
    if h.kind != "dense":
        keys, _ = h.sparse()
        out["cells"] = pack(h.grid.decode(keys))
    return out


def _theta(value) -> float:
    """theta as saved: a number, "-inf" (dense) or null (unknown)."""
    if value is None:
        return float("nan")
    _need(
        value in ("-inf", "inf") or (isinstance(value, (int, float)) and not isinstance(value, bool)),
        f"theta must be a number or null, got {value!r}",
    )
    return float(value)


def histogram_from_dict(grid: Grid, d: dict) -> NoisyHistogram:
    """The released histogram of a model file, checked against its grid."""
    _need(isinstance(d, dict), "histogram must be an object")
    kind = _choice(d["kind"], "histogram.kind", HISTOGRAM_KINDS)
    values = unpack(d["values"])
    _need(
        values.dtype.kind in "iuf" and bool(np.all(np.isfinite(values))),
        "histogram values must be finite numbers",
    )
    noise = _choice(d["noise"], "histogram.noise", NOISE_KINDS)
    keys, values = _released_cells(grid, kind, values, d)
    return NoisyHistogram(
        grid=grid,
        kind=kind,
        values=values,
        keys=keys,
        theta=_theta(d.get("theta")),
        noise=noise,
        scale=_real(d[noise_key(noise)], f"histogram.{noise_key(noise)}", 0, low_open=True),
        epsilon=_param("epsilon", d["epsilon"], "histogram.epsilon"),
        delta=_param("delta", d.get("delta", 0.0), "histogram.delta"),
    )


def _released_cells(
    grid: Grid, kind: str, values: np.ndarray, d: dict
) -> tuple[np.ndarray | None, np.ndarray]:
    """(keys, values) of a histogram: a dense one covers the grid (no keys),
    the others list their cells (``d["cells"]``), put in key order here and
    refused if one repeats."""
    if kind == "dense":
        _need(tuple(values.shape) == tuple(grid.shape), "histogram shape does not match the grid")
        return None, values
    _need(values.ndim == 1, "histogram values must be a list")
    c = _cells(unpack(d["cells"]), grid.d, grid.shape, "histogram cells")
    _need(c.shape[0] == values.size, "histogram cells and values differ in number")
    keys = grid.encode(c)
    order = np.argsort(keys, kind="stable")
    keys, values = keys[order], values[order]
    _need(bool(np.all(keys[1:] != keys[:-1])) if keys.size > 1 else True, "histogram cells repeat")
    return keys, values


__all__ = [
    "FORMAT",
    "VERSION",
    "READABLE",
    "noise_key",
    "MalformedModel",
    "model_to_dict",
    "model_from_dict",
    "to_json",
    "save_model",
    "load_model",
    "histogram_to_dict",
    "histogram_from_dict",
    "jsonable",
    "json_number",
]
