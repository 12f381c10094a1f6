"""A release whose bounds came from the data has no DP guarantee, and every
file that publishes it says so (the red-team review of every door: before,
``--bounds-from-data`` was said on standard output and in the model's
``metadata.bounds_source`` only; the GeoJSON's ``protects``, the picture's
title and the map's legend stated "(epsilon=1, delta=0)" as for a private
release, and an estimator fitted with ``bounds=None`` recorded nothing).
"""

from __future__ import annotations

import json
import warnings

import pytest

from dpdbscan import DPDBSCAN
from dpdbscan.exceptions import PrivacyLeakWarning
from dpdbscan.model.describe import protection, protection_brief, protection_fields

from clirun import blob_points, run, write_csv

VOID = "NO differential privacy guarantee"


def test_the_command_lines_published_files_say_the_guarantee_is_void(capsys, tmp_path):
    data = write_csv(tmp_path / "p.csv", blob_points())
    rc, out, err = run(
        capsys, "fit", data, "--header", "--eps", "0.5", "--min-samples", "20", "--seed", "1",
        "--bounds-from-data", "--out-dir", tmp_path, "--no-png",
    )  # fmt: skip
    assert rc == 0, err
    geo = json.loads((tmp_path / "p.spans.geojson").read_text())
    assert VOID in geo["properties"]["protects"]
    assert geo["properties"]["guarantee_void"] is True
    rc, out, err = run(capsys, "info", tmp_path / "p.spans.json")
    assert rc == 0 and VOID in out.split("protects")[1].splitlines()[0]


def test_public_bounds_say_nothing_of_it(capsys, tmp_path):
    data = write_csv(tmp_path / "p.csv", blob_points())
    rc, _, err = run(
        capsys, "fit", data, "--header", "--eps", "0.5", "--min-samples", "20", "--seed", "1",
        "--bounds", "-2", "-2", "11", "11", "--out-dir", tmp_path, "--no-png",
    )  # fmt: skip
    assert rc == 0, err
    geo = json.loads((tmp_path / "p.spans.geojson").read_text())
    assert VOID not in geo["properties"]["protects"]
    assert geo["properties"]["guarantee_void"] is False


def test_an_estimator_without_bounds_records_and_says_it():
    X = blob_points()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        void = DPDBSCAN(eps=0.5, min_samples=20, random_state=1).fit(X).spans_
        kept = DPDBSCAN(eps=0.5, min_samples=20, random_state=1, bounds=([-2, -2], [11, 11])).fit(X).spans_
    for words in (protection(void), protection_brief(void), protection_brief(void, greek=True)):
        assert VOID in words
    assert protection_fields(void)["guarantee_void"] is True
    for words in (protection(kept), protection_brief(kept)):
        assert VOID not in words
    assert protection_fields(kept)["guarantee_void"] is False


def test_the_estimator_still_warns_loudly():
    with pytest.warns(PrivacyLeakWarning):
        DPDBSCAN(eps=0.5, min_samples=20, random_state=1).fit(blob_points())
