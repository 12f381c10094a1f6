"""experiments.jam_spans: each span's measures from a person-level
geographic automatic release, and the replay of its drawing."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpdbscan import Stops, fit_lonlat, predict_lonlat
from experiments import jam_spans
from experiments.synthetic_traces import box, generate, to_lonlat, top_places


@pytest.fixture(scope="module")
def fitted():
    city = generate(units=60, days=2, interval=60.0, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded noise: research runs
        model = fit_lonlat(
            city.lonlat,
            bounds=box(),
            eps="auto",
            min_samples="auto",
            delta=1e-6,
            epsilon=8.0,
            units=city.unit,
            times=city.time,
            events=Stops("100m", "5min"),
            max_cells_per_unit=400,
            random_state=0,
        )
    return city, model


def test_span_measures_are_those_of_the_model_s_own_spans(fitted):
    city, model = fitted
    assert model.auto.get("own_share") is not None  # the automatic place mode drew it
    sel = jam_spans.selection(model)
    assert sel.n_spans == model.n_spans >= 1
    rows = jam_spans.span_rows(model, sel)
    assert [r["span"] for r in rows] == list(range(model.n_spans))
    for r in rows:
        assert r["ncells"] >= 1 and r["born"] <= r["death"] and r["life"] >= 0
        assert 0 < r["conc"] <= 1 and r["conc"] * r["ncells_eff"] == pytest.approx(1.0, abs=0.02)
        assert r["elong"] >= 1.0 and r["peak_sd"] > 0
    # the busiest place's stays: their span's measures and its cells
    pl = int(top_places(city, 1)[0])
    stays = city.stays[(city.stays[:, 1] == pl) & (city.stays[:, 3] - city.stays[:, 2] >= 300)]
    centres = {"top": to_lonlat(stays[:5, 4:6]), "passage": to_lonlat(stays[:0, 4:6])}
    cells = jam_spans.cell_rows(model, sel, centres)
    labels = np.asarray(predict_lonlat(model, centres["top"]))
    assert len(cells) == int(np.count_nonzero(labels >= 0))
    for c in cells:
        assert c["kind"] == "top"
        if c["core"]:  # the span's busiest is the largest of its core cells' counts
            assert c["share"] <= 1.0


def test_replaying_the_fit_s_own_drawing_gives_the_model_back(fitted):
    city, model = fitted
    a = model.auto
    centres = {"top": city.lonlat[::997], "passage": city.lonlat[5::1999]}
    got = jam_spans.replay(model, centres, (float(a["own_share"]), float(a["own_sds"])))
    assert got["spans"] == model.n_spans
    for key in ("top", "passage"):
        want = float(np.mean(np.asarray(predict_lonlat(model, centres[key])) >= 0))
        assert got[key] == round(want, 2)
    # drawn whatever the counts (deviations without end): at least as much is in spans
    wider = jam_spans.replay(model, centres, (0.0, 1e12))
    assert wider["spans"] == model.n_spans and wider["top"] >= got["top"]
