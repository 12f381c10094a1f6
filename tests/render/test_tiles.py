"""The tile basemap of the HTML map (``dpdbscan map --tiles URL``), in a real
headless Chromium with tiles served from a local folder by an HTTP server
on 127.0.0.1.

Each tile of the folder is one flat colour (magenta), so a screenshot shows
where tiles were drawn; which tile lies under a span's id says whether the
tiles are placed at their longitude/latitude. Skipped without Chromium
unless DPDBSCAN_REQUIRE_BROWSER=1 (``make test-browser``).
"""

from __future__ import annotations

import functools
import http.server
import io
import math
import os
import threading

import numpy as np
import pytest

from dpdbscan.cli import main
from dpdbscan.geometry.projection import projection_of
from dpdbscan.model import save_model
from dpdbscan.model.stats import span_stats
from dpdbscan.render.tiles import Tiles
from dpdbscan.render.webmap import _png, map_html, write_map

from cdp import Browser, find_chromium
from spanmodels import hand_model, square

MAGENTA = (255, 0, 255)
MAX_ZOOM = 17  # the folder's deepest level: about 150 tiles over the model's 2 km box


def _tile_of(lon: float, lat: float, z: int) -> tuple[int, int]:
    n = 2**z
    r = math.radians(lat)
    return int((lon + 180) / 360 * n), int((1 - math.asinh(math.tan(r)) / math.pi) / 2 * n)


@pytest.fixture(scope="module")
def tile_server(tmp_path_factory):
    """A folder of flat magenta tiles over the model's box (zoom 0 to
    MAX_ZOOM), served on 127.0.0.1 at a free port; records each path asked."""
    yield from _serve_tiles(tmp_path_factory.mktemp("tiles"), _geo_model())


@pytest.fixture(scope="module")
def tile_server_180(tmp_path_factory):
    """:func:`tile_server` over :func:`_model_across_180`'s box: the world's
    last tile columns west of the antimeridian, its first ones east of it."""
    yield from _serve_tiles(tmp_path_factory.mktemp("tiles180"), _model_across_180())


def _serve_tiles(root, model):
    rgba = np.zeros((256, 256, 4), dtype=np.uint8)
    rgba[...] = (*MAGENTA, 255)
    png = _png(rgba)
    grid = model.grid
    (lon0, lat0), (lon1, lat1) = projection_of(model).inverse(np.array([grid.lower, grid.upper]))
    for z in range(MAX_ZOOM + 1):
        n = 2**z
        (xa, yb), (xb, ya) = _tile_of(lon0, lat0, z), _tile_of(lon1, lat1, z)
        for x in range(xa - 1, xb + 2):
            for y in range(ya - 1, yb + 2):
                (root / str(z) / str(x % n)).mkdir(parents=True, exist_ok=True)
                (root / str(z) / str(x % n) / f"{y}.png").write_bytes(png)
    asked: list[tuple[str, int]] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, fmt, *args):  # quiet; keep what was asked and answered
            if len(args) >= 2:
                asked.append((self.path, int(args[1]) if str(args[1]).isdigit() else 0))

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Handler, directory=str(root))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", asked
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _model_across_180():
    """A release over a box across the antimeridian (179.96 to 180.04 east), with a span either
    side of the line (points written -179.99 east of it, as a GPS writes them)."""
    from dpdbscan import fit_lonlat

    rng = np.random.default_rng(3)
    P = np.vstack(
        [rng.normal(c, [0.0006, 0.0004], (3000, 2)) for c in ([179.985, -16.70], [180.015, -16.70])]
    )
    P[P[:, 0] > 180, 0] -= 360
    return fit_lonlat(P, bounds=(179.96, -16.72, 180.04, -16.68), eps="100m", min_samples=50, random_state=0)


def _geo_model():
    values = np.zeros((40, 40), dtype=np.int64)
    values[5:30, 5:30] = 20
    spans = [square(16, 16, 10), square(60, 30, 6)]
    return hand_model(spans, shape=(40, 40), width=0.05, subcells=2, values=values, geo=True)


def _magenta(png: bytes) -> int:
    mpl_image = pytest.importorskip("matplotlib.image")
    img = mpl_image.imread(io.BytesIO(png), format="png")[..., :3]
    return int(np.count_nonzero((img[..., 0] > 0.6) & (img[..., 1] < 0.35) & (img[..., 2] > 0.6)))


# --------------------------------------------------------------------------- #
# without a browser


