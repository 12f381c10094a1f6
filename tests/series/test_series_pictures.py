"""A series' pictures: the small multiples (one panel per period) and the
HTML map's period control, from a real ``dpdbscan fit --per`` on a CSV.

Place A is busy every day of the week, place B only on the first three:
A is one of every day's spans, B of the first three days' only. The
browser test opens the page in headless Chromium (skipped without it,
a failure under DPDBSCAN_REQUIRE_BROWSER=1, as in tests/render/test_webmap.py).
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import datetime as dt
import json
import os
import re

import numpy as np
import pytest

from dpdbscan import load_model
from dpdbscan.render.periodplot import plot_periods
from dpdbscan.render.webmap import map_html
from tests.clirun import run

from cdp import Browser, find_chromium

START = dt.datetime(2024, 3, 4, tzinfo=dt.UTC).timestamp()
ARGS = ["--header", "--columns", "x", "y", "--unit", "cab", "--max-cells-per-unit", "8", "--time", "time",
        "--per", "day", "--from", "2024-03-04", "--to", "2024-03-11", "--bounds", "0", "0", "10", "10",
        "--eps", "0.5", "--min-samples", "30", "--epsilon", "2", "--delta", "1e-5",
        "--seed", "3"]  # fmt: skip


@pytest.fixture(scope="module")
def series(tmp_path_factory):
    """The release of 300 cabs over 7 days: A = (2, 2) every day, B = (7, 7)
    on days 0-2 only (none of B's rows after day 3)."""
    tmp = tmp_path_factory.mktemp("series")
    rng = np.random.default_rng(5)
    n = 16000
    cab = rng.integers(0, 300, n)
    day = rng.integers(0, 7, n)
    at_b = (rng.random(n) < 0.5) & (day < 3)
    xy = np.where(at_b[:, None], 7.0, 2.0) + rng.normal(0, 0.3, (n, 2))
    t = START + day * 86400 + rng.uniform(0, 86400, n)
    path = tmp / "cabs.csv"
    with open(path, "w") as f:
        f.write("x,y,cab,time\n")
        f.writelines(f"{xy[i, 0]:.4f},{xy[i, 1]:.4f},c{cab[i]},{t[i]:.0f}\n" for i in range(n))
    out = tmp / "out"
    return path, out


def _fit(series, capsys):
    path, out = series
    if not (out / "cabs.spans.json").exists():
        rc, _, err = run(capsys, "fit", path, *ARGS, "--out-dir", out)
        assert rc == 0, err
    return load_model(out / "cabs.spans.json"), out


def test_each_period_has_its_active_spans_in_the_files(series, capsys):
    model, out = _fit(series, capsys)
    rec = model.metadata["series"]
    assert model.n_spans == 2
    a = model.predict(np.array([[2.0, 2.0]]))[0]
    b = model.predict(np.array([[7.0, 7.0]]))[0]
    assert {a, b} == {0, 1}
    # A every day, B on days 0-2 only
    assert rec["period_spans"] == [sorted([a, b])] * 3 + [[a]] * 4
    # the rule: active where the noisy mass is at least the 95 % interval's half-width
    h = rec["table"]["interval_half_width"]
    table = np.array(rec["table"]["noisy_mass"])
    assert [np.flatnonzero(table[:, t] >= h).tolist() for t in range(7)] == rec["period_spans"]
    with open(out / "cabs.periods.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    active = {(int(r["span"]), r["period_start"][:10]) for r in rows if r["active"] == "1"}
    assert active == {
        (s, rec["periods"]["starts"][t][:10]) for t, ids in enumerate(rec["period_spans"]) for s in ids
    }


def test_a_table_without_spans_still_says_who_it_protects(series, capsys, tmp_path):
    """The periods table is a plain CSV whose statements are columns: with no
    span it has no (span, period) row, so it writes one row without numbers
    rather than a file that states nothing."""
    from dpdbscan.cli.fitseries import PERIODS_COLUMNS, write_periods_csv

    model, _ = _fit(series, capsys)
    rec = model.metadata["series"]
    empty = {
        **rec,
        "table": {**rec["table"], "noisy_mass": []},
        "period_spans": [[] for _ in rec["period_spans"]],
    }
    write_periods_csv(
        dataclasses.replace(model, metadata={**model.metadata, "series": empty}), tmp_path / "t.csv"
    )
    with open(tmp_path / "t.csv", newline="") as f:
        (row,) = list(csv.DictReader(f))
    assert [row[c] for c in PERIODS_COLUMNS[:6]] == [""] * 6
    assert "each cab" in row["protects"] and "unit protected: cab" in row["budget"]


def test_small_multiples_one_panel_per_period_filled_where_active(series, capsys):
    model, out = _fit(series, capsys)
    png = out / "cabs.periods.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    import matplotlib.pyplot as plt

    fig = plot_periods(model)
    try:
        panels = [ax for ax in fig.axes if ax.collections]
        assert len(panels) == 7
        for t, ax in enumerate(panels):
            (coll,) = [c for c in ax.collections if c.get_gid() == f"period-{t}"]
            filled = np.flatnonzero(coll.get_facecolors()[:, 3] > 0).tolist()
            assert filled == model.metadata["series"]["period_spans"][t]
        title = " ".join(fig.texts[0].get_text().split())
        assert "each cab is protected over the whole series" in title  # unit, budget
    finally:
        plt.close(fig)


def test_the_map_has_a_period_control_with_the_released_table(series, capsys):
    model, _ = _fit(series, capsys)
    page = map_html(model)
    cfg = json.loads(re.search(r'id="dpdbscan-config">(.*?)</script>', page, re.S).group(1))
    rec = model.metadata["series"]
    assert cfg["periods"]["active"] == rec["period_spans"]
    assert cfg["periods"]["mass"] == rec["table"]["noisy_mass"]
    options = re.findall(r'<option value="(-?\d+)">([^<]*)</option>', page)
    assert [int(v) for v, _ in options] == list(range(-1, 7))
    assert options[4][1].startswith("2024-03-07 00:00 (1 active)")
    assert "each cab over the whole series" in page
    # a model of one release has no control
    plain = map_html(dataclasses.replace(model, metadata={}))
    assert 'id="period"' not in plain and '"periods": null' in plain


def _says_both_parts(text, model):
    """``text`` names the level, the unit, the spans' k and m, the table's
    pairs per unit and points per pair, the lifetime budget and rho, and
    that the release is seeded (this fit gives --seed)."""
    rec, units = model.metadata["series"], model.release.units
    text = " ".join(text.split())
    assert "person-level: each cab is protected over the whole series" in text
    assert "epsilon=2, delta=1e-05, rho=" in text or "ε=2, δ=1e-05, ρ=" in text
    k, m = units.max_cells_per_unit, units.max_points_per_cell
    assert f"the spans at k={k} cells and m={m} point per cell per cab" in text
    k, m = rec["table"]["max_pairs_per_unit"], rec["table"]["max_points_per_pair"]
    assert f"the table at k={k} (span, period) pairs and m={m} point per pair per cab" in text
    assert "seeded: not a private release" in text


def test_every_file_of_a_series_says_both_parts_bounds(series, capsys):
    """The periods' picture, the GeoJSON, the table's CSV, the spans'
    picture and the map's legend say the level, the unit, each part's
    contribution bound (the spans' k cells, m points; the table's pairs
    per unit, points per pair), the lifetime budget and rho, and that a
    seeded release is not a private one: they gave the unit and (epsilon,
    delta) only."""
    import html

    import matplotlib.pyplot as plt

    from dpdbscan.render.plotting import plot_model

    model, out = _fit(series, capsys)
    fig = plot_periods(model)
    try:
        _says_both_parts(fig.texts[0].get_text(), model)
    finally:
        plt.close(fig)
    props = json.loads((out / "cabs.spans.geojson").read_text())["properties"]
    _says_both_parts(props["protects"], model)
    assert props["max_pairs_per_unit"] == model.metadata["series"]["table"]["max_pairs_per_unit"]
    assert props["max_points_per_pair"] == 1 and props["table_zcdp_rho"] > 0
    assert props["randomness"].startswith("seeded: not a private release")
    with open(out / "cabs.periods.csv", newline="") as f:
        _says_both_parts(next(csv.DictReader(f))["protects"], model)
    ax = plot_model(model, kind="spans")
    try:
        _says_both_parts(ax.get_title(), model)
    finally:
        plt.close(ax.figure)
    legend = html.unescape(map_html(model).split('<p id="protects">')[1].split("</p>")[0])
    _says_both_parts(legend, model)


def _days_series(tmp, capsys, name, xy, rng, days, digits, options):
    """``xy`` (300 cabs at random, times over ``days`` days) written as
    NAME.csv with ``digits`` decimals and fitted with ``options``, one panel
    per day: its model."""
    n = len(xy)
    t = START + rng.integers(0, days, n) * 86400 + rng.uniform(0, 86400, n)
    path = tmp / f"{name}.csv"
    with open(path, "w") as f:
        f.write("x,y,cab,time\n")
        f.writelines(
            f"{xy[i, 0]:.{digits}f},{xy[i, 1]:.{digits}f},c{rng.integers(0, 300)},{t[i]:.0f}\n"
            for i in range(n)
        )
    to = (dt.datetime(2024, 3, 4) + dt.timedelta(days=days)).strftime("%Y-%m-%d")
    rc, _, err = run(capsys, "fit", path, *options, "--to", to, "--no-png", "--out-dir", tmp / "out")
    assert rc == 0, err
    return load_model(tmp / "out" / f"{name}.spans.json")


def _geo_series(tmp, capsys, days):
    """A lon/lat series of 300 cabs at three places of San Francisco, one
    panel per day: its model."""
    rng = np.random.default_rng(7)
    n = 16000
    centres = np.array([[-122.42, 37.78], [-122.40, 37.76], [-122.44, 37.80]])
    xy = centres[rng.integers(0, 3, n)] + rng.normal(0, 0.002, (n, 2))
    geo = ["--header", "--geo", "--columns", "x", "y", "--bounds", "-122.46", "37.74", "-122.38", "37.82",
           "--unit", "cab", "--max-cells-per-unit", "8", "--time", "time", "--per", "day",
           "--from", "2024-03-04", "--eps", "200m", "--min-samples", "30",
           "--epsilon", "2", "--delta", "1e-5", "--seed", "3"]  # fmt: skip
    return _days_series(tmp, capsys, "geo", xy, rng, days, 5, geo)


@contextlib.contextmanager
def _laid_out(model, days):
    """The periods' figure of ``model``, laid out and drawn: ``(figure,
    renderer, panels)``, closed afterwards."""
    import matplotlib.pyplot as plt

    fig = plot_periods(model)
    try:
        fig.tight_layout()
        fig.canvas.draw()
        panels = [ax for ax in fig.axes if ax.collections]
        assert len(panels) == days
        yield fig, fig.canvas.get_renderer(), panels
    finally:
        plt.close(fig)


@pytest.mark.parametrize("days", [7, 10])  # one row of panels, and two
def test_the_scale_bar_lies_clear_of_every_panel_and_its_labels(tmp_path, capsys, days):
    """The periods' scale bar hangs under the panels, below their tick
    labels: inside a 2.6-inch panel it lay over the spans."""
    from dpdbscan.geometry.projection import projection_of

    model = _geo_series(tmp_path, capsys, days)
    with _laid_out(model, days) as (fig, renderer, panels):
        (bar,) = [a for ax in fig.axes for a in ax.artists if a.get_gid() == "scale-bar"]
        box = bar.get_window_extent(renderer)
        for ax in panels:
            assert not box.overlaps(ax.bbox), "the scale bar covers a panel's drawing area"
            for label in [*ax.get_xticklabels(), *ax.get_yticklabels(), ax.title]:
                if label.get_visible() and label.get_text():
                    assert not box.overlaps(label.get_window_extent(renderer)), label.get_text()
        assert fig.bbox.contains(box.x0, box.y0) and fig.bbox.contains(box.x1, box.y1)
        # its length is still the map's: scale_km on the panels' x axis
        ax = bar.axes
        km_per_x = projection_of(model).kx
        (x0, _), (x1, _) = ax.transData.transform([(0, 0), (bar.scale_km / km_per_x, 0)])
        assert 0 < abs(x1 - x0) < box.width


def _far_series(tmp, capsys, days):
    """A series in metres far from the origin (coordinates of 1e6 to 2.2e6,
    whose tick labels matplotlib would shorten with an offset, "1e6"), one
    panel per day: its model."""
    rng = np.random.default_rng(8)
    n = 12000
    xy = 1e6 + 123456.7 * (
        np.array([[2.0, 2.0], [7.0, 7.0], [4.0, 8.0]])[rng.integers(0, 3, n)] + rng.normal(0, 0.3, (n, 2))
    )
    box = ["--bounds", "1000000", "1000000", "2234567", "2234567", "--eps", "61728"]
    return _days_series(tmp, capsys, "far", xy, rng, days, 1, [*ARGS[:14], *box, *ARGS[23:]])


def _drawn(labels, limits, axis):
    """The tick labels drawn: visible, with text, their tick within the view
    (matplotlib keeps labels of ticks beyond it, which it does not draw)."""
    lo, hi = sorted(limits)
    return [t for t in labels if t.get_visible() and t.get_text() and lo <= t.get_position()[axis] <= hi]


@pytest.mark.parametrize("which, days", [("geo", 10), ("far", 9)])  # two rows of panels, the second short
def test_every_column_has_x_tick_labels_and_no_two_labels_overlap(tmp_path, capsys, which, days):
    """Under rows of panels whose last row is short, the columns it leaves
    empty had no x tick labels (shared x axes label the bottom row only);
    far from the origin, the "1e6" of an axis' offset lay over the first
    panel's title. Every column now has its x tick labels under its lowest
    panel, and no tick label, offset or title overlaps another."""
    model = (_geo_series if which == "geo" else _far_series)(tmp_path, capsys, days)
    with _laid_out(model, days) as (fig, renderer, panels):
        texts = []
        columns = {}
        for ax in panels:
            shown = _drawn(ax.get_xticklabels(), ax.get_xlim(), 0)
            column = round(ax.get_position().x0, 3)
            columns[column] = columns.get(column, 0) + len(shown)
            texts += shown + _drawn(ax.get_yticklabels(), ax.get_ylim(), 1)
            texts += [t for t in (ax.title, ax.xaxis.offsetText, ax.yaxis.offsetText) if t.get_text()]
        assert len(columns) == min(days, 7) and all(columns.values()), columns
        boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in texts]
        for i, (a, box) in enumerate(boxes):
            assert fig.bbox.contains(box.x0, box.y0) and fig.bbox.contains(box.x1, box.y1), a
            for b, other in boxes[i + 1 :]:
                assert not box.overlaps(other), f"{a!r} overlaps {b!r}"


# --------------------------------------------------------------------------- #
# in a real browser

CHROMIUM = find_chromium()


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        if os.environ.get("DPDBSCAN_REQUIRE_BROWSER") == "1":
            pytest.fail("DPDBSCAN_REQUIRE_BROWSER=1 but no Chromium found (apt-get install chromium)")
        pytest.skip("no Chromium installed (apt-get install chromium; see docs/maps.md)")
    with Browser(CHROMIUM, width=1000, height=750) as b:
        yield b


@pytest.mark.browser
def test_choosing_a_period_in_chromium_dims_the_idle_spans(series, capsys, browser, tmp_path):
    model, out = _fit(series, capsys)
    rc, _, err = run(capsys, "map", out / "cabs.spans.json", "-o", tmp_path / "series.html")
    assert rc == 0, err
    browser.open((tmp_path / "series.html").resolve().as_uri())
    browser.wait_for("document.documentElement.dataset.ready === '1'")
    assert browser.evaluate("document.documentElement.dataset.activeSpans") == "2"  # whole horizon
    expected = model.metadata["series"]["period_spans"]
    for t in (0, 5):
        browser.evaluate(
            f"(() => {{ const s = document.getElementById('period'); s.value = '{t}';"
            " s.dispatchEvent(new Event('change')); })()"
        )
        shown = browser.evaluate(
            "Array.from(document.querySelectorAll('path.span:not(.idle)')).map(p => +p.dataset.id)"
        )
        assert sorted(shown) == expected[t]
        assert browser.evaluate("document.documentElement.dataset.period") == str(t)
    # the idle span is drawn without fill
    idle = browser.evaluate("getComputedStyle(document.querySelector('path.span.idle')).fillOpacity")
    assert float(idle) == 0.0
