"""experiments.auto_mode and experiments.reparam_accuracy: their tables
(the numbers are in docs/parameters.md)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from experiments import auto_mode, reparam_accuracy


def test_auto_mode_table_with_the_flat_cut():
    keys = ("name", "auto", "flat", "fixed", "kmeans", "chosen", "seconds")
    rows: list[dict[str, Any]] = [
        dict(
            zip(keys, ("a", [0.9, 0.7], [0.6, 0.4], [1.0, 1.0], [0.5, 0.5], [(0.1, "20..40", 2)], [0.5, 0.7]))
        ),
    ]
    text = auto_mode.markdown(rows, [SimpleNamespace(name="a", alpha=0.12, min_samples=20)])
    assert "| a | 0.800 ± 0.100 | (0.1, 20..40), 2 | 0.500 ± 0.100 | 1.000 (0.12, 20) |" in text
    assert "| mean | **0.800** | | **0.500** | **1.000** |" in text


def test_auto_mode_table():
    keys = ("name", "auto", "fixed", "kmeans", "chosen", "seconds")
    rows: list[dict[str, Any]] = [
        dict(zip(keys, ("a", [0.9, 0.7], [1.0, 1.0], [0.5, 0.5], [(0.1, 20, 2)], [0.5, 0.7]))),
        dict(zip(keys, ("b", [0.2, 0.2], [0.9, 0.9], [0.6, 0.6], [(0.3, 40, 1)], [0.4, 0.4]))),
    ]
    sets = [
        SimpleNamespace(name="a", alpha=0.12, min_samples=20),
        SimpleNamespace(name="b", alpha=0.2, min_samples=50),
    ]
    text = auto_mode.markdown(rows, sets)
    assert "| a | 0.800 ± 0.100 | (0.1, 20), 2 | 1.000 (0.12, 20) | 0.500 | yes | 0.60 |" in text
    assert "| b | 0.200 ± 0.000 |" in text and "| no |" in text
    assert "**0.500**" in text and "1 of 2" in text


def test_reparam_table():
    rows = [("a", {"fresh": [1.0, 0.8], "from a/2": [0.5, 0.5]})]
    text = reparam_accuracy.markdown(rows)
    assert "| a | 0.900 ± 0.100 | 0.500 ± 0.000 |" in text and "**0.900**" in text
