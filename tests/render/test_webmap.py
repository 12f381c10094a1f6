"""The interactive map (dpdbscan.render.webmap, ``dpdbscan map``), the free span
figures behind it (dpdbscan.model.stats) and the GeoJSON properties.

The tests marked ``browser`` open the map in a real headless Chromium
(tests/cdp.py). They are skipped when no Chromium is installed, unless
DPDBSCAN_REQUIRE_BROWSER=1 (``make test-browser``) makes that a failure.
"""

import html
import json
import os
import re
import zlib

import numpy as np
import pytest

from dpdbscan import DPDBSCAN
from dpdbscan.cli import main
from dpdbscan.model import geojson, load_model, save_model
from dpdbscan.model.stats import format_area, span_stats
from dpdbscan.render.webmap import _png, map_html, write_map

from cdp import Browser, find_chromium
from spanmodels import hand_model, square

# --------------------------------------------------------------------------- #
# noisy mass, area, cell count


def test_noisy_mass_sums_the_histogram_cells_a_span_touches():
    values = np.arange(100, dtype=np.int64).reshape(10, 10) - 30  # some negative counts
    # sub-cells of width 1/2: span 0 covers sub-cells (2..4, 2..3), i.e. the
    # histogram cells (1, 1) and (2, 1); span 1 is sub-cell (5, 2), in
    # histogram cell (2, 1) too, which then counts towards both spans
    m = hand_model(
        [[(2, 2), (3, 2), (4, 2), (2, 3), (3, 3), (4, 3)], [(5, 2)]],
        shape=(10, 10),
        subcells=2,
        values=values,
    )
    stats = span_stats(m)
    assert stats.noisy_mass.tolist() == [values[1, 1] + values[2, 1], values[2, 1]]
    assert stats.n_cells.tolist() == [6, 1]
    assert stats.area.tolist() == [6 * 0.25, 0.25]


def test_noisy_mass_of_a_sparse_release_counts_unreleased_cells_as_zero():
    values = np.zeros((10, 10), dtype=np.int64)
    values[3, 3], values[3, 4] = 50, 7  # (4, 4) is not released
    m = hand_model([[(3, 3), (3, 4), (4, 4)]], shape=(10, 10), values=values, sparse=True)
    assert m.histogram.kind == "sparse"
    assert span_stats(m).noisy_mass.tolist() == [57]
    bare = hand_model([[(3, 3)]], shape=(10, 10), histogram=False)
    assert span_stats(bare).noisy_mass is None


def test_span_extent_and_anchor():
    m = hand_model([square(2, 3, 3), [(7, 1), (7, 2), (8, 2)]], shape=(10, 10))
    stats = span_stats(m)
    np.testing.assert_allclose(stats.lower, [[2, 3], [7, 1]])
    np.testing.assert_allclose(stats.upper, [[5, 6], [9, 3]])
    np.testing.assert_allclose(stats.anchor[0], [3.5, 4.5])  # the middle cell's centre
    assert m.predict(stats.anchor).tolist() == [0, 1]  # anchors lie inside their span


def test_areas_read_in_m2_or_km2():
    assert format_area(0.003125, geo=True) == "3,125 m²"
    assert format_area(2.5, geo=True) == "2.5 km²"
    assert format_area(1234.0, geo=True) == "1,234 km²"
    assert format_area(12.0, geo=False) == "12 (data units)²"
    assert format_area(31840.0, geo=False) == "31,840 (data units)²"


# --------------------------------------------------------------------------- #
# GeoJSON


def test_geojson_features_carry_span_cells_area_and_noisy_mass():
    values = np.zeros((12, 12), dtype=np.int64)
    values[2:4, 2:4] = 25
    # geographic, 50 m histogram cells, sub-cells of 25 m: span 0 is 4 x 4 sub-cells
    m = hand_model(
        [square(4, 4, 4), [(10, 10)]], shape=(12, 12), width=0.05, subcells=2, values=values, geo=True
    )
    gj = geojson(m)
    props = [f["properties"] for f in gj["features"]]
    assert props[0] == {"span": 0, "n_cells": 16, "area_m2": pytest.approx(16 * 25.0**2), "noisy_mass": 100}
    assert props[1]["n_cells"] == 1 and props[1]["area_m2"] == pytest.approx(625.0)
    assert isinstance(props[0]["noisy_mass"], int)
    assert "area" not in props[0]
    json.dumps(gj, allow_nan=False)  # valid JSON, no NaN


