"""A cache across processes of the density test's noise quantiles.

:func:`~dpdbscan.post.coretests.density.densitymargin.weighted_quantile`
builds the exact law of a weighted sum of noise terms by FFT (a 2^20-point
transform and a complex power per distinct weight): 3.8-4.2 s of CPU in a
5-D fit's first margins, paid again by every fresh process (each
``dpdbscan fit`` on the command line) since the in-process cache dies with it.
Here each quantile is kept as one small file under the user's cache
directory, ``$DPDBSCAN_CACHE_DIR``, else ``$XDG_CACHE_HOME/dpdbscan``, else
``~/.cache/dpdbscan``; ``DPDBSCAN_NO_CACHE`` in the environment switches it
off.

What reaches the disk: the quantile (one float) under a SHA-256 of its
inputs. The inputs are public: the noise law and its scale (from epsilon),
the multiset of ball weights (from the grid's geometry), the level (from
beta and the number of cells of the public grid), the truncation (from the
public theta); never a point, a count or a noisy count. The key also hashes
the code that computes the value (this module's neighbours in ``density``
and the noise laws) and the versions of numpy and scipy (scipy's from its
version file, without importing it), whose FFT and optimiser it depends on:
a changed computation never reads an old value.

Safety: a file is written to a temporary name in the same directory and
renamed over the final one (atomic on POSIX), so two processes that compute
the same quantile at once each leave a whole file; a read checks the
format's version, the key and a checksum of the value and ignores a file
that fails (a torn, foreign or edited file is recomputed, never trusted).
Any error of the file system leaves the computation as it was, uncached.
The value read is the float written (``float.hex``): the same thresholds
bit for bit.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from pathlib import Path

import numpy as np

#: The format of the files; bump when it changes.
VERSION = 1
#: Set (to anything non-empty) to switch the cache off.
OFF = "DPDBSCAN_NO_CACHE"
#: Where the files go, overriding the user's cache directory.
WHERE = "DPDBSCAN_CACHE_DIR"


def cache_root() -> Path | None:
    """The library's cache directory (the quantiles' and the ball weights'
    folders are in it, :mod:`.weightcache`), or None when switched off."""
    if os.environ.get(OFF):
        return None
    root = os.environ.get(WHERE)
    if root:
        return Path(root)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "dpdbscan"


def cache_dir() -> Path | None:
    """The directory of the quantiles' files, or None when switched off."""
    root = cache_root()
    return None if root is None else root / f"quantiles-v{VERSION}"


@functools.cache
def _code_digest() -> str:
    """A digest of the code that computes the quantiles and of the libraries
    whose numbers they depend on (scipy's by :func:`_scipy_version`)."""
    here = Path(__file__).resolve().parent
    laws = here.parents[2] / "laws"
    h = hashlib.sha256()
    for path in (here / "densitymargin.py", laws / "noise.py", laws / "discretegaussian.py"):
        h.update(path.read_bytes())
    h.update(f"numpy {np.__version__} ".encode() + _scipy_version())
    return h.hexdigest()


def _scipy_version() -> bytes:
    """What names the installed scipy's version: the text of its
    ``version.py`` (its version and git revision, written when scipy is
    built), read without importing scipy, which a fit whose quantiles are
    all stored never needs otherwise (its import took 0.02-0.05 s of the
    command's fit and again of its drawing copy, which asks for the
    margins too). Where that file is not found, scipy's ``__version__``."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("scipy")
        where = None if spec is None else spec.submodule_search_locations
        if where:
            return b"scipy version.py " + (Path(next(iter(where))) / "version.py").read_bytes()
    except (OSError, ImportError, ValueError):
        pass
    import scipy

    return f"scipy {scipy.__version__}".encode()


def key_of(parts: tuple, uniq: np.ndarray, counts: np.ndarray) -> str:
    """SHA-256 of the public inputs of one quantile: scalar ``parts`` (by
    their repr, exact for floats) and the multiset of weights."""
    h = hashlib.sha256(_code_digest().encode())
    h.update(repr(parts).encode())
    h.update(np.ascontiguousarray(uniq, dtype=np.float64).tobytes())
    h.update(np.ascontiguousarray(counts, dtype=np.int64).tobytes())
    return h.hexdigest()


def _check(key: str, value: str) -> str:
    return hashlib.sha256(f"{VERSION}|{key}|{value}".encode()).hexdigest()


def load(key: str) -> float | None:
    """The quantile stored under ``key``, or None (absent, off, or a file
    that does not verify)."""
    where = cache_dir()
    if where is None:
        return None
    try:
        held = json.loads((where / f"{key}.json").read_text())
        if held["version"] != VERSION or held["key"] != key or held["check"] != _check(key, held["value"]):
            return None
        return float.fromhex(held["value"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def store(key: str, value: float) -> None:
    """Keep ``value`` under ``key`` (atomically; errors leave no file)."""
    where = cache_dir()
    if where is None:
        return
    text = float(value).hex()
    body = json.dumps({"version": VERSION, "key": key, "value": text, "check": _check(key, text)})
    try:
        where.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=where, prefix=".part-", suffix=".json")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(body)
            os.replace(tmp, where / f"{key}.json")
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        return


__all__ = ["cache_root", "cache_dir", "key_of", "load", "store", "OFF", "WHERE", "VERSION"]