def test_the_url_template_is_checked():
    assert Tiles("https://t.example.org/{z}/{x}/{y}.png").credit == "tiles: t.example.org"
    for bad, says in [
        ("t.example.org/{z}/{x}/{y}.png", "http(s) URL template"),
        ("https://t.example.org/{z}/{x}.png", "needs {y}"),
        ('https://t.example.org/{z}/{x}/{y}.png?a="b"', "quotes"),
    ]:
        with pytest.raises(ValueError, match=r"--tiles"):
            Tiles(bad)
        try:
            Tiles(bad)
        except ValueError as e:
            assert says in str(e)
    with pytest.raises(ValueError, match="maximum zoom"):
        Tiles("https://t.example.org/{z}/{x}/{y}.png", max_zoom=30)


def test_the_offline_map_stays_the_default():
    page = map_html(_geo_model())
    assert '"tiles": null' in page and '<div id="attribution">' not in page and 'id="show-tiles"' not in page
    tiled = map_html(_geo_model(), tiles=Tiles("https://t.example.org/{z}/{x}/{y}.png", "(c) someone"))
    assert '"url": "https://t.example.org/{z}/{x}/{y}.png"' in tiled
    assert '<div id="attribution">(c) someone</div>' in tiled and "tiles from t.example.org" in tiled


def test_tiles_need_a_geographic_model():
    plain = hand_model([square(2, 2, 3)], shape=(10, 10))
    with pytest.raises(ValueError, match="geographic model"):
        map_html(plain, tiles=Tiles("https://t.example.org/{z}/{x}/{y}.png"))


def test_the_map_command_takes_tiles_and_an_attribution(tmp_path, capsys):
    save_model(_geo_model(), tmp_path / "m.json")
    url = "https://t.example.org/{z}/{x}/{y}.png"
    assert (
        main(
            [
                "map",
                str(tmp_path / "m.json"),
                "-o",
                str(tmp_path / "m.html"),
                "--tiles",
                url,
                "--attribution",
                "© the tiles' owners",
                "--tiles-max-zoom",
                "17",
            ]
        )
        == 0
    )
    page = (tmp_path / "m.html").read_text()
    assert '"max_zoom": 17' in page and "© the tiles&#x27; owners" in page
    assert main(["map", str(tmp_path / "m.json"), "-o", str(tmp_path / "x.html"), "--attribution", "x"]) == 2
    assert "go with --tiles" in capsys.readouterr().err and not (tmp_path / "x.html").exists()
    plain = hand_model([square(2, 2, 3)], shape=(10, 10))
    save_model(plain, tmp_path / "p.json")
    assert main(["map", str(tmp_path / "p.json"), "-o", str(tmp_path / "p.html"), "--tiles", url]) == 2
    assert "needs a geographic model" in capsys.readouterr().err and not (tmp_path / "p.html").exists()


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


@pytest.mark.browser
def test_the_basemap_loads_from_a_local_tile_server_and_sits_at_its_place(browser, tile_server, tmp_path):
    base, asked = tile_server
    model = _geo_model()
    tiles = Tiles(base + "/{z}/{x}/{y}.png", "© local test tiles", max_zoom=MAX_ZOOM)
    path = write_map(model, tmp_path / "tiled.html", tiles=tiles)
    asked.clear()
    browser.open(path.resolve().as_uri())
    browser.wait_for("document.documentElement.dataset.ready === '1'")
    n = browser.wait_for("document.querySelectorAll('image.tile').length")
    assert 1 <= n <= 400
    # the tiles arrive: the screenshot turns magenta where no span covers them
    shot, seen = b"", 0
    for _ in range(50):
        shot = browser.screenshot(tmp_path / "tiled.png")
        seen = _magenta(shot)
        if seen > 20_000:
            break
        browser.evaluate("new Promise(r => setTimeout(r, 100))")
    assert seen > 20_000, seen
    # every tile asked for was served from the folder, at the page's zoom
    z = int(browser.evaluate("document.getElementById('map').dataset.tileZoom"))
    assert 0 <= z <= MAX_ZOOM and asked
    assert all(p.startswith(f"/{z}/") and p.endswith(".png") and code == 200 for p, code in asked), asked
    keys = browser.evaluate("Array.from(document.querySelectorAll('image.tile')).map(e => e.dataset.tile)")
    assert {p[1:-4] for p, _ in asked} >= set(keys)

    # placed at its longitude/latitude: the tile under span 0's id is the one
    # that holds the id's place (its anchor) at that zoom
    proj = projection_of(model)
    lon, lat = proj.inverse(span_stats(model).anchor[:1])[0]
    under = browser.evaluate("""(() => { const t = document.querySelector('#ids text[data-id="0"]');
        const x = +t.getAttribute('x'), y = +t.getAttribute('y');
        const e = document.elementsFromPoint(x, y).find(e => e.classList.contains('tile'));
        return e ? e.dataset.tile : null; })()""")
    tx, ty = _tile_of(lon, lat, z)
    assert under == f"{z}/{tx}/{ty}"
    # neighbouring tiles meet edge to edge (no gap, no overlap)
    rects = browser.evaluate("""Array.from(document.querySelectorAll('image.tile')).map(e => {
        const r = e.getBoundingClientRect(); return [e.dataset.tile, r.left, r.top, r.right, r.bottom]; })""")
    by = {k: r for k, *r in rects}
    pairs = 0
    for k, (_left, _top, r, b) in by.items():
        zz, x, y = map(int, k.split("/"))
        right = by.get(f"{zz}/{x + 1}/{y}")
        if right:
            assert right[0] == pytest.approx(r, abs=0.5)
            pairs += 1
        below = by.get(f"{zz}/{x}/{y + 1}")
        if below:
            assert below[1] == pytest.approx(b, abs=0.5)
            pairs += 1
    assert pairs >= 1 or len(by) == 1

    # the credit is on the page, and the basemap can be switched off
    assert browser.evaluate("document.getElementById('attribution').innerText") == "© local test tiles"
    browser.evaluate("document.getElementById('show-tiles').click()")
    assert _magenta(browser.screenshot(tmp_path / "off.png")) < 100
    browser.evaluate("document.getElementById('show-tiles').click()")

    # zooming in asks for deeper tiles, up to the source's deepest level
    browser.mouse("mouseWheel", 500, 375, deltaX=0, deltaY=-600)
    browser.wait_for(f"document.getElementById('map').dataset.tileZoom != '{z}'")
    z2 = int(browser.evaluate("document.getElementById('map').dataset.tileZoom"))
    assert z < z2 <= MAX_ZOOM
    for _ in range(6):
        browser.mouse("mouseWheel", 500, 375, deltaX=0, deltaY=-600)
    assert int(browser.evaluate("document.getElementById('map').dataset.tileZoom")) == MAX_ZOOM
    assert browser.console_errors() == []


