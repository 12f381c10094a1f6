"""The context layer (dpdbscan.render.context): GeoJSON lines under the spans
of the pictures and the map, clipped to the public box and limited in size."""

import json
import re
from pathlib import Path

import numpy as np
import pytest

from dpdbscan.cli import main
from dpdbscan.geometry.projection import projection_of
from dpdbscan.model import save_model
from dpdbscan.render import context as C
from dpdbscan.render.webmap import map_html

from spanmodels import SF_BOX, hand_model, square

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "sf_context.geojson"


def _plain(shape=(100, 100)):
    """A plain model over [0, 100]^2 in cells of width 1 (span cells too)."""
    return hand_model([square(10, 10, 3)], shape=shape)


def _geo():
    # the San Francisco box of the examples, cells of 50 m, sub-cells of 25 m
    return hand_model([square(40, 40, 6)], shape=(180, 225), width=0.05, subcells=2, geo=True)


def _fc(*geometries, **extra):
    return {
        "type": "FeatureCollection",
        **extra,
        "features": [{"type": "Feature", "properties": {}, "geometry": g} for g in geometries],
    }


def _line(*pts):
    return {"type": "LineString", "coordinates": [list(p) for p in pts]}


def _write(tmp_path, obj, name="ctx.geojson"):
    path = tmp_path / name
    path.write_text(obj if isinstance(obj, str) else json.dumps(obj))
    return path


def test_the_example_file_is_the_box_and_two_streets_in_lon_lat():
    m = _geo()
    ctx = C.load_context(EXAMPLE, m)
    assert ctx.n_lines == 3 and ctx.n_points == 0
    proj = projection_of(m)
    box_ring, market, embarcadero = (proj.inverse(line) for line in ctx.lines())
    # the polygon's ring is the box, corner for corner, to within the snapping
    tol = C.SNAP_CELLS * m.grid.width / proj.kx  # one snap step, in degrees of longitude
    np.testing.assert_allclose(
        box_ring,
        [[-122.48, 37.72], [-122.38, 37.72], [-122.38, 37.82], [-122.48, 37.82], [-122.48, 37.72]],
        atol=tol,
    )
    assert market[0] == pytest.approx([-122.3936, 37.7955], abs=tol)
    assert embarcadero.shape[0] == 8


def test_lines_are_clipped_to_the_box_and_split_where_they_leave_it():
    m = _plain()
    ctx = C.load_context(
        _fc(
            _line((-50, 50), (-10, 50), (50, 60), (150, 50)),  # crosses the box: 2 of 3 segments kept
            _line((200, 200), (300, 300)),  # far outside: dropped
            _line((20, 20), (20, 300), (30, 300), (30, 20)),  # leaves the box and comes back: 2 pieces
        ),
        m,
    )
    lines = ctx.lines()
    assert [line.tolist() for line in lines] == [
        [[-10, 50], [50, 60], [150, 50]],  # the segments that meet the box, with their ends
        [[20, 20], [20, 300]],
        [[30, 300], [30, 20]],
    ]
    assert ctx.n_read == 10


def _distance_to_polyline(points, line):
    a, b = line[:-1], line[1:]
    seg = b - a
    rel = points[:, None, :] - a[None]
    t = np.clip(np.sum(rel * seg, axis=2) / np.maximum(np.sum(seg * seg, axis=1), 1e-300), 0, 1)
    return np.min(np.hypot(*np.moveaxis(rel - t[..., None] * seg, 2, 0)), axis=1)


def test_lines_are_snapped_and_simplified_within_a_bound():
    m = _plain()
    step = C.SNAP_CELLS * m.grid.width
    t = np.linspace(0, 1, 1001)
    straight = np.column_stack([5 + 80 * t, 5 + 40 * t])  # 1001 points on one straight line
    rng = np.random.default_rng(0)
    wiggly = np.column_stack([50 + 30 * t, 60 + 10 * np.sin(9 * t)]) + rng.normal(0, 1e-3, (1001, 2))
    ring = [[10, 10], [10, 10], [20, 10], [20, 20], [10, 20], [10, 10]]  # a repeated vertex
    ctx = C.load_context(
        _fc(
            {"type": "LineString", "coordinates": straight.tolist()},
            {"type": "LineString", "coordinates": wiggly.tolist()},
            {"type": "Polygon", "coordinates": [ring]},
        ),
        m,
    )
    a, b, c = ctx.lines()
    assert a.tolist() == [[5, 5], [85, 45]]
    assert c.tolist() == [[10, 10], [20, 10], [20, 20], [10, 20], [10, 10]]
    # the wiggle keeps its shape: every point read lies within one step (the
    # simplification) plus half a step's diagonal (the snapping) of the line drawn
    assert 10 < b.shape[0] < 200
    assert np.max(_distance_to_polyline(wiggly, b)) <= step * (1 + np.sqrt(0.5)) + 1e-12
    # and the line drawn is made of snapped points read
    kept = {tuple(v) for v in np.rint((b - ctx.origin) / step).astype(int).tolist()}
    assert kept <= {tuple(v) for v in np.rint((wiggly - ctx.origin) / step).astype(int).tolist()}


