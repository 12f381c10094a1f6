"""experiments/auto_mode.py and experiments/reparam_accuracy.py: their tables
(the numbers are in docs/parameters.md)."""

from __future__ import annotations

import sys
from types import SimpleNamespace

from conftest import REPO

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from experiments import auto_mode, reparam_accuracy  # noqa: E402


def test_auto_mode_table():
    rows = [{"name": "a", "auto": [0.9, 0.7], "fixed": [1.0, 1.0], "kmeans": [0.5, 0.5],
             "chosen": [(0.1, 20, 2)], "seconds": [0.5, 0.7]},
            {"name": "b", "auto": [0.2, 0.2], "fixed": [0.9, 0.9], "kmeans": [0.6, 0.6],
             "chosen": [(0.3, 40, 1)], "seconds": [0.4, 0.4]}]
    sets = [SimpleNamespace(name="a", alpha=0.12, min_samples=20),
            SimpleNamespace(name="b", alpha=0.2, min_samples=50)]
    text = auto_mode.markdown(rows, sets)
    assert "| a | 0.800 ± 0.100 | (0.1, 20), 2 | 1.000 (0.12, 20) | 0.500 | yes | 0.60 |" in text
    assert "| b | 0.200 ± 0.000 |" in text and "| no |" in text
    assert "**0.500**" in text and "1 of 2" in text


def test_reparam_table():
    rows = [("a", {"fresh": [1.0, 0.8], "from a/2": [0.5, 0.5]})]
    text = reparam_accuracy.markdown(rows)
    assert "| a | 0.900 ± 0.100 | 0.500 ± 0.000 |" in text and "**0.900**" in text
