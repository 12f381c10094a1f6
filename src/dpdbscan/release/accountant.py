"""A minimal privacy budget accountant, compatible with diffprivlib's
``BudgetAccountant`` interface (``check`` and ``spend``) under basic
composition. Any object with those two methods can be passed instead,
including diffprivlib's own accountant.
"""

from __future__ import annotations

from typing import Protocol

from ..exceptions import BudgetExceeded


class Accountant(Protocol):
    """What the estimator needs of a budget accountant (ours or diffprivlib's):
    ``check`` raises when a spend would exceed the budget, ``spend`` records it."""

    def check(self, epsilon: float, delta: float) -> object: ...

    def spend(self, epsilon: float, delta: float) -> object: ...


class BudgetAccountant:
    """Tracks (epsilon, delta) spent under basic composition against a budget."""

    def __init__(self, epsilon: float = float("inf"), delta: float = 1.0) -> None:
        self.epsilon = float(epsilon)
        self.delta = float(delta)
        self.spent_budget: list[tuple[float, float]] = []

    def total(self) -> tuple[float, float]:
        e = sum(s[0] for s in self.spent_budget)
        d = min(1.0, sum(s[1] for s in self.spent_budget))
        return e, d

    def remaining(self) -> tuple[float, float]:
        e, d = self.total()
        return self.epsilon - e, self.delta - d

    def check(self, epsilon: float, delta: float) -> bool:
        e, d = self.total()
        if e + epsilon > self.epsilon + 1e-12 or d + delta > self.delta + 1e-15:
            raise BudgetExceeded(
                f"privacy spend of (epsilon={epsilon}, delta={delta}) would exceed the budget "
                f"(epsilon={self.epsilon}, delta={self.delta}); already spent ({e}, {d})"
            )
        return True

    def spend(self, epsilon: float, delta: float) -> BudgetAccountant:
        self.check(epsilon, delta)
        self.spent_budget.append((float(epsilon), float(delta)))
        return self
