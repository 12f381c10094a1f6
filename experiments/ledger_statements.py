"""What the ledger's rule says of a few sequences of releases, by the old rule
(the smaller of basic composition and zCDP-plus-basic, now
:func:`dpdbscan.ledger.compose_fixed`) and by each accounting of the new one
(:func:`dpdbscan.ledger.compose`). Public arithmetic only: no data, no noise.

Run as ``python -m experiments.ledger_statements``.
"""

from __future__ import annotations

from collections.abc import Callable

from dpdbscan.laws import zcdp
from dpdbscan.ledger import Cost, compose, compose_fixed, largest_repeated, pure
from dpdbscan.ledger.composition import fits

RULES: dict[str, str | None] = {"old (fixed)": None, "basic": "basic", "zcdp": "zcdp"}


def _total(costs: list[Cost], delta: float, accounting: str | None) -> str:
    t = compose_fixed(costs, delta) if accounting is None else compose(costs, delta, accounting)
    return f"({t.epsilon:.4g}, {t.delta:.3g}) by {t.method}"


def gaussian(delta: float) -> Callable[[float], Cost]:
    """A Gaussian release at (e, delta), calibrated in zCDP (rho_for)."""
    return lambda e: Cost(e, delta, zcdp.rho_for(e, delta))


def main() -> None:
    ten = [pure(0.1)] * 10
    g1 = gaussian(1e-6)(1.0)
    for name, accounting in RULES.items():
        print(f"== {name}")
        t = compose_fixed(ten, 1e-6) if accounting is None else compose(ten, 1e-6, accounting)
        print(
            f"  10 pure releases at 0.1 under (1, 1e-6): {_total(ten, 1e-6, accounting)}, "
            f"fits {fits(t, 1, 1e-6)}"
        )
        e = largest_repeated([], pure, 12, 1.0, 1e-6, accounting)
        print(f"  12 pure periods under (1, 1e-6): epsilon {e:.4g} each")
        for d in (1e-6, 1e-6 / 12):
            e = largest_repeated([], gaussian(d), 12, 1.0, 1e-6, accounting)
            print(f"  12 Gaussian periods at delta {d:.3g} each under (1, 1e-6): epsilon {e:.4g} each")
        print(
            f"  one person-level Gaussian release at (1, 1e-6), rho {g1.rho:.5g}: "
            f"{_total([g1], 1e-6, accounting)}"
        )
        for d in (1e-6, 5e-8):
            e = largest_repeated([], gaussian(d), 20, 5.0, 1e-6, accounting)
            rho = zcdp.rho_for(e, d) if e > 0 else 0.0
            print(
                f"  20 Gaussian releases at delta {d:.3g} each under (5, 1e-6): epsilon {e:.4g} each "
                f"(rho {rho:.4g})"
            )


if __name__ == "__main__":
    main()
