"""The span model file against its published JSON Schema (src/dpdbscan/model/schema.json).

Every kind of model the library saves must match the schema (and load, and
match again once re-saved); files broken by hand (a wrong type, a missing
field, a value out of range) must be refused by the schema and by the loader
alike. The schema's ranges are the parameter table's
(:data:`dpdbscan.params.parameters.PARAMETERS`). Where the schema and the loader
disagree today, the tests below say so case by case.
"""

from __future__ import annotations

import copy
import json
import tomllib
import warnings
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
from jsonschema import Draft202012Validator

from dpdbscan import DPDBSCAN
from dpdbscan.cells.grid import MAX_RELEASE_ETA
from dpdbscan.estimator import fit_lonlat
from dpdbscan.model import load_model, model_from_dict, save_model, to_json, with_params
from dpdbscan.params.parameters import PARAMETERS, Integer, Options, Real
from dpdbscan.plan.coarserelease import COARSE_RELEASE_FACTOR
from dpdbscan.post.coretests import CORE_TESTS

from spanmodels import hand_model

SCHEMA = json.loads((resources.files("dpdbscan.model") / "schema.json").read_text())
VALIDATOR = Draft202012Validator(SCHEMA)
SF = (-122.48, 37.72, -122.38, 37.82)


def _strict_json(text: str):
    """JSON as RFC 8259 has it: NaN and Infinity are not JSON."""

    def refuse(name):
        raise ValueError(f"{name} in a model file")

    return json.loads(text, parse_constant=refuse)


def _errors(doc) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message[:200]}" for e in VALIDATOR.iter_errors(doc)]


# --------------------------------------------------------------------------- every kind of saved model


def _points(seed=3):
    rng = np.random.default_rng(seed)
    return np.vstack([rng.normal(0.3, 0.04, (600, 2)), rng.normal(0.7, 0.05, (600, 2)), rng.random((200, 2))])


def _fit(**kw):
    params = dict(eps=0.05, min_samples=5, epsilon=1.0, bounds=(0, 1), random_state=0)
    params.update(kw)
    X = params.pop("X", None)
    units = params.pop("units", None)
    return DPDBSCAN(**params).fit(_points() if X is None else X, units=units).spans_


def _units(n=1400):
    return np.arange(n) // 7  # 200 people with 7 points each


def _legacy(model):
    """A bound model as saved before gamma_upper was recorded, read and saved again."""
    doc = json.loads(to_json(model))
    del doc["noise_margin_upper"]
    return model_from_dict(doc)