def test_multi_geometries_collections_and_altitudes_are_read_and_points_skipped():
    m = _plain()
    ctx = C.load_context(
        {
            "type": "GeometryCollection",
            "geometries": [
                {"type": "MultiLineString", "coordinates": [[[1, 1], [5, 1]], [[1, 3], [5, 3, 120.0]]]},
                {"type": "MultiPolygon", "coordinates": [[[[40, 40], [60, 40], [60, 60], [40, 40]]]]},
                {"type": "Point", "coordinates": [3, 3]},
                {"type": "MultiPoint", "coordinates": [[3, 3], [4, 4]]},
            ],
        },
        m,
    )
    assert ctx.n_lines == 3 and ctx.n_points == 2
    assert "2 point(s) skipped" in ctx.describe() and "3 line(s)" in ctx.describe()


SECRET = "s3cr3t-t0ken"


@pytest.mark.parametrize(
    "content, match",
    [
        ('{"type": "FeatureCollection", ' + SECRET, "not valid JSON"),
        (b"\xff\xfe" + SECRET.encode("utf-16-le"), "not UTF-8"),
        ({"type": SECRET, "coordinates": []}, "expected a FeatureCollection, a Feature or a geometry"),
        ({"type": "FeatureCollection", "features": SECRET}, "without a list of features"),
        (_fc({"type": "LineString", "coordinates": [[1, SECRET], [2, 2]]}), "not two or more numbers"),
        (_fc({"type": "LineString", "coordinates": [[1, 1], [2]]}), "not two or more numbers"),
        (_fc({"type": "Point", "coordinates": [1, 1]}), "holds no line or polygon"),
        (_fc(_line((500, 500), (600, 600))), "none of its lines comes into the public box"),
    ],
)
def test_bad_files_get_one_clear_error_that_quotes_nothing_from_them(tmp_path, content, match):
    path = tmp_path / "bad.geojson"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        _write(tmp_path, content, "bad.geojson")
    with pytest.raises(ValueError, match=match) as info:
        C.load_context(path, _plain())
    assert SECRET not in str(info.value) and str(path) in str(info.value)


def test_geographic_models_need_lon_lat(tmp_path):
    m = _geo()
    in_metres = _fc(_line((550_000, 4_180_000), (551_000, 4_181_000)))
    with pytest.raises(ValueError, match="not longitude and latitude"):
        C.load_context(in_metres, m)
    utm = _fc(
        _line((-122.45, 37.75), (-122.40, 37.78)),
        crs={"type": "name", "properties": {"name": "urn:ogc:def:crs:EPSG::32610"}},
    )
    with pytest.raises(ValueError, match="other than longitude/latitude"):
        C.load_context(utm, m)
    wgs84 = dict(utm, crs={"type": "name", "properties": {"name": "urn:ogc:def:crs:OGC:1.3:CRS84"}})
    assert C.load_context(wgs84, m).n_lines == 1


def test_files_too_big_are_refused_before_and_after_reading(tmp_path, monkeypatch):
    path = _write(tmp_path, _fc(_line((1, 1), (50, 50), (1, 99), (99, 99))))
    monkeypatch.setattr(C, "MAX_CONTEXT_BYTES", path.stat().st_size - 1)
    with pytest.raises(ValueError, match="too big for a context layer: 0 MB .*clip it"):
        C.load_context(path, _plain())
    monkeypatch.setattr(C, "MAX_CONTEXT_BYTES", 2**20)
    monkeypatch.setattr(C, "MAX_CONTEXT_VERTICES", 3)
    with pytest.raises(ValueError, match="4 vertices in the public box after simplifying \\(at most 3\\)"):
        C.load_context(path, _plain())
    monkeypatch.setattr(C, "MAX_CONTEXT_VERTICES", 4)
    assert C.load_context(path, _plain()).vertices.shape == (4, 2)


