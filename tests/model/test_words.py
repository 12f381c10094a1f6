"""The release in words (issue 23): every line of the summary, of ``dpdbscan
info`` and of the forecast is a sentence with the paper's symbols in
brackets, one name per quantity (kappa: cells within eps of a cell; kappa_q:
of a sub-cell), and the guarantee says what its MinPts means, and what holds for each place
alone when the all-at-once statement certifies no density."""

from __future__ import annotations

import re

import numpy as np
import pytest

from dpdbscan import DPDBSCAN, fit_lonlat
from dpdbscan.model import guarantee, save_model, summary
from dpdbscan.model.coretestwords import within_words

from clirun import blob_points, run

# each summary line: (its label, symbols that must stand in it)
SYMBOLS = {
    "privacy": ["(epsilon=1, delta=0)"],
    "noise": ["discrete Laplace", "(dense histogram)"],
    "DBSCAN": ["min_samples=", "eps=", "threshold "],
    "grid": ["(|X|, w)", "kappa=21", "kappa_q=15"],
    "margin": ["border="],
    "guarantee": ["6 x eps, MinPts=", "MinPts=", "with probability >= 0.9"],
}
# symbols the issue found undefined, and the old terse forms
OLD_FORMS = ["|X|=", "alpha=", "E~ >= 1", "(one-sided; core", "span within one (", "sub-cells 2^2", "d=2,"]


def _fit(min_samples=20, **kw):
    X = blob_points()
    return DPDBSCAN(eps=0.5, min_samples=min_samples, bounds=(0, 10), random_state=0, **kw).fit(X).spans_


def _lines(model) -> dict[str, str]:
    rows = {}
    for line in summary(model).splitlines()[1:]:
        label, _, text = line.partition(":")
        rows[label.strip()] = text.strip()
    return rows


@pytest.mark.parametrize("core", ["density", "bound"])
def test_every_summary_line_is_a_sentence_with_its_symbols(core):
    rows = _lines(_fit(core=core))
    for label, symbols in SYMBOLS.items():
        text = rows[label]
        assert all(s in text for s in symbols), (label, text)
        words = re.findall(r"\b[a-z]{3,}\b", re.sub(r"\([^()]*\)", "", text), flags=re.I)
        assert len(words) >= 6, (label, text)  # a sentence outside the brackets
    text = "\n".join(rows.values())
    assert not [old for old in OLD_FORMS if old in text], text
    if core == "density":
        assert "(m(q) <= " in rows["margin"] and "(threshold E~ >= " in rows["DBSCAN"]
        assert "(one-sided)" in rows["guarantee"] and "need not cover every cluster" in rows["guarantee"]
    else:
        assert "Gamma=" in rows["margin"] and "(threshold UB~ >= " in rows["DBSCAN"]
        assert "the paper's sandwich" in rows["guarantee"] and "(tau=" in rows["guarantee"]


def test_min_pts_one_all_at_once_still_states_what_holds_for_each_place():
    """The demo's settings (min_samples=10 at epsilon=1 on a fine grid) leave
    MinPts = 1 in the all-at-once guarantee: the worst of thousands of
    sub-cells' noise absorbs MinPts. The words say what remains of it (no
    span in empty space) and lead with what the margin gives each place
    alone, so they never read as "no guarantee"."""
    weak = _fit(min_samples=5)
    g = guarantee(weak)
    assert g["within_clusters_at"]["min_samples"] == 1
    place = g["each_place"]
    assert place["min_samples"] == 5 and 0 < place["probability"] <= 0.2
    line = _lines(weak)["guarantee"]
    needs = place.get("needs")
    more = "" if needs is None else f", and one with fewer than {needs['min_samples']:,} at most 0.1"
    assert line.startswith(
        f"each place alone: one with fewer than 5 points within 3 is core with probability at most "
        f"{place['probability']:g}{more}; all at once, with probability >= 0.9"
    )
    assert "no density guarantee" not in line and "no guarantee" not in line
    assert "MinPts=1" in line and "no span lies in empty space" in line

    strong = _fit(min_samples=60)
    m_star = guarantee(strong)["within_clusters_at"]["min_samples"]
    assert m_star >= 2
    line = _lines(strong)["guarantee"]
    assert "no density guarantee" not in line
    assert f"one cluster of points that each have at least {m_star} points within 3 (6 x eps" in line


@pytest.mark.parametrize("m,dense", [(1, False), (0.5, False), (1.2, True), (2, True), (984, True)])
def test_the_density_threshold_is_two_points(m, dense):
    # counts are integers: "at least 1.2 points" asks for 2
    text = within_words({"eps": 0.9, "min_samples": m}, 6.0)
    assert ("certifies no density beyond MinPts=1" not in text) == dense
    assert "(6 x eps, MinPts=" in text