@pytest.mark.browser
def test_without_tiles_the_page_asks_no_server(browser, tile_server, tmp_path):
    _, asked = tile_server
    asked.clear()
    path = write_map(_geo_model(), tmp_path / "offline.html")
    browser.open(path.resolve().as_uri())
    browser.wait_for("document.documentElement.dataset.ready === '1'")
    assert browser.evaluate("document.querySelectorAll('image.tile').length") == 0
    assert not asked and all(u.startswith(("file:", "data:")) for u in browser.requested_urls())


@pytest.mark.browser
def test_a_box_across_the_antimeridian_gets_its_tiles_east_of_the_line(browser, tile_server_180, tmp_path):
    # east of 180 the tiles are the world's first columns again: asked as x modulo 2^z, placed
    # east of the line (they were clamped to the last column: no basemap east of the line)
    base, asked = tile_server_180
    model = _model_across_180()
    assert model.n_spans == 2
    tiles = Tiles(base + "/{z}/{x}/{y}.png", "© local test tiles", max_zoom=MAX_ZOOM)
    path = write_map(model, tmp_path / "tiled180.html", tiles=tiles)
    asked.clear()
    browser.open(path.resolve().as_uri())
    browser.wait_for("document.documentElement.dataset.ready === '1'")
    browser.wait_for("document.querySelectorAll('image.tile').length")
    z = int(browser.evaluate("document.getElementById('map').dataset.tileZoom"))
    n = 2**z
    keys = browser.evaluate("Array.from(document.querySelectorAll('image.tile')).map(e => e.dataset.tile)")
    columns = {int(k.split("/")[1]) for k in keys}
    assert any(x >= n for x in columns) and any(x < n for x in columns), (z, sorted(columns))
    for _ in range(50):
        if asked and all(code == 200 for _, code in asked) and len(asked) >= len(keys):
            break
        browser.evaluate("new Promise(r => setTimeout(r, 100))")
    assert asked and all(code == 200 for _, code in asked), asked
    assert all(int(p.split("/")[2]) < n for p, _ in asked)  # every tile asked exists in the world
    # the span east of the line lies on a tile placed east of it
    proj = projection_of(model)
    anchors = proj.inverse(span_stats(model).anchor)
    east = int(np.argmax(anchors[:, 0]))
    assert anchors[east, 0] > 180
    under = browser.evaluate(f"""(() => {{ const t = document.querySelector('#ids text[data-id="{east}"]');
        const x = +t.getAttribute('x'), y = +t.getAttribute('y');
        const e = document.elementsFromPoint(x, y).find(e => e.classList.contains('tile'));
        return e ? e.dataset.tile : null; }})()""")
    tx, ty = _tile_of(anchors[east, 0], anchors[east, 1], z)
    assert under == f"{z}/{tx}/{ty}" and tx >= n
    assert browser.console_errors() == []
