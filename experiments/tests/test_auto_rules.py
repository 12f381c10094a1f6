"""experiments.auto_rules: label-free eps rules scored on one release."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from experiments import auto_rules


def _record():
    rng = np.random.default_rng(2)
    X = np.vstack(
        [rng.normal((2, 2), 0.3, (900, 2)), rng.normal((7, 6), 0.6, (500, 2)), rng.uniform(0, 10, (150, 2))]
    )
    y = np.repeat([0, 1, -1], [900, 500, 150])
    sc = SimpleNamespace(seed=3, X=X, y=y, bounds=(np.zeros(2), np.full(2, 10.0)), n=X.shape[0], tags=("2d",))
    return auto_rules.study(sc)


@pytest.mark.slow  # a fit and every candidate's selection
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


def test_the_plateau_runs_from_the_peak_while_the_score_stays_near_it():
    # peak at candidate 1 (16 clusters); 2 scores 0.92 of it with 4 clusters,
    # 3 drops under 0.9 and 4 is back above: the plateau is 1..2
    r = {"n": 20_000, "score": [3.0, 10.0, 9.2, 5.0, 9.5], "clusters": [30, 16, 4, 18, 3]}
    r["eps"] = [1.0, 1.4, 2.0, 2.8, 4.0]
    assert auto_rules.plateau(r) == 2
    assert auto_rules.largest(as_many=False)(r) == 4  # ties by score alone, no run
    assert auto_rules.RULES["default"](r) == 1  # at least as many clusters: the peak alone
    assert auto_rules.plateau_from(6_000)(r) == 2
    assert auto_rules.plateau_from(6_000)({**r, "n": 5_999}) == 1  # below: the library's rule


def test_families_table_gives_each_tag_its_scenes_means():
    # two hand-made records: candidate 0 ties with 1 (score within 0.9), the
    # default takes the larger eps, the chosen rule the one agreeing best
    agree = [[1.0, 0.2, 0.9], [0.2, 1.0, 0.1], [0.9, 0.1, 1.0]]

    def rec(seed, tags, ari):
        return {
            "seed": seed,
            "n": 1_000,
            "tags": tags,
            "model": 0.0,
            "eps": [1.0, 1.4, 2.0],
            "score": [10.0, 0.0, 9.5],
            "clusters": [2, 1, 2],
            "ari": ari,
            "agree": {"union": agree, "inter": agree},
        }

    records = [rec(1, "2d spirals", [0.8, 0.0, 0.4]), rec(2, "2d strands", [0.6, 0.0, 0.6])]
    s = auto_rules.score(records)
    assert list(s["default"]) == [0.4, 0.6] and list(s[auto_rules.CHOSEN]) == [0.8, 0.6]
    rows = auto_rules.families(records, {1: 0.5, 2: 0.7}).splitlines()[2:]
    assert rows == [
        "| 2d | 2 | 0.500 | 0.700 | 1 / 0 | 0.600 |",
        "| spirals | 1 | 0.400 | 0.800 | 1 / 0 | 0.500 |",
        "| strands | 1 | 0.600 | 0.600 | 0 / 0 | 0.700 |",
    ]


def test_dev_cases_are_the_dev_suite_s_2d_sets_at_its_own_seeds(dev_data):
    cases = auto_rules.dev_cases([0, 3])
    assert len({c.seed for c in cases}) == len(cases) and {c.random_state for c in cases} == {0, 3}
    assert all(c.X.shape[1] == 2 and c.epsilon == 1.0 and c.seed % 1000 == c.random_state for c in cases)
    assert "hepta" not in {c.name for c in cases}  # the one 3-D set