def test_geojson_of_plain_models_has_area_in_data_units():
    m = hand_model([square(1, 1, 3)], shape=(8, 8), width=2.0, noise="laplace", values=np.full((8, 8), 1.5))
    (f,) = geojson(m)["features"]
    assert f["properties"]["area"] == pytest.approx(9 * 4.0)
    assert "area_m2" not in f["properties"]
    assert f["properties"]["noisy_mass"] == pytest.approx(9 * 1.5)
    bare = hand_model([square(1, 1, 3)], shape=(8, 8), histogram=False)
    assert geojson(bare)["features"][0]["properties"]["noisy_mass"] is None


def test_fit_cli_writes_the_geojson_properties(tmp_path, capsys):
    rng = np.random.default_rng(5)
    X = np.vstack([rng.normal([2, 2], 0.2, (2000, 2)), rng.normal([7, 7], 0.2, (2000, 2))])
    csv = tmp_path / "p.csv"
    np.savetxt(csv, X, delimiter=",", header="x,y", comments="")
    assert (
        main(
            [
                "fit",
                str(csv),
                "--header",
                "--bounds",
                "0",
                "10",
                "--eps",
                "0.5",
                "--min-samples",
                "30",
                "--seed",
                "1",
                "--out-dir",
                str(tmp_path),
                "--no-png",
            ]
        )
        == 0
    )
    gj = json.loads((tmp_path / "p.spans.geojson").read_text())
    model_stats = span_stats(load_model(tmp_path / "p.spans.json"))
    assert len(gj["features"]) == model_stats.n_spans >= 2
    for f in gj["features"]:
        p = f["properties"]
        assert set(p) == {"span", "n_cells", "area", "noisy_mass"}
        assert p["noisy_mass"] > 0 and p["area"] > 0
    assert [f["properties"]["n_cells"] for f in gj["features"]] == model_stats.n_cells.tolist()
    assert [f["properties"]["noisy_mass"] for f in gj["features"]] == model_stats.noisy_mass.tolist()


# --------------------------------------------------------------------------- #
# the page


def _geo_model():
    values = np.zeros((40, 40), dtype=np.int64)
    values[5:30, 5:30] = 20
    values[8:14, 8:14] = 300
    spans = [square(16, 16, 10), square(27, 16, 2), [(40, 60), (41, 60)], square(60, 30, 6)]
    return hand_model(spans, shape=(40, 40), width=0.05, subcells=2, values=values, geo=True)


def test_the_page_is_self_contained(tmp_path):
    page = map_html(_geo_model(), title="a <b>title</b> & more")
    assert "http://" not in page and "https://" not in page and "//cdn" not in page
    assert not re.search(r"<script[^>]+src=", page) and "@import" not in page
    for attr in re.findall(r'\s(?:src|href)\s*=\s*"([^"]*)"', page):
        assert attr.startswith("data:"), attr
    # url() only for data URIs and the page's own fragments (the hatch, the box clip)
    assert re.search(r"url\((?!data:|#)", page) is None
    # the user's title is text, never markup
    assert "<b>title</b>" not in page and html.escape("a <b>title</b> & more") in page


def test_the_page_holds_one_polygon_per_span_with_its_figures():
    m = _geo_model()
    page = map_html(m)
    stats = span_stats(m)
    paths = re.findall(r'<path class="span"([^>]*)/>', page)
    assert len(paths) == m.n_spans == 4
    for s, attrs in enumerate(paths):
        a = dict(re.findall(r'([\w-]+)="([^"]*)"', attrs))
        assert a["data-id"] == str(s)
        assert a["data-cells"] == f"{stats.n_cells[s]:,}"
        assert html.unescape(a["data-area"]) == format_area(stats.area[s], geo=True)
        assert a["data-mass"] == f"{round(stats.noisy_mass[s]):,}"
        assert re.fullmatch(r"(M-?\d+ -?\d+([HV]-?\d+)+Z)+", a["d"])
    # span 0 is 10 x 10 sub-cells of 25 m: 62,500 m²; its histogram cells (8..12, 8..12)
    assert html.unescape(dict(re.findall(r'([\w-]+)="([^"]*)"', paths[0]))["data-area"]) == "62,500 m²"
    cfg = json.loads(re.search(r'id="dpdbscan-config">(.*?)</script>', page, re.DOTALL).group(1))
    assert cfg["geo"] is not None and cfg["n_spans"] == 4


