"""The release as fit's drawing copy has it (dpdbscan.cli.sentrelease):
its outlines are read from the command the first time they are asked for."""

import numpy as np
import pytest

from dpdbscan import DPDBSCAN
from dpdbscan.cli import forked, sentrelease

from clirun import blob_points


@pytest.fixture
def model():
    est = DPDBSCAN(eps=0.5, min_samples=20, epsilon=1.0, bounds=(0.0, 10.0), random_state=0)
    return est.fit(blob_points()).spans_


def test_the_outlines_come_from_the_command_once_and_the_rest_is_the_release(model, monkeypatch):
    sent = model.outlines()  # what the command computes
    fresh = type(model)(**{k: getattr(model, k) for k in model.__dataclass_fields__})
    calls = []
    monkeypatch.setattr(forked, "next_part", lambda: calls.append(1) or sent)
    late = sentrelease.awaiting_outlines(fresh)
    assert late.n_spans == model.n_spans and late.histogram is model.histogram
    np.testing.assert_array_equal(late.regions()[0], model.regions()[0])
    assert late.outlines() is sent and late.outlines() is sent
    assert calls == [1]


def test_a_release_sent_with_its_outlines_reads_nothing(model, monkeypatch):
    model.outlines()
    monkeypatch.setattr(forked, "next_part", lambda: pytest.fail("read a part that is not coming"))
    assert sentrelease.awaiting_outlines(model) is model


def test_anything_but_outlines_is_refused(model, monkeypatch):
    fresh = type(model)(**{k: getattr(model, k) for k in model.__dataclass_fields__})
    monkeypatch.setattr(forked, "next_part", lambda: np.zeros(3))
    with pytest.raises(TypeError, match="not the spans' outlines"):
        sentrelease.awaiting_outlines(fresh).outlines()
