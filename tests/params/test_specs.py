"""Defaults live in the parameter table only (issue 22, "resolve once").

The records parameters resolve to have no defaults of their own, the
estimator's signature and the command line take theirs from the table, and
every record can be built from the table alone.
"""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest

from dpdbscan import DPDBSCAN
from dpdbscan.cells.grid import Grid
from dpdbscan.cells.histogram import NoisyHistogram
from dpdbscan.cli.command import build_parser
from dpdbscan.model.record import SpanModel
from dpdbscan.params import specs
from dpdbscan.params.parameters import PARAMETERS
from dpdbscan.plan.autoplan import Plan
from dpdbscan.plan.outlook import Forecast
from dpdbscan.plan.resolve import Resolved, resolve, validated
from dpdbscan.post.coretests import CORE_TESTS, Figures, Spans

#: Every record that public parameters resolve to, or that carries them.
RECORDS = [
    specs.SpanSpec,
    specs.NoiseSpec,
    specs.UnitBound,
    specs.UnitChoice,
    specs.SizeEstimate,
    specs.SecondSpend,
    specs.SecondRelease,
    specs.ReleaseSpec,
    specs.ReleaseInfo,
    Resolved,
    Plan,
    Spans,
    Figures,
    Forecast,
    NoisyHistogram,
    SpanModel,
]


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r.__name__)
def test_records_have_no_defaults_of_their_own(record):
    own = [
        f.name
        for f in dataclasses.fields(record)
        if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
    ]
    assert not own, f"{record.__name__} has defaults of its own: {own}; defaults belong in PARAMETERS"


def test_every_spec_record_is_checked():
    # a new record in spec/specs.py must be added to RECORDS above
    defined = {
        obj
        for obj in vars(specs).values()
        if inspect.isclass(obj) and dataclasses.is_dataclass(obj) and obj.__module__ == specs.__name__
    }
    assert defined <= set(RECORDS)


def test_the_estimator_takes_its_defaults_from_the_table():
    sig = inspect.signature(DPDBSCAN.__init__)
    for name, param in PARAMETERS.items():
        assert name in sig.parameters, name
        assert sig.parameters[name].default == param.default, name
    assert set(sig.parameters) - {"self"} == set(PARAMETERS)


def _fit_actions():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return {opt: a for a in sub.choices["fit"]._actions for opt in a.option_strings}


@pytest.mark.parametrize("name", [n for n, p in PARAMETERS.items() if p.cli])
def test_the_command_line_takes_its_defaults_from_the_table(name):
    cli = PARAMETERS[name].cli
    action = _fit_actions()[cli]
    default = PARAMETERS[name].default
    if name in ("bounds", "random_state", "outside"):
        # None: not given (--outside: sweep --model refuses it given; a fit reads None as clip)
        assert action.default is None
    elif action.required:
        pass  # given on every command line (eps, min_samples)
    else:
        assert action.default == default or str(action.default) == str(default), (cli, action.default)


@pytest.mark.parametrize("core", sorted(CORE_TESTS))
@pytest.mark.parametrize("eps", [0.1, "auto"])
def test_every_record_is_built_from_the_table_alone(core, eps):
    if core == "bound" and eps == "auto":
        pytest.skip("the automatic mode chooses from the density test's spans")
    p = validated({"core": core, "eps": eps})
    assert set(p) == set(PARAMETERS) - {"bounds"}
    r = resolve(p, np.zeros(2), np.ones(2))
    for record in (r.release, r.release.noise, r.spans):
        for f in dataclasses.fields(record):
            assert getattr(record, f.name) is not dataclasses.MISSING
    assert r.spans.core == core and r.spans.beta == PARAMETERS["beta"].default
    assert (r.auto is not None) == (eps == "auto")
    assert r.release.noise.epsilon == PARAMETERS["epsilon"].default


@pytest.mark.parametrize("histogram", ["dense", "sparse", "stability"])
@pytest.mark.parametrize("noise", ["discrete", "laplace", "gaussian"])
def test_the_delta_a_release_spends_follows_from_its_histogram_and_noise(histogram, noise):
    delta = 1e-6
    for_noise, for_threshold = specs.split_delta(histogram, noise, delta)
    spends = histogram == "stability" or noise == "gaussian"
    assert for_noise + for_threshold == (delta if spends else 0.0)
    assert (for_noise > 0) == (noise == "gaussian")
    assert (for_threshold > 0) == (histogram == "stability")
    bound = specs.UnitBound(max_cells_per_unit=4, max_points_per_cell=2, cell_choice="busiest")
    rho = (0.5, 0.4) if noise == "gaussian" else None
    calibrated = specs.NoiseSpec.calibrated(noise, 1.0, delta, bound, rho)
    grid = Grid(np.zeros(2), np.ones(2), 0.1, 4.0)
    spec = specs.ReleaseSpec(grid, histogram, 0.0, calibrated, bound, None, None, None)
    assert (spec.delta_spent, spec.delta_threshold) == ((delta if spends else 0.0), for_threshold)
    assert (spec.noise.l1_sensitivity, spec.noise.l2_sensitivity) == (8.0, 4.0)
    # Gaussian: sigma^2 = L2^2 / (2 rho of the noise); Laplace: one count at epsilon / L1
    assert spec.noise.scale == pytest.approx(16 / 0.8 if noise == "gaussian" else 1 / 8, rel=1e-4)
    assert spec.noise.rho == (0.5 if noise == "gaussian" else None)


def test_gaussian_noise_needs_its_rho():
    with pytest.raises(ValueError, match="rho"):
        specs.NoiseSpec.calibrated("gaussian", 1.0, 1e-6, None, None)
