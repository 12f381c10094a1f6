"""Optional dependencies (dpdbscan._optional) agree with pyproject.toml.

Each module that :data:`~dpdbscan._optional.EXTRAS` sends the user to an
extra for must be installed by that extra, and none may be a core
dependency: tqdm was both, mapped to the ``io`` extra, which did not list it,
while the code guarded its import as if it were optional. It is now a core
dependency (the command line's progress bars), imported without a fallback.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from dpdbscan._optional import EXTRAS, require
from dpdbscan.progress import progress

PROJECT = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]


def _provides(requirements: list[str], seen: frozenset = frozenset()) -> set[str]:
    """The distributions (and their extras, such as dask's 'distributed') that
    ``requirements`` install, following dpdbscan's own extras."""
    out: set[str] = set()
    for text in requirements:
        r = Requirement(text)
        if r.name == PROJECT["name"]:
            for extra in set(r.extras) - seen:
                out |= _provides(PROJECT["optional-dependencies"][extra], seen | {extra})
        else:
            out |= {r.name.lower(), *r.extras}
    return out


CORE = _provides(PROJECT["dependencies"])


@pytest.mark.parametrize("module", sorted(EXTRAS))
def test_the_extra_named_for_a_module_installs_it(module):
    extra = EXTRAS[module]
    assert extra in PROJECT["optional-dependencies"], f"no extra {extra!r}"
    assert module in _provides(PROJECT["optional-dependencies"][extra])
    assert module not in CORE  # a core dependency is never missing, so never optional


def test_tqdm_is_a_core_dependency():
    assert "tqdm" in CORE and "tqdm" not in EXTRAS


def test_a_missing_tqdm_is_an_error_not_a_silent_bar(monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # as if not installed
    with pytest.raises(ImportError):
        progress("reading", total=10, enabled=True)
    with progress("reading", total=10, enabled=False) as bar:  # no bar asked for: no tqdm needed
        bar.update(5)
    assert bar.n == 5


def test_require_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(ImportError, match=r"reading Parquet needs pyarrow.*pip install 'dpdbscan\[io\]'"):
        require("pyarrow", "reading Parquet")