def test_heat_layer_png_decodes_to_the_histogram():
    m = _geo_model()
    page = map_html(m)
    uri = re.search(r'<image id="heat" href="data:image/png;base64,([^"]+)"', page).group(1)
    import base64

    data = base64.b64decode(uri)
    w, h = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (w, h) == m.histogram.grid.shape
    rgba = _decode_png(data)
    alpha = rgba[::-1, :, 3].T  # back to [x, y] with y up
    assert np.all(alpha[m.histogram.values <= 0] == 0)
    assert np.all(alpha[m.histogram.values >= 20] > 0)
    assert alpha[10, 10] > alpha[20, 20]  # denser cells are more opaque


def _decode_png(data: bytes) -> np.ndarray:
    """Our own PNGs only: 8-bit RGBA, one IDAT, filter 0 on every row."""
    w, h = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    pos, idat = 8, b""
    while pos < len(data):
        n = int.from_bytes(data[pos : pos + 4], "big")
        if data[pos + 4 : pos + 8] == b"IDAT":
            idat += data[pos + 8 : pos + 8 + n]
        pos += 12 + n
    raw = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(h, 1 + 4 * w)
    assert np.all(raw[:, 0] == 0)
    return raw[:, 1:].reshape(h, w, 4)


def test_png_encoder_round_trips():
    rgba = np.random.default_rng(0).integers(0, 256, (7, 5, 4), dtype=np.uint8)
    data = _png(rgba)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    np.testing.assert_array_equal(_decode_png(data), rgba)
    mpl_image = pytest.importorskip("matplotlib.image")
    import io

    np.testing.assert_allclose(mpl_image.imread(io.BytesIO(data), format="png"), rgba / 255.0)


def test_plain_models_get_data_axes_and_no_projection():
    m = hand_model([square(3, 3, 2)], shape=(10, 10))
    m.metadata["columns"] = ["east", "north"]
    page = map_html(m)
    cfg = json.loads(re.search(r'id="dpdbscan-config">(.*?)</script>', page, re.DOTALL).group(1))
    assert cfg["geo"] is None and cfg["axes"] == ["east", "north"]
    assert "(data units)²" in html.unescape(page)


def test_models_without_histogram_or_spans_still_make_a_page():
    page = map_html(hand_model([square(3, 3, 2)], shape=(10, 10), histogram=False))
    assert 'id="heat"' not in page and "without its noisy histogram" in page
    assert 'data-mass="not saved"' in page


def test_a_release_without_spans_maps_its_histogram():
    m = (
        DPDBSCAN(eps=0.5, min_samples=10**6, bounds=(0.0, 10.0), random_state=0)
        .fit(np.random.default_rng(0).uniform(0, 10, (500, 2)))
        .spans_
    )
    assert m.n_spans == 0
    page = map_html(m)
    assert 'class="span"' not in page and 'id="heat"' in page
    cfg = json.loads(re.search(r'id="dpdbscan-config">(.*?)</script>', page, re.DOTALL).group(1))
    assert cfg["view"] == cfg["box"]  # nothing to crop to: the whole box
    assert geojson(m)["features"] == []


def test_maps_need_two_dimensions():
    m = (
        DPDBSCAN(eps=1.0, min_samples=5, bounds=(0.0, 4.0), random_state=0)
        .fit(np.random.default_rng(0).uniform(0, 4, (100, 3)))
        .spans_
    )
    with pytest.raises(ValueError, match="the map needs a 2-D model, this one is 3-D"):
        map_html(m)


