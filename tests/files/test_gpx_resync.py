"""A broken track of one unit never hides another unit's points in a GPX
file of several tracks (issue 28's doors; docs/privacy.md §8, "GPX").

Before, XML that broke ended the read, so a unit that added one damaged
track to a file read with ``--unit track`` removed every later track, other
units' included. Worse, *valid* XML could be steered: a CDATA section, a
comment or an instruction opened in one unit's bytes ends at the first
``]]>``, ``-->`` or ``?>`` of any later unit (a CDATA description, a
"Paris --> Lyon" in a name), hiding the tracks between and handing the
rest of that later track to the first.

D is a GPX file of several tracks (one unit each) in four layouts. D' adds,
where a writer puts a track, the bytes of one unit "A" that an adversary
chose after its ``<trk>`` tag. The other units' points read from D' are D's
points, value for value, grouped the same (a track's number is its place,
so the numbers after A's move by the tracks A's bytes begin); A's bytes can
only add points of their own.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from pointfiles import FIT

from dpdbscan.files import gpxfile, read_input

from clirun import run

pytest.importorskip("pyarrow")

#: Where A's own points lie: rows there are A's, whatever track they land in.
A_LON = "116.55"


def _point(i: int, k: int) -> str:
    lon, lat = 116.3 + 0.001 * (i % 9), 39.9 + 0.001 * (k % 5)
    time = f"2008-10-23T02:{k:02d}:00Z"
    return f'<trkpt lat="{lat:.4f}" lon="{lon:.4f}"><ele>{i}.5</ele><time>{time}</time></trkpt>'


def _track(i: int, desc: str = "") -> str:
    return (
        f"<trk><name>u{i}</name>{desc}<trkseg>"
        + "".join(_point(i, k) for k in range(3 + i % 3))
        + "</trkseg></trk>"
    )


_HEAD = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<gpx version="1.1" xmlns="http://www.topografix.com/GPX/1/1">\n'
)
_WPTS = '<wpt lat="39.95" lon="116.35"><name>w</name></wpt>\r\n<wpt lat="39.96" lon="116.36"/>\r\n'
#: Innocent tracks whose text closes what another unit's bytes may open.
_CLOSERS = [
    "<desc><![CDATA[a <b>bold</b> one]]></desc>",
    "<desc>Paris --&gt; Lyon, Paris --> Lyon</desc>",
    "<cmt>why?> ok</cmt>",
    "<desc><![CDATA[x]]></desc><cmt>--></cmt>",
]
N = 10
LAYOUTS = {
    "one per line": (_HEAD, [_track(i) for i in range(N)], "\n", "</gpx>\n"),
    "one line": (_HEAD.replace("\n", ""), [_track(i) for i in range(N)], "", "</gpx>"),
    "waypoints first, CRLF": (_HEAD + _WPTS, [_track(i) for i in range(N)], "\r\n", "</gpx>\r\n"),
    "closers among them": (
        _HEAD,
        [_track(i, _CLOSERS[i % 4] if i % 2 else "") for i in range(N)],
        "\n",
        "</gpx>\n",
    ),
}
_A = f'<trkseg><trkpt lat="39.91" lon="{A_LON}"/>'
#: One unit's bytes, each from its <trk> tag on, not well-formed XML in its place or steering it.
BROKEN = {
    "open comment": f"<trk>{_A}<!-- ",
    "open CDATA": f"<trk><desc><![CDATA[ {_A}",
    "open instruction": f"<trk>{_A}<?x ",
    "open attribute": f'<trk>{_A}<trkpt lat="39.9" lon="{A_LON}" x="',
    "open start tag": f'<trk>{_A}<trkpt lat="39.9',
    "cut in a child": f'<trk>{_A}<trkpt lat="39.9" lon="{A_LON}"><ele>1</el',
    "early end of the root": f"<trk>{_A}</trkseg></trk></gpx>",
    "extra end tags": "<trk></trkseg></trk></trk></gpx></gpx>",
    "nested tracks, left open": f"<trk><trk><trk>{_A}",
    "undefined entity": f'<trk><trkseg><trkpt lat="39.9" lon="{A_LON}"><ele>&nope;</ele></trkpt>',
    "a DOCTYPE": f"<trk><!DOCTYPE x [<!ENTITY e \"<trkpt lat='1' lon='{A_LON}'/>\">]>&e;",
    "a bare <": "<trk><",
    "cut": "<trk><trkse",
    "a track tag in text": f"<trk><name>a <trk> b</name>{_A}",
    "a point in a point": f'<trk><trkseg><trkpt lat="39.9" lon="{A_LON}"><wpt lat="1" lon="2">',
    "garbage bytes": "<trk>\x01\x02 \ufffe <<&&; \udcff",
}


def _write(path, layout, tracks):
    head, _, sep, tail = LAYOUTS[layout]
    data = head + sep.join(tracks) + sep + tail
    path.write_bytes(data.encode("utf-8", "surrogateescape"))


def _others(got):
    """The rows that are not A's (their point, time and elevation), and
    their grouping: each row's track as the order in which tracks first
    appear (-1: none), so that a renumbering is no change."""
    lon = got.X[:, 0]
    keep = ~np.isclose(lon, float(A_LON))
    first: dict = {}
    groups = [
        -1 if u is None else first.setdefault(u, len(first)) for u, k in zip(got.units.to_pylist(), keep) if k
    ]
    times = [t for t, k in zip(got.companions[0].to_pylist(), keep) if k]
    return got.X[keep], groups, times


def _read(path, unit="track"):
    return read_input(path, unit=unit, also=("time",))


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("broken", list(BROKEN))
def test_one_units_broken_track_leaves_the_other_units_points_as_they_are(tmp_path, layout, broken):
    tracks = LAYOUTS[layout][1]
    path = tmp_path / "d.gpx"
    _write(path, layout, tracks)
    d = _read(path)
    n_points = sum(3 + i % 3 for i in range(N)) + (2 if "waypoints" in layout else 0)
    assert d.X.shape == (n_points, 2) and d.n_broken_points == 0
    want = _others(d)
    for at in (0, 1, N // 2, N):
        _write(path, layout, tracks[:at] + [BROKEN[broken]] + tracks[at:])
        X, groups, times = _others(_read(path))
        assert X.tobytes() == want[0].tobytes(), at
        assert groups == want[1] and times == want[2], at


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_at_event_level_one_broken_point_drops_alone(tmp_path, layout):
    """Each point framed alone: at event level (each row a unit), one
    point's broken bytes, wherever they are, drop that point and no other."""
    head, tracks, sep, tail = LAYOUTS[layout]
    path = tmp_path / "d.gpx"
    _write(path, layout, tracks)
    d = read_input(path)
    text = tracks[3]
    cut = text.index("<trkpt", text.index("<trkpt") + 1)  # the second point of the fourth track
    for bad in (
        '<trkpt lat="39.9" lon="116.55"><!-- ',
        '<trkpt lat="39.9" lon="116.55"><![CDATA[',
        "<trkpt <",
    ):
        broken = text[:cut] + bad + text[cut:]
        _write(path, layout, tracks[:3] + [broken] + tracks[4:])
        got = read_input(path)
        assert got.X.tobytes() == d.X.tobytes() and got.n_broken_points == 1


