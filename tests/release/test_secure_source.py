"""The secure source's large draws from OpenSSL's generator
(``ssl.RAND_bytes``): every byte is the generator's, in order and once; the
small draws stay with ``os.urandom``; Python without ``ssl``, or an OpenSSL
that refuses, falls back to ``os.urandom``; and a forked child does not repeat
its parent's words (OpenSSL reseeds its generator in the child)."""

from __future__ import annotations

import os
import ssl
import sys

import numpy as np
import pytest

from dpdbscan.release.samplers import integers as R


class _Marked:
    """A stand-in for ``ssl.RAND_bytes`` whose calls hand out the bytes
    0, 1, 2, ... (mod 251) in order across calls, and record each size."""

    def __init__(self) -> None:
        self.asked: list[int] = []
        self.next = 0

    def __call__(self, m: int) -> bytes:
        self.asked.append(m)
        out = ((np.arange(m, dtype=np.int64) + self.next) % 251).astype(np.uint8).tobytes()
        self.next += m
        return out


@pytest.mark.parametrize("n", [R.SECURE_OPENSSL_WORDS, R.SECURE_OPENSSL_WORDS + 3, 300_001])
def test_a_large_draw_is_openssl_bytes_in_order(n, monkeypatch):
    fake = _Marked()
    monkeypatch.setattr(R, "_openssl_bytes", lambda: fake)
    monkeypatch.setattr(R, "OPENSSL_CHUNK", 1 << 16)
    monkeypatch.setattr(os, "urandom", lambda m: pytest.fail("a large draw read os.urandom"))
    words = R.SecureSource().raw(n)
    assert words.dtype == np.uint64 and words.shape == (n,) and words.flags.writeable
    assert sum(fake.asked) == 8 * n and max(fake.asked) <= 1 << 16
    want = (np.arange(8 * n, dtype=np.int64) % 251).astype(np.uint8)
    np.testing.assert_array_equal(words.view(np.uint8), want)


def test_a_small_draw_reads_the_os(monkeypatch):
    monkeypatch.setattr(R, "_openssl_bytes", lambda: pytest.fail("a small draw asked OpenSSL"))
    asked: list[int] = []

    def fake(m: int) -> bytes:
        asked.append(m)
        return b"\7" * m

    monkeypatch.setattr(os, "urandom", fake)
    words = R.SecureSource().raw(R.SECURE_OPENSSL_WORDS - 1)
    assert sum(asked) == 8 * (R.SECURE_OPENSSL_WORDS - 1)
    assert np.all(words.view(np.uint8) == 7)


def _refusing(m: int) -> bytes:
    raise ssl.SSLError("PRNG not seeded")


@pytest.mark.parametrize("openssl", [None, _refusing], ids=["no ssl", "OpenSSL refuses"])
def test_without_openssl_a_large_draw_reads_the_os(openssl, monkeypatch):
    """Every byte then comes from ``os.urandom`` (none left from a failed call)."""
    monkeypatch.setattr(R, "_openssl_bytes", lambda: openssl)
    asked: list[int] = []

    def fake(m: int) -> bytes:
        asked.append(m)
        return b"\5" * m

    monkeypatch.setattr(os, "urandom", fake)
    n = R.SECURE_OPENSSL_WORDS + 5
    words = R.SecureSource().raw(n)
    assert sum(asked) == 8 * n
    assert np.all(words.view(np.uint8) == 5)


def test_python_without_ssl_has_no_openssl_source():
    R._openssl_bytes.cache_clear()
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setitem(sys.modules, "ssl", None)  # import ssl raises ImportError
            assert R._openssl_bytes() is None
    finally:
        R._openssl_bytes.cache_clear()
    assert R._openssl_bytes() is ssl.RAND_bytes


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_does_not_repeat_its_parent():
    """The parent draws first (OpenSSL's generator is running), then parent
    and child draw the next words: they must differ, as they would not if
    the child went on from a copy of the parent's state."""
    n = R.SECURE_OPENSSL_WORDS
    src = R.SecureSource()
    src.raw(n)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its words to the parent, then out at once
        try:
            os.close(read)
            data = src.raw(n).tobytes()
            with os.fdopen(write, "wb") as f:
                f.write(data)
        finally:
            os._exit(0)
    os.close(write)
    mine = src.raw(n).tobytes()
    with os.fdopen(read, "rb") as f:
        theirs = f.read()
    os.waitpid(pid, 0)
    assert len(theirs) == len(mine) == 8 * n
    assert theirs != mine
