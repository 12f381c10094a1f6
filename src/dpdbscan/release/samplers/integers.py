"""Sources of randomness and exact integer samplers built on them.

Two sources share one interface, ``raw(n) -> uint64 array``:

* :class:`SecureSource` reads a cryptographically secure generator: the
  operating system's (``os.urandom``), and for large draws OpenSSL's
  CTR_DRBG (AES-256, seeded by the operating system) through the standard
  library's ``ssl.RAND_bytes``, where Python has it. It is the default
  (``random_state=None``).
* :class:`SeededSource` wraps numpy's PCG64 for reproducible research runs. It is
  not cryptographically secure and the estimator warns when it is used.

Everything else here turns raw 64-bit words into exact samples with integer
arithmetic only: uniform integers below a bound (rejection sampling),
Bernoulli(num/den), Bernoulli(exp(-num/den)) and the discrete Laplace
distribution, following Canonne, Kamath and Steinke, "The Discrete Gaussian for
Differential Privacy" (NeurIPS 2020), Algorithms 1 and 2, vectorised over
arrays: each round advances every sample that is still running. The discrete
Laplace and geometric laws are drawn faster, and as exactly, by inversion
(:mod:`.inversion`) wherever its tables are built (epsilon above about
0.0027); the CKS rounds (:func:`cks_discrete_laplace`,
:func:`cks_discrete_geometric`) remain for smaller epsilon.
"""

from __future__ import annotations

import functools
import math
import os
import threading
import warnings
from collections.abc import Callable
from fractions import Fraction
from typing import TypeAlias

import numpy as np
from numpy.typing import ArrayLike

from ...exceptions import InsecureRandomnessWarning
from ...laws.noise import rational_epsilon  # noqa: F401 - re-exported for the noises
from . import inversion
from .source import Source

_TWO63 = np.uint64(1 << 63)

#: A seed for reproducible (insecure) noise: an int or a numpy Generator.
Seed: TypeAlias = int | np.integer | np.random.Generator


#: Bytes of one ``os.urandom`` call of :class:`SecureSource` (each copied
#: into the words while it is still in cache: 8 MB in calls of 256 KB took
#: 22 ms of CPU, in one call 27 ms)
SECURE_CHUNK = 1 << 18
#: Words from which :class:`SecureSource` reads the two halves of a draw on
#: two threads (the kernel's generator runs on each core; ``os.urandom``
#: releases the GIL): a sparse 4-D release reads 5.4 MB, most of it in two
#: draws of 0.2-0.4M words
SECURE_THREADED_WORDS = 1 << 17


#: Words from which a draw of :class:`SecureSource` comes from OpenSSL's
#: generator (:func:`_openssl_bytes`) where Python has it: 3.76M cells of
#: noise (7.5 MB) took 14 ms from ``os.urandom`` on two threads, 2 ms from
#: OpenSSL on one
SECURE_OPENSSL_WORDS = 1 << 17
#: Bytes of one ``ssl.RAND_bytes`` call (OpenSSL serves it in requests of
#: 64 KB; larger calls only save Python's overhead: 7.5 MB in calls of
#: 1 MB took 1.6 ms, of 256 KB 1.9 ms)
OPENSSL_CHUNK = 1 << 20


