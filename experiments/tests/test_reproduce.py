"""`make reproduce-quick` end to end: run it into a temporary folder (never
results/) and check that REPORT.md and its figures came out with sane content.
Takes about a minute."""

from __future__ import annotations

import re
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from experiments import data, paper

pytestmark = pytest.mark.slow

FIGURES = (
    "moons_pipeline",
    "cluto_t4",
    "cluto_t5",
    "cluto_t7",
    "vary_alpha_minpts",
    "vary_eta",
    "vary_epsilon",
    "geo_cabs_tiny",
)
SECTIONS = (
    "## 1. Data sets",
    "## 2. Table “Comparison of ARI and AMI scores”",
    "### Notes on the differences",
    "## 3. Table “Comparison of Running Time”",
    "### 4.1 The Moons pipeline",
    "### 4.2 Cluto",
    "### 4.3 Varying (α, MinPts)",
    "### 4.4 Varying η",
    "### 4.5 Varying ε",
    "### 4.6 Geographic spans",
    "## 5. The label-publishing baseline",
    "## 6. Not reproduced",
)
NUMBER = re.compile(r"^-?\d+\.\d+(?: ± \d+\.\d+)?$")


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory, diffprivlib):
    if not data.has_file("cluto_t4"):
        pytest.skip(f"shared data not found at {data.data_dir()} (set {data.ENV})")
    out = tmp_path_factory.mktemp("reproduce_quick")
    proc = subprocess.run(
        [sys.executable, "-m", "experiments.reproduce", "--quick", "--out", str(out)],
        cwd=data.REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out, (out / "REPORT.md").read_text()


def tables_after(text, marker):
    """Rows (lists of cells) of the first markdown table after ``marker``."""
    start = text.index(marker)
    rows = []
    for line in text[start:].splitlines()[1:]:
        if line.startswith("|"):
            inner = line.strip()[1:-1]  # drop the outer pipes; cells may hold escaped \|
            rows.append([c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", inner)])
        elif rows:
            break
    return rows[0], [r for r in rows[2:]]


def test_report_has_every_section(quick_run):
    _, text = quick_run
    for s in SECTIONS:
        assert s in text, f"missing section {s!r}"
    assert "QUICK" in text  # a quick report never passes for the reference one
    assert "HAR70+" in text and "chest" in text.lower() and "Crash" in text


@pytest.mark.parametrize("metric", ["**ARI**", "**AMI**"])
def test_score_tables_are_sane_and_beside_the_paper(quick_run, metric):
    _, text = quick_run
    head, rows = tables_after(text, metric)
    titles = [r[0] for r in rows]
    assert titles[:6] == ["Circles", "Moons", "Blobs", "Cluto-t4", "Cluto-t5", "Cluto-t7"]
    assert any("Chest" in t for t in titles)
    col = {h: i for i, h in enumerate(head)}
    for m in ("DP-DBSCAN", "DP-KMeans", "DBSCAN", "KMeans", "paper DP-DBSCAN"):
        assert m in col
    checked = 0
    for r in rows:
        for h in ("DP-DBSCAN", "DP-DBSCAN paper proc.", "DP-KMeans", "DBSCAN", "DBSCAN core-only", "KMeans"):
            cell = r[col[h]]
            assert NUMBER.match(cell), f"{r[0]} {h}: {cell!r}"
            mean = float(cell.split(" ± ")[0])
            assert -0.5 <= mean <= 1.0
            checked += 1
    assert checked == 6 * len(rows)
    # the paper's numbers sit beside ours
    key = 0 if metric == "**ARI**" else 1
    moons = rows[titles.index("Moons")]
    assert float(moons[col["paper DP-DBSCAN"]]) == paper.SCORES["DP-DBSCAN"]["moons"][key]


def test_every_difference_gets_a_note(quick_run):
    _, text = quick_run
    _, rows = tables_after(text, "**ARI**")
    notes = text[text.index("### Notes on the differences") : text.index("## 3.")]
    head, _ = tables_after(text, "**ARI**")
    j = head.index("paper DP-DBSCAN")
    for method in ("DP-DBSCAN", "DP-DBSCAN paper proc."):
        i = head.index(method)
        for r in rows:
            if abs(float(r[i].split(" ± ")[0]) - float(r[j])) > 0.05:
                assert f"**{r[0]}, {method}**" in notes, f"no note for {r[0]}, {method}"


def test_timing_table(quick_run):
    _, text = quick_run
    head, rows = tables_after(text, "## 3. Table")
    assert [r[0] for r in rows][:6] == ["Circles", "Moons", "Blobs", "Cluto-t4", "Cluto-t5", "Cluto-t7"]
    assert "Cabs-tiny" in [r[0] for r in rows]
    timed = re.compile(r"^(\d+(\.\d+)?(e[+-]\d+)? (ms|s)( \(×\d+\))?|skipped) \(")
    for r in rows:
        for cell in r[4:]:
            assert timed.match(cell), cell
    assert "(103 ms)" in rows[0][4]  # the paper's naive Circles time beside ours


def test_figures_exist_and_are_linked(quick_run):
    out, text = quick_run
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert {Path(p).stem for p in links} >= set(FIGURES)
    for p in links:
        path = out / p
        assert not Path(p).is_absolute() and path.is_file(), p
        data = path.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n", p
        width, height = struct.unpack(">II", data[16:24])
        assert width >= 600 and height >= 250, (p, width, height)
        assert 10_000 < len(data) < 400_000, (p, len(data))


def test_label_publishing_baseline_is_one_cluster(quick_run):
    _, text = quick_run
    head, rows = tables_after(text, "## 5. The label-publishing baseline")
    assert len(rows) == 6
    i = head.index("clusters row")
    j = head.index("ARI row")
    for r in rows:
        assert r[i] == "1.00 ± 0.00"
        assert abs(float(r[j].split(" ± ")[0])) < 0.01


def test_geographic_section_reports_spans(quick_run):
    _, text = quick_run
    head, rows = tables_after(text, "### 4.6 Geographic spans")
    assert [r[head.index("histogram")] for r in rows] == ["linear", "naive"] * 2
    assert {r[head.index("DP-DBSCAN")] for r in rows} == {"DP-DBSCAN", "DP-DBSCAN paper proc."}
    for r in rows:
        assert r[0] == "Cabs-tiny" and int(r[head.index("spans (ours)")]) > 0
        assert r[head.index("spans (paper)")] == "38"
