"""Model files written by dpdbscan 0.2.0 still load and predict the same.

The files in ``fixtures_0_2_0/`` were written by the 0.2.0 release itself
(``make_fixtures.py`` there says how; run it only against a v0.2.0 checkout):
event level with each histogram, person level with a fixed and a privately
chosen k, both automatic modes, ``--geo``, the estimator's file without its
histogram and a re-parameterised model. Beside each ``NAME.spans.json``,
``NAME.expected.json`` holds query points, the labels 0.2.0 gave them and the
model's public facts as 0.2.0 read them.

A published model is a release: its owner cannot re-fit it without spending
budget again. So when a quantity is renamed in the file or the schema version
is bumped, the reader must keep taking these files; never regenerate them to
make this test pass. When a Python attribute is renamed, update
:func:`facts` below (the one place that reads them), not the fixtures.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from dpdbscan import load_model, predict_lonlat, save_model, summary, with_params

from clirun import run

HERE = Path(__file__).resolve().parent / "fixtures_0_2_0"
NAMES = sorted(p.name.removesuffix(".expected.json") for p in HERE.glob("*.expected.json"))


def expected(name: str) -> dict:
    return json.loads((HERE / f"{name}.expected.json").read_text())


def facts(model) -> dict:
    """The public facts of a model, read with today's names (the keys are
    those ``make_fixtures.py`` recorded with 0.2.0's)."""
    rel, units = model.release, model.release.units
    return {
        "epsilon": rel.epsilon,
        "delta": rel.delta,
        "noise": rel.noise,
        "histogram": rel.histogram,
        "unit": "row" if units is None else "unit",
        "max_cells_per_unit": None if units is None else units.max_cells_per_unit,
        "max_points_per_cell": None if units is None else units.max_points_per_cell,
        "zcdp_rho": rel.rho,
        "unit_choice": rel.unit_choice is not None,
        "eps": model.grid.alpha,
        "release_eps": rel.eps,
        "min_samples": model.spec.min_samples,
        "core": model.spec.core,
        "subcells": model.spec.subcells,
        "n_spans": model.n_spans,
        "n_core_cells": model.n_core_cells,
        "auto": None if model.auto is None else model.auto.get("selection", "auto"),
        "has_histogram": model.histogram is not None,
        "geo": "projection" in model.metadata,
    }


def labels_of(model, exp: dict) -> np.ndarray:
    points = np.asarray(exp["points"], dtype=float)
    return predict_lonlat(model, points) if exp["geo"] else model.predict(points)


def same_facts(got: dict, want: dict) -> None:
    assert got.keys() == want.keys()
    for key, value in want.items():
        if isinstance(value, float):
            assert math.isclose(got[key], value, rel_tol=1e-12), key
        else:
            assert got[key] == value, key


def test_the_fixtures_cover_every_kind_of_release():
    """Deleting a fixture must not pass silently: the kinds the issue names
    (event and person level, the automatic mode, --geo) are all here, every
    file written by 0.2.0 and small."""
    kinds = {name: expected(name) for name in NAMES}
    assert len(kinds) >= 10
    assert {e["written_by"] for e in kinds.values()} == {"0.2.0"}
    f = [e["facts"] for e in kinds.values()]
    assert {x["unit"] for x in f} == {"row", "unit"}
    assert {x["histogram"] for x in f} == {"dense", "sparse", "stability"}
    assert {x["noise"] for x in f} == {"discrete", "laplace", "gaussian"}
    assert {x["auto"] for x in f} >= {"levels", "flat"}
    assert any(x["geo"] for x in f) and any(x["unit_choice"] for x in f)
    assert any(not x["has_histogram"] for x in f) and any(x["eps"] != x["release_eps"] for x in f)
    for name in NAMES:
        assert (HERE / f"{name}.spans.json").stat().st_size < 100_000
        data = json.loads((HERE / f"{name}.spans.json").read_text())
        assert data["version"] == 1 and data["metadata"].get("tool", "dpdbscan 0.2.0") == "dpdbscan 0.2.0"


@pytest.mark.parametrize("name", NAMES)
def test_an_old_file_loads_and_predicts_as_0_2_0_did(name):
    exp = expected(name)
    model = load_model(HERE / exp["model"])
    same_facts(facts(model), exp["facts"])
    labels = labels_of(model, exp)
    assert labels.tolist() == exp["labels"]
    assert summary(model)  # the words are read from the old record without error


@pytest.mark.parametrize("name", NAMES)
def test_an_old_file_saved_again_by_today_still_predicts_the_same(name, tmp_path):
    """Opening an old file and saving it (today's schema) loses nothing."""
    exp = expected(name)
    path = tmp_path / "again.spans.json"
    save_model(load_model(HERE / exp["model"]), path)
    model = load_model(path)
    same_facts(facts(model), exp["facts"])
    assert labels_of(model, exp).tolist() == exp["labels"]


def test_an_old_release_re_parameterised_today_gives_0_2_0s_spans():
    """The noisy histogram of an old file is read back bit for bit: other
    (eps, MinPts) from it give the spans 0.2.0 gave (``reparam`` was made by
    0.2.0's ``with_params(event_dense_laplace, eps=1.2, min_samples=60)``)."""
    exp = expected("reparam")
    model = with_params(load_model(HERE / "event_dense_laplace.spans.json"), eps=1.2, min_samples=60)
    same_facts(facts(model), exp["facts"])
    assert labels_of(model, exp).tolist() == exp["labels"]


def test_dpdbscan_predict_labels_old_files_as_0_2_0_did(capsys, tmp_path):
    """The command line on an old --geo file (lon/lat in, the stored
    projection) and an old person-level file."""
    for name, cols in (("geo", "lon,lat"), ("person_gaussian", "x,y")):
        exp = expected(name)
        csv = tmp_path / f"{name}.csv"
        csv.write_text(cols + "\n" + "".join(f"{a!r},{b!r}\n" for a, b in exp["points"]))
        rc, out, _ = run(capsys, "predict", HERE / exp["model"], csv, "--header", "-q")
        assert rc == 0
        lines = out.split()
        assert lines[0] == "label"
        assert [int(v) for v in lines[1:]] == exp["labels"]


def test_dpdbscan_info_reads_an_old_person_level_file(capsys):
    exp = expected("person_auto_k")
    rc, out, _ = run(capsys, "info", HERE / exp["model"], "--json")
    assert rc == 0
    info, want = json.loads(out), exp["facts"]
    for key in (
        "epsilon",
        "delta",
        "noise",
        "histogram",
        "unit",
        "max_cells_per_unit",
        "max_points_per_cell",
    ):
        assert info[key] == want[key], key
    assert math.isclose(info["zcdp_rho"], want["zcdp_rho"], rel_tol=1e-12)
    assert info["min_samples"] == want["min_samples"]