def test_map_command(tmp_path, capsys):
    model = _geo_model()
    save_model(model, tmp_path / "m.spans.json")
    assert main(["map", str(tmp_path / "m.spans.json")]) == 0
    out = capsys.readouterr().out
    assert (tmp_path / "m.spans.html").is_file() and "wrote" in out
    assert (
        main(
            ["map", str(tmp_path / "m.spans.json"), "-o", str(tmp_path / "sub" / "x.html"), "--title", "Cabs"]
        )
        == 0
    )
    text = (tmp_path / "sub" / "x.html").read_text()
    assert "<title>Cabs</title>" in text
    assert [f.name for f in (tmp_path / "sub").iterdir()] == ["x.html"]  # no temporary file left
    assert (tmp_path / "sub" / "x.html").stat().st_mode & 0o044  # readable by others, like any output
    before = (tmp_path / "m.spans.json").read_bytes()
    assert main(["map", str(tmp_path / "m.spans.json"), "-o", str(tmp_path / "m.spans.json")]) == 2
    assert "overwrite" in capsys.readouterr().err
    assert (tmp_path / "m.spans.json").read_bytes() == before


def test_map_command_refuses_3d_models_in_one_line(tmp_path, capsys):
    m = (
        DPDBSCAN(eps=1.0, min_samples=5, bounds=(0.0, 4.0), random_state=0)
        .fit(np.random.default_rng(0).uniform(0, 4, (100, 3)))
        .spans_
    )
    save_model(m, tmp_path / "m3.json")
    assert main(["map", str(tmp_path / "m3.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith(
        f"dpdbscan map: error: the map needs a 2-D model, {tmp_path / 'm3.json'} is 3-D: "
    )
    # and what a 3-D model has instead (it said nothing more)
    assert "'dpdbscan info'" in err[0] and "'dpdbscan explore --no-png'" in err[0] and "predict" in err[0]
    assert not list(tmp_path.glob("*.html"))


def test_size_and_extent_options(tmp_path, capsys):
    model = _geo_model()
    save_model(model, tmp_path / "m.json")
    assert (
        main(
            [
                "plot",
                str(tmp_path / "m.json"),
                "--size",
                "500x300",
                "-o",
                str(tmp_path / "p.png"),
                "--extent",
                "-122.45",
                "37.75",
                "-122.41",
                "37.79",
            ]
        )
        == 0
    )
    head = (tmp_path / "p.png").read_bytes()[:24]
    assert (int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")) == (500, 300)
    for bad, msg in [
        (["--size", "500"], "WIDTHxHEIGHT"),
        (["--size", "5x5"], "between 16"),
        (["--extent", "1", "2", "0", "3"], "XMIN < XMAX"),
    ]:
        assert main(["plot", str(tmp_path / "m.json"), *bad]) == 2
        assert msg in capsys.readouterr().err


def test_fit_and_sweep_take_size_and_extent(tmp_path, capsys):
    rng = np.random.default_rng(6)
    X = np.vstack([rng.normal([2, 2], 0.2, (1500, 2)), rng.normal([7, 7], 0.2, (1500, 2))])
    csv = tmp_path / "p.csv"
    np.savetxt(csv, X, delimiter=",", header="x,y", comments="")
    fit = [
        "fit",
        str(csv),
        "--header",
        "--bounds",
        "0",
        "10",
        "--eps",
        "0.5",
        "--min-samples",
        "30",
        "--seed",
        "1",
        "--out-dir",
        str(tmp_path),
        "--no-geojson",
    ]
    assert main([*fit, "--size", "400x300", "--extent", "1", "1", "3", "3"]) == 0
    head = (tmp_path / "p.spans.png").read_bytes()[:24]
    assert (int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")) == (400, 300)
    capsys.readouterr()
    # refused before the data is read: nothing is spent on a typo
    for bad, msg in [(["--size", "400x"], "WIDTHxHEIGHT"), (["--size", "400x300", "--no-png"], "--no-png")]:
        assert main([*fit, "--name", "q", *bad]) == 2
        err = capsys.readouterr().err
        assert msg in err and "read " not in err
        assert not list(tmp_path.glob("q.*"))
    assert (
        main(
            [
                "sweep",
                "--model",
                str(tmp_path / "p.spans.json"),
                "--min-samples",
                "40",
                "--out-dir",
                str(tmp_path / "sw"),
                "--size",
                "320x240",
                "--no-geojson",
            ]
        )
        == 0
    )
    (png,) = (tmp_path / "sw").glob("*.png")
    head = png.read_bytes()[:24]
    assert (int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")) == (320, 240)


# --------------------------------------------------------------------------- #
# in a real browser

CHROMIUM = find_chromium()
REQUIRE = os.environ.get("DPDBSCAN_REQUIRE_BROWSER") == "1"


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        if REQUIRE:
            pytest.fail("DPDBSCAN_REQUIRE_BROWSER=1 but no Chromium found (apt-get install chromium)")
        pytest.skip("no Chromium installed (apt-get install chromium; see docs/maps.md)")
    with Browser(CHROMIUM, width=1000, height=750) as b:
        yield b


def _colourful_pixels(png: bytes) -> int:
    """Pixels with clearly coloured (not grey) RGB: the spans' fills and outlines.
    The heat layer, text and panels of the page are grey or white."""
    mpl_image = pytest.importorskip("matplotlib.image")
    import io

    img = mpl_image.imread(io.BytesIO(png), format="png")[..., :3]
    return int(np.count_nonzero(img.max(axis=2) - img.min(axis=2) > 0.25))


@pytest.mark.browser
def test_map_renders_in_chromium_with_polygons_and_hover(browser, tmp_path):
    model = _geo_model()
    path = write_map(model, tmp_path / "map.html")
    browser.open(path.resolve().as_uri())
    browser.wait_for("document.documentElement.dataset.ready === '1'")
    n = browser.evaluate("document.querySelectorAll('path.span').length")
    assert n == model.n_spans == int(browser.evaluate("document.documentElement.dataset.spans"))
    # every span is drawn inside the window at the first view
    boxes = browser.evaluate("""Array.from(document.querySelectorAll('path.span')).map(p => {
        const r = p.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; })""")
    for left, top, right, bottom in boxes:
        assert 0 <= left < right <= 1000 and 0 <= top < bottom <= 750
    assert browser.evaluate("document.getElementById('heat').getBoundingClientRect().width") > 100
    assert re.fullmatch(r"\d+ (m|km)", browser.evaluate("document.getElementById('scale-label').textContent"))

    shot = browser.screenshot(tmp_path / "map.png")
    assert shot[:8] == b"\x89PNG\r\n\x1a\n"
    with_spans = _colourful_pixels(shot)
    browser.evaluate("document.getElementById('spans').style.display = 'none'")
    without = _colourful_pixels(browser.screenshot(tmp_path / "bare.png"))
    browser.evaluate("document.getElementById('spans').style.display = ''")
    assert with_spans - without > 2000, (with_spans, without)

    # hover over span 0: the tooltip shows its id, cells, area and noisy mass
    stats = span_stats(model)
    x, y = browser.evaluate("""(() => { const p = document.querySelector('path.span[data-id="0"]');
        const r = p.getBoundingClientRect();
        for (let i = 1; i < 20; i++) for (let j = 1; j < 20; j++) {
          const x = r.left + r.width * i / 20, y = r.top + r.height * j / 20;
          if (document.elementFromPoint(x, y) === p) return [x, y]; }
        return null; })()""")
    browser.mouse("mouseMoved", x, y)
    tip = browser.evaluate("document.getElementById('tooltip').innerText")
    assert browser.evaluate("getComputedStyle(document.getElementById('tooltip')).display") == "block"
    assert "span 0" in tip
    assert f"cells: {stats.n_cells[0]:,}" in tip and "area: 62,500 m²" in tip
    assert f"noisy mass: {round(stats.noisy_mass[0]):,}" in tip

    # wheel zooms in about the cursor; dragging pans
    k0 = float(browser.evaluate("document.getElementById('map').dataset.scale"))
    browser.mouse("mouseWheel", 500, 375, deltaX=0, deltaY=-300)
    k1 = float(
        browser.wait_for(
            f"document.getElementById('map').dataset.scale != '{k0}' && "
            "document.getElementById('map').dataset.scale"
        )
    )
    assert k1 > k0 * 1.5
    before = browser.evaluate("document.getElementById('view').getAttribute('transform')")
    browser.mouse("mousePressed", 400, 300, button="left", clickCount=1)
    browser.mouse("mouseMoved", 450, 340, button="left", buttons=1)
    browser.mouse("mouseReleased", 450, 340, button="left", clickCount=1)
    after = browser.evaluate("document.getElementById('view').getAttribute('transform')")
    (tx0, ty0), (tx1, ty1) = (
        map(float, re.search(r"translate\(([-\d.e]+) ([-\d.e]+)\)", t).groups()) for t in (before, after)
    )
    assert (tx1 - tx0, ty1 - ty0) == pytest.approx((50, 40))

    assert browser.console_errors() == []
    assert all(u.startswith(("file:", "data:")) for u in browser.requested_urls())


@pytest.mark.browser
def test_the_browser_check_sees_console_errors(browser, tmp_path):
    """The harness above would notice a broken page (so its assertion can fail)."""
    page = tmp_path / "broken.html"
    page.write_text(
        "<!DOCTYPE html><link rel='icon' href='data:,'><script>console.error('boom');"
        "undefinedFunction();</script>"
    )
    browser.open(page.resolve().as_uri())
    errors = browser.console_errors()
    assert any("boom" in e for e in errors) and any("undefinedFunction" in e for e in errors)


def _rects(browser, selector):
    return browser.evaluate(f"""Array.from(document.querySelectorAll({json.dumps(selector)})).map(e => {{
        const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; }})""")


def _overlap(a, b):
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _open(browser, tmp_path, model, name="map.html", **kw):
    path = write_map(model, tmp_path / name, **kw)
    browser.open(path.resolve().as_uri())
    browser.wait_for("document.documentElement.dataset.ready === '1'")


def _wide_model():
    """14 spans of different sizes, spread over a wide box that reaches the
    top-left corner (where the info panel sits)."""
    sides = [1, 5, 2, 7, 3, 1, 6, 2, 4, 8, 1, 3, 2, 5]
    spans = [square(4 + 16 * (i % 7), 4 + 16 * (i // 7), s) for i, s in enumerate(sides)]
    return hand_model(spans, shape=(120, 40), width=0.05, geo=True), sides


@pytest.mark.browser
def test_the_panel_covers_no_axis_label(browser, tmp_path):
    """Issue 23: the info panel covered the top labels of the latitude axis."""
    for model in (_geo_model(), _wide_model()[0]):
        _open(browser, tmp_path, model)
        (panel,) = _rects(browser, "#panel")
        labels = _rects(browser, "#axes text")
        assert len(labels) >= 6  # ticks on both axes and the two axis names
        assert not [r for r in labels if _overlap(r, panel)], (panel, labels)
        # and no span id hides under it
        assert not [r for r in _rects(browser, "#ids text") if _overlap(r, panel)]
        # the labels sit in the gutters, outside the plot area
        (plot,) = _rects(browser, "#map")
        ticks = browser.evaluate("""Array.from(document.querySelectorAll('#axes text.tick-label')).map(t => {
            const r = t.getBoundingClientRect();
            return [t.dataset.axis, r.left, r.top, r.right, r.bottom]; })""")
        assert all(r[3] <= plot[0] for r in ticks if r[0] == "y")
        assert all(r[2] >= plot[3] for r in ticks if r[0] == "x")


def _visible(browser):
    """The part of the model plane shown in the plot area: (x0, y0, x1, y1)."""
    return browser.evaluate("""(() => {
        const m = document.getElementById('map'), r = m.getBoundingClientRect();
        const t = document.getElementById('view').getAttribute('transform');
        const parts = t.match(/translate\\(([-\\d.e]+) ([-\\d.e]+)\\) scale\\(([-\\d.e]+)\\)/);
        const [, tx, ty, k] = parts.map(Number);
        return [-tx / k, (ty - r.height) / k, (r.width - tx) / k, ty / k]; })()""")


def _assert_view_in_box(browser, box, geo):
    x0, y0, x1, y1 = _visible(browser)
    for lo, hi, b_lo, b_hi in ((x0, x1, box[0], box[2]), (y0, y1, box[1], box[3])):
        tol = 1e-9 * (b_hi - b_lo)
        # inside the box, or (larger than it) holding all of it
        assert (b_lo - tol <= lo and hi <= b_hi + tol) or (lo <= b_lo + tol and b_hi - tol <= hi), (
            lo,
            hi,
            b_lo,
            b_hi,
        )
    ticks = browser.evaluate("""Array.from(document.querySelectorAll('#axes text.tick-label')).map(
        t => [t.dataset.axis, Number(t.dataset.value)])""")
    lon = [geo.inverse(np.array([[box[0], box[1]], [box[2], box[3]]]))[:, i] for i in (0, 1)]
    assert ticks
    for axis, v in ticks:
        lo, hi = lon[0] if axis == "x" else lon[1]
        assert lo - 1e-9 <= v <= hi + 1e-9, (axis, v, lo, hi)


@pytest.mark.browser
def test_the_view_and_the_axes_stay_in_the_public_box(browser, tmp_path):
    """Issue 23: the axes ran past the public box (to -122.15 on the full
    Cabs data, whose box ends at -122.3)."""
    from dpdbscan.geometry.projection import projection_of

    model, _ = _wide_model()
    _open(browser, tmp_path, model)
    cfg = browser.evaluate("JSON.parse(document.getElementById('dpdbscan-config').textContent)")
    g = model.grid
    assert cfg["box"] == pytest.approx([*g.lower, *g.upper])  # the public bounds, not the last cell's edge
    geo = projection_of(model)
    _assert_view_in_box(browser, cfg["box"], geo)
    for _ in range(6):  # zoom out as far as the map goes
        browser.mouse("mouseWheel", 600, 300, deltaX=0, deltaY=800)
    _assert_view_in_box(browser, cfg["box"], geo)
    k_out = float(browser.evaluate("document.getElementById('map').dataset.scale"))
    browser.evaluate("document.getElementById('fit-box').click()")
    assert float(browser.evaluate("document.getElementById('map').dataset.scale")) == pytest.approx(k_out)
    for _ in range(4):  # zoom in, then drag far towards the north-west
        browser.mouse("mouseWheel", 600, 300, deltaX=0, deltaY=-400)
    for start, end in (((300, 300), (900, 700)), ((700, 200), (100, 200))):
        browser.mouse("mousePressed", *start, button="left", clickCount=1)
        browser.mouse("mouseMoved", *end, button="left", buttons=1)
        browser.mouse("mouseReleased", *end, button="left", clickCount=1)
        _assert_view_in_box(browser, cfg["box"], geo)
    assert browser.console_errors() == []


@pytest.mark.browser
def test_the_largest_spans_carry_their_ids_on_the_map(browser, tmp_path):
    model, sides = _wide_model()
    _open(browser, tmp_path, model)
    drawn = browser.evaluate("""Array.from(document.querySelectorAll('#ids text')).map(t => {
        const r = t.getBoundingClientRect(), s = getComputedStyle(t);
        const hit = document.elementFromPoint((r.left + r.right) / 2, (r.top + r.bottom) / 2);
        return [t.textContent, hit && hit.dataset ? hit.dataset.id : null, parseFloat(s.fontSize),
                s.fontWeight]; })""")
    largest = sorted(range(len(sides)), key=lambda i: (-sides[i], i))[:10]
    assert sorted(int(d[0]) for d in drawn) == sorted(largest)
    k = float(browser.evaluate("document.getElementById('map').dataset.scale"))
    for text, under, font, weight in drawn:
        # written on its own span, or beside a span drawn smaller than 24 pixels (it would hide it)
        assert under == text or sides[int(text)] * model.grid.width * k < 24
        assert font >= 12 and int(weight) >= 700  # readable at the first view
    # fewer when asked
    path = tmp_path / "three.html"
    path.write_text(map_html(model, n_labels=3))
    browser.open(path.resolve().as_uri())
    browser.wait_for("document.documentElement.dataset.ready === '1'")
    ids = browser.evaluate("Array.from(document.querySelectorAll('#ids text')).map(t => t.textContent)")
    assert sorted(map(int, ids)) == sorted(largest[:3])


@pytest.mark.browser
def test_a_small_span_s_id_is_written_beside_it_on_the_map(browser, tmp_path):
    """A place a few hundred metres wide in a city's box is drawn a few
    pixels wide at the first view, and its id (bold 12 px, with a halo) hid
    it: a map of Rome-sized stops showed ids and no spans. The id of a
    small span with no other near it goes beside it; a large span's, and a
    small one's in a crowd, stays on it."""
    m = hand_model([square(5, 5, 1), square(60, 20, 30), square(100, 60, 1), square(101, 60, 1)],
                   shape=(120, 100), width=0.05, geo=True)  # fmt: skip
    _open(browser, tmp_path, m)
    drawn = browser.evaluate("""Array.from(document.querySelectorAll('#ids text')).map(t => {
        const r = t.getBoundingClientRect();
        const s = document.querySelector('path.span[data-id="' + t.dataset.id + '"]').getBoundingClientRect();
        const meets = r.left < s.right && r.right > s.left && r.top < s.bottom && r.bottom > s.top;
        const hit = document.elementFromPoint((r.left + r.right) / 2, (r.top + r.bottom) / 2);
        return [t.dataset.id, meets, hit && hit.dataset ? hit.dataset.id : null]; })""")
    where = {int(i): (meets, under) for i, meets, under in drawn}
    assert 0 in where and 1 in where
    assert where[0][0] is False  # beside the small span far from the others: not over it
    assert where[1][1] == "1"  # on the large one
    crowd = [i for i in (2, 3) if i in where]
    assert crowd and all(where[i][0] for i in crowd)  # on its span in the crowd
    assert browser.console_errors() == []


@pytest.mark.browser
def test_the_browser_paints_each_span_in_its_picture_colour(browser, tmp_path):
    from dpdbscan.render.mapstyle import span_hex

    model = _geo_model()
    _open(browser, tmp_path, model)
    fills = browser.evaluate("""Array.from(document.querySelectorAll('path.span')).map(
        p => [p.dataset.id, getComputedStyle(p).fill])""")
    want = {
        str(s): "rgb({}, {}, {})".format(*(int(h[i : i + 2], 16) for i in (1, 3, 5)))
        for s, h in enumerate(span_hex(model))
    }
    assert dict(fills) == want


@pytest.mark.browser
def test_the_context_layer_draws_under_the_spans_inside_the_box(browser, tmp_path):
    from dpdbscan.render.context import load_context

    model = _geo_model()
    # a line from far outside the box across it, and the box's own outline
    lo, hi = model.grid.lower, model.grid.upper
    from dpdbscan.geometry.projection import projection_of

    (a, b) = projection_of(model).inverse(np.array([lo - 5, hi + 5]))
    ring = projection_of(model).inverse(
        np.array([[lo[0], lo[1]], [hi[0], lo[1]], [hi[0], hi[1]], [lo[0], hi[1]], [lo[0], lo[1]]])
    )
    gj = {
        "type": "FeatureCollection",
        "features": [
            {"type": "Feature", "geometry": {"type": "LineString", "coordinates": [a.tolist(), b.tolist()]}},
            {"type": "Feature", "geometry": {"type": "Polygon", "coordinates": [ring.tolist()]}},
        ],
    }
    _open(browser, tmp_path, model, context=load_context(gj, model))
    browser.evaluate("document.getElementById('fit-box').click()")
    (line,) = _rects(browser, "#context path")
    (box,) = _rects(browser, "#outside rect.frame")  # the public box on screen
    assert line[2] - line[0] > 100 and line[3] - line[1] > 100
    # drawn, as the screenshot shows: darker pixels where the diagonal crosses the box
    shot = browser.screenshot(tmp_path / "ctx.png")
    browser.evaluate("document.getElementById('show-context').click()")
    assert browser.evaluate("getComputedStyle(document.getElementById('context')).display") == "none"
    bare = browser.screenshot(tmp_path / "bare.png")
    diff = _changed_pixels(shot, bare)
    assert diff.sum() > 200
    ys, xs = np.nonzero(diff)
    assert xs.min() >= box[0] - 2 and xs.max() <= box[2] + 2  # clipped to the box
    assert ys.min() >= box[1] - 2 and ys.max() <= box[3] + 2
    assert browser.console_errors() == []


def _changed_pixels(a: bytes, b: bytes) -> np.ndarray:
    mpl_image = pytest.importorskip("matplotlib.image")
    import io

    x, y = (mpl_image.imread(io.BytesIO(p), format="png")[..., :3] for p in (a, b))
    return np.any(np.abs(x - y) > 0.05, axis=2)
