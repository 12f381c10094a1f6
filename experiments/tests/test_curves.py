"""experiments/curves.py: the study's research variants put the library's
constants back, and its tables read rows as written."""

from __future__ import annotations

import json

import pytest

from experiments import curves

# the library's modules the variants move (through the study's module: a test
# of experiments/curves.py looks at what it patches, not inside the package)
sizing, autoplan, ownscale = curves.sizing, curves.autoplan, curves.ownscale


def test_the_low_3d_variants_move_the_regime_and_put_it_back():
    before = (sizing.FINER_3D_FROM, autoplan.SMALL_SECOND_FROM)
    with curves.variant_block("low2@1"):
        assert (sizing.FINER_3D_FROM, autoplan.SMALL_SECOND_FROM) == (2_000, 2_000)
        assert sizing.joins_faces(2_500, 3) and not sizing.joins_faces(2_500, 2)
        assert autoplan.second_applies(3, 2_500, "discrete")
    with curves.variant_block("bas3"):
        assert (sizing.FINER_3D_FROM, autoplan.SMALL_SECOND_FROM) == (3_000, before[1])
    with curves.variant_block("two2s3f3"):
        assert autoplan.second_applies(3, 2_500, "discrete") and not autoplan.second_applies(
            2, 2_500, "discrete"
        )
        assert (autoplan.second_share(2_500), autoplan.second_fine(2_500)) == (0.3, 3)
    with curves.variant_block("ppc15"):
        assert autoplan.POINTS_PER_CELL == 0.15
    with curves.variant_block("agree"):
        assert ownscale.ties_for(20_000) == "agree"
    assert ownscale.ties_for(20_000) == "largest" and ownscale.ties_for(3_000) == "agree"
    assert (sizing.FINER_3D_FROM, autoplan.SMALL_SECOND_FROM) == before
    assert autoplan.POINTS_PER_CELL == 0.3 and not autoplan.second_applies(3, 2_500, "discrete")
    with pytest.raises(ValueError, match="unknown variant"):
        curves.variant_block("finer2")


def test_a_row_is_the_automatic_fit_and_the_tables_read_it(tmp_path):
    rows = tmp_path / "rows.jsonl"
    with rows.open("a") as f:
        for v in ("today", "today@1", "hdbscan"):
            f.write(json.dumps(curves.row_of(70_041, v)) + "\n")
    got = curves.read(str(rows))
    assert set(got) == {(70_041, "today"), (70_041, "today@1"), (70_041, "hdbscan")}
    today = got[(70_041, "today")]
    assert today["d"] == 2 and today["n"] == 1_058 and "graded" in today["tags"].split()
    assert -1 <= today["ari"] <= 1 and today["spans"] >= 1 and today["eps"] > 0
    table = curves.compare(got, ["today"], draws=2)
    mean = (today["ari"] + got[(70_041, "today@1")]["ari"]) / 2
    assert f"| {mean:.3f} | {got[(70_041, 'hdbscan')]['ari']:.3f} |" in table
    assert "graded 2d" in curves.summary(got, ["today", "hdbscan"])
    assert curves.compare(got, ["today"], draws=3) == "no scene has every draw of every variant"
