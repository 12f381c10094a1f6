"""The parameter commands of the CLI (issue 13): sweep over eps and MinPts
lists, explore, forecast and the automatic mode."""

from __future__ import annotations

import numpy as np
import pytest

from dpdbscan.model import load_model, with_params

from clirun import blob_points, run, write_csv


@pytest.fixture
def blobs_csv(tmp_path):
    return write_csv(tmp_path / "blobs.csv", blob_points())


@pytest.fixture
def blobs_model(capsys, blobs_csv, tmp_path):
    rc, _, err = run(
        capsys,
        "fit",
        blobs_csv,
        "--header",
        "--eps",
        "0.25",
        "--min-samples",
        "20",
        "--bounds",
        "0",
        "10",
        "--seed",
        "0",
        "--out-dir",
        tmp_path,
        "--no-png",
    )
    assert rc == 0, err
    return tmp_path / "blobs.spans.json"


def _rows(out):
    return [line.split() for line in out.splitlines() if line.strip()[:1].isdigit()]


def test_sweep_over_eps_and_min_samples_from_one_release(capsys, blobs_csv, tmp_path):
    rc, out, err = run(
        capsys,
        "sweep",
        blobs_csv,
        "--header",
        "--eps",
        "0.5",
        "0.25",
        "0.8",
        "--min-samples",
        "50",
        "20",
        "--bounds",
        "0",
        "10",
        "--seed",
        "0",
        "--out-dir",
        tmp_path,
        "--no-png",
        "--no-geojson",
    )
    assert rc == 0, err
    rows = _rows(out)
    # every pair, eps ascending then MinPts ascending
    assert [(float(r[0]), int(r[1])) for r in rows] == [(a, m) for a in (0.25, 0.5, 0.8) for m in (20, 50)]
    base = load_model(tmp_path / "blobs.eps0.25.m20.spans.json")
    assert base.grid.eps == 0.25 and base.release.eps == 0.25
    for r in rows:
        m = load_model(tmp_path / f"blobs.eps{r[0]}.m{r[1]}.spans.json")
        np.testing.assert_array_equal(m.histogram.values, base.histogram.values)
        assert (m.release.eps, m.release.eta, m.release.min_samples) == (
            base.release.eps,
            base.release.eta,
            base.release.min_samples,
        )
        want = with_params(base, eps=float(r[0]), min_samples=int(r[1]))
        np.testing.assert_array_equal(m.core_keys, want.core_keys)
        assert int(r[3]) == m.n_spans and int(r[4]) == m.n_core_cells
    assert "made at eps=0.25" in out and "costs no budget" in out


def test_sweep_from_a_model_honours_eps(capsys, blobs_model, tmp_path):
    rc, out, err = run(
        capsys,
        "sweep",
        "--model",
        blobs_model,
        "--eps",
        "0.25",
        "0.6",
        "--min-samples",
        "30",
        "--out-dir",
        tmp_path / "sw",
        "--no-png",
        "--no-geojson",
    )
    assert rc == 0, err
    saved = load_model(blobs_model)
    for eps in ("0.25", "0.6"):
        got = load_model(tmp_path / "sw" / f"blobs.eps{eps}.m30.spans.json")
        want = with_params(saved, eps=float(eps), min_samples=30)
        np.testing.assert_array_equal(got.core_keys, want.core_keys)
        np.testing.assert_array_equal(got.labels, want.labels)
        assert got.grid.eps == float(eps)


@pytest.mark.parametrize(
    "eps,match",
    [
        ("0.1", "finer than the release"),
        ("auto", "not 'auto'"),
        ("0", "--eps 0"),
    ],
)
def test_sweep_from_a_model_refuses_bad_eps(capsys, blobs_model, tmp_path, eps, match):
    rc, out, err = run(
        capsys,
        "sweep",
        "--model",
        blobs_model,
        "--eps",
        eps,
        "--min-samples",
        "30",
        "--out-dir",
        tmp_path / "sw",
    )
    assert rc == 2 and match in err, err
    assert not (tmp_path / "sw").exists() or not list((tmp_path / "sw").iterdir())
