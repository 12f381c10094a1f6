"""The quantiles of the density margins kept across processes (lawcache)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from dpdbscan.post.coretests.density import densitymargin as dm
from dpdbscan.post.coretests.density import lawcache

WEIGHTS = tuple(sorted([0.25] * 40 + [0.5] * 20 + [1.0] * 9))
ARGS = ("discrete", 0.5, WEIGHTS, 1e-7, None, None)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(lawcache.WHERE, str(tmp_path))
    monkeypatch.delenv(lawcache.OFF, raising=False)
    return tmp_path / f"quantiles-v{lawcache.VERSION}"


def _fresh(*args):
    """weighted_quantile as a fresh process computes it: no in-process caches."""
    dm._binned_survival.cache_clear()
    return dm.weighted_quantile.__wrapped__(*args)


def test_a_stored_quantile_is_read_back_bit_for_bit(cache):
    computed = dm._quantile(*ARGS)
    first = _fresh(*ARGS)
    files = list(cache.glob("*.json"))
    assert len(files) == 1 and first == computed
    again = _fresh(*ARGS)
    assert again == computed and float(again).hex() == float(computed).hex()
    # the file holds the value, its key and checks: none of the inputs
    assert set(json.loads(files[0].read_text())) == {"version", "key", "value", "check"}


@pytest.mark.parametrize("trunc, floor", [(None, None), (2.0, None), ("positive", 1e-3), ("positive", None)])
def test_every_input_is_in_the_key(cache, trunc, floor):
    base = ("discrete", 0.5, WEIGHTS, 1e-4, trunc, floor)
    _fresh(*base)
    for other in (
        ("discrete", 0.25, WEIGHTS, 1e-4, trunc, floor),
        ("discrete", 0.5, WEIGHTS[1:], 1e-4, trunc, floor),
        ("discrete", 0.5, WEIGHTS, 2e-4, trunc, floor),
        ("laplace", 0.5, WEIGHTS, 1e-4, trunc, floor),
    ):
        assert _fresh(*other) == dm._quantile(*other)
    assert len(list(cache.glob("*.json"))) == 5


def test_a_file_that_does_not_verify_is_recomputed(cache):
    want = _fresh(*ARGS)
    (path,) = cache.glob("*.json")
    held = json.loads(path.read_text())
    held["value"] = float(want + 1.0).hex()  # edited, the check no longer matches
    path.write_text(json.dumps(held))
    assert _fresh(*ARGS) == want
    path.write_text(path.read_text()[:20])  # torn
    assert _fresh(*ARGS) == want
    assert lawcache.load(held["key"]) == want  # rewritten whole


def test_switched_off_or_unwritable_it_only_computes(cache, tmp_path, monkeypatch):
    monkeypatch.setenv(lawcache.OFF, "1")
    assert _fresh(*ARGS) == dm._quantile(*ARGS)
    assert not cache.exists()
    monkeypatch.delenv(lawcache.OFF)
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv(lawcache.WHERE, str(blocker))  # a file where the directory should be
    assert _fresh(*ARGS) == dm._quantile(*ARGS)


def test_writers_at_once_leave_one_whole_file(cache):
    key = lawcache.key_of(("x",), np.ones(1), np.ones(1, dtype=np.int64))
    threads = [threading.Thread(target=lawcache.store, args=(key, 1.5)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [p.name for p in cache.iterdir()] == [f"{key}.json"]
    assert lawcache.load(key) == 1.5


def test_the_default_place_is_the_users_cache_directory(monkeypatch, tmp_path):
    monkeypatch.delenv(lawcache.WHERE, raising=False)
    monkeypatch.delenv(lawcache.OFF, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert lawcache.cache_dir() == tmp_path / "dpdbscan" / f"quantiles-v{lawcache.VERSION}"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert (
        lawcache.cache_dir() == tmp_path / "home" / ".cache" / "dpdbscan" / f"quantiles-v{lawcache.VERSION}"
    )


def _digest_with_scipy_at(folder) -> str:
    """The code digest a fresh process computes with ``folder`` first on its
    path (where a test puts a stand-in scipy), and whether it imported it."""
    code = (
        "import sys; from dpdbscan.post.coretests.density import lawcache; "
        "print(lawcache._code_digest(), 'scipy' in sys.modules)"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), *sys.path])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    digest, imported = out.stdout.split()
    assert imported == "False"
    return digest


def test_the_key_names_scipys_version_without_importing_scipy(tmp_path):
    # a fit whose quantiles are all stored needs no scipy: importing it only
    # for its version cost the command's fit and its drawing copy 0.02-0.05 s each
    digests = []
    for version in ("1.0.0", "2.0.0"):
        pkg = tmp_path / version / "scipy"
        pkg.mkdir(parents=True)
        (pkg / "__init__.py").write_text("raise ImportError('a stand-in scipy is never imported')\n")
        (pkg / "version.py").write_text(f'version = "{version}"\n')
        digests.append(_digest_with_scipy_at(tmp_path / version))
    assert digests[0] != digests[1]
    # the installed scipy, read the same way and not imported either
    assert _digest_with_scipy_at(tmp_path / "none") not in digests
