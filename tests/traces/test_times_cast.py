"""Times written as numbers read by one cast of the whole column
(``times._all_numbers``) against the rule's patterns (``times._parse_text``,
the oracle): the same value for every text, and the cast taken only where
Arrow accepts every value, which it does for exactly the number grammar."""

from __future__ import annotations

import re

import numpy as np
import pytest

from dpdbscan.traces import parse_times
from dpdbscan.traces.times import NUMBER_PATTERN, _all_numbers, _parse_text

pa = pytest.importorskip("pyarrow")

#: Texts near the number grammar's edges.
EDGES = [
    "", " ", "12", " 12", "12 ", "\t12", "+12", "-12", "1e5", "1E+5", ".5", "5.", "inf", "-Infinity",
    "nan", "NaN(123)", "0x10", "1_000", "1,5", "１２", "12\n", "1d", "1.5f", "+.5e-3", "e5", "++1",
    "infinit", "infinityx", "-nan", "+inf", "Inf", "iNfInItY", "1.7976931348623157e309", "4e-400",
    "00012", "1.", "-.e1", "2008-05-17", "1 2", "\u00a012", "\r12", "1211018400", "1211018400.25",
]  # fmt: skip


def _random_texts(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    alphabet = list("0123456789+-.eEinfatyINFATY( )\t_x,")
    weights = np.array([4.0] * 10 + [1.0] * (len(alphabet) - 10))
    weights /= weights.sum()
    return ["".join(rng.choice(alphabet, size=rng.integers(0, 9), p=weights)) for _ in range(n)]


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.array_equal(a, b, equal_nan=True))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_arrow_casts_exactly_the_number_grammar(seed):
    """A text Arrow's cast to float64 accepts matches the grammar
    untrimmed, and then reads as the rule reads it (one value at a time)."""
    for text in EDGES + _random_texts(3000, seed):
        one = pa.array([text])
        fast = _all_numbers(one)
        matches = re.fullmatch(NUMBER_PATTERN, text) is not None
        assert (fast is not None) == matches, repr(text)
        if fast is not None:
            assert _same(fast, _parse_text(one)), repr(text)


@pytest.mark.parametrize("seed", [0, 1])
def test_a_column_of_numbers_reads_as_the_rule_reads_it(seed):
    rng = np.random.default_rng(seed)
    numbers = [t for t in _random_texts(4000, seed + 10) if re.fullmatch(NUMBER_PATTERN, t)]
    numbers += [str(v) for v in 1.2e9 + rng.uniform(0, 1e6, 500)] + ["inf", "nan", "-Infinity", "1e400"]
    values = [None if rng.random() < 0.05 else v for v in numbers]
    for column in (
        pa.array(values, type=pa.string()),
        pa.array([None if v is None else v.encode() for v in values]),
    ):
        got = parse_times(column)
        assert _same(got, _parse_text(pa.array(values, type=pa.string())))
    # one text that is not a number: the rule reads every value, the same numbers
    mixed = pa.array([*values, "2008-05-17T10:00:00Z", " 7 "])
    assert _all_numbers(mixed) is None
    got = parse_times(mixed)
    assert _same(got[:-2], _parse_text(pa.array(values, type=pa.string())))
    assert got[-2] == 1211018400.0 and got[-1] == 7.0
