"""The package tree draws the pipeline, and imports follow it one way.

planning from public inputs (``params``, ``plan``) -> the release (``release``:
the only package that reads points or draws noise) -> post-processing
(``post``) -> the model (``model``) -> pictures (``render``); ``ledger``
keeps budgets across runs (public facts only); ``files`` reads points files
and ``prepare`` is the one door the private input comes through before the
release (the points, the units, the public box, the projection);
``cells``, ``geometry`` and ``laws`` are the public structures and
mathematics every stage shares. This test parses every module with ``ast``
(top-level, function-level and ``TYPE_CHECKING`` imports alike) and fails on

* an import of a package the importing package may not see (:data:`MAY_IMPORT`):
  above all, ``post``, ``model`` and ``render`` never import ``release``, which
  is what makes them post-processing, and ``release`` never imports them;
* an import of the samplers (``release.samplers``) from outside ``release``
  (but for ``research``, the research hooks that hand them to the benchmarks of
  the samplers themselves);
* an import cycle between modules, type-only imports included;
* a function-level import of the package's own modules without a comment
  ``# lazy: <reason>`` on the line above it (allowed only to keep an optional
  dependency or the command line's cold start off the import path).

docs/architecture.md has the same map in prose. One test per module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "dpdbscan"

# Layers, lowest first: the packages (or top-level modules) in each.
LAYERS = {
    "base": {"exceptions", "_optional", "_jit", "progress", "files"},
    "shared": {"cells", "geometry", "laws", "traces"},
    "params": {"params"},
    "prepare": {"prepare"},
    "post": {"post"},
    "plan": {"plan"},
    "release": {"release"},
    "model": {"model"},
    "ledger": {"ledger"},
    "render": {"render"},
    "api": {"estimator", "estimatorbase", "pipeline", "series", "research", "testing", "spec"},
    "apps": {"cli", "demo", "__init__", "__main__"},
}
_BELOW_POST = {"base", "shared", "params"}
MAY_IMPORT = {
    "base": {"base"},
    "shared": {"base", "shared"},
    "params": {"base", "shared", "params"},
    "prepare": _BELOW_POST | {"prepare"},
    "post": _BELOW_POST | {"post"},
    "plan": _BELOW_POST | {"post", "plan"},
    "release": _BELOW_POST | {"release"},
    "model": _BELOW_POST | {"post", "model"},
    "ledger": _BELOW_POST | {"ledger"},
    "render": _BELOW_POST | {"post", "model", "render"},
    "api": set(LAYERS) - {"apps"},
    "apps": set(LAYERS),
}
SAMPLERS = "release.samplers"


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


def _type_checking_nodes(tree) -> set[int]:
    """The ids of every node inside an ``if TYPE_CHECKING:`` block of ``tree``
    (found in one walk of the tree, not one per import)."""
    inside = set()
    for stmt in ast.walk(tree):
        if isinstance(stmt, ast.If) and "TYPE_CHECKING" in ast.unparse(stmt.test):
            inside.update(map(id, ast.walk(stmt)))
    return inside


def imports_of(name: str) -> list[tuple[str, int, bool, bool]]:
    """(target, lineno, is_lazy, has_reason) for every package import of ``name``."""
    path = ALL[name]
    text = path.read_text()
    lines = text.splitlines()
    tree = ast.parse(text)
    top = set(map(id, tree.body))
    guarded = _type_checking_nodes(tree)
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        lazy = id(node) not in top and id(node) not in guarded
        above = lines[node.lineno - 2].strip() if node.lineno >= 2 else ""
        for target in resolve(name, path, node):
            out.append((target, node.lineno, lazy, above.startswith("# lazy:")))
    return out


EDGES = {name: imports_of(name) for name in ALL}


def test_the_resolver_sees_known_edges():
    # guards the test itself: these edges exist, so the resolver must find them
    targets = {name: {t for t, *_ in edges} for name, edges in EDGES.items()}
    assert any(t.startswith("release.histograms") for t in targets["release.mechanism"])
    assert "post.sums" in targets["post.coretests.bound.corecells"]
    assert any(t.startswith("post") for t in targets["model.reparam"])


@pytest.mark.parametrize("module", sorted(ALL))
def test_imports_follow_the_layers(module):
    src = layer_of(module)
    bad = []
    for target, lineno, lazy, reason in EDGES[module]:
        dst = layer_of(target)
        if dst not in MAY_IMPORT[src]:
            bad.append(f"line {lineno}: dpdbscan.{target} (layer {dst})")
        if (target == SAMPLERS or target.startswith(SAMPLERS + ".")) and not module.startswith(
            ("release", "research")
        ):
            bad.append(f"line {lineno}: the samplers ({target}) outside the release package")
        if lazy and not reason:
            bad.append(
                f"line {lineno}: a function-level import of dpdbscan.{target} without '# lazy: <reason>'"
            )
    assert not bad, f"dpdbscan.{module} (layer {src}, may import {sorted(MAY_IMPORT[src])}): " + "; ".join(
        bad
    )


def test_no_import_cycles():
    graph: dict[str, set[str]] = {m: set() for m in ALL}
    for a, edges in EDGES.items():
        for b, *_ in edges:
            if b in graph and a != b:
                graph[a].add(b)
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                cycle = stack[stack.index(n) :] + [n]
                raise AssertionError("import cycle: " + " -> ".join(f"dpdbscan.{c}" for c in cycle))
            if n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)


def test_the_research_hooks_are_not_the_library():
    """``dpdbscan.research`` re-exports internals (the samplers among them) for
    experiments/ and benchmarks/; no module of the library imports it, nor the
    old names kept for one release (``testing``, ``spec``)."""
    shims = {"research", "testing", "spec"}
    users = {
        (a, b)
        for a, edges in EDGES.items()
        for b, *_ in edges
        if b.split(".")[0] in shims and a.split(".")[0] not in shims
    }
    assert not users, users


def test_only_the_mechanism_calls_the_histograms():
    """The histograms spend epsilon; only ``release.mechanism`` calls them."""
    callers = {
        a
        for a, edges in EDGES.items()
        for b, *_ in edges
        if b.startswith("release.histograms") and not a.startswith("release.histograms")
    }
    assert callers <= {"release.mechanism", "release"}, callers


def module_names_in_use(paths) -> dict[str, list[str]]:
    """Each file base name in ``paths`` (``__init__``/``__main__`` aside) to the files using it."""
    names: dict[str, list[str]] = {}
    for p in paths:
        if p.name not in {"__init__.py", "__main__.py"}:
            names.setdefault(p.name, []).append(str(p.relative_to(SRC)))
    return names


def test_the_name_counter_sees_a_shared_name():
    # guards the next test: two files of one base name must be reported
    fake = [SRC / "post" / "levels.py", SRC / "model" / "levels.py", SRC / "post" / "__init__.py"]
    assert module_names_in_use(fake) == {"levels.py": ["post/levels.py", "model/levels.py"]}


def test_every_module_name_is_used_once():
    """A base name says what the module is, once: ``levels.py`` in two layers (or
    ``test.py`` for a class that is not a test) sends a reader to the wrong file."""
    paths = sorted(SRC.rglob("*.py"))
    shared = {n: fs for n, fs in module_names_in_use(paths).items() if len(fs) > 1}
    assert not shared, shared
    assert not [str(p) for p in paths if p.name == "test.py"]


# --------------------------------------------------------------------------- #
# the model speaks: post-processing computes, the words live in model/

#: Calls whose words go to an error, a warning or the progress bar, not to a
#: reader of the release.
SILENT_CALLS = {"warn", "stage", "ValueError", "TypeError", "KeyError", "RuntimeError"}


def _text_of(node: ast.AST) -> str | None:
    """The literal text of a string or f-string (a placeholder per field)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(_text_of(v) or "" if isinstance(v, ast.Constant) else " x " for v in node.values)
    return None


