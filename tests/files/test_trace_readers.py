"""The fast GPX and PLT readers against their references (dpdbscan.files.gpxfile,
.pltfile): random valid and damaged files give the same rows, in the same
order, and the same point where damage ends the read.

GPX: :func:`gpxfile.chunks` (a scanner after expat's check, falling back to
the framed reader) against :func:`gpxfile.framed_rows` (each point parsed
from its own bytes), and the framed reader against :func:`gpxfile.tree_rows`
(ElementTree, the whole document) on intact files. Files of the usual shape
must be read by the scanner, not by the fallback. PLT:
:func:`pltfile.read` against :func:`pltfile.read_lines` (one line at a time).
"""

from __future__ import annotations

import numpy as np
import pytest

from dpdbscan.files import gpxfile, pltfile

NS = {
    "1.1": "http://www.topografix.com/GPX/1/1",
    "1.0": "http://www.topografix.com/GPX/1/0",
}
#: lat/lon texts the scanner reads (with what the reference makes of them) ...
USUAL_NUMBERS = [
    "39.9",
    "-116.25",
    "0",
    "-0",
    "1e3",
    " 7.5 ",
    "",
    "NA",
    "nan",
    "inf",
    "-Infinity",
    "abc",
    "1e400",
]
USUAL_NUMBERS += [".5", "5.", "+3", "1.2.3", "0x10", "1_000", "NaN", "None", "4e-320"]
#: ... and texts it leaves to the reference
UNUSUAL_NUMBERS = ["nan(1)", "&#49;.5", "1.5\n", "\t2", "1&amp;"]
#: A point's children, by kind (``p``: the GPX elements' prefix).
CHILDREN = {
    "ele": "<{p}ele>{text}</{p}ele>",
    "time": "<{p}time>{text}</{p}time>",
    "name": "<{p}name>a &amp; b &lt;c&gt;</{p}name>",
    "hdop": "<{p}hdop/>",
    "empty": "<{p}sat></{p}sat>",
    "time/": "<{p}time/>",
    "cdata": "<{p}time><![CDATA[2008-10-23T02:00:00Z]]></{p}time>",
    "comment": '<!-- <{p}trkpt lat="1" lon="2"/> -->',
    "nested point": '<{p}wpt lat="3" lon="4"/>',
    "ele ref": "<{p}ele>1&#48;</{p}ele>",
}
TIMES = ["2008-10-23T02:00:00Z", "2008-10-23T02:00:05.250+01:00", "", "  ", "not a time", "é"]


