"""Release two at person level (docs/privacy.md 4.10; off by default,
``dpdbscan.research.person_second`` for the study): the points it counts
are release one's bounded points, each in a fine cell of its own coarse
cell, so one unit moves the fine counts by at most sqrt(k) m in L2; the
budget splits so that the pair spends the stated rho; the fit charges the
pair once; off, the release is the one it was."""

from __future__ import annotations

import json
import warnings
from fractions import Fraction
from importlib import resources

import numpy as np
import pytest
from jsonschema import Draft202012Validator

from dpdbscan import DPDBSCAN, ZCDPAccountant, research
from dpdbscan.cells.grid import Grid
from dpdbscan.laws import zcdp
from dpdbscan.ledger import Ledger
from dpdbscan.model.codec import MalformedModel, model_from_dict, model_to_dict
from dpdbscan.model.describe import summary
from dpdbscan.params.parameters import validate
from dpdbscan.params.specs import UnitBound
from dpdbscan.plan import autoplan
from dpdbscan.plan.resolve import resolve
from dpdbscan.post import sidebyside
from dpdbscan.release import bounding

GRID = Grid(np.zeros(3), np.ones(3), 0.1, 0.5)
KEY = bounding.BoundingKey((12345, 678), b"k" * 16)


def _points(seed: int, n: int = 6_000, n_units: int = 700) -> tuple[np.ndarray, np.ndarray]:
    """Clustered points (so units have several points per cell), a few rows
    outside the box and a few non-finite, and integer unit ids."""
    rng = np.random.default_rng(seed)
    X = rng.normal(0.5, 0.12, (n, 3))
    X[:20] = rng.uniform(-0.5, 1.5, (20, 3))
    X[20:25, 1] = np.nan
    units = rng.integers(0, n_units, n)
    return X, units