def test_geographic_lengths_are_on_the_ground():
    rng = np.random.default_rng(0)
    P = np.vstack([rng.normal(c, [0.0004, 0.0003], (2000, 2)) for c in ([-122.41, 37.79], [-122.44, 37.76])])
    model = fit_lonlat(P, bounds=(-122.48, 37.72, -122.38, 37.82), eps="50m", min_samples=100, random_state=0)
    rows = _lines(model)
    assert "within 50 m of it (min_samples=100, eps=50 m)" in rows["DBSCAN"]
    # lengths read as a person writes them (three digits); the model keeps the exact width
    assert "35.4 m wide" in rows["grid"] and "35.3553" not in rows["grid"]
    assert model.release.grid.width == pytest.approx(0.05 / 2**0.5, rel=1e-12)
    assert "within 300 m (6 x eps, MinPts=" in rows["guarantee"]


def test_kappa_and_kappa_q_name_two_quantities_everywhere(capsys, tmp_path):
    """Issue 23: the forecast said kappa=15 beside "21 noisy counts per
    candidate cell", the model file had grid.kappa 21 and guarantee.kappa 15.
    Now kappa is the cells within eps of a cell (21 in 2-D at eta 4) and
    kappa_q the most within eps of one sub-cell (15 with 2 x 2 sub-cells),
    in the summary, info, the forecast, the estimator and the file."""
    est = DPDBSCAN(eps=0.5, min_samples=20, bounds=(0, 10), random_state=0).fit(blob_points())
    model = est.spans_
    assert est.kappa_ == model.release.grid.kappa == 21
    assert est.guarantee_["kappa_q"] == model.spans.kappa_q == 15
    fc = est.forecast(n_expected=3000, n_features=2)
    assert (fc.kappa, fc.kappa_q, fc.terms_per_cell) == (21, 15, 21)
    assert "(kappa=21, kappa_q=15)" in _lines(model)["grid"]
    save_model(model, tmp_path / "m.json")
    rc, out, _ = run(capsys, "info", tmp_path / "m.json")
    assert rc == 0 and "(kappa=21, kappa_q=15)" in out
    rc, out, _ = run(
        capsys,
        "forecast",
        "--bounds",
        "0",
        "0",
        "10",
        "10",
        "--eps",
        "0.5",
        "--min-samples",
        "20",
        "--n-expected",
        "3000",
    )
    assert rc == 0 and "(kappa=21, kappa_q=15)" in out and "21 noisy counts per candidate cell" in out
    assert "kappa=15" not in out
    rc, out, _ = run(
        capsys,
        "forecast",
        "--bounds",
        "0",
        "0",
        "10",
        "10",
        "--eps",
        "0.5",
        "--min-samples",
        "20",
        "--subcells",
        "1",
    )
    assert rc == 0 and "(kappa=21)" in out and "kappa_q" not in out


def test_forecast_lines_are_sentences(capsys):
    rc, out, _ = run(
        capsys,
        "forecast",
        "--geo",
        "--bounds",
        "-122.48",
        "37.72",
        "-122.38",
        "37.82",
        "--eps",
        "50m",
        "--min-samples",
        "1000",
        "--n-expected",
        "4e5",
    )
    assert rc == 0
    rows = {ln.split(":", 1)[0].strip(): ln.split(":", 1)[1] for ln in out.splitlines()[1:] if " : " in ln}
    assert "(|X|)" in rows["grid"] and "(dense histogram)" in rows["grid"]
    assert "(one noise standard deviation, sigma)" in rows["noise"]
    assert "core: 1 standard deviation of the estimate's noise" in rows["margin"]
    assert "(the largest m(q); margin=1 sigma with the empty-space guard)" in rows["margin"]
    assert "(min_samples=1000 plus the margin)" in rows["threshold"]
    assert not [old for old in ("|X|=", "std 2.93", "eps-neighbourhood count >=") if old in out], out


def test_every_core_test_has_its_words():
    """The core tests compute, the model states: one entry of words per test
    of the registry, under the same name."""
    from dpdbscan.model.words import WORDS, words_of
    from dpdbscan.post.coretests import CORE_TESTS

    assert sorted(WORDS) == sorted(CORE_TESTS)
    assert all(words_of(name).name == name for name in CORE_TESTS)
    with pytest.raises(ValueError, match="core must be one of"):
        words_of("nope")