class Doc:
    """A random GPX text, and whether all of it is of the scanner's usual shape."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.usual = True
        self.framed = True  # whether framing reads it as the whole document does (tree_rows)
        self.prefix = ""

    def pick(self, options, unusual=()):
        options = list(options) + list(unusual)
        k = int(self.rng.integers(len(options)))
        if k >= len(options) - len(unusual):
            self.usual = False
        return options[k]

    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def sep(self) -> str:
        return self.pick(["", "\n", "  ", "\r\n", "\n\t"])

    def tag(self, name: str) -> str:
        return self.prefix + name

    def number(self) -> str:
        return self.pick(USUAL_NUMBERS, UNUSUAL_NUMBERS if self.chance(0.05) else ())

    def point(self, name: str) -> str:
        attrs = []
        if not self.chance(0.05):
            attrs.append(f'lat="{self.number()}"')
        if not self.chance(0.05):
            attrs.append(f'lon="{self.number()}"')
        if self.chance(0.2):
            attrs.append(
                'latitude="9" x:lon="8"' if self.prefix == "" and self.chance(0.5) else 'a="1 &amp; >"'
            )
        if self.chance(0.03):
            self.usual = False
            attrs = [a.replace('"', "'") for a in attrs]
        self.rng.shuffle(attrs)
        head = f"<{self.tag(name)} " + self.pick([" ", "\n  "]).join(attrs)
        if self.chance(0.1):
            return head + "/>"
        return head + ">" + self.children() + f"</{self.tag(name)}>"

    def children(self) -> str:
        out = []
        simple = True
        for _ in range(int(self.rng.integers(0, 5))):
            kind = self.pick(
                ["ele", "time", "name", "hdop", "ext", "empty"],
                ["time/", "cdata", "comment", "nested point", "ele ref"] if self.chance(0.05) else (),
            )
            if kind in ("comment", "nested point"):
                self.framed = False  # a point's tag in a comment, a point in a point
            if kind in ("time", "ele") and not simple:
                self.usual = False  # a time or an elevation after a child that holds elements
            if kind == "ext":
                simple = False
                inner = "<ns3:hr>120</ns3:hr><ns3:cad/>" + self.pick(
                    ["", "<ns3:time>x</ns3:time>", "<ns3:ele>9</ns3:ele>"]
                )
                if "time" in inner or "ele" in inner:
                    self.usual = False
                out.append(
                    f"<{{p}}extensions><ns3:TPE>{inner}</ns3:TPE></{{p}}extensions>".format(p=self.prefix)
                )
                continue
            text = self.number().strip() if kind == "ele" else self.pick(TIMES) if kind == "time" else ""
            out.append(CHILDREN[kind].format(p=self.prefix, text=text))
        return self.sep().join(["", *out, ""])

    def items(self) -> list[str]:
        out = []
        if self.chance(0.3):
            out.append(
                f"<{self.tag('metadata')}><{self.tag('time')}>2008</{self.tag('time')}></{self.tag('metadata')}>"
            )
        for _ in range(int(self.rng.integers(0, 6))):
            kind = self.pick(
                ["wpt", "rte", "trk", "trk", "trk", "ext trk"], ["trk/"] if self.chance(0.1) else ()
            )
            if kind == "wpt":
                out.append(self.point("wpt"))
            elif kind == "rte":
                out.append(
                    f"<{self.tag('rte')}>"
                    + "".join(self.point("rtept") for _ in range(2))
                    + f"</{self.tag('rte')}>"
                )
            elif kind == "trk/":
                out.append(f"<{self.tag('trk')}/>")
            elif kind == "ext trk":  # a track (and its points) inside extensions: counted all the same
                out.append(f"<{self.tag('extensions')}>{self.track()}</{self.tag('extensions')}>")
            else:
                out.append(self.track())
        return out

    def track(self) -> str:
        segs = []
        for _ in range(int(self.rng.integers(1, 3))):
            pts = [
                self.point(self.pick(["trkpt", "trkpt", "trkpt", "wpt"]))
                for _ in range(int(self.rng.integers(0, 8)))
            ]
            segs.append(f"<{self.tag('trkseg')}>" + self.sep().join(pts) + f"</{self.tag('trkseg')}>")
        name = f"<{self.tag('name')}>t</{self.tag('name')}>" if self.chance(0.5) else ""
        return f"<{self.tag('trk')}>{name}" + self.sep().join(segs) + f"</{self.tag('trk')}>"

    def text(self) -> str:
        head = self.pick(
            ["", '<?xml version="1.0"?>\n', '<?xml version="1.0" encoding="UTF-8"?>\n', "\ufeff"],
            ['<?xml version="1.0" encoding="ISO-8859-1"?>', '<!DOCTYPE gpx [<!ENTITY e "1.5">]>']
            if self.chance(0.05)
            else (),
        )
        if self.chance(0.3):  # an exporter's banner, a stylesheet: still the scanner's, where no < is in it
            head += self.pick(
                ["<!-- exported by X, a > b -->\n", '<?xml-stylesheet href="s.xsl"?>', "<!---->"],
                ["<!-- <b>bold</b> -->", "<?pi <a>?>", "<!-- a -- b -->"],
            )
            if self.chance(0.02):  # a point's tag before the root: the framed reader's head ends there
                self.usual = self.framed = False
                head += '<!-- <wpt lat="1" lon="2"/> -->'
        version = self.pick(["1.1", "1.0", "none", "prefixed"])
        ext = ' xmlns:ns3="urn:x" xmlns:x="urn:y"'
        if version == "prefixed":
            self.prefix = "g:"
            root = f'<g:gpx version="1.1" xmlns:g="{NS["1.1"]}"{ext}>'
        elif version == "none":
            root = f"<gpx{ext}>"
        else:
            root = f'<gpx version="{version}" creator="a &amp; b" xmlns="{NS[version]}"{ext}>'
        body = root + self.sep() + self.sep().join(self.items()) + self.sep() + f"</{self.tag('gpx')}>\n"
        if self.chance(0.03):
            self.usual = self.framed = False
            body = body.replace(self.tag("gpx"), self.tag("kml"))
        return head + body

    def damaged(self, text: str) -> str:
        """The text broken somewhere: cut, or a character put in."""
        self.usual = self.framed = False
        at = int(self.rng.integers(len(text) + 1))
        if self.chance(0.5):
            return text[:at]
        return text[:at] + self.pick(["<", "&x;", "</b>", "\x01", "<a>"]) + text[at:]


def read_all(reader, path):
    """``(rows, ended)``: the rows given before a ValueError (if any), as lists."""
    rows: list[tuple] = []
    try:
        for chunk in reader(path):
            c = chunk if isinstance(chunk, gpxfile.Chunk) else gpxfile.columns(chunk)
            time = c.time if isinstance(c.time, list) else c.time.to_pylist()  # the scanner's: Arrow
            rows += zip(c.lon.tolist(), c.lat.tolist(), c.bad.tolist(), time, c.ele.tolist(), c.track)
    except ValueError:
        return rows, True
    return rows, False


def same_rows(a: list[tuple], b: list[tuple]) -> bool:
    """Row for row, floats bit for bit (NaN equal to NaN)."""
    if len(a) != len(b):
        return False
    for r, s in zip(a, b):
        for u, v in zip(r, s):
            if isinstance(u, float) and isinstance(v, float):
                if np.float64(u).tobytes() != np.float64(v).tobytes() and not (np.isnan(u) and np.isnan(v)):
                    return False
            elif u != v or type(u) is not type(v):
                return False
    return True


@pytest.mark.parametrize("seed", range(40))
def test_random_gpx_gives_the_rows_of_the_reference(tmp_path, monkeypatch, seed):
    rng = np.random.default_rng(seed)
    n_usual = n_framed = 0
    for k in range(25):
        monkeypatch.setattr(gpxfile, "CHUNK", int(rng.choice([1, 2, 3, 7, 1 << 15])))
        monkeypatch.setattr(gpxfile, "_BLOCK", int(rng.choice([16, 37, 200, 1 << 20])))
        doc = Doc(rng)
        text = doc.text()
        if rng.random() < 0.25:
            text = doc.damaged(text)
        path = tmp_path / f"{k}.gpx"
        path.write_bytes(text.encode("utf-8"))
        want = read_all(gpxfile.framed_rows, path)
        got = read_all(gpxfile.chunks, path)
        assert got[1] == want[1] and same_rows(got[0], want[0]), text
        if doc.framed:  # intact, no tag in a comment, no point in a point: the whole document's rows
            n_framed += 1
            assert same_rows(want[0], read_all(gpxfile.tree_rows, path)[0]), text
        if doc.usual:  # read by the scanner, not by the reference
            n_usual += 1
            assert same_rows(read_all(gpxfile._scan, path)[0], got[0])
    assert n_usual > 0 and n_framed > 0


def test_the_scanner_reads_usual_files_and_leaves_the_others(tmp_path):
    """Files of the usual shape are scanned; each unusual one falls back (and
    is still read right, by the test above)."""
    usual = [
        f'<gpx xmlns="{NS["1.1"]}"><trk><trkseg><trkpt lat="1" lon="2"><ele>3</ele><time>t</time>'
        "<extensions><ns3:x xmlns:ns3='u'><ns3:hr>1</ns3:hr></ns3:x></extensions>"
        "</trkpt></trkseg></trk></gpx>",
        '\ufeff<?xml version="1.0" encoding="utf-8"?>\r\n<gpx>\r\n<wpt lon="2" lat="1"/>\r\n</gpx>\r\n',
        # an exporter's comment and a stylesheet before the root
        '<?xml version="1.0"?>\n<!-- by X > Y -->\n<?xml-stylesheet href="s"?>'
        '<gpx><wpt lon="2" lat="1"/></gpx>',
    ]
    unusual = [
        '<gpx><!-- c --><wpt lat="1" lon="2"/></gpx>',
        '<!-- <b>c</b> --><gpx><wpt lat="1" lon="2"/></gpx>',  # a < in a comment before the root
        '<!-- a -- b --><gpx><wpt lat="1" lon="2"/></gpx>',  # not well-formed: the reference says so
        '<?xml version="1.0"?><!-- c --><?xml version="1.0" encoding="ISO-8859-1"?>'
        '<gpx><wpt lat="1" lon="2"/></gpx>',
        '<gpx><wpt lat="1" lon="2"><time><![CDATA[t]]></time></wpt></gpx>',
        "<gpx><wpt lat='1' lon='2'/></gpx>",
        '<gpx><wpt lat="&#49;" lon="2"/></gpx>',
        '<?xml version="1.0" encoding="ISO-8859-1"?><gpx><wpt lat="1" lon="2"/></gpx>',
        '<gpx><wpt lat="1" lon="2"><extensions><a/></extensions><time>t</time></wpt></gpx>',
        '<gpx><wpt lat="1" lon="2"/>',  # damaged: the reference says where it ends
        '<kml><wpt lat="1" lon="2"/></kml>',  # not GPX: the reference refuses it
        # a track in a track: framed, the point after the inner one's end is in no track
        '<gpx><trk><trk><trkpt lat="1" lon="2"/></trk><trkpt lat="3" lon="4"/></trk></gpx>',
    ]
    for k, text in enumerate(usual + unusual):
        path = tmp_path / f"{k}.gpx"
        path.write_bytes(text.encode("utf-8"))
        if k < len(usual):
            assert len(read_all(gpxfile._scan, path)[0]) >= 1
        else:
            with pytest.raises(gpxfile._Unusual):
                list(gpxfile._scan(path))
        assert same_rows(read_all(gpxfile.chunks, path)[0], read_all(gpxfile.framed_rows, path)[0])
    big = tmp_path / "big.gpx"  # several blocks, several chunks: all by the scanner
    pts = "".join(f'<trkpt lat="{i / 7}" lon="{-i / 3}"><time>{i}</time></trkpt>\n' for i in range(70_000))
    big.write_text(f"<gpx><trk><trkseg>\n{pts}</trkseg></trk></gpx>")
    got = read_all(gpxfile._scan, big)[0]
    assert len(got) == 70_000 and same_rows(got, read_all(gpxfile.tree_rows, big)[0])


# --------------------------------------------------------------------------- #
# PLT

PLT_FIELDS = ["39.9", "116.3", " 40.1 ", "", "NA", "nan", "abc", "1e400", "-0", "+5.", "é", '"1"', "\t7"]
DATES = ["2008-10-23", " 2008-10-23 ", "", "x"]
CLOCKS = ["02:53:04", "\t02:53:10", "", "é"]


def plt_bytes(rng: np.random.Generator) -> tuple[bytes, bool]:
    """A random PLT file, and whether the vectorised read takes it: every
    line after the header UTF-8 with 7 fields, none empty, none ended by a
    lone carriage return."""
    usual = True
    lines = [
        b"Geolife trajectory",
        b"WGS 84",
        b"Altitude is in Feet",
        b"Reserved 3",
        b"0,2,255,My Track,0,0,2,8421376",
        b"0",
    ]
    lines = lines[: int(rng.integers(0, 7))] if rng.random() < 0.1 else lines
    damaged = rng.random() < 0.5  # else every line has 7 fields
    for _ in range(int(rng.integers(0, 30))):
        pick = lambda options: options[int(rng.integers(len(options)))]  # noqa: E731
        f = [pick(PLT_FIELDS), pick(PLT_FIELDS), "0", pick(PLT_FIELDS), "39744.1", pick(DATES), pick(CLOCKS)]
        line = ",".join(f).encode()
        r = rng.random() if damaged else 1.0
        if r < 0.05:
            line, usual = line + b",9", False
        elif r < 0.08:
            line, usual = line.rsplit(b",", 1)[0], False
        elif r < 0.1:
            line, usual = line + b"\xff", False
        elif r < 0.15:
            line = b""
        lines.append(line)
    end = [b"\r\n", b"\n", b"\r"][int(rng.integers(3))]
    text = end.join(lines) + (end if rng.random() < 0.7 else b"")
    body = b"".join(text.splitlines(keepends=True)[6:])
    # an empty line, old Mac line ends: read line by line
    return text, usual and all(body.splitlines()) and b"\r" not in body.replace(b"\r\n", b"")


@pytest.mark.parametrize("seed", range(20))
def test_random_plt_gives_the_rows_of_the_reference(tmp_path, seed):
    rng = np.random.default_rng(seed)
    n_whole = 0
    for k in range(30):
        data, usual = plt_bytes(rng)
        path = tmp_path / f"{k}.plt"
        path.write_bytes(data)
        X, bad, malformed, times, alt = pltfile.read(path)
        X0, bad0, malformed0, times0, alt0 = pltfile.read_lines(path)
        assert X.tobytes() == X0.tobytes() and alt.tobytes() == alt0.tobytes()
        assert bad.tolist() == bad0.tolist() and malformed == malformed0
        assert (times if isinstance(times, list) else times.to_pylist()) == times0
        has_points = len([ln for ln in data.splitlines()[6:] if ln]) > 0
        assert (pltfile._read_whole(data) is not None) == (usual and has_points)
        n_whole += usual and has_points
    assert n_whole >= 5


# --------------------------------------------------------------------------- #
# GPX: the plain track points read in numpy steps (gpxfile._plain_points)

PLAIN_TIMES = ["2008-10-23T02:00:00Z", "", " é ", "2008-10-23T02:00:05.250+01:00", "a\tb"]
#: What makes a plain file's point or text not plain (the pattern or the reference reads it).
ODD_VALUES = ["1\n", "\t2", "1&amp;", "nan(1)", "1&#49;", "3\r"]
ODD_TIMES = ["a&amp;b", "x\ry", "<![CDATA[t]]>"]
BETWEEN = [
    "</trkseg><trkseg>",
    "</trkseg></trk><trk><trkseg>",
    '<wpt lat="5" lon="6"><name>w</name></wpt>',
    '<rtept lat="7" lon="8"/>',
    '<!-- <trkpt lat="1" lon="2"></trkpt> -->',
    '<trkpt lat="3" lon="4"/>',
    '<trkpt  lat="3" lon="4"></trkpt>',
    "<trkpt lat='3' lon='4'></trkpt>",
    '<trkpt lat="3" lon="4" hdop="1"></trkpt>',
    '<trkpt lat="3" lon="4"><time>t</time><extensions><hr>1</hr></extensions></trkpt>',
    '<trkpt lat="3" lon="4"><time/></trkpt>',
    '<trkpt lat="3" lon="4"><time>t</time><ele>5</ele></trkpt>',
    '<trkpt lat="3" lon="4"></trkpt >',
    '<trkpt lat="3" lon="4" a=">"></trkpt>',
]


#: What damages a plain file where it is put (the check of its text must see it).
DAMAGE = ["<", "\x01", "&x;", "]]>", "\ufffe", "</gpx>", "</trkseg>", "<a>", '"', "\x7f\x1f"]


#: A track point's extensions, as Garmin's devices write them (heart rate,
#: cadence...), after its elevation and time; then some the pattern reads
#: otherwise (a time or an elevation among them, a comment, CDATA, a point).
GARMIN = [
    "<extensions><gpxtpx:TrackPointExtension><gpxtpx:hr>{k}</gpxtpx:hr><gpxtpx:cad>8{k}</gpxtpx:cad>"
    "</gpxtpx:TrackPointExtension></extensions>",
    '<extensions><gpxtpx:TrackPointExtension><gpxtpx:atemp>2{k}.0</gpxtpx:atemp><gpxtpx:hr a="1 &amp; >">'
    "1{k}</gpxtpx:hr></gpxtpx:TrackPointExtension></extensions>",
    "<extensions><power>2{k}</power><x:speed/></extensions>",
    "<hdop>1.{k}</hdop>",
    "<extensions>\n  <elevation>5</elevation><timer>1</timer><trkptx/> <eles>1</eles></extensions>",
    "<extensions><a>&lt;</a></extensions>",
]
ODD_GARMIN = [
    "<extensions><gpxtpx:time>9</gpxtpx:time></extensions>",
    "<extensions><ele>9</ele></extensions>",
    "<extensions><x:trk/></extensions>",
    "<extensions><!-- <time>2000</time> --></extensions>",
    '<extensions><![CDATA[<trkpt lat="1" lon="2">]]></extensions>',
    "<extensions><?pi x?></extensions>",
    '<extensions><wpt lat="1" lon="2"/></extensions>',
    "<extensions><a><b></a></b></extensions>",  # not well-formed: read plainly, refused by expat's check
]


def plain_gpx(rng: np.random.Generator, n: int, garmin: bool = False) -> str:
    """A GPX text of ``n`` track points, most written plainly, some not (at
    random); with ``garmin``, most with extensions after their children."""
    odd = rng.random() < 0.3

    def pick(options):
        return options[int(rng.integers(len(options)))]

    def value() -> str:
        return pick(ODD_VALUES) if odd and rng.random() < 0.02 else pick(USUAL_NUMBERS)

    pts = []
    for _ in range(n):
        lat, lon = value(), value()
        head = (
            f'<trkpt lat="{lat}" lon="{lon}">' if rng.random() < 0.8 else f'<trkpt lon="{lon}" lat="{lat}">'
        )
        sep = pick(["", "\n", "  ", "\r\n"])
        body = [head]
        if rng.random() < 0.5:
            body.append(f"<ele>{value().strip()}</ele>")
        if rng.random() < 0.9:
            t = pick(ODD_TIMES) if odd and rng.random() < 0.02 else pick(PLAIN_TIMES)
            body.append(f"<time>{t}</time>")
        if garmin and rng.random() < 0.9:
            extension = pick(ODD_GARMIN) if odd and rng.random() < 0.02 else pick(GARMIN)
            body.insert(-1 if rng.random() < 0.02 else len(body), extension.format(k=int(rng.integers(10))))
        body.append("</trkpt>")
        pts.append(sep.join(body))
        if odd and rng.random() < 0.05:
            pts.append(pick(BETWEEN))
    head = pick(['<?xml version="1.0" encoding="UTF-8"?>\n', "", "\ufeff"])
    meta = pick(["", "<metadata><time>2008</time></metadata>", '<wpt lat="1" lon="2"/>'])
    xmlns = ' xmlns:gpxtpx="urn:g" xmlns:x="urn:x"' if garmin else ""
    return (
        f'{head}<gpx version="1.1" xmlns="{NS["1.1"]}"{xmlns}>{meta}<trk><name>x</name><trkseg>\n'
        + "\n".join(pts)
        + "\n</trkseg></trk></gpx>\n"
    )


@pytest.mark.parametrize("garmin", [False, True])
@pytest.mark.parametrize("seed", range(12))
def test_plain_points_give_the_rows_of_the_reference(tmp_path, monkeypatch, seed, garmin):
    """Plain track points (most of each file, or all) are read in numpy
    steps, also with extensions after their children (``garmin``: heart
    rate, cadence...); files with points or texts that are not plain, or
    other tags between the points, and damaged ones give the reference's
    rows all the same, whatever the chunk and the block."""
    rng = np.random.default_rng(1000 + seed + 100 * garmin)
    plain = [0]
    real = gpxfile._plain_points

    def counted(data):
        got = real(data)
        plain[0] += got is not None and len(got[1]) > 0 and (not garmin or b"<extensions>" in data)
        return got

    monkeypatch.setattr(gpxfile, "_plain_points", counted)
    for k in range(12):
        monkeypatch.setattr(gpxfile, "CHUNK", int(rng.choice([1, 5, 64, 1 << 15])))
        monkeypatch.setattr(gpxfile, "_BLOCK", int(rng.choice([64, 300, 4096, 1 << 20])))
        text = plain_gpx(rng, int(rng.integers(0, 300)), garmin)
        if rng.random() < 0.3:  # damaged: cut, or a character or a tag put in
            at = int(rng.integers(len(text) + 1))
            text = text[:at] if rng.random() < 0.3 else text[:at] + str(rng.choice(DAMAGE)) + text[at:]
        elif rng.random() < 0.1:  # a point after the root's end
            text += '<trkpt lat="1" lon="2"></trkpt>'

        path = tmp_path / f"{k}.gpx"
        path.write_bytes(text.encode("utf-8"))
        want = read_all(gpxfile.framed_rows, path)
        got = read_all(gpxfile.chunks, path)
        assert got[1] == want[1] and same_rows(got[0], want[0]), text
    assert plain[0] > 0


@pytest.mark.parametrize("extension", GARMIN + ODD_GARMIN)
def test_a_point_s_extensions_give_the_rows_of_the_reference(tmp_path, extension):
    """Each extension in one point among plain ones, a track after it: the
    reference's rows (a track or a waypoint among the extensions moves the
    tracks' count); the usual ones (Garmin's) are read in numpy steps, the
    others by the pattern or the reference."""
    pts = [
        f'<trkpt lat="{i}" lon="{i + 1}"><ele>{i}</ele><time>2008-01-0{i + 1}T00:00:00Z</time>'
        + (extension.format(k=i) if i == 1 else "")
        + "</trkpt>"
        for i in range(3)
    ]
    text = (
        f'<gpx version="1.1" xmlns="{NS["1.1"]}" xmlns:gpxtpx="urn:g" xmlns:x="urn:x"><trk><trkseg>'
        + "\n".join(pts)
        + f"</trkseg></trk><trk><trkseg>{pts[0]}</trkseg></trk></gpx>"
    )
    path = tmp_path / "e.gpx"
    path.write_text(text)
    want = read_all(gpxfile.framed_rows, path)
    got = read_all(gpxfile.chunks, path)
    assert got[1] == want[1] and same_rows(got[0], want[0])
    whole = read_all(gpxfile.tree_rows, path)
    if not whole[1] and not gpxfile._START.search(extension.encode()):  # intact, no point or track in a point
        assert same_rows(want[0], whole[0])
    plain = gpxfile._plain_points(text[text.index("<trkpt") :].encode())
    assert (plain is not None) == (extension in GARMIN or "<b></a>" in extension)


@pytest.mark.parametrize("block", [40, 64, 1 << 20])
def test_a_plain_point_after_the_root_is_read_as_any_other(tmp_path, monkeypatch, block):
    """Junk after the root: however the file falls into blocks, the check
    sees the point after ``</gpx>`` and the file is read by the framed
    reader, which reads that point too: a ``</gpx>`` ends nothing, since a
    unit's bytes could write one (docs/privacy.md §8, "GPX")."""
    monkeypatch.setattr(gpxfile, "_BLOCK", block)
    pts = "".join(f'<trkpt lat="{i}" lon="{-i}"><time>{i}</time></trkpt>\n' for i in range(20))
    path = tmp_path / "after.gpx"
    path.write_text(f'<gpx><trk><trkseg>\n{pts}</trkseg></trk></gpx>\n<trkpt lat="1" lon="2"></trkpt>\n')
    want = read_all(gpxfile.framed_rows, path)
    got = read_all(gpxfile.chunks, path)
    assert not want[1] and got[1] == want[1] and same_rows(got[0], want[0])
    assert len(got[0]) == 21 and got[0][-1][:2] == (2.0, 1.0) and got[0][-1][5] is None
    with pytest.raises(gpxfile._Unusual):  # the scanner leaves it to the framed reader
        list(gpxfile._scan(path))
