"""dpdbscan.post.levels: the condensed tree over a MinPts ladder, the
excess-of-mass selection, spans taken at their own level, and what they
are guaranteed to be."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from dpdbscan._random import SeededSource
from dpdbscan.grid import Grid
from dpdbscan.mechanism import MechanismConfig, release_histogram
from dpdbscan.post import levels
from dpdbscan.post.auto import Plan
from dpdbscan.post.spans import SpanParams, build_spans, density_guarantee
from dpdbscan.post.sweep import Partition


def _part(keys, labels, mass, m, thr, alpha=1.0):
    return Partition(alpha, m, np.asarray(keys, dtype=np.int64), np.asarray(labels, dtype=np.int64),
                     np.asarray(mass, float), thr)


# A root R = {1..8} splits at level 1 into A = {1, 2, 3} and B = {5..8}; B splits
# at level 2 into B1 = {5, 6} and B2 = {7, 8}; A dies at level 3, B1 and B2 live on.
LEVELS = [
    _part(range(1, 9), [0] * 8, [10] * 8, 5, 10.0),
    _part([1, 2, 3, 5, 6, 7, 8], [0, 0, 0, 1, 1, 1, 1], [10] * 7, 6, 20.0),
    _part([1, 2, 5, 6, 7, 8], [0, 0, 1, 1, 2, 2], [10] * 6, 7, 40.0),
    _part([5, 6, 7, 8], [0, 0, 1, 1], [10] * 4, 8, 80.0),
]


def test_condensed_tree_follows_splits_and_integrates_mass():
    lam = [0.0, 1.0, 2.0, 3.0]
    tree = levels.condensed_tree(LEVELS, lam)
    assert [(c.parent, c.birth, c.death) for c in tree] == [
        (-1, 0, 0), (0, 1, 2), (0, 1, 1), (2, 2, 3), (2, 2, 3)]
    R, A, B, B1, B2 = tree
    assert R.children == (1, 2) and B.children == (3, 4)
    # mass x width of each level it lives at; the top level has no width
    assert R.stability == pytest.approx(80 * 1.0)
    assert A.stability == pytest.approx(30 * 1 + 20 * 1)
    assert B.stability == pytest.approx(40 * 1)
    assert B1.stability == pytest.approx(20 * 1 + 20 * 0)
    assert A.spans == (0, 0) and B1.spans == (1, 0)


def test_excess_of_mass_keeps_a_parent_unless_its_children_hold_more():
    tree = levels.condensed_tree(LEVELS, [0.0, 1.0, 2.0, 3.0])
    sel, score, _ = levels.select_clusters(tree)
    # the single root is not selectable; B (40) against B1 + B2 (20 + 20): B, a tie kept
    assert sel == [1, 2] and score == pytest.approx(50 + 40)
    # stretch the top levels: B1 and B2 outlive B by far
    tree = levels.condensed_tree(LEVELS, [0.0, 1.0, 2.0, 10.0])
    sel, score, close = levels.select_clusters(tree)
    assert sel == [1, 3, 4] and score == pytest.approx(30 + 20 * 8 + 2 * 20 * 8)
    assert levels.select_clusters(tree, "leaf")[0] == [1, 3, 4]
    assert close == []


def test_significance_by_mass_share():
    # with a minimum mass of 35, A (30) falls out as noise: the root is no split
    # and lives on as B until nothing of 35 is left
    tree = levels.condensed_tree(LEVELS, [0.0, 1.0, 2.0, 3.0], min_mass=35)
    assert [(c.parent, c.birth, c.death, c.spans) for c in tree] == [(-1, 0, 1, (0, 1))]
    assert levels.select_clusters(tree)[0] == [0]


def test_a_single_root_that_never_splits_is_selected():
    lv = [_part([1, 2], [0, 0], [10, 10], 5, 10.0), _part([1, 2], [0, 0], [10, 10], 6, 20.0)]
    tree = levels.condensed_tree(lv, [0.0, 1.0])
    assert levels.select_clusters(tree)[0] == [0]
    assert levels.select_clusters([])[0] == []


def test_spans_of_takes_each_cluster_at_its_birth_and_numbers_by_smallest_key():
    t = levels.level_tree(LEVELS, 1.0, 2, scale="logT")
    keys, labels, spans = levels.spans_of(t)
    # A at level 1 = {1, 2, 3}; B at level 1 = {5..8} (log T widths are equal: B kept)
    assert keys.tolist() == [1, 2, 3, 5, 6, 7, 8]
    assert labels.tolist() == [0, 0, 0, 1, 1, 1, 1]
    assert [(s.span, s.min_samples, s.death_min_samples) for s in spans] == [(0, 6, 7), (1, 6, 6)]


def test_choose_alpha_counts_on_the_best_score_and_breaks_near_ties_to_the_largest():
    rows = [(1.0, 100.0, 3), (2.0, 95.0, 3), (4.0, 92.0, 2), (8.0, 200.0, 1), (16.0, 50.0, 3)]
    # alpha 8 selects one cluster only: out; 1 scores best with 3 clusters; 2 is a
    # near-tie with as many (the larger wins); 4 is close with another count
    assert levels.choose_alpha(rows) == (2.0, 4.0)
    assert levels.choose_alpha([(1.0, 100.0, 3), (2.0, 80.0, 3)]) == (1.0, None)
    # when no alpha selects two clusters, the best single one
    assert levels.choose_alpha([(1.0, 5.0, 1), (2.0, 6.0, 1)]) == (2.0, None)


def test_a_close_call_is_reported_and_its_alternative_shown():
    grid = Grid(np.zeros(2), np.ones(2), 0.1)
    sel = levels.finish(levels.level_tree(LEVELS, 1.0, 2, scale="logT"), grid, [], 1)
    # B (40 ln 2) against B1 + B2 (40 ln 2): a tie, kept, and reported
    assert sel.unsure and sel.tree.close == (2,) and sel.runner_up is None
    text = "\n".join(levels.describe(sel))
    assert "2 span(s)" in text and "kept over its 2 sub-clusters" in text and "explore shows both" in text
    alt = levels.alternative(sel, None, None, None)
    assert alt is not None and [s.min_samples for s in alt.spans] == [6, 7, 7]
    assert alt.core_keys.tolist() == [1, 2, 3, 5, 6, 7, 8] and alt.labels.tolist() == [0, 0, 0, 1, 1, 2, 2]
    # a clear choice has no alternative
    clear = levels.finish(levels.level_tree(LEVELS, 1.0, 2, scale="lambda"), grid, [], 1)
    # on lambda (T^(1/2): widths 1.31, 1.85) B1 + B2 (74) outweigh B (52) by far
    assert [s.min_samples for s in clear.spans] == [6, 7, 7]
    assert not clear.unsure and levels.alternative(clear, None, None, None) is None


# ------------------------------------------------------------ from a release

def _release(noise="none", seed=0, histogram="dense"):
    """A dense blob with a sparse blob beside it, joined by a thin bridge,
    and a third, sparse blob far away: no single MinPts separates the
    first two and keeps the third."""
    rng = np.random.default_rng(seed)
    X = np.vstack([
        rng.normal((3.0, 5.0), 0.25, (6000, 2)),  # dense
        rng.normal((5.4, 5.0), 0.6, (1500, 2)),  # sparse, close to the dense one
        np.column_stack([rng.uniform(3.0, 5.4, 200), rng.normal(5.0, 0.03, 200)]),  # bridge
        rng.normal((7.0, 2.0), 0.6, (1500, 2)),  # sparse, far
    ])
    y = np.repeat([0, 1, -1, 2], [6000, 1500, 200, 1500])
    box = (np.zeros(2), np.array([10.0, 8.0]))
    grid = Grid(*box, 0.1)
    config = MechanismConfig(epsilon=1.0, noise=noise, histogram=histogram, subcells=2, margin=1.0,
                             core="density", beta=0.1)
    hist = release_histogram(grid, X, config, SeededSource(seed))
    params = SpanParams(min_samples=5, beta=0.1, subcells=2, margin=1.0, border=0.1, core="density")
    return X, y, hist, params


def test_selected_spans_are_spans_of_the_density_test_at_their_own_level():
    _, _, hist, params = _release()
    plan = Plan(0.1, (0.1, 0.1 * 2**0.5, 0.2), None)
    sel = levels.select_levels(hist, params, plan)
    assert sel.n_spans >= 2 and sel.candidates == 3
    assert np.all(np.diff(sel.core_keys) > 0)  # sorted, disjoint
    h = hist.on_grid(hist.grid.at_alpha(sel.alpha))
    for s in sel.spans:
        assert s.alpha == sel.alpha
        spans = build_spans(h, replace(params, min_samples=s.min_samples))
        keys = sel.grid.encode(spans.grid.decode(spans.core_keys))
        mine = sel.core_keys[sel.labels == s.span]
        # the selected span is exactly one span of that level
        hit = np.searchsorted(keys, mine)
        owners = np.unique(spans.labels[hit])
        assert np.array_equal(keys[hit], mine) and owners.size == 1
        assert np.array_equal(np.sort(keys[spans.labels == owners[0]]), mine)
        assert spans.threshold == pytest.approx(s.threshold)


def test_levels_separate_what_no_flat_cut_does():
    from sklearn.metrics import adjusted_rand_score

    from dpdbscan.predict import predict_spans, span_regions

    X, y, hist, params = _release()
    plan = Plan(0.1, (0.1,), None)
    sel = levels.select_levels(hist, params, plan)
    keys, labs = span_regions(sel.grid, sel.core_keys, sel.labels, border=sel.alpha, to="centres")
    got = adjusted_rand_score(y, predict_spans(sel.grid, keys, labs, X))
    assert len({s.min_samples for s in sel.spans}) >= 2  # clusters at different levels
    # every flat cut of the same ladder does worse
    for m in levels.ladder(hist, plan):
        flat = build_spans(hist, replace(params, min_samples=m))
        fk, fl = span_regions(flat.grid, flat.core_keys, flat.labels, border=0.1, to="centres")
        assert adjusted_rand_score(y, predict_spans(flat.grid, fk, fl, X)) < got


@pytest.mark.filterwarnings("ignore")
def test_guarantee_accounts_for_the_alphas_considered():
    _, _, hist, params = _release(noise="discrete")
    plan = Plan(0.1, (0.1, 0.1 * 2**0.5, 0.2), None)
    sel = levels.select_levels(hist, params, plan)
    got = levels.guarantee(sel, hist, params)
    assert len(got) == sel.n_spans
    grid = hist.grid.at_alpha(sel.alpha)
    for g, s in zip(got, sel.spans):
        assert g["candidates"] == 3 and g["probability"] == pytest.approx(1 - params.beta)
        # G at beta / 3 is larger than at beta: M* no larger than one level's
        _, one = density_guarantee(grid, hist.kind, hist.noise, hist.epsilon, hist.theta,
                                   replace(params, min_samples=s.min_samples))
        assert 1 <= g["m_star"] <= one["m_star"]
    # one alpha considered: exactly the density test's guarantee at that level
    fixed = levels.select_levels(hist, params, Plan(0.1, (0.1,), None))
    for g, s in zip(levels.guarantee(fixed, hist, params), fixed.spans):
        _, one = density_guarantee(hist.grid, hist.kind, hist.noise, hist.epsilon, hist.theta,
                                   replace(params, min_samples=s.min_samples))
        assert g["m_star"] == one["m_star"] and g["probability"] == pytest.approx(one["probability"])


def test_level_selection_needs_the_density_test():
    _, _, hist, params = _release()
    with pytest.raises(ValueError, match="density"):
        levels.select_levels(hist, replace(params, core="bound"), Plan(0.1, (0.1,), None))


@pytest.mark.filterwarnings("ignore")
def test_the_sub_cell_tree_may_start_where_the_cells_select():
    # starting the sub-cells' tree below the cells' lowest selected level
    # gives the same spans here as the whole ladder
    _, _, hist, params = _release(noise="discrete", seed=3)
    plan = Plan(0.1, (0.1, 0.1 * 2**0.5, 0.2), None)
    fast = levels.select_levels(hist, params, plan)
    full = levels.select_levels(hist, params, plan, bottom=True)
    assert fast.alpha == full.alpha and fast.n_spans == full.n_spans >= 2
    np.testing.assert_array_equal(fast.core_keys, full.core_keys)
    np.testing.assert_array_equal(fast.labels, full.labels)
    assert [s.min_samples for s in fast.spans] == [s.min_samples for s in full.spans]
    assert len(fast.tree.levels) <= len(full.tree.levels)