MODELS = {
    "dense, density test": lambda: _fit(),
    "dense, bound test": lambda: _fit(core="bound"),
    "bound test, theoretical threshold": lambda: _fit(core="bound", raise_min_samples=False),
    "sparse, density test": lambda: _fit(histogram="sparse"),
    "sparse, bound test, theta 0": lambda: _fit(histogram="sparse", core="bound", theta=0.0),
    "stability, density test": lambda: _fit(histogram="stability", delta=1e-6),
    "stability, bound test": lambda: _fit(histogram="stability", delta=1e-6, core="bound"),
    "continuous Laplace noise": lambda: _fit(noise="laplace"),
    "gaussian noise, event level": lambda: _fit(noise="gaussian", delta=1e-6),
    "person level, gaussian": lambda: _fit(units=_units(), max_cells_per_unit=3, delta=1e-6),
    "person level, stability, bound test": lambda: _fit(
        units=_units(),
        max_cells_per_unit=3,
        max_points_per_cell=2,
        delta=1e-6,
        histogram="stability",
        core="bound",
    ),
    "person level, k chosen privately": lambda: _fit(units=_units(), max_cells_per_unit="auto", delta=1e-6),
    "person level, laplace": lambda: _fit(units=_units(), max_cells_per_unit=1, noise="discrete"),
    "density margin pointwise": lambda: _fit(margin="pointwise"),
    "density margin chernoff": lambda: _fit(margin="chernoff"),
    "density margin 2 sigma": lambda: _fit(margin=2.0),
    "bound margin paper, 3 sub-cells": lambda: _fit(core="bound", margin="paper", subcells=3),
    "no sub-cells": lambda: _fit(subcells=1),
    "1-D": lambda: _fit(X=_points()[:, :1]),
    "3-D": lambda: _fit(X=np.c_[_points(), np.random.default_rng(4).random(1400)], eps=0.2),
    "no spans": lambda: _fit(X=np.random.default_rng(5).random((30, 2)), min_samples=50),
    "automatic eps and MinPts": lambda: _fit(eps="auto", min_samples="auto", max_cells=1 << 14),
    "automatic, flat cut": lambda: _fit(eps="auto", min_samples="auto", max_cells=1 << 14, selection="flat"),
    "automatic eps": lambda: _fit(eps="auto", max_cells=1 << 14),
    "automatic, 3-D": lambda: _fit(
        X=np.c_[_points(), np.random.default_rng(4).random(1400)],
        eps="auto",
        min_samples="auto",
        max_cells=1 << 12,
    ),
    "with_params": lambda: with_params(_fit(), eps=0.1, min_samples=8),
    "with_min_samples, bound test": lambda: with_params(_fit(core="bound"), min_samples=3),
    "geographic (fit_lonlat)": lambda: fit_lonlat(
        np.c_[
            np.random.default_rng(6).normal(-122.42, 0.005, 2000),
            np.random.default_rng(7).normal(37.77, 0.005, 2000),
        ],
        bounds=SF,
        eps="200m",
        min_samples=10,
        random_state=0,
    ),
    "geographic, person level, automatic (place mode)": lambda: fit_lonlat(
        np.c_[
            np.random.default_rng(9).normal(-122.42, 0.01, 6000),
            np.random.default_rng(10).normal(37.77, 0.01, 6000),
        ],
        bounds=SF,
        eps="auto",
        min_samples="auto",
        units=np.random.default_rng(11).integers(0, 400, 6000),
        max_cells_per_unit=4,
        delta=1e-6,
        random_state=0,
    ),
    "saved before gamma_upper": lambda: _legacy(_fit(histogram="sparse", core="bound", theta=0.0)),
    "universe beyond 2^53 cells (built by hand)": lambda: hand_model(
        [[(5, 5), (5, 6)]], shape=(10**9, 10**9), histogram=False
    ),
    "sparse, built by hand": lambda: hand_model(
        [[(1, 1)]], shape=(8, 8), values=np.eye(8, dtype=np.int64) * 3, sparse=True, geo=True
    ),
}


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> dict[str, Path]:
    """Each kind of model saved by SpanModel.save, plus one without its histogram
    and one written by the command line (with its metadata)."""
    from dpdbscan.cli import main

    out = tmp_path_factory.mktemp("models")
    files = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded fits and tiny data: research use
        for name, make in MODELS.items():
            files[name] = out / f"{len(files)}.json"
            save_model(make(), files[name])
        files["saved without its histogram"] = out / "small.json"
        save_model(_fit(), files["saved without its histogram"], include_histogram=False)
        rng = np.random.default_rng(8)
        csv = out / "points.csv"
        lonlat = np.c_[rng.normal(-122.42, 0.004, 1500), rng.normal(37.77, 0.004, 1500)]
        csv.write_text("lon,lat\n" + "\n".join(f"{a:.6f},{b:.6f}" for a, b in lonlat) + "\n")
        assert (
            main(
                [
                    "-q",
                    "fit",
                    str(csv),
                    "--header",
                    "--geo",
                    "--bounds",
                    *map(str, SF),
                    "--eps",
                    "150m",
                    "--min-samples",
                    "10",
                    "--seed",
                    "0",
                    "--out-dir",
                    str(out),
                    "--no-png",
                    "--no-geojson",
                ]
            )
            == 0
        )
        files["command line, --geo"] = out / "points.spans.json"
    return files


KINDS = [*MODELS, "saved without its histogram", "command line, --geo"]


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_of_saved_model_matches_the_schema(saved, kind):
    doc = _strict_json(saved[kind].read_text())
    assert _errors(doc) == []
    again = json.loads(to_json(load_model(saved[kind])))
    assert _errors(again) == []


