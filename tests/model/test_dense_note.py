"""The note on a release whose spans cover under half of its counts (issue 28: a week of 10,250
T-Drive-like taxis' stops at 200 m / MinPts 30): where the release is far from short of data, the
note must not tell the user that the data are small or sparse and need a larger eps or epsilon."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from dpdbscan.model.coretestwords import QuietRelease
from dpdbscan.model.densitywords import DENSE_TIMES, DensityWords


def _note(busiest: float, min_samples: float = 30, margin: float = 213.0) -> str:
    hist = SimpleNamespace(values=np.array([0.0, 12.0, busiest]), epsilon=1.0, grid=SimpleNamespace(eps=0.2))
    spans = SimpleNamespace(noise_margin=margin, threshold=min_samples + margin)
    spec = SimpleNamespace(min_samples=min_samples)
    r = QuietRelease(hist, spans, spec, ("uncovered",), 49.5, "units", lambda km: f"{1000 * km:.0f} m")  # type: ignore[arg-type]
    note = DensityWords().utility_note(r)
    assert note is not None
    return note


def test_a_release_far_above_its_threshold_is_not_called_small_or_sparse():
    dense = _note(243.0 * DENSE_TIMES + 1)
    assert "not small or sparse" in dense and "need a larger eps" not in dense
    assert "less than half of the noisy counts" in dense and "243 units within 200 m" in dense
    assert str(243 * DENSE_TIMES + 1) not in dense.replace(",", "")  # no released value quoted
    sparse = _note(243.0 * DENSE_TIMES - 1)
    assert "the margin dominates: the data are small or sparse" in sparse
    assert "Small or sparse data need a larger eps or a larger epsilon" in sparse


def test_a_threshold_that_is_mostly_min_samples_is_not_blamed_on_the_noise():
    """MinPts 1,028 on the same stops (margin 49.5, the busiest cell 9.5 times the
    threshold): the note said "Small or sparse data need a larger eps or a larger
    epsilon", though a larger epsilon only trims a margin of 49.5."""
    note = _note(1077.5 * 9.5, min_samples=1028, margin=49.5)
    assert "need a larger eps or a larger epsilon" not in note and "margin dominates" not in note
    assert "mostly min_samples itself" in note and "a larger epsilon would change little" in note
    assert "dpdbscan forecast" in note


def _events_note(busiest: float, min_samples: float, margin: float) -> str:
    hist = SimpleNamespace(values=np.array([0.0, 12.0, busiest]), epsilon=1.0, grid=SimpleNamespace(eps=0.2))
    spans = SimpleNamespace(noise_margin=margin, threshold=min_samples + margin)
    spec = SimpleNamespace(min_samples=min_samples)
    length = lambda km: f"{1000 * km:.0f} m"  # noqa: E731
    r = QuietRelease(hist, spans, spec, ("uncovered",), 20.0, "taxis", length, "stops")  # type: ignore[arg-type]
    note = DensityWords().utility_note(r)
    assert note is not None
    return note


def test_a_map_of_stops_is_not_told_most_points_are_noise():
    """A newcomer's fleet of 1,000 taxis' stops at 200 m / MinPts 30 (margin above MinPts):
    the map found its places (top-20 0.95, passage 0), and the note read "most points will
    be labelled noise ... Small or sparse data need a larger eps", a failure and the wrong
    advice for places. For events it says most stops are expected outside the spans."""
    note = _events_note(400.0, min_samples=30, margin=52.0)
    assert "most points will be labelled noise" not in note and "need a larger eps" not in note
    assert "most stops lie outside the spans" in note and "usual for a map of places" in note
    assert "few taxis for this epsilon" in note and "a larger epsilon lowers the margin" in note
    assert "82 taxis within 200 m" in note and "400" not in note  # no released value quoted
    # the margin below MinPts and far above the threshold: their own advice, the events' words
    assert "mostly min_samples itself" in _events_note(1077.5 * 9.5, min_samples=1028, margin=49.5)
    dense = _events_note(82.0 * DENSE_TIMES + 1, min_samples=30, margin=52.0)
    assert "not small or sparse" in dense and "most stops lie outside the spans" in dense


def _problems_note(problems: tuple[str, ...], busiest: float, events: str | None = None) -> str:
    hist = SimpleNamespace(values=np.array([0.0, 12.0, busiest]), epsilon=1.0, grid=SimpleNamespace(eps=0.2))
    spans = SimpleNamespace(noise_margin=11.8, threshold=28 + 11.8)
    spec = SimpleNamespace(min_samples=28)
    r = QuietRelease(hist, spans, spec, problems, 6.0, "points", None, events)  # type: ignore[arg-type]
    note = DensityWords().utility_note(r)
    assert note is not None
    return note


def test_sensor_readings_are_not_told_of_stops_and_passage():
    """Event-level readings (no --stops, no --trip-ends) far above the threshold: the note
    spoke of "a unit's own stops, passage", taxi words, to a chest accelerometer's user."""
    note = _problems_note(("uncovered",), 39.8 * DENSE_TIMES + 1)
    assert "spread thin beside the dense places" in note and "stops" not in note and "passage" not in note
    stops = _problems_note(("uncovered",), 39.8 * DENSE_TIMES + 1, events="stops")
    assert "(a unit's own stops, passage)" in stops


def test_a_single_span_that_holds_the_data_is_not_said_to_leave_data_out():
    """The chest accelerometer at the automatic eps: one span with 99% of the points. The note
    went on "What the spans leave out is spread thin beside the dense places", of a span that
    leaves nothing out; it now says why one span, and what may part it."""
    note = _problems_note(("single_span",), 39.8 * DENSE_TIMES + 1)
    assert "leave out" not in note and "most points will be labelled noise" not in note
    assert "a smaller eps may part them" in note and "at a new cost in epsilon" in note
    both = _problems_note(("single_span", "uncovered"), 39.8 * DENSE_TIMES + 1)
    assert "What the spans leave out" in both
