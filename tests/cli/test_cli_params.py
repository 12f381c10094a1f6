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


def test_eta_4_given_on_the_command_line_is_kept_the_default_may_widen_in_8d(capsys, tmp_path):
    """--eta 4 asks for the eta-4 grid (approximation ratio 7); leaving it out,
    or --eta auto, lets the coarse release of 8-D widen the cells (eta 8)."""
    import json

    box = ["--bounds", *["0"] * 8, *["1"] * 8]
    common = ["forecast", "--eps", "0.06", "--min-samples", "20", *box, "--json"]
    widths = {}
    for given in ([], ["--eta", "auto"], ["--eta", "4"]):
        rc, out, err = run(capsys, *common, *given)
        assert rc == 0, err
        widths[" ".join(given)] = json.loads(out)["cell_width"]
    assert widths[""] == widths["--eta auto"] == pytest.approx(2 * widths["--eta 4"], rel=1e-12)
    assert widths["--eta 4"] == pytest.approx(0.06 / np.sqrt(8), rel=1e-12)
    # a fit: its model records the eta it was made at
    rng = np.random.default_rng(2)
    X = np.clip(0.5 + 0.02 * rng.standard_normal((400, 8)), 0, 1)
    path = tmp_path / "p8.csv"
    path.write_text(
        "\n".join([",".join(f"c{i}" for i in range(8))] + [",".join(map(repr, r)) for r in X.tolist()])
    )
    etas = {}
    for given in ([], ["--eta", "4"]):
        out_dir = tmp_path / ("asked" if given else "auto")
        rc, _, err = run(
            capsys,
            "fit",
            path,
            "--header",
            "--eps",
            "0.06",
            "--min-samples",
            "20",
            *box,
            "--seed",
            "0",
            "--out-dir",
            out_dir,
            "--no-png",
            "--no-geojson",
            *given,
        )
        assert rc == 0, err
        m = load_model(out_dir / "p8.spans.json")
        etas[bool(given)] = (m.release.grid.eta, m.release.grid.approx_ratio)
    assert etas == {False: (8.0, 11.0), True: (4.0, 7.0)}
    rc, out, _ = run(capsys, "fit", "--help")
    assert rc == 0 and "'auto' (default)" in " ".join(out.split())
