"""Where the shared data sets live, and their public boxes: one place for the
experiments and the benchmarks.

The data folder is ``$DPDBSCAN_DATA`` or, when that is unset, ``../shared/data``
beside the repository (its MANIFEST.md describes every file). Data files are
never copied into the repository. A missing file raises
:class:`MissingDataError`, which names the file, the folder looked in, the
variable that chooses it and where the data come from.

Public boxes
------------
DP-DBSCAN's grid is laid over public bounds: nothing that shapes it may be
read off the private data. The boxes here were fixed before any result was
looked at:

* Cabs, Cabs-tiny: the lon/lat boxes of MANIFEST.md; the Crash box is the
  paper's Crash filter (the benchmarks' synthetic stand-in lives in it);
* the chest accelerometer: the full range of its 12-bit ADC, [0, 4096)^3.

Geographic sets are projected as in the paper, with the library's
equirectangular projection: km, origin at the box's south-west corner,
longitude scaled at a fixed reference latitude.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dpdbscan.research import Equirectangular

REPO = Path(__file__).resolve().parents[1]
#: The environment variable that names the data folder.
ENV = "DPDBSCAN_DATA"

#: Data set -> its file in the data folder.
FILES = {
    "cluto_t4": "cluto_t4_8k.csv",
    "cluto_t5": "cluto_t5_8k.csv",
    "cluto_t7": "cluto_t7_10k.csv",
    "chest": "chest_acc_subject15.csv",
    "cabs_tiny": "cabs_tiny.csv.gz",
    "cabs": "cabs_sf.csv.gz",
    "cabs_units": "cabs_sf_cabs.parquet",
}
_CLUTO = "github.com/deric/clustering-benchmark @ fc7aba7, src/main/resources/datasets/artificial/"
_CABS = (
    "CRAWDAD epfl/mobility cabspotting (copy in github.com/QiuTedYuan/DpDBSCAN, datasets/cabspottingdata): "
)
#: Data set -> where its file comes from.
SOURCES = {
    "cluto_t4": _CLUTO + "cluto-t4-8k.arff",
    "cluto_t5": _CLUTO + "cluto-t5-8k.arff",
    "cluto_t7": _CLUTO + "cluto-t7-10k.arff",
    "chest": "UCI 'Activity Recognition from Single Chest-Mounted Accelerometer', subject 15 (15.csv)",
    "cabs_tiny": _CABS + "occupied-trip end points in the Cabs-tiny box",
    "cabs": _CABS + "all records in the Cabs box",
    "cabs_units": _CABS + "all records in the Cabs box with their cab (the privacy unit)",
}


class MissingDataError(FileNotFoundError):
    """A file of the shared data folder is absent."""


def data_dir() -> Path:
    """``$DPDBSCAN_DATA`` when set, else ``../shared/data`` beside the repository."""
    env = os.environ.get(ENV)
    return Path(env) if env else REPO.parent / "shared" / "data"


def data_path(filename: str, source: str = "the shared data folder") -> Path:
    """Path of ``filename`` in the data folder; :class:`MissingDataError` if absent."""
    path = data_dir() / filename
    if not path.is_file():
        raise MissingDataError(
            f"{filename} not found in {path.parent}. Put the shared data folder at "
            f"{REPO.parent / 'shared' / 'data'} or set {ENV} to a folder holding it. "
            f"Source: {source} (format and checksum: shared/data/MANIFEST.md). "
            "Do not commit data files to the repository."
        )
    return path


def file_of(name: str) -> Path:
    """Path of data set ``name``'s file (a key of :data:`FILES`)."""
    return data_path(FILES[name], SOURCES[name])


def has_file(name: str) -> bool:
    """Whether data set ``name``'s file is in the data folder."""
    return (data_dir() / FILES[name]).is_file()


def cabs_with_units() -> tuple[np.ndarray, np.ndarray]:
    """Full Cabs with its privacy units: (lon/lat array of shape (n, 2), the
    cab of each row as an object array of text). The rows of ``cabs_sf.csv.gz``
    in the same order (MANIFEST.md). Reading Parquet needs pyarrow (the
    library's ``io`` extra, in ``.venv``)."""
    import pandas as pd

    df = pd.read_parquet(file_of("cabs_units"), columns=["x", "y", "cab"])
    return df[["x", "y"]].to_numpy(dtype=np.float64), df["cab"].astype(str).to_numpy(dtype=object)


def read_columns(path: Path, columns: tuple[str, ...]) -> np.ndarray:
    """The named columns of a CSV file as float64, in that order."""
    import pandas as pd

    return pd.read_csv(path, usecols=list(columns), dtype=np.float64)[list(columns)].to_numpy()


# ----------------------------------------------------------------- public boxes
@dataclass(frozen=True)
class GeoBox:
    """A public lon/lat box and the reference latitude of its projection."""

    lon_min: float
    lat_min: float
    lon_max: float
    lat_max: float
    ref_lat: float

    @property
    def degrees(self) -> tuple[float, float, float, float]:
        """(lon_min, lat_min, lon_max, lat_max), the GeoJSON bbox order."""
        return (self.lon_min, self.lat_min, self.lon_max, self.lat_max)

    def projection(self) -> Equirectangular:
        """lon/lat -> km with the box's south-west corner as origin."""
        return Equirectangular(self.lon_min, self.lat_min, self.ref_lat)

    def km_bounds(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """The box in km: (lower, upper)."""
        lower, upper = self.projection().project_bounds(
            (self.lon_min, self.lat_min), (self.lon_max, self.lat_max)
        )
        return tuple(map(float, lower)), tuple(map(float, upper))


#: The paper's projection of San Francisco: longitude scaled at 37.8 deg N.
SF_LATITUDE = 37.8
#: Public lon/lat boxes (MANIFEST.md; Crash: the paper's filter box).
GEO_BOXES = {
    "cabs": GeoBox(-122.6, 37.55, -122.3, 37.85, SF_LATITUDE),
    "cabs_tiny": GeoBox(-122.48, 37.72, -122.38, 37.82, SF_LATITUDE),
    "crash": GeoBox(-75.0, 40.0, -73.0, 41.0, 40.5),
}


def lonlat_km(name: str) -> np.ndarray:
    """A geographic data set's points projected to km by its public box."""
    return GEO_BOXES[name].projection().forward(read_columns(file_of(name), ("x", "y")))


#: The chest accelerometer's public box: its 12-bit ADC's range in every axis.
CHEST_BOX = ((0.0, 0.0, 0.0), (4096.0, 4096.0, 4096.0))


def alpha_matching_cells(box_width: float, d: int, n_cells: float, eta: float = 4.0) -> float:
    """The alpha whose grid over a cube of side ``box_width`` has ``n_cells`` cells.

    Cell width is ``w = eta alpha / (4 sqrt d)`` and |X| = (box_width / w)^d,
    so alpha = 4 sqrt(d) box_width / (eta n_cells^(1/d)).
    """
    return 4.0 * math.sqrt(d) * box_width / (eta * n_cells ** (1.0 / d))


# The chest set (stand-in for HAR70+) is in raw counts, not g, so the paper's
# alpha = 0.01 g cannot be carried over. Label-free rule, fixed in advance: the
# alpha that gives the same grid as the paper's HAR70+ run, |X| = 1e8 cells
# ("Running Time": "this dataset, which has |X| = 10^8 cells"), over the public
# box. Same |X| and kappa mean the same noise margin Gamma as the paper's run.
CHEST_ALPHA = alpha_matching_cells(CHEST_BOX[1][0], 3, 1e8)  # ~15.3 counts
