"""experiments/ and benchmarks/ use the library as a user would: its public
names (``from dpdbscan import ...``) and the research hooks of
``dpdbscan.research``, nothing else inside the package; no ``sys.path``
manipulation (they run as ``python -m experiments.<name>``); no absolute path."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import dpdbscan
import dpdbscan.research
from experiments.data import REPO

FILES = sorted(p for d in ("experiments", "benchmarks") for p in (REPO / d).rglob("*.py"))
ALLOWED = {"dpdbscan", "dpdbscan.research"}
#: Files that look inside the package by design, each with its reason; every
#: other file keeps to the public names and the research hooks.
INSIDE = {
    # probes the core sub-cells of a release on its own grid, noisy and
    # noiseless, joined three ways (results/scenes/strands-subcell.md)
    "experiments/strands_subcell.py",
    # checks that benchmarks.fit_stages puts back the internals it wraps
    "benchmarks/tests/test_benchmarks.py",
    # a profiler of a fit's stages: wraps the internal functions it times,
    # named by module in its table (importlib.import_module)
    "benchmarks/fit_stages.py",
    # times the cold import of the command line's commands (dpdbscan.cli.command)
    "benchmarks/cli_stages.py",
    # warms its Dask workers by importing the Dask backend's module, untimed
    "benchmarks/bench_dask_units.py",
    # audits the Python side of a series (dpdbscan.series, documented in
    # docs/privacy.md 5.2), the door whose units it measures
    "experiments/audit_series_ids.py",
    # audits the command line's doors on text that is not UTF-8 (round 8,
    # docs/privacy.md section 8): runs dpdbscan.cli's main in process
    "experiments/audit_non_utf8.py",
    # audits the command line's CSV doors on text too long for pyarrow (round 9,
    # docs/privacy.md section 8): runs dpdbscan.cli's main in process
    "experiments/audit_long_lines.py",
    # audits the command line's GeoJSON door on a byte that is not UTF-8 (round 10,
    # docs/privacy.md section 8): runs dpdbscan.cli's main in process
    "experiments/audit_geojson_bytes.py",
    # prints the ledger's statements by accounting (results/ledger/statements.md):
    # the composition rules themselves (dpdbscan.ledger.composition, dpdbscan.laws)
    "experiments/ledger_statements.py",
    # moves the 3-D regime of a DP count of 6,000-20,000 (dpdbscan.params.sizing's
    # FINER_3D_FROM, dpdbscan.plan.autoplan's SMALL_SECOND_FROM) to smaller
    # counts for a study of that lever (results/scenes/curves.md)
    "experiments/curves.py",
    # wraps dpdbscan.plan.autoplan's plan and dpdbscan.params.sizing's finer_n
    # to set the base's points per cell from d and the DP count, for a study
    # of that rule (results/scenes/resolution-choice.md)
    "experiments/resolution_choice.py",
}
#: A module of the package named in a string (importlib.import_module,
#: __import__, a patch target): past the ``import`` statements the AST check
#: reads, so every such string is checked too.
_MODULE_NAME = re.compile(r"dpdbscan(\.\w+)+")


def _rel(path: Path) -> str:
    return str(path.relative_to(REPO))


def test_the_codebase_is_found():
    names = {_rel(p) for p in FILES}
    assert {"experiments/data.py", "benchmarks/run.py", "experiments/tests/test_codebase.py"} <= names
    assert INSIDE <= names  # no stale exemption


def _inside_names(source: str) -> list[str]:
    """The package's modules past its public names that ``source`` imports,
    as ``line N: name``: by ``import`` statements, and by name in a string
    (``importlib.import_module``, ``__import__``, a table of modules, a
    patch target), which the statements do not show."""
    bad = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.Constant) and _MODULE_NAME.fullmatch(str(node.value)):
            names = [str(node.value)]
        elif isinstance(node, ast.JoinedStr) and node.values and _formatted_in_package(node.values[0]):
            names = ["dpdbscan.{...}"]  # a name made at run time, inside the package
        else:
            continue
        bad += [
            f"line {node.lineno}: {n}" for n in names if n.split(".")[0] == "dpdbscan" and n not in ALLOWED
        ]
    return bad


def _formatted_in_package(head: ast.expr) -> bool:
    """Whether an f-string starting with ``head`` names a module inside the package."""
    return isinstance(head, ast.Constant) and str(head.value).startswith("dpdbscan.")


@pytest.mark.parametrize("path", FILES, ids=_rel)
def test_only_public_names_and_the_research_hooks(path):
    if _rel(path) in INSIDE:
        pytest.skip("looks inside the package by design (INSIDE)")
    bad = _inside_names(path.read_text())
    assert not bad, f"{_rel(path)} imports the package's internals: " + "; ".join(bad)


@pytest.mark.parametrize(
    ("source", "seen"),
    [
        ("import dpdbscan.post.merge", ["line 1: dpdbscan.post.merge"]),
        ("from dpdbscan.cells import pairs", ["line 1: dpdbscan.cells"]),
        ("importlib.import_module('dpdbscan.cli.command')", ["line 1: dpdbscan.cli.command"]),
        ("__import__('dpdbscan.release.backends')", ["line 1: dpdbscan.release.backends"]),
        ("STAGES = (('merge', 'dpdbscan.post.merge', 'merge_cells'),)", ["line 1: dpdbscan.post.merge"]),
        ("importlib.import_module(f'dpdbscan.{home}')", ["line 1: dpdbscan.{...}"]),
        ("from dpdbscan import DPDBSCAN\nimport dpdbscan.research", []),
        ("importlib.import_module('dpdbscan.research')", []),
        ("importlib.import_module(f'dpdbscan_before.{home}')", []),  # another tree's copy
        ("print('dpdbscan.post.merge is a module')", []),  # prose, not a name
    ],
)
def test_the_check_sees_modules_named_in_strings(source, seen):
    assert _inside_names(source) == seen


def _docstrings(tree: ast.Module) -> set[int]:
    nodes: list[ast.Module | ast.FunctionDef | ast.ClassDef] = [tree]
    nodes += [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    return {
        id(n.body[0].value)
        for n in nodes
        if n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)
    }


@pytest.mark.parametrize("path", FILES, ids=_rel)
def test_no_sys_path_and_no_absolute_paths(path):
    tree = ast.parse(path.read_text())
    docs = _docstrings(tree)
    bad = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr == "path"
            and getattr(node.value, "id", None) == "sys"
        ):
            bad.append(f"line {node.lineno}: sys.path")
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            # a data or checkout path; the kernel's /proc files are no such thing
            if re.match(r"/(?!proc/)[A-Za-z]\w*/", node.value):
                bad.append(f"line {node.lineno}: absolute path {node.value!r}")
    assert not bad, _rel(path) + ": " + "; ".join(bad)


def test_the_research_hooks_exist():
    assert set(dpdbscan.research.__all__) <= set(dir(dpdbscan.research))
    for name in dpdbscan.research.__all__:
        assert f"``{name}``" in (dpdbscan.research.__doc__ or ""), f"{name} is not described"
    # nothing public is reached through the hooks
    assert not set(dpdbscan.research.__all__) & set(dpdbscan.__all__)
