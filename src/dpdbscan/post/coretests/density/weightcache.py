"""A cache across processes of the density test's ball weights.

:func:`~dpdbscan.post.coretests.density.weights.ball_weights` integrates the
weights W(q, Y) numerically over the 1.28M offsets of an 8-D alpha-ball:
0.6-0.75 s of CPU in every fresh process that fits 8-D points (0.14 s in
7-D, 0.07 s in 6-D), which is every ``dpdbscan fit`` on the command line,
since the in-process cache dies with the process. Here each set of weights
is kept as one file beside the noise quantiles (:mod:`.lawcache`: the same
directory rules, ``$DPDBSCAN_CACHE_DIR``, else ``$XDG_CACHE_HOME/dpdbscan``,
else ``~/.cache/dpdbscan``; ``DPDBSCAN_NO_CACHE`` switches both off), in
its own folder.

What reaches the disk: the weights' arrays (the offsets, each offset's
entry in the table of distinct weights per sub-position, the table, the
support sizes) under a SHA-256 of their inputs, all public: the dimension,
the grid parameter eta, the sub-cells per axis, the estimate's name and the
integration's bins. They depend on no point, count or release. The key
also hashes the code that computes them (``weights.py`` and the offsets'
enumeration in ``cells/grid.py``), numpy's version (its FFT) and the
machine's architecture: a changed computation never reads old weights.
Weights whose arrays exceed :data:`MAX_BYTES` are not kept (8-D with two
sub-cells per axis: 0.66 GB of indices).

Safety, as the quantiles': a file is written to a temporary name in the
same directory and renamed over the final one (atomic on POSIX); a read
checks the format's version, the key, a SHA-256 of the arrays' bytes and
their shapes, and ignores a file that fails (torn, foreign or edited:
recomputed, never trusted). Any error of the file system leaves the
computation as it was, uncached. The arrays read are the bytes written:
the same weights bit for bit. (The weights are post-processing constants:
whatever a file held, the release's privacy would be the same, only which
cells are core would change; a file is used only when it verifies.)
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

from . import lawcache

#: The format of the files; bump when it changes.
VERSION = 1
#: Weights whose stored arrays take more bytes than this are not kept.
MAX_BYTES = 64 << 20
#: The arrays of a file, in order, with the dtypes a file may hold them in.
_ARRAYS = {
    "offsets": ("int8", "int16", "int32", "int64"),
    "index": ("uint16", "int32"),
    "table": ("float64",),
    "support": ("int64",),
}


def cache_dir() -> Path | None:
    """The directory of the weights' files, or None when switched off."""
    root = lawcache.cache_root()
    return None if root is None else root / f"weights-v{VERSION}"


@functools.cache
def _code_digest() -> str:
    """A digest of the code that computes the weights, of numpy's version
    and of the machine's architecture."""
    import platform  # (only where weights are looked up)

    here = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for path in (here / "weights.py", here.parents[2] / "cells" / "grid.py"):
        h.update(path.read_bytes())
    h.update(f"numpy {np.__version__} {platform.machine()} {sys.byteorder}".encode())
    return h.hexdigest()


def key_of(d: int, eta: float, k: int, estimate: str, bins: int) -> str:
    """SHA-256 of the public inputs of one set of weights (eta by its exact
    hexadecimal form)."""
    h = hashlib.sha256(_code_digest().encode())
    h.update(repr((int(d), float(eta).hex(), int(k), str(estimate), int(bins))).encode())
    return h.hexdigest()


def _check(key: str, head: list, payload: bytes | memoryview) -> str:
    h = hashlib.sha256(f"{VERSION}|{key}|{json.dumps(head)}|".encode())
    h.update(payload)
    return h.hexdigest()


def load(key: str, d: int, k: int) -> dict[str, np.ndarray] | None:
    """The arrays stored under ``key`` (read-only copies; the offsets as
    int64), or None (absent, off, or a file that does not verify)."""
    where = cache_dir()
    if where is None:
        return None
    try:
        data = (where / f"{key}.bin").read_bytes()
        cut = data.index(b"\n")
        held = json.loads(data[:cut])
        payload = memoryview(data)[cut + 1 :]
        head = held["arrays"]
        if held["version"] != VERSION or held["key"] != key or held["check"] != _check(key, head, payload):
            return None
        out: dict[str, np.ndarray] = {}
        at = 0
        for (name, dtypes), (got, dtype, shape) in zip(_ARRAYS.items(), head, strict=True):
            if got != name or dtype not in dtypes:
                return None
            n = int(np.prod(shape, dtype=np.int64))
            # a copy, aligned and its own (the bytes' offset is the header's length)
            a = np.frombuffer(payload, dtype=dtype, count=n, offset=at).reshape(shape)
            at += a.nbytes
            a = a.astype(np.int64) if name == "offsets" else a.copy()
            a.setflags(write=False)
            out[name] = a
        positions = k**d
        m = out["offsets"].shape[0]
        table = out["table"]
        if (
            at != len(payload)
            or out["offsets"].shape != (m, d)
            or out["index"].shape != (positions, m)
            or out["support"].shape != (positions,)
            or table.ndim != 1
            or not table.size
            or table[0] != 0.0
            or (out["index"].size and int(out["index"].max()) >= table.size)
        ):
            return None
        return out
    except (OSError, ValueError, KeyError, TypeError):
        return None


def store(key: str, offsets: np.ndarray, index: np.ndarray, table: np.ndarray, support: np.ndarray) -> None:
    """Keep the weights' arrays under ``key`` (atomically; errors leave no
    file; nothing when they take more than :data:`MAX_BYTES`)."""
    where = cache_dir()
    if where is None:
        return
    reach = int(np.abs(offsets).max()) if offsets.size else 0
    small = next(t for t in _ARRAYS["offsets"] if reach <= np.iinfo(t).max)
    arrays = [np.ascontiguousarray(offsets, dtype=small), index, table, support]
    if sum(a.nbytes for a in arrays) > MAX_BYTES:
        return
    head = [[name, str(a.dtype), list(a.shape)] for name, a in zip(_ARRAYS, arrays, strict=True)]
    payload = b"".join(np.ascontiguousarray(a).tobytes() for a in arrays)
    body = json.dumps({"version": VERSION, "key": key, "arrays": head, "check": _check(key, head, payload)})
    try:
        where.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=where, prefix=".part-", suffix=".bin")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(body.encode() + b"\n")
                f.write(payload)
            os.replace(tmp, where / f"{key}.bin")
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        return


__all__ = ["cache_dir", "key_of", "load", "store", "MAX_BYTES", "VERSION"]