def _n_words(text: str) -> int:
    return sum(1 for token in text.split() if any(c.isalpha() for c in token) and len(token) > 1)


def writes_sentences(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether ``func`` writes prose: a literal of 4 words or more, or a
    return value whose literals together hold 4 words or more (keys such
    as ``"min_samples"`` are one word each: a dict of numbers is no prose).
    The docstring, raised errors, warnings, progress messages and nested
    functions (judged on their own) are left out."""
    skip: set[int] = set()
    if func.body and isinstance(func.body[0], ast.Expr):
        skip.add(id(func.body[0].value))
    for node in ast.walk(func):
        if node is func:
            continue
        call = node.func if isinstance(node, ast.Call) else None
        name = getattr(call, "attr", None) or getattr(call, "id", None)
        if (
            isinstance(node, (ast.Raise, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            or name in SILENT_CALLS
        ):
            skip |= {id(n) for n in ast.walk(node)}
    texts = [n for n in ast.walk(func) if id(n) not in skip and _text_of(n) is not None]
    inner = {id(v) for n in texts if isinstance(n, ast.JoinedStr) for v in n.values}
    texts = [n for n in texts if id(n) not in inner]
    if any(_n_words(_text_of(n) or "") >= 4 for n in texts):
        return True
    for ret in ast.walk(func):
        if isinstance(ret, ast.Return) and ret.value is not None and id(ret) not in skip:
            prose = [
                _text_of(n) or "" for n in ast.walk(ret.value) if n in texts and " " in (_text_of(n) or "")
            ]
            if _n_words(" ".join(prose)) >= 4:
                return True
    return False


def sentence_writers(paths) -> list[str]:
    out = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and writes_sentences(node):
                out.append(f"{path.relative_to(SRC)}:{node.lineno} {node.name}")
    return out


def test_the_sentence_counter_finds_sentences(tmp_path):
    # guards the next test: prose is found, numbers, keys and errors are not
    src = tmp_path / "words.py"
    src.write_text(
        "def a(n):\n    return f'the release has {n} spans in all'\n"
        "def b(n):\n    return 'at most ' + str(n) + ' points lie within eps'\n"
        "def c(n):\n    return {'min_samples': n, 'accuracy_margin': 1, 'place_count': 2, 'm_star': 3}\n"
        "def d(n):\n    raise ValueError(f'min_samples must be at least one, got {n}')\n"
        "def e(n):\n    '''A docstring of many words is no sentence written.'''\n    return n\n"
    )
    tree = ast.parse(src.read_text())
    found = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and writes_sentences(n)}
    assert found == {"a", "b"}


def test_post_processing_writes_no_sentences():
    """Core tests compute and persist; the sentences, summaries and guarantees
    in words are the model's (``model/coretestwords.py``, one module of words
    per core test)."""
    found = sentence_writers(sorted((SRC / "post").rglob("*.py")))
    assert not found, found


def core_test_comparisons(paths, names) -> list[str]:
    """Places that compare a value with a core test's name (``== "density"``,
    ``in ("bound", ...)``): what a test can do belongs on the test itself."""
    out = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Compare):
                continue
            for side in [node.left, *node.comparators]:
                values = side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side]
                if any(isinstance(v, ast.Constant) and v.value in names for v in values):
                    out.append(f"{path.name}:{node.lineno}")
                    break
    return out


def test_the_comparison_counter_sees_one(tmp_path):
    fake = tmp_path / "x.py"
    fake.write_text('if spec.core == "density":\n    pass\nif k in ("bound", "x"):\n    pass\n')
    found = core_test_comparisons([fake], {"density", "bound"})
    assert len(found) == 2


def test_core_tests_are_compared_by_name_only_in_their_registry():
    from dpdbscan.post.coretests import CORE_TESTS

    registry = SRC / "post" / "coretests"
    paths = [p for p in sorted(SRC.rglob("*.py")) if registry not in p.parents]
    assert core_test_comparisons(paths, set(CORE_TESTS)) == []
