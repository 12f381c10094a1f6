"""The layout draws the pipeline: imports follow the data, one way.

points -> cell counts -> noisy histogram (epsilon spent here) -> neighbour
sums -> core cells -> spans -> labels. This test parses every module of the
package with ``ast`` (top-level and function-level imports alike) and fails on

* an import of a layer the importing layer may not see: above all, the
  post-processing (``post/``) and the model never import the code that reads
  points or spends epsilon (``points``, ``backends/``, ``histograms/``,
  ``mechanism``), which is what makes them post-processing;
* an import cycle between modules;
* a function-level import of the package's own modules without a comment
  ``# lazy: <reason>`` on the line above it (allowed only to keep an optional
  dependency or the command line's cold start off the import path).

docs/architecture.md has the same map in prose.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "dpdbscan"

# Layers, lowest first, and the layers each may import (besides itself).
LAYERS = {
    "base": {"exceptions", "_optional", "_random", "_bernoulli", "bounds", "geo", "geometry",
             "components", "accountant", "params", "progress", "files",
             "_gaussian", "_gaussian_law", "_gaussian_tail", "zcdp"},
    "grid": {"grid"},
    "release": {"histogram"},
    "private": {"points", "backends", "histograms"},
    "post": {"post"},
    "model": {"predict", "serialize", "spanstats", "model"},
    "mechanism": {"mechanism"},
    "api": {"estimator", "plotting", "spanplot", "mapstyle", "webmap", "explore"},
    "apps": {"cli", "demo", "__init__", "__main__"},
}
MAY_IMPORT = {
    "base": {"base"},
    "grid": {"base", "grid"},
    "release": {"base", "grid", "release"},
    "private": {"base", "grid", "release", "private"},
    "post": {"base", "grid", "release", "post"},
    "model": {"base", "grid", "release", "post", "model"},
    "mechanism": {"base", "grid", "release", "private", "post", "model", "mechanism"},
    "api": {"base", "grid", "release", "private", "post", "model", "mechanism", "api"},
    "apps": set(LAYERS),
}


def module_name(path: Path) -> str:
    rel = path.relative_to(SRC).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" and len(rel.parts) > 1 else rel.parts
    return ".".join(parts)


def layer_of(module: str) -> str:
    head = module.split(".")[0]
    for layer, members in LAYERS.items():
        if head in members:
            return layer
    raise AssertionError(f"module dpdbscan.{module} is in no layer of tests/test_architecture.py")


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(SRC.rglob("*.py"))}


ALL = modules()


def resolve(importer: str, path: Path, node: ast.AST) -> list[str]:
    """Package modules an import statement names (relative to dpdbscan)."""
    is_pkg = path.name == "__init__.py"
    package = importer.split(".") if is_pkg else importer.split(".")[:-1]
    if importer == "__init__":
        package = []
    targets = []
    if isinstance(node, ast.ImportFrom):
        if node.level:
            base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
            mod = base + (node.module.split(".") if node.module else [])
        elif node.module and node.module.split(".")[0] == "dpdbscan":
            mod = node.module.split(".")[1:]
        else:
            return []
        for alias in node.names:
            sub = ".".join(mod + [alias.name])
            targets.append(sub if sub in ALL else ".".join(mod) or "__init__")
    else:
        for alias in node.names:
            if alias.name.split(".")[0] == "dpdbscan":
                targets.append(".".join(alias.name.split(".")[1:]) or "__init__")
    return [t for t in targets if t]


def imports():
    """(importer, target, lineno, is_lazy, has_reason, type_only) for every
    package import; ``type_only``: under ``if TYPE_CHECKING:``, never run."""
    out = []
    for name, path in ALL.items():
        lines = path.read_text().splitlines()
        tree = ast.parse(path.read_text())
        top = set(map(id, tree.body))
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            type_only = _in_type_checking(tree, node)
            lazy = id(node) not in top and not type_only
            above = lines[node.lineno - 2].strip() if node.lineno >= 2 else ""
            for target in resolve(name, path, node):
                out.append((name, target, node.lineno, lazy, above.startswith("# lazy:"), type_only))
    return out


def _in_type_checking(tree, node) -> bool:
    for stmt in tree.body:
        if isinstance(stmt, ast.If) and "TYPE_CHECKING" in ast.unparse(stmt.test):
            if any(n is node for n in ast.walk(stmt)):
                return True
    return False


EDGES = imports()


def test_every_module_has_a_layer():
    for name in ALL:
        layer_of(name)


def test_resolver_sees_known_edges():
    # guards the test itself: these edges exist, so the resolver must find them
    pairs = {(a, b) for a, b, *_ in EDGES}
    assert ("mechanism", "histograms") in pairs or ("mechanism", "histograms.dense") in pairs
    assert ("post.core", "post.sums") in pairs
    assert ("model", "post.spans") in pairs


@pytest.mark.parametrize("edge", EDGES, ids=[f"{a}->{b}:{n}" for a, b, n, *_ in EDGES])
def test_no_upward_import(edge):
    importer, target, lineno, *_ = edge
    src, dst = layer_of(importer), layer_of(target)
    assert dst in MAY_IMPORT[src], (
        f"dpdbscan.{importer} (layer {src}) imports dpdbscan.{target} (layer {dst}) at line "
        f"{lineno}: layer {src} may only import {sorted(MAY_IMPORT[src])}")


def test_lazy_imports_state_their_reason():
    bad = [f"dpdbscan.{a} line {n} imports dpdbscan.{b}" for a, b, n, lazy, reason, _ in EDGES
           if lazy and not reason]
    assert not bad, "function-level imports without a '# lazy: <reason>' comment: " + "; ".join(bad)


def test_no_import_cycles():
    graph: dict[str, set[str]] = {m: set() for m in ALL}
    for a, b, *_, type_only in EDGES:
        # an import under ``if TYPE_CHECKING:`` only names a type for the
        # annotations (e.g. serialize -> model): it never runs, so no cycle
        if b in graph and a != b and not type_only:
            graph[a].add(b)
    # a package's __init__ importing its own submodules is not a cycle of the
    # data flow; a submodule importing from its package's __init__ is an edge
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for n in graph[m]:
            if state.get(n) == 1:
                cycle = stack[stack.index(n):] + [n]
                raise AssertionError("import cycle: " + " -> ".join(f"dpdbscan.{c}" for c in cycle))
            if n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in graph:
        if m not in state:
            visit(m)


def test_the_privacy_boundary_is_where_the_docs_say():
    """Only the mechanism calls the histograms that spend epsilon."""
    callers = {a for a, b, *_ in EDGES if b.startswith("histograms") and not a.startswith("histograms")}
    assert callers == {"mechanism"}, callers
