"""A basemap of XYZ tiles under the HTML map, from a URL template the user gives.

The map is one offline file by default; with a tile source (``dpdbscan map
--tiles URL``) the page also loads the standard web-map tiles of the area in
view, ``{z}/{x}/{y}`` in the Web Mercator scheme, from that server while it is
viewed. The tiles are public input, not part of the release, and nothing of
the release is sent to the server: the page asks for the tiles of the view,
inside the public box. Who serves the tiles sees which area a viewer looks
at, as with any web map; the page says where its tiles come from and shows
the attribution the source asks for.

Each tile is placed by its corners, projected with the model's own
equirectangular projection (:mod:`dpdbscan.geometry.projection`): over a
tile at city zooms the two projections differ by far less than a pixel.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

#: The deepest zoom level a tile source may declare, and the default one
#: (OpenStreetMap's standard layer serves 0-19).
MAX_ZOOM = 22
DEFAULT_MAX_ZOOM = 19


@dataclass(frozen=True)
class Tiles:
    """A tile source: ``url`` with ``{z}``, ``{x}`` and ``{y}`` (``{s}``, a
    subdomain, and ``{r}``, a retina suffix, are filled with "a"-"c" and "");
    ``attribution`` as the source asks to be credited (default: its host);
    ``max_zoom``: the deepest level it serves (deeper views stretch it)."""

    url: str
    attribution: str | None = None
    max_zoom: int = DEFAULT_MAX_ZOOM

    def __post_init__(self) -> None:
        check_tiles_url(self.url)
        if isinstance(self.max_zoom, bool) or not isinstance(self.max_zoom, int):
            raise ValueError(f"the tiles' maximum zoom must be an integer, got {self.max_zoom!r}")
        if not 0 <= self.max_zoom <= MAX_ZOOM:
            raise ValueError(f"the tiles' maximum zoom must be in 0..{MAX_ZOOM}, got {self.max_zoom}")

    @property
    def host(self) -> str:
        return urlsplit(self.url).netloc

    @property
    def credit(self) -> str:
        """What the page's corner says: the attribution, else the host."""
        return self.attribution or f"tiles: {self.host}"

    def config(self) -> dict:
        """The page's configuration of the layer (JSON)."""
        return {"url": self.url, "max_zoom": self.max_zoom}


def check_tiles_url(url: str) -> str:
    """The URL template, or ValueError saying what it needs."""
    if not isinstance(url, str) or not re.match(r"^https?://[^/\s]+/", url):
        raise ValueError(
            "--tiles must be an http(s) URL template such as "
            f"https://tile.example.org/{{z}}/{{x}}/{{y}}.png, got {url!r}"
        )
    missing = [p for p in ("{z}", "{x}", "{y}") if p not in url]
    if missing:
        raise ValueError(f"--tiles needs {', '.join(missing)} in its URL template, got {url!r}")
    if re.search(r"[\s\"'<>\\]", url):
        raise ValueError(
            "--tiles: the URL template may not hold spaces, quotes, angle brackets or backslashes"
        )
    return url


__all__ = ["DEFAULT_MAX_ZOOM", "MAX_ZOOM", "Tiles", "check_tiles_url"]