def test_the_steering_that_valid_xml_allowed_is_gone(tmp_path):
    """A CDATA section opened in one track and closed by a later track's
    own CDATA is valid XML: the whole document hides the tracks between and
    gives the later track's points to the first (tree_rows, the old read);
    the framed read gives every other track its own points."""
    tracks = [
        _track(0),
        "<trk><desc><![CDATA[",
        _track(1),
        _track(2, "<desc><![CDATA[x]]></desc>"),
        _track(3),
    ]
    path = tmp_path / "d.gpx"
    path.write_text(_HEAD + "\n".join(tracks) + "\n</gpx>\n")
    whole = [r for chunk in gpxfile.tree_rows(path) for r in chunk]
    framed = [r for chunk in gpxfile.framed_rows(path) for r in chunk]
    assert len(whole) == 3 + 5 + 3 and {r[5] for r in whole} == {0, 1, 2}  # valid: no break, yet steered
    assert [r[5] for r in framed] == [0] * 3 + [2] * 4 + [3] * 5 + [4] * 3


def test_a_unit_whose_only_track_is_broken_leaves_the_release_as_it_was(capsys, tmp_path):
    """End to end: a seeded person-level fit of D' (one more unit, whose
    only track is broken, among the others: the tracks after it are
    numbered one more) releases exactly what the fit of D releases, charged
    the same; the note counts the break."""
    rows = [f"<trk><trkseg>{''.join(_point(i, k) for k in range(12))}</trkseg></trk>" for i in range(40)]
    d, d1 = tmp_path / "d.gpx", tmp_path / "d1.gpx"
    d.write_text(_HEAD + "\n".join(rows) + "\n</gpx>\n")
    broken = '<trk><trkseg><trkpt lat="39.9" lon="116.3"><!-- '
    d1.write_text(_HEAD + "\n".join(rows[:7] + [broken] + rows[7:]) + "\n</gpx>\n")
    opts = ["--unit", "track", "--delta", "1e-6", "--max-cells-per-unit", "2", "--min-samples", "2"]
    rc, _, err = run(capsys, "fit", d, *FIT, *opts, "--out-dir", tmp_path, "--name", "a")
    assert rc == 0, err
    rc, _, err1 = run(capsys, "fit", d1, *FIT, *opts, "--out-dir", tmp_path, "--name", "b")
    assert rc == 0, err1
    a, b = (json.loads((tmp_path / f"{n}.spans.json").read_text()) for n in "ab")
    assert a["histogram"] and a["histogram"] == b["histogram"] and a["spans"] == b["spans"]
    assert a["privacy"] == b["privacy"]
    assert "1 GPX point(s) are not well-formed" in err1 and "not well-formed" not in err


def test_a_file_in_utf16_is_refused_from_its_head(tmp_path):
    """No byte framing holds in UTF-16 (one odd byte shifts every later
    character): such a file is refused from its first bytes, before any
    point, never part-way."""
    from dpdbscan.files import open_input

    path = tmp_path / "d.gpx"
    for encoding in ("utf-16-le", "utf-16"):  # without a byte order mark, and with one
        path.write_bytes((_HEAD.replace("UTF-8", "UTF-16") + _track(0) + "</gpx>").encode(encoding))
        with pytest.raises(ValueError, match="UTF-8|does not begin with"):
            list(gpxfile.framed_rows(path))
        with pytest.raises(ValueError, match="UTF-16|does not begin with"):
            open_input(path).close()  # before anything is read or reserved