def test_the_saved_models_cover_the_schema_s_variants(saved):
    """The kinds above reach each branch of the schema that a real model can."""
    docs = [json.loads(p.read_text()) for p in saved.values()]
    seen = {
        "histogram": {d["histogram"]["kind"] for d in docs if "histogram" in d},
        "no histogram": any("histogram" not in d for d in docs),
        "core": {d["params"]["core"] for d in docs},
        "margin": {type(d["params"]["margin"]).__name__ + ":" + str(d["params"]["margin"]) for d in docs},
        "noise": {d["privacy"]["noise"] for d in docs},
        "values dtype": {d["histogram"]["values"]["dtype"] for d in docs if "histogram" in d},
        "theta": {str(d["theta"]) for d in docs} >= {"-inf", "0.0"},
        "big counts": any(isinstance(d["guarantee"]["n_events"], str) for d in docs),
        "no within": any(d["guarantee"]["within_clusters_at"] is None for d in docs),
        "no probability": any(d["guarantee"]["probability"] is None for d in docs),
        "gamma_upper null in a bound model": any(
            d["params"]["core"] == "bound" and d["noise_margin_upper"] is None for d in docs
        ),
        "auto": any("auto" in d for d in docs),
        "selection": {d["auto"].get("selection") for d in docs if "auto" in d},
        "share of the total": any(d.get("auto", {}).get("share_of") == "total" for d in docs),
        "border cells": {d["params"].get("border_cells", "any") for d in docs},
        "drawn over own units": any("own_share" in d.get("auto", {}) for d in docs),
        "levels with spans": any(
            d.get("auto", {}).get("levels") and d["guarantee"].get("levels") for d in docs
        ),
        "projection": sum("projection" in d["metadata"] for d in docs),
        "columns": any(d["metadata"].get("columns") for d in docs),
        "dimensions": {len(d["bounds"]["lower"]) for d in docs},
        "no spans": any(d["spans"] == [] for d in docs),
        "unit": {d["privacy"].get("unit") for d in docs},
        "unit_choice": any("unit_choice" in d["privacy"] for d in docs),
    }
    assert seen["histogram"] == {"dense", "sparse", "stability"} and seen["no histogram"]
    assert seen["core"] == {"density", "bound"}
    assert {"str:chernoff", "str:paper", "str:pointwise", "float:1.0", "float:2.0"} <= seen["margin"]
    assert seen["noise"] == {"discrete", "laplace", "gaussian"}
    assert seen["unit"] == {"row", "unit"}
    assert {"<i4", "<f8"} <= seen["values dtype"]
    assert seen["projection"] >= 3 and seen["dimensions"] == {1, 2, 3}
    assert seen["selection"] == {"levels", "flat"}
    assert seen["border cells"] == {"any", "occupied", "own"}
    assert all(v for k, v in seen.items() if isinstance(v, bool))


# --------------------------------------------------------------------------- broken files


@pytest.fixture(scope="module")
def documents(saved) -> dict[str, dict]:
    return {
        kind: json.loads(saved[kind].read_text())
        for kind in (
            "dense, density test",
            "dense, bound test",
            "stability, bound test",
            "person level, k chosen privately",
            "automatic eps and MinPts",
        )
    }


def _set(*path_and_value):
    *path, value = path_and_value

    def edit(doc):
        for key in path[:-1]:
            doc = doc[key]
        doc[path[-1]] = value

    return edit


def _drop(*path):
    def edit(doc):
        for key in path[:-1]:
            doc = doc[key]
        del doc[path[-1]]

    return edit


