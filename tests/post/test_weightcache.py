"""The ball weights kept across processes (weightcache)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from dpdbscan.post.coretests.density import lawcache, weightcache
from dpdbscan.post.coretests.density import weights as bw

FIELDS = ("offsets", "index", "table", "support")
ARGS = (4, 4.0, 2, "average", bw._BINS)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(lawcache.WHERE, str(tmp_path))
    monkeypatch.delenv(lawcache.OFF, raising=False)
    return tmp_path / f"weights-v{weightcache.VERSION}"


def _fresh(*args):
    """ball_weights as a fresh process computes it: no in-process cache."""
    return bw._ball_weights.__wrapped__(*args)


def _same(a, b) -> bool:
    return all(
        getattr(a, f).dtype == getattr(b, f).dtype
        and getattr(a, f).shape == getattr(b, f).shape
        and getattr(a, f).tobytes() == getattr(b, f).tobytes()
        for f in FIELDS
    ) and (a.d, a.eta, a.k, a.estimate, a.positions) == (b.d, b.eta, b.k, b.estimate, b.positions)


def _no_computing(monkeypatch):
    def refuse(*args):
        raise AssertionError("computed, not read")

    monkeypatch.setattr(bw, "_computed_ball_weights", refuse)


@pytest.mark.parametrize("args", [ARGS, (3, 2.5, 3, "centre", 1 << 10), (6, 4.0, 1, "average", bw._BINS)])
def test_stored_weights_are_read_back_bit_for_bit(cache, monkeypatch, args):
    computed = bw._computed_ball_weights(*args)
    first = _fresh(*args)
    (path,) = cache.glob("*.bin")
    assert _same(first, computed)
    _no_computing(monkeypatch)
    again = _fresh(*args)
    assert _same(again, computed)
    # read-only, as the computed arrays (the sums' tables are held by their identity)
    assert not any(getattr(again, f).flags.writeable for f in FIELDS)
    assert again.offsets.flags.c_contiguous and again.index.flags.aligned
    # the file holds the arrays under their key: none of the inputs spelt out
    head = json.loads(path.read_bytes().split(b"\n", 1)[0])
    assert set(head) == {"version", "key", "arrays", "check"} and path.name == f"{head['key']}.bin"


def test_every_input_is_in_the_key(cache):
    _fresh(*ARGS)
    b = bw._BINS
    others = [(5, 4.0, 2, "average", b), (4, 3.0, 2, "average", b), (4, 4.0, 1, "average", b)]
    others += [(4, 4.0, 2, "centre", b), (4, 4.0, 2, "average", 1 << 10)]
    for other in others:
        assert _same(_fresh(*other), bw._computed_ball_weights(*other))
    assert len(list(cache.glob("*.bin"))) == 1 + len(others)
    # eta by its exact value: the next float is another key
    assert weightcache.key_of(4, 4.0, 2, "average", 8) != weightcache.key_of(
        4, float(np.nextafter(4.0, 0.0)), 2, "average", 8
    )


def test_a_file_that_does_not_verify_is_recomputed(cache, monkeypatch):
    want = bw._computed_ball_weights(*ARGS)
    _fresh(*ARGS)
    (path,) = cache.glob("*.bin")
    whole = path.read_bytes()
    head, payload = whole.split(b"\n", 1)
    key = json.loads(head)["key"]
    edited = bytearray(payload)
    edited[-9] ^= 1  # one bit of the support, the check no longer matches
    for bad in (head + b"\n" + bytes(edited), whole[: len(whole) // 2], b"", head):
        path.write_bytes(bad)
        assert weightcache.load(key, 4, 2) is None
        assert _same(_fresh(*ARGS), want)
        assert path.read_bytes() == whole  # rewritten whole
    # a file that verifies but is not of these weights' shape (another d's, renamed)
    other = weightcache.key_of(5, 4.0, 2, "average", bw._BINS)
    path.rename(cache / f"{other}.bin")
    assert weightcache.load(other, 5, 2) is None


def test_switched_off_unwritable_or_too_large_it_only_computes(cache, tmp_path, monkeypatch):
    want = bw._computed_ball_weights(*ARGS)
    monkeypatch.setenv(lawcache.OFF, "1")
    assert _same(_fresh(*ARGS), want)
    assert not cache.exists()
    monkeypatch.delenv(lawcache.OFF)
    monkeypatch.setattr(weightcache, "MAX_BYTES", want.index.nbytes)
    assert _same(_fresh(*ARGS), want)
    assert not cache.exists() or not list(cache.iterdir())
    monkeypatch.undo()
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv(lawcache.WHERE, str(blocker))  # a file where the directory should be
    monkeypatch.delenv(lawcache.OFF, raising=False)
    assert _same(_fresh(*ARGS), want)


def test_writers_at_once_leave_one_whole_file(cache):
    w = bw._computed_ball_weights(*ARGS)
    key = weightcache.key_of(*ARGS)
    threads = [
        threading.Thread(target=weightcache.store, args=(key, w.offsets, w.index, w.table, w.support))
        for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [p.name for p in cache.iterdir()] == [f"{key}.bin"]
    held = weightcache.load(key, 4, 2)
    assert held is not None and all(held[f].tobytes() == getattr(w, f).tobytes() for f in FIELDS)


def test_the_weights_sit_beside_the_quantiles(monkeypatch, tmp_path):
    monkeypatch.delenv(lawcache.WHERE, raising=False)
    monkeypatch.delenv(lawcache.OFF, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert weightcache.cache_dir() == tmp_path / "dpdbscan" / f"weights-v{weightcache.VERSION}"
    assert weightcache.cache_dir().parent == lawcache.cache_dir().parent


FRESH = """
import hashlib, sys
from dpdbscan.post.coretests.density import weights as bw
if sys.argv[1] == "read":
    def refuse(*args):
        raise AssertionError("computed, not read")
    bw._computed_ball_weights = refuse
w = bw.ball_weights(6, 4.0, 1)
h = hashlib.sha256()
for a in (w.offsets, w.index, w.table, w.support):
    h.update(str(a.dtype).encode() + a.tobytes())
print(h.hexdigest())
"""


def test_a_fresh_process_reads_what_another_computed(tmp_path):
    env = {**os.environ, lawcache.WHERE: str(tmp_path)}
    env.pop(lawcache.OFF, None)
    outs = [
        subprocess.run(
            [sys.executable, "-c", FRESH, how], capture_output=True, text=True, check=True, env=env
        ).stdout
        for how in ("compute", "read")
    ]
    assert outs[0] == outs[1] and len(outs[0].strip()) == 64