@pytest.mark.parametrize(
    "k, m, choice", [(4, 1, "uniform"), (2, 3, "busiest"), (60, 2, "uniform"), (1, 1, "busiest")]
)
def test_the_fine_points_are_release_ones_bounded_points(k, m, choice):
    X, units = _points(1)
    bound = UnitBound(k, m, choice)
    keys, counts = bounding.count_units(GRID, X, units, bound, KEY)
    fine = bounding.bounded_fine_coords(GRID, 3, X, units, bound, KEY)
    assert GRID.subdivided(3).valid(fine).all()
    got, n = np.unique(GRID.encode(fine // 3), return_counts=True)
    assert np.array_equal(got, keys) and np.array_equal(n, counts)


def test_a_point_on_a_cell_edge_stays_in_its_own_cell():
    """Points exactly on fine and coarse edges (where the fine grid's own
    floor could round into the next coarse cell) get a fine cell inside the
    coarse cell release one counted them in."""
    w = GRID.width
    edges = np.arange(0, 10) * w
    vals = np.concatenate([edges, edges + w / 3, edges + 2 * w / 3, edges - 1e-17, [1.0]])
    vals = vals[(vals >= 0) & (vals <= 1)]
    rng = np.random.default_rng(3)
    X = rng.choice(vals, (4_000, 3))
    units = np.arange(X.shape[0])
    fine = bounding.bounded_fine_coords(GRID, 3, X, units, UnitBound(1, 1, "uniform"), KEY)
    coarse = GRID.decode(GRID.keys_of_points(np.clip(X, GRID.lower, GRID.upper)))
    assert np.array_equal(fine // 3, coarse)


@pytest.mark.parametrize("k, m", [(3, 1), (2, 2), (5, 3)])
def test_one_unit_moves_the_fine_counts_by_at_most_sqrt_k_m(k, m):
    """Neighbours one whole unit apart: the difference of the fine counts
    sums to at most m within each coarse cell's f^d fine cells, over at most
    k coarse cells, so its L2 norm is at most sqrt(k) m (and L1 k m)."""
    X, units = _points(4, n=5_000, n_units=300)
    bound = UnitBound(k, m, "uniform")
    space = GRID.subdivided(3)

    def counts(keep: np.ndarray) -> dict[int, int]:
        fine = bounding.bounded_fine_coords(GRID, 3, X[keep], units[keep], bound, KEY)
        u, c = np.unique(space.encode(fine), return_counts=True)
        return dict(zip(u.tolist(), c.tolist()))

    full = counts(np.ones(units.size, dtype=bool))
    worst = 0.0
    for unit in np.unique(units)[:40]:
        less = counts(units != unit)
        diff = {c: full.get(c, 0) - less.get(c, 0) for c in set(full) | set(less)}
        assert all(v >= 0 for v in diff.values())
        blocks: dict[int, int] = {}
        for c, v in diff.items():
            b = int(GRID.encode(space.decode(np.array([c])) // 3)[0])
            blocks[b] = blocks.get(b, 0) + v
        assert len([b for b in blocks.values() if b]) <= k
        assert max(blocks.values(), default=0) <= m
        l2 = float(np.sqrt(sum(v * v for v in diff.values())))
        assert l2 <= np.sqrt(k) * m + 1e-12
        worst = max(worst, l2)
    assert worst > 1  # the units do move several points


def _params(**kw):
    base = {"eps": "auto", "min_samples": "auto", "epsilon": 1.0, "delta": 1e-6, "max_cells_per_unit": 4}
    return validate({**base, **kw})


@pytest.mark.parametrize("k", [4, "auto"])
def test_the_pair_spends_the_stated_rho(k):
    lo, hi = np.zeros(3), np.ones(3)
    p = _params(max_cells_per_unit=k)
    with research.person_second(True):
        r = resolve(p, lo, hi, units=True)
    rho = zcdp.rho_for(1.0, 1e-6)
    for spec in r.choices or (r.release,):
        second = spec.second
        assert (
            second is not None and second.noise == "gaussian" and second.share == autoplan.SECOND_UNITS_SHARE
        )
        assert spec.noise.rho == rho  # stated and spent: the whole
        choice = Fraction(spec.unit_choice.rho) if spec.unit_choice else Fraction(0)
        bound = spec.units
        l2 = np.sqrt(bound.max_cells_per_unit) * bound.max_points_per_cell
        noise_rho = Fraction(l2) ** 2 / (2 * Fraction(spec.noise.scale))
        assert choice + noise_rho + Fraction(second.rho) <= Fraction(rho)
        assert float(choice + noise_rho + Fraction(second.rho)) == pytest.approx(rho, rel=1e-6)
        assert second.rho == pytest.approx(0.1 * rho, rel=1e-6)
        assert second.sigma2 == zcdp.sigma2_for(second.rho, l2)
    with research.person_second(False):
        off = resolve(p, lo, hi, units=True)
    assert off.release.second is None
    assert all(c.second is None for c in off.choices)


@pytest.mark.parametrize(
    "kw, d",
    [({}, 2), ({"eps": 0.05, "min_samples": 20}, 3), ({"noise": "laplace", "max_cells_per_unit": 2}, 3)],
)
def test_elsewhere_a_person_level_fit_makes_one_release(kw, d):
    with research.person_second(True), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = resolve(_params(**kw), np.zeros(d), np.ones(d), units=True)
    assert r.release.second is None


def strands(seed: int, n: int = 12_000) -> tuple[np.ndarray, np.ndarray]:
    """Two parallel sine strands 0.04 apart along x in [0.3, 0.7] (n points
    each, cross-section sd 0.003) and n / 8 uniform points in the cube."""
    rng = np.random.default_rng(seed)
    parts, y = [], []
    for j in range(2):
        x = rng.uniform(0.3, 0.7, n)
        c = np.stack([x, 0.5 + 0.04 * np.sin(3 * np.pi * x) + (j - 0.5) * 0.04, np.full(n, 0.5)], axis=1)
        parts.append(c + rng.normal(0, 0.003, c.shape))
        y += [j] * n
    parts.append(rng.uniform(0, 1, (n // 8, 3)))
    y += [-1] * (n // 8)
    return np.concatenate(parts), np.array(y)


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    X, y = strands(2)
    led = Ledger.create(tmp_path_factory.mktemp("ledger") / "p.ledger", "strands", 3.0, 1e-3, unit="unit")
    units = np.arange(y.size)  # one point a unit: the signal release two needs at person level
    acc = ZCDPAccountant(epsilon=5.0, delta=1e-3)
    est = DPDBSCAN(
        "auto",
        min_samples="auto",
        epsilon=1.0,
        delta=1e-6,
        bounds=(0.0, 1.0),
        max_cells_per_unit=4,
        # the split and the two strands apart is a likely outcome, not a sure
        # one: seeds 0-5 give it 4 times in 6 with the CKS noise and with the
        # inversion noise alike; seed 1 gives it with both
        random_state=1,
        accountant=acc,
        ledger=led,
    )
    with research.person_second(True), pytest.warns(UserWarning):
        est.fit(X, units=units)
    return X, y, units, est.spans_, acc, led


def test_person_level_release_two_splits_two_strands(fitted):
    X, y, _, model, _, _ = fitted
    rec = model.auto[sidebyside.KEY]
    assert rec["noise"] == "gaussian" and rec["split"] == [0]
    labels = model.predict(X)
    a = np.bincount(labels[y == 0] + 1).argmax() - 1
    b = np.bincount(labels[y == 1] + 1).argmax() - 1
    assert a >= 0 and b >= 0 and a != b


def test_the_pair_is_charged_once(fitted):
    *_, model, acc, led = fitted
    rho = zcdp.rho_for(1.0, 1e-6)
    assert acc.spent_rho == [rho]  # one charge, the pair's
    assert acc.spent_budget == []
    assert model.release.rho == rho
    text = summary(model)
    assert f"releases: two, which together spend rho={rho:.4g} (epsilon=1)" in text
    assert (
        "discrete Gaussian counts of" in text
        and "Laplace" not in text.split("releases: two")[1].split("\n")[0]
    )
    releases = led.account().releases
    assert [(r.status, r.cost.epsilon, r.cost.delta, r.cost.rho) for r in releases] == [
        ("written", 1.0, 1e-6, rho)
    ]


def test_the_model_file_carries_person_level_release_two(fitted):
    X, _, _, model, _, _ = fitted
    doc = json.loads(json.dumps(model_to_dict(model)))
    assert doc["privacy"]["releases"] == 2
    assert doc["privacy"]["second"]["noise"] == "gaussian"
    assert doc["privacy"]["second"]["rho"] == pytest.approx(0.1 * model.release.rho, rel=1e-6)
    schema = json.loads(resources.files("dpdbscan.model").joinpath("schema.json").read_text())
    assert [e.message for e in Draft202012Validator(schema).iter_errors(doc)] == []
    back = model_from_dict(doc)
    assert np.array_equal(back.predict(X), model.predict(X))
    doc["auto"]["second"]["rho"] = 2 * model.release.rho
    with pytest.raises(MalformedModel, match="rho"):
        model_from_dict(doc)


def test_off_by_default_the_release_is_the_one_it_was(fitted):
    X, _, units, model, _, _ = fitted
    kw = {"epsilon": 1.0, "delta": 1e-6, "bounds": (0.0, 1.0), "max_cells_per_unit": 4, "random_state": 2}
    with pytest.warns(UserWarning):
        default = DPDBSCAN("auto", min_samples="auto", **kw).fit(X, units=units).spans_
    with research.person_second(False), pytest.warns(UserWarning):
        off = DPDBSCAN("auto", min_samples="auto", **kw).fit(X, units=units).spans_
    assert "second" not in (default.auto or {})
    assert np.array_equal(default.histogram.values, off.histogram.values)
    assert not np.array_equal(default.histogram.values, model.histogram.values)  # release one at 0.9 of rho


@pytest.mark.parametrize("k", [4, "auto"])
@pytest.mark.parametrize("named", [True, False])
def test_a_dask_fit_with_person_level_release_two_is_refused_before_anything_is_charged(tmp_path, k, named):
    """Release two at person level counts release one's bounded points in
    memory; a Dask fit with the research switch on read a file's path as
    points after release one was spent ("could not convert string to
    float"). It is now refused before any charge or read, saying why; with
    the switch off the plan makes one release and the Dask fit goes on as
    before (not run here: it needs a cluster)."""
    pytest.importorskip("distributed")
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from dpdbscan.release.backends.dask_backend import DaskBackend

    X, y = strands(2, n=1_000)
    path = tmp_path / "s.parquet"
    pq.write_table(pa.table({"x": X[:, 0], "y": X[:, 1], "z": X[:, 2], "unit": np.arange(y.size)}), path)
    acc = ZCDPAccountant(epsilon=5.0, delta=1e-3)
    led = Ledger.create(tmp_path / "p.ledger", "strands", 3.0, 1e-3, unit="unit")
    backend = DaskBackend(client=None) if named else "dask"  # no cluster: nothing may be read
    est = DPDBSCAN(
        "auto",
        min_samples="auto",
        epsilon=1.0,
        delta=1e-6,
        bounds=([0.0] * 3, [1.0] * 3),
        max_cells_per_unit=k,
        random_state=2,
        accountant=acc,
        ledger=led,
        backend=backend,
    )
    with (
        research.person_second(True),
        warnings.catch_warnings(),
        pytest.raises(ValueError, match="release two at person level .* in memory only, not with the dask"),
    ):
        warnings.simplefilter("ignore")
        est.fit(str(path), units="unit")
    assert acc.spent_rho == [] and acc.spent_budget == []
    assert led.account().releases == []