class SecureSource:
    """Raw 64-bit words from a cryptographically secure generator.

    A draw of fewer than :data:`SECURE_OPENSSL_WORDS` words reads the
    operating system's CSPRNG (``os.urandom``). A larger one reads OpenSSL's
    generator (``ssl.RAND_bytes``: NIST SP 800-90A CTR_DRBG with AES-256,
    seeded and reseeded from the operating system, reseeded in a forked
    child; the generator OpenDP's noise uses), in chunks of
    :data:`OPENSSL_CHUNK` bytes; where Python was built without ``ssl``, or
    OpenSSL refuses, it reads ``os.urandom`` instead, in two halves on two
    threads (:data:`SECURE_THREADED_WORDS`). Every byte is a secure
    generator's, independent and uniform whichever generator or thread made
    it and in whatever order, so the words have the same law either way
    (docs/privacy.md, "Randomness")."""

    secure = True

    def raw(self, n: int) -> np.ndarray:
        if n <= 0:
            return np.empty(0, dtype=np.uint64)
        out = np.empty(int(n), dtype=np.uint64)
        buf = out.view(np.uint8)
        if out.size >= SECURE_OPENSSL_WORDS and _read_openssl(buf):
            return out
        if out.size < SECURE_THREADED_WORDS or not _two_cores():
            _read_secure(buf)
            return out
        half = 8 * (out.size // 2)
        failed: list[Exception] = []

        def other() -> None:
            try:
                _read_secure(buf[half:])
            except Exception as e:  # noqa: BLE001 - raised again by the caller below
                failed.append(e)

        thread = threading.Thread(target=other, name="dpdbscan-urandom", daemon=True)
        thread.start()
        try:
            _read_secure(buf[:half])
        finally:
            thread.join()
        if failed:
            raise failed[0]
        return out


def _read_secure(buf: np.ndarray) -> None:
    """Fill the bytes ``buf`` from ``os.urandom``, a chunk at a time."""
    for a in range(0, buf.size, SECURE_CHUNK):
        m = min(SECURE_CHUNK, buf.size - a)
        buf[a : a + m] = np.frombuffer(os.urandom(m), dtype=np.uint8)


def _read_openssl(buf: np.ndarray) -> bool:
    """Fill the bytes ``buf`` from OpenSSL's generator, a chunk at a time;
    False (``buf`` to be filled from ``os.urandom``) where Python has no
    ``ssl`` module or OpenSSL reports an error."""
    rand_bytes = _openssl_bytes()
    if rand_bytes is None:
        return False
    try:
        for a in range(0, buf.size, OPENSSL_CHUNK):
            m = min(OPENSSL_CHUNK, buf.size - a)
            buf[a : a + m] = np.frombuffer(rand_bytes(m), dtype=np.uint8)
    except OSError:  # ssl.SSLError (OpenSSL not seeded, say): the OS's generator instead
        return False
    return True


@functools.lru_cache(maxsize=1)
def _openssl_bytes() -> Callable[[int], bytes] | None:
    """``ssl.RAND_bytes``, imported on the first large draw (not at import:
    ``ssl`` costs 4-15 ms), or None where Python was built without it."""
    try:
        import ssl
    except ImportError:
        return None
    return ssl.RAND_bytes


@functools.lru_cache(maxsize=1)
def _two_cores() -> bool:
    """Whether this process may run on two cores or more."""
    try:
        return len(os.sched_getaffinity(0)) >= 2
    except (AttributeError, OSError):
        return (os.cpu_count() or 1) >= 2


class SeededSource:
    """Reproducible 64-bit words from numpy's PCG64. Not secure."""

    secure = False

    def __init__(self, seed: Seed) -> None:
        if isinstance(seed, np.random.Generator):
            self._gen = seed
        else:
            self._gen = np.random.default_rng(seed)

    def raw(self, n: int) -> np.ndarray:
        if n <= 0:
            return np.empty(0, dtype=np.uint64)
        return self._gen.bit_generator.random_raw(int(n)).astype(np.uint64, copy=False)


def make_source(
    random_state: Seed | SecureSource | SeededSource | None, *, warn: bool = True
) -> SecureSource | SeededSource:
    """``None`` -> secure OS randomness; an int/Generator -> seeded (warns)."""
    if random_state is None:
        return SecureSource()
    if isinstance(random_state, (SecureSource, SeededSource)):
        return random_state
    if isinstance(random_state, (bool, float)) or not isinstance(
        random_state, (int, np.integer, np.random.Generator)
    ):
        raise TypeError(f"random_state must be None, an int or a numpy Generator, got {random_state!r}")
    if warn:
        warnings.warn(
            "random_state is set: the noise is reproducible and NOT cryptographically "
            "secure. Use random_state=None for a real release.",
            InsecureRandomnessWarning,
            stacklevel=3,
        )
    return SeededSource(random_state)


# --------------------------------------------------------------------------- #
# exact integer samplers


def randbelow(source: Source, m: ArrayLike) -> np.ndarray:
    """Uniform integers in ``[0, m)`` for each bound in ``m`` (1 <= m < 2**63).

    Rejection sampling on 63-bit words, so the result is exactly uniform.
    """
    m = np.asarray(m, dtype=np.uint64)
    shape = m.shape
    m = m.ravel()
    out = np.empty(m.size, dtype=np.uint64)
    todo = np.arange(m.size)
    mm = m
    while todo.size:
        x = source.raw(todo.size) >> np.uint64(1)
        limit = (_TWO63 // mm) * mm
        ok = x < limit
        out[todo[ok]] = x[ok] % mm[ok]
        todo = todo[~ok]
        mm = mm[~ok]
    return out.reshape(shape)


def _cks_parity(source, num: np.ndarray, den: int, k0: np.ndarray) -> np.ndarray:
    """Finish CKS Algorithm 1 from trial ``k0``: 1 iff the first failure is odd.

    For each element the trials ``1 .. k0 - 1`` are known to have succeeded;
    draw Bernoulli(num / (den * k)) for ``k = k0, k0 + 1, ...`` until the first
    failure ``K`` and return ``K`` odd. Each trial is one exact uniform integer.
    """
    num = np.asarray(num, dtype=np.uint64).ravel()
    out = np.zeros(num.size, dtype=bool)
    idx = np.arange(num.size)
    k = np.asarray(k0, dtype=np.uint64).ravel().copy()
    den64 = np.uint64(den)
    while idx.size:
        a = randbelow(source, den64 * k) < num
        stop = ~a
        out[idx[stop]] = (k[stop] & np.uint64(1)) == 1
        idx, k, num = idx[a], k[a] + np.uint64(1), num[a]
    return out


def _inversion_depth(den: int, extra: int = 1) -> int:
    """Largest k with extra * den**k * k! <= 2**61 (at least 1 for den, extra <= 2**20)."""
    k, size = 0, extra
    while size * den * (k + 1) <= 1 << 61:
        k += 1
        size *= den * k
    return k


def _uniform_words(source, n: int, bound: int) -> tuple[np.ndarray, int]:
    """Words ``w`` uniform on ``[0, mult * bound)``, ``mult = (2**64 - 1) // bound``.

    ``w // mult`` is then uniform on ``[0, bound)`` (exact rejection). Keeping
    ``mult * bound < 2**64`` keeps every threshold below it representable.
    """
    mult = ((1 << 64) - 1) // bound
    limit = np.uint64(mult * bound)
    w = source.raw(n)
    bad = np.flatnonzero(w >= limit)
    while bad.size:
        w[bad] = source.raw(bad.size)
        bad = bad[w[bad] >= limit]
    return w, mult


def _exp_neg_by_inversion(source, w, mult: int, num, den: int, kmax: int) -> np.ndarray:
    """Bernoulli(exp(-num/den)) from words ``w`` uniform on ``[0, mult * den**kmax kmax!)``.

    CKS Algorithm 1 (gamma = num/den <= 1) draws Bernoulli(gamma/k) for
    k = 1, 2, ... until the first failure K and returns K odd. P(K > k) =
    num**k / (den**k k!) is rational, so for k <= kmax
    ``K > k  <=>  w < mult * num**k den**(kmax-k) kmax!/k!`` decides the first
    kmax trials at once; samples with ``K > kmax`` continue trial by trial.
    """
    fact = math.factorial(kmax)
    # k = 1 on the full arrays; then only the (few) samples still running.
    alive = w < num * np.uint64(mult * den ** (kmax - 1) * fact)
    out = ~alive  # K = 1 (odd) where the first trial failed
    run = np.flatnonzero(alive)
    w_run, num_run = w[run], num[run]
    num_pow = num_run.copy()
    for k in range(2, kmax + 1):
        if not run.size:
            return out
        num_pow *= num_run
        alive = w_run < num_pow * np.uint64(mult * den ** (kmax - k) * (fact // math.factorial(k)))
        if k % 2 == 1:
            out[run[~alive]] = True  # K = k is odd
        run, w_run, num_run, num_pow = run[alive], w_run[alive], num_run[alive], num_pow[alive]
    if run.size:  # K > kmax: finish trial by trial
        out[run] = _cks_parity(source, num_run, den, np.full(run.size, kmax + 1))
    return out


def uniform_below(source: Source, n: int, bound: int) -> np.ndarray:
    """``n`` exact uniform integers in ``[0, bound)`` (int64; 1 <= bound <= 2**63)."""
    w, mult = _uniform_words(source, n, int(bound))
    return (w // np.uint64(mult)).view(np.int64)


def bernoulli_exp_neg(source: Source, num: ArrayLike, den: int) -> np.ndarray:
    """Exact Bernoulli(exp(-num/den)) for integer arrays ``0 <= num <= den``.

    One 64-bit word per sample decides the first trials of CKS Algorithm 1
    by inversion (:func:`_exp_neg_by_inversion`).
    """
    num = np.asarray(num, dtype=np.uint64).ravel()
    den = int(den)
    kmax = _inversion_depth(den)
    w, mult = _uniform_words(source, num.size, den**kmax * math.factorial(kmax))
    return _exp_neg_by_inversion(source, w, mult, num, den, kmax)


def _uniform_accept_exp_neg(source, n: int, t: int):
    """``U`` uniform on [0, t) and ``B ~ Bernoulli(exp(-U/t))``, from one word each.

    With ``size = t**kmax kmax!`` and ``w`` uniform on ``[0, mult * t * size)``,
    ``U = w // (mult * size)`` and ``w - U * mult * size`` are independent and
    uniform on [0, t) and [0, mult * size): the second feeds the inversion.
    """
    kmax = _inversion_depth(t, extra=t)
    size = t**kmax * math.factorial(kmax)
    w, mult = _uniform_words(source, n, t * size)
    block = np.uint64(mult * size)
    u = w // block
    w -= u * block
    return u, _exp_neg_by_inversion(source, w, mult, u, t, kmax)


# Bernoulli(exp(-1)) from one 16-bit word (CKS Algorithm 1 with gamma = 1): the
# first failed trial K has P(K > k) = 1/k!, so with w uniform on [0, 13 * 7!)
# K > k iff w < 13 * 7!/k! for k <= 7. Codes: 0 = K even (failure), 1 = K odd
# (success), 2 = w >= 13 * 7! (reject, redraw), 3 = K > 7 (finish by _cks_parity).
_EXP1_DEPTH = 7
_EXP1_MULT = (1 << 16) // math.factorial(_EXP1_DEPTH)
_EXP1_LIMIT = _EXP1_MULT * math.factorial(_EXP1_DEPTH)


def _exp1_table() -> np.ndarray:
    w = np.arange(1 << 16, dtype=np.int64)
    count = np.zeros(w.size, dtype=np.int64)
    for k in range(1, _EXP1_DEPTH + 1):
        count += w < _EXP1_LIMIT // math.factorial(k)
    code = np.where(count % 2 == 1, 0, 1).astype(np.uint8)
    code[count == _EXP1_DEPTH] = 3
    code[w >= _EXP1_LIMIT] = 2
    return code


_EXP1_CODE = _exp1_table()


def _raw16(source, n: int) -> np.ndarray:
    return source.raw((n + 3) // 4).view(np.uint16)[:n]


def _raw_bits(source, n: int) -> np.ndarray:
    """``n`` independent fair bits (bool), 64 per raw word."""
    words = source.raw((n + 63) // 64)
    return np.unpackbits(words.view(np.uint8), count=n).view(bool)


def _exp1_codes(source, n: int, decided: bool = False) -> np.ndarray:
    """One Bernoulli(exp(-1)) trial per element: 0 = failure, 1 = success, 2 = redraw.

    With ``decided`` the redraws are made here, so every code is 0 or 1.
    """
    code = _EXP1_CODE[_raw16(source, n)]
    deep = np.flatnonzero(code == 3)
    if deep.size:
        ones = np.ones(deep.size, dtype=np.uint64)
        odd = _cks_parity(source, ones, 1, np.full(deep.size, _EXP1_DEPTH + 1))
        code[deep] = odd
    if decided:
        again = np.flatnonzero(code == 2)
        while again.size:  # the rejected word is skipped, exactly
            code[again] = _exp1_codes(source, again.size)
            again = again[code[again] == 2]
    return code


def geometric_exp_neg1(source: Source, n: int, compiled: bool = False) -> np.ndarray:
    """``V`` with P(V >= v) = exp(-v): count Bernoulli(exp(-1)) successes.

    Each round decides one Bernoulli(exp(-1)) for every sample still running,
    from one 16-bit word through :data:`_EXP1_CODE`; the rare words that
    need more than seven CKS trials are finished exactly by :func:`_cks_parity`.
    Only about 37% of the samples survive each round. ``compiled``: the
    rounds' bookkeeping in compiled passes (:mod:`.noiserounds`), the same
    words and values.
    """
    return _geometric_from_first(source, _exp1_codes(source, n), compiled)


def _geometric_from_first(source, code: np.ndarray, compiled: bool = False) -> np.ndarray:
    """Finish the count of ``geometric_exp_neg1`` given its first-round codes."""
    if compiled:
        # lazy: numba loads only where a fit loads it anyway (countnoise.compiled_noise)
        from .noiserounds import count_round, first_counts

        v = np.empty(code.size, dtype=np.int64)
        idx = first_counts(code, v)
        while idx.size:
            idx = count_round(v, idx, _exp1_codes(source, idx.size))
        return v
    v = (code == 1).astype(np.int64)
    # (of a bool array: numpy's nonzero of uint8 codes took 60x longer)
    idx = np.flatnonzero(code != 0)
    while idx.size:
        code = _exp1_codes(source, idx.size)
        v[idx] += code == 1
        idx = idx[code != 0]
    return v


def _one_sided(source, n: int, s: int, t: int, compiled: bool = False) -> np.ndarray:
    """Y >= 0 with P(Y = y) proportional to exp(-y * s / t), exactly (CKS Alg. 2)."""
    if t == 1:  # U is always 0 and always accepted: Y = V // s
        v = geometric_exp_neg1(source, n, compiled)
        return v if s == 1 else v // s
    # U uniform on [0, t), kept with probability exp(-U/t); a rejected U is
    # drawn again for that sample alone.
    u, ok = _uniform_accept_exp_neg(source, n, t)
    bad = np.flatnonzero(~ok)
    while bad.size:
        u[bad], ok_bad = _uniform_accept_exp_neg(source, bad.size, t)
        bad = bad[~ok_bad]
    x = geometric_exp_neg1(source, n, compiled)
    x *= t
    x += u.view(np.int64)  # u < t <= 2**20
    x //= s
    return x


def discrete_laplace(source: Source, n: int, epsilon: Fraction, compiled: bool = False) -> np.ndarray:
    """``n`` exact samples with P(Z = z) proportional to exp(-epsilon |z|).

    By inversion (:func:`.inversion.discrete_laplace`: one 16-bit word and
    a table look-up per sample) wherever :func:`.inversion.applies` (epsilon
    above about 0.0027, public), else by :func:`cks_discrete_laplace`
    (``compiled``: its rounds compiled). Either way the exact law.
    """
    if inversion.applies(epsilon):
        return inversion.discrete_laplace(source, int(n), epsilon)
    return cks_discrete_laplace(source, n, epsilon, compiled)


def cks_discrete_laplace(source: Source, n: int, epsilon: Fraction, compiled: bool = False) -> np.ndarray:
    """``n`` exact samples with P(Z = z) proportional to exp(-epsilon |z|), CKS Algorithm 2.

    Z = +-Y with a fair sign, where a draw of "-0" is rejected (so that 0 is
    not counted twice) and that sample alone is drawn again. ``compiled``:
    the rounds' bookkeeping in compiled passes (:mod:`.noiserounds`; where a
    fit loads numba anyway), the same words drawn in the same calls and the
    same values.
    """
    s, t = epsilon.numerator, epsilon.denominator
    if s == 1 and t == 1:
        # Y = V and Y = 0 exactly when the first trial of V fails, so a
        # rejected "-0" needs a new sign and a new first trial only.
        code = _exp1_codes(source, n, decided=True)
        neg = _raw_bits(source, n)
        if compiled:
            # lazy: numba loads only where a fit loads it anyway (countnoise.compiled_noise)
            from .noiserounds import negative_zeros, redraw_zeros

            bad = negative_zeros(neg, code)
            while bad.size:
                new_code = _exp1_codes(source, bad.size, decided=True)
                bad = redraw_zeros(bad, code, neg, new_code, _raw_bits(source, bad.size))
        else:
            bad = np.flatnonzero(neg & (code == 0))
            while bad.size:
                code[bad] = _exp1_codes(source, bad.size, decided=True)
                neg[bad] = _raw_bits(source, bad.size)
                bad = bad[neg[bad] & (code[bad] == 0)]
        y = _geometric_from_first(source, code, compiled)
    else:
        y = _one_sided(source, n, s, t, compiled)
        neg = _raw_bits(source, n)
        bad = np.flatnonzero(neg & (y == 0))
        while bad.size:
            y[bad] = _one_sided(source, bad.size, s, t, compiled)
            neg[bad] = _raw_bits(source, bad.size)
            bad = bad[neg[bad] & (y[bad] == 0)]
    if compiled:
        # lazy: numba loads only where a fit loads it anyway (countnoise.compiled_noise)
        from .noiserounds import set_signs

        set_signs(y, neg)
        return y
    # y -> -y where neg, in place (one masked pass: the two's complement
    # (y ^ -1) + 1 through an int64 copy of the mask took four)
    np.negative(y, out=y, where=neg)
    return y


def discrete_geometric(source: Source, n: int, epsilon: Fraction, compiled: bool = False) -> np.ndarray:
    """``n`` exact samples of G >= 0 with P(G = g) proportional to exp(-epsilon g).

    By inversion (:func:`.inversion.geometric`) wherever
    :func:`.inversion.applies`, else by :func:`cks_discrete_geometric`.
    """
    if inversion.applies(epsilon):
        return inversion.geometric(source, int(n), epsilon)
    return cks_discrete_geometric(source, n, epsilon, compiled)


def cks_discrete_geometric(source: Source, n: int, epsilon: Fraction, compiled: bool = False) -> np.ndarray:
    """``n`` exact samples of G >= 0 with P(G = g) proportional to exp(-epsilon g),
    CKS Algorithm 2 without the sign. ``compiled``: the rounds' bookkeeping
    compiled (:mod:`.noiserounds`), the same words and values."""
    return _one_sided(source, n, epsilon.numerator, epsilon.denominator, compiled)


def uniform01(source: Source, n: int) -> np.ndarray:
    """Floats in [0, 1) with 53 random bits (for the continuous-noise variant)."""
    return (source.raw(n) >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))