BROKEN = {
    # a wrong type
    "epsilon as text": ("dense, density test", _set("privacy", "epsilon", "1.0")),
    "min_samples as text": ("dense, density test", _set("params", "min_samples", "5")),
    "raise_min_samples as 1": ("dense, density test", _set("params", "raise_min_samples", 1)),
    "spans as an object": ("dense, density test", _set("spans", {})),
    "a span's cells as text": ("dense, density test", _set("spans", 0, "cells", "x")),
    "bounds as text": ("dense, density test", _set("bounds", "lower", "0")),
    "cell width as text": ("dense, density test", _set("grid", "width", "0.1")),
    "metadata as a list": ("dense, density test", _set("metadata", [])),
    "complex histogram values": ("dense, density test", _set("histogram", "values", "dtype", "<c16")),
    "histogram bytes not base64": ("dense, density test", _set("histogram", "values", "zlib_base64", "!!")),
    # a missing required field
    "no params.eps": ("dense, density test", _drop("params", "eps")),
    "no privacy.epsilon": ("dense, density test", _drop("privacy", "epsilon")),
    "no privacy.noise": ("dense, density test", _drop("privacy", "noise")),
    "no spans": ("dense, density test", _drop("spans")),
    "no cells in a span": ("dense, density test", _drop("spans", 0, "cells")),
    "no noise_margin": ("dense, density test", _drop("noise_margin")),
    "no release.eps": ("dense, density test", _drop("release", "eps")),
    "no histogram values": ("dense, density test", _drop("histogram", "values")),
    "no cells of a stability histogram": ("stability, bound test", _drop("histogram", "cells")),
    "no format": ("dense, density test", _drop("format")),
    # a value out of range or not among the options
    "epsilon 0": ("dense, density test", _set("privacy", "epsilon", 0)),
    "epsilon -1": ("dense, bound test", _set("privacy", "epsilon", -1.0)),
    "histogram epsilon -1": ("dense, density test", _set("histogram", "epsilon", -1.0)),
    "delta -0.1": ("dense, density test", _set("privacy", "delta", -0.1)),
    "eps 0": ("dense, density test", _set("params", "eps", 0)),
    "release eps 0": ("dense, density test", _set("release", "eps", 0.0)),
    "eta 8.5": ("dense, density test", _set("params", "eta", 8.5)),
    "release eta 9": ("dense, density test", _set("release", "eta", 9)),
    "beta 1": ("dense, bound test", _set("params", "beta", 1.0)),
    "min_samples 0": ("dense, density test", _set("params", "min_samples", 0)),
    "border -1": ("dense, density test", _set("params", "border", -1.0)),
    "noise_margin -1": ("dense, density test", _set("noise_margin", -1.0)),
    "a negative cell coordinate": ("dense, density test", _set("spans", 0, "cells", 0, [-1, 0])),
    "histogram kind 'other'": ("dense, density test", _set("privacy", "histogram", "other")),
    "gaussian noise without its rho": ("dense, density test", _set("privacy", "noise", "gaussian")),
    "a rho without gaussian noise": ("dense, density test", _set("privacy", "rho", 0.5)),
    "a unit bound without units": ("dense, density test", _set("privacy", "max_cells_per_unit", 5)),
    "units without their bound": ("dense, density test", _set("privacy", "unit", "unit")),
    "margin 'paper' with the density test": ("dense, density test", _set("params", "margin", "paper")),
    "margin 2 with the bound test": ("dense, bound test", _set("params", "margin", 2.0)),
    "version 3": ("dense, density test", _set("version", 3)),
    "a choice of k without units": (
        "dense, density test",
        _set(
            "privacy",
            "unit_choice",
            {"mechanism": "exponential", "candidates": [1, 2], "share": 0.1, "rho": 0.001},
        ),
    ),
    "a choice of k's share 1": (
        "person level, k chosen privately",
        _set("privacy", "unit_choice", "share", 1.0),
    ),
    "a choice of k's rho 0": ("person level, k chosen privately", _set("privacy", "unit_choice", "rho", 0)),
    "a choice of k by another mechanism": (
        "person level, k chosen privately",
        _set("privacy", "unit_choice", "mechanism", "median"),
    ),
    "a choice of k without candidates": (
        "person level, k chosen privately",
        _drop("privacy", "unit_choice", "candidates"),
    ),
    # a level selection's record (the guarantee and the summary read it)
    "a level selection without its levels": ("automatic eps and MinPts", _drop("auto", "levels")),
    "unsure as text": ("automatic eps and MinPts", _set("auto", "unsure", "no")),
    "a level's MinPts 0": ("automatic eps and MinPts", _set("auto", "levels", 0, "min_samples", 0)),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_files_are_refused_by_the_schema_and_the_loader(documents, case):
    kind, edit = BROKEN[case]
    doc = copy.deepcopy(documents[kind])
    assert _errors(doc) == []
    edit(doc)
    assert _errors(doc), "the schema accepts it"
    with pytest.raises(ValueError, match="dpdbscan"):
        model_from_dict(doc)


# Where they disagree today. The loader's ranges are its own, not the parameter
# table's (issue 22 item 8 builds them from the table); until then a file the
# table forbids could load; the loader now checks them against the table.
TABLE = {
    "delta 0.5 (table: < 0.01)": ("dense, density test", _set("privacy", "delta", 0.5)),
    "histogram delta 0.5": ("dense, density test", _set("histogram", "delta", 0.5)),
    "histogram epsilon 1e5 (table: <= 1e4)": ("dense, density test", _set("histogram", "epsilon", 1e5)),
    "epsilon 1e5 in a model saved before gamma_upper": (
        "saved before gamma_upper",
        _set("privacy", "epsilon", 1e5),
    ),
    "noise 'none' (exact counts: tests only)": ("saved before gamma_upper", _set("privacy", "noise", "none")),
}


@pytest.mark.parametrize("case", sorted(TABLE))
def test_the_loader_refuses_what_the_table_forbids(saved, case):
    kind, edit = TABLE[case]
    doc = json.loads(saved[kind].read_text())
    edit(doc)
    assert _errors(doc), "the schema accepts it"
    with pytest.raises(ValueError, match="dpdbscan"):
        model_from_dict(doc)


def test_an_integral_float_min_samples_is_read_as_the_table_reads_it(documents):
    doc = copy.deepcopy(documents["dense, density test"])
    doc["params"]["min_samples"] = 5.0
    assert _errors(doc) == [] and PARAMETERS["min_samples"].constraints[1].accepts(5.0)
    assert model_from_dict(doc).spec.min_samples == 5


# What JSON Schema cannot say (one field against another, or against the
# grid) is the loader's alone: the schema accepts these files.
ONLY_THE_LOADER = {
    "lower above upper": ("dense, density test", _set("bounds", "upper", [-1.0, -1.0]), "lower < upper"),
    "a cell outside the grid": ("dense, density test", _set("spans", 0, "cells", 0, [10**6, 0]), "outside"),
    "spans out of order": ("dense, density test", _set("spans", 0, "id", 5), "numbered"),
    "subcells^d above 4096": ("dense, density test", _set("params", "subcells", 100), "too large"),
    "noise_margin not the parameters' margin": ("dense, bound test", _set("noise_margin", 1.0), "margins"),
    "kappa_q not the grid's": ("dense, density test", _set("guarantee", "kappa_q", 21), "do not match"),
    "histogram shape not the grid's": (
        "dense, density test",
        _set("histogram", "values", "shape", [3, 3]),
        "histogram|reshape",
    ),
    "a level below the model's MinPts": (
        "automatic eps and MinPts",
        _set("auto", "levels", 0, "min_samples", 1),
        "below",
    ),
    "a level at another eps": ("automatic eps and MinPts", _set("auto", "levels", 0, "eps", 1e-3), "eps"),
    "a span missing from the levels": (
        "automatic eps and MinPts",
        lambda d: d["auto"]["levels"].pop(),
        "every span",
    ),
}


@pytest.mark.parametrize("case", sorted(ONLY_THE_LOADER))
def test_what_only_the_loader_checks(documents, case):
    kind, edit, match = ONLY_THE_LOADER[case]
    doc = copy.deepcopy(documents[kind])
    edit(doc)
    assert _errors(doc) == []
    with pytest.raises(ValueError, match=match):
        model_from_dict(doc)


@pytest.mark.parametrize(
    "field",
    [
        ("release",),
        ("noise_margin_upper",),
        ("span_grid",),
        ("grid", "width"),
        ("params", "border"),
        ("histogram", "delta"),
    ],
)
def test_the_loader_still_reads_older_files_the_writer_no_longer_makes(documents, field):
    """The schema describes what the writer writes today; the loader also
    reads version-1 files from before these fields were recorded."""
    doc = copy.deepcopy(documents["dense, bound test"])
    _drop(*field)(doc)
    assert _errors(doc)
    assert model_from_dict(doc).n_spans == len(documents["dense, bound test"]["spans"])


@pytest.mark.parametrize("kind", ["dense, density test", "dense, bound test"])
def test_files_that_called_kappa_q_kappa_still_load(documents, kind):
    """Issue 23: the guarantee's kappa (the most cells within eps of one
    sub-cell, 15 in 2-D with 2 x 2 sub-cells) and the grid's kappa (within
    eps of a whole cell, 21) had one name; the guarantee's is now kappa_q.
    A file written under the old name still loads, and is still checked."""
    doc = copy.deepcopy(documents[kind])
    assert doc["guarantee"]["kappa_q"] == 15 and doc["grid"]["kappa"] == 21
    doc["guarantee"]["kappa"] = doc["guarantee"].pop("kappa_q")
    assert _errors(doc)  # the schema describes today's files
    assert model_from_dict(doc).spans.kappa_q == 15
    doc["guarantee"]["kappa"] = 21
    with pytest.raises(ValueError, match=r"guarantee\.kappa / n_events do not match"):
        model_from_dict(doc)


# --------------------------------------------------------------------------- the schema itself


def test_the_schema_is_valid_draft_2020_12():
    Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def _range(schema: dict) -> tuple:
    """(low, high, low_open, high_open) of a numeric schema."""
    low = schema.get("exclusiveMinimum", schema.get("minimum"))
    high = schema.get("exclusiveMaximum", schema.get("maximum"))
    return low, high, "exclusiveMinimum" in schema, "exclusiveMaximum" in schema


@pytest.mark.parametrize(
    "definition, parameter",
    [
        ("epsilon", "epsilon"),
        ("delta", "delta"),
        ("beta", "beta"),
        ("eps", "eps"),
        ("min_samples", "min_samples"),
    ],
)
def test_the_schema_s_ranges_are_the_parameter_table_s(definition, parameter):
    schema = SCHEMA["$defs"][definition]
    (c,) = [c for c in PARAMETERS[parameter].constraints if isinstance(c, (Real, Integer))]
    if isinstance(c, Integer):
        assert schema["type"] == "integer" and _range(schema) == (c.low, c.high, False, False)
    else:
        assert schema["type"] == "number"
        assert _range(schema) == (c.low, c.high, c.low_open, c.high_open)


def test_the_schema_s_eta_is_a_release_grid_s():
    # a fit's eta is at most 4; the coarse release of 7-D/8-D doubles it in the model
    schema = SCHEMA["$defs"]["eta"]
    (c,) = [c for c in PARAMETERS["eta"].constraints if isinstance(c, Real)]
    assert _range(schema) == (c.low, MAX_RELEASE_ETA, c.low_open, c.high_open)
    assert MAX_RELEASE_ETA == COARSE_RELEASE_FACTOR * c.high


def test_the_schema_s_options_are_the_parameter_table_s():
    def options(name):
        (c,) = [c for c in PARAMETERS[name].constraints if isinstance(c, Options)]
        return set(c.values) - {"auto"}  # "auto" is resolved before a model exists

    defs, params = SCHEMA["$defs"], SCHEMA["properties"]["params"]["properties"]
    assert set(defs["histogram_kind"]["enum"]) == options("histogram")
    assert set(defs["noise"]["enum"]) == options("noise")
    assert set(params["core"]["enum"]) == set(CORE_TESTS)
    assert set(params["margin"]["anyOf"][0]["enum"]) == options("margin")
    (real,) = [c for c in PARAMETERS["margin"].constraints if isinstance(c, Real)]
    assert _range(params["margin"]["anyOf"][1]) == (real.low, real.high, real.low_open, real.high_open)
    (border,) = [c for c in PARAMETERS["border"].constraints if isinstance(c, Real)]
    assert _range(params["border"]) == (border.low, border.high, border.low_open, border.high_open)


def test_the_schema_ships_with_the_package():
    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    assert "model/schema.json" in pyproject["tool"]["setuptools"]["package-data"]["dpdbscan"]
    assert (resources.files("dpdbscan.model") / "schema.json").is_file()