def _context_d(page):
    group = re.search(r'<g id="context" transform="matrix\(([^)]*)\)"><path d="([^"]*)"/></g>', page)
    assert group is not None
    return [float(v) for v in group.group(1).split()], group.group(2)


def test_the_map_embeds_the_lines_under_the_spans_with_a_switch():
    m = _geo()
    ctx = C.load_context(EXAMPLE, m)
    page = map_html(m, context=ctx)
    (a, _, _, d, e, f), path = _context_d(page)
    assert (a, d) == (pytest.approx(ctx.step), pytest.approx(-ctx.step))
    assert (e, f) == (pytest.approx(ctx.origin[0]), pytest.approx(-ctx.origin[1]))
    # the path decodes to the snapped vertices: M x y, then relative steps
    lines = []
    for sub in re.findall(r"M(-?\d+) (-?\d+)l([-\d ]*)", path):
        start = np.array([int(sub[0]), int(sub[1])])
        steps = np.array(sub[2].split(), dtype=np.int64).reshape(-1, 2)
        lines.append(np.vstack([start, start + np.cumsum(steps, axis=0)]))
    np.testing.assert_array_equal(np.vstack(lines), ctx.vertices)
    assert page.index('id="context"') < page.index('id="spans"')  # drawn first: under the spans
    assert 'id="show-context"' in page
    plain = map_html(m)
    assert 'id="context"' not in plain and 'id="show-context"' not in plain


def test_map_command_takes_context(tmp_path, capsys):
    m = _geo()
    save_model(m, tmp_path / "m.json")
    assert (
        main(["map", str(tmp_path / "m.json"), "-o", str(tmp_path / "m.html"), "--context", str(EXAMPLE)])
        == 0
    )
    out, err = capsys.readouterr()
    assert out.strip() == f"wrote {tmp_path / 'm.html'}"
    assert "context layer: 3 line(s)" in err
    _context_d((tmp_path / "m.html").read_text())
    bad = _write(tmp_path, {"type": "Feature", "geometry": {"type": "LineString", "coordinates": "x"}})
    assert main(["map", str(tmp_path / "m.json"), "-o", str(tmp_path / "n.html"), "--context", str(bad)]) == 2
    assert capsys.readouterr().err.strip().startswith("dpdbscan map: error: ")
    assert not (tmp_path / "n.html").exists()


def test_the_spans_picture_draws_the_context_between_heat_and_spans():
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from dpdbscan.render import plotting

    values = np.zeros((180, 225), dtype=np.int64)
    values[40:46, 40:46] = 500
    m = hand_model([square(80, 80, 12)], shape=(180, 225), width=0.05, subcells=2, values=values, geo=True)
    ax = plotting.plot_model(
        m, "spans", context=EXAMPLE, extent=(SF_BOX[0][0], SF_BOX[0][1], SF_BOX[1][0], SF_BOX[1][1])
    )
    (lines,) = [c for c in ax.collections if c.get_gid() == "context"]
    (heat,) = [i for i in ax.images if i.get_gid() == "heat"]
    (spans,) = [c for c in ax.collections if c.get_gid() == "spans"]
    assert heat.get_zorder() < lines.get_zorder() < spans.get_zorder()
    segs = lines.get_segments()  # in lon/lat, as the axes
    assert len(segs) == 3
    assert segs[1][0] == pytest.approx([-122.3936, 37.7955], abs=1e-4)
    assert "PRIVATE" not in ax.get_title()  # public input: still a release picture
    plt.close(ax.figure)


def test_picture_options_pass_a_context_file_on(tmp_path):
    """For the commands whose parser has --context (the map has its own):
    checked before any data is read, handed to plot_model."""
    import argparse

    from dpdbscan.cli.maps import picture_options

    ns = argparse.Namespace(size=None, extent=None, context=str(EXAMPLE), no_png=False)
    assert picture_options(ns) == {"context": str(EXAMPLE)}
    with pytest.raises(ValueError, match="no such file"):
        picture_options(argparse.Namespace(context=str(tmp_path / "missing.geojson")))
    with pytest.raises(ValueError, match="--context shape the PNG; they cannot go with --no-png"):
        picture_options(argparse.Namespace(context=str(EXAMPLE), no_png=True))
    assert picture_options(argparse.Namespace()) == {}
