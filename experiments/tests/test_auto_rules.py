"""experiments.auto_rules: label-free eps rules scored on one release."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from experiments import auto_rules

pytestmark = pytest.mark.slow


def _record():
    rng = np.random.default_rng(2)
    X = np.vstack(
        [rng.normal((2, 2), 0.3, (900, 2)), rng.normal((7, 6), 0.6, (500, 2)), rng.uniform(0, 10, (150, 2))]
    )
    y = np.repeat([0, 1, -1], [900, 500, 150])
    sc = SimpleNamespace(seed=3, X=X, y=y, bounds=(np.zeros(2), np.full(2, 10.0)), n=X.shape[0], tags=("2d",))
    return auto_rules.study(sc)


def test_every_rule_picks_a_candidate_and_the_default_is_the_model_s_choice_before_the_rule():
    r = _record()
    m = len(r["eps"])
    assert len(r["ari"]) == len(r["score"]) == len(r["clusters"]) == m
    for how in ("union", "inter"):
        a = np.asarray(r["agree"][how])
        assert a.shape == (m, m) and np.allclose(a, a.T) and np.allclose(np.diag(a), 1.0)
    for rule in auto_rules.RULES.values():
        assert 0 <= rule(r) < m
    ties = auto_rules._ties(r)
    assert auto_rules.RULES["default"](r) == max(ties) and auto_rules.RULES["smallest"](r) == min(ties)
    # the library (a small counted 2-D base) takes the chosen rule's eps
    assert r["chosen"] == auto_rules.RULES[auto_rules.CHOSEN](r)
    s = auto_rules.score([r])
    assert s["best alpha"][0] == max(r["ari"]) and s["model"][0] == pytest.approx(r["model"])
